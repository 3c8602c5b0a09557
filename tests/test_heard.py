"""What an audience may read through /sparql, kept by kg serve between requests and brought up to
date with each write: after every kind of write, through either door, a token's /sparql sees exactly
the dataset `kg sparql --audience` builds afresh."""

import json
import shutil
import urllib.parse
from pathlib import Path

import pytest

from .conftest import Kg, at_a_terminal
from .serving import Server

EVERYTHING = "SELECT ?g ?s ?p ?o WHERE { { GRAPH ?g { ?s ?p ?o } } UNION { ?s ?p ?o } }"


def _rows(document: str) -> list[tuple]:
    bindings = json.loads(document)["results"]["bindings"]
    return sorted(tuple(row.get(name, {}).get("value", "") for name in ("g", "s", "p", "o")) for row in bindings)


def _heard_in_sales(kg) -> None:
    kg("add-entity", "repo/api", "--name", "Api")
    kg(
        "propose",
        "repo/api",
        "caveat",
        "--value",
        "heard in sales",
        "--source",
        "slack:a",
        "--audience",
        "channel:sales",
    )


@pytest.fixture
def served(tmp_path):
    kg = Kg(tmp_path / "kb")
    kg("init")
    _heard_in_sales(kg)
    kg("add-entity", "repo/web", "--name", "Web")
    kg("propose", "repo/api", "caveat", "--value", "heard in eng", "--source", "slack:b", "--audience", "channel:eng")
    secret = kg.json("tokens", "add", "sales", "--perspective", "main", "--audience", "channel:sales", "--write")
    server = Server(kg.path)
    yield kg, server, secret["secret"]
    server.stop()


def test_a_tokens_sparql_sees_what_a_fresh_read_for_its_audience_sees_after_every_kind_of_write(served):
    kg, server, secret = served

    def same() -> list[tuple]:
        status, body = server.request("/sparql?" + urllib.parse.urlencode({"query": EVERYTHING}), secret)
        assert status == 200, body
        fresh = kg("sparql", EVERYTHING, "--audience", "channel:sales", "--json").stdout
        assert _rows(body) == _rows(fresh)
        return _rows(body)

    def fact(value: str) -> str:
        return next(f["id"] for f in kg.json("facts", "repo/api")["facts"] if f.get("value") == value)

    before = same()  # the set is made whole here, and followed from now on
    status, _ = server.post(
        "propose",
        secret,
        {"subject": "repo/api", "predicate": "caveat", "value": "said by token", "sources": ["slack:c"]},
    )
    assert status == 200
    assert len(same()) > len(before)  # the write is seen, not only equal
    kg(
        "propose",
        "repo/web",
        "depends_on",
        "--object",
        "repo/api",
        "--source",
        "slack:d",
        "--audience",
        "channel:sales",
    )
    same()  # a fact naming an entity not named before: its description comes in
    kg("propose", "repo/api", "caveat", "--value", "heard in a dm", "--source", "slack:e", "--audience", "dm:ana,bo")
    assert not any("heard in a dm" in row[3] for row in same())
    kg("supersede", fact("heard in sales"), "--value", "corrected in sales", "--source", "slack:f")
    same()  # the old fact closed, the new one heard
    kg("reject", fact("said by token"), "--reason", "not so")
    same()
    kg("propose", "repo/api", "caveat", "--value", "heard in eng", "--source", "slack:g", "--audience", "channel:sales")
    same()  # a fact heard elsewhere is heard here now: made whole again
    kg("add-entity", "repo/db", "--name", "Db")
    kg("propose", "repo/db", "caveat", "--value", "db in eng", "--source", "slack:h", "--audience", "channel:eng")
    same()  # an entity no heard fact names stays out


def test_a_commands_kept_set_follows_the_writes_as_a_set_made_afresh_does(kg):
    """kg sparql --audience keeps the set in cache/heard/ and follows later writes into it; its
    answer after each write equals the answer of a set made afresh (cache/ deleted first)."""
    import shutil

    kg("add-entity", "repo/api", "--name", "Api")
    kg("add-entity", "repo/web", "--name", "Web")

    def same() -> list[tuple]:
        kept = _rows(kg("sparql", EVERYTHING, "--audience", "public", "--json").stdout)
        shutil.rmtree(kg.path / "cache" / "heard")
        assert kept == _rows(kg("sparql", EVERYTHING, "--audience", "public", "--json").stdout)
        return kept

    first = same()
    assert (kg.path / "cache" / "heard").is_dir()  # kept for the next read
    kg("propose", "repo/api", "caveat", "--value", "public one", "--source", "slack:a", "--audience", "public")
    kg("propose", "repo/api", "caveat", "--value", "sales one", "--source", "slack:b", "--audience", "channel:sales")
    assert len(same()) > len(first)
    kg("propose", "repo/web", "depends_on", "--object", "repo/api", "--source", "slack:c", "--audience", "public")
    same()
    public = next(f["id"] for f in kg.json("facts", "repo/api")["facts"] if f.get("value") == "public one")
    kg("supersede", public, "--value", "public two", "--source", "slack:d")
    sales = next(f["id"] for f in kg.json("facts", "repo/api")["facts"] if f.get("value") == "sales one")
    kg("reject", sales, "--reason", "wrong")
    shown = same()
    assert any("public two" in row[3] for row in shown) and not any("sales one" in row[3] for row in shown)


