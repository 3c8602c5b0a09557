"""Nothing dropped silently: every part of a write is refused with its reason, done
as asked, or reported by kg lint. Each refusal is checked through the CLI: its exit code, its one
line, and that nothing was written (the journal, view.json, the git history as they were)."""

import json
import re
import shlex

import pytest

from kgrdf.cli import app
from tests.conftest import one_line, runner

from .patchlog import patch_bytes, patch_files


def propose(kg, *args, expect=0):
    return kg.json("propose", *args, expect=expect)


def refused(kg, *args, code=1, env=None):
    """Run a command that must be refused: exit ``code``, one line on stderr, nothing written."""
    before = kg.snapshot()
    result = kg(*args, expect=code)
    line = one_line(result)
    assert kg.snapshot() == before, f"kg {' '.join(map(str, args))} wrote something"
    return line


def lint(kg) -> dict:
    """kg lint --json, which exits 1 when it finds something."""
    result = runner.invoke(app, ["lint", "--json", "--kb", str(kg.path)])
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def records_file(path, *records):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def fixed_now(monkeypatch):
    """The clock at a known time, moved forward with ``fixed_now("...")``. A test asks for it before
    any fixture that writes: recorded time never goes backwards."""

    def at(moment: str):
        monkeypatch.setenv("KGRDF_NOW", moment)

    at("2026-11-02T09:00:00Z")
    return at


# --- a. an observation does not change a fact's valid time or order -------------------------------------


@pytest.mark.parametrize(
    "known, again, field",
    [
        (["--valid-from", "2026-01-05"], ["--valid-from", "2026-03-01"], "valid_from"),
        ([], ["--valid-from", "2025-12-24T08:00:00+02:00"], "valid_from"),
        ([], ["--valid-to", "2027-01-01"], "valid_to"),
        (["--valid-to", "2027-01-01"], ["--valid-to", "2027-02-01"], "valid_to"),
    ],
)
def test_proposing_a_known_fact_with_other_valid_times_is_refused(seeded, known, again, field):
    fact = propose(seeded, "person/dana", "reviews", "--object", "repo/api", "-s", "slack:p1", *known)
    line = refused(seeded, "propose", "Dana", "reviews", "--object", "api", "-s", "pr:7", *again)
    assert fact["id"] in line and field in line and f"kg supersede {fact['id']}" in line
    assert seeded.json("history", fact["id"])["fact"]["observations"] == 1


def test_proposing_a_step_again_at_another_place_is_refused(seeded):
    seeded("add-entity", "step/canary", "--name", "Canary checks")
    step = propose(seeded, "release", "has_step", "--object", "step/canary", "-s", "doc:runbook", "--order", "2")
    line = refused(
        seeded, "propose", "release", "has_step", "--object", "Canary checks", "-s", "doc:runbook", "--order", "3"
    )
    assert step["id"] in line and "order 2 (proposed: 3)" in line
    # The same place, or no place said, is an observation.
    same = propose(seeded, "release", "has_step", "--object", "step/canary", "-s", "doc:x", "--order", "2")
    assert same["outcome"] == "observed"
    assert propose(seeded, "release", "has_step", "--object", "step/canary", "-s", "doc:y")["order"] == 2


def test_the_way_out_corrects_a_facts_times_in_place_and_keeps_what_they_were(seeded):
    fact = propose(
        seeded, "repo/api", "depends_on", "--object", "repo/web-app", "-s", "pr:1", "--valid-from", "2026-01-05"
    )
    corrected = seeded.json(
        "supersede",
        fact["id"],
        "--valid-from",
        "2026-02-01",
        "--valid-to",
        "2026-10-01",
        "--reason",
        "the migration started later",
    )
    assert corrected["outcome"] == "retimed" and corrected["id"] == fact["id"]
    assert (corrected["valid_from"], corrected["valid_to"]) == ("2026-02-01T00:00:00Z", "2026-10-01T00:00:00Z")
    last = seeded.json("history", fact["id"])["history"][-1]
    assert last["action"] == "retime" and last["reason"] == "the migration started later"
    assert last["changes"]["valid_from"] == {"before": ["2026-01-05T00:00:00Z"], "after": ["2026-02-01T00:00:00Z"]}
    # Now the proposal agrees with it, and observes it.
    again = propose(seeded, "api", "depends_on", "--object", "web-app", "-s", "pr:2", "--valid-from", "2026-02-01")
    assert again["outcome"] == "observed" and again["id"] == fact["id"]
    assert "nothing to supersede" in refused(seeded, "supersede", fact["id"], "--valid-from", "2026-02-01")
    assert "say what replaces it" in refused(seeded, "supersede", fact["id"], code=2)


def test_an_import_record_observing_a_known_fact_at_other_times_is_refused_as_a_conflict(seeded, tmp_path):
    propose(seeded, "repo/api", "caveat", "--value", "slow tests", "-s", "pr:1", "--valid-from", "2026-04-01")
    path = records_file(
        tmp_path / "again.jsonl",
        {
            "type": "fact",
            "subject": "api",
            "predicate": "caveat",
            "value": "Slow  tests",
            "sources": ["doc:wiki"],
            "valid_from": "2026-05-01",
        },
        {
            "type": "fact",
            "subject": "api",
            "predicate": "caveat",
            "value": "other",
            "sources": ["doc:wiki"],
            "valid_to": "2026-05-01",
        },
        {
            "type": "fact",
            "subject": "api",
            "predicate": "caveat",
            "value": "OTHER",
            "sources": ["doc:wiki"],
            "valid_to": "2026-06-01",
        },
    )
    report = seeded.json("import", path, "--apply")
    assert report["refused"] == {"conflict": 2}
    assert [r["line"] for r in report["refusals"]] == [1, 3]
    assert "valid_from 2026-04-01T00:00:00Z (proposed: 2026-05-01T00:00:00Z)" in report["refusals"][0]["message"]


def test_an_expired_fact_proposed_again_is_revived_at_the_times_now_said(fixed_now, seeded):
    fact = propose(seeded, "repo/api", "caveat", "--value", "flaky", "-s", "pr:1", "--valid-from", "2026-01-01")
    fixed_now("2026-12-20T09:00:00Z")
    seeded("batch")  # expires proposals not observed again for 30 days
    assert seeded.json("history", fact["id"])["fact"]["status"] == "expired"
    revived = propose(seeded, "repo/api", "caveat", "--value", "flaky", "-s", "pr:2", "--valid-from", "2026-12-01")
    assert (revived["outcome"], revived["id"], revived["valid_from"]) == ("revived", fact["id"], "2026-12-01T00:00:00Z")
    assert "valid_from 2026-01-01T00:00:00Z -> 2026-12-01T00:00:00Z" in revived["note"]


