"""The daily review's promises where an answer could decide what the person did not see or mean:
a past value confirmed beside the current one, two values of one thing confirmed in one answer, a
batch made again behind the printed one, a decision that reads as two targets, settings that the
batch could not keep to, and an export over the knowledge base's own files."""

import json

import pytest

from kgrdf import batch
from kgrdf.kb import KnowledgeBase

from .conftest import Kg, one_line


def _fact(kg: Kg, *args) -> str:
    return kg.json("propose", *args)["id"]


def _status(kg: Kg, fact_id: str) -> dict:
    return kg.json("history", fact_id)["fact"]


def _confirm_values(staging: Kg, values: dict, order: list[str], answered: str) -> dict:
    """Propose each of ``values`` (name -> value and its times) of the staging status in ``order``,
    then confirm them all as ``answered`` says: in kg batch apply, the console, or kg confirm one
    by one. The ids by name."""
    ids = {}
    for n, which in enumerate(order):
        value, *times = values[which]
        ids[which] = _fact(staging, "environment/staging", "status", "--value", value, "--source", f"doc:{n}", *times)
    if answered == "console":
        kb = KnowledgeBase.open(staging.path)
        batch.for_review(kb)
        assert sorted(batch.decide(kb, [ids[w] for w in order], "confirm")["decided"]) == sorted(ids.values())
    elif answered == "kg batch apply":
        staging("batch")
        assert staging.json("batch", "apply", "confirm all")["confirmed"] == 2
    else:
        for which in order:
            staging("confirm", ids[which])
    return ids


def test_a_fact_named_twice_in_one_decision_is_decided_once_and_never_said_changed_elsewhere(kg: Kg):
    kg("add-entity", "repo/api", "-n", "api")
    first = _fact(kg, "repo/api", "caveat", "--value", "cold starts", "-s", "slack:one")
    second = _fact(kg, "repo/api", "caveat", "--value", "rate limited", "-s", "slack:two")
    kb = KnowledgeBase.open(kg.path)
    batch.for_review(kb)
    done = batch.decide(kb, [first, second, first], "reject")
    assert (done["facts"], done["decided"], done["changed_since_printed"]) == ([first, second], [first, second], [])
    assert _status(kg, first)["status"] == _status(kg, second)["status"] == "rejected"


@pytest.fixture
def staging(kg: Kg) -> Kg:
    kg("add-entity", "environment/staging", "-n", "Staging")
    kg("add-entity", "person/dana", "-n", "Dana")
    return kg


# --- a past value -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "past",
    [("2020-01-01", "2021-06-01"), (None, "2021-06-01"), ("2019-03-01", "2023-06-01")],
    ids=["before-it", "no-start", "overlapping-it"],
)
def test_confirming_a_past_value_leaves_the_value_current_now(staging, past):
    """A value whose valid time ended (it was being built until 2021) replaces nothing current: the
    present value stays, for today and for any time after the past one ended."""
    current = _fact(
        staging,
        *("environment/staging", "status", "--value", "active", "--valid-from", "2022-01-01"),
        *("--source", "ledger:L1"),
    )
    staging("confirm", current)
    start, end = past
    old = _fact(
        staging,
        *("environment/staging", "status", "--value", "being built", "--source", "doc:wiki-1"),
        *(["--valid-from", start] if start else []),
        *("--valid-to", end),
    )
    staging("confirm", old)
    kept = _status(staging, current)
    assert kept["status"] == "confirmed" and not kept.get("superseded_by") and not kept.get("valid_to")
    now = [f["id"] for f in staging.json("facts", "environment/staging")["facts"]]
    assert now == [current]
    later = staging.json("facts", "environment/staging", "--as-of", "2024-01-01")["facts"]
    assert [f["id"] for f in later] == [current]
    assert _status(staging, old)["status"] == "confirmed"


def test_confirming_a_value_that_holds_now_still_closes_the_one_it_replaces(staging):
    old = _fact(staging, "person/dana", "title", "--value", "Engineer", "--source", "profile:hr-1")
    staging("confirm", old)
    new = _fact(staging, "person/dana", "title", "--value", "Manager", "--source", "profile:hr-2")
    staging("confirm", new)
    assert _status(staging, old)["superseded_by"] == new and _status(staging, new)["status"] == "confirmed"


