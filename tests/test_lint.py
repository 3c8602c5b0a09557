"""kg lint (§8): each kind of finding, made on purpose, found with the entities and facts it names,
and gone once its fix command has run; a clean knowledge base; the JSON document; the example."""

import json
import shlex

import pytest

from kgrdf import lint, schema
from kgrdf.cli import app
from tests.conftest import Kg, runner

KINDS = {
    "stale",
    "contradiction",
    "overlap",
    "orphan",
    "alias_collision",
    "merge_suggestion",
    "look_alike",
    "retention",
    "lost",
}


@pytest.fixture(autouse=True)
def at_home(tmp_path, monkeypatch):
    """The knowledge base the kg fixture makes is the one a command without --kb reaches, so the
    fixes read as they are printed there (the test of --kb in them sets its own)."""
    monkeypatch.setenv("KGRDF_HOME", str(tmp_path / "kb"))


def lint_run(kg, *args):
    """``kg lint`` with any exit code (the Kg runner insists on one)."""
    result = runner.invoke(app, ["lint", *args, "--kb", str(kg.path)])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def findings(kg, kind=None):
    """The findings of ``kg lint --json`` (of one kind), checking the document and the exit code."""
    result = lint_run(kg, "--json")
    doc = json.loads(result.stdout)
    assert set(doc) == {"now", "settings", "findings", "counts"}
    assert set(doc["counts"]) == KINDS
    assert sum(doc["counts"].values()) == len(doc["findings"])
    assert result.exit_code == (1 if doc["findings"] else 0)
    for finding in doc["findings"]:
        assert set(finding) == {"kind", "message", "entities", "facts", "fix", "alternatives"}
        assert finding["kind"] in KINDS
    return [f for f in doc["findings"] if kind is None or f["kind"] == kind]


def run(kg, command: str, **replace):
    """Run a fix as a user would paste it, with its placeholders filled in."""
    words = shlex.split(command)
    assert words[0] == "kg"
    return kg(*[replace.get(w, w) for w in words[1:]])


def fact_id(kg, *args):
    return kg.json("propose", *args)["id"]


@pytest.fixture
def linked(kg, monkeypatch):
    """A release process announced in #deploys, confirmed on 2026-06-01: no finding then."""
    monkeypatch.setenv("KGRDF_NOW", "2026-06-01T09:00:00Z")
    kg("add-entity", "process/release", "--name", "Release process")
    kg("add-entity", "channel/deploys", "--name", "#deploys")
    kg("confirm", fact_id(kg, "process/release", "posts_to", "--object", "channel/deploys", "--source", "report:r1"))
    return kg


# --- a clean knowledge base ----------------------------------------------------------------------


def test_an_empty_knowledge_base_is_clean(kg):
    assert findings(kg) == []
    text = kg("lint").stdout
    assert text.startswith("no findings")


def test_a_small_connected_knowledge_base_is_clean_and_exits_0(linked):
    assert findings(linked) == []
    doc = linked.json("lint")
    assert doc["settings"] == {"stale_days": 180, "retention_days": 365}
    assert doc["counts"] == {kind: 0 for kind in KINDS}


def test_findings_exit_1_and_the_text_groups_them_by_kind_with_a_summary(kg):
    kg("add-entity", "step/canary", "--name", "Canary checks")
    kg("add-entity", "repo/web-app", "--name", "web-app")
    kg("add-entity", "repo/webapp", "--name", "Web App")
    result = kg("lint", expect=1)
    lines = result.stdout.splitlines()
    assert lines[0] == "orphans: entities in no current fact (3)"
    assert "merge suggestions: near-identical names of one type (1)" in lines
    assert lines[-1] == "4 findings: 3 orphans, 1 merge suggestion"
    assert "    fix: kg propose PROCESS has_step --object step/canary --source KIND:REF" in lines


# --- stale ---------------------------------------------------------------------------------------


@pytest.fixture
def released(kg, monkeypatch):
    """The release process and #deploys, no fact yet, on 2026-01-10."""
    monkeypatch.setenv("KGRDF_NOW", "2026-01-10T09:00:00Z")
    kg("add-entity", "process/release", "--name", "Release process")
    kg("add-entity", "channel/deploys", "--name", "#deploys")
    return kg


def test_stale_a_confirmed_fact_not_seen_for_180_days_and_confirming_it_again_clears_it(released, monkeypatch):
    kg = released
    fact = fact_id(kg, "process/release", "posts_to", "--object", "channel/deploys", "--source", "report:r2")
    kg("confirm", fact)
    monkeypatch.setenv("KGRDF_NOW", "2026-07-08T09:00:00Z")  # 179 days
    assert findings(kg) == []
    monkeypatch.setenv("KGRDF_NOW", "2026-07-10T09:00:00Z")  # 181 days
    [stale] = findings(kg)
    assert stale["kind"] == "stale"
    assert stale["facts"] == [fact]
    assert stale["entities"] == ["process/release", "channel/deploys"]
    assert stale["message"] == f"{fact}: Release process is announced in #deploys; last seen 2026-01-10, 181 days ago"
    assert stale["fix"] == f"kg confirm {fact}"
    assert stale["alternatives"] == [f"kg reject {fact}"]
    run(kg, stale["fix"])
    assert findings(kg) == []
    monkeypatch.setenv("KGRDF_NOW", "2027-01-07T09:00:00Z")  # 181 days after the new confirmation
    assert [f["facts"] for f in findings(kg, "stale")] == [[fact]]


