"""Writing through the CLI: each verb, the rules of §6, and refusals that write nothing."""

import json
import shlex

import pytest

from .conftest import one_line
from .patchlog import journal_bytes


def propose(kg, *args):
    return kg.json("propose", *args)


def test_init_makes_a_knowledge_base_and_refuses_a_second(tmp_path):
    from tests.conftest import Kg

    kg = Kg(tmp_path / "new")
    doc = kg.json("init")
    assert doc["perspective"] == "main"
    assert (tmp_path / "new" / "format.json").is_file()
    assert (tmp_path / "new" / ".git").is_dir()
    again = kg("init", expect=1)
    assert "is a knowledge base already" in again.stderr


def test_command_on_a_missing_knowledge_base_names_the_way_out(tmp_path):
    from tests.conftest import Kg

    result = Kg(tmp_path / "nowhere")("lookup", "x", expect=1)
    assert "no knowledge base at" in result.stderr
    assert "kg init" in result.stderr
    assert "Traceback" not in result.stderr


def test_add_entity_creates_then_adds_aliases(kg):
    first = kg.json("add-entity", "repo/web-app", "--name", "web-app", "--alias", "webapp")
    assert first["outcome"] == "created"
    second = kg.json(
        "add-entity", "repo/web-app", "--name", "web-app", "--alias", "the web app", "--weak-alias", "frontend"
    )
    assert second["outcome"] == "updated"
    assert second["aliases"] == ["the web app", "webapp"]
    assert second["weak_aliases"] == ["frontend"]
    assert kg.json("add-entity", "repo/web-app", "--name", "web-app")["outcome"] == "unchanged"


@pytest.mark.parametrize(
    "args, code, reason",
    [
        (["Person/Dana", "--name", "Dana"], 2, "must be TYPE/NAME"),
        (["wizard/merlin", "--name", "Merlin"], 1, "unknown entity type 'wizard'"),
        (["person/dana", "--name", "Dana", "--summary", "great at everything"], 1, "a person has no summary"),
        (["repo/x", "--name", "   "], 2, "needs a --name"),
    ],
)
def test_add_entity_refusals_write_nothing(kg, args, code, reason):
    before = kg.snapshot()
    result = kg("add-entity", *args, expect=code)
    assert reason in result.stderr
    assert kg.snapshot() == before


def test_identify_resolves_names_and_strong_aliases_and_only_suggests_weak_ones(seeded):
    assert seeded.json("identify", "DANA   okafor")["matches"][0]["id"] == "person/dana"
    assert seeded.json("identify", "webapp")["matches"][0]["id"] == "repo/web-app"
    weak = seeded.json("identify", "backend", expect=1)
    assert weak["matches"] == []
    assert [s["id"] for s in weak["suggestions"]] == ["repo/api"]
    ambiguous = seeded.json("identify", "web", expect=1)
    assert sorted(m["id"] for m in ambiguous["matches"]) == ["team/platform", "team/web"]
    assert seeded.json("identify", "nobody", expect=1)["matches"] == []


def test_propose_records_a_proposal_with_sources_and_both_timelines(seeded):
    doc = propose(
        seeded,
        "Dana",
        "reviews",
        "--object",
        "webapp",
        "--source",
        "slack:https://chat/p1",
        "--valid-from",
        "2026-01-05",
    )
    assert doc["outcome"] == "created"
    assert doc["id"].startswith("f-") and len(doc["id"]) == 8
    assert doc["status"] == "proposed"
    assert doc["subject"] == "person/dana" and doc["object"] == "repo/web-app"
    assert doc["sources"] == [{"kind": "slack", "ref": "https://chat/p1"}]
    assert doc["valid_from"] == "2026-01-05T00:00:00Z"
    assert doc["recorded_at"] and doc["sensitivity"] == "personal"
    assert doc["sentence"] == "Dana Okafor reviews web-app"


def test_proposing_again_observes_instead_of_duplicating(seeded):
    first = propose(seeded, "environment/staging", "status", "--value", "Active", "--source", "report:r1")
    again = propose(seeded, "staging", "status", "--value", "  active ", "--source", "ledger:l9")
    assert again["id"] == first["id"]
    assert again["outcome"] == "observed"
    assert again["observations"] == 2
    assert {s["kind"] for s in again["sources"]} == {"report", "ledger"}
    facts = seeded.json("facts", "environment/staging", "--all")["facts"]
    assert len(facts) == 1


