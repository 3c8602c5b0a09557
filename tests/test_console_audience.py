"""The console's "show as": every whole-knowledge-base page (the Briefing, the Constellation, Raw
data) read for an audience holds only what kg lookup for that audience tells, and does hold it; the
owner's pages hold everything, and the review queue stays the owner's. The pages are read as the
console reads them (kgrdf.console.pages), without a browser: tests/test_console.py looks at them in one."""

import json
import re
import shutil

import pytest

from kgrdf.console.pages import Pages, View
from kgrdf.errors import KgError, Refused
from kgrdf.kb import KnowledgeBase

from .conftest import Kg

SALES, DM = "channel:sales", "dm:ana,bo"
_FACT_ID = re.compile(r"\bf-[a-z0-9]{6}\b")
_KEY = re.compile(r"\bk[a-z2-7]{16}\b")


@pytest.fixture(scope="module")
def kb(demo_template, tmp_path_factory) -> Kg:
    """The example organization (heard by the owner), and facts heard in #sales, in public, in #eng
    and in a private conversation, each with a link between entities that exist for it alone."""
    kg = Kg(tmp_path_factory.mktemp("audience") / "kb")
    shutil.copytree(demo_template, kg.path, symlinks=True)
    for key, name in (("team/sales-desk", "Sales desk"), ("repo/salesonly", "Salesonly repo")):
        kg("add-entity", key, "--name", name)
    kg("add-entity", "repo/dmonly", "--name", "Dmonly repo")
    said = {"--audience": SALES, "-s": "slack:a1"}
    kg("propose", "repo/api", "caveat", "--value", "mksalesvalue: priced per seat", *_flat(said))
    link = kg.json("propose", "team/sales-desk", "owns", "--object", "repo/salesonly", *_flat(said))["id"]
    kg("confirm", link)
    old = kg.json("propose", "repo/salesonly", "caveat", "--value", "mksalesold: ships monthly", *_flat(said))["id"]
    kg("supersede", old, "--value", "mkengnew: ships weekly", "--audience", "channel:eng", "-s", "slack:a2")
    kg(
        "propose",
        "repo/web-app",
        "caveat",
        "--value",
        "mkpublicvalue: open source",
        "--audience",
        "public",
        "-s",
        "slack:a3",
    )
    kg(
        "propose",
        "repo/api",
        "caveat",
        "--value",
        "mkengvalue: runs on arm",
        "--audience",
        "channel:eng",
        "-s",
        "slack:a4",
    )
    kg("propose", "team/web", "owns", "--object", "repo/dmonly", "--audience", DM, "-s", "slack:a5")
    kg("propose", "repo/api", "caveat", "--value", "mkdmvalue: a discount for Ana", "--audience", DM, "-s", "slack:a6")
    return kg


def _flat(options: dict) -> list[str]:
    return [part for pair in options.items() for part in pair]


def told(path, audience: str) -> tuple[set[str], set[str]]:
    """The entity ids and fact ids kg lookup tells ``audience`` (each entity's lookup: its current
    facts and backlinks), with each entity's past facts it may hear (kg facts --everything)."""
    kb = KnowledgeBase.open(path)
    with kb.reading() as session:
        everyone = [
            row["id"]
            for kind in session.schema.types.values()
            for row in session.values("raw-entities", entities=session.entities_graph, **{"class": _node(kind.iri)})
        ]
        session.hear_as(audience)
        entities, facts = set(), set()
        for entity_id in everyone:
            try:
                looked = session.lookup(entity_id)
            except KgError:
                continue  # it does not exist for this audience
            entities.add(entity_id)
            for fact in looked["facts"] + looked["backlinks"]:
                facts.add(fact["id"])
            facts |= {f["id"] for f in session.facts(entity_id, everything=True)["facts"]}
    return entities, facts


def _node(iri: str):
    from pyoxigraph import NamedNode

    return NamedNode(iri)


def pages_as(pages: Pages, audience: str | None) -> dict[str, dict]:
    view = View(None, audience)
    return {
        "briefing": pages.home(view),
        "constellation": pages.constellation(view),
        "raw repos": pages.raw(view, None, "repo", ""),
        "raw Product": pages.raw(view, "Product", None, ""),
        "raw search": pages.raw(view, None, None, "repo"),
    }


