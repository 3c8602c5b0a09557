"""Capture: the user's own words verified in a transcript, the auto-confirm rules, expiry (§6)."""

import json
import shlex

import pytest

from kgrdf import transcript
from kgrdf.errors import BadInput

from .conftest import one_line


def write_transcript(path, *records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def user(content):
    return {"type": "user", "message": {"role": "user", "content": content}}


def assistant(text):
    return {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}


QUOTE = "deploys are announced in #deploys"


# --- the transcript -----------------------------------------------------------------------------------


def test_a_quote_in_a_user_prompt_is_verified_ignoring_case_and_spaces(tmp_path):
    path = write_transcript(tmp_path / "s.jsonl", user("FYI: Deploys are   announced\nin #deploys, always."))
    verdict = transcript.verify(QUOTE, path)
    assert verdict.verified, verdict.reason


def test_a_quote_in_a_text_part_of_a_user_message_is_verified(tmp_path):
    path = write_transcript(tmp_path / "s.jsonl", user([{"type": "text", "text": "remember: " + QUOTE}]))
    assert transcript.verify(QUOTE, path).verified


def test_the_plain_role_form_counts_and_other_roles_do_not(tmp_path):
    plain = write_transcript(tmp_path / "a.jsonl", {"role": "user", "content": QUOTE})
    assert transcript.verify(QUOTE, plain).verified
    other = write_transcript(
        tmp_path / "b.jsonl",
        {"role": "assistant", "content": QUOTE},
        {"role": "tool", "content": QUOTE},
        {"role": "system", "content": QUOTE},
        {"role": "user", "content": "something else entirely"},
    )
    verdict = transcript.verify(QUOTE, other)
    assert not verdict.verified and "not in any of the 1 user prompts" in verdict.reason


def test_an_assistant_turn_is_not_the_users_words(tmp_path):
    path = write_transcript(tmp_path / "s.jsonl", user("where do deploys go?"), assistant(QUOTE))
    assert not transcript.verify(QUOTE, path).verified


@pytest.mark.parametrize(
    "record",
    [
        user([{"type": "tool_result", "tool_use_id": "t1", "content": QUOTE}]),
        user([{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": QUOTE}]}]),
        {**user(QUOTE), "toolUseResult": {"stdout": QUOTE}},
        {**user(QUOTE), "isMeta": True},
        {**user(QUOTE), "isSidechain": True},
        {"type": "response_item", "payload": {"type": "function_call_output", "output": QUOTE}},
        {**user(f"This session is being continued. Summary: the user said {QUOTE}"), "isCompactSummary": True},
        {**user(QUOTE), "isVisibleInTranscriptOnly": True},
        user(f"<local-command-stdout>{QUOTE}</local-command-stdout>"),
        user([{"type": "text", "text": f"ran it <BASH-STDOUT>\n{QUOTE}\n</bash-stdout> ok"}]),
        user(f"<system-reminder>\n{QUOTE}\n</system-reminder>"),
        user(f"<user-prompt-submit-hook>{QUOTE}"),  # left open: to the end
        user(f"<bash-input>cat notes.txt</bash-input><bash-stdout>ok\n</bash-stdout>{QUOTE}\n</bash-stdout>"),
        user(f"<system-reminder>a <system-reminder>b</system-reminder> {QUOTE} </system-reminder>"),
        user(
            [
                {
                    "type": "text",
                    "text": f"<ide_selection>The user selected the lines 1 to 2:\n{QUOTE}</ide_selection>",
                },
                {"type": "text", "text": "what does this mean?"},
            ]
        ),
        user(f"<ide_opened_file>The user opened notes.md: {QUOTE}</ide_opened_file> hi"),
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"<user_instructions>\n{QUOTE}\n</user_instructions>"}],
            },
        },
    ],
    ids=[
        "tool-result-string",
        "tool-result-parts",
        "tool-use-result",
        "meta",
        "sidechain",
        "function-output",
        "compaction-summary",
        "transcript-only",
        "command-output",
        "bash-output-part",
        "reminder",
        "hook-left-open",
        "output-closing-its-own-tag",
        "nested-blocks",
        "editor-selection",
        "editor-open-file",
        "agent-instructions",
    ],
)
def test_tool_results_and_harness_text_are_not_the_users_words(tmp_path, record):
    path = write_transcript(tmp_path / "s.jsonl", user("hello"), record)
    assert not transcript.verify(QUOTE, path).verified


