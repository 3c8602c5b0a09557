"""Hostile input gets one line and writes nothing, and what is kept cannot take over the screen: a
schema.json field of the wrong kind is a problem of the schema, not a crash of every command; an
order out of range, control characters in a kept text and texts past the limit are refused where
they enter; a control character already kept is shown escaped; a named pipe is not waited on; a
name with a final newline is no name; a byte-order mark is no part of a file or a message; a fact
heard again from a source naming a person is a fact naming a person, whatever the order of its
sources."""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Kg, copy_of, one_line
from tests.patchlog import journal_bytes

ESCAPES = "looks fine\r\x1b[2K  confirmed by dana\x1b[8m"  # rewrites the line a terminal shows


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    kg = Kg(tmp_path_factory.mktemp("hostile") / "kb")
    kg("init")
    kg("add-entity", "person/dana", "--name", "Dana")
    kg("add-entity", "process/release", "--name", "Release", "--alias", "release")
    kg("add-entity", "step/ci", "--name", "CI passes")
    return kg.path


@pytest.fixture
def kb(template, tmp_path):
    """A private copy of a small knowledge base (made once for the module)."""
    return copy_of(template, tmp_path / "kb")


def _import(kb, tmp_path, records, raw: bytes | None = None):
    path = tmp_path / "records.jsonl"
    path.write_bytes(raw if raw is not None else "".join(json.dumps(r) + "\n" for r in records).encode())
    return kb.json("import", path, "--apply")


def _caveat(value: str, **fields) -> dict:
    record = {"type": "fact", "subject": "release", "predicate": "caveat", "value": value, "sources": ["ledger:L1"]}
    return record | fields


def _step(order) -> dict:
    record = {"type": "fact", "subject": "release", "predicate": "has_step", "object": "step/ci", "order": order}
    return record | {"sources": ["doc:x"]}


# --- a schema.json field of the wrong kind ---------------------------------------------------------


TYPE = {"name": "runbook", "axis": "Process", "label": "Runbook", "subclass_of": "decision"}
PREDICATE = {
    "name": "on_call_for",
    "axis": "Process",
    "object": "entity",
    "sentence": "{subject} is on call for {target}",
    "label": "on call for",
    "domain": ["team"],
    "range": ["service"],
    "single_valued": False,
    "subproperty_of": None,
}


@pytest.mark.parametrize(
    "group, field, value, problem",
    [
        ("types", "axis", ["Process"], "axis must be one of People, Process, Product, Organizations, not a list"),
        ("types", "axis", {"Process": 1}, "axis must be one of People, Process, Product, Organizations, not an object"),
        ("predicates", "axis", ["Process"], "axis must be one of"),
        ("predicates", "object", ["entity"], '"object" must be "entity" or "value", not a list'),
        ("predicates", "object", {"entity": True}, '"object" must be "entity" or "value", not an object'),
        ("types", "label", 7, '"label" must be text, not a number (7)'),
        ("predicates", "sentence", None, "needs a reviewer sentence"),
        ("predicates", "sentence", " \t ", "needs a reviewer sentence"),
        ("predicates", "sentence", ["{subject}"], '"sentence" must be text, not a list'),
        ("types", "label", "\x1b[31mRunbook", '"label" holds a control character (U+001B)'),
        ("predicates", "sentence", "{subject}\r{target}", '"sentence" holds a control character (U+000D)'),
    ],
)
def test_a_schema_field_of_the_wrong_kind_is_a_problem_of_the_schema_not_a_crash(kb, group, field, value, problem):
    """kg schema check lists it (exit 1), and every other command works on the core schema."""
    entry = {**(TYPE if group == "types" else PREDICATE), field: value}
    data = {"types": [TYPE], "predicates": []} | {group: [entry]}
    (kb.path / "schema.json").write_text(json.dumps(data))
    checked = kb("schema", "check", kb.path / "schema.json", kb=False, expect=1)
    assert "Traceback" not in checked.stdout + checked.stderr and not checked.stderr
    assert problem in checked.stdout and "\x1b" not in checked.stdout
    stats = kb("stats")
    assert "schema.json is refused" in one_line(stats) and problem in one_line(stats)
    assert kb.json("stats")["entity_count"] == 3
    assert kb.json("schema")["extension"]["accepted"] is False


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
FIELDS = [("types", name) for name in TYPE] + [("predicates", name) for name in PREDICATE]


