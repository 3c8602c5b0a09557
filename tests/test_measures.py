"""The Briefing's cache of each fact (kgrdf.measures): kept by every write from a knowledge base's
first on, it holds exactly what one made from the index holds, and a cache left behind by a write
that did not keep it is made again rather than read."""

import json
import sqlite3

from kgrdf import measures
from kgrdf.cli import app
from kgrdf.kb import KnowledgeBase
from tests.conftest import runner


def _kept(path) -> tuple[str, list[tuple]]:
    """The position the cache file records, and its rows, each fact's then each hearing's, read as
    they are (never made again)."""
    db = sqlite3.connect(measures.cache_path(path))
    try:
        at = dict(db.execute("SELECT name, value FROM meta"))["at"]
        facts = db.execute("SELECT * FROM facts ORDER BY fact").fetchall()
        return at, facts + db.execute("SELECT * FROM heard ORDER BY fact, hearing").fetchall()
    finally:
        db.close()


def _made(path) -> list[tuple]:
    """The rows of a cache made from the index now (briefing-facts.rq)."""
    measures.drop(path)
    kb = KnowledgeBase.open(path)
    with kb.reading() as session:
        measures.of(session).close()
    return _kept(path)[1]


def test_the_cache_kept_by_writes_holds_what_the_index_holds(demo):
    """The example was written from an empty knowledge base: its cache was kept by each write."""
    fact = demo.json("propose", "repo/api", "caveat", "--value", "mscaveat: cold starts", "-s", "slack:m1")["id"]
    demo("confirm", fact)
    old = demo.json("propose", "team/web", "owns", "--object", "repo/api", "-s", "slack:m2")["id"]
    demo("confirm", old)
    demo("supersede", old, "--object", "repo/web-app", "--reason", "moved")
    rejected = demo.json("propose", "repo/web-app", "caveat", "--value", "mscaveat: wrong", "-s", "slack:m3")["id"]
    demo("reject", rejected)
    sales = ("propose", "repo/api", "caveat", "--value", "mscaveat: priced per seat", "--audience", "channel:sales")
    heard = demo.json(*sales, "-s", "slack:m5")["id"]
    assert demo.json(*sales[:-2], "--audience", "dm:ana,bo", "-s", "slack:m6")["id"] == heard  # heard again
    demo("disclose", "--message", "slack:m7", "--audience", "channel:sales", heard)  # who was told, not who heard
    at, kept = _kept(demo.path)
    view = KnowledgeBase.open(demo.path).view()
    assert at == f"{view.seq}:{view.digest}"  # kept, not made again
    facts = demo.json("stats")["fact_count"]
    hearings = kept[facts:]
    assert sorted(row[2] for row in hearings if row[0].endswith(heard)) == ["channel:sales", "dm:ana,bo"]
    assert {row[0] for row in hearings} == {row[0] for row in kept[:facts]}  # each fact heard somewhere
    assert kept == _made(demo.path)


def test_a_cache_made_for_another_position_is_made_again(demo):
    demo("stats")
    measures.drop(demo.path)
    kb = KnowledgeBase.open(demo.path)
    with kb.reading() as session:
        measures.of(session).close()  # made at the current position
    before = kb.view()
    db = sqlite3.connect(measures.cache_path(demo.path))
    db.execute("UPDATE meta SET value = 'elsewhere' WHERE name = 'at'")
    db.commit()
    db.close()
    demo("propose", "repo/api", "caveat", "--value", "mscaveat: not kept", "-s", "slack:m4")  # leaves it behind
    assert _kept(demo.path)[0] == "elsewhere"
    with kb.reading() as session:
        held = measures.of(session)
        try:
            assert len(held.rows()) == demo.json("stats")["fact_count"]  # the new proposal counted
        finally:
            held.close()
    at, kept = _kept(demo.path)
    assert at != "elsewhere" and at != f"{before.seq}:{before.digest}"
    assert kept == _made(demo.path)