def test_the_batch_says_the_valid_time_of_a_fact_that_has_one(staging):
    _fact(
        staging,
        *("environment/staging", "status", "--value", "being built", "--source", "doc:w2"),
        *("--valid-from", "2020-01-01", "--valid-to", "2021-06-01"),
    )
    _fact(staging, "environment/staging", "caveat", "--value", "flaky", "--source", "doc:w")
    shown = {f["sentence"]: f for g in staging.json("batch")["groups"] for f in g["facts"]}
    past = shown["Staging is being built (from 2020-01-01; to 2021-06-01)"]
    assert past["valid_from"].startswith("2020-01-01") and past["valid_to"].startswith("2021-06-01")
    plain = shown["Staging comes with a caveat: flaky"]
    assert plain["valid_from"] is None and plain["valid_to"] is None
    assert "Staging is being built (from 2020-01-01; to 2021-06-01)" in staging("batch").stdout


# --- two values of one thing in one answer --------------------------------------------------------------


def test_an_answer_confirming_two_values_of_one_thing_is_refused_whole(staging):
    paris = _fact(staging, "person/dana", "timezone", "--value", "Europe/Paris", "--source", "slack:1")
    york = _fact(staging, "person/dana", "timezone", "--value", "America/New_York", "--source", "slack:2")
    caveat = _fact(staging, "environment/staging", "caveat", "--value", "flaky", "--source", "slack:3")
    labels = {f["id"]: f["label"] for g in staging.json("batch")["groups"] for f in g["facts"]}
    before = staging.snapshot()
    line = one_line(staging("batch", "apply", "confirm all", expect=1))
    assert labels[paris] in line and labels[york] in line and "timezone" in line and "nothing was decided" in line
    assert staging.snapshot() == before
    result = staging.json("batch", "apply", f"confirm all except {labels[york]}")
    assert result["confirmed"] == 2
    assert _status(staging, paris)["status"] == "confirmed" and _status(staging, caveat)["status"] == "confirmed"
    assert _status(staging, york)["status"] == "proposed"


def test_the_refusal_of_three_values_of_one_thing_gives_a_way_out_that_is_taken(staging):
    """With three values of one thing in one answer, the refusal's example decision leaves out all
    but one: answered as it says, it is taken, not refused again over the two left."""
    ids = [
        _fact(staging, "person/dana", "timezone", "--value", value, "--source", f"slack:{n}")
        for n, value in enumerate(("Europe/Paris", "America/New_York", "Asia/Tokyo"))
    ]
    staging("batch")
    line = one_line(staging("batch", "apply", "confirm all", expect=1))
    assert "would all hold timezone of person/dana" in line, line
    example = line.split('e.g. "')[1].split('"')[0]
    assert staging.json("batch", "apply", example)["confirmed"] == 1
    assert sorted(_status(staging, i)["status"] for i in ids) == ["confirmed", "proposed", "proposed"]


def test_two_values_of_one_thing_at_different_times_may_be_confirmed_together(staging):
    _fact(
        staging,
        *("environment/staging", "status", "--value", "being built", "--source", "doc:w"),
        *("--valid-from", "2020-01-01", "--valid-to", "2021-06-01"),
    )
    _fact(
        staging, "environment/staging", "status", "--value", "active", "--source", "doc:x", "--valid-from", "2022-01-01"
    )
    staging("batch")
    assert staging.json("batch", "apply", "confirm all")["confirmed"] == 2
    assert [f["sentence"] for f in staging.json("facts", "environment/staging")["facts"]] == ["Staging is active"]