@pytest.mark.parametrize("audience", [SALES, DM, "dm:ana", "public"])
def test_shown_as_an_audience_every_page_holds_only_what_kg_lookup_tells_it(kb, audience):
    entities, facts = told(kb.path, audience)
    pages = Pages(kb.path)
    keys = {pages.key("main", entity_id) for entity_id in entities}
    shown = pages_as(pages, audience)
    for entity_id in sorted(entities):  # each entity's page, now and as it was (the replaced facts named)
        key = pages.key("main", entity_id)
        shown[entity_id] = pages.entity(View(None, audience), key)
        shown[f"{entity_id} as of"] = pages.entity(View(None, audience, as_of="2020-01-01"), key)
    assert len(shown) > 5 + len(entities)
    for name, doc in shown.items():
        text = json.dumps(doc)
        assert set(_FACT_ID.findall(text)) <= facts, name
        assert set(_KEY.findall(text)) <= keys, name
        assert doc["view"]["audience"] == audience


def test_shown_as_sales_the_pages_hold_what_sales_heard_and_nothing_else(kb):
    entities, facts = told(kb.path, SALES)
    assert {"team/sales-desk", "repo/salesonly", "repo/api"} <= entities and "repo/dmonly" not in entities
    pages = Pages(kb.path)
    shown = pages_as(pages, SALES)
    briefing = shown["briefing"]
    # Every fact sales may hear is counted, and nothing else: the counts are kg lookup's facts.
    assert briefing["stats"]["fact_count"] == len(facts) == briefing["captured"]["total"]
    assert briefing["stats"]["entity_count"] == len(entities)
    new = [f["sentence"] for f in briefing["this_week"]["new_facts"]]
    assert any("mksalesvalue" in s for s in new) and any("mkpublicvalue" in s for s in new)
    assert briefing["confirmed_share"]["confirmed"] == 1  # the desk's link, confirmed
    (replaced,) = briefing["this_week"]["changes"]
    assert (
        "mksalesold" in replaced["before"]["sentence"] and replaced["after"] is None
    )  # its successor was heard in #eng
    assert briefing["batch"] is None and briefing["review"] is None
    assert briefing["review_note"] == "the review queue is the owner's"
    drawn = shown["constellation"]
    desk, repo = pages.key("main", "team/sales-desk"), pages.key("main", "repo/salesonly")
    assert {n["id"] for n in drawn["nodes"]} == {desk, repo}
    assert drawn["edges"] == [{"from": desk, "to": repo, "predicate": "owns"}]
    listed = {e["name"] for e in shown["raw repos"]["entities"]}
    assert listed == {"api", "web-app", "Salesonly repo"}
    assert {e["name"] for e in shown["raw search"]["entities"]} == listed
    (product,) = [a for a in shown["raw Product"]["browse"] if a["axis"] == "Product"]
    assert {t["type"]: t["entities"] for t in product["types"]}["repo"] == 3
    assert product["waiting"] is None and shown["raw Product"]["review_note"] == "the review queue is the owner's"
    text = json.dumps(shown)
    for unheard in ("mkdmvalue", "mkengvalue", "mkengnew", "Dmonly repo", "mkcaveat"):
        assert unheard not in text


def test_the_owner_s_pages_hold_everything_and_kg_stats_s_counts(kb):
    pages = Pages(kb.path)
    shown = pages_as(pages, None)
    stats = kb.json("stats")
    briefing = shown["briefing"]
    assert briefing["stats"]["fact_count"] == stats["fact_count"] == briefing["captured"]["total"]
    assert briefing["stats"]["entity_count"] == stats["entity_count"]
    assert briefing["review"] is not None and briefing["batch"]["waiting"] >= 1
    new = json.dumps(briefing["this_week"])
    for heard in ("mksalesvalue", "mkdmvalue", "mkengvalue", "mkengnew", "mkpublicvalue"):
        assert heard in new
    assert "Dmonly repo" in {e["name"] for e in shown["raw repos"]["entities"]}
    assert shown["raw Product"]["review_note"] is None
    assert all(a["waiting"] is not None for a in shown["raw Product"]["browse"])