def _owns(path, known_at: str) -> set[str]:
    """What team/web owns in the Constellation read at ``known_at``."""
    from kgrdf import briefing, clock

    with KnowledgeBase.open(path).reading() as session:
        drawn = briefing.constellation(session, briefing.MAX_STARS, known_at=clock.parse_time(known_at))
    return {e["to"] for e in drawn["edges"] if e["from"] == "team/web" and e["predicate"] == "owns"}


def test_the_constellation_known_at_a_date_shows_what_the_knowledge_base_held_then(demo, monkeypatch):
    monkeypatch.setenv("KGRDF_NOW", "2027-01-10T09:00:00Z")
    demo("add-entity", "repo/mobile", "--name", "Mobile app")
    old = demo.json("propose", "team/web", "owns", "--object", "repo/api", "-s", "slack:k1")["id"]
    demo("confirm", old)
    monkeypatch.setenv("KGRDF_NOW", "2027-03-01T09:00:00Z")  # closed on March 1st, as of February 1st
    demo("supersede", old, "--object", "repo/mobile", "--valid-from", "2027-02-01", "--reason", "moved")
    monkeypatch.delenv("KGRDF_NOW")

    def told(known_at: str) -> set[str]:
        facts = demo.json("facts", "team/web", "--known-at", known_at)["facts"]
        return {f["object"] for f in facts if f["predicate"] == "owns"}

    # In February the knowledge base held the api as owned, and no end to it: kg facts says so too.
    assert "repo/api" in _owns(demo.path, "2027-02-15") == told("2027-02-15")
    assert "repo/mobile" not in _owns(demo.path, "2027-02-15")
    assert "repo/api" not in _owns(demo.path, "2027-03-02") == told("2027-03-02")
    assert "repo/mobile" in _owns(demo.path, "2027-03-02")


def test_the_constellation_at_a_time_links_what_kg_facts_lists_then_after_valid_times_are_corrected(kg, monkeypatch):
    """A link whose start or end was corrected after the known-at time is read as held then, as kg
    facts reads it: whatever dates it holds now, at every pair of times."""

    def at(day: str) -> None:
        monkeypatch.setenv("KGRDF_NOW", f"2026-{day}T09:00:00Z")

    def link(target: str, valid_from: str) -> str:
        fact = kg.json("propose", "web", "depends_on", "--object", target, "--valid-from", valid_from, "-s", "ledger:a")
        kg("confirm", fact["id"])
        return fact["id"]

    at("03-02")
    for name in ("web", "api", "db", "cache"):
        kg("add-entity", f"repo/{name}", "--name", name)
    later = link("api", "2026-02-01")
    ended = link("db", "2026-02-01")
    earlier = link("cache", "2026-03-01")
    at("03-08")
    kg("supersede", later, "--valid-from", "2026-02-20")  # its start corrected later
    at("03-12")
    kg("supersede", ended, "--valid-to", "2026-03-10")  # closed, then its end corrected earlier
    at("03-16")
    kg("supersede", ended, "--valid-to", "2026-02-25")
    at("03-20")
    kg("supersede", earlier, "--valid-from", "2026-02-05")  # its start corrected earlier
    monkeypatch.delenv("KGRDF_NOW")

    def drawn(known_at: str, as_of: str) -> set[str]:
        from kgrdf import briefing, clock

        with KnowledgeBase.open(kg.path).reading() as session:
            shown = briefing.constellation(
                session, briefing.MAX_STARS, valid_at=clock.parse_time(as_of), known_at=clock.parse_time(known_at)
            )
        return {e["to"] for e in shown["edges"] if e["from"] == "repo/web"}

    def listed(known_at: str, as_of: str) -> set[str]:
        facts = kg.json("facts", "web", "--known-at", known_at, "--as-of", as_of)["facts"]
        return {f["object"] for f in facts if f["predicate"] == "depends_on"}

    seen = set()
    for known_at in ("2026-03-05", "2026-03-10", "2026-03-14", "2026-03-18", "2026-03-25"):
        for as_of in ("2026-02-03", "2026-02-10", "2026-02-22", "2026-02-27", "2026-03-04", "2026-03-12"):
            told = listed(known_at, as_of)
            assert drawn(known_at, as_of) == told, (known_at, as_of)
            seen.add(frozenset(told))
    assert len(seen) >= 5  # (the times asked read the links in many ways)