def test_an_inference_about_a_person_is_not_observed_either(seeded):
    fact = propose(seeded, "person/dana", "reviews", "--object", "repo/api", "-s", "slack:p1")
    line = refused(seeded, "propose", "Dana", "reviews", "--object", "api", "-s", "pr:2", "--authority", "inferred")
    assert "authority inferred may not name a person" in line and fact["id"] in line


# --- b. a reason given when a fact is made is kept and shown ---------------------------------------------


def test_the_reason_a_fact_was_proposed_is_kept_and_shown(seeded):
    fact = propose(
        seeded,
        "repo/api",
        "caveat",
        "--value",
        "needs a warm cache",
        "-s",
        "pr:3",
        "--reason",
        "found while fixing the nightly job",
    )
    assert fact["outcome"] == "created" and fact["reason"] == "found while fixing the nightly job"
    history = seeded.json("history", fact["id"])
    assert history["history"][0] == {
        "at": fact["recorded_at"],
        "action": "recorded",
        "reason": "found while fixing the nightly job",
        "changes": {"sources": {"added": ["pr:3"]}},
    }
    assert [e["action"] for e in history["history"]] == ["recorded"]
    assert "(found while fixing the nightly job)" in seeded("history", fact["id"]).stdout
    # Without a reason nothing more is recorded; with one, an observation keeps its own.
    plain = propose(seeded, "repo/api", "caveat", "--value", "cold start", "-s", "pr:4")
    assert "reason" not in plain and "reason" not in seeded.json("history", plain["id"])["history"][0]
    propose(seeded, "repo/api", "caveat", "--value", "cold start", "-s", "pr:5", "--reason", "seen again")
    assert seeded.json("history", plain["id"])["history"][-1]["reason"] == "seen again"


def test_the_reason_of_a_supersede_is_kept_on_the_new_fact_and_the_closing_of_the_old(seeded):
    old = propose(seeded, "environment/staging", "status", "--value", "active", "-s", "report:r")
    seeded("confirm", old["id"])
    new = seeded.json("supersede", old["id"], "--value", "frozen", "--reason", "code freeze for the audit")
    assert new["reason"] == "code freeze for the audit"
    assert seeded.json("history", new["id"])["history"][0]["reason"] == "code freeze for the audit"
    close = seeded.json("history", old["id"])["history"][-1]
    assert close["action"] == "close" and close["reason"] == f"replaced by {new['id']}: code freeze for the audit"


def test_an_import_record_keeps_its_reason(seeded, tmp_path):
    path = records_file(
        tmp_path / "why.jsonl",
        {
            "type": "fact",
            "subject": "api",
            "predicate": "caveat",
            "value": "pinned to node 20",
            "sources": ["doc:adr-7"],
            "reason": "ADR 7, the build image",
        },
    )
    seeded("import", path, "--apply")
    fact = seeded.json("facts", "repo/api")["facts"][0]
    assert seeded.json("history", fact["id"])["history"][0]["reason"] == "ADR 7, the build image"


def test_a_reason_naming_a_person_makes_the_fact_personal_and_private(seeded):
    fact = propose(
        seeded,
        "repo/api",
        "caveat",
        "--value",
        "no deploys on friday",
        "-s",
        "doc:policy",
        "--reason",
        "Dana Okafor asked for it",
    )
    assert fact["sensitivity"] == "personal"
    journal = seeded.path / "journal"
    shared = [p for p in patch_files(journal) if p.relative_to(journal).parts[0] != "local"]
    private = [p for p in patch_files(journal) if p.relative_to(journal).parts[0] == "local"]
    assert shared and private
    assert b"Dana Okafor asked for it" not in b"".join(map(patch_bytes, shared))
    assert b"Dana Okafor asked for it" in b"".join(map(patch_bytes, private))


# --- c. import records are read strictly, field by field ---------------------------------------------------


FACT = {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": "v", "sources": ["doc:a"]}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"prevents_rework": "False"}, "prevents_rework must be true or false, not text ('False')"),
        ({"prevents_rework": "yes"}, "prevents_rework must be true or false, not text ('yes')"),
        ({"prevents_rework": 0}, "prevents_rework must be true or false, not a number (0)"),
        ({"extracted": "1", "confidence": 0.5}, "extracted must be true or false"),
        ({"sources": "doc:a"}, "sources must be a list, not text ('doc:a')"),
        ({"sources": {"kind": "doc", "ref": "a"}}, "sources must be a list, not an object"),
        ({"sources": [{"kind": "doc", "ref": "a", "quote": "q"}]}, "without 'quote'"),
        ({"sources": [{"kind": "doc"}]}, 'a source object is {"kind": ..., "ref": ...}'),
        ({"sources": [{"kind": "doc:", "ref": "a"}]}, "a source kind holds no ':' (as in doc or slack), not 'doc:'"),
        ({"sources": [{"kind": "ledger:x", "ref": "a"}]}, "a source kind holds no ':'"),
        ({"sources": [["doc:a"]]}, "a source is KIND:REF"),
        ({"value": 12}, "value must be text, not a number (12)"),
        ({"value": ["v"]}, "value must be text, not a list"),
        ({"subject": {"id": "repo/api"}}, "subject must be text, not an object"),
        ({"authority": True}, "authority must be text, not true or false"),
        ({"order": "first"}, "order must be a whole number, not text ('first')"),
        ({"order": 2.5}, "order must be a whole number, not a number (2.5)"),
        ({"extracted": True, "confidence": "high"}, "confidence must be a number, not text ('high')"),
        ({"valid_from": 20260101}, "valid_from must be text, not a number"),
        ({"valid_from": "soon"}, "valid_from 'soon' is not a date"),
        ({"valid_to": " "}, "valid_to is empty"),
        ({"status": "rejected"}, "status 'rejected' is not imported"),
        ({"valid-from": "2026-01-01"}, 'has no field "valid-from"'),
        ({"Value": "v2"}, 'has no field "Value"'),
        ({"subject": None}, 'a fact record needs "subject"'),
    ],
)
def test_each_field_of_a_fact_record_refuses_what_it_does_not_hold(seeded, tmp_path, change, message):
    path = records_file(tmp_path / "bad.jsonl", FACT, {**FACT, "value": "w", **change})
    before = seeded.snapshot()
    report = seeded.json("import", path, "--apply")
    assert report["refusals"] == [{"line": 2, "reason": "malformed", "message": report["refusals"][0]["message"]}]
    assert message in report["refusals"][0]["message"]
    assert report["facts"] == {"created": 1}
    assert seeded.snapshot() != before  # the good record went in, the bad one did not
    assert [f["value"] for f in seeded.json("facts", "repo/api")["facts"]] == ["v"]