def test_stale_follows_kgrdf_stale_days_and_reject_clears_it(released, monkeypatch):
    kg = released
    fact = fact_id(kg, "process/release", "caveat", "--value", "not on Fridays", "--source", "pr:12")
    kg("confirm", fact)
    monkeypatch.setenv("KGRDF_NOW", "2026-02-20T09:00:00Z")
    assert findings(kg, "stale") == []
    monkeypatch.setenv("KGRDF_STALE_DAYS", "30")
    [stale] = findings(kg, "stale")
    assert stale["facts"] == [fact] and stale["entities"] == ["process/release"]
    run(kg, stale["alternatives"][0])
    assert findings(kg, "stale") == []


def test_a_proposal_is_never_stale_and_observing_a_fact_again_refreshes_it(released, monkeypatch):
    kg = released
    kg("add-entity", "system/ci", "--name", "CI")
    fact_id(kg, "process/release", "uses", "--object", "system/ci", "--source", "pr:1")  # stays proposed
    fact = fact_id(kg, "process/release", "posts_to", "--object", "channel/deploys", "--source", "report:r2")
    kg("confirm", fact)
    monkeypatch.setenv("KGRDF_NOW", "2026-08-01T09:00:00Z")
    kg("propose", "process/release", "posts_to", "--object", "channel/deploys", "--source", "report:r9")
    monkeypatch.setenv("KGRDF_NOW", "2026-12-01T09:00:00Z")  # 122 days after the new observation
    assert findings(kg, "stale") == []
    monkeypatch.setenv("KGRDF_NOW", "2027-02-01T09:00:00Z")
    assert [f["facts"] for f in findings(kg, "stale")] == [[fact]]


# --- contradiction -------------------------------------------------------------------------------


@pytest.fixture
def contradicted(linked, monkeypatch):
    """Two purposes of the release process, both confirmed automatically (two trusted sources each,
    an automatic confirmation closes nothing): a contradiction. Returns (older, newer)."""
    monkeypatch.setenv("KGRDF_NOW", "2026-06-02T09:00:00Z")
    older = linked.json(
        "propose",
        "process/release",
        "purpose",
        "--value",
        "ship weekly",
        "--source",
        "report:a",
        "--source",
        "ledger:b",
    )
    monkeypatch.setenv("KGRDF_NOW", "2026-06-03T09:00:00Z")
    newer = linked.json(
        "propose", "process/release", "purpose", "--value", "ship daily", "--source", "report:c", "--source", "ledger:d"
    )
    assert older["status"] == newer["status"] == "confirmed"
    return older["id"], newer["id"]


def test_contradiction_two_current_values_of_a_single_valued_predicate(linked, contradicted):
    older, newer = contradicted
    [found] = findings(linked, "contradiction")
    assert found["entities"] == ["process/release"]
    assert found["facts"] == [newer, older]
    assert found["message"] == (
        f"Release process has 2 current values of purpose, which takes one: "
        f"'ship daily' ({newer}, newest), 'ship weekly' ({older})"
    )
    assert found["fix"] == f"kg confirm {newer}"
    assert found["alternatives"] == [f"kg confirm {older}"]


def test_a_stale_value_that_contradicts_a_newer_one_is_the_contradiction_s_and_no_stale_fix_chooses_it(
    linked, contradicted, monkeypatch
):
    """The older value's stale fix (kg confirm it), printed first and pasted, chose it: the newer
    value was closed. A value in a contradiction is listed there alone, whose fix keeps the newest."""
    older, newer = contradicted
    monkeypatch.setenv("KGRDF_NOW", "2026-12-01T09:00:00Z")  # both past 180 days
    found = findings(linked)
    assert [f["kind"] for f in found if set(f["facts"]) & {older, newer}] == ["contradiction"]
    [contradiction] = [f for f in found if f["kind"] == "contradiction"]
    run(linked, contradiction["fix"])
    assert linked.json("history", newer)["fact"]["status"] == "confirmed"
    assert linked.json("history", older)["fact"]["superseded_by"] == newer


@pytest.mark.parametrize("how", ["fix", "alternative", "supersede", "reject"])
def test_contradiction_is_cleared_by_each_way_of_choosing_a_value(linked, contradicted, how):
    older, newer = contradicted
    [found] = findings(linked, "contradiction")
    if how == "fix":
        run(linked, found["fix"])
        kept = newer
    elif how == "alternative":
        run(linked, found["alternatives"][0])
        kept = older
    elif how == "supersede":
        linked("supersede", older, "--value", "ship daily")
        kept = newer
    else:
        linked("reject", newer)
        kept = older
    assert findings(linked, "contradiction") == []
    purposes = [f["id"] for f in linked.json("facts", "process/release", "--predicate", "purpose")["facts"]]
    assert purposes == [kept]


def test_proposed_or_closed_values_are_no_contradiction(linked):
    first = fact_id(linked, "process/release", "purpose", "--value", "ship weekly", "--source", "pr:1")
    linked("confirm", first)
    fact_id(linked, "process/release", "purpose", "--value", "ship daily", "--source", "pr:2")  # proposed
    assert findings(linked, "contradiction") == []


def test_a_value_that_holds_until_its_later_replacement_begins_is_no_contradiction(linked, monkeypatch):
    """Corrected on June 1st to 'ship daily' from July 1st: 'ship weekly' holds until then, and the
    two, each true in its own time, are neither a contradiction nor an overlap, before July or after."""
    first = fact_id(linked, "process/release", "purpose", "--value", "ship weekly", "--source", "pr:1")
    linked("confirm", first)
    linked("supersede", first, "--value", "ship daily", "--valid-from", "2026-07-01")
    for now, value in (("2026-06-01T10:00:00Z", "ship weekly"), ("2026-07-02T09:00:00Z", "ship daily")):
        monkeypatch.setenv("KGRDF_NOW", now)
        purposes = linked.json("facts", "process/release", "--predicate", "purpose")["facts"]
        assert [f["value"] for f in purposes] == [value], now
        assert findings(linked, "contradiction") == findings(linked, "overlap") == []