def test_the_constellation_at_a_time_links_what_kg_facts_lists_then_after_reviews_and_expiries(kg, monkeypatch):
    """A link proposed, expired and proposed again was drawn at a known-at time between, where kg
    facts lists nothing: a fact whose status was revised after the known-at time is read as held
    then too, as one rejected after it, or confirmed after it, is."""

    def at(day: str) -> None:
        monkeypatch.setenv("KGRDF_NOW", f"2026-{day}T09:00:00Z")

    at("01-05")
    for name in ("web", "api", "db", "cache"):
        kg("add-entity", f"repo/{name}", "--name", name)
    kg("propose", "web", "depends_on", "--object", "api", "-s", "slack:https://c/1")
    rejected = kg.json("propose", "web", "depends_on", "--object", "db", "-s", "slack:https://c/2")["id"]
    confirmed = kg.json("propose", "web", "depends_on", "--object", "cache", "-s", "slack:https://c/3")["id"]
    at("01-20")
    kg("confirm", confirmed)
    at("03-01")
    kg("expire")  # the links to api and db, never reviewed
    at("03-10")
    kg("propose", "web", "depends_on", "--object", "api", "-s", "slack:https://c/4")  # heard again: revived
    at("03-20")
    kg("reject", rejected)
    monkeypatch.delenv("KGRDF_NOW")

    def drawn(known_at: str) -> set[str]:
        from kgrdf import briefing, clock

        with KnowledgeBase.open(kg.path).reading() as session:
            shown = briefing.constellation(session, briefing.MAX_STARS, known_at=clock.parse_time(known_at))
        return {e["to"] for e in shown["edges"] if e["from"] == "repo/web"}

    def listed(known_at: str) -> set[str]:
        facts = kg.json("facts", "web", "--known-at", known_at)["facts"]
        return {f["object"] for f in facts if f["predicate"] == "depends_on"}

    told = {known_at: listed(known_at) for known_at in ("2026-01-10", "2026-03-05", "2026-03-15", "2026-03-25")}
    assert told == {
        "2026-01-10": {"repo/api", "repo/db", "repo/cache"},
        "2026-03-05": {"repo/cache"},  # the others expired then
        "2026-03-15": {"repo/api", "repo/cache"},
        "2026-03-25": {"repo/api", "repo/cache"},
    }
    assert {known_at: drawn(known_at) for known_at in told} == told


def _briefed(path) -> dict:
    """The Briefing's contradictions, and the facts the measures find past retention, read now."""
    from datetime import timedelta

    from kgrdf import briefing, clock, settings

    with KnowledgeBase.open(path).reading() as session:
        shown = briefing.briefing(session)["contradictions"]
        held = measures.of(session)
        try:
            days = settings.get("KGRDF_RETENTION_DAYS")
            past = held.past_retention(clock.now() - timedelta(days=days))
        finally:
            held.close()
    return {"count": shown["count"], "facts": [f["facts"] for f in shown["findings"]], "past": past}


def _linted(kb_path, kind: str) -> list[list[str]]:
    """The facts of each of kg lint's findings of ``kind``."""
    result = runner.invoke(app, ["lint", "--json", "--kb", str(kb_path)])
    assert result.exit_code in (0, 1), result.stderr  # 1: there are findings
    return [f["facts"] for f in json.loads(result.stdout)["findings"] if f["kind"] == kind]