@pytest.mark.parametrize(
    "record, message",
    [
        (
            {"type": "entity", "id": "repo/x", "name": "x", "aliases": "the x"},
            "aliases must be a list of texts, not text",
        ),
        ({"type": "entity", "id": "repo/x", "name": "x", "weak_aliases": "ex"}, "weak_aliases must be a list of texts"),
        ({"type": "entity", "id": "repo/x", "name": "x", "aliases": [1]}, "each of aliases must be text"),
        ({"type": "entity", "id": "repo/x", "name": 7}, "name must be text, not a number (7)"),
        ({"type": "entity", "id": ["repo/x"], "name": "x"}, "id must be text, not a list"),
        (
            {"type": "entity", "id": "repo/x", "name": "x", "summary": {"text": "s"}},
            "summary must be text, not an object",
        ),
        ({"type": "entity", "id": "repo/x", "name": "x", "object": "repo/api"}, 'has no field "object"'),
        ('{"type": "entity", "id": "repo/x", "name": "x", "name": "y"}', "the key 'name' is given twice"),
    ],
)
def test_each_field_of_an_entity_record_refuses_what_it_does_not_hold(kg, tmp_path, record, message):
    path = records_file(tmp_path / "bad.jsonl", record)
    before = kg.snapshot()
    report = kg.json("import", path, "--apply")
    assert report["refused"] == {"malformed": 1} and report["refusals"][0]["line"] == 1
    assert message in report["refusals"][0]["message"]
    assert kg.snapshot() == before


def test_true_false_and_numbers_given_as_strings_are_read_strictly_as_what_they_say(seeded, tmp_path):
    seeded("add-entity", "step/smoke", "--name", "Smoke tests")
    path = records_file(
        tmp_path / "strings.jsonl",
        {**FACT, "value": "a", "prevents_rework": "false"},
        {**FACT, "value": "b", "prevents_rework": "true"},
        {
            "type": "fact",
            "subject": "process/release",
            "predicate": "has_step",
            "object": "step/smoke",
            "sources": ["doc:runbook"],
            "order": "2",
            "extracted": "true",
            "confidence": "0.75",
        },
    )
    report = seeded.json("import", path, "--apply")
    assert report["refused"] == {} and report["facts"] == {"created": 3}
    facts = {f["value"]: f for f in seeded.json("facts", "repo/api")["facts"]}
    assert "prevents_rework" not in facts["a"] and facts["b"]["prevents_rework"] is True
    step = seeded.json("facts", "process/release", "--predicate", "has_step")["facts"][0]
    shown = seeded.json("history", step["id"])["fact"]
    assert (shown["order"], shown["extracted"], shown["confidence"]) == (2, True, 0.75)


def test_a_status_of_confirmed_is_imported_as_a_proposal_and_said_so(seeded, tmp_path):
    path = records_file(
        tmp_path / "confirmed.jsonl", {**FACT, "status": "confirmed"}, {**FACT, "value": "p", "status": "proposed"}
    )
    report = seeded.json("import", path, "--apply")
    assert report["facts"] == {"created": 2} and report["proposals"] == 2
    assert report["notes"] and '1 fact record said "status": "confirmed"' in report["notes"][0]
    assert "note: 1 fact record" in seeded("import", path).stdout
    assert {f["status"] for f in seeded.json("facts", "repo/api")["facts"]} == {"proposed"}


# --- d. an empty or blank date is refused, never read as no date ---------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["propose", "repo/api", "caveat", "--value", "x", "-s", "pr:1", "--valid-from", ""],
        ["propose", "repo/api", "caveat", "--value", "x", "-s", "pr:1", "--valid-to", "   "],
        ["propose", "repo/api", "caveat", "--value", "x", "-s", "pr:1", "--valid-from", "\t"],
        ["supersede", "FACT", "--value", "y", "--valid-from", ""],
        ["supersede", "FACT", "--valid-to", " "],
        ["facts", "repo/api", "--as-of", ""],
        ["facts", "repo/api", "--known-at", "  "],
        ["propose", "repo/api", "caveat", "--value", "x", "-s", "pr:1", "--audience", ""],
    ],
)
def test_an_empty_date_option_is_refused_with_one_line(seeded, args):
    fact = propose(seeded, "repo/api", "caveat", "--value", "x", "-s", "pr:1")
    seeded("confirm", fact["id"])
    line = refused(seeded, *[fact["id"] if a == "FACT" else a for a in args], code=2)
    assert ("is empty" in line or "is not an audience" in line) and "Traceback" not in line


def test_an_empty_date_in_an_import_record_is_refused(seeded, tmp_path):
    path = records_file(tmp_path / "empty.jsonl", {**FACT, "valid_from": ""})
    report = seeded.json("import", path)
    assert report["refusals"][0]["message"].startswith("valid_from is empty")


def test_an_empty_dated_value_is_refused_too(seeded):
    seeded("add-entity", "decision/freeze", "--name", "Code freeze")
    assert "is empty" in refused(seeded, "propose", "decision/freeze", "decided", "--value", " ", "-s", "doc:1", code=2)


# --- e. two values of a single-valued predicate never hold at once ----------------------------------------------


def _confirmed(kg, *args):
    fact = propose(kg, *args)
    kg("confirm", fact["id"])
    return fact["id"]


def test_a_supersede_back_before_the_old_start_closes_the_old_value_at_its_start(fixed_now, seeded):
    old = _confirmed(
        seeded, "environment/staging", "status", "--value", "active", "-s", "report:r", "--valid-from", "2026-03-01"
    )
    new = seeded.json("supersede", old, "--value", "retired", "--valid-from", "2026-01-15")
    assert "never held" in new["note"]
    closed = seeded.json("history", old)["fact"]
    assert closed["valid_from"] == closed["valid_to"] == "2026-03-01T00:00:00Z"  # it never held
    for day in ("2026-02-01", "2026-04-01", "2026-10-01"):
        shown = seeded.json("facts", "staging", "--as-of", day)["facts"]
        assert [f["value"] for f in shown] == ["retired"], day
    assert lint(seeded)["counts"]["overlap"] == 0