def test_a_rejected_fact_stays_rejected_when_proposed_again(seeded):
    fact = propose(seeded, "process/release", "posts_to", "--object", "channel/ops", "--source", "slack:x")
    assert seeded.json("reject", fact["id"])["status"] == "rejected"
    again = propose(seeded, "release", "posts_to", "--object", "#ops", "--source", "pr:12")
    assert again["id"] == fact["id"]
    assert again["outcome"] == "rejected"
    assert again["status"] == "rejected"
    assert "stays rejected" in again["note"]
    assert seeded.json("lookup", "process/release")["facts"] == []


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_a_value_or_name_in_another_unicode_form_is_the_same(seeded, form):
    import unicodedata

    def typed(text):
        return unicodedata.normalize(form, text)

    other = "NFD" if form == "NFC" else "NFC"
    fact = propose(seeded, "release", "caveat", "--value", typed("the café token expires"), "--source", "slack:x")
    assert seeded.json("reject", fact["id"])["status"] == "rejected"
    again = seeded.json(
        "propose",
        "release",
        "caveat",
        "--value",
        unicodedata.normalize(other, "The CAFÉ token expires"),
        "-s",
        "ledger:L1",
        "-s",
        "report:R1",
    )
    assert again["id"] == fact["id"] and again["status"] == "rejected"
    seeded("add-entity", "person/zoe", "--name", typed("Zoë Éclair"), "--alias", typed("Zoë"))
    entity = seeded.json("lookup", "person/zoe")["entity"]
    assert (entity["name"], entity["aliases"]) == ("Zoë Éclair", ["Zoë"])  # kept in NFC, however typed
    for name in ("Zoë Éclair", "zoë"):
        for spelled in (unicodedata.normalize("NFC", name), unicodedata.normalize("NFD", name)):
            assert seeded.json("identify", spelled)["matches"][0]["id"] == "person/zoe", spelled
            assert "person/zoe" in [e["id"] for e in seeded.json("search", spelled)["results"]], spelled
            assert seeded.json("mentions", f"ask {spelled} first")["mentions"][0]["entities"][0]["id"] == "person/zoe"
    refused = seeded(
        "add-entity", "person/zed", "--name", "Zed", "--alias", unicodedata.normalize(other, "Zoë"), expect=1
    )
    assert "person/zoe" in one_line(refused)  # one alias, however it was typed


def test_confirming_a_single_valued_fact_closes_the_value_it_replaces(seeded):
    old = propose(seeded, "release", "entry_point", "--object", "channel/ops", "--source", "report:a")
    seeded("confirm", old["id"])
    new = propose(seeded, "release", "entry_point", "--object", "channel/deploys", "--source", "report:b")
    # Two current values of a single-valued predicate until a person decides.
    assert len(seeded.json("facts", "release", "--predicate", "entry_point")["facts"]) == 2
    confirmed = seeded.json("confirm", new["id"])
    assert confirmed["closed"] == [{"id": old["id"], "superseded_by": new["id"]}]
    closed = seeded.json("history", old["id"])["fact"]
    assert closed["superseded_by"] == new["id"]
    assert closed["valid_to"] and closed["retired_at"]
    assert closed["status"] == "confirmed"  # closed, never deleted
    current = seeded.json("facts", "release", "--predicate", "entry_point")["facts"]
    assert [f["id"] for f in current] == [new["id"]]


def test_confirming_a_fact_of_a_multi_valued_predicate_closes_nothing(seeded):
    a = propose(seeded, "person/dana", "reviews", "--object", "repo/api", "--source", "report:a")
    b = propose(seeded, "person/dana", "reviews", "--object", "repo/web-app", "--source", "report:a")
    seeded("confirm", a["id"])
    assert seeded.json("confirm", b["id"]).get("closed", []) == []
    assert len(seeded.json("facts", "person/dana")["facts"]) == 2


def test_confirm_twice_reconfirms_and_reject_twice_is_harmless(seeded, monkeypatch):
    monkeypatch.setenv("KGRDF_NOW", "2026-11-01T09:00:00Z")
    fact = propose(seeded, "repo/api", "caveat", "--value", "slow tests", "--source", "pr:4")
    monkeypatch.setenv("KGRDF_NOW", "2026-11-01T10:00:00Z")
    seeded("confirm", fact["id"])
    monkeypatch.setenv("KGRDF_NOW", "2026-11-20T10:00:00Z")
    again = seeded.json("confirm", fact["id"])
    assert (again["outcome"], again["status"]) == ("reconfirmed", "confirmed")
    assert again["last_confirmed_at"] == "2026-11-20T10:00:00Z"
    other = propose(seeded, "repo/api", "caveat", "--value", "flaky", "--source", "pr:5")
    seeded("reject", other["id"])
    assert seeded.json("reject", other["id"])["outcome"] == "unchanged"