@settings(max_examples=400, deadline=None)
@given(where=st.sampled_from(FIELDS), value=JSON)
def test_no_json_value_in_any_field_of_a_schema_entry_breaks_its_check(where, value):
    """Whatever JSON a field holds (a list, an object, a number, null where text goes), the check
    gives problems, each one line, or RDF; never an exception."""
    from kgrdf import extension, schema

    group, field = where
    entry = {**(TYPE if group == "types" else PREDICATE), field: value}
    data = {"types": [TYPE], "predicates": []} | {group: [entry]}
    core = schema.core()
    problems = extension.name_problems(data, core)
    assert all(isinstance(p, str) and p and "\n" not in p for p in problems), problems
    if not problems:
        assert extension.to_quads(data, core)


# --- an order out of range ---------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["100000000000000000000", str(2**63), "1000001", "0", "-1"])
def test_an_order_out_of_range_is_refused_by_propose_and_supersede(kb, order):
    before = kb.snapshot()
    line = one_line(
        kb("propose", "release", "has_step", "--object", "step/ci", f"--order={order}", "-s", "doc:x", expect=2)
    )
    assert f"the order {order} is not a place in a sequence: give a whole number from 1 to 1,000,000" in line
    assert kb.snapshot() == before
    fact = kb.json("propose", "release", "has_step", "--object", "step/ci", "--order", "1000000", "-s", "doc:x")
    assert fact["order"] == 1_000_000  # the bound itself is a place
    before = kb.snapshot()
    assert "from 1 to 1,000,000" in one_line(kb("supersede", fact["id"], f"--order={order}", expect=2))
    assert kb.snapshot() == before
    assert "1a" in kb("batch").stdout


@pytest.mark.parametrize(
    "order", [2**63, 10**20, 0, -5, 1_000_001, "1000001", "9" * 19, "9" * 5000, "0" * 30 + "7" * 19]
)
def test_an_order_out_of_range_is_refused_by_import(kb, tmp_path, order):
    """A JSON number or a string of digits, of any length (int() refuses a string past 4,300)."""
    before = kb.snapshot()
    report = _import(kb, tmp_path, [_step(order)])
    assert report["refused"] == {"malformed": 1} and not report["applied"], report
    message = report["refusals"][0]["message"]
    digits = len(order.lstrip("0")) if isinstance(order, str) else 0
    assert ("from 1 to 1,000,000" if digits <= 18 else f"at most 18 digits, not one of {digits:,}") in message
    assert kb.snapshot() == before
    assert "Nothing waits for review." in kb("batch").stdout


def test_a_batch_reads_an_order_kept_before_it_was_bounded(kb, monkeypatch):
    """A knowledge base that holds an order past SQLite's integers (written before the bound) still
    gives its daily batch."""
    from kgrdf import model

    monkeypatch.setattr(model, "MAX_ORDER", 10**30, raising=False)
    kb("propose", "release", "has_step", "--object", "step/ci", "--order", str(2**64), "-s", "doc:x")
    monkeypatch.undo()
    assert "Release has the step CI passes" in kb("batch").stdout


# --- control characters and long texts ----------------------------------------------------------------


def test_a_reason_with_control_characters_or_past_the_limit_is_refused(kb):
    fact = kb.json("propose", "release", "caveat", "--value", "needs a second reviewer", "-s", "ledger:L1")["id"]
    before = kb.snapshot()
    for command in ("reject", "confirm"):
        line = one_line(kb(command, fact, "--reason", ESCAPES, expect=2))
        assert "the reason holds a control character (U+001B) at character 12" in line and "\x1b" not in line
    line = one_line(kb("supersede", fact, "--value", "needs two reviewers", "--reason", "ok\x1b[8m", expect=2))
    assert "the reason holds a control character (U+001B)" in line
    line = one_line(kb("reject", fact, "--reason", "x" * 100_000, expect=2))
    assert "the reason is 100000 characters long; the most is 65536" in line
    assert kb.snapshot() == before
    kb("reject", fact, "--reason", "said twice\n\tonce in #ops")  # tabs and newlines are text
    assert kb.json("history", fact)["fact"]["status"] == "rejected"