def test_a_supersede_from_the_old_start_replaces_it_wholly(fixed_now, seeded):
    old = _confirmed(
        seeded,
        "process/release",
        "entry_point",
        "--object",
        "channel/ops",
        "-s",
        "report:r",
        "--valid-from",
        "2026-05-01",
    )
    seeded.json("supersede", old, "--object", "#deploys", "--valid-from", "2026-05-01")
    shown = seeded.json("facts", "release", "--as-of", "2026-06-01")["facts"]
    assert [f["object"] for f in shown] == ["channel/deploys"]
    assert lint(seeded)["counts"]["overlap"] == 0


def test_a_supersede_without_a_start_holds_from_now_and_the_old_value_until_now(fixed_now, seeded):
    old = _confirmed(seeded, "process/release", "entry_point", "--object", "channel/ops", "-s", "report:r")
    fixed_now("2026-11-10T12:00:00Z")
    new = seeded.json("supersede", old, "--object", "channel/deploys")
    assert new["valid_from"] == "2026-11-10T12:00:00Z"
    assert seeded.json("history", old)["fact"]["valid_to"] == "2026-11-10T12:00:00Z"
    assert [f["object"] for f in seeded.json("facts", "release", "--as-of", "2026-11-05")["facts"]] == ["channel/ops"]
    shown = seeded.json("facts", "release", "--as-of", "2026-11-11")["facts"]
    assert [f["object"] for f in shown] == ["channel/deploys"]
    assert lint(seeded)["counts"]["overlap"] == 0


def test_a_replacement_reaching_over_an_older_closed_value_is_refused(fixed_now, seeded):
    first = _confirmed(
        seeded, "environment/staging", "status", "--value", "building", "-s", "report:r", "--valid-from", "2026-01-01"
    )
    second = seeded.json("supersede", first, "--value", "active", "--valid-from", "2026-06-01")["id"]
    line = refused(seeded, "supersede", second, "--value", "retired", "--valid-from", "2026-04-01")
    assert first in line and "takes one value at a time" in line and "2026-06-01" in line
    assert second not in line.split("while")[0]  # the refused replacement is named as such, not by an id
    # Nor may a correction of a value's own start reach back over it.
    line = refused(seeded, "supersede", second, "--valid-from", "2026-05-01")
    assert first in line and second in line


def test_a_replacement_reaching_over_a_planned_value_is_refused(fixed_now, seeded):
    # "building" now, "live" planned from March: both current, one after the other.
    now = _confirmed(
        seeded, "environment/staging", "status", "--value", "building", "-s", "report:r", "--valid-from", "2026-01-01"
    )
    planned = seeded.json("supersede", now, "--value", "live", "--valid-from", "2027-03-01")["id"]
    # Another correction of the value now, reaching past March, would hold beside "live".
    line = refused(seeded, "supersede", now, "--value", "retired", "--valid-from", "2027-06-01")
    assert planned in line and "takes one value at a time" in line and "kg supersede " + planned in line
    line = refused(seeded, "supersede", now, "--value", "paused")
    assert planned in line and "--valid-to 2027-03-01" in line
    line = refused(seeded, "supersede", now, "--valid-to", "2027-05-01")
    assert now in line and planned in line
    # Corrected where it holds, the planned value is replaced, and one value holds at each time.
    seeded("supersede", planned, "--value", "retired", "--valid-from", "2027-06-01")
    assert [f["value"] for f in seeded.json("facts", "staging", "--as-of", "2027-07-01")["facts"]] == ["retired"]
    assert [f["value"] for f in seeded.json("facts", "staging", "--as-of", "2027-04-01")["facts"]] == ["live"]
    assert lint(seeded)["counts"]["overlap"] == 0


@pytest.mark.parametrize("ended", [None, "2027-09-01"])
def test_rejecting_a_planned_value_gives_the_value_it_ended_its_end_back(fixed_now, seeded, ended):
    """Confirming "retired from June" ended "live" in June; rejected, it never follows "live",
    which holds on as it did: with no end, or to the end it had."""
    until = ["--valid-to", ended] if ended else []
    live = _confirmed(
        seeded,
        "environment/staging",
        "status",
        "--value",
        "live",
        "-s",
        "report:r",
        "--valid-from",
        "2026-01-01",
        *until,
    )
    planned = propose(
        seeded, "environment/staging", "status", "--value", "retired", "-s", "report:q", "--valid-from", "2027-06-01"
    )["id"]
    seeded("confirm", planned)
    assert seeded.json("history", live)["fact"]["valid_to"] == "2027-06-01T00:00:00Z"
    said = seeded("reject", planned).stdout
    assert f"{live} holds on" in said
    held = seeded.json("history", live)
    assert held["fact"].get("valid_to") == (f"{ended}T00:00:00Z" if ended else None)
    assert [f["id"] for f in seeded.json("facts", "staging", "--as-of", "2027-07-01")["facts"]] == [live]
    # An end a person gave it since stays: rejecting the value it was first ended for leaves it.
    other = propose(
        seeded, "environment/staging", "status", "--value", "paused", "-s", "report:p", "--valid-from", "2027-06-01"
    )["id"]
    seeded("confirm", other)
    seeded("supersede", live, "--valid-to", "2027-05-01")
    seeded("reject", other)
    assert seeded.json("history", live)["fact"]["valid_to"] == "2027-05-01T00:00:00Z"


def _status_at(kg, moment: str) -> list[str]:
    return [f["value"] for f in kg.json("facts", "staging", "--as-of", moment)["facts"]]


