"""Replicas that share through a hub: kg remote, kg sync, against a real Oxigraph server (and
Virtuoso), and what never reaches the hub."""

import json
import re
import urllib.parse
import urllib.request

import pytest

from .conftest import Kg, one_line

CURRENT = (
    "PREFIX kg: <https://kgrdf.org/ns#> SELECT ?s ?p ?o ?status ?retired WHERE { GRAPH ?f { ?s ?p ?o } "
    "GRAPH ?m { ?f a kg:Fact ; kg:factStatus ?status } OPTIONAL { GRAPH ?m { ?f kg:retiredAt ?retired } } }"
)


def hub_dump(url: str) -> str:
    """Every quad the hub holds, as N-Quads text (the SPARQL 1.1 Query protocol, a CONSTRUCT per graph)."""
    query = "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    endpoint = url if url.endswith("/sparql") else url + "/query"
    request = urllib.request.Request(
        endpoint,
        data=urllib.parse.urlencode({"query": query}).encode(),
        headers={"Accept": "application/sparql-results+json"},
    )
    rows = json.loads(urllib.request.urlopen(request, timeout=30).read())["results"]["bindings"]
    return "\n".join(" ".join(row[k]["value"] for k in ("g", "s", "p", "o")) for row in rows)


def empty(url: str) -> None:
    """Take out of a server every graph kgrdf writes (Virtuoso keeps its own graphs beside them)."""
    from kgrdf.store.sparql import SparqlBackend

    server = SparqlBackend(url)
    try:
        server.update(
            "DELETE { GRAPH ?g { ?s ?p ?o } } WHERE { GRAPH ?g { ?s ?p ?o } "
            'FILTER (STRSTARTS(STR(?g), "https://kgrdf.org/") || STRSTARTS(STR(?g), "urn:kgrdf:")) }'
        )
    finally:
        server.close()


def facts_of(kb: Kg) -> set[tuple]:
    """Every fact a knowledge base holds by what it says, with its status and whether it is retired."""
    rows = kb.json("sparql", CURRENT)["results"]["bindings"]
    return {
        (r["s"]["value"], r["p"]["value"], r["o"]["value"], r["status"]["value"].rsplit("/", 1)[-1], "retired" in r)
        for r in rows
    }


def journal_files(kb: Kg) -> list[str]:
    return sorted(str(p.relative_to(kb.path)) for p in (kb.path / "journal").rglob("*.rdfp"))


def replica(tmp_path, name: str, hub_url: str) -> Kg:
    kb = Kg(tmp_path / name)
    kb("init")
    for args in (
        ("repo/web-app", "--name", "web-app", "--alias", "webapp"),
        ("process/release", "--name", "Release process", "--alias", "release"),
        ("channel/deploys", "--name", "#deploys"),
        ("channel/releases", "--name", "#releases"),
    ):
        kb("add-entity", *args)
    kb("remote", "add", "team", hub_url)
    return kb


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setenv("KGRDF_NOW", "2026-03-02T09:00:00Z")


# --- kg remote ------------------------------------------------------------------------------------


def test_remotes_are_added_listed_and_removed_and_bad_ones_are_refused_writing_nothing(kg):
    before = (kg.path / "format.json").read_text()
    refused = kg("remote", "add", "team", "http://ann:secret@hub.example:7878", expect=2)
    assert "must not carry a user or password" in one_line(refused)
    assert "must be an http" in one_line(kg("remote", "add", "team", "ftp://hub.example", expect=2))
    assert "remote name" in one_line(kg("remote", "add", "Team!", "http://hub.example:7878", expect=2))
    assert (kg.path / "format.json").read_text() == before
    kg("remote", "add", "team", "http://hub.example:7878")
    assert "there already" in one_line(kg("remote", "add", "team", "http://other.example:7878", expect=1))
    listed = kg.json("remote", "list")
    assert listed["remotes"] == [{"name": "team", "url": "http://hub.example:7878", "synced_at": None}]
    assert "team  http://hub.example:7878  never synced" in kg("remote", "list").stdout
    assert "no remote is called 'other'" in one_line(kg("remote", "remove", "other", expect=1))
    assert "no remote is called 'other'" in one_line(kg("sync", "other", expect=1))
    kg("remote", "remove", "team")
    assert kg.json("remote", "list")["remotes"] == []
    assert "no remote to sync with" in one_line(kg("sync", expect=1))


def test_a_hub_that_does_not_answer_is_one_line_and_nothing_is_written(kg):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kg("add-entity", "repo/api", "--name", "api")
    kg("remote", "add", "team", f"http://127.0.0.1:{port}")
    before = kg.snapshot()
    line = one_line(kg("sync", expect=3))
    assert "the hub server at" in line and "does not answer" in line
    assert kg.snapshot() == before
    assert kg.json("remote", "list")["remotes"][0]["synced_at"] is None


# --- two replicas ---------------------------------------------------------------------------------