# --- orphan --------------------------------------------------------------------------------------


def test_orphan_an_entity_in_no_current_fact_and_its_filled_in_fix_clears_it(linked):
    linked("add-entity", "step/canary", "--name", "Canary checks")
    [orphan] = findings(linked, "orphan")
    assert orphan["entities"] == ["step/canary"] and orphan["facts"] == []
    assert orphan["message"] == "Canary checks (step/canary) takes part in no current fact"
    assert orphan["fix"] == "kg propose PROCESS has_step --object step/canary --source KIND:REF"
    run(linked, orphan["fix"], PROCESS="process/release", **{"KIND:REF": "transcript:s-1"})
    assert findings(linked, "orphan") == []


def test_an_entity_whose_only_fact_is_rejected_or_closed_is_an_orphan(linked):
    linked("add-entity", "channel/ops", "--name", "#ops")
    fact = fact_id(linked, "process/release", "uses", "--object", "channel/ops", "--source", "pr:3")
    assert findings(linked, "orphan") == []  # a proposal counts
    linked("reject", fact)
    assert [f["entities"] for f in findings(linked, "orphan")] == [["channel/ops"]]


@pytest.mark.parametrize(
    "type_key, fix",
    [
        ("step", "kg propose PROCESS has_step --object step/x --source KIND:REF"),
        ("process", "kg propose process/x has_step --object STEP --source KIND:REF"),
        ("person", "kg propose person/x member_of --object TEAM --source KIND:REF"),
        ("decision", "kg propose decision/x about --object ENTITY --source KIND:REF"),
        ("organization", "kg propose organization/x customer_of --object ORGANIZATION --source KIND:REF"),
    ],
)
def test_orphan_fix_comes_from_the_schema(type_key, fix):
    assert lint.orphan_fix(f"{type_key}/x", type_key, schema.core()) == fix


def test_orphan_fix_for_a_type_with_values_only_or_nothing():
    site = schema.Schema(
        types={
            "widget": schema.EntityType("widget", "urn:widget", "Site", "widget"),
            "gadget": schema.EntityType("gadget", "urn:gadget", "Site", "gadget"),
        },
        predicates={
            "colour": schema.Predicate(
                key="colour",
                iri="urn:colour",
                axis="Site",
                label="colour",
                sentence="{subject} is {target}",
                takes_entity=False,
                value_type=None,
                single_valued=False,
                high_risk=False,
                person_ok=False,
                ordered=False,
                domain=frozenset({"widget"}),
            )
        },
    )
    assert lint.orphan_fix("widget/x", "widget", site) == "kg propose widget/x colour --value VALUE --source KIND:REF"
    assert lint.orphan_fix("gadget/x", "gadget", site) == (
        "kg propose gadget/x PREDICATE --object ENTITY --source KIND:REF"
    )


# --- alias collision ------------------------------------------------------------------------------


def test_alias_collision_two_people_sharing_a_name_until_distinct_from_says_so(kg):
    kg("add-entity", "person/dana", "--name", "Dana Okafor", "--alias", "Dana")
    # A second alias "Dana" is refused on writing; a name may be shared, and lint reports it.
    assert (
        "person/dana" in kg("add-entity", "person/dana-lee", "--name", "Dana Lee", "--alias", "Dana", expect=1).stderr
    )
    kg("add-entity", "person/dana-lee", "--name", "Dana")
    [found] = findings(kg, "alias_collision")
    assert found["entities"] == ["person/dana", "person/dana-lee"] and found["facts"] == []
    assert found["message"] == "Dana Okafor (person/dana) and Dana (person/dana-lee): both are called 'Dana'"
    assert found["fix"] == "kg propose person/dana distinct_from --object person/dana-lee --source user:kg-lint"
    assert findings(kg, "merge_suggestion") == []
    run(kg, found["fix"])
    assert findings(kg, "alias_collision") == []


def test_alias_collision_an_alias_that_is_another_persons_first_name(kg):
    kg("add-entity", "person/dana", "--name", "Dana Okafor", "--alias", "Dana")
    kg("add-entity", "actor/dana-lee", "--name", "Dana Lee")
    kg("add-entity", "person/dan", "--name", "Dan Brooks", "--alias", "Dan")
    [found] = findings(kg, "alias_collision")
    assert found["entities"] == ["actor/dana-lee", "person/dana"]
    assert found["message"].endswith("'Dana' names Dana Okafor and is the first name of Dana Lee")
    # the other way out: they are one person
    run(kg, found["alternatives"][0])
    assert findings(kg, "alias_collision") == []


def test_alias_collisions_literal():
    Named = lint.Named
    okafor = Named("person/dana", "person", "Dana Okafor", ["Dana"])
    lee = Named("person/dana-lee", "person", "Dana Lee")
    brooks = Named("person/dan", "person", "Dan Brooks", ["Dan"])
    assert [(a.id, b.id) for a, b, _ in lint.alias_collisions([okafor, lee, brooks])] == [
        ("person/dana", "person/dana-lee")
    ]
    plain = Named("person/dana", "person", "Dana Okafor")
    assert lint.alias_collisions([plain, lee]) == []  # two first names alone resolve to nobody
    twin = Named("person/dana-2", "person", "dana  OKAFOR")
    assert [why for _, _, why in lint.alias_collisions([plain, twin])] == ["both are called 'Dana Okafor'"]