@pytest.mark.parametrize("rejected_first", ["the later", "the earlier"])
@pytest.mark.parametrize("ended", [None, "2027-12-01"])
def test_a_value_ended_for_two_planned_changes_both_rejected_holds_on_as_it_did(
    fixed_now, seeded, ended, rejected_first
):
    """ "live" ended for "retired from June", then for "frozen in May": both rejected, whatever the
    order, "live" stayed ended (in May or June) with no word and nothing true after, where README
    says a planned value rejected gives the value its end back."""
    until = ["--valid-to", ended] if ended else []
    live = _confirmed(seeded, "environment/staging", "status", "--value", "live", "-s", "report:r", *until)
    fixed_now("2026-11-02T09:01:00Z")
    retired = seeded.json("supersede", live, "--value", "retired", "--valid-from", "2027-06-01")["id"]
    fixed_now("2026-11-02T09:02:00Z")
    frozen = seeded.json(
        "supersede", live, "--value", "frozen", "--valid-from", "2027-05-01", "--valid-to", "2027-06-01"
    )["id"]
    assert _status_at(seeded, "2027-05-15") == ["frozen"] and _status_at(seeded, "2027-07-01") == ["retired"]
    fixed_now("2026-11-02T09:03:00Z")
    for fact in (retired, frozen) if rejected_first == "the later" else (frozen, retired):
        seeded("reject", fact)
    assert seeded.json("history", live)["fact"].get("valid_to") == (f"{ended}T00:00:00Z" if ended else None)
    assert _status_at(seeded, "2027-05-15") == _status_at(seeded, "2027-07-01") == ["live"]
    assert lint(seeded)["counts"].get("overlap", 0) == 0


@pytest.mark.parametrize("moved", ["2027-08-01", "2027-04-01"])
def test_a_planned_value_whose_start_is_corrected_takes_the_value_it_follows_along(fixed_now, seeded, moved):
    """ "retired from June" moved to August left "live" ending in June: nothing was true in July, and
    rejecting it then never gave "live" its end back (moved to April, it was refused as an overlap).
    The value ended for it ends where it begins now, and gets its end back when it is rejected."""
    live = _confirmed(seeded, "environment/staging", "status", "--value", "live", "-s", "report:r")
    retired = seeded.json("supersede", live, "--value", "retired", "--valid-from", "2027-06-01")["id"]
    fixed_now("2026-11-02T09:01:00Z")
    said = seeded("supersede", retired, "--valid-from", moved).stdout
    assert f"{live} now ends where it begins, at {moved}T00:00:00Z" in said
    before = "2027-03-15"
    between = "2027-07-01" if moved > "2027-06-01" else "2027-05-01"
    assert _status_at(seeded, before) == ["live"]
    assert _status_at(seeded, between) == (["live"] if moved > "2027-06-01" else ["retired"])
    assert _status_at(seeded, "2027-09-01") == ["retired"]
    assert lint(seeded)["counts"].get("overlap", 0) == 0
    fixed_now("2026-11-02T09:02:00Z")
    seeded("reject", retired)
    assert seeded.json("history", live)["fact"].get("valid_to") is None
    assert _status_at(seeded, "2027-09-01") == ["live"]


def test_a_planned_value_moved_past_another_value_takes_the_one_it_follows_no_further_than_that(fixed_now, seeded):
    """ "live from 2027" moved past "paused in 2028" took "running", which it follows, along to its
    new start: "running" and "paused" true at once in 2028, written without a word, where a
    correction that makes an overlap is refused. The value followed ends where the next begins."""
    running = _confirmed(seeded, "environment/staging", "status", "--value", "running", "-s", "report:r")
    live = seeded.json("supersede", running, "--value", "live", "--valid-from", "2027-01-01")["id"]
    seeded("supersede", live, "--valid-to", "2028-01-01")
    paused = _confirmed(
        *(seeded, "environment/staging", "status", "--value", "paused", "-s", "report:p"),
        *("--valid-from", "2028-01-01", "--valid-to", "2029-01-01"),
    )
    fixed_now("2026-11-02T09:01:00Z")
    note = seeded("supersede", live, "--valid-from", "2029-06-01", "--valid-to", "2030-01-01").stdout
    assert f"{running} now ends where {paused} begins, at 2028-01-01T00:00:00Z" in note
    assert seeded.json("history", running)["fact"]["valid_to"] == "2028-01-01T00:00:00Z"
    assert lint(seeded)["counts"].get("overlap", 0) == 0
    at = ("2027-06-01", "2028-06-01", "2029-03-01", "2029-09-01")
    assert [_status_at(seeded, moment) for moment in at] == [["running"], ["paused"], [], ["live"]]


def test_a_planned_value_moved_past_a_value_that_never_held_takes_the_one_it_follows_past_it(fixed_now, seeded):
    """A value closed at its start (replaced from its first day, the replacement rejected) never
    held: the value followed stopped at its start all the same, and nothing was true for 18 months."""
    running = _confirmed(seeded, "environment/staging", "status", "--value", "running", "-s", "report:r")
    live = seeded.json("supersede", running, "--value", "live", "--valid-from", "2027-01-01")["id"]
    seeded("supersede", live, "--valid-to", "2028-01-01")
    paused = _confirmed(
        *(seeded, "environment/staging", "status", "--value", "paused", "-s", "report:p"),
        *("--valid-from", "2028-01-01", "--valid-to", "2029-01-01"),
    )
    fixed_now("2026-11-02T09:01:00Z")
    stopped = seeded.json(
        "supersede", paused, "--value", "stopped", "--valid-from", "2028-01-01", "--valid-to", "2029-01-01"
    )["id"]
    seeded("reject", stopped)
    fixed_now("2026-11-02T09:02:00Z")
    note = seeded("supersede", live, "--valid-from", "2029-06-01", "--valid-to", "2030-01-01").stdout
    assert f"{running} now ends where it begins, at 2029-06-01T00:00:00Z" in note
    at = ("2028-06-01", "2029-03-01", "2029-09-01")
    assert [_status_at(seeded, moment) for moment in at] == [["running"], ["running"], ["live"]]
    assert lint(seeded)["counts"].get("overlap", 0) == 0


def test_a_planned_value_moved_past_an_end_a_person_gave_keeps_that_end(fixed_now, seeded):
    live = _confirmed(seeded, "environment/staging", "status", "--value", "live", "-s", "report:r")
    retired = seeded.json("supersede", live, "--value", "retired", "--valid-from", "2027-06-01")["id"]
    seeded("supersede", live, "--valid-to", "2027-05-01")  # a person's end: before it, nothing follows
    fixed_now("2026-11-02T09:01:00Z")
    said = seeded("supersede", retired, "--valid-from", "2027-08-01").stdout
    assert "now ends where it begins" not in said
    assert seeded.json("history", live)["fact"]["valid_to"] == "2027-05-01T00:00:00Z"