@pytest.mark.parametrize(
    "argv, what",
    [
        (["propose", "release", "caveat", "--value", ESCAPES, "-s", "ledger:L1"], "the value for caveat"),
        (["propose", "release", "caveat", "--value", "x\x7f", "-s", "ledger:L1"], "the value for caveat"),
        (["propose", "release", "caveat", "--value", "x\x9b2K", "-s", "ledger:L1"], "the value for caveat"),
        (["add-entity", "repo/web", "--name", "web", "--summary", "a repo\x1b[8m"], "the summary"),
        (
            ["org", "affiliate", "Acme", "--claimed-name", "Jim", "--role", "IT\x1b[8m", "-s", "slack:c1"]
            + ["--said-by", "person/dana"],
            "the role",
        ),
    ],
    ids=["value", "value-del", "value-c1", "summary", "claim-role"],
)
def test_a_kept_text_with_a_control_character_is_refused(kb, argv, what):
    if argv[0] == "org":
        kb("org", "add", "Acme")
    before = kb.snapshot()
    line = one_line(kb(*argv, expect=2))
    assert f"{what} holds a control character (U+" in line and "use visible characters" in line
    assert kb.snapshot() == before


def test_an_imported_text_with_a_control_character_is_refused(kb, tmp_path):
    before = kb.snapshot()
    report = _import(
        kb,
        tmp_path,
        [
            _caveat(ESCAPES),
            _caveat("fine", reason="ok\x1b[8m"),
            {"type": "entity", "id": "repo/web", "name": "web", "summary": "\x1b]0;title\x07"},
        ],
    )
    assert report["refused"] == {"malformed": 3} and not report["applied"]
    assert [r["message"].split(" holds")[0] for r in report["refusals"]] == ["value", "reason", "summary"]
    assert kb.snapshot() == before


def test_an_identifier_past_the_text_limit_is_refused(kb):
    line = one_line(kb("identifiers", "add", "Dana", "chat", "U" * 100_000, expect=2))
    assert "the identifier is 100000 characters long; the most is 65536" in line
    assert not (kb.path / "identifiers.jsonl").exists() or "UUUU" not in (kb.path / "identifiers.jsonl").read_text()


def test_a_control_character_already_kept_is_shown_escaped(kb, monkeypatch):
    """Text kept before kgrdf refused control characters (or by another replica) is shown with them
    escaped: on the terminal a reason cannot rewrite the line it is on, nor hide what follows."""
    from kgrdf import inputs

    monkeypatch.setattr(inputs, "refuse_controls", lambda value, what: value, raising=False)
    monkeypatch.setattr(inputs, "newlines", lambda value: value, raising=False)
    fact = kb.json("propose", "release", "caveat", "--value", "wait\x1b[2K\x9b", "-s", "ledger:L1")["id"]
    other = kb.json("propose", "release", "caveat", "--value", "needs a second reviewer", "-s", "ledger:L1")["id"]
    kb("reject", other, "--reason", ESCAPES)
    monkeypatch.undo()
    for argv in (["history", fact], ["facts", "release"], ["lookup", "release"], ["history", other]):
        shown = kb(*argv).stdout
        assert not any(c in shown for c in "\r\x1b\x9b"), repr(shown)
    for argv in (["history", fact], ["facts", "release"], ["lookup", "release"]):
        assert "wait\\x1b[2K\\x9b" in kb(*argv).stdout
    assert "(looks fine\\r\\x1b[2K  confirmed by dana\\x1b[8m)" in kb("history", other).stdout
    as_json = kb("history", fact, "--json").stdout
    assert not any(c in as_json for c in "\r\x1b\x9b") and "\\u009b" in as_json
    assert json.loads(as_json)["fact"]["value"] == "wait\x1b[2K\x9b"


# --- a named pipe, a final newline -----------------------------------------------------------------