def test_the_briefing_leaves_out_facts_past_retention_from_contradictions_as_kg_lint_does(kg, monkeypatch):
    """The measures keep each fact's sensitivity and last observation, so the Briefing finds what is
    past retention as kg lint does, after each write that moves it."""

    monkeypatch.setenv("KGRDF_NOW", "2025-01-01T09:00:00Z")
    kg("add-entity", "person/dana", "--name", "Dana Okafor")
    zones = []
    for zone, source in (("Europe/Lisbon", "profile:dir/a"), ("Europe/Paris", "profile:dir/b")):
        fact = kg.json("propose", "person/dana", "timezone", "--value", zone, "-s", source)  # read from a profile
        assert fact["status"] == "confirmed"
        zones.append(fact["id"])
        monkeypatch.setenv("KGRDF_NOW", "2025-01-02T09:00:00Z")
    newest_first = list(reversed(zones))
    assert _briefed(kg.path) | {"past": []} == {"count": 1, "facts": [newest_first], "past": []}
    assert _linted(kg.path, "contradiction") == [newest_first]

    monkeypatch.setenv("KGRDF_NOW", "2026-01-03T09:00:00Z")  # 366 days on: both past retention
    seen = _briefed(kg.path)
    assert seen["count"] == 0 and _linted(kg.path, "contradiction") == []
    assert [_id(f) for f in seen["past"]] == sorted(zones) == sorted(f[0] for f in _linted(kg.path, "retention"))

    kg("propose", "person/dana", "timezone", "--value", "Europe/Lisbon", "-s", "profile:dir/e")  # observed again
    seen = _briefed(kg.path)
    assert seen["count"] == 0 and [_id(f) for f in seen["past"]] == [zones[1]] == [
        f[0] for f in _linted(kg.path, "retention")
    ]
    kg("propose", "person/dana", "timezone", "--value", "Europe/Paris", "-s", "profile:dir/f")
    assert _briefed(kg.path) == {"count": 1, "facts": [newest_first], "past": []}
    assert _linted(kg.path, "contradiction") == [newest_first] and _linted(kg.path, "retention") == []
    assert _kept(kg.path)[1] == _made(kg.path)

    monkeypatch.setenv("KGRDF_NOW", "2027-01-05T09:00:00Z")
    kg("expire")  # past retention again: deleted
    assert _briefed(kg.path) == {"count": 0, "facts": [], "past": []}
    assert _linted(kg.path, "contradiction") == [] and _linted(kg.path, "retention") == []
    assert _kept(kg.path)[1] == _made(kg.path)


def test_a_confirmation_renews_a_fact_for_the_briefings_contradictions_as_it_does_for_kg_lint(kg, monkeypatch):
    """A person fact confirmed again within retention, though last observed before it, is not past
    retention (lint-retention.rq), so kg lint lists its contradiction. The measures kept the last
    observation alone, and the Briefing left the fact out as past retention, and the contradiction
    with it."""

    monkeypatch.setenv("KGRDF_NOW", "2025-01-01T09:00:00Z")
    kg("add-entity", "person/dana", "--name", "Dana Okafor")
    lisbon = kg.json("propose", "person/dana", "timezone", "--value", "Europe/Lisbon", "-s", "profile:dir/a")["id"]
    monkeypatch.setenv("KGRDF_NOW", "2026-01-03T09:00:00Z")  # 367 days on: past retention
    assert [f[0] for f in _linted(kg.path, "retention")] == [lisbon]
    kg("confirm", lisbon)  # confirmed again, not observed again: renewed
    assert _linted(kg.path, "retention") == []
    paris = kg.json("propose", "person/dana", "timezone", "--value", "Europe/Paris", "-s", "profile:dir/b")["id"]
    assert _linted(kg.path, "contradiction") == [[paris, lisbon]]
    assert _briefed(kg.path) == {"count": 1, "facts": [[paris, lisbon]], "past": []}
    assert _kept(kg.path)[1] == _made(kg.path)