def test_a_correction_of_one_of_two_values_held_at_once_already_goes_on(fixed_now, seeded, tmp_path):
    """Two values an import confirmed side by side are a contradiction kg lint shows: correcting one
    of them is how a person resolves it, not a new overlap to refuse."""
    path = records_file(
        tmp_path / "two.jsonl",
        *(
            {
                "type": "fact",
                "subject": "process/release",
                "predicate": "purpose",
                "value": value,
                "sources": [f"report:{value}", f"ledger:{value}"],
                "valid_from": "2026-01-01",
            }
            for value in ("ship weekly", "ship daily")
        ),
    )
    seeded.json("import", path, "--apply", "--auto-confirm")
    facts = {f["value"]: f["id"] for f in seeded.json("facts", "release")["facts"]}
    assert set(facts) == {"ship weekly", "ship daily"}
    seeded("supersede", facts["ship weekly"], "--value", "ship on demand")
    assert {f["value"] for f in seeded.json("facts", "release")["facts"]} == {"ship on demand", "ship daily"}


def test_a_source_given_to_a_correction_of_the_valid_time_alone_is_refused_not_dropped(fixed_now, seeded):
    fact = _confirmed(
        seeded, "environment/staging", "status", "--value", "live", "-s", "report:r", "--valid-from", "2025-01-01"
    )
    line = refused(seeded, "supersede", fact, "--valid-from", "2024-06-01", "-s", "ticket:OPS-42", code=2)
    assert "--source" in line and "--reason" in line
    seeded("supersede", fact, "--valid-from", "2024-06-01", "--reason", "started earlier (ticket OPS-42)")
    assert seeded.json("history", fact)["fact"]["valid_from"] == "2024-06-01T00:00:00Z"


def test_lint_reports_values_that_hold_at_once_however_they_came_about(fixed_now, seeded, tmp_path):
    # An import with the auto-confirm rules: two trusted sources of different kinds confirm each,
    # and an automatic confirmation closes nothing.
    path = records_file(
        tmp_path / "two.jsonl",
        {
            "type": "fact",
            "subject": "process/release",
            "predicate": "purpose",
            "value": "ship weekly",
            "sources": ["report:r1", "ledger:l1"],
            "valid_from": "2026-01-01",
            "valid_to": "2026-07-01",
        },
        {
            "type": "fact",
            "subject": "process/release",
            "predicate": "purpose",
            "value": "ship daily",
            "sources": ["report:r2", "ledger:l2"],
            "valid_from": "2026-05-01",
        },
    )
    assert sum(seeded.json("import", path, "--apply", "--auto-confirm")["auto_confirmed"].values()) == 2
    assert {f["status"] for f in seeded.json("facts", "release", "--all")["facts"]} == {"confirmed"}
    found = [f for f in lint(seeded)["findings"] if f["kind"] == "overlap"]
    assert len(found) == 1 and "from 2026-05-01 to 2026-07-01" in found[0]["message"]
    assert found[0]["entities"] == ["process/release"]
    # Its fix, pasted, resolves it.
    seeded(*found[0]["fix"].split()[1:])
    assert lint(seeded)["counts"]["overlap"] == 0


def test_lint_reports_an_overlap_a_confirm_back_in_time_made(fixed_now, seeded):
    first = _confirmed(
        seeded, "process/release", "purpose", "--value", "ship weekly", "-s", "report:r", "--valid-from", "2026-01-01"
    )
    seeded("supersede", first, "--value", "ship daily", "--valid-from", "2026-06-01")
    # A proposal from before that change, confirmed: it replaces the current value from its start.
    late = _confirmed(
        seeded,
        "process/release",
        "purpose",
        "--value",
        "ship on demand",
        "-s",
        "report:q",
        "--valid-from",
        "2026-03-01",
    )
    found = [f for f in lint(seeded)["findings"] if f["kind"] == "overlap"]
    assert [sorted(f["facts"]) for f in found] == [sorted([first, late])]
    assert "from 2026-03-01 to 2026-06-01" in found[0]["message"]
    assert "overlaps: two values" in seeded("lint", expect=1).stdout


# --- f. recorded time never goes backwards ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["add-entity", "repo/late", "--name", "late"],
        ["propose", "repo/api", "caveat", "--value", "x", "-s", "pr:1"],
        ["confirm", "FACT"],
        ["reject", "FACT"],
        ["supersede", "FACT", "--value", "y"],
        ["org", "init", "Fernhill"],
    ],
)
def test_a_clock_behind_the_last_recorded_time_is_refused(fixed_now, seeded, args):
    fixed_now("2026-11-05T10:00:00Z")
    fact = propose(seeded, "repo/api", "caveat", "--value", "old", "-s", "pr:0")
    fixed_now("2026-11-05T09:59:59Z")
    line = refused(seeded, *[fact["id"] if a == "FACT" else a for a in args])
    assert "KGRDF_NOW (2026-11-05T09:59:59Z) is before the last recorded time 2026-11-05T10:00:00Z" in line
    # Reads go on; the same time as the last is no step back.
    assert seeded.json("lookup", "repo/api")["facts"]
    fixed_now("2026-11-05T10:00:00Z")
    seeded(*[fact["id"] if a == "FACT" else a for a in args])


def test_an_import_behind_the_clock_is_refused_too(fixed_now, seeded, tmp_path):
    fixed_now("2026-11-05T10:00:00Z")
    seeded("add-entity", "repo/now", "--name", "now")
    fixed_now("2025-01-01")
    path = records_file(tmp_path / "one.jsonl", FACT)
    assert "recorded time never goes backwards" in refused(seeded, "import", path, "--apply")


def test_a_dry_run_behind_the_clock_is_refused_saying_why_a_dry_run_is(fixed_now, seeded, tmp_path):
    """A dry run answers for the knowledge base as it stands, which holds what was learned after an
    earlier clock (a proposal observed again since, an entity made since): asked with that clock, it
    was refused as a write ("so nothing is written"), which says nothing of why a dry run is."""
    fixed_now("2026-01-01T10:00:00Z")
    propose(seeded, "repo/api", "caveat", "--value", "old", "-s", "pr:0")
    fixed_now("2026-06-01T10:00:00Z")
    seeded("add-entity", "repo/now", "--name", "now")
    before = seeded.snapshot()
    fixed_now("2026-02-15T10:00:00Z")
    path = records_file(tmp_path / "one.jsonl", {"type": "entity", "id": "repo/y", "name": "y"})
    for args in (["expire", "--dry-run"], ["import", path]):
        line = refused(seeded, *args)
        assert "a dry run answers for the knowledge base as it stands" in line, args
        assert "set KGRDF_NOW to 2026-06-01T10:00:00Z or later" in line
    assert "recorded time never goes backwards" in refused(seeded, "expire")
    assert seeded.snapshot() == before
    fixed_now("2026-06-01T10:00:00Z")
    assert seeded.json("expire", "--dry-run")["expired"] == 1