@pytest.mark.parametrize("proposed", ["past-first", "current-first"])
@pytest.mark.parametrize("answered", ["kg batch apply", "console"])
def test_a_past_value_and_the_value_now_confirmed_together_hold_as_on_two_days(staging, proposed, answered):
    """'It was being built until 2021, it is live': one answer confirming both is no rivalry the
    letters decide. Whatever their order, it holds as confirming the past value one day and the
    present one the next: the present value holds from now and closes the past one, which keeps
    its own time; nothing overlaps."""
    values = {
        "past": ("being built", "--valid-from", "2020-01-01", "--valid-to", "2021-06-01"),
        "current": ("live",),
    }
    order = ["past", "current"] if proposed == "past-first" else ["current", "past"]
    ids = _confirm_values(staging, values, order, answered)
    now = staging.json("facts", "environment/staging")["facts"]
    assert [(f["id"], f["status"]) for f in now] == [(ids["current"], "confirmed")]
    assert _status(staging, ids["current"])["valid_from"] > "2026-01-01"
    past = _status(staging, ids["past"])
    assert past["status"] == "confirmed" and past["valid_to"].startswith("2021-06-01")
    then = staging.json("facts", "environment/staging", "--as-of", "2020-06-01")["facts"]
    assert [f["id"] for f in then] == [ids["past"]]
    findings = json.loads(staging("lint", "--json", expect=1).stdout)["findings"]
    assert {f["kind"] for f in findings} == {"orphan"}, findings  # (Dana, of no fact): no overlap


def test_the_console_refuses_confirming_two_values_of_one_thing_at_once(staging):
    ids = [
        _fact(staging, "person/dana", "timezone", "--value", value, "--source", f"slack:{n}")
        for n, value in enumerate(("Europe/Paris", "America/New_York"))
    ]
    kb = KnowledgeBase.open(staging.path)
    batch.for_review(kb)
    before = staging.snapshot()
    with pytest.raises(Exception) as refused:
        batch.decide(kb, ids, "confirm")
    assert "nothing was decided" in refused.value.message and staging.snapshot() == before
    assert batch.decide(kb, ids[:1], "confirm")["decided"] == ids[:1]


@pytest.mark.parametrize("proposed", ["old-first", "new-first"])
@pytest.mark.parametrize("answered", ["kg batch apply", "console", "kg confirm"])
def test_a_planned_change_confirmed_holds_both_values_each_in_its_time(staging, proposed, answered):
    """'Postgres 14 until March, postgres 16 from March': two values of one thing whose valid
    times follow each other are no rivals. Confirmed in one answer or one by one, in any order,
    both stay confirmed and neither closes the other: the old value holds now, the new one from
    March."""
    values = {
        "old": ("postgres 14", "--valid-to", "2031-03-01"),
        "new": ("postgres 16", "--valid-from", "2031-03-01"),
    }
    order = ["old", "new"] if proposed == "old-first" else ["new", "old"]
    ids = _confirm_values(staging, values, order, answered)
    for which in ("old", "new"):
        fact = _status(staging, ids[which])
        assert fact["status"] == "confirmed" and not fact.get("superseded_by"), fact
    assert _status(staging, ids["old"])["valid_to"].startswith("2031-03-01")
    assert _status(staging, ids["new"])["valid_from"].startswith("2031-03-01")
    now = staging.json("facts", "environment/staging")["facts"]
    assert [f["id"] for f in now] == [ids["old"]]
    then = staging.json("facts", "environment/staging", "--as-of", "2031-06-01")["facts"]
    assert [f["id"] for f in then] == [ids["new"]]