def _id(iri: str) -> str:
    from kgrdf import vocab

    return vocab.id_of(iri)


def test_the_briefing_lists_the_first_contradictions_kg_lint_lists(kg, monkeypatch):
    """The Briefing reads the facts of its first SHOWN contradictions alone, and lists what kg lint
    lists first, with how many there are in all."""
    from kgrdf import briefing

    monkeypatch.setenv("KGRDF_NOW", "2025-03-01T09:00:00Z")
    people = [f"person/p{n:02d}" for n in range(briefing.SHOWN + 2)]
    for n, person in enumerate(reversed(people)):  # written in the reverse of the order listed
        kg("add-entity", person, "--name", f"Person {n}")
        for zone in ("Europe/Lisbon", "Europe/Paris"):
            kg("propose", person, "timezone", "--value", zone, "-s", f"profile:dir/{n}{zone[-1]}")
        if n % 3 == 0:  # a second contradiction of the same subject
            for title in ("Engineer", "Manager"):
                kg("propose", person, "title", "--value", title, "-s", f"profile:dir/{n}{title}")
    result = runner.invoke(app, ["lint", "--json", "--kb", str(kg.path)])
    linted = [f for f in json.loads(result.stdout)["findings"] if f["kind"] == "contradiction"]
    assert len(linted) > briefing.SHOWN
    with KnowledgeBase.open(kg.path).reading() as session:
        shown = briefing.briefing(session)["contradictions"]
    assert shown["count"] == len(linted)
    assert shown["findings"] == linted[: briefing.SHOWN]


def test_a_write_reads_the_hearings_of_the_facts_it_touches_by_key_not_by_scanning_every_hearing(demo):
    """A write brings each fact it touches its audiences from the cache's hearings. A plain join of
    the hearings with the temporary table of those facts, which has no statistics, was planned as a
    scan of every hearing: 72 ms of each write at a million facts. Each query a write runs on the
    cache reads the hearings through their key."""
    demo.json("propose", "repo/api", "caveat", "--value", "mscaveat: by key", "-s", "slack:k1")
    db = sqlite3.connect(measures.cache_path(demo.path))
    ran: list[str] = []
    db.set_trace_callback(ran.append)
    try:
        fact = db.execute("SELECT fact FROM heard LIMIT 1").fetchone()[0]
        ran.clear()
        keys = measures._heard_keys(db, {fact, "https://kgrdf.org/kb/main/fact/f-none00"})
        assert set(keys) == {fact, "https://kgrdf.org/kb/main/fact/f-none00"} and keys[fact]
        reads = [sql for sql in ran if sql.lstrip().upper().startswith("SELECT") and "heard" in sql]
        assert reads  # (the query under test was seen)
        for sql in reads:
            plan = " | ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert "SCAN heard" not in plan, plan
    finally:
        db.close()