def test_the_users_words_beside_a_harness_block_still_count(tmp_path):
    path = write_transcript(
        tmp_path / "s.jsonl",
        user(f"<local-command-stdout>build ok</local-command-stdout>\nremember: {QUOTE}"),
    )
    assert transcript.verify(QUOTE, path).verified
    across = write_transcript(
        tmp_path / "t.jsonl", user("deploys are <bash-stdout>x</bash-stdout> announced in #deploys")
    )
    assert not transcript.verify(QUOTE, across).verified  # a quote is the user's words whole, not joined across


def test_a_fact_quoted_from_a_compaction_summary_stays_proposed(kg, tmp_path):
    kg("add-entity", "person/dana", "--name", "Dana Okafor", "--alias", "Dana")
    kg("add-entity", "repo/web", "--name", "web")
    path = write_transcript(
        tmp_path / "s.jsonl",
        user("hello"),
        {**user("Summary so far: the user said Dana approves every change to web"), "isCompactSummary": True},
    )
    made = kg.json(
        "propose",
        "Dana",
        "approves",
        "--object",
        "web",
        "--from-user",
        "--quote",
        "Dana approves every change",
        "--transcript",
        path,
    )
    assert made["status"] == "proposed"


def test_the_response_item_form_counts(tmp_path):
    path = write_transcript(
        tmp_path / "s.jsonl",
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": QUOTE}]},
        },
    )
    assert transcript.verify(QUOTE, path).verified


def test_a_near_miss_is_not_verified(tmp_path):
    path = write_transcript(tmp_path / "s.jsonl", user("deploys are announced in #releases"))
    verdict = transcript.verify(QUOTE, path)
    assert not verdict.verified and "not in any" in verdict.reason


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(user(QUOTE)) + '\n{"type": "us', encoding="utf-8")
    assert transcript.verify(QUOTE, path).verified


@pytest.mark.parametrize("quote", ["", "   ", "ok"])
def test_an_empty_or_tiny_quote_is_bad_input(tmp_path, quote):
    path = write_transcript(tmp_path / "s.jsonl", user("ok ok ok"))
    with pytest.raises(BadInput):
        transcript.verify(quote, path)


def test_a_missing_or_non_json_transcript_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="cannot read"):
        transcript.verify(QUOTE, tmp_path / "none.jsonl")
    (tmp_path / "notes.txt").write_text("just text\n")
    with pytest.raises(BadInput, match="not a transcript"):
        transcript.verify(QUOTE, tmp_path / "notes.txt")


# --- kg propose --from-user -------------------------------------------------------------------------


def test_verified_words_confirm_with_authority_user_and_a_user_source(seeded, tmp_path):
    path = write_transcript(tmp_path / "s.jsonl", user("btw " + QUOTE))
    fact = seeded.json(
        "propose", "release", "posts_to", "--object", "#deploys", "--from-user", "--quote", QUOTE, "--transcript", path
    )
    assert (fact["status"], fact["authority"]) == ("confirmed", "user")
    assert {"kind": "user", "ref": f"transcript:{path.resolve()}", "quote": QUOTE} in fact["sources"]
    history = seeded.json("history", fact["id"])["history"]
    assert "quote verified" in history[-1]["reason"]


def test_words_not_verified_stay_proposed_and_the_output_says_why(seeded, tmp_path):
    path = write_transcript(tmp_path / "s.jsonl", user("hello"), assistant(QUOTE))
    result = seeded(
        "propose", "release", "posts_to", "--object", "#deploys", "--from-user", "--quote", QUOTE, "--transcript", path
    )
    assert "[proposed]" in result.stdout
    assert "stays proposed: the quote is not in any of the 1 user prompts" in result.stdout
    fact = seeded.json("facts", "release")["facts"][0]
    assert (fact["status"], fact["authority"]) == ("proposed", "observed")


