"""Reading through the CLI, on the example organization: what a user sees from each read verb."""

import json

import pytest

from .conftest import one_line


def test_lookup_shows_current_facts_with_sources_and_backlinks(demo):
    doc = demo.json("lookup", "hotfix")
    assert doc["entity"]["id"] == "process/hotfix"
    by_predicate = {f["predicate"]: f for f in doc["facts"]}
    assert by_predicate["entry_point"]["object"] == "channel/deploys"  # the superseded one is gone
    assert by_predicate["rule"]["prevents_rework"] is True
    assert all(f["sources"] for f in doc["facts"])
    assert [(f["subject"], f["predicate"]) for f in doc["backlinks"]] == [("person/dana", "approves")]
    text = demo("lookup", "hotfix").stdout
    assert "Hotfix process starts in #deploys" in text
    assert "Dana Okafor approves Hotfix process" in text


@pytest.mark.parametrize("at_once", [1, 2, 3])
def test_a_listings_sources_are_read_a_few_facts_a_query_and_are_each_facts_own(demo, monkeypatch, at_once):
    """lookup and facts read their facts' sources and hearings by one query for a few facts at a
    time (a high-degree entity's 2,000 facts, once a query a fact): the listing is the same, and
    each fact shows the sources and hearings kg history shows it."""
    from kgrdf.session import facts as fact_reads
    from kgrdf.session.reading import Reading

    whole = {args: demo.json(*args) for args in (("lookup", "hotfix"), ("facts", "hotfix", "--all"))}
    asked = []
    rows = Reading.rows

    def counted(self, name, **bindings):
        if name == "fact-heard":
            asked.append(len(bindings["fact"]))
        return rows(self, name, **bindings)

    monkeypatch.setattr(fact_reads, "AT_ONCE", at_once)
    monkeypatch.setattr(Reading, "rows", counted)
    for args, doc in whole.items():
        asked.clear()
        assert demo.json(*args) == doc
        listed = doc["facts"] + doc.get("backlinks", [])
        assert len(listed) >= 4 and sum(asked) == len(listed)
        assert len(asked) == -(-len(listed) // at_once) and max(asked) == at_once
    monkeypatch.undo()
    for fact in whole[("lookup", "hotfix")]["facts"]:
        own = demo.json("history", fact["id"])["fact"]
        assert fact["sources"] == own["sources"] and fact["hearings"] == own["hearings"]


def test_lookup_of_a_person_has_only_whitelisted_facts_and_no_summary(demo):
    doc = demo.json("lookup", "Dana")
    assert "summary" not in doc["entity"]
    assert {f["predicate"] for f in doc["facts"]} <= {"member_of", "title", "timezone", "approves"}


def test_facts_default_is_best_rank_and_all_shows_closed_ones(demo):
    current = demo.json("facts", "process/hotfix", "--predicate", "entry_point")["facts"]
    assert [f["object"] for f in current] == ["channel/deploys"]
    everything = demo.json("facts", "process/hotfix", "--predicate", "entry_point", "--all")["facts"]
    assert sorted(f["object"] for f in everything) == ["channel/deploys", "channel/incidents"]
    closed = next(f for f in everything if f["object"] == "channel/incidents")
    assert closed["superseded_by"] and closed["valid_to"].startswith("2026-10-20")


def test_facts_as_of_answers_what_was_true_then(demo):
    before = demo.json("facts", "hotfix", "--predicate", "entry_point", "--as-of", "2026-03-01")["facts"]
    assert [f["object"] for f in before] == ["channel/incidents"]
    after = demo.json("facts", "hotfix", "--predicate", "entry_point", "--as-of", "2026-10-21")["facts"]
    assert [f["object"] for f in after] == ["channel/deploys"]
    none_yet = demo.json("facts", "hotfix", "--predicate", "entry_point", "--as-of", "2025-12-31")["facts"]
    assert none_yet == []


def test_facts_known_at_answers_what_we_held_then(tmp_path, monkeypatch):
    from tests.conftest import Kg

    monkeypatch.setenv("KGRDF_NOW", "2026-05-01T10:00:00Z")  # recorded time never goes back: from the start
    kg = Kg(tmp_path / "kb")
    kg("init")
    kg("add-entity", "environment/staging", "--name", "staging")
    old = kg.json("propose", "staging", "status", "--value", "active", "--source", "report:a")
    kg("confirm", old["id"])
    monkeypatch.setenv("KGRDF_NOW", "2026-06-01T10:00:00Z")
    kg("supersede", old["id"], "--value", "retired", "--valid-from", "2026-05-20")
    monkeypatch.setenv("KGRDF_NOW", "2026-07-01T10:00:00Z")

    def values(*args):
        return [f["value"] for f in kg.json("facts", "staging", *args)["facts"]]

    assert values() == ["retired"]
    assert values("--known-at", "2026-04-01") == []  # nothing recorded yet
    assert values("--known-at", "2026-05-25") == ["active"]  # the closing was not known then
    # As of late May, by what we know now: retired since May 20.
    assert values("--as-of", "2026-05-25") == ["retired"]
    # Both timelines: what we held on May 25 about May 25.
    assert values("--as-of", "2026-05-25", "--known-at", "2026-05-25") == ["active"]
    assert values("--as-of", "2026-05-10", "--known-at", "2026-06-15") == ["active"]


def test_facts_known_at_shows_each_fact_as_it_was_held_then(tmp_path, monkeypatch):
    """Not only which facts: each as the knowledge base held it at T (its status, end, successor,
    sources and hearings then), whatever changed it after."""
    from kgrdf.serve.service import Caller, Service
    from tests.conftest import Kg

    kg = Kg(tmp_path / "kb")
    monkeypatch.setenv("KGRDF_NOW", "2026-03-02T09:00:00Z")
    kg("init")
    kg("add-entity", "team/web", "--name", "Web team")
    kg("add-entity", "repo/api", "--name", "api")
    kept = kg.json("propose", "team/web", "owns", "--object", "api", "-s", "slack:a")["id"]
    dropped = kg.json("propose", "team/web", "caveat", "--value", "flaky deploys", "-s", "slack:b")["id"]
    monkeypatch.setenv("KGRDF_NOW", "2026-03-10T09:00:00Z")
    kg("confirm", kept)
    kg("reject", dropped)
    monkeypatch.setenv("KGRDF_NOW", "2026-03-12T09:00:00Z")
    kg("propose", "team/web", "owns", "--object", "api", "-s", "doc:wiki", "--audience", "public")
    monkeypatch.setenv("KGRDF_NOW", "2026-03-20T09:00:00Z")
    kg("add-entity", "repo/web", "--name", "web")
    successor = kg.json("supersede", kept, "--object", "repo/web")["id"]
    later = kg.json("propose", "team/web", "caveat", "--value", "deploys freeze", "-s", "ledger:c", "-s", "report:c")

    def held(at, *audience):
        listed = kg.json("facts", "team/web", "--known-at", at, *audience)["facts"]
        # kg serve's /api/facts and MCP facts (one service) answer as the CLI does (§9b): they listed
        # the sources, hearings and successor the fact has now
        caller = Caller("t", "main", audience[-1] if audience else "owner")
        assert Service(kg.path).facts(caller, "team/web", known_at=at)["facts"] == listed
        return {f["id"]: f for f in listed}

    everything = {f["id"]: f for f in kg.json("facts", "team/web", "--all", "--known-at", "2026-03-05")["facts"]}
    assert {k: f["status"] for k, f in everything.items()} == {kept: "proposed", dropped: "proposed"}
    assert kg.json("facts", "team/web", "--all", "--known-at", "2026-03-01")["facts"] == []
    early = held("2026-03-05")
    assert set(early) == {kept, dropped}  # the rejection came later
    assert early[kept]["status"] == "proposed" and early[dropped]["status"] == "proposed"
    assert "superseded_by" not in early[kept] and "valid_to" not in early[kept] and "retired_at" not in early[kept]
    assert early[kept]["sources"] == [{"kind": "slack", "ref": "a"}] and early[kept]["audiences"] == ["owner"]
    assert early[kept]["observations"] == 1
    middle = held("2026-03-15")
    assert set(middle) == {kept} and middle[kept]["status"] == "confirmed"
    assert sorted(s["ref"] for s in middle[kept]["sources"]) == ["a", "wiki"] and middle[kept]["observations"] == 2
    assert set(held("2026-03-21")) == {successor, later["id"]}
    monkeypatch.setenv("KGRDF_NOW", "2026-03-25T09:00:00Z")
    kg("supersede", later["id"], "--valid-from", "2030-01-01")  # corrected later: it begins in 2030
    assert set(held("2026-03-21")) == {successor, later["id"]}  # not known on the 21st
    assert set(held("2026-03-26")) == {successor}
    # An audience is shown what it had heard by then: the public hearing came on the 12th.
    assert held("2026-03-11", "--audience", "public") == {}
    public = held("2026-03-15", "--audience", "public")[kept]
    assert public["audiences"] == ["public"] and public["sources"] == [{"kind": "doc", "ref": "wiki"}]
    assert public["recorded_at"] == "2026-03-12T09:00:00Z"  # not when the owner heard it
    now_public = kg.json("facts", "team/web", "--all", "--audience", "public")["facts"]
    assert [f["recorded_at"] for f in now_public if f["id"] == kept] == ["2026-03-12T09:00:00Z"]
    history = kg.json("history", kept, "--audience", "public")["history"]
    assert history[0]["at"] == "2026-03-12T09:00:00Z"
    assert not [e for e in history if "observed_at" in e.get("changes", {})]  # it would say the owner's time
    assert "2026-03-02" not in kg("sparql", "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }", "--audience", "public").stdout


def test_steps_known_at_a_time_come_in_the_order_held_then(kg, monkeypatch):
    """An order corrected later, and a step flagged later as one that prevents rework, were read
    as they are now: the steps of a process as known then came in the order learned since."""
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T09:00:00Z")
    kg("add-entity", "process/ship", "--name", "Ship it")
    steps = {}
    for n, name in enumerate(["build", "test", "deploy"], start=1):
        kg("add-entity", f"step/{name}", "--name", name.title())
        steps[name] = kg.json(
            "propose", "Ship it", "has_step", "--object", f"step/{name}", "--order", str(n), "-s", "ledger:a"
        )["id"]
    monkeypatch.setenv("KGRDF_NOW", "2026-02-01T09:00:00Z")
    kg("supersede", steps["build"], "--order", "4", "--reason", "built last now")
    kg("propose", "Ship it", "has_step", "--object", "step/deploy", "-s", "doc:c", "--prevents-rework")

    def listed(*when):
        return [
            (f["object"], f.get("order"), f.get("prevents_rework")) for f in kg.json("facts", "Ship it", *when)["facts"]
        ]

    then = [("step/build", 1, None), ("step/test", 2, None), ("step/deploy", 3, None)]
    assert listed("--known-at", "2026-01-15") == then
    assert listed("--known-at", "2026-01-15", "--as-of", "2026-01-10") == then
    assert listed() == [("step/deploy", 3, True), ("step/test", 2, None), ("step/build", 4, None)]
    assert listed("--known-at", "2026-02-02") == listed()


def test_rejected_and_expired_do_not_show_unless_all(kg):
    kg("add-entity", "repo/api", "--name", "api")
    fact = kg.json("propose", "repo/api", "caveat", "--value", "wrong", "--source", "pr:1")
    kg("reject", fact["id"])
    assert kg.json("facts", "repo/api")["facts"] == []
    assert [f["status"] for f in kg.json("facts", "repo/api", "--all")["facts"]] == ["rejected"]


def test_facts_text_shows_a_valid_time_of_day_and_a_date_alone_at_midnight(kg):
    kg("add-entity", "repo/api", "--name", "api")
    kg(
        "propose", "repo/api", "caveat", "--value", "down for the migration", "--source", "pr:1",
        "--valid-from", "2025-06-01T08:30:00Z", "--valid-to", "2025-06-02T04:30:00Z",
    )  # fmt: skip
    kg("propose", "repo/api", "caveat", "--value", "frozen", "--source", "pr:2", "--valid-from", "2025-07-01")
    text = kg("facts", "repo/api", "--all").stdout
    assert "down for the migration (from 2025-06-01T08:30:00Z; to 2025-06-02T04:30:00Z)" in text
    assert "frozen (from 2025-07-01)" in text
    listed = {f["value"]: f for f in kg.json("facts", "repo/api", "--all")["facts"]}
    assert listed["down for the migration"]["valid_from"] == "2025-06-01T08:30:00Z"  # as the line says
    sentences = [f["sentence"] for group in kg.json("batch")["groups"] for f in group["facts"]]
    assert any(s.endswith("(from 2025-06-01T08:30:00Z; to 2025-06-02T04:30:00Z)") for s in sentences), sentences


def test_facts_all_with_as_of_is_refused_not_claimed(kg):
    kg("add-entity", "repo/api", "--name", "api")
    kg("propose", "repo/api", "caveat", "--value", "flaky", "--source", "pr:1", "--valid-from", "2025-06-01")
    result = kg("facts", "repo/api", "--all", "--as-of", "2020-01-01", expect=2)
    assert result.stdout == ""
    line = one_line(result)
    assert "--all" in line and "does not take --as-of" in line  # and no header claims it was applied
    assert json.loads(kg("facts", "repo/api", "--all", "--as-of", "2020-01-01", "--json", expect=2).stdout)["error"]
    assert kg.json("facts", "repo/api", "--as-of", "2020-01-01")["facts"] == []  # each alone is read as asked
    assert [f["value"] for f in kg.json("facts", "repo/api", "--all")["facts"]] == ["flaky"]


def test_the_demo_runs_at_a_clock_before_its_facts_begin(tmp_path, monkeypatch):
    """The example's hotfix entry point holds from 2026-01-15 and its correction from 2026-10-20: on
    New Year's Day 2026 the demo shows the old one ending where the correction begins."""
    from tests.conftest import Kg

    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T00:00:00Z")
    shown = Kg(tmp_path / "kb")("demo", "--kb", tmp_path / "kb", kb=False).stdout
    history = shown.split("$ kg history ")[1].split("$ kg context")[0]
    assert "Hotfix process starts in #incidents (from 2026-01-15; to 2026-10-20)" in history
    assert "retime  (ends where f-" in history and "superseded by" not in history
    assert "Loaded the example organization" in shown


def test_search_finds_names_aliases_weak_aliases_and_ids(demo):
    ids = [h["id"] for h in demo.json("search", "STAGING")["results"]]
    assert ids[0] == "environment/staging"  # the exact name first
    assert "environment/staging-2" in ids and "step/deploy-staging" in ids
    weak = demo.json("search", "backend")["results"]
    assert [h["id"] for h in weak] == ["repo/api"]
    assert weak[0]["matched"] == [{"how": "weak alias", "label": "backend"}]
    assert demo.json("search", "zzzz")["results"] == []
    assert "search needs some text" in demo("search", "  ", expect=2).stderr


def test_neighbors_one_and_two_hops(demo):
    one = demo.json("neighbors", "process/release")
    assert {n["id"] for n in one["nodes"] if n["distance"] == 1} >= {
        "repo/web-app",
        "channel/deploys",
        "step/canary-checks",
    }
    two = demo.json("neighbors", "release", "--hops", "2")
    reviewers = {(e["from"], e["to"]) for e in two["edges"] if e["predicate"] == "reviews"}
    assert reviewers == {("person/sam", "repo/web-app"), ("person/priya", "repo/api")}
    assert {n["id"] for n in two["nodes"] if n["distance"] == 2} >= {"person/sam", "gate/smoke-tests"}
    assert "must be between 1 and 4" in demo("neighbors", "release", "--hops", "9", expect=2).stderr


def test_history_shows_the_superseded_fact_and_what_changed(demo):
    old = demo.json("facts", "hotfix", "--predicate", "entry_point", "--all")["facts"]
    closed = next(f for f in old if f.get("superseded_by"))
    doc = demo.json("history", closed["id"])
    actions = [e["action"] for e in doc["history"]]
    assert actions == ["recorded", "confirm", "close"]
    assert doc["history"][-1]["changes"]["valid_to"]["after"] == ["2026-10-20T00:00:00Z"]
    text = demo("history", closed["id"]).stdout
    assert "superseded by" in text and "close" in text


def test_sparql_select_ask_construct_and_file(demo, tmp_path):
    select = demo("sparql", "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s a <https://kgrdf.org/ns#Fact> } }", "--json")
    rows = json.loads(select.stdout)["results"]["bindings"]
    assert int(rows[0]["n"]["value"]) == demo.json("stats")["fact_count"]
    ask = demo.json("sparql", 'ASK { GRAPH ?g { ?s <http://www.w3.org/2004/02/skos/core#prefLabel> "#deploys" } }')
    assert ask == {"boolean": True}
    query = tmp_path / "labels.rq"
    query.write_text(
        "CONSTRUCT { ?s <http://www.w3.org/2004/02/skos/core#prefLabel> ?l } "
        "WHERE { GRAPH ?g { ?s <http://www.w3.org/2004/02/skos/core#prefLabel> ?l } }"
    )
    assert '"Release process"' in demo("sparql", str(query)).stdout
    bad = demo("sparql", "SELEKT nothing", expect=2)
    assert "does not parse" in bad.stderr


def test_sparql_reads_the_schema_as_its_default_graph_and_the_facts_as_named_graphs(demo):
    schema = demo.json("sparql", "ASK { <https://kgrdf.org/ns#Fact> a <http://www.w3.org/2002/07/owl#Class> }")
    facts = demo.json("sparql", "ASK { ?s <https://kgrdf.org/ns#entryPoint> ?o }")
    named = demo.json("sparql", "ASK { GRAPH ?f { ?s <https://kgrdf.org/ns#entryPoint> ?o } }")
    assert (schema, facts, named) == ({"boolean": True}, {"boolean": False}, {"boolean": True})


def test_sparql_never_sees_the_index_bookkeeping(demo):
    for query in ("ASK { <urn:kgrdf:index> ?p ?o }", "ASK { GRAPH ?g { <urn:kgrdf:index> ?p ?o } }"):
        assert demo.json("sparql", query) == {"boolean": False}


def test_stats_counts_entities_and_facts(demo):
    doc = demo.json("stats")
    assert doc["entities"]["person"] == 3 and doc["entity_count"] == 23
    assert doc["facts"] == {"confirmed": 33, "proposed": 2}  # 32 confirmed records and a supersede
    assert doc["journal"]["transactions"] == 3  # the import, the review of the example, the supersede


@pytest.mark.parametrize(
    "command",
    [
        ["lookup", "hotfix"],
        ["facts", "hotfix"],
        ["search", "deploy"],
        ["neighbors", "hotfix"],
        ["stats"],
        ["identify", "hotfix"],
        ["export", "--format", "nquads"],
    ],
)
def test_every_read_prints_one_json_document(demo, command):
    json.loads(demo(*command, "--json").stdout)


def test_a_fact_heard_in_many_messages_lists_its_first_sources_and_how_many_more(kg):
    kg("add-entity", "repo/api", "--name", "Api")
    for n in range(14):
        kg("propose", "repo/api", "caveat", "--value", "flaky tests", "--source", f"slack:msg-{n:02d}")
    line = next(x for x in kg("lookup", "repo/api").stdout.splitlines() if "slack:" in x)
    assert line.count("slack:") == 10 and line.rstrip().endswith("and 4 more (--json lists them)")
    assert len(kg.json("lookup", "repo/api")["facts"][0]["sources"]) == 14


def test_neighbors_asks_one_query_a_hop_however_many_entities_it_reached(kg, monkeypatch):
    """A query for each entity of the frontier made a hub of 2,000 links take 3 s at two hops: the
    frontier is asked at once (500 entities a query), and the answer is the same."""
    from kgrdf.session.reading import Reading

    kg("add-entity", "repo/hub", "--name", "hub")
    for i in range(30):
        kg("add-entity", f"repo/s{i}", "--name", f"s{i}")
    for i in range(30):
        kg("propose", f"repo/s{i}", "depends_on", "--object", "repo/hub", "-s", "ledger:a")
        if i % 3 == 0:
            kg("propose", f"repo/s{i}", "depends_on", "--object", f"repo/s{(i + 1) % 30}", "-s", "ledger:a")
    asked = []
    rows = Reading.rows

    def counted(self, name, **bindings):
        if name == "neighbors":
            asked.append(bindings["entity"])
        return rows(self, name, **bindings)

    monkeypatch.setattr(Reading, "rows", counted)
    doc = kg.json("neighbors", "repo/hub", "--hops", "2")
    assert len(asked) == 2  # one a hop
    assert len(doc["nodes"]) == 31 and len(doc["edges"]) == 40
    assert [n["distance"] for n in doc["nodes"]] == [0] + [1] * 30