def test_a_kept_set_follows_an_import_small_beside_it_rather_than_being_made_whole_again(kg, tmp_path):
    """A change small beside the set it follows is followed fact by fact, whatever its rows: an
    import of 150 facts (3,000 rows) onto a set of 450 made it whole again, which at 100k facts is
    25 s for the next query of each audience. The set is the same store after (its folder was not
    made again: a file left in it stays), and answers as a set made afresh does."""
    import shutil

    def imported(name: str, records: list[dict]) -> None:
        seed = tmp_path / f"{name}.jsonl"
        seed.write_text("".join(json.dumps(record) + "\n" for record in records))
        kg("import", str(seed), "--apply")

    def fact(n: int, audience: str, **what) -> dict:
        what = what or {"predicate": "caveat", "value": f"imported {n}"}
        return {"type": "fact", "subject": "repo/api", "sources": [f"slack:i{n}"], "audience": audience, **what}

    imported("first", [{"type": "entity", "id": "repo/api", "name": "Api"}] + [fact(n, "public") for n in range(450)])
    kept_before = _rows(kg("sparql", EVERYTHING, "--audience", "public", "--json").stdout)
    (folder,) = [path for path in (kg.path / "cache" / "heard").iterdir() if path.is_dir()]
    (folder / "marker").write_text("a set made whole again is a new folder, without this file")
    records = [{"type": "entity", "id": "repo/web", "name": "Web"}]
    for n in range(1000, 1150):
        audience = ["public", "channel:sales", "dm:ann,bob"][n % 3]
        records.append(
            fact(n, audience, predicate="depends_on", object="repo/web") if n % 50 == 1 else fact(n, audience)
        )
    imported("second", records)
    followed = _rows(kg("sparql", EVERYTHING, "--audience", "public", "--json").stdout)
    assert (folder / "marker").exists()  # followed, not made whole again
    values = {row[3] for row in followed}
    assert "imported 1002" in values and not {"imported 1000", "imported 1001"} & values  # sales', a DM's: out
    assert any(row[3].endswith("repo/web") for row in followed)  # the entity a public fact names came in
    assert len(followed) > len(kept_before)
    shutil.rmtree(kg.path / "cache" / "heard")
    assert followed == _rows(kg("sparql", EVERYTHING, "--audience", "public", "--json").stdout)


def test_a_tokens_sparql_answers_after_kg_forget_deletes_the_set_kg_serve_kept(served):
    """kg forget deletes cache/ whole, with the set a running kg serve keeps for a token's audience:
    the next /sparql for that audience answered 503 "damaged" (its hint said to remove index/), every
    time, until another audience's query made cache/heard/ again. It is made again, and answers as a
    fresh read does."""
    kg, server, secret = served
    query = "/sparql?" + urllib.parse.urlencode({"query": EVERYTHING})
    status, body = server.request(query, secret)
    assert status == 200, body
    kg("add-entity", "person/zelda", "--name", "Zelda")
    kg("propose", "person/zelda", "reviews", "-o", "repo/web", "--source", "slack:z", "--audience", "channel:sales")
    kg("forget", "person/zelda")
    for _ in range(2):  # made again once, then kept
        status, body = server.request(query, secret)
        assert status == 200, body
        assert _rows(body) == _rows(kg("sparql", EVERYTHING, "--audience", "channel:sales", "--json").stdout)
    assert not any("zelda" in " ".join(row).lower() for row in _rows(body))
    assert (kg.path / "cache" / "heard").is_dir()  # kept again, for the next query


def test_gathering_what_an_audience_may_read_is_told_at_a_terminal_once(kg):
    """The first query of an audience gathers its dataset (24 s at 100k facts) and keeps it: a person
    at a terminal is told it is under way; the next query, which reads the kept one, tells nothing."""
    _heard_in_sales(kg)
    query = "SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    for told_first in (["kg: gathering what the audience channel:sales may read ..."], []):
        done, told = at_a_terminal("sparql", query, "--audience", "channel:sales", "--kb", kg.path)
        assert (done.returncode, told) == (0, told_first)
        assert "heard in sales" in done.stdout.decode()


def test_a_kept_set_takes_the_schema_put_in_place_since_though_the_journal_did_not_move(kg):
    """A site's schema.json put in place changes the schema every read takes, and not the journal:
    an audience's kept set is made again with it, as the owner's reads take it."""
    from kgrdf.schema import SCHEMA_GRAPH

    kg("add-entity", "repo/api", "--name", "Api")
    kg("propose", "repo/api", "caveat", "--value", "heard in public", "--source", "slack:a", "--audience", "public")
    query = f"SELECT ?s ?p ?o WHERE {{ GRAPH <{SCHEMA_GRAPH}> {{ ?s ?p ?o }} }}"

    def schema(*audience) -> set:
        rows = kg.json("sparql", query, *audience)["results"]["bindings"]
        return {tuple(row[name]["value"] for name in ("s", "p", "o")) for row in rows}

    core = schema("--audience", "public")
    assert core == schema()
    shutil.copy(Path(__file__).resolve().parent.parent / "examples" / "site-schema.json", kg.path / "schema.json")
    extended = schema()
    assert len(extended) > len(core)
    assert schema("--audience", "public") == extended