def test_supersede_records_a_confirmed_correction_and_closes_the_old_fact(seeded):
    old = propose(seeded, "environment/staging", "status", "--value", "active", "--source", "report:r")
    seeded("confirm", old["id"])
    new = seeded.json(
        "supersede", old["id"], "--value", "retired", "--valid-from", "2026-09-30", "--reason", "staging was shut down"
    )
    assert new["status"] == "confirmed" and new["value"] == "retired"
    assert new["closed"] == [{"id": old["id"], "superseded_by": new["id"]}]
    history = seeded.json("history", old["id"])
    assert history["fact"]["valid_to"] == "2026-09-30T00:00:00Z"
    close = history["history"][-1]
    assert close["action"] == "close"
    assert close["changes"]["superseded_by"] == {"before": [], "after": [new["id"]]}
    # The old value is what was true before the change, the new one after it.
    before = seeded.json("facts", "staging", "--as-of", "2026-09-01")["facts"]
    after = seeded.json("facts", "staging", "--as-of", "2026-10-01")["facts"]
    assert [f["value"] for f in before] == ["active"]
    assert [f["value"] for f in after] == ["retired"]
    refused = seeded("supersede", old["id"], "--value", "again", expect=1)
    assert "not current" in refused.stderr


@pytest.mark.parametrize("held_from", [None, "2025-02-01"])
def test_superseding_onto_a_value_held_beside_it_ends_the_old_one_and_leaves_the_other_as_it_was(
    seeded, monkeypatch, held_from
):
    monkeypatch.setenv("KGRDF_NOW", "2025-03-01T00:00:00Z")
    two = ("-s", "ledger:L1", "-s", "report:R1")  # confirmed at once: uses holds several values
    since = ("--valid-from", held_from) if held_from else ()
    kept = seeded.json("propose", "release", "uses", "--object", "repo/api", *two, *since)
    old = seeded.json(
        "propose", "release", "uses", "--object", "webapp", *two, *(("--valid-from", "2025-02-15") if held_from else ())
    )
    assert kept["status"] == old["status"] == "confirmed"
    monkeypatch.setenv("KGRDF_NOW", "2025-06-01T00:00:00Z")
    new = seeded.json("supersede", old["id"], "--object", "repo/api")
    assert new["id"] == kept["id"] and new["closed"] == [{"id": old["id"], "superseded_by": kept["id"]}]
    after = seeded.json("history", kept["id"])
    assert after["fact"].get("valid_from") == (f"{held_from}T00:00:00Z" if held_from else None)
    assert all(h["action"] != "retime" for h in after["history"])
    assert seeded.json("history", old["id"])["fact"]["valid_to"] == "2025-06-01T00:00:00Z"  # it held until now
    between = seeded.json("facts", "release", "--as-of", "2025-04-01")["facts"]
    assert sorted(f["object"] for f in between) == ["repo/api", "repo/web-app"]


def _lint_counts(kg) -> dict:
    """kg lint --json's counts (it exits 1 on any finding: the seeded entities in no fact are orphans)."""
    from kgrdf.cli import app

    from .conftest import runner

    result = runner.invoke(app, ["lint", "--json", "--kb", str(kg.path)])
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)["counts"]