def test_the_review_queue_is_the_owner_s_and_an_unknown_audience_is_told_nothing(kb):
    pages = Pages(kb.path)
    with pytest.raises(Refused, match="the review queue is the owner's"):
        pages.review(View(None, SALES))
    assert View.of({"as": "owner"}) == View.of({}) == View()  # showing as the owner is the owner's own view
    nothing = pages_as(pages, "somewhere:else")
    assert nothing["briefing"]["stats"]["fact_count"] == 0 == nothing["briefing"]["captured"]["total"]
    assert nothing["constellation"]["nodes"] == [] and nothing["raw repos"]["entities"] == []


def test_shown_as_an_audience_a_fact_exists_from_the_first_hearing_it_may_hear(kg, monkeypatch):
    """Heard first in a private conversation and in public two days later, a fact is not in public's
    Constellation known at the day between, and public's Briefing counts it captured on the day public
    heard it, as kg facts --known-at answers: the day it was recorded would tell public that the
    knowledge base held it earlier, from a hearing public may not know of. The owner's pages keep the
    day it was recorded; a write after the pages were first read keeps the cache's hearing times."""
    monkeypatch.setenv("KGRDF_NOW", "2026-02-23T09:00:00Z")
    kg("add-entity", "service/billing", "--name", "Billing")
    kg("add-entity", "environment/prod", "--name", "Prod")
    kg("add-entity", "repo/other", "--name", "Other")
    fact = kg.json("propose", "Billing", "lives_in", "--object", "Prod", "-s", "doc:a", "--audience", "dm:dana,jo")
    pages = Pages(kg.path)
    pages.home(View(None, "public"))  # the cache is made now, and kept by the writes that follow
    monkeypatch.setenv("KGRDF_NOW", "2026-02-25T09:00:00Z")
    kg("propose", "Billing", "lives_in", "--object", "Prod", "-s", "doc:b", "--audience", "public")
    monkeypatch.setenv("KGRDF_NOW", "2026-02-26T09:00:00Z")
    assert kg.json("facts", "Billing", "--audience", "public", "--known-at", "2026-02-24")["facts"] == []

    def edges(audience, known_at):
        doc = Pages(kg.path).constellation(View(None, audience, known_at=known_at))
        return len(doc["edges"])

    def captured(audience):
        days = Pages(kg.path).home(View(None, audience))["captured"]["days"]
        return {day["day"]: day["captured"] for day in days if day["captured"]}

    assert (edges("public", "2026-02-24"), edges("public", "2026-02-25T10:00:00Z")) == (0, 1)
    assert captured("public") == {"2026-02-25": 1}
    assert (edges(None, "2026-02-24"), captured(None)) == (1, {"2026-02-23": 1})
    assert edges("dm:dana,jo", "2026-02-24") == 1
    assert kg.json("facts", "Billing", "--audience", "public")["facts"][0]["id"] == fact["id"]
    (kg.path / "cache" / "measures.sqlite").unlink()  # and a cache made again from the index says the same
    assert captured("public") == {"2026-02-25": 1}
    assert (edges("public", "2026-02-24"), edges(None, "2026-02-24")) == (0, 1)


def test_an_entity_page_known_at_a_time_lists_the_facts_replaced_by_then_alone(kg, monkeypatch):
    """Travelling in known time, the entity page listed as replaced a fact that was replaced only
    later (its list was read as of now); it lists what had been replaced by then."""
    monkeypatch.setenv("KGRDF_NOW", "2026-02-01T09:00:00Z")
    kg("add-entity", "repo/a", "--name", "A")
    first = kg.json("propose", "repo/a", "caveat", "--value", "one", "-s", "doc:a")["id"]
    kg("confirm", first)
    monkeypatch.setenv("KGRDF_NOW", "2026-03-01T09:00:00Z")
    kg("supersede", first, "--value", "two", "-s", "doc:b")
    pages = Pages(kg.path)
    key = pages.key("main", "repo/a")
    then = pages.entity(View(None, None, known_at="2026-02-15"), key)
    assert then["superseded"] == []
    assert [f["value"] for group in then["groups"] for f in group["facts"]] == ["one"]
    assert [f["id"] for f in pages.entity(View(None, None), key)["superseded"]] == [first]