# --- merge suggestion -----------------------------------------------------------------------------


def test_merge_suggestion_near_identical_names_and_the_alias_fix_clears_it(linked):
    linked("add-entity", "channel/deploy", "--name", "deploys")
    [found] = findings(linked, "merge_suggestion")
    assert found["entities"] == ["channel/deploy", "channel/deploys"] and found["facts"] == []
    assert found["message"] == (
        "'deploys' (channel/deploy) and '#deploys' (channel/deploys): the same name but for "
        "case, spaces and punctuation (0 and 1 current facts)"
    )
    # the one with fewer facts becomes the alias of the other
    assert found["fix"] == "kg propose channel/deploy alias_of --object channel/deploys --source user:kg-lint"
    assert found["alternatives"] == [
        "kg propose channel/deploy distinct_from --object channel/deploys --source user:kg-lint"
    ]
    run(linked, found["fix"])
    assert findings(linked, "merge_suggestion") == []


def test_merge_suggestion_is_cleared_by_distinct_from(kg):
    kg("add-entity", "repo/frontend", "--name", "frontend-service")
    kg("add-entity", "repo/frontend-2", "--name", "Frontend Servise")
    [found] = findings(kg, "merge_suggestion")
    assert "names one letter apart" in found["message"]
    run(kg, found["alternatives"][0])
    assert findings(kg, "merge_suggestion") == []


@pytest.mark.parametrize(
    "a, b, why",
    [
        ("web-app", "Web App", "the same name but for case, spaces and punctuation"),
        ("webapp", "WEB_APP", "the same name but for case, spaces and punctuation"),
        ("Dana Okafor", "Dana Okafur", "names one letter apart"),
        ("release-process", "release process!", "the same name but for case, spaces and punctuation"),
        ("frontend", "frontends", "names one letter apart"),
        ("staging-2", "staging-3", None),  # numbered siblings
        ("staging", "staging-2", None),
        ("api", "app", None),  # too short to call a typo
        ("deploy", "deplyo", None),  # two letters swapped is two edits
        ("!!!", "???", None),
    ],
)
def test_near_identical_literal(a, b, why):
    assert lint.near_identical(a, b) == why
    assert lint.near_identical(b, a) == why


def test_merge_suggestions_literal_only_within_one_type():
    Named = lint.Named
    entities = [
        Named("repo/web-app", "repo", "web-app", ["the web app"]),
        Named("repo/webapp", "repo", "Web App"),
        Named("service/web-app", "service", "web-app"),
        Named("repo/site", "repo", "The Web-App"),
        Named("environment/staging-2", "environment", "staging-2"),
        Named("environment/staging-3", "environment", "staging-3"),
    ]
    pairs = [(a.id, b.id, why) for a, b, why in lint.merge_suggestions(entities)]
    assert pairs == [
        ("repo/site", "repo/web-app", "the name of one is an alias of the other ('the web app')"),
        ("repo/web-app", "repo/webapp", "the same name but for case, spaces and punctuation"),
    ]


# --- retention ------------------------------------------------------------------------------------


def test_retention_a_person_fact_not_observed_for_365_days_names_ids_only(kg, monkeypatch):
    monkeypatch.setenv("KGRDF_NOW", "2025-01-01T09:00:00Z")
    kg("add-entity", "person/dana", "--name", "Dana Okafor", "--alias", "Dana")
    kg("add-entity", "team/platform", "--name", "Platform team")
    member = fact_id(kg, "person/dana", "member_of", "--object", "team/platform", "--source", "profile:dir/dana")
    title = fact_id(kg, "person/dana", "title", "--value", "Zookeeper", "--source", "profile:dir/dana")
    monkeypatch.setenv("KGRDF_NOW", "2026-01-02T09:00:00Z")  # 366 days
    found = findings(kg, "retention")
    assert sorted(f["facts"][0] for f in found) == sorted([member, title])
    by_fact = {f["facts"][0]: f for f in found}
    assert by_fact[member]["entities"] == ["person/dana", "team/platform"]
    assert by_fact[title]["entities"] == ["person/dana"]
    assert all(f["fix"] == "kg expire" for f in found)
    # neither the name nor the value shows, in any finding, in either form
    everything = lint_run(kg, "--json").stdout + lint_run(kg).stdout
    assert "Zookeeper" not in everything and "Dana Okafor" not in everything
    fix = next(line for line in lint_run(kg).stdout.splitlines() if line.strip().startswith("fix: kg expire"))
    assert fix.strip() == "fix: kg expire  # deletes them"  # the command, pasted as printed, runs in a shell
    assert findings(kg, "stale") == []
    deleted = kg.json("expire", "--dry-run")["deleted"]
    assert deleted == len(found)  # lint reports what kg expire deletes
    run(kg, "kg expire")
    assert findings(kg, "retention") == []