def test_from_user_needs_both_quote_and_transcript(seeded, tmp_path):
    before = seeded.snapshot()
    result = seeded("propose", "release", "posts_to", "--object", "#deploys", "--from-user", "--quote", QUOTE, expect=2)
    assert "--transcript" in result.stderr
    seeded("propose", "release", "posts_to", "--object", "#deploys", "--quote", QUOTE, "-s", "ledger:1", expect=2)
    assert seeded.snapshot() == before


def test_verified_words_bring_back_a_rejected_fact(seeded, tmp_path):
    fact = seeded.json("propose", "release", "posts_to", "--object", "#deploys", "-s", "slack:p1")
    seeded("reject", fact["id"])
    again = seeded.json("propose", "release", "posts_to", "--object", "#deploys", "-s", "slack:p2")
    assert (again["id"], again["status"]) == (fact["id"], "rejected")
    path = write_transcript(tmp_path / "s.jsonl", user(QUOTE))
    back = seeded.json(
        "propose", "release", "posts_to", "--object", "#deploys", "--from-user", "--quote", QUOTE, "--transcript", path
    )
    assert (back["id"], back["status"], back["authority"]) == (fact["id"], "confirmed", "user")
    assert seeded.json("facts", "release")["facts"][0]["authority"] == "user"


def test_a_rejected_fact_is_not_confirmed_nor_superseded_into_and_the_hint_brings_it_back(seeded, tmp_path):
    """kg confirm of a rejected fact was a way round "a rejected fact stays rejected": it confirmed
    it, closing the value it replaced (and on replicas the rejection came back, the closed value
    not). It is refused, as a correction to its value is, writing nothing; the way out each names
    (the user's own words) brings it back."""
    old = seeded.json("propose", "staging", "status", "--value", "up", "-s", "slack:p0")
    seeded("confirm", old["id"])
    fact = seeded.json("propose", "staging", "status", "--value", "Draining", "-s", "slack:p1")
    seeded("reject", fact["id"])
    before = seeded.snapshot()
    for command in (["confirm", fact["id"]], ["supersede", old["id"], "--value", "draining"]):
        refused = seeded(*command, expect=1)
        assert "a rejected fact stays rejected" in refused.stderr and fact["id"] in refused.stderr, command
        assert seeded.snapshot() == before
    hint = one_line(refused).split("bring it back: ")[1].rstrip(")")
    said = "kg propose environment/staging status --value Draining --from-user --quote WORDS --transcript FILE"
    assert hint == f"{said} --kb {shlex.quote(str(seeded.path))}"
    quote = "staging is draining"
    path = write_transcript(tmp_path / "s.jsonl", user(quote))
    words = shlex.split(hint)[1:-4] + ["--quote", quote, "--transcript", str(path)]
    back = seeded.json(*words)
    assert (back["id"], back["status"]) == (fact["id"], "confirmed")
    assert fact["id"] in [f["id"] for f in seeded.json("facts", "staging")["facts"]]


def test_verified_words_bring_back_an_expired_fact_as_the_users(seeded, tmp_path, monkeypatch):
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T09:00:00Z")
    fact = seeded.json("propose", "release", "posts_to", "--object", "#deploys", "-s", "slack:p1")
    monkeypatch.setenv("KGRDF_NOW", "2026-02-15T09:00:00Z")
    assert seeded.json("expire")["expired"] == 1
    path = write_transcript(tmp_path / "s.jsonl", user(QUOTE))
    back = seeded.json(
        "propose", "release", "posts_to", "--object", "#deploys", "--from-user", "--quote", QUOTE, "--transcript", path
    )
    assert (back["id"], back["outcome"], back["status"], back["authority"]) == (
        fact["id"],
        "revived",
        "confirmed",
        "user",
    )
    revive = [e for e in seeded.json("history", fact["id"])["history"] if e["action"] == "revive"]
    assert [e["changes"]["authority"] for e in revive] == [{"before": ["observed"], "after": ["user"]}]


# --- the auto-confirm rules ---------------------------------------------------------------------------


def propose(kg, *args):
    return kg.json("propose", *args)