def test_a_query_file_that_is_a_named_pipe_with_no_writer_is_not_waited_on(kb, tmp_path):
    pipe = tmp_path / "q.rq"
    os.mkfifo(pipe)
    done = subprocess.run(
        [sys.executable, "-m", "kgrdf", "sparql", str(pipe), "--kb", str(kb.path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip()
        == f"kg: the query file {pipe} is empty (give a SPARQL query's text, or the path of a .rq file)"
    )


def test_a_remote_name_with_a_final_newline_is_refused(kb):
    from kgrdf import sync

    settings_before = (kb.path / "format.json").read_bytes()
    line = one_line(kb("remote", "add", "origin\n", "http://hub.example/kg", expect=2))
    assert "remote name 'origin\\n' must be lower-case letters" in line
    assert (kb.path / "format.json").read_bytes() == settings_before
    assert kb.json("remote", "list")["remotes"] == []
    assert sync.REPLICA.match("r-0123abcd") and not sync.REPLICA.match("r-0123abcd\n")  # a replica's folder


# --- a byte-order mark ------------------------------------------------------------------------------


def test_a_file_in_the_journal_named_as_a_patch_and_a_newline_is_no_patch(kb):
    """A stray copy whose name ends in a newline ('$' matched before it) was read as the next patch:
    every command failed on its bytes. It is no patch of the journal, as any other stray file."""
    folder = kb.path / "journal" / "local" / "0000000"
    last = sorted(folder.iterdir())[-1]
    count = kb.json("status")["journal"]["transactions"]
    stray = folder / f"{int(last.name[:10]) + 1:010d}.rdfp.gz\n"
    stray.write_bytes(last.read_bytes())
    assert kb.json("status")["journal"]["transactions"] == count
    kb("add-entity", "person/erin", "--name", "Erin")
    assert kb.json("status")["journal"]["transactions"] == count + 1
    assert kb.json("lookup", "person/erin")["entity"]["name"] == "Erin"
    assert stray.read_bytes() == last.read_bytes()  # left as it was found


BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("form", ["lines", "array"])
def test_an_import_file_starting_with_a_byte_order_mark_is_read_whole(kb, tmp_path, form):
    records = [_caveat("first"), _caveat("second")]
    body = json.dumps(records) if form == "array" else "".join(json.dumps(r) + "\n" for r in records)
    report = _import(kb, tmp_path, records, raw=BOM + body.encode())
    assert report["refused"] == {} and report["facts"] == {"created": 2}
    assert sorted(f["value"] for f in kb.json("facts", "release")["facts"]) == ["first", "second"]


def test_a_message_on_standard_input_starting_with_a_byte_order_mark_has_its_offsets_from_its_text(kb):
    from typer.testing import CliRunner

    from kgrdf.cli import app

    result = CliRunner().invoke(app, ["mentions", "-", "--json", "--kb", str(kb.path)], input=BOM + b"Dana ships it")
    assert result.exit_code == 0, result.stderr
    (mention,) = json.loads(result.stdout)["mentions"]
    assert (mention["text"], mention["start"], mention["end"]) == ("Dana", 0, 4)


def test_a_message_on_standard_input_past_the_limit_is_not_given_a_length_it_does_not_have(kb, monkeypatch):
    from typer.testing import CliRunner

    from kgrdf.cli import app

    monkeypatch.setenv("KGRDF_MAX_TEXT", "100")
    result = CliRunner().invoke(app, ["mentions", "-", "--kb", str(kb.path)], input=b"Dana " * 1000)
    line = one_line(result)
    assert result.exit_code == 2
    assert "the message on standard input is more than 100 characters long; the most is 100" in line
    result = CliRunner().invoke(app, ["mentions", "-", "--kb", str(kb.path)], input=b"x" * 150)
    assert result.exit_code == 2 and "the message is 150 characters long; the most is 100" in one_line(result)


# --- a fact heard again from a source naming a person -----------------------------------------------------


@pytest.mark.parametrize(
    "sources",
    [["ledger:L9", "report:Dana said so in 1:1"], ["report:Dana said so in 1:1", "ledger:L9"]],
    ids=["person-second", "person-first"],
)
def test_a_fact_heard_from_a_source_naming_a_person_is_personal_whichever_comes_first(kb, sources):
    """Two trusted kinds of source confirm a fact automatically, unless it names a person: heard
    again with a source naming Dana, the fact names her, and stays a proposal."""
    for source in sources:
        fact = kb.json("propose", "release", "caveat", "--value", "needs a second reviewer", "-s", source)
    assert fact["status"] == "proposed" and fact["sensitivity"] == "personal"
    assert "a fact naming a person is confirmed automatically only from the user's verified words" in fact["note"]
    held = kb.json("history", fact["id"])["fact"]
    assert (held["status"], held["sensitivity"]) == ("proposed", "personal")
    shared = b"".join(p.read_bytes() for p in (kb.path / "journal").rglob("*.rdfp*") if "local" not in p.parts)
    assert b"Dana said so" not in shared  # what names her went to the private journal


def test_a_message_naming_a_person_makes_a_fact_heard_again_personal(kb):
    kb("propose", "release", "caveat", "--value", "needs a second reviewer", "-s", "ledger:L9")
    fact = kb.json(
        "propose",
        "release",
        "caveat",
        "--value",
        "needs a second reviewer",
        "-s",
        "report:R2",
        "--message",
        "dm with Dana",
    )
    assert (fact["status"], fact["sensitivity"]) == ("proposed", "personal")


def test_text_whose_lines_end_in_cr_lf_is_taken_with_newlines(kb, tmp_path):
    """Text pasted from Windows or a mail ends its lines with CR LF: no attack, and kept with its
    line ends made newlines (a lone CR too), in a value, a reason, a summary, an import's record
    and an extracted fact's span, where a CR among other controls is still refused above."""
    fact = kb.json("propose", "release", "caveat", "--value", "line one\r\nline two\rthree", "-s", "ledger:L1")["id"]
    assert kb.json("history", fact)["fact"]["value"] == "line one\nline two\nthree"
    kb("reject", fact, "--reason", "said\r\ntwice")
    assert kb.json("history", fact)["fact"]["status"] == "rejected"
    kb("add-entity", "repo/web", "--name", "web", "--summary", "a repo\r\nfor the site")
    assert kb.json("lookup", "repo/web")["entity"]["summary"] == "a repo\nfor the site"
    report = _import(kb, tmp_path, [_caveat("first\r\nsecond")])
    assert report["facts"] == {"created": 1}, report
    assert "first\nsecond" in [f["value"] for f in kb.json("facts", "release")["facts"]]
    spanned = kb.json(
        *("propose", "release", "caveat", "--value", "needs care", "-s", "slack:m9"),
        *("--extracted", "--span", "needs\r\ncare", "--confidence", "0.8"),
    )["id"]
    assert [h.get("span") for h in kb.json("history", spanned)["fact"]["hearings"]] == ["needs care"]


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("format.json", "[]", "format.json is not a JSON object"),
        ("format.json", "null", "format.json is not a JSON object"),
        ("format.json", '{"format": "3", "perspective": "main"}', "format.json's 'format' is not a number"),
        ("format.json", '{"format": 3, "perspective": "main", "index": 5}', "format.json's 'index' is not a URL"),
        ("format.json", '{"format": 3, "perspective": "main", "remotes": "hub"}', "format.json's 'remotes' is not"),
        ("format.json", '{"format": 3, "perspective": ["main"]}', "format.json's 'perspective' is not a name"),
        ("replica.json", "[]", "replica.json is not a JSON object"),
        ("replica.json", '{"replica": 7}', "replica.json's 'replica' is not a name"),
        # kinds kgrdf writes, but values it never does: a replica's id names its journal's folder, a
        # perspective's name its IRIs (../../escape wrote the journal outside the knowledge base)
        ("replica.json", '{"replica": "../../escape"}', "replica.json's 'replica' is no replica's id"),
        ("replica.json", '{"replica": ""}', "replica.json's 'replica' is no replica's id"),
        ("replica.json", "{}", "replica.json's 'replica' is no replica's id"),
        ("format.json", '{"format": 3, "perspective": "Main Thing"}', "format.json's 'perspective' is no perspective"),
        ("format.json", '{"format": 3, "perspective": ""}', "format.json's 'perspective' is no perspective"),
        ("format.json", '{"format": 0, "perspective": "main"}', "format.json's 'format' is no format of kgrdf's"),
    ],
)
@pytest.mark.parametrize(
    "command", [("stats",), ("status",), ("validate",), ("remote", "list"), ("add-entity", "repo/x", "--name", "x")]
)
def test_a_settings_file_edited_to_another_shape_is_named_damaged_not_a_bug(kb, name, text, said, command):
    """format.json and replica.json edited by hand (format.json keeps the remotes, and is in git)
    to a JSON value of another shape: every command said "a bug in kgrdf", or read on as if it held
    nothing. They are named damaged, with the way back, exit 3."""
    (kb.path / name).write_text(text + "\n")
    before = (journal_bytes(kb.path / "journal"), (kb.path / name).read_text())  # (kb.snapshot reads stats)
    done = kb.json(*command, expect=3)
    assert done["error"] == "damaged" and done["message"].startswith(said), done
    assert "git checkout" in done["hint"]
    assert (journal_bytes(kb.path / "journal"), (kb.path / name).read_text()) == before


def test_a_remote_edited_to_no_url_is_named_as_the_hubs(kb):
    """A remote's URL edited in format.json to no http(s) address: kg sync called it 'an index URL'."""
    settings = json.loads((kb.path / "format.json").read_text())
    (kb.path / "format.json").write_text(json.dumps({**settings, "remotes": {"team": "notaurl"}}))
    line = one_line(kb("sync", expect=2))
    assert line.startswith("kg: a hub's URL 'notaurl' must be an http:// or https:// address"), line