def test_a_lost_value_past_retention_is_named_by_its_id_alone(kg, monkeypatch):
    """A person's title closed by a correction rejected since, past retention: the retention finding
    named its id alone, and a lost-values finding beside it showed the name and the value, with a fix
    that proposed again what kg expire is about to delete."""
    monkeypatch.setenv("KGRDF_NOW", "2025-01-01T09:00:00Z")
    kg("add-entity", "person/dana", "--name", "Dana Okafor")
    title = fact_id(kg, "person/dana", "title", "--value", "Mkzookeeper", "--source", "profile:dir/dana")
    monkeypatch.setenv("KGRDF_NOW", "2025-01-01T09:01:00Z")
    corrected = kg.json("supersede", title, "--value", "Mkkeeper")["id"]
    monkeypatch.setenv("KGRDF_NOW", "2025-01-01T09:02:00Z")
    kg("reject", corrected)
    assert [f["facts"] for f in findings(kg, "lost")] == [[title]]  # (within retention: a lost value)
    monkeypatch.setenv("KGRDF_NOW", "2026-03-01T09:00:00Z")
    assert sorted(f["facts"][0] for f in findings(kg, "retention")) == sorted([title, corrected])
    assert findings(kg, "lost") == []
    everything = lint_run(kg, "--json").stdout + lint_run(kg).stdout
    assert "Mkzookeeper" not in everything and "Mkkeeper" not in everything  # (Dana is an orphan: by name)


def test_retention_follows_kgrdf_retention_days(kg, monkeypatch):
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T09:00:00Z")
    kg("add-entity", "person/sam", "--name", "Sam Reyes")
    fact_id(kg, "person/sam", "timezone", "--value", "Europe/Lisbon", "--source", "profile:dir/sam")
    monkeypatch.setenv("KGRDF_NOW", "2026-03-01T09:00:00Z")
    assert findings(kg, "retention") == []
    monkeypatch.setenv("KGRDF_RETENTION_DAYS", "30")
    assert len(findings(kg, "retention")) == 1
    monkeypatch.setenv("KGRDF_RETENTION_DAYS", "soon")
    assert "KGRDF_RETENTION_DAYS='soon'" in kg("lint", expect=2).stderr


def test_retention_a_person_fact_confirmed_again_is_kept_as_long_as_one_observed_again(kg, monkeypatch):
    """Retention counts a person fact's last observation or confirmation, as stale facts do: a fact
    heard a year ago and confirmed today was reported past retention and deleted by kg expire the
    day it was confirmed. It is kept 365 days from its confirmation, and each one renews it."""
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T09:00:00Z")
    kg("add-entity", "person/zed", "--name", "Zed Xylo")
    kg("add-entity", "team/web", "--name", "Web")
    member = fact_id(kg, "person/zed", "member_of", "--object", "team/web", "--source", "slack:z")
    monkeypatch.setenv("KGRDF_NOW", "2027-01-20T09:00:00Z")  # 384 days on, never observed again
    assert [f["facts"] for f in findings(kg, "retention")] == [[member]]
    kg("confirm", member)
    assert findings(kg) == []
    assert kg.json("expire")["deleted"] == 0
    assert kg.json("history", member)["fact"]["status"] == "confirmed"
    monkeypatch.setenv("KGRDF_NOW", "2027-12-01T09:00:00Z")
    kg("confirm", member)  # confirmed again: renewed from today
    monkeypatch.setenv("KGRDF_NOW", "2028-01-21T09:00:00Z")  # 366 days after the first confirmation
    assert findings(kg, "retention") == [] and kg.json("expire", "--dry-run")["deleted"] == 0
    monkeypatch.setenv("KGRDF_NOW", "2028-12-02T09:00:00Z")  # 367 days after the last
    found = findings(kg, "retention")
    assert [f["facts"] for f in found] == [[member]]
    assert found[0]["message"] == f"{member} names a person and was not observed or confirmed again for 365 days"
    assert kg.json("expire")["deleted"] == 1
    assert kg.json("facts", "person/zed", "--all")["facts"] == []


# --- the example, the read path, the engines ----------------------------------------------------


def test_the_example_organization_has_two_orphans(demo):
    """What lint says about the demo: #incidents lost its only fact when the hotfix process's entry
    point was corrected, and the organization itself takes part in no fact."""
    result = demo("lint", "--json", expect=1)
    doc = json.loads(result.stdout)
    assert [(f["kind"], f["entities"]) for f in doc["findings"]] == [
        ("orphan", ["channel/incidents"]),
        ("orphan", ["organization/fernhill"]),
    ]


def test_the_lint_queries_give_the_same_rows_on_oxigraph_and_rdflib(linked, contradicted, monkeypatch):
    """Over a knowledge base with every kind of finding."""
    from kgrdf import clock, queries, vocab
    from tests.conftest import both_engines
    from tests.test_queries import _comparable, _oxigraph, _rdflib

    linked("add-entity", "person/dana", "--name", "Dana Okafor", "--alias", "Dana")
    linked("add-entity", "person/dana-lee", "--name", "Dana")
    linked("add-entity", "channel/deploy", "--name", "deploys")
    linked("propose", "person/dana", "distinct_from", "--object", "person/dana-lee", "--source", "user:kg-lint")
    linked("propose", "person/dana", "title", "--value", "Lead", "--source", "profile:dir")
    linked("add-entity", "environment/qa", "--name", "qa")
    active = json.loads(
        linked("propose", "environment/qa", "status", "--value", "active", "--source", "report:r", "--json").stdout
    )["id"]
    linked("confirm", active)
    linked("supersede", active, "--value", "retired", "--valid-from", "2026-01-01")  # two values (lint-overlaps)
    linked("add-entity", "environment/uat", "--name", "uat")
    up = json.loads(
        linked("propose", "environment/uat", "status", "--value", "up", "--source", "report:r", "--json").stdout
    )["id"]
    linked("confirm", up)
    down = json.loads(linked("supersede", up, "--value", "down", "--json").stdout)["id"]
    linked("reject", down)  # the value it closed is lost (lint-lost)
    store, graph = both_engines(linked.path)
    later = vocab.datetime_literal("2027-06-01T00:00:00Z")
    now = vocab.datetime_literal(clock.iso(clock.now()))
    bindings = {
        "before": later,
        "now": now,
        "entities": vocab.entities_graph("main"),
        "entity": vocab.entity_iri("main", "process/release"),
    }
    names = [n for n in queries.names() if n.startswith("lint-")]
    assert len(names) == 8  # contradictions are summed up from kgrdf.measures (test_measures.py)
    for name in names:
        query = queries.load(name)
        given = {k: v for k, v in bindings.items() if k in query.params}
        rows = _oxigraph(store, query, given)
        assert rows, f"{name}.rq gave no rows"
        assert _comparable(rows) == _comparable(_rdflib(graph, query, given)), name