def test_a_replacement_that_begins_later_leaves_the_old_value_true_until_it_begins(seeded, monkeypatch):
    """Superseded on February 1st by a value from March 1st, the old value holds until March 1st,
    confirmed and not retired (a planned change, not a closing): no day has no value, none two."""
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T00:00:00Z")
    old = propose(
        seeded, "staging", "status", "--value", "active", "--source", "report:r", "--valid-from", "2025-06-01"
    )
    seeded("confirm", old["id"])
    monkeypatch.setenv("KGRDF_NOW", "2026-02-01T00:00:00Z")
    shown = seeded("supersede", old["id"], "--value", "deprecated", "--valid-from", "2026-03-01")
    history = seeded.json("history", old["id"])
    new_id = next(f["id"] for f in seeded.json("facts", "staging", "--all")["facts"] if f["value"] == "deprecated")
    assert f"{old['id']} holds until 2026-03-01T00:00:00Z, when {new_id} begins" in shown.stdout
    assert "closed" not in shown.stdout and shown.stderr == ""
    held = history["fact"]
    assert held["status"] == "confirmed" and held["valid_to"] == "2026-03-01T00:00:00Z"
    assert "superseded_by" not in held and "retired_at" not in held
    ended = history["history"][-1]
    assert new_id in ended["reason"] and "begins" in ended["reason"]
    assert ended["changes"] == {"valid_to": {"before": [], "after": ["2026-03-01T00:00:00Z"]}}
    monkeypatch.setenv("KGRDF_NOW", "2026-02-02T00:00:00Z")

    def values(*args):
        return [f["value"] for f in seeded.json("facts", "staging", *args)["facts"]]

    assert values() == values("--as-of", "2026-02-15") == values("--as-of", "2026-02-28T23:59:59Z") == ["active"]
    assert values("--as-of", "2026-03-01") == values("--as-of", "2026-03-15") == ["deprecated"]
    assert [f["value"] for f in seeded.json("lookup", "staging")["facts"]] == ["active"]
    assert _lint_counts(seeded)["contradiction"] == _lint_counts(seeded)["overlap"] == 0
    assert "clean" in seeded("validate").stdout  # no warning of two values either
    monkeypatch.setenv("KGRDF_NOW", "2026-03-02T00:00:00Z")
    assert [f["value"] for f in seeded.json("lookup", "staging")["facts"]] == ["deprecated"]
    assert _lint_counts(seeded)["contradiction"] == _lint_counts(seeded)["overlap"] == 0


def test_a_replacement_that_begins_later_as_json_lists_nothing_closed(seeded, monkeypatch):
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T00:00:00Z")
    old = propose(seeded, "release", "entry_point", "--object", "channel/ops", "--source", "report:a")
    seeded("confirm", old["id"])
    new = seeded.json("supersede", old["id"], "--object", "channel/deploys", "--valid-from", "2026-03-01")
    assert "closed" not in new  # (nothing was)
    assert new["note"] == f"{old['id']} holds until 2026-03-01T00:00:00Z, when {new['id']} begins"
    assert seeded.json("history", old["id"])["fact"]["valid_to"] == "2026-03-01T00:00:00Z"


def test_a_correction_carries_the_order_and_prevents_rework_over(seeded):
    seeded("add-entity", "step/build", "--name", "Build")
    seeded("add-entity", "step/canary", "--name", "Canary")
    step = propose(seeded, "release", "has_step", "--object", "step/build", "--order", "2", "--source", "report:r")
    seeded("confirm", step["id"])
    moved = seeded.json("supersede", step["id"], "--object", "step/canary")
    assert (moved["object"], moved["order"]) == ("step/canary", 2)
    rule = propose(seeded, "release", "rule", "--value", "no deploys on Friday", "--prevents-rework", "-s", "doc:d")
    seeded("confirm", rule["id"])
    said = seeded.json("supersede", rule["id"], "--value", "no deploys on Friday or Saturday")
    assert said["prevents_rework"] is True
    assert seeded.json("history", said["id"])["fact"]["prevents_rework"] is True
    # An order the correction gives is the replacement's.
    again = seeded.json("supersede", moved["id"], "--object", "step/build", "--order", "3")
    assert again["order"] == 3


def test_a_value_whose_correction_was_rejected_is_refused_with_a_way_out_that_works(seeded):
    old = propose(seeded, "staging", "status", "--value", "v1 (blue)", "--source", "report:r")
    seeded("confirm", old["id"])
    new = seeded.json("supersede", old["id"], "--value", "v2")
    seeded("reject", new["id"])
    before = seeded.snapshot()
    line = one_line(seeded("confirm", old["id"], expect=1))
    assert f"superseded by {new['id']}, which was rejected" in line
    assert f"confirm {new['id']}" not in line
    assert seeded.snapshot() == before
    way_out = line.split("propose it anew: ")[1].split(", then")[0]
    args = shlex.split(way_out.replace("KIND:REF", "report:r2"))
    assert args[:2] == ["kg", "propose"]
    again = seeded.json(*args[1:])
    seeded("confirm", again["id"])
    assert [f["value"] for f in seeded.json("facts", "staging")["facts"]] == ["v1 (blue)"]