@pytest.mark.parametrize("answered", ["kg batch apply", "console", "kg confirm"])
def test_confirming_a_value_that_begins_later_ends_the_current_one_where_it_begins(staging, answered):
    """'Postgres 16 from March', confirmed while postgres 14 holds with no end: 14 holds until March,
    not closed today (which would leave nothing true until March). Both stay confirmed, one a time."""
    old = _fact(staging, "environment/staging", "status", "--value", "postgres 14", "--source", "doc:a")
    staging("confirm", old)
    new = _fact(
        staging,
        *("environment/staging", "status", "--value", "postgres 16", "--source", "doc:b"),
        *("--valid-from", "2031-03-01"),
    )
    if answered == "console":
        kb = KnowledgeBase.open(staging.path)
        batch.for_review(kb)
        assert batch.decide(kb, [new], "confirm")["decided"] == [new]
    elif answered == "kg batch apply":
        staging("batch")
        assert staging.json("batch", "apply", "confirm all")["confirmed"] == 1
    else:
        note = staging.json("confirm", new)["note"]
        assert note == f"{old} holds until 2031-03-01T00:00:00Z, when {new} begins"
    held = _status(staging, old)
    assert held["status"] == "confirmed" and held["valid_to"] == "2031-03-01T00:00:00Z"
    assert not held.get("superseded_by") and not held.get("retired_at")
    assert [f["id"] for f in staging.json("facts", "environment/staging")["facts"]] == [old]
    for day, shown in (("2031-02-28", old), ("2031-03-01", new), ("2031-06-01", new)):
        assert [f["id"] for f in staging.json("facts", "environment/staging", "--as-of", day)["facts"]] == [shown]
    findings = json.loads(staging("lint", "--json", expect=1).stdout)["findings"]
    assert {f["kind"] for f in findings} == {"orphan"}, findings  # (Dana, of no fact): no overlap


# --- the batch that was printed -----------------------------------------------------------------------


def test_kg_batch_apply_never_answers_a_batch_the_console_made_since_it_was_printed(staging, monkeypatch):
    monkeypatch.setenv("KGRDF_NOW", "2030-01-01T21:00:00Z")
    first = _fact(staging, "environment/staging", "caveat", "--value", "flaky", "--source", "slack:1")
    monkeypatch.setenv("KGRDF_NOW", "2030-01-01T22:00:00Z")
    printed = staging.json("batch")
    assert [f["id"] for g in printed["groups"] for f in g["facts"]] == [first]
    monkeypatch.setenv("KGRDF_NOW", "2030-01-01T22:10:00Z")
    later = _fact(
        staging, "environment/staging", "caveat", "--value", "slow", "--source", "slack:2", "--prevents-rework"
    )
    monkeypatch.setenv("KGRDF_NOW", "2030-01-02T08:00:00Z")  # the next day: the console's look makes its own
    shown = batch.for_review(KnowledgeBase.open(staging.path))
    assert shown["groups"][0]["facts"][0]["id"] == later
    before = staging.snapshot()
    line = one_line(staging("batch", "apply", "reject 1a", expect=1))
    assert "not the one kg batch printed" in line and "made a new one at 2030-01-02T08:00:00Z" in line
    assert staging.snapshot() == before
    assert _status(staging, first)["status"] == "proposed" and _status(staging, later)["status"] == "proposed"
    staging("batch")  # printed again: answered as printed
    assert staging.json("batch", "apply", "reject 1a")["rejected"] == 1
    assert _status(staging, later)["status"] == "rejected"


def test_a_perspective_that_does_not_exist_is_refused_and_leaves_the_saved_batch(staging):
    _fact(staging, "environment/staging", "caveat", "--value", "flaky", "--source", "slack:1")
    staging("batch")
    saved = (staging.path / "batch.json").read_text()
    files = sorted(p.relative_to(staging.path) for p in staging.path.rglob("*"))
    line = one_line(staging("batch", "--perspective", "mian", expect=1))
    assert "no perspective 'mian'" in line and "main" in line
    assert (staging.path / "batch.json").read_text() == saved
    assert sorted(p.relative_to(staging.path) for p in staging.path.rglob("*")) == files  # no cache made for it
    line = one_line(staging("batch", "apply", "confirm all", "--perspective", "mian", expect=1))
    assert "no perspective 'mian'" in line and "kg batch --perspective mian" not in line
    assert staging.json("batch", "apply", "confirm all")["confirmed"] == 1


@pytest.mark.parametrize("look", ["for_review", "peek"])
def test_the_console_s_look_at_a_perspective_that_does_not_exist_is_refused_too(staging, look):
    """The console's review (and an agent's look) make the batch as kg batch does: a perspective
    that does not exist is refused before a cache is made or the saved batch replaced."""
    _fact(staging, "environment/staging", "caveat", "--value", "flaky", "--source", "slack:1")
    staging("batch")
    files = {p.relative_to(staging.path): p.read_bytes() for p in staging.path.rglob("*") if p.is_file()}
    with pytest.raises(Exception) as refused:
        getattr(batch, look)(KnowledgeBase.open(staging.path, perspective="mian"))
    assert "no perspective 'mian'" in refused.value.message
    assert {p.relative_to(staging.path): p.read_bytes() for p in staging.path.rglob("*") if p.is_file()} == files
    assert staging.json("batch", "apply", "confirm all")["confirmed"] == 1