def test_a_fix_printed_for_another_perspective_names_it_and_pasted_fixes_the_finding_there(kg):
    """kg lint --perspective acme printed its fixes without --perspective: pasted as printed, each
    changed the default perspective (a new entity there), and the finding stayed."""
    kg("org", "init", "Acme", "--perspective", "acme")
    kg("add-entity", "repo/a", "--name", "P\u0430yments", "--perspective", "acme")  # a Cyrillic а
    doc = json.loads(lint_run(kg, "--json", "--perspective", "acme").stdout)
    (found,) = [f for f in doc["findings"] if f["kind"] == "look_alike"]
    for line in [found["fix"], *found["alternatives"]]:
        assert shlex.split(line)[-2:] == ["--perspective", "acme"], line
    shown = lint_run(kg, "--perspective", "acme").stdout
    assert f"fix: {found['fix']}" in shown
    main_before = kg.json("perspectives")["perspectives"]
    run(kg, found["fix"])
    assert kg.json("perspectives")["perspectives"][-1] == main_before[-1]  # main: as it was
    after = json.loads(lint_run(kg, "--json", "--perspective", "acme").stdout)
    assert [f for f in after["findings"] if f["kind"] == "look_alike"] == []
    assert all("--perspective" not in f["fix"] for f in findings(kg))  # the default's own: as before


def test_a_look_alike_of_another_kind_is_settled_by_distinct_from_never_by_an_alias(kg):
    """A repo named "Аcme" (a Cyrillic А) beside the organization Acme: lint's fix said the repo
    was another name of the organization, which kg propose refuses (alias_of relates names of one
    kind). Its fix says the two are distinct, and pasted, it settles the finding."""

    def looking_like():
        return [f for f in findings(kg, "look_alike") if "looks like" in f["message"]]

    kg("org", "add", "Acme")
    kg("add-entity", "repo/acme", "--name", "\u0410cme")
    (found,) = looking_like()
    assert "distinct_from" in found["fix"] and found["alternatives"] == []
    run(kg, found["fix"])
    assert looking_like() == []
    kg("org", "add", "Acm\u0435 Labs")  # (a Cyrillic е: two of one kind may be one)
    kg("org", "add", "Acme Labs")
    (found,) = looking_like()
    assert "alias_of" in found["fix"] and "distinct_from" in found["alternatives"][0]
    run(kg, found["fix"])
    assert looking_like() == []


def test_the_batch_of_another_perspective_says_how_to_answer_it_there(kg):
    kg("org", "init", "Acme", "--perspective", "acme")
    kg("add-entity", "repo/a", "--name", "alpha", "--perspective", "acme")
    kg("propose", "repo/a", "caveat", "--value", "slow", "-s", "pr:1", "--perspective", "acme")
    shown = kg("batch", "--perspective", "acme").stdout
    assert 'kg batch apply --perspective acme "confirm 1a"' in shown
    assert kg.json("batch", "--perspective", "acme")["answer_with"] == "kg batch apply --perspective acme"
    kg("batch", "apply", "confirm all", "--perspective", "acme")
    assert kg.json("facts", "repo/a", "--perspective", "acme")["facts"][0]["status"] == "confirmed"


def test_a_fix_printed_for_the_default_perspective_names_it_where_the_environment_names_another(kg, monkeypatch):
    """With KGRDF_PERSPECTIVE=acme exported, kg batch --perspective main printed kg batch apply
    without --perspective: pasted in that shell, it answered acme's batch."""
    kg("org", "init", "Acme", "--perspective", "acme")
    kg("add-entity", "repo/a", "--name", "alpha")
    kg("propose", "repo/a", "caveat", "--value", "slow", "-s", "pr:1")
    kg("add-entity", "repo/b", "--name", "beta")  # in no fact: an orphan, whose fix is a command line
    monkeypatch.setenv("KGRDF_PERSPECTIVE", "acme")
    assert kg.json("batch", "--perspective", "main")["answer_with"] == "kg batch apply --perspective main"
    doc = json.loads(lint_run(kg, "--json", "--perspective", "main").stdout)
    assert doc["findings"] and all(shlex.split(f["fix"])[-2:] == ["--perspective", "main"] for f in doc["findings"])