def test_rejecting_a_correction_says_the_value_it_closed_stays_closed_and_how_to_hold_it_again(seeded):
    """A correction rejected left nothing current, silently, kg lint too: the value it closed is not
    reopened (a closed fact stays closed, on every replica); the rejection now says so, with the way
    back, and kg lint reports the value lost until a current fact says it again."""
    old = propose(seeded, "staging", "status", "--value", "green", "--source", "report:r")
    seeded("confirm", old["id"])
    new = seeded.json("supersede", old["id"], "--value", "amber")
    rejected = seeded.json("reject", new["id"])
    assert f"{old['id']}, which it replaced, stays closed" in rejected["note"], rejected
    lost = [f for f in seeded.json("lint", expect=1)["findings"] if f["kind"] == "lost"]
    assert [(f["facts"], f["fix"]) for f in lost] == [
        ([old["id"]], f"kg propose environment/staging status --value green --source user:kg-lint --kb {seeded.path}")
    ]
    way_out = rejected["note"].split("to hold its value again: ")[1].split(", then")[0]
    again = seeded.json(*shlex.split(way_out.replace("KIND:REF", "report:r3"))[1:])
    assert again["id"] != old["id"] and again["value"] == "green"
    assert not [f for f in seeded.json("lint", expect=1)["findings"] if f["kind"] == "lost"]  # (orphans)
    seeded("confirm", again["id"])
    assert [f["value"] for f in seeded.json("facts", "staging")["facts"]] == ["green"]
    seeded("supersede", again["id"], "--value", "red")  # a person moves on: the old loss is no finding
    assert not [f for f in seeded.json("lint", expect=1)["findings"] if f["kind"] == "lost"]


def test_update_records_keep_what_each_field_held_before(seeded):
    fact = propose(seeded, "repo/api", "caveat", "--value", "needs staging db", "--source", "pr:1")
    propose(seeded, "repo/api", "caveat", "--value", "needs staging db", "--source", "doc:wiki")
    seeded("confirm", fact["id"], "--reason", "checked with the team")
    events = seeded.json("history", fact["id"])["history"]
    assert [e["action"] for e in events] == ["recorded", "observe", "confirm"]
    observe, confirm = events[1], events[2]
    assert events[0]["changes"] == {"sources": {"added": ["pr:1"]}}  # the sources it was recorded with
    assert observe["changes"]["observations"] == {"before": [1], "after": [2]}
    assert observe["changes"]["sources"] == {"added": ["doc:wiki"]}  # what it added, not all it held
    assert confirm["changes"]["status"] == {"before": ["proposed"], "after": ["confirmed"]}
    assert confirm["reason"] == "checked with the team"