def test_two_trusted_sources_of_different_kinds_confirm_a_low_risk_fact(seeded):
    fact = propose(seeded, "repo/api", "caveat", "--value", "slow tests", "-s", "ledger:L1", "-s", "report:R1")
    assert fact["status"] == "confirmed"
    assert "two trusted sources of different kinds" in fact["note"]
    reasons = [e.get("reason", "") for e in seeded.json("history", fact["id"])["history"]]
    assert "auto-confirmed: two trusted sources of different kinds" in reasons


@pytest.mark.parametrize(
    "sources",
    [
        ["ledger:L1", "ledger:L2"],  # two of one kind
        ["ledger:L1", "slack:S1"],  # one trusted, one not
        ["user:someone said", "ledger:L1"],  # the user's kind counts only through verified words
        ["slack:S1", "pr:P1", "ticket:T1"],  # untrusted, however many
    ],
    ids=["same-kind", "one-untrusted", "unverified-user", "untrusted"],
)
def test_sources_that_are_not_two_trusted_kinds_leave_it_proposed(seeded, sources):
    args = [a for s in sources for a in ("-s", s)]
    fact = propose(seeded, "repo/api", "caveat", "--value", "slow tests", *args)
    assert fact["status"] == "proposed"
    assert "stays proposed" in fact["note"]


def test_a_high_risk_fact_is_never_confirmed_by_sources_alone(seeded):
    fact = propose(
        seeded,
        "environment/staging",
        "status",
        "--value",
        "retired",
        "-s",
        "ledger:L1",
        "-s",
        "report:R1",
        "-s",
        "memory:M1",
        "-s",
        "profile:P1",
    )
    assert fact["status"] == "proposed"
    assert "high-risk" in fact["note"]


def test_a_person_fact_is_not_confirmed_by_two_trusted_sources(seeded):
    fact = propose(seeded, "person/dana", "reviews", "--object", "repo/api", "-s", "ledger:L1", "-s", "report:R1")
    assert fact["status"] == "proposed"
    assert "naming a person" in fact["note"]


@pytest.mark.parametrize("spelling", ["Lee Park", "lee park", "Lee"])
def test_a_value_naming_a_person_added_since_is_not_confirmed_when_heard_again(seeded, spelling):
    first = propose(seeded, "repo/api", "caveat", "--value", f"{spelling} must sign off first", "-s", "ledger:L1")
    assert first["status"] == "proposed" and first["sensitivity"] == "internal"  # nobody of that name yet
    seeded("add-entity", "person/lee", "--name", "Lee Park", "--alias", "Lee")
    again = propose(seeded, "repo/api", "caveat", "--value", f"{spelling} must sign off first", "-s", "report:R1")
    assert again["id"] == first["id"] and again["status"] == "proposed", again
    assert again["sensitivity"] == "personal" and "naming a person" in again["note"]


def test_a_profile_source_confirms_a_title_or_timezone_but_not_other_person_facts(seeded):
    assert propose(seeded, "person/dana", "title", "--value", "Lead", "-s", "profile:hr")["status"] == "confirmed"
    assert (
        propose(seeded, "person/dana", "timezone", "--value", "Europe/Lisbon", "-s", "profile:hr")["status"]
        == "confirmed"
    )
    assert (
        propose(seeded, "person/dana", "member_of", "--object", "team/web", "-s", "profile:hr")["status"] == "proposed"
    )


def test_observing_again_with_a_second_trusted_kind_confirms(seeded):
    first = propose(seeded, "repo/api", "caveat", "--value", "slow tests", "-s", "ledger:L1")
    assert first["status"] == "proposed"
    second = propose(seeded, "repo/api", "caveat", "--value", "Slow  tests", "-s", "report:R1")
    assert (second["id"], second["status"], second["outcome"]) == (first["id"], "confirmed", "observed")


