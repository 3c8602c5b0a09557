"""Bad input of every kind gets one line on stderr and its exit code, never a traceback, and a
refusal writes nothing: text that is not UTF-8, import records of the wrong shape, a --kb that is
no knowledge base, a folder that refuses new files, a broken lock or setting, a batch.json edited by
hand, files that never end, and values too large to hold."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import Kg, copy_of, one_line

SURROGATE = "\udcff"  # what a byte that is not UTF-8 becomes in an argument


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    kg = Kg(tmp_path_factory.mktemp("bad-input") / "kb")
    kg("init")
    kg("add-entity", "person/dana", "--name", "Dana Okafor", "--alias", "Dana")
    kg("add-entity", "repo/web-app", "--name", "web-app", "--alias", "webapp")
    kg("add-entity", "process/release", "--name", "Release process", "--alias", "release")
    kg("add-entity", "channel/deploys", "--name", "#deploys")
    return kg.path


@pytest.fixture
def seeded(template, tmp_path):
    """A private copy of a small knowledge base (made once for the module)."""
    return copy_of(template, tmp_path / "kb")


# --- arguments ------------------------------------------------------------------------------------


def test_an_unknown_field_is_named_escaped_in_the_refusal(seeded, tmp_path):
    """A record's unknown field holding a lone surrogate (a JSON escape) stopped the import as a
    bug after it was written (exit 3, its report lost); one holding a newline forged lines of the
    report. Each is named escaped, that record alone refused."""
    records = tmp_path / "r.jsonl"
    good = {"type": "entity", "id": "repo/zz", "name": "zz"}
    bad = [{**good, "id": f"repo/z{n}", key: 1} for n, key in enumerate(["zz\ud800", "x\nall imported"])]
    records.write_text("".join(json.dumps(r) + "\n" for r in [good, *bad]), encoding="utf-8")
    result = seeded("import", records, "--apply")
    assert "Traceback" not in result.stdout + result.stderr and "all imported" not in result.stdout.splitlines()
    refused = seeded.json("import", records)["refusals"]
    assert [r["message"].split(";")[0] for r in refused] == [
        'an entity record has no field "zz\\ud800"',
        'an entity record has no field "x\\nall imported"',
    ]


@pytest.mark.parametrize("char", ["\ufffe", "\uffff", "\ufdd0", "\U0010ffff"])
def test_a_noncharacter_is_refused_in_a_value_a_name_or_a_source(seeded, tmp_path, char):
    """U+FFFE and U+FFFF were kept, and exported as \\uFFFE and \\uFFFF, which Raptor refuses: every
    export unreadable to it. A noncharacter stands for no character: refused, writing nothing."""
    before = seeded.snapshot()
    for argv in (
        ["propose", "webapp", "caveat", "--value", f"before {char} after", "-s", "slack:p1"],
        ["add-entity", "repo/x", "--name", f"X{char}"],
        ["propose", "webapp", "caveat", "--value", "fine", "-s", f"doc:r{char}"],
    ):
        line = one_line(seeded(*argv, expect=2))
        assert f"U+{ord(char):04X}" in line and "noncharacter" in line, argv
    assert seeded.snapshot() == before
    talk = tmp_path / f"talk{char}.jsonl"
    talk.write_text(json.dumps({"role": "user", "content": f"web-app caveat odd{char}"}) + "\n", encoding="utf-8")
    for quote, path in ((f"caveat odd{char}", tmp_path / "none.jsonl"), ("web-app caveat", talk)):
        words = ["--from-user", "--quote", quote, "--transcript", path]
        line = one_line(seeded("propose", "webapp", "caveat", "--value", "odd", *words, expect=2))
        assert "noncharacter" in line, line
    assert seeded.snapshot() == before
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"type": "entity", "id": "repo/y", "name": f"Y{char}"}) + "\n", encoding="utf-8")
    report = seeded.json("import", records, "--apply")
    assert report["refusals"][0]["reason"] == "malformed" and "noncharacter" in report["refusals"][0]["message"]


@pytest.mark.parametrize(
    "argv",
    [
        ["add-entity", "repo/x", "--name", "web" + SURROGATE],
        ["add-entity", "repo/x", "--name", "x", "--summary", SURROGATE],
        ["add-entity", "repo/x", "--name", "x", "--alias", "a" + SURROGATE + "b"],
        ["propose", "webapp", "caveat", "--value", SURROGATE, "-s", "slack:p1"],
        ["propose", "webapp", "caveat", "--value", "fine", "-s", "slack:p1" + SURROGATE],
        ["search", SURROGATE],
        ["identify", "web" + SURROGATE],
        ["sparql", "SELECT * WHERE { ?s ?p ?o } # " + SURROGATE],
        ["org", "add", "Acme" + SURROGATE],
        ["identifiers", "add", "Dana", "chat", "U1" + SURROGATE],
        ["lookup", SURROGATE],
        ["mentions", SURROGATE],
    ],
    ids=[
        "name",
        "summary",
        "alias",
        "value",
        "source",
        "search",
        "identify",
        "sparql",
        "org-add",
        "identifier",
        "lookup",
        "mentions",
    ],
)
def test_an_argument_that_is_not_utf8_is_refused(seeded, argv):
    before = seeded.snapshot()
    line = one_line(seeded(*argv, expect=2))
    assert "is not UTF-8 text" in line and "\\udcff" in line
    assert seeded.snapshot() == before


def test_a_value_longer_than_the_text_limit_is_refused(seeded, monkeypatch):
    before = seeded.snapshot()
    line = one_line(seeded("propose", "webapp", "caveat", "--value", "x" * 70_000, "-s", "slack:p1", expect=2))
    assert "the value for caveat is 70000 characters long; the most is 65536" in line and "KGRDF_MAX_TEXT" in line
    monkeypatch.setenv("KGRDF_MAX_TEXT", "300")
    line = one_line(seeded("propose", "webapp", "caveat", "--value", "v" * 301, "-s", "slack:p1", expect=2))
    assert "301 characters long; the most is 300" in line
    monkeypatch.delenv("KGRDF_MAX_TEXT")
    assert seeded.snapshot() == before


LONG = "x" * 70_000


@pytest.mark.parametrize(
    "argv, code, says",
    [
        (["lookup", LONG], 2, "the most is 65536"),
        (["facts", LONG], 2, "the most is 65536"),
        (["neighbors", LONG], 2, "the most is 65536"),
        (["identify", LONG], 2, "the most is 65536"),
        (["search", LONG], 2, "the most is 65536"),
        (["context", "--for", LONG], 2, "the most is 65536"),
        (["propose", LONG, "caveat", "--value", "x", "-s", "slack:p1"], 2, "the most is 65536"),
        (["facts", "webapp", "-p", LONG], 1, "unknown predicate 'xxx"),
    ],
    ids=["lookup", "facts", "neighbors", "identify", "search", "context", "propose subject", "predicate"],
)
def test_a_name_longer_than_the_text_limit_is_refused_in_one_short_line(seeded, argv, code, says):
    """A name or a text to look for longer than KGRDF_MAX_TEXT is bad input (exit 2), as a value is:
    no entity can hold it. The line says how long it is, not what it is (70 KB on one line)."""
    before = seeded.snapshot()
    result = seeded(*argv, expect=code)
    assert says in one_line(result) and len(result.stdout + result.stderr) < 400
    assert seeded.snapshot() == before


@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "--perspective", "main\n"],
        ["add-entity", "repo/x", "--name", "x", "--perspective", "main\n"],
        ["history", "f-aaaaaa\n"],
    ],
    ids=["read", "write", "fact-id"],
)
def test_a_trailing_newline_is_no_part_of_a_name(seeded, argv):
    before = seeded.snapshot()
    one_line(seeded(*argv, expect=1 if argv[0] == "history" else 2))
    assert seeded.snapshot() == before
    assert seeded.json("lookup", "repo/web-app\n")["entity"]["id"] == "repo/web-app"  # spaces around go


@pytest.mark.parametrize(
    "argv, role",
    [
        (["forget", ""], "entity"),
        (["lookup", "  "], "entity"),
        (["facts", "\t"], "subject"),
        (["propose", "", "caveat", "--value", "x", "--source", "slack:m1"], "subject"),
        (["propose", "release", "has_step", "--object", " ", "--source", "slack:m1"], "object"),
    ],
)
def test_an_empty_entity_is_said_to_be_empty_by_its_role(seeded, argv, role):
    """An empty name names no entity: the line says which argument is empty, not that a search the
    user never asked for "needs some text", and nothing is written."""
    before = seeded.snapshot()
    line = one_line(seeded(*argv, expect=2))
    assert line == f"kg: the {role} is empty: give an entity id, name or alias"
    assert seeded.snapshot() == before


def test_a_perspective_from_the_environment_is_checked_too(seeded, monkeypatch):
    monkeypatch.setenv("KGRDF_PERSPECTIVE", "main\n")
    assert "perspective 'main\\n' must be" in one_line(seeded("stats", expect=2))


def test_quiet_days_beyond_the_calendar_list_the_customers_never_spoken_to(seeded):
    seeded("org", "init", "Fernhill")
    seeded("org", "add", "Acme")
    seeded("propose", "Acme", "customer_of", "--object", "Fernhill", "-s", "ledger:c1", "-s", "report:r1")
    for days in ("99999999999", str(10**30)):
        result = seeded.json("org", "customers", "--quiet-days", days)
        assert [c["id"] for c in result["customers"]] == ["organization/acme"]


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_time_pushed_past_the_calendar_by_its_zone_is_refused(seeded, value):
    before = seeded.snapshot()
    line = one_line(
        seeded("propose", "webapp", "caveat", "--value", "x", "-s", "slack:p1", "--valid-from", value, expect=2)
    )
    assert "outside the years 1 to 9999" in line
    assert "outside the years" in one_line(seeded("facts", "webapp", "--as-of", value, expect=2))
    assert seeded.snapshot() == before


# --- import records -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record,field",
    [
        ({"type": "entity", "id": "repo/x", "name": 7}, "name must be text, not a number (7)"),
        ({"type": "entity", "id": "repo/x", "name": ["x"]}, "name must be text, not a list"),
        ({"type": "entity", "id": "repo/x", "name": "x", "aliases": "xx"}, "aliases must be a list of texts, not text"),
        ({"type": "entity", "id": "repo/x", "name": "x", "aliases": [1]}, "each of aliases must be text"),
        ({"type": "entity", "id": 5, "name": "x"}, "id must be text"),
        ({"type": "entity", "id": "repo/x", "name": "web" + SURROGATE}, "name is not UTF-8 text"),
        ({"type": "entity", "id": "repo/x", "name": "x", "summary": {"a": 1}}, "summary must be text, not an object"),
        (
            {"type": "fact", "subject": "webapp", "predicate": "caveat", "value": 123, "sources": ["slack:p1"]},
            "value must be text, not a number (123)",
        ),
        (
            {
                "type": "fact",
                "subject": "webapp",
                "predicate": "caveat",
                "value": "x",
                "valid_from": 20260101,
                "sources": ["slack:p1"],
            },
            "valid_from must be text, not a number (20260101)",
        ),
        (
            {"type": "fact", "subject": "webapp", "predicate": "caveat", "value": "x", "sources": "slack:p1"},
            "sources must be a list, not text",
        ),
        (
            {"type": "fact", "subject": "webapp", "predicate": "caveat", "value": "x", "sources": [7]},
            "a source is KIND:REF",
        ),
        (
            {
                "type": "fact",
                "subject": "webapp",
                "predicate": "caveat",
                "value": "x",
                "sources": [{"kind": "slack", "ref": ["p"]}],
            },
            "a source ref must be text",
        ),
        (
            {"type": "fact", "subject": ["webapp"], "predicate": "caveat", "value": "x", "sources": ["slack:p1"]},
            "subject must be text",
        ),
        (
            {
                "type": "fact",
                "subject": "webapp",
                "predicate": "caveat",
                "value": "x",
                "sources": ["slack:p1"],
                "prevents_rework": "no",
            },
            "prevents_rework must be true or false",
        ),
        (
            {
                "type": "fact",
                "subject": "webapp",
                "predicate": "caveat",
                "value": "x",
                "sources": ["slack:p1"],
                "order": True,
            },
            "order must be a whole number",
        ),
        (
            {
                "type": "fact",
                "subject": "webapp",
                "predicate": "caveat",
                "value": "x",
                "sources": ["slack:p1"],
                "extracted": True,
                "confidence": "high",
            },
            "confidence must be a number",
        ),
        ({"type": "fact", "predicate": "caveat", "value": "x", "sources": ["slack:p1"]}, 'needs "subject"'),
    ],
)
def test_a_field_of_the_wrong_kind_refuses_its_record_alone(seeded, tmp_path, record, field):
    path = tmp_path / "seed.jsonl"
    good = {"type": "entity", "id": "repo/fine", "name": "fine"}
    path.write_text(json.dumps(record) + "\n" + json.dumps(good) + "\n", encoding="utf-8")
    report = seeded.json("import", path, "--apply")
    assert report["refused"] == {"malformed": 1} and report["entities"] == {"created": 1}
    assert report["refusals"][0]["line"] == 1 and field in report["refusals"][0]["message"], report["refusals"]


def test_a_record_nested_beyond_reading_is_refused_alone(seeded, tmp_path):
    path = tmp_path / "seed.jsonl"
    deep = '{"type": "fact", "value": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path.write_text(deep + "\n" + '{"type": "entity", "id": "repo/fine", "name": "fine"}\n', encoding="utf-8")
    report = seeded.json("import", path, "--apply")
    assert report["refused"] == {"malformed": 1} and "nests too deep" in report["refusals"][0]["message"]
    assert report["entities"] == {"created": 1}


def test_a_number_longer_than_python_reads_is_refused_in_kgs_words(seeded, tmp_path):
    """A number of more than 4,300 digits was refused with Python's advice to call
    sys.set_int_max_str_digits(), which no user of kg can follow."""
    path = tmp_path / "seed.jsonl"
    path.write_text('{"type": "entity", "id": "repo/x", "name": "x", "n": ' + "9" * 5000 + "}\n", encoding="utf-8")
    said = seeded.json("import", path)["refusals"][0]["message"]
    assert said == "not JSON: a number has more than 4300 digits"
    schema = tmp_path / "schema.json"
    schema.write_text('{"types": [], "predicates": [], "n": ' + "9" * 5000 + "}", encoding="utf-8")
    checked = seeded("schema", "check", schema, expect=1).stdout
    assert "schema.json is not JSON: a number has more than 4300 digits" in checked and "sys." not in checked


def test_an_item_of_an_array_nested_beyond_reading_is_refused_alone(seeded, tmp_path):
    """In a JSON array, one item nested too deep refused the whole file, naming another item's fault
    (a key given twice), and with that fault mended, the file still."""
    path = tmp_path / "seed.json"
    twice = '{"type": "entity", "type": "entity", "id": "repo/twice", "name": "twice"}'
    deep = '{"type": "fact", "value": ' + "[" * 5_000 + "]" * 5_000 + "}"
    fine = '{"type": "entity", "id": "repo/fine", "name": "fine"}'
    path.write_text(f"[\n{twice},\n{deep},\n{fine}\n]\n", encoding="utf-8")
    report = seeded.json("import", path, "--apply")
    assert report["refused"] == {"malformed": 2} and report["entities"] == {"created": 1}
    assert [(r["line"], r["message"]) for r in report["refusals"]] == [
        (2, "not JSON: the key 'type' is given twice"),
        (3, "not JSON: it nests too deep"),
    ]


def test_a_line_of_bytes_that_are_not_utf8_is_refused_alone(seeded, tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_bytes(
        b'{"type": "entity", "id": "repo/x", "name": "\xff"}\n{"type": "entity", "id": "repo/fine", "name": "fine"}\n'
    )
    report = seeded.json("import", path)
    assert report["refusals"] == [{"line": 1, "reason": "malformed", "message": "the line is not UTF-8 text"}]


def test_a_separator_inside_a_json_string_does_not_split_the_line(seeded, tmp_path):
    path = tmp_path / "seed.jsonl"
    record = {"type": "entity", "id": "repo/sep", "name": "one\u2028two\x0cthree"}
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    report = seeded.json("import", path, "--apply")
    assert report["records"] == 1 and report["entities"] == {"created": 1}, report


def test_a_value_beyond_the_text_limit_is_refused_with_its_size(seeded, tmp_path, monkeypatch):
    path = tmp_path / "seed.jsonl"
    huge = {"type": "fact", "subject": "webapp", "predicate": "caveat", "value": "x" * 200_000, "sources": ["slack:p1"]}
    path.write_text(json.dumps(huge) + "\n", encoding="utf-8")
    before = seeded.snapshot()
    report = seeded.json("import", path, "--apply")
    assert report["refused"] == {"malformed": 1}
    assert "200000 characters long; the most is 65536" in report["refusals"][0]["message"]
    monkeypatch.setenv("KGRDF_MAX_LINE", "1000")
    report = seeded.json("import", path, "--apply")
    assert (
        "the line is 200" in report["refusals"][0]["message"] and "KGRDF_MAX_LINE" in report["refusals"][0]["message"]
    )
    array = tmp_path / "seed.json"  # a record of an array is bound as a line is (it was taken whole)
    array.write_text(json.dumps([huge, {"type": "entity", "id": "repo/fine", "name": "fine"}]), encoding="utf-8")
    report = seeded.json("import", array)
    assert report["refused"] == {"malformed": 1} and report["entities"] == {"created": 1}
    assert (
        report["refusals"][0]["message"].startswith("the record is 200")
        and "KGRDF_MAX_LINE" in report["refusals"][0]["message"]
    )
    assert seeded.snapshot() == before


# --- files that never end, or are too large -------------------------------------------------------


def test_an_import_from_a_device_or_a_folder_is_refused(seeded, tmp_path):
    before = seeded.snapshot()
    assert "/dev/zero is not a file" in one_line(seeded("import", "/dev/zero", "--apply", expect=2))
    assert "is a folder" in one_line(seeded("import", tmp_path, "--apply", expect=2))
    assert seeded.snapshot() == before


def test_an_import_larger_than_its_bound_is_refused_before_it_is_read(seeded, tmp_path, monkeypatch):
    path = tmp_path / "seed.jsonl"
    path.write_text('{"type": "entity", "id": "repo/x", "name": "x"}\n' * 100, encoding="utf-8")
    monkeypatch.setenv("KGRDF_MAX_IMPORT", "1000")
    before = seeded.snapshot()
    line = one_line(seeded("import", path, "--apply", expect=2))
    assert "larger than 1000 bytes" in line and "KGRDF_MAX_IMPORT" in line
    assert seeded.snapshot() == before


def test_a_transcript_that_never_ends_or_is_too_large_is_refused(seeded, tmp_path, monkeypatch):
    talk = tmp_path / "talk.jsonl"
    talk.write_text(json.dumps({"role": "user", "content": "deploys are announced in #deploys"}) + "\n")
    words = [
        "propose",
        "release",
        "posts_to",
        "--object",
        "#deploys",
        "--from-user",
        "--quote",
        "deploys are announced in #deploys",
        "--transcript",
    ]
    before = seeded.snapshot()
    assert "/dev/zero is not a file" in one_line(seeded(*words, "/dev/zero", expect=2))
    monkeypatch.setenv("KGRDF_MAX_TRANSCRIPT", "20")
    assert "larger than 20 bytes" in one_line(seeded(*words, talk, expect=2))
    assert seeded.snapshot() == before
    monkeypatch.setenv("KGRDF_MAX_TRANSCRIPT", "1000")
    assert seeded.json(*words, talk)["status"] == "confirmed"


def test_a_message_on_standard_input_is_bounded_and_utf8(seeded, monkeypatch):
    from typer.testing import CliRunner

    from kgrdf.cli import app

    runner = CliRunner()
    kb = ["--kb", str(seeded.path)]
    result = runner.invoke(app, ["mentions", "-", *kb], input=b"ping web-app \xff")
    assert result.exit_code == 2 and "not UTF-8 text" in one_line(result)
    monkeypatch.setenv("KGRDF_MAX_TEXT", "100")
    result = runner.invoke(app, ["context", "--message", "-", *kb], input=b"web-app " * 50)
    assert result.exit_code == 2 and "the most is 100" in one_line(result)
    assert runner.invoke(app, ["mentions", "-", "--json", *kb], input=b"ping web-app").exit_code == 0


# --- the knowledge base's folder ------------------------------------------------------------------


def test_the_way_to_a_knowledge_base_a_missing_one_names_works_as_pasted(tmp_path, monkeypatch):
    """ "kg init --kb PATH makes one" failed as pasted for a folder of other files (kg init refuses
    it), for a path with a space (unquoted) and for KGRDF_HOME=~/kb (~ taken as a folder's name);
    a folder of notes holding a journal/ was called a damaged knowledge base (exit 3), its advice a
    git checkout of a file it never had."""
    import shlex

    from kgrdf.cli import app
    from tests.conftest import runner

    notes, spaced = tmp_path / "notes", tmp_path / "my kbs" / "team"
    (notes / "journal").mkdir(parents=True)
    (notes / "journal" / "a.md").write_text("x")
    line = one_line(runner.invoke(app, ["stats", "--kb", str(notes)]))
    assert runner.invoke(app, ["stats", "--kb", str(notes)]).exit_code == 1
    assert line.endswith("(kg init --kb makes one in a new or empty folder)"), line
    line = one_line(runner.invoke(app, ["stats", "--kb", str(spaced)]))
    pasted = shlex.split(line.split("(", 1)[1].split(" makes one")[0])
    assert runner.invoke(app, pasted[1:]).exit_code == 0 and (spaced / "format.json").is_file()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KGRDF_HOME", "~/kb")
    assert runner.invoke(app, ["init"]).exit_code == 0 and (tmp_path / "kb" / "format.json").is_file()
    assert runner.invoke(app, ["stats"]).exit_code == 0
    # --kb '~/...' quoted (or given by a program, which no shell reads) is read as a shell reads ~
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["init", "--kb", "~/quoted"]).exit_code == 0
    assert (tmp_path / "quoted" / "format.json").is_file() and not (tmp_path / "~").exists()
    assert runner.invoke(app, ["stats", "--kb", "~/quoted"]).exit_code == 0


def test_kb_on_a_file_or_under_proc_is_no_knowledge_base(kg, tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    assert "is a file, not a knowledge base folder" in one_line(kg("stats", "--kb", a_file, kb=False, expect=1))
    assert "no knowledge base at /proc/self" in one_line(kg("stats", "--kb", "/proc/self", kb=False, expect=1))
    assert "cannot make a knowledge base" in one_line(kg("init", "--kb", "/proc/self/kb", kb=False, expect=2))
    assert "Not a directory" in one_line(kg("init", "--kb", a_file / "kb", kb=False, expect=2))
    assert "is a file, not a folder" in one_line(kg("init", "--kb", a_file, kb=False, expect=2))
    assert a_file.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["kb", "notes.txt"]


def _refuse_new_files(folder):
    """Make ``folder`` refuse new files: the immutable attribute as root (who may write in a
    read-only folder), the folder's mode otherwise. Returns the undo."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
        return lambda: subprocess.run(["chattr", "-i", str(folder)], check=True)
    folder.chmod(0o555)
    return lambda: folder.chmod(0o755)


def test_a_folder_that_refuses_new_files_is_one_line_and_nothing_written(seeded, tmp_path):
    before = seeded.snapshot()
    undo = _refuse_new_files(seeded.path)
    try:
        line = one_line(seeded("add-entity", "repo/new", "--name", "new", expect=3))
        assert f"the knowledge base at {seeded.path} cannot be written here: its folder is read-only" in line, line
        assert seeded.json("lookup", "webapp")["entity"]["id"] == "repo/web-app"  # reads go on
        shut = tmp_path / "shut"
        shut.mkdir()
        undo_shut = _refuse_new_files(shut)
        try:
            assert "cannot make a knowledge base" in one_line(seeded("init", "--kb", shut / "kb", kb=False, expect=2))
        finally:
            undo_shut()
        assert list(shut.iterdir()) == []
    finally:
        undo()
    assert seeded.snapshot() == before
    seeded("add-entity", "repo/new", "--name", "new")  # and once it takes files again, writes go on


def test_a_lock_that_is_a_folder_is_one_line(seeded):
    before = seeded.snapshot()
    (seeded.path / "lock").unlink()
    (seeded.path / "lock").mkdir()
    for argv in (["stats"], ["add-entity", "repo/new", "--name", "new"]):
        line = one_line(seeded(*argv, expect=3))
        assert "the lock file" in line and "cannot be opened" in line and "remove a link or folder" in line
    (seeded.path / "lock").rmdir()
    assert seeded.snapshot() == before


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf", "1e30", ""])
def test_a_lock_timeout_that_is_not_seconds_is_bad_input(seeded, monkeypatch, value):
    before = seeded.snapshot()
    monkeypatch.setenv("KGRDF_LOCK_TIMEOUT", value)
    if not value:  # unset is the default
        seeded("stats")
        return
    for argv in (["stats"], ["add-entity", "repo/new", "--name", "new"]):
        assert "KGRDF_LOCK_TIMEOUT=" in one_line(seeded(*argv, expect=2))
    monkeypatch.delenv("KGRDF_LOCK_TIMEOUT")
    assert seeded.snapshot() == before


def test_a_query_memory_past_what_the_system_can_bound_is_named_as_the_setting(seeded, monkeypatch):
    """KGRDF_QUERY_MEMORY past 2^64 bytes: every kg sparql failed as a query 'nested or chained this
    deep', the setting never named (the system's limit overflowed in the query's child)."""
    monkeypatch.setenv("KGRDF_QUERY_MEMORY", "17592186044415")
    assert "KGRDF_QUERY_MEMORY='17592186044415' must be between 1 and 1073741824" in one_line(
        seeded("sparql", "ASK {}", expect=2)
    )
    monkeypatch.setenv("KGRDF_QUERY_MEMORY", "1073741824")
    assert seeded.json("sparql", "ASK {}")["boolean"] is True


@pytest.mark.parametrize(
    "command",
    [["add-entity", "system/{long}", "--name", "Long"], ["org", "add", "Acme", "--id", "organization/{long}"]],
)
def test_an_entity_id_longer_than_a_text_may_be_is_refused_and_nothing_written(seeded, monkeypatch, command):
    """The entity was made with an id no command could name it by afterwards (each refused it as
    longer than KGRDF_MAX_TEXT), and kg import refused the same id."""
    monkeypatch.setenv("KGRDF_MAX_TEXT", "40")
    before = seeded.snapshot()
    argv = [a.replace("{long}", "a" * 50) for a in command]
    line = one_line(seeded(*argv, expect=2))
    assert "the entity id is" in line and "characters long; the most is 40" in line
    assert seeded.snapshot() == before


def test_an_organization_id_made_from_a_long_name_says_so_and_how_to_give_one(seeded, monkeypatch):
    """The name was within the bound, and the refusal spoke of an entity id nobody gave."""
    monkeypatch.setenv("KGRDF_MAX_TEXT", "40")
    before = seeded.snapshot()
    line = one_line(seeded("org", "add", "b" * 40, expect=2))
    assert line == "kg: the id made from the name is 53 characters long; the most is 40 (give a shorter one with --id)"
    assert seeded.snapshot() == before
    seeded("org", "add", "b" * 40, "--id", "bees")


def test_a_day_setting_beyond_the_calendar_is_bad_input(seeded, monkeypatch):
    monkeypatch.setenv("KGRDF_PROPOSAL_DAYS", "99999999999")
    before = seeded.snapshot()
    assert "KGRDF_PROPOSAL_DAYS='99999999999' must be between 1 and 36525" in one_line(seeded("expire", expect=2))
    assert seeded.snapshot() == before


@pytest.mark.parametrize(
    "content",
    [
        "[1,2,3]",
        '{"groups": [1]}',
        '{"groups": [{"number": "x"}]}',
        '{"groups": [{"number": 1, "title": "t", "facts": [{"id": 5, "sentence": ""}]}]}',
        '"batch"',
        "[" * 100_000,
    ],
)
def test_a_batch_json_edited_by_hand_is_bad_input(seeded, content):
    seeded("propose", "webapp", "caveat", "--value", "x", "-s", "slack:p1")
    seeded("batch")
    (seeded.path / "batch.json").write_text(content)
    before = seeded.snapshot()
    line = one_line(seeded("batch", "apply", "confirm all", expect=2))
    assert "batch.json" in line and "kg batch prints and saves a new one" in line
    assert seeded.snapshot() == before


# --- the unexpected -------------------------------------------------------------------------------


def test_an_unexpected_error_is_one_line_reported_as_a_bug(seeded, monkeypatch):
    from kgrdf import session

    def broken(self):
        return {}["a bug"]

    monkeypatch.setattr(session.Session, "stats", broken)
    result = seeded("stats", expect=3)
    line = one_line(result)
    assert "an unexpected error (KeyError: 'a bug')" in line and "this is a bug in kgrdf" in line
    assert "KGRDF_DEBUG=1" in line
    assert json.loads(seeded("stats", "--json", expect=3).stdout)["error"] == "bug"
    monkeypatch.setenv("KGRDF_DEBUG", "1")
    debug = seeded("stats", expect=3)
    assert "Traceback" in debug.stderr and debug.stderr.strip().splitlines()[-1].startswith("kg: an unexpected error")


def test_a_real_process_given_bytes_that_are_not_utf8_says_so_in_one_line(seeded):
    result = subprocess.run(
        [sys.executable, "-m", "kgrdf", "search", b"web\xffapp", "--kb", seeded.path], capture_output=True
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.decode().count("\n") == 1 and b"not UTF-8 text" in result.stderr


@pytest.mark.parametrize(
    "argv,message",
    [
        (["propose"], "Missing argument 'subject' (kg propose -h shows the usage)"),
        (["neighbors", "webapp", "--hops", "abc"], "'abc' is not a valid int (kg neighbors -h shows the usage)"),
        (["org", "customers", "--quiet-days", "1e9"], "(kg org customers -h shows the usage)"),
        (["lookup", "webapp", "--bogus"], "No such option: --bogus"),
        (["bogus"], "No such command 'bogus'"),
    ],
)
def test_a_usage_error_is_one_line(seeded, argv, message):
    assert message in one_line(seeded(*argv, expect=2))


@pytest.mark.parametrize(
    "argv",
    [
        ["add-entity", "repo/b", "--name", "{big}"],
        ["add-entity", "repo/b", "--name", "b", "--summary", "{big}"],
        ["add-entity", "repo/b", "--name", "b", "--alias", "{big}"],
        ["add-entity", "repo/b", "--name", "b", "--weak-alias", "{big}"],
        ["propose", "webapp", "caveat", "--value", "a", "--source", "doc:{big}"],
        ["propose", "webapp", "caveat", "--value", "a", "--source", "doc:a", "--message", "{big}"],
        ["org", "add", "{big}"],
    ],
)
def test_every_text_field_is_held_to_the_text_limit(seeded, argv):
    """One limit (KGRDF_MAX_TEXT) for every text a write keeps, not only a fact's value."""
    before = seeded.snapshot()
    line = one_line(seeded(*[a.replace("{big}", "x" * 70_000) for a in argv], expect=2))
    assert "70000 characters long; the most is 65536" in line or "70004 characters long" in line, line
    assert seeded.snapshot() == before


@pytest.mark.parametrize("date", ["0001-01-01", "0999-12-31"])
def test_a_date_before_the_year_1000_is_written_as_four_digits(seeded, date):
    made = seeded.json(
        "propose", "webapp", "caveat", "--value", f"since {date}", "--source", "doc:a", "--valid-from", date
    )
    assert made["valid_from"] == f"{date}T00:00:00Z", made
    assert made["id"] in [f["id"] for f in seeded.json("facts", "webapp", "--as-of", f"{date}T12:00:00Z")["facts"]]
    seeded("validate")


def test_an_import_whose_every_record_is_refused_says_so_not_to_apply_it(seeded, tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text('7\n{"type": "entity", "id": "repo/q", "name": 7}\n', encoding="utf-8")
    before = seeded.snapshot()
    result = seeded("import", path, "--apply")
    assert "no record of it changes the knowledge base" in result.stdout and "--apply" not in result.stdout
    assert result.stdout.startswith(f"nothing to write from {path}: 2 records")  # not a dry run: it was applied
    assert seeded.snapshot() == before
    path.write_text("", encoding="utf-8")
    assert seeded("import", path, "--apply").stdout.startswith(f"nothing to write from {path}: 0 records")
    assert seeded("import", path).stdout.startswith(f"dry run of {path}: 0 records")
    assert seeded.snapshot() == before


def test_an_import_from_a_named_pipe_with_no_writer_does_not_wait_for_one(seeded, tmp_path):
    """A named pipe nobody writes to reads as empty instead of blocking the command forever."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    before = seeded.snapshot()
    done = subprocess.run(
        [sys.executable, "-m", "kgrdf", "import", str(pipe), "--apply", "--kb", str(seeded.path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "0 records" in done.stdout, done.stderr
    assert seeded.snapshot() == before


def test_an_error_quoting_a_line_separator_stays_one_line(kg):
    """A refusal quotes what it was given; a line or paragraph separator in it (U+2028, U+0085 ...)
    is written escaped, so the reason is still one line for a program that reads lines."""
    for text in ("\u2028", "a\u2029b", "x\x85y", "p\x0bq"):
        line = one_line(kg("propose", "repo/api", "caveat", text, expect=2))
        assert line.startswith("kg: ") and "unexpected extra argument" in line