# --- the decision's words -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "decision,where",
    [
        ("reject 1a2", "'1a2'"),
        ("confirm 1b1", "'1b1'"),
        ("confirm " + "9" * 5000, "'99999999999'"),
        ("confirm \u0661", "'\u0661'"),
        ("confirm all2", "'all2'"),
    ],
    ids=["letter-then-digit", "group-run-on", "huge-number", "arabic-digit", "word-run-on"],
)
def test_a_target_that_runs_on_is_refused_not_read_as_two(staging, decision, where):
    for n in range(3):
        _fact(staging, "environment/staging", "caveat", "--value", f"caveat {n}", "--source", f"slack:{n}")
    staging("batch")
    before = staging.snapshot()
    line = one_line(staging("batch", "apply", decision, expect=2))
    assert where in line and "decision goes wrong" in line
    assert staging.snapshot() == before


def test_a_group_number_with_a_leading_zero_means_that_group(staging):
    ids = [
        _fact(staging, "environment/staging", "caveat", "--value", f"caveat {n}", "--source", f"slack:{n}")
        for n in range(2)
    ]
    labels = {f["label"]: f["id"] for g in staging.json("batch")["groups"] for f in g["facts"]}
    assert staging.json("batch", "apply", "reject 01a")["rejected"] == 1
    assert _status(staging, labels["1a"])["status"] == "rejected"
    assert {_status(staging, i)["status"] for i in ids} == {"rejected", "proposed"}


# --- settings ---------------------------------------------------------------------------------------------


def test_a_setting_out_of_range_is_refused_before_any_proposal_expires(staging, monkeypatch):
    fact = _fact(staging, "environment/staging", "caveat", "--value", "flaky", "--source", "slack:1")
    monkeypatch.setenv("KGRDF_NOW", "2099-01-01T00:00:00Z")  # the proposal is past its 30 days
    monkeypatch.setenv("KGRDF_GROUP_FACTS", "27")
    before = staging.snapshot()
    assert "KGRDF_GROUP_FACTS" in one_line(staging("batch", expect=2))
    assert staging.snapshot() == before and _status(staging, fact)["status"] == "proposed"


def test_the_batch_cap_holds_below_a_group_part(staging, monkeypatch):
    for n in range(8):
        _fact(staging, "environment/staging", "caveat", "--value", f"caveat {n}", "--source", f"slack:{n}")
    monkeypatch.setenv("KGRDF_BATCH_FACTS", "5")
    shown = staging.json("batch")
    assert shown["in_batch"] == 5 and sum(len(g["facts"]) for g in shown["groups"]) == 5
    assert shown["batches"] == 2


# --- an export --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["format.json", "journal/x.trig", "new.trig"])
def test_an_export_into_the_knowledge_base_folder_is_refused(staging, tmp_path, name):
    before = staging.snapshot()
    files = sorted(p.relative_to(staging.path) for p in staging.path.rglob("*"))
    format_json = (staging.path / "format.json").read_bytes()
    line = one_line(staging("export", "--output", staging.path / name, expect=2))
    assert "knowledge base's folder" in line and "nothing was written" in line
    assert staging.snapshot() == before
    assert sorted(p.relative_to(staging.path) for p in staging.path.rglob("*")) == files
    assert (staging.path / "format.json").read_bytes() == format_json
    link = tmp_path / "inside"
    link.symlink_to(staging.path)
    assert "knowledge base's folder" in one_line(staging("export", "--output", link / "x.trig", expect=2))
    out = tmp_path / "out.trig"
    assert staging.json("export", "--output", out)["bytes"] == len(out.read_bytes()) > 0