def test_commands_printed_to_paste_name_the_knowledge_base_a_line_without_kb_would_miss(kg, tmp_path, monkeypatch):
    """kg lint --kb PATH printed its fixes, and kg batch --kb PATH its answer line, without --kb:
    pasted as printed, each acted on the knowledge base at KGRDF_HOME (or refused there), and the
    finding stayed. Where --kb names the folder a line reaches without it, none is added."""
    home = Kg(tmp_path / "home")
    home("init")
    monkeypatch.setenv("KGRDF_HOME", str(home.path))
    kg("add-entity", "repo/a", "--name", "alpha")
    stale = kg.json("propose", "repo/a", "caveat", "--value", "slow", "-s", "pr:1")["id"]
    kg("add-entity", "repo/b", "--name", "beta")  # in no fact: an orphan
    home_before = home.snapshot()
    (found,) = findings(kg, "orphan")
    assert shlex.split(found["fix"])[-2:] == ["--kb", str(kg.path)]
    assert f"fix: {found['fix']}" in lint_run(kg).stdout
    line = kg.json("batch")["answer_with"]
    assert shlex.split(line) == ["kg", "batch", "apply", "--kb", str(kg.path)]
    kg(*shlex.split(line)[1:], "confirm all", kb=False)  # pasted as printed, the answer added
    assert [(f["id"], f["status"]) for f in kg.json("facts", "repo/a")["facts"]] == [(stale, "confirmed")]
    assert home.snapshot() == home_before  # the knowledge base at KGRDF_HOME: untouched
    monkeypatch.setenv("KGRDF_HOME", str(kg.path))
    (tmp_path / "link").symlink_to(kg.path)
    doc = json.loads(runner.invoke(app, ["lint", "--json", "--kb", str(tmp_path / "link")]).stdout)
    assert doc["findings"] and all("--kb" not in f["fix"] for f in doc["findings"])


@pytest.mark.parametrize("command", [["lint"], ["batch"], ["expire"], ["org", "customers", "--quiet-days", "400"]])
def test_a_clock_near_year_1_counts_back_to_it_and_never_fails(kg, monkeypatch, command):
    """Times are taken from year 1 on; counting a year back from there was 'a bug in kgrdf' (an
    OverflowError) in kg lint, kg batch and kg expire."""
    monkeypatch.setenv("KGRDF_NOW", "0001-03-01T00:00:00Z")
    kg("add-entity", "repo/a", "--name", "alpha")
    kg("propose", "repo/a", "caveat", "--value", "cold starts", "-s", "doc:a")
    result = runner.invoke(app, [*command, "--kb", str(kg.path)])
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    assert "bug in kgrdf" not in result.stdout + result.stderr


def test_a_long_history_of_one_value_is_linted_checked_and_warned_of_in_a_few_lines(kg, tmp_path, monkeypatch):
    """A subject with a history of values of a single-valued predicate, each in its own time (a
    ledger's): kg lint compared every pair of them, and a write beside them printed a warning for
    each. Lint finds the one overlap planted among them; a value given no time (so true at every
    time, beside each of them) is warned of in a few lines, every one listed by --json."""
    monkeypatch.setenv("KGRDF_NOW", "2026-06-01T09:00:00Z")
    records = [{"type": "entity", "id": "process/ship", "name": "Ship"}]
    for day in range(1, 29):
        records.append(
            {
                "type": "fact",
                "subject": "process/ship",
                "predicate": "purpose",
                "value": f"mkpurpose{day}",
                "valid_from": f"2026-02-{day:02d}",
                "valid_to": f"2026-02-{day + 1:02d}" if day < 28 else "2026-03-01",
                "sources": [f"ledger:{day}", f"report:{day}"],
            }
        )
    records.append(dict(records[10], value="mkplanted", valid_to="2026-02-12"))  # over the 10th and 11th's
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    kg("import", str(path), "--apply", "--auto-confirm")
    overlaps = findings(kg, "overlap")
    assert sorted(v for f in overlaps for v in f["message"].split("'") if v.startswith("mk")) == sorted(
        ["mkpurpose10", "mkplanted", "mkplanted", "mkpurpose11"]
    )
    done = kg("propose", "process/ship", "purpose", "--value", "mkalways", "-s", "doc:1")
    warned = [line for line in done.stderr.splitlines() if line.startswith("kg: warning:")]
    assert len(warned) == 6 and warned[-1].startswith("kg: warning: and 24 more")
    listed = kg.json("propose", "process/ship", "purpose", "--value", "mkalways", "-s", "doc:2")["warnings"]
    assert len(listed) == 29  # (observed again: the same pairs)


@pytest.mark.parametrize("chosen", ["fix", "alternative"])
def test_an_overlap_inside_a_value_that_holds_now_is_fixed_without_ending_what_holds_now(kg, monkeypatch, chosen):
    """#a from January on, #b from March to May: the fix said to end #a in March, which left the
    release with no entry point from then on, and lint with nothing to say of it. Each fix now keeps
    both values in a time of their own, and the first keeps what holds now."""
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T09:00:00Z")
    kg("add-entity", "process/release", "--name", "Release process")
    for name in ("a", "b"):
        kg("add-entity", f"channel/{name}", "--name", f"#{name}")
    outer = fact_id(
        kg, "process/release", "entry_point", "--object", "channel/a", "--valid-from", "2025-01-01", "-s", "doc:x"
    )
    kg("confirm", outer)
    inner = fact_id(
        kg,
        "process/release",
        "entry_point",
        "--object",
        "channel/b",
        "--valid-from",
        "2025-03-01",
        "--valid-to",
        "2025-05-01",
        "-s",
        "doc:y",
    )
    kg("confirm", inner)
    [found] = findings(kg, "overlap")
    assert found["fix"] == f"kg supersede {outer} --valid-from 2025-05-01T00:00:00Z"
    assert found["alternatives"] == [f"kg supersede {outer} --valid-to 2025-03-01T00:00:00Z"]
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T09:05:00Z")
    run(kg, found["fix"] if chosen == "fix" else found["alternatives"][0])
    assert findings(kg, "overlap") == []

    def at(moment):
        return [f["id"] for f in kg.json("facts", "process/release", "--as-of", moment)["facts"]]

    assert at("2025-04-01") == [inner]
    assert at("2026-01-01") == ([outer] if chosen == "fix" else [])