def test_two_replicas_share_one_fact_observed_twice_and_a_rejection_holds_on_both(tmp_path, server, clock):
    ana, ben = replica(tmp_path, "ana", server.url), replica(tmp_path, "ben", server.url)
    # What names a person, and what was heard in a DM, stays on its machine.
    ana("add-entity", "person/sam", "--name", "Sam Reyes", "--alias", "Sammy")
    ana("propose", "Sammy", "reviews", "--object", "webapp", "-s", "slack:p1")
    ana(
        "propose",
        "release",
        "purpose",
        "--value",
        "ship the quarterly numbers",
        "-s",
        "doc:q",
        "--audience",
        "dm:jo,dana",
    )
    ana("propose", "release", "uses", "--object", "webapp", "-s", "ledger:services")
    ben("propose", "release", "uses", "--object", "webapp", "-s", "report:architecture")
    staging = ana.json("propose", "release", "posts_to", "--object", "#releases", "-s", "doc:handbook")["id"]

    first = ana.json("sync")
    assert first["remotes"][0]["pushed"] >= 5 and first["remotes"][0]["pulled"] == 0
    shown = ben("sync").stdout
    assert "folded in:" in shown and "1 created, 1 observed" in shown
    uses = ben.json("facts", "release", "--predicate", "uses")["facts"]
    assert len(uses) == 1  # one fact, observed on both replicas, with both sources
    assert {(s["kind"], s["ref"]) for s in uses[0]["sources"]} == {("ledger", "services"), ("report", "architecture")}
    posts = ben.json("facts", "release", "--predicate", "posts_to")["facts"]
    ben("reject", posts[0]["id"])
    ben("sync")
    ana("sync")
    assert ana.json("history", staging)["fact"]["status"] == "rejected"  # a rejection on one replica holds on all
    ana_uses = ana.json("facts", "release", "--predicate", "uses")["facts"]
    assert {(s["kind"], s["ref"]) for s in ana_uses[0]["sources"]} == {
        ("ledger", "services"),
        ("report", "architecture"),
    }
    ben("sync")
    assert facts_of(ana) - {f for f in facts_of(ana) if "person/sam" in f[0] or "purpose" in f[1]} == facts_of(ben)

    # Syncing again changes nothing: no transaction, no journal file.
    for kb in (ana, ben):
        before = journal_files(kb)
        again = kb.json("sync")
        assert again["transaction"] is None and again["remotes"][0]["pulled"] in (0, 1)
        assert kb.json("sync")["remotes"][0] == {"name": "team", "url": server.url, "pushed": 0, "pulled": 0}
        assert journal_files(kb) == before
        assert kb("validate").exit_code == 0
    status = ana.json("status")
    assert status["sync"]["remotes"][0]["synced_at"] == "2026-03-02T09:00:00Z"
    assert f"remote team: {server.url}: last synced 2026-03-02T09:00:00Z" in ana("status").stdout

    dump = hub_dump(server.url)
    assert "web-app" in dump and "architecture" in dump  # the team's shared facts, queryable on the hub
    for private in ("person/sam", "Sam Reyes", "Sammy", "quarterly", "dm:"):
        assert private.casefold() not in dump.casefold()
    assert not re.search(r"\bsam\b", dump, re.IGNORECASE)


def test_two_confirmed_values_from_two_replicas_both_stay_and_lint_reports_them(tmp_path, server, clock):
    ana, ben = replica(tmp_path, "ana", server.url), replica(tmp_path, "ben", server.url)
    ana("confirm", ana.json("propose", "release", "entry_point", "--object", "#deploys", "-s", "doc:a")["id"])
    ben("confirm", ben.json("propose", "release", "entry_point", "--object", "#releases", "-s", "doc:b")["id"])
    for kb in (ana, ben, ana):
        kb("sync")
    for kb in (ana, ben):
        values = kb.json("facts", "release", "--predicate", "entry_point")["facts"]
        assert sorted((f["object"], f["status"]) for f in values) == [
            ("channel/deploys", "confirmed"),
            ("channel/releases", "confirmed"),
        ]
        lint = kb("lint", expect=1).stdout
        assert "#deploys" in lint and "#releases" in lint
        assert kb.json("lint", expect=1)["counts"]["contradiction"] == 1


def test_what_another_perspective_holds_is_set_aside_and_reported_never_dropped(tmp_path, server, clock):
    ana = replica(tmp_path, "ana", server.url)
    ana("propose", "release", "uses", "--object", "webapp", "-s", "doc:a")
    ana("sync")
    ops = Kg(tmp_path / "ops")
    ops("init", "--perspective", "ops")
    ops("remote", "add", "team", server.url)
    before = journal_files(ops)
    result = ops.json("sync")
    assert result["transaction"] is None and result["remotes"][0]["pulled"] >= 5
    reasons = {item["reason"] for item in result["set_aside"]}
    assert reasons == {"an entity of another perspective than ops", "a fact of another perspective than ops"}
    assert journal_files(ops) == before
    kept = list((ops.path / "replicas").rglob("*.rdfp"))
    assert len(kept) == result["remotes"][0]["pulled"]  # the pulled patches are kept whole
    assert f"set aside by kg sync: {len(result['set_aside'])}" in ops("status").stdout
    assert "a fact of another perspective than ops" in ops("remote", "list").stdout


def test_a_sync_through_virtuoso(tmp_path, virtuoso_server, clock):
    empty(virtuoso_server.url)  # the session's Virtuoso serves other tests as an index
    ana, ben = replica(tmp_path, "ana", virtuoso_server.url), replica(tmp_path, "ben", virtuoso_server.url)
    ana("add-entity", "person/sam", "--name", "Sam Reyes")
    ana("propose", "Sam Reyes", "reviews", "--object", "webapp", "-s", "slack:p1")
    ana("propose", "release", "uses", "--object", "webapp", "-s", 'ledger:"quoted" é')
    ana("sync")
    ben("sync")
    uses = ben.json("facts", "release", "--predicate", "uses")["facts"]
    assert [(s["kind"], s["ref"]) for s in uses[0]["sources"]] == [("ledger", '"quoted" é')]
    assert not re.search(r"\bsam\b", hub_dump(virtuoso_server.url), re.IGNORECASE)
    assert ben.json("sync")["transaction"] is None