def test_a_write_that_closes_many_facts_reads_every_closing_once_and_keeps_what_the_index_holds(
    kg, tmp_path, monkeypatch
):
    """A merge closes every current fact of the organization merged: the cache learns when each was
    revised from one read of every revision once they are more than REVISIONS_ONE_BY_ONE (30 here
    beside 8), not one read a fact (a merge of 1,000 facts took 12 s, 10 of them these reads, when
    a fact's read cost as much as every fact's). One fact closed is read by itself. Either way the
    cache holds what one made from the index holds."""
    from kgrdf.store.oxigraph import OxigraphBackend

    monkeypatch.setattr(measures, "REVISIONS_ONE_BY_ONE", 8)

    records = [{"type": "entity", "id": f"organization/{o}", "name": o} for o in ("acme", "acme-inc")]
    records += [
        {"type": "fact", "subject": "organization/acme-inc", "predicate": "caveat", "value": f"c {i}"}
        | {"sources": [f"slack:{i}"]}
        for i in range(30)
    ]
    path = tmp_path / "orgs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    kg("import", path, "--apply")
    asked = []
    select = OxigraphBackend.select

    def counted(self, query, bindings=None, **kw):
        if query.name == "briefing-revisions":
            asked.append(bindings)
        return select(self, query, bindings, **kw)

    monkeypatch.setattr(OxigraphBackend, "select", counted)
    kg("org", "merge", "acme", "acme-inc")
    assert asked == [{}]  # before: 30 reads, one a fact
    one = kg.json("facts", "acme")["facts"][0]["id"]
    asked.clear()
    kg("supersede", one, "--value", "c new", "-s", "slack:new")
    assert len(asked) == 1 and "fact" in asked[0]
    monkeypatch.undo()
    at, kept = _kept(kg.path)
    assert len([row for row in kept if len(row) > 4 and row[0].endswith(one)]) == 1
    assert kept == _made(kg.path)


def test_a_cache_made_reads_its_own_rows_when_another_takes_its_name_right_after(demo, monkeypatch):
    """Two readers may make the cache at once, each in a file of its own renamed over the name: the
    one made is read, not whichever file holds the name once it was renamed (a cache made for
    another state, or none)."""
    demo("stats")
    measures.drop(demo.path)
    path = measures.cache_path(demo.path)
    renamed = measures.os.replace

    def replace_then_another_takes_the_name(source, target):
        renamed(source, target)
        other = sqlite3.connect(f"{target}.other")
        other.executescript("CREATE TABLE meta (name TEXT, value TEXT); INSERT INTO meta VALUES ('at', 'another');")
        other.close()
        renamed(f"{target}.other", target)

    monkeypatch.setattr(measures.os, "replace", replace_then_another_takes_the_name)
    kb = KnowledgeBase.open(demo.path)
    with kb.reading() as session:
        held = measures.of(session)
        try:
            assert len(held.rows()) == demo.json("stats")["fact_count"]
        finally:
            held.close()
    assert dict(sqlite3.connect(path).execute("SELECT name, value FROM meta"))["at"] == "another"


def test_what_a_reader_killed_while_making_the_cache_left_is_removed_by_the_next_that_makes_it(demo):
    """A console killed while it summed up every fact left its file of megabytes beside the cache,
    and nothing but kg forget removed it. A file of a process that runs is its own still."""
    import subprocess
    import sys

    demo("stats")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    path = measures.cache_path(demo.path)
    left = [path.with_name(f"{path.name}.{dead}.140234.tmp"), path.with_name(f"{path.name}.{dead}.140234.tmp-journal")]
    left.append(path.with_name(f"{path.name}.99999999999999999999.1.tmp"))  # no process's number: a bug, once
    running = path.with_name(f"{path.name}.1.7.tmp")  # (process 1 runs)
    for file in [*left, running]:
        file.write_bytes(b"x" * 1000)
    measures.drop(demo.path)
    kb = KnowledgeBase.open(demo.path)
    with kb.reading() as session:
        measures.of(session).close()
    assert [file.exists() for file in left] == [False, False, False] and running.exists()


def test_the_briefing_counts_the_days_up_to_the_last_day_there_is(kg, monkeypatch):
    """A clock on 9999-12-31: the days the Briefing counts end on it (the day after is no date)."""
    from kgrdf import briefing

    monkeypatch.setenv("KGRDF_NOW", "9999-12-31T08:00:00Z")
    kg("add-entity", "repo/web", "--name", "web")
    kg("propose", "web", "status", "--value", "live", "-s", "ledger:a")
    with KnowledgeBase.open(kg.path).reading() as session:
        days = briefing.briefing(session)["captured"]
    assert days["days"][-1] == {"day": "9999-12-31", "captured": 1, "total": 1}
    assert days["captured"] == 1