def test_an_automatic_confirmation_never_closes_the_value_it_would_replace(seeded):
    old = propose(seeded, "release", "purpose", "--value", "ship safely", "-s", "ledger:L1")
    seeded("confirm", old["id"])
    new = propose(seeded, "release", "purpose", "--value", "ship weekly", "-s", "ledger:L2", "-s", "report:R2")
    assert new["status"] == "confirmed"
    assert f"{old['id']} stays current" in new["note"] and f"kg confirm {new['id']}" in new["note"]
    current = {f["id"] for f in seeded.json("facts", "release", "--predicate", "purpose")["facts"]}
    assert current == {old["id"], new["id"]}
    # A person's confirmation closes it.
    closed = seeded.json("confirm", new["id"])
    assert closed["outcome"] == "reconfirmed" and closed["closed"] == [{"id": old["id"], "superseded_by": new["id"]}]
    assert [f["id"] for f in seeded.json("facts", "release", "--predicate", "purpose")["facts"]] == [new["id"]]


# --- expiry and retention -----------------------------------------------------------------------------


def at(monkeypatch, when):
    monkeypatch.setenv("KGRDF_NOW", when)


def test_a_proposal_not_observed_for_30_days_expires_and_revives_when_proposed_again(seeded, monkeypatch):
    at(monkeypatch, "2026-01-01T09:00:00Z")
    stale = propose(seeded, "repo/api", "caveat", "--value", "slow tests", "-s", "slack:1")
    fresh = propose(seeded, "repo/api", "caveat", "--value", "flaky", "-s", "slack:2")
    at(monkeypatch, "2026-01-25T09:00:00Z")
    propose(seeded, "repo/api", "caveat", "--value", "flaky", "-s", "slack:3")  # observed again
    at(monkeypatch, "2026-01-31T09:00:01Z")
    assert seeded.json("expire")["expired"] == 1
    statuses = {f["id"]: f["status"] for f in seeded.json("facts", "repo/api", "--all")["facts"]}
    assert statuses == {stale["id"]: "expired", fresh["id"]: "proposed"}
    assert stale["id"] not in {f["id"] for f in seeded.json("lookup", "repo/api")["facts"]}
    revived = propose(seeded, "repo/api", "caveat", "--value", "slow tests", "-s", "slack:4")
    assert (revived["id"], revived["status"], revived["outcome"]) == (stale["id"], "proposed", "revived")


def test_expire_deletes_person_facts_past_retention_and_names_nobody(seeded, monkeypatch):
    at(monkeypatch, "2025-01-01T09:00:00Z")
    old = propose(seeded, "person/dana", "reviews", "--object", "repo/api", "-s", "slack:1")
    seeded("confirm", old["id"])
    kept = propose(seeded, "repo/api", "caveat", "--value", "slow tests", "-s", "slack:1")
    seeded("confirm", kept["id"])
    at(monkeypatch, "2025-12-01T09:00:00Z")
    recent = propose(seeded, "person/dan", "reviews", "--object", "repo/api", "-s", "slack:2")
    at(monkeypatch, "2026-01-02T09:00:01Z")
    dry = seeded("expire", "--dry-run")
    assert "would delete 1 person fact" in dry.stdout
    result = seeded("expire")
    assert "deleted 1 person fact past retention (365 days)" in result.stdout
    for name in ("dana", "Dana", old["id"]):
        assert name not in result.stdout
    assert seeded.json("facts", "person/dana", "--all")["facts"] == []
    seeded("history", old["id"], expect=1)
    assert [f["id"] for f in seeded.json("facts", "person/dan", "--all")["facts"]] == [recent["id"]]
    assert seeded.json("facts", "repo/api", "--all")["facts"][0]["id"] == kept["id"]
    seeded("validate")


def test_expire_dry_run_writes_nothing(seeded, monkeypatch):
    at(monkeypatch, "2026-01-01T09:00:00Z")
    propose(seeded, "repo/api", "caveat", "--value", "slow tests", "-s", "slack:1")
    at(monkeypatch, "2026-03-01T09:00:00Z")
    before = seeded.snapshot()
    assert seeded.json("expire", "--dry-run") == {
        "expired": 1,
        "deleted": 0,
        "dry_run": True,
        "proposal_days": 30,
        "retention_days": 365,
    }
    assert seeded.snapshot() == before


def test_a_bad_setting_is_a_one_line_error(seeded, monkeypatch):
    monkeypatch.setenv("KGRDF_PROPOSAL_DAYS", "soon")
    result = seeded("expire", expect=2)
    assert "KGRDF_PROPOSAL_DAYS='soon'" in result.stderr