@pytest.mark.parametrize(
    "args, code, reason",
    [
        (["repo/api", "colour", "--value", "blue", "--source", "pr:1"], 1, "unknown predicate 'colour'"),
        (["nobody", "reviews", "--object", "repo/api", "--source", "pr:1"], 1, "subject 'nobody' is not known"),
        (["Dana", "reviews", "--object", "web", "--source", "pr:1"], 1, "object 'web' is ambiguous"),
        (["Dana", "reviews", "--object", "backend", "--source", "pr:1"], 1, "did you mean repo/api"),
        (
            ["repo/api", "caveat", "--value", "x", "--source", "pr:1", "--valid-from", "last tuesday"],
            2,
            "is not a date",
        ),
        (["repo/api", "caveat", "--value", "x", "--source", "pr:1", "--valid-from", "2026-02-30"], 2, "is not a date"),
        (
            [
                "repo/api",
                "caveat",
                "--value",
                "x",
                "--source",
                "pr:1",
                "--valid-from",
                "2026-05-01",
                "--valid-to",
                "2026-04-01",
            ],
            2,
            "is after --valid-to",
        ),
        (["repo/api", "caveat", "--value", "x"], 2, "at least one --source"),
        (["repo/api", "caveat", "--value", "x", "--source", "carrier-pigeon:7"], 2, "unknown source kind"),
        (["repo/api", "caveat", "--value", "x", "--source", "nocolon"], 2, "must be KIND:REF"),
        (["Dana", "reviews", "--value", "repo/api", "--source", "pr:1"], 1, "takes an entity (--object)"),
        (["repo/api", "caveat", "--object", "repo/web-app", "--source", "pr:1"], 1, "takes a value (--value)"),
        (["repo/api", "caveat", "--source", "pr:1"], 2, "exactly one of --object"),
        (["Dana", "caveat", "--value", "moody", "--source", "pr:1"], 1, "not on the People whitelist"),
        (
            ["Dana", "reviews", "--object", "repo/api", "--source", "pr:1", "--authority", "inferred"],
            1,
            "authority inferred may not name a person",
        ),
        *(
            (["repo/api", "caveat", "--value", *said, "--authority", "inferred"], 1, "may not name a person")
            for said in (  # (SPEC §4: a text naming a person makes the fact personal, SPEC §3)
                ("ask Dana Okafor first", "--source", "pr:1"),
                ("ask first", "--source", "pr:1", "--reason", "dana said so"),
                ("ask first", "--source", "doc:notes-of-dana-okafor"),
                ("ask first", "--source", "doc:1", "--audience", "channel:dana"),
                ("ask first", "--source", "doc:1", "--audience", "dm:dana"),  # a conversation of people
                ("ask first", "--source", "doc:1", "--audience", "dm:jo,sam"),
                ("ask first", "--source", "doc:1", "--said-by", "Dana", "--message", "slack:1"),  # said by one
            )
        ),
        (["repo/api", "member_of", "--object", "team/web", "--source", "pr:1"], 1, "member_of is not about a repo"),
        (
            ["process/release", "posts_to", "--object", "repo/api", "--source", "pr:1"],
            1,
            "posts_to does not point to a repo",
        ),
        (  # the type's article as a sentence has it
            ["environment/staging", "member_of", "--object", "team/web", "--source", "pr:1"],
            1,
            "member_of is not about an environment",
        ),
        (
            ["person/dana", "member_of", "--object", "environment/staging", "--source", "pr:1"],
            1,
            "member_of does not point to an environment",
        ),
        (["repo/api", "caveat", "--value", "x", "--source", "pr:1", "--authority", "rumour"], 2, "unknown authority"),
    ],
)
def test_bad_proposals_are_refused_with_a_reason_and_write_nothing(seeded, args, code, reason):
    before = seeded.snapshot()
    result = seeded("propose", *args, expect=code)
    assert reason in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert seeded.snapshot() == before


def test_refusals_print_one_json_document_with_json(seeded):
    result = seeded("propose", "repo/api", "colour", "--value", "blue", "--source", "pr:1", "--json", expect=1)
    doc = json.loads(result.stdout)
    assert doc["error"] == "refused" and "unknown predicate" in doc["message"]


@pytest.mark.parametrize("verb", ["confirm", "reject", "history"])
def test_unknown_or_malformed_fact_ids(seeded, verb):
    assert "no fact f-zzzzzz" in seeded(verb, "f-zzzzzz", expect=1).stderr
    assert "is not a fact id" in seeded(verb, "fact-1", expect=2).stderr


def test_every_write_is_one_journal_transaction_and_one_commit(seeded):
    before = seeded.snapshot()
    propose(seeded, "repo/api", "caveat", "--value", "x", "--source", "pr:1")
    after = seeded.snapshot()
    assert int(after["commits"]) == int(before["commits"]) + 1
    view = json.loads((seeded.path / "view.json").read_text())
    assert view["seq"] == json.loads(before["view"])["seq"] + 1
    text = journal_bytes(seeded.path / "journal").decode()
    assert text.count("TX .") == text.count("TC .") == view["seq"]


def test_a_write_that_reads_for_an_audience_keeps_its_own_operations(seeded):
    """A writer is a reader too (kgrdf.writer over kgrdf.session): reading for an audience (here the
    owner's, who may hear all) keeps what it may hear under a name of its own, not one of the
    writer's operations."""
    from kgrdf.kb import KnowledgeBase
    from kgrdf.writer import Heard

    kb = KnowledgeBase.open(seeded.path)
    with kb.writing("test") as writer:
        writer.hear_as("owner")
        outcome = writer.propose(
            "repo/api", "caveat", value="flaky on Mondays", sources=["slack:m1"], heard=Heard("channel:sales")
        )
    assert outcome.action == "created"
    shown = seeded.json("lookup", "repo/api", "--audience", "channel:sales")["facts"]
    assert [f["value"] for f in shown if f["id"] == outcome.fact.id] == ["flaky on Mondays"]


# --- an entity's change, worked out from what changed ------------------------------------------------