def test_the_last_recorded_time_is_found_behind_a_large_transaction(fixed_now, kg, tmp_path):
    path = records_file(
        tmp_path / "many.jsonl",
        *[{"type": "entity", "id": f"repo/r{i}", "name": f"r{i}", "summary": "x" * 300} for i in range(400)],
    )
    kg("import", path, "--apply")
    fixed_now("2026-11-02T08:59:59Z")
    assert "2026-11-02T09:00:00Z" in refused(kg, "add-entity", "repo/z", "--name", "z")


# --- g. a write goes to a perspective that exists -----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["add-entity", "repo/x", "--name", "x"],
        ["propose", "repo/api", "caveat", "--value", "x", "-s", "pr:1"],
        ["confirm", "f-aaaaaa"],
        ["org", "add", "Acme"],
        ["import", "FILE", "--apply"],
    ],
)
def test_a_write_to_an_unknown_perspective_is_refused_naming_the_known_ones(seeded, tmp_path, args):
    path = records_file(tmp_path / "one.jsonl", {"type": "entity", "id": "repo/y", "name": "y"})
    args = [str(path) if a == "FILE" else a for a in args]
    line = refused(seeded, *args, "--perspective", "mian")
    assert "no perspective 'mian'; known: main" in line and "kg org init NAME --perspective mian" in line


def test_a_perspective_from_the_environment_is_checked_as_well(seeded, monkeypatch):
    before = seeded.snapshot()
    monkeypatch.setenv("KGRDF_PERSPECTIVE", "lyar")
    assert "no perspective 'lyar'" in one_line(seeded("add-entity", "repo/x", "--name", "x", expect=1))
    assert "no perspective 'lyar'" in one_line(seeded("stats", expect=1))  # a read too: never answered empty
    monkeypatch.delenv("KGRDF_PERSPECTIVE")
    assert seeded.snapshot() == before


@pytest.mark.parametrize(
    "argv",
    [
        ["expire"],
        ["expire", "--dry-run"],
        ["lint"],
        ["validate"],
        ["stats"],
        ["search", "web"],
        ["told", "public"],
        ["identifiers", "list"],
        ["facts", "webapp"],
        ["context", "--for", "webapp"],
        ["forget", "person/dana"],  # a person in the wrong perspective is not "not known" (nor forgotten)
        ["forget", "person/dana", "--dry-run"],
    ],
    ids=" ".join,
)
def test_a_perspective_that_is_none_is_refused_by_reads_and_expire_not_answered_empty(seeded, argv):
    """A typo in --perspective: kg expire purged nothing and kg lint, kg validate, kg stats answered
    clean or empty, with exit 0 (a scheduled expire would never have deleted anything)."""
    line = refused(seeded, *argv, "--perspective", "mian")
    assert "no perspective 'mian'; known: main" in line


def test_kg_org_init_provisions_a_perspective_and_then_it_takes_writes(seeded):
    seeded("org", "init", "Lyra Inc", "--perspective", "lyra")
    assert seeded.json("add-entity", "repo/x", "--name", "x", "--perspective", "lyra")["outcome"] == "created"
    assert "known: lyra, main" in refused(seeded, "add-entity", "repo/x", "--name", "x", "--perspective", "lira")
    assert [p["perspective"] for p in seeded.json("perspectives")["perspectives"]] == ["lyra", "main"]


# --- h. an alias names one entity --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, other",
    [
        (["repo/site", "--name", "site", "--alias", "WEB-APP"], "repo/web-app"),  # another's name, any case
        (["repo/site", "--name", "site", "--alias", "  webapp "], "repo/web-app"),  # another's alias, spaced
        (["team/site", "--name", "Site team", "--alias", "dana okafor"], "person/dana"),  # of another type
        (["repo/api", "--name", "api", "--alias", "Release"], "process/release"),  # added to an entity that exists
    ],
)
def test_an_alias_another_entity_goes_by_is_refused_with_its_id(seeded, args, other):
    line = refused(seeded, "add-entity", *args)
    assert other in line and "ambiguous" in line


def test_what_an_alias_may_share(seeded):
    # A weak alias is a related term: it may be shared.
    assert seeded.json("add-entity", "repo/site", "--name", "site", "--weak-alias", "web-app")["outcome"] == "created"
    # An alias its own entity already goes by is no conflict.
    assert seeded.json("add-entity", "repo/web-app", "--name", "web-app", "--alias", "WebApp")["outcome"] == "updated"
    # Another perspective's names are its own.
    seeded("org", "init", "Lyra", "--perspective", "lyra")
    assert (
        seeded.json("add-entity", "repo/w", "--name", "w", "--alias", "webapp", "--perspective", "lyra")["outcome"]
        == "created"
    )


def test_an_import_refuses_an_alias_taken_earlier_in_the_same_file(kg, tmp_path):
    path = records_file(
        tmp_path / "aliases.jsonl",
        {"type": "entity", "id": "team/web", "name": "Web team", "aliases": ["Web"]},
        {"type": "entity", "id": "team/platform", "name": "Platform team", "aliases": ["web"]},
    )
    report = kg.json("import", path, "--apply")
    assert report["refused"] == {"conflict": 1} and report["refusals"][0]["line"] == 2
    assert "team/web" in report["refusals"][0]["message"]


def test_a_merge_hands_the_merged_organizations_names_over(kg):
    kg("add-entity", "organization/texture", "--name", "Texture", "--alias", "Texture HQ")
    kg("add-entity", "organization/texture-inc", "--name", "Texture Inc", "--alias", "texturehq.com")
    kg("org", "merge", "Texture", "Texture Inc")
    assert {"Texture Inc", "texturehq.com"} <= set(kg.json("lookup", "texturehq.com")["entity"]["aliases"])