_SPANS = {  # two values of entry_point, each from .. to (None: no start, or no end), on a clock of March 1st
    "the later to come, neither ending": ((None, None), ("2026-04-01", None)),
    "both to come, neither ending": (("2026-04-01", None), ("2026-05-01", None)),
    "the earlier closed inside the later": (("2026-01-01", "2026-02-15"), ("2026-02-01", None)),
    "one to come over the end of one true now": (("2026-01-01", "2026-05-01"), ("2026-04-01", "2026-06-01")),
    "one to come over the start of another to come": (("2026-04-01", "2026-06-01"), ("2026-05-01", None)),
    # one holding all the other's time and more on both sides: one fact cannot keep both of its stretches
    "one to come inside one always true": ((None, None), ("2026-04-01", "2026-05-01")),
    "one closed inside one true now": (("2026-01-01", None), ("2026-01-10", "2026-02-01")),
}


@pytest.mark.parametrize("spans", list(_SPANS.values()), ids=list(_SPANS))
def test_every_fix_of_an_overlap_clears_it_and_keeps_each_value_some_time_of_its_own(kg, tmp_path, monkeypatch, spans):
    """An overlap's fix and each alternative, run as printed: the finding is gone, the two values
    are true at no instant together, each is true at some instant, and every instant either was true
    at one of them still is (but where one holds the other and more on both sides: the first fix
    keeps what holds now). Two values that never end, the later to come, were fixed by kg history,
    which changes nothing; one to come inside one true now, by ending what holds now."""
    from datetime import date, timedelta

    from tests.conftest import copy_of

    monkeypatch.setenv("KGRDF_NOW", "2026-03-01T09:00:00Z")
    records = [{"type": "entity", "id": "process/release", "name": "Release"}]
    records += [{"type": "entity", "id": f"channel/{n}", "name": f"#{n}"} for n in ("a", "b")]
    for n, (start, end) in zip(("a", "b"), spans, strict=True):
        times = {"valid_from": start} if start else {}
        times |= {"valid_to": end} if end else {}
        records.append(
            {"type": "fact", "subject": "process/release", "predicate": "entry_point", "object": f"channel/{n}"}
            | times
            | {"sources": [f"ledger:{n}", f"report:{n}"]}
        )
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    kg("import", str(path), "--apply", "--auto-confirm")
    (found,) = findings(kg, "overlap")
    commands = [found["fix"], *found.get("alternatives", [])]
    assert all(shlex.split(c)[:2] == ["kg", "supersede"] for c in commands), commands
    days = [date(2025, 12, 1) + timedelta(days=n) for n in range(0, 240, 3)]

    def true_on(k) -> list[set[str]]:
        held = [f for f in k.json("facts", "process/release", "--all")["facts"] if f["status"] == "confirmed"]
        return [
            {f["object"] for f in held if (f.get("valid_from") or "") <= d.isoformat() < (f.get("valid_to") or "~")}
            for d in days
        ]

    before = true_on(kg)
    nested = any(
        (x_start or "") < y_start and (not x_end or y_end < x_end)
        for (x_start, x_end), (y_start, y_end) in (spans, spans[::-1])
        if y_start and y_end
    )
    today = days.index(date(2026, 3, 1))
    for n, command in enumerate(commands):
        fixed = copy_of(kg.path, tmp_path / f"fixed-{n}")
        fixed(*shlex.split(command)[1:])
        assert not findings(fixed, "overlap"), command
        after = true_on(fixed)
        assert all(len(now) <= 1 for now in after), command
        assert all(now <= then for now, then in zip(after, before, strict=True)), command
        assert {"channel/a", "channel/b"} == set().union(*after), command
        if not nested:
            assert [bool(now) for now in after] == [bool(then) for then in before], command
        elif n == 0:
            assert after[today] == before[today], command


def test_overlaps_among_four_values_are_each_fixed_by_the_command_printed_for_them(kg, tmp_path, monkeypatch):
    """Four values of status, each confirmed in turn (live from January, frozen March to May, paused
    February to mid-March, retired from mid-April): three overlaps, and three of the four fixes
    printed were refused ("status takes one value at a time, so nothing was written"), as each
    shortened a value still overlapping a third. A fix that only takes time away is never refused:
    every fix and alternative printed runs, and ends the overlap it was printed for."""
    from tests.conftest import copy_of

    monkeypatch.setenv("KGRDF_NOW", "2026-06-01T00:00:00Z")
    kg("add-entity", "environment/stg", "--name", "staging")
    for value, *times in (
        ("live", "--valid-from", "2026-01-01"),
        ("frozen", "--valid-from", "2026-03-01", "--valid-to", "2026-05-01"),
        ("paused", "--valid-from", "2026-02-01", "--valid-to", "2026-03-15"),
        ("retired", "--valid-from", "2026-04-15"),
    ):
        kg("confirm", fact_id(kg, "environment/stg", "status", "--value", value, *times, "-s", "ledger:x"))
    found = findings(kg, "overlap")
    assert len(found) >= 2
    n = 0
    for finding in found:
        for command in (finding["fix"], *finding.get("alternatives", [])):
            assert shlex.split(command)[:2] == ["kg", "supersede"], command
            fixed = copy_of(kg.path, tmp_path / f"fixed-{n}")
            n += 1
            fixed(*shlex.split(command)[1:])  # (each exits 0)
            assert finding["facts"] not in [f["facts"] for f in findings(fixed, "overlap")], command
            fixed("validate")