def _entities():
    from hypothesis import strategies as st

    from kgrdf import model

    labels = st.sampled_from(["Api", "api", "API  ", "the api", "The API", "svc", "Backend", "backend", "x"])
    return st.builds(
        model.Entity,
        id=st.just("organization/acme"),
        iri=st.just("https://kgrdf.org/kb/main/organization/acme"),
        type=st.just("organization"),
        name=labels,
        aliases=st.lists(labels, unique=True).map(sorted),
        weak_aliases=st.lists(labels, unique=True).map(sorted),
        summary=st.sampled_from([None, "", "a summary", "another"]),
        is_self=st.booleans(),
        merged_into=st.sampled_from([None, "https://kgrdf.org/kb/main/organization/other"]),
    )


def test_an_entitys_change_is_the_difference_of_its_two_descriptions():
    """model.entity_change, which looks at what changed alone, gives exactly the quads that the two
    descriptions differ by, in any sequence of changes (its keys handed on from change to change),
    labels that share a match key included."""
    from hypothesis import given
    from hypothesis import strategies as st

    from kgrdf import model, schema

    core = schema.core()

    @given(st.lists(_entities(), min_size=2, max_size=6))
    def check(steps):
        for old, new in zip(steps, steps[1:], strict=False):
            deletes, adds = model.entity_change(old, new, "main", core)
            before = {str(q) for q in model.entity_quads(old, "main", core)}
            after = {str(q) for q in model.entity_quads(new, "main", core)}
            assert sorted(map(str, deletes)) == sorted(before - after)
            assert sorted(map(str, adds)) == sorted(after - before)

    check()


def test_an_entity_given_an_alias_a_record_costs_each_record_its_own_alias(kg, tmp_path, monkeypatch):
    """An import that adds one alias a record to one entity looks at each alias a few times, not at
    every alias before it for every record (1,000 records took 18 s; 4,000 over five minutes);
    the entity then goes by each, and the index holds what the journal does."""
    from kgrdf import model

    keyed = []
    match_key = model.match_key
    monkeypatch.setattr(model, "match_key", lambda text: keyed.append(1) or match_key(text))
    n = 400
    records = [{"type": "entity", "id": "repo/api", "name": "api", "aliases": [f"api alias {i}"]} for i in range(n)]
    records += [
        {"type": "entity", "id": "repo/api", "name": "api", "weak_aliases": [f"api weak {i}"]} for i in range(n)
    ]
    path = tmp_path / "aliases.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    assert kg.json("import", path, "--apply")["entities"] == {"created": 1, "updated": 2 * n - 1}
    assert len(keyed) < 20 * n, len(keyed)  # before: 240k
    monkeypatch.undo()
    assert kg.json("identify", "API ALIAS 123")["matches"][0]["id"] == "repo/api"
    entity = kg.json("lookup", "api")["entity"]
    assert len(entity["aliases"]) == n and len(entity["weak_aliases"]) == n
    assert "the index matches the journal" in kg("validate").stdout


def test_a_fact_naming_a_person_added_since_is_read_again_when_a_person_confirms_it(seeded):
    """The person a fact names added after it was proposed: confirming an inference that names them
    went through (kg validate clean), and a fact naming them stayed internal, so that retention
    never came for it. A confirmation reads the fact's texts as a proposal would now."""
    inferred = seeded.json(
        "propose",
        "repo/api",
        "caveat",
        "--value",
        "slow when Rui Costa deploys",
        "-s",
        "doc:1",
        "--authority",
        "inferred",
    )["id"]
    observed = seeded.json("propose", "repo/api", "caveat", "--value", "rui costa owns the runbook", "-s", "doc:2")[
        "id"
    ]
    control = seeded.json("propose", "repo/api", "caveat", "--value", "the runbook is old", "-s", "doc:3")["id"]
    seeded("add-entity", "person/rui", "--name", "Rui Costa")
    before = seeded.snapshot()
    refused = one_line(seeded("confirm", inferred, expect=1))
    assert f"{inferred} names a person known since it was proposed" in refused and f"kg reject {inferred}" in refused
    assert seeded.snapshot() == before
    seeded("reject", inferred)  # the way out it names
    for fact, sensitivity in ((observed, "personal"), (control, "internal")):
        seeded("confirm", fact)
        assert seeded.json("history", fact)["fact"]["sensitivity"] == sensitivity