# --- i. names that hide what they say ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "label, code",
    [
        ("Da\u200bna", "U+200B"),  # zero-width space
        ("Da\u200dna", "U+200D"),  # a zero-width joiner between Latin letters
        ("\u202eanad", "U+202E"),  # right-to-left override
        ("Dana\u2066", "U+2066"),  # left-to-right isolate
        ("Da\u00adna", "U+00AD"),  # soft hyphen
        ("\u3164Dana", "U+3164"),  # Hangul filler, a letter that shows as nothing
        ("Dana\ufeff", "U+FEFF"),  # zero-width no-break space
        ("Da\x1bna", "U+001B"),  # escape
    ],
)
@pytest.mark.parametrize("option", ["--name", "--alias", "--weak-alias"])
def test_a_name_or_alias_hiding_what_it_says_is_refused(kg, label, code, option):
    args = ["--name", "Dana Okafor"] if option != "--name" else []
    line = refused(kg, "add-entity", "person/dana", *args, option, label, code=2)
    assert code in line and "a name must show all it says" in line


def test_an_import_refuses_a_hidden_character_in_a_name(kg, tmp_path):
    path = records_file(tmp_path / "hidden.jsonl", {"type": "entity", "id": "organization/acme", "name": "Ac\u200cme"})
    report = kg.json("import", path, "--apply")
    assert report["refused"] == {"malformed": 1} and "U+200C" in report["refusals"][0]["message"]


def test_joiners_that_spell_a_word_or_an_emoji_are_kept(kg):
    persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"  # a Persian word with a zero-width non-joiner
    assert kg.json("add-entity", "team/fa", "--name", persian)["name"] == persian
    emoji = "Dev \U0001f469\u200d\U0001f4bb"  # woman technologist: an emoji joined by U+200D
    assert kg.json("add-entity", "team/dev", "--name", emoji)["name"] == emoji


def test_lint_reports_names_mixing_look_alike_scripts_and_names_that_fold_into_another(kg):
    kg("add-entity", "organization/acme", "--name", "Acme")
    kg("add-entity", "organization/spoof", "--name", "\u0410\u0441\u043c\u0435")  # all Cyrillic: Асме
    kg("add-entity", "repo/payments", "--name", "payments", "--alias", "p\u03bfyments")  # Greek omicron
    kg("add-entity", "team/wide", "--name", "\uff21\uff43\uff4d\uff45 team")  # fullwidth letters
    kg("add-entity", "team/ok", "--name", "\u042f\u043d\u0434\u0435\u043a\u0441 Cloud")  # two words, two scripts
    found = [f for f in lint(kg)["findings"] if f["kind"] == "look_alike"]
    by_entity = {tuple(f["entities"]): f for f in found}
    assert set(by_entity) == {("organization/spoof", "organization/acme"), ("repo/payments",)}
    spoof = by_entity[("organization/spoof", "organization/acme")]
    assert "looks like 'Acme', a label of organization/acme" in spoof["message"]
    # (renamed "Acme", as the name in one script reads, it would make "Acme" name two entities)
    assert spoof["fix"].startswith("kg propose organization/spoof alias_of --object organization/acme ")
    assert spoof["alternatives"][0].startswith(
        "kg propose organization/spoof distinct_from --object organization/acme "
    )
    assert "U+03BF GREEK SMALL LETTER OMICRON" in by_entity[("repo/payments",)]["message"]
    kg("add-entity", "team/acme", "--name", "ACME team")
    found = [f for f in lint(kg)["findings"] if f["kind"] == "look_alike"]
    assert ["team/wide", "team/acme"] in [f["entities"] for f in found]  # fullwidth, it reads "acme team"
    kg(*shlex.split(spoof["alternatives"][0])[1:])  # two organizations after all: the finding is settled
    found = [f for f in lint(kg)["findings"] if f["kind"] == "look_alike"]
    assert ("organization/spoof", "organization/acme") not in [tuple(f["entities"]) for f in found]
    assert [m["id"] for m in kg.json("identify", "Acme")["matches"]] == ["organization/acme"]


# --- j. a refusal names no fact that does not exist -----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["person/dana", "purpose", "--value", "ship", "-s", "slack:1"],  # off the People whitelist
        ["person/dana", "stated_preference", "--value", "tables", "-s", "slack:1"],  # stated_* not said by them
        ["process/release", "uses", "--object", "person/dana", "-s", "slack:1"],  # a range the schema refuses
    ],
)
def test_a_refused_fact_is_described_not_named_by_an_id_that_was_never_given(seeded, args):
    before = seeded.snapshot()
    result = seeded("propose", *args, "--json", expect=1)
    assert seeded.snapshot() == before
    doc = json.loads(result.stdout)
    assert not re.findall(r"\bf-[a-z2-7]{6}\b", result.stdout + result.stderr), result.stdout
    assert doc["findings"] and all(f["focus"] is None and f["fact"]["created"] is False for f in doc["findings"])
    assert doc["findings"][0]["fact"]["subject"] == args[0] and doc["findings"][0]["fact"]["predicate"] == args[1]
    # The id the refused fact would have had goes to the next fact, which no refusal ever named.
    made = propose(seeded, "repo/api", "caveat", "--value", "next", "-s", "pr:1")
    assert made["id"] not in result.stdout


# --- k. skipping does not use up the day's batch ------------------------------------------------------------


@pytest.fixture
def batch(seeded):
    for value in ("a", "b", "c"):
        propose(seeded, "repo/api", "caveat", "--value", value, "-s", "pr:1")
    seeded("batch")
    return seeded


@pytest.mark.parametrize("decision", ["skip all", "skip 1", "except all", "confirm 1a, skip 1a", "reject 1, skip all"])
def test_a_decision_that_only_defers_leaves_the_batch_open_and_writes_nothing(batch, decision):
    before = batch.snapshot()
    saved = (batch.path / "batch.json").read_text()
    result = batch.json("batch", "apply", decision)
    assert (result["answered"], result["confirmed"], result["rejected"]) == (False, 0, 0)
    assert batch.snapshot() == before and (batch.path / "batch.json").read_text() == saved
    assert "nothing was decided: the batch stays open" in batch("batch", "apply", decision).stdout
    # The same batch is still there to answer.
    answered = batch.json("batch", "apply", "confirm all except 1c")
    assert (answered["answered"], answered["confirmed"], answered["left_proposed"]) == (True, 2, 1)
    assert "was answered" in one_line(batch("batch", "apply", "confirm all", expect=1))