def test_an_inferred_fact_observed_with_a_source_naming_a_person_is_observed_no_longer_inferred(seeded):
    """An inference seen since with a source that names a person names a person: kept as inferred,
    it would break the rule that an inferred fact never names one (SPEC §4), so its authority
    becomes what was seen; a second inference naming the person is refused, writing nothing."""
    made = seeded.json("propose", "repo/api", "caveat", "--value", "slow", "-s", "doc:1", "--authority", "inferred")
    before = seeded.snapshot()
    assert "may not name a person" in one_line(
        seeded(
            "propose", "repo/api", "caveat", "--value", "slow", "-s", "doc:dana", "--authority", "inferred", expect=1
        )
    )
    assert seeded.snapshot() == before
    for heard in (["--audience", "dm:jo,sam"], ["--said-by", "Dana", "--message", "slack:7"]):
        again = seeded(
            "propose",
            "repo/api",
            "caveat",
            "--value",
            "slow",
            "-s",
            "doc:2",
            "--authority",
            "inferred",
            *heard,
            expect=1,
        )
        assert "may not name a person" in one_line(again)
    assert seeded.snapshot() == before
    seeded("propose", "repo/api", "caveat", "--value", "slow", "-s", "doc:notes-of-dana")
    after = seeded.json("history", made["id"])["fact"]
    assert (after["authority"], after["sensitivity"]) == ("observed", "personal")
    report = seeded.json("validate")
    assert report["damage"] == [] and not [f for f in report["findings"] if "inferred" in f["message"]]
    # and an import says so as the whitelist's refusal, as for a person as subject or object
    records = seeded.path.parent / "inferred.jsonl"
    records.write_text(
        json.dumps(
            {
                "type": "fact",
                "subject": "repo/api",
                "predicate": "caveat",
                "value": "fragile",
                "authority": "inferred",
                "reason": "Dana Okafor thinks so",
                "sources": ["doc:2"],
            }
        )
        + "\n"
    )
    assert [r["reason"] for r in seeded.json("import", records, "--apply")["refusals"]] == ["whitelist"]


@pytest.mark.parametrize("heard", [["--said-by", "Dana"], ["--audience", "dm:jo,sam"]], ids=["said", "dm"])
def test_who_said_a_fact_and_where_it_was_heard_make_its_records_private_not_a_fact_about_them(seeded, heard):
    """The auto-confirm rules and retention read what a fact names in its own words (README): a
    fact about a repo said by Dana, or heard in a private conversation, is confirmed by two trusted
    sources of different kinds and is no person fact, while its records go to the private journal,
    where kg forget reaches them."""
    made = seeded.json(
        "propose", "repo/api", "caveat", "--value", "mkcaveat", "-s", "ledger:1", "-s", "report:1", *heard
    )
    assert made["status"] == "confirmed"
    assert seeded.json("history", made["id"])["fact"]["sensitivity"] == "internal"
    journals = [folder for folder in (seeded.path / "journal").iterdir() if folder.is_dir()]
    shared = b"".join(journal_bytes(folder) for folder in journals if folder.name != "local")
    assert made["id"].encode() in journal_bytes(seeded.path / "journal" / "local")
    assert made["id"].encode() not in shared


@pytest.mark.parametrize(
    "heard",
    [["--audience", "dm:kim,owner"], ["--said-by", "Kim"], ["-s", "doc:kim-lee-notes"]],
    ids=["dm", "speaker", "source"],
)
def test_an_inference_naming_a_person_does_not_bring_an_expired_fact_back(kg, monkeypatch, heard):
    """An expired fact proposed again as an inference heard from a person (in a DM, said by them)
    was revived, inferred, and could be confirmed so: the refusal a new fact meets came after the
    revival. It is refused the same, and nothing is written."""
    monkeypatch.setenv("KGRDF_NOW", "2027-03-02T09:00:00Z")
    kg("add-entity", "repo/api", "--name", "api")
    kg("add-entity", "person/kim", "--name", "Kim Lee", "--alias", "Kim")
    fact = kg.json("propose", "api", "caveat", "--value", "slow", "--authority", "inferred", "-s", "doc:notes")["id"]
    monkeypatch.setenv("KGRDF_NOW", "2027-04-15T09:00:00Z")
    kg("expire")
    before = kg.snapshot()
    again = kg(
        "propose", "api", "caveat", "--value", "slow", "--authority", "inferred", "-s", "doc:n2", *heard, expect=1
    )
    assert "may not name a person" in one_line(again)
    assert kg.snapshot() == before
    assert kg.json("history", fact)["fact"]["status"] == "expired"
