"""One contract for every command (§7): a file that cannot be read is exit 2 and one line naming it,
wherever a command takes a file; usage errors under --json are a JSON error document like any
other error's; what exits 1 without an error is documented; every setting is in the README."""

import ast
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kgrdf.cli import app

from .conftest import Kg, one_line

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
KINDS = {"refused", "not_found", "bad_input", "damaged", "bug"}
runner = CliRunner()


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Kg:
    """A small knowledge base these tests share: none of them writes to it (each checks)."""
    kg = Kg(tmp_path_factory.mktemp("contract") / "kb")
    kg("init")
    kg("add-entity", "repo/web-app", "--name", "web-app", "--alias", "webapp")
    return kg


def commands(command=None, path=("kg",)):
    """(path, click command) for every command kg has, groups included."""
    command = command or typer.main.get_command(app)
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from commands(sub, (*path, name))


# --- a file that cannot be read -----------------------------------------------------------------------

TRANSCRIPT_WORDS = [
    "propose",
    "webapp",
    "caveat",
    "--value",
    "slow",
    "--from-user",
    "--quote",
    "the api is slow on mondays",
]
# Each place a command takes a file: the arguments, with {} where the path goes. A file a command
# writes (--output) may be missing: it is made.
FILE_TAKERS = {
    ("kg import", "file"): ["import", "{}"],
    ("kg import", "file", "--apply"): ["import", "{}", "--apply"],
    ("kg schema check", "file"): ["schema", "check", "{}"],
    ("kg schema check", "file", "--kb"): ["schema", "check", "{}", "--kb", "{kb}"],
    ("kg propose", "--transcript"): [*TRANSCRIPT_WORDS, "--transcript", "{}"],
    ("kg sparql", "query"): ["sparql", "{}"],
    ("kg export", "--output"): ["export", "--output", "{}"],
}
WRITTEN = {("kg export", "--output")}
# Each place a command takes a folder it reads (kg serve --transcripts): the arguments, {} its path.
FOLDER_TAKERS = {("kg serve", "--transcripts"): ["serve", "--port", "9", "--transcripts", "{}"]}
CASES = [
    (key, what)
    for key in sorted(FILE_TAKERS)
    for what in ("missing", "folder", "in-a-missing-folder")
    if not (what == "missing" and key[:2] in WRITTEN)
]


def test_every_parameter_that_takes_a_file_is_in_the_table():
    """A new command or option of a path (other than --kb, the knowledge base) needs a case above."""
    found = {
        (" ".join(path), param.name if param.param_type_name == "argument" else param.opts[0])
        for path, command in commands()
        for param in command.params
        if any(kind.__name__.endswith("Path") for kind in type(param.type).__mro__)
    }
    found = {f for f in found if f[1] != "--kb"}
    found.add(("kg sparql", "query"))  # QUERY_OR_FILE: a query's text, or the path of a .rq file
    assert found == {key[:2] for key in FILE_TAKERS} | set(FOLDER_TAKERS)


@pytest.mark.parametrize("key", sorted(FOLDER_TAKERS), ids=lambda key: " ".join(key).removeprefix("kg "))
@pytest.mark.parametrize("what", ["missing", "a file"])
def test_a_folder_that_is_none_is_exit_2_and_one_line_naming_it(base, tmp_path, key, what):
    path = tmp_path / "missing"
    if what == "a file":
        path.write_text("{}")
    before = base.snapshot()
    result = base(*_argv([*FOLDER_TAKERS[key], "--kb", "{kb}"], path, base.path), expect=2)
    assert str(path) in one_line(result) and "is not a folder" in one_line(result)
    assert base.snapshot() == before


def _argv(words, path, kb):
    return [w.replace("{}", str(path)).replace("{kb}", str(kb)) for w in words]


@pytest.mark.parametrize(
    "key,what", CASES, ids=lambda v: " ".join(v[:1] + v[2:]).removeprefix("kg ") if isinstance(v, tuple) else v
)
def test_a_file_that_cannot_be_read_or_written_is_exit_2_and_one_line_naming_it(base, tmp_path, key, what):
    path = {
        "missing": tmp_path / "missing.rq",
        "folder": tmp_path,
        "in-a-missing-folder": tmp_path / "nowhere" / "x.rq",
    }[what]
    argv = _argv(FILE_TAKERS[key], path, base.path)
    before = base.snapshot()
    line = one_line(base(*argv, expect=2))
    assert str(path) in line, line
    doc = json.loads(base(*argv, "--json", expect=2).stdout)
    assert doc["error"] == "bad_input" and str(path) in doc["message"]
    assert base.snapshot() == before


def test_schema_check_of_a_missing_file_is_exit_2_as_everywhere(tmp_path):
    result = runner.invoke(app, ["schema", "check", str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    assert one_line(result) == f"kg: cannot read the schema file {tmp_path / 'missing.json'}: No such file or directory"


# --- an answer that standard output does not take -------------------------------------------------------


def _kg_into(argv, stdout, buffered: bool = True) -> subprocess.CompletedProcess:
    """kg run as a real process whose standard output is ``stdout`` (a file object), Python's own
    buffering of it on or off (PYTHONUNBUFFERED)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    command = [sys.executable, "-m", "kgrdf", *(str(a) for a in argv)]
    return subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env, timeout=120)


def _into_full(argv, buffered: bool = True) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:  # a device that takes no byte: ENOSPC
        return _kg_into(argv, full, buffered)


def _into_closed_pipe(argv) -> subprocess.CompletedProcess:
    read, write = os.pipe()
    os.close(read)  # the reader went away before kg wrote its answer: EPIPE
    with os.fdopen(write, "w") as pipe:
        return _kg_into(argv, pipe)


NO_ANSWER = "kg: cannot write the answer to standard output: No space left on device"


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize(
    "argv", [["export"], ["lookup", "webapp"], ["lookup", "webapp", "--json"], ["lint"]], ids=" ".join
)
def test_an_answer_that_standard_output_does_not_take_is_one_line_exit_2(base, argv, buffered):
    """Not a damaged knowledge base (exit 3), nor a traceback, nor an error written again to the
    output that failed: one line on stderr, exit 2 as for a file to write that cannot be."""
    before = base.snapshot()
    done = _into_full([*argv, "--kb", base.path], buffered)
    assert (done.returncode, done.stderr) == (2, f"{NO_ANSWER} (send standard output where it can be written)\n")
    assert base.snapshot() == before


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_a_write_whose_answer_is_lost_says_it_was_made(kg, tmp_path, json_flag, buffered):
    """A program told the write failed would make it again: the line says it is in the journal."""
    records = tmp_path / "r.jsonl"
    records.write_text('{"type": "entity", "id": "repo/zeta", "name": "zeta"}\n', encoding="utf-8")
    dry = _into_full(["import", records, "--kb", kg.path, *json_flag], buffered)
    assert (dry.returncode, dry.stderr) == (2, f"{NO_ANSWER} (send standard output where it can be written)\n")
    kg("lookup", "repo/zeta", expect=1)
    done = _into_full(["import", records, "--apply", "--kb", kg.path, *json_flag], buffered)
    seq = kg.json("status")["journal"]["transactions"]
    assert (done.returncode, done.stderr) == (
        2,
        f"{NO_ANSWER}; the command's write was made all the same: transaction {seq} is in the journal "
        "(do not make it again)\n",
    )
    assert kg.json("lookup", "repo/zeta")["entity"]["name"] == "zeta"


def _with_closed(fd: int, argv) -> subprocess.CompletedProcess:
    """kg run with the standard stream ``fd`` closed, as ``kg ... >&-`` (or ``2>&-``) runs it."""
    command = [sys.executable, "-m", "kgrdf", *(str(a) for a in argv)]
    return subprocess.run(
        ["sh", "-c", f'exec "$@" {fd}>&-', "sh", *command],
        stdout=subprocess.PIPE if fd != 1 else None,
        stderr=subprocess.PIPE if fd != 2 else None,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_a_write_to_a_closed_standard_output_says_it_was_made(kg, json_flag):
    """kg propose ... >&-: the fact was written, then 'a bug in kgrdf' (exit 3), or with --json a
    traceback and exit 1, and never a word of the write that was made."""
    kg("add-entity", "repo/api", "--name", "api")
    done = _with_closed(
        1, ["propose", "api", "caveat", "--value", "slow", "-s", "slack:1", "--kb", kg.path, *json_flag]
    )
    seq = kg.json("status")["journal"]["transactions"]
    assert (done.returncode, done.stderr) == (
        2,
        "kg: cannot write the answer to standard output: Bad file descriptor; the command's write was made "
        f"all the same: transaction {seq} is in the journal (do not make it again)\n",
    )
    assert [f["value"] for f in kg.json("facts", "api")["facts"]] == ["slow"]


def test_a_closed_standard_error_keeps_the_exit_code_and_the_output_clean(kg):
    """kg lookup Nobody 2>&-: its error line went to standard output, as 'a bug in kgrdf' (exit 3)."""
    done = _with_closed(2, ["lookup", "Nobody", "--kb", kg.path])
    assert (done.returncode, done.stdout) == (1, "")
    said = _with_closed(2, ["lookup", "Nobody", "--kb", kg.path, "--json"])
    assert said.returncode == 1 and json.loads(said.stdout)["error"] == "not_found"


def test_a_closed_standard_input_reads_as_empty(kg):
    """kg mentions - <&-: 'a bug in kgrdf' (sys.stdin was none), exit 3."""
    command = [sys.executable, "-m", "kgrdf", "mentions", "-", "--kb", str(kg.path)]
    done = subprocess.run(["sh", "-c", 'exec "$@" <&-', "sh", *command], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "no known name or alias is mentioned\n", "")


@pytest.mark.parametrize("argv", [["org", "add", "--help"], ["org", "add", "Foo"], ["batch", "apply", "--help"]])
def test_a_group_s_command_whose_answer_is_not_taken_says_so_once(kg, argv):
    """Said twice: by the group's command, then by kg's own invoke."""
    done = _into_full([*argv, "--kb", kg.path])
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and done.stderr.startswith(NO_ANSWER), done.stderr


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_a_locale_that_cannot_write_a_name_gets_it_escaped_and_a_write_is_made_once(kg, encoding):
    """Standard output in ISO-8859-1 (or ASCII) and a name in Greek, CJK or an emoji: a write was
    made, then called a bug in kgrdf (exit 3, not a word of the write), so that a retry made it
    twice; a refusal with --json printed a traceback and no document. What the encoding cannot
    write is escaped: JSON as JSON escapes it, text as standard error does."""
    name = "Κόσμος 世界 🎉"
    kg("add-entity", "repo/kosmos", "--name", name)
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    env.pop("KGRDF_HOME", None)

    def run(*argv):
        command = [sys.executable, "-m", "kgrdf", *argv, "--kb", str(kg.path)]
        return subprocess.run(command, capture_output=True, env=env, timeout=120)

    made = run("propose", "repo/kosmos", "status", "--value", "live", "-s", "doc:z", "--json")
    assert made.returncode == 0 and made.stderr == b"", made.stderr
    assert json.loads(made.stdout)["sentence"].startswith(name)
    facts = kg.json("facts", "repo/kosmos")["facts"]
    assert [f["observations"] for f in facts] == [1]  # made once, and said so
    shown = run("lookup", "repo/kosmos")
    assert shown.returncode == 0 and b"\\u039a\\u03cc" in shown.stdout and facts[0]["id"].encode() in shown.stdout
    refused = run("lookup", "kosmo", "--json")
    assert refused.returncode == 1 and b"Traceback" not in refused.stderr
    assert json.loads(refused.stdout)["error"] == "not_found" and name in json.loads(refused.stdout)["hint"]


def test_kg_mcp_whose_answers_are_not_taken_says_so_and_what_it_made(kg):
    """kg mcp > /dev/full: 'a bug in kgrdf' (the SDK's writer failed in its task group), exit 3,
    and the organization it made was never mentioned."""
    hello = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "org_add", "arguments": {"name": "Zeta Corp"}},
            }
        ),
    ]
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "kgrdf", "mcp", "--kb", str(kg.path), "--audience", "owner", "--write"],
            input="\n".join(lines) + "\n",
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2 and done.stderr.startswith(NO_ANSWER) and done.stderr.count("\n") == 1, done.stderr
    made = bool(kg.json("search", "Zeta Corp")["results"])
    assert made == ("the command's write was made all the same" in done.stderr)


@pytest.mark.parametrize("argv", [["--version"], ["-h"], ["--help"], ["lookup", "--help"], ["batch", "--help"]])
def test_help_and_version_that_standard_output_does_not_take_are_one_line_exit_2(argv):
    """kg --version and kg -h to a full disk ended in a traceback (exit 1); kg lookup --help exited 0
    with nothing said."""
    done = _into_full(argv)
    assert (done.returncode, done.stderr) == (2, f"{NO_ANSWER} (send standard output where it can be written)\n")


def test_what_a_command_makes_outside_the_journal_is_named_when_its_answer_is_lost(kg, tmp_path):
    """A token's secret is shown once: a lost answer says the token was made (a retry is refused by
    its name), and how to get another; a new knowledge base, a remote, likewise. A read made nothing."""
    done = _into_full(["tokens", "add", "bot1", "--perspective", "main", "--audience", "public", "--kb", kg.path], True)
    assert done.returncode == 2 and "the token bot1 was made" in done.stderr
    assert f"kg tokens revoke bot1 --kb {shlex.quote(str(kg.path))}, then add it again" in done.stderr
    assert "do not make it again" not in done.stderr  # (it said both)
    assert [t["name"] for t in kg.json("tokens", "list")["tokens"]] == ["bot1"]
    done = _into_full(["init", "--kb", tmp_path / "new"], True)
    assert done.returncode == 2 and f"the knowledge base at {tmp_path / 'new'} was made" in done.stderr
    done = _into_full(["remote", "add", "team", "http://127.0.0.1:9/", "--kb", kg.path], False)
    assert done.returncode == 2 and "the remote team was added" in done.stderr
    done = _into_full(["lookup", "nothing-here", "--kb", kg.path, "--json"], True)
    assert "was made" not in done.stderr
    done = _into_full(["batch", "--kb", kg.path], True)  # nothing waits: no batch to answer
    assert done.stderr == f"{NO_ANSWER} (send standard output where it can be written)\n"
    kg("add-entity", "repo/api", "--name", "api")
    kg("propose", "repo/api", "caveat", "--value", "slow", "-s", "pr:1")
    done = _into_full(["batch", "--kb", kg.path], True)  # a batch no one saw, saved to be answered
    assert done.returncode == 2 and "the batch was saved for kg batch apply" in done.stderr
    assert "kg batch prints it again" in done.stderr and "do not make it again" not in done.stderr


def test_a_reader_that_went_away_is_quiet_for_a_read_and_named_for_a_write_made(kg, tmp_path):
    records = tmp_path / "r.jsonl"
    records.write_text('{"type": "entity", "id": "repo/zeta", "name": "zeta"}\n', encoding="utf-8")
    kb = ["--kb", kg.path]
    for argv in (["export", *kb], ["lookup", "--help"], ["--help"], ["stats", *kb]):  # (kg export | head)
        read = _into_closed_pipe(argv)  # quiet, as the pipe's signal ends git log | head
        assert (read.returncode, read.stderr) == (141, ""), argv
    done = _into_closed_pipe(["import", records, "--apply", "--kb", kg.path, "--json"])
    seq = kg.json("status")["journal"]["transactions"]
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(
        f"kg: cannot write the answer to standard output: Broken pipe; the command's write was made all the same: "
        f"transaction {seq} "
    )
    assert kg.json("lookup", "repo/zeta")["entity"]["name"] == "zeta"


def test_json_after_a_double_dash_is_an_argument_not_the_option(kg):
    """kg lookup -- --json looks up an entity named --json: its refusal was a JSON document nobody
    asked for (the answer to the same command found would have been text)."""
    kb = ["--kb", str(kg.path)]
    refused = kg("lookup", *kb, "--", "--json", expect=1, kb=False)
    assert refused.stdout == "" and "entity '--json' is not known" in one_line(refused)
    asked = kg("lookup", "--json", *kb, "--", "nothing", expect=1, kb=False)
    assert json.loads(asked.stdout)["message"] == "entity 'nothing' is not known"


# --- usage errors under --json --------------------------------------------------------------------------

USAGE_ERRORS = {
    "a missing argument": (["lookup", "--kb", "{kb}", "--json"], "Missing argument 'ENTITY'", "kg lookup"),
    "a missing argument of a group's command": (
        ["schema", "check", "--json"],
        "Missing argument 'FILE'",
        "kg schema check",
    ),
    "an unknown option": (["lookup", "webapp", "--bogus", "--json"], "No such option: --bogus", "kg lookup"),
    "a bad value": (["neighbors", "webapp", "--hops", "many", "--json"], "'many' is not a valid int", "kg neighbors"),
    "an option without its value": (
        ["neighbors", "webapp", "--kb", "{kb}", "--json", "--hops"],
        "Option '--hops' requires an argument",
        "kg neighbors",
    ),
    "an unknown command": (["bogus", "--json"], "No such command 'bogus'", "kg"),
    "an unknown command of a group": (["org", "bogus", "--json"], "No such command 'bogus'", "kg org"),
    "an option kg itself does not take": (["--json", "lookup", "webapp"], "No such option: --json", "kg"),
    "a group's option before its command": (
        ["batch", "--json", "apply", "--kb", "{kb}"],
        "Missing argument 'DECISION'",
        "kg batch apply",
    ),
}


@pytest.mark.parametrize("case", sorted(USAGE_ERRORS))
def test_a_usage_error_under_json_is_a_json_error_document_and_exit_2(base, case):
    argv, message, command = USAGE_ERRORS[case]
    result = runner.invoke(app, [word.replace("{kb}", str(base.path)) for word in argv])
    assert result.exit_code == 2, result.output
    doc = json.loads(result.stdout)
    assert doc["error"] == "bad_input"
    assert message.lower() in doc["message"].lower(), doc
    assert doc["hint"] == f"{command} -h shows the usage"
    assert one_line(result) == f"kg: {doc['message']} ({doc['hint']})"


def test_a_usage_error_has_the_shape_of_a_refusal(base):
    refusal = json.loads(base("lookup", "nobody-at-all", "--json", expect=1).stdout)
    usage = json.loads(runner.invoke(app, ["lookup", "--json"]).stdout)
    assert {"error", "message"} <= set(refusal) and {"error", "message"} <= set(usage)
    assert refusal["error"] in KINDS and usage["error"] in KINDS
    assert set(usage) <= set(refusal) | {"hint"}


@pytest.mark.parametrize(
    "argv, code",
    [
        (["sparql", "SELECT * WHERE {"], 2),
        (["facts", "nobody", "--as-of", "someday"], 2),
        (["add-entity", "Repo/X", "--name", "x"], 2),
        (["propose", "webapp", "uses", "--object", "x", "-s", "pr:1", "--valid-from", "2026-02-30"], 2),
        (["lookup", "nobody-at-all"], 1),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_every_json_error_has_its_three_keys_with_hint_null_where_there_is_none(base, argv, code):
    doc = json.loads(base(*argv, "--json", expect=code).stdout)
    assert {"error", "message", "hint"} <= set(doc), doc
    assert doc["hint"] is None or (isinstance(doc["hint"], str) and doc["hint"]), doc


@pytest.mark.parametrize("argv", [["lookup"], ["--bogus"], ["neighbors", "x", "--hops", "many"]], ids=str)
def test_without_json_a_usage_error_prints_nothing_on_stdout(argv):
    result = runner.invoke(app, argv)
    assert result.exit_code == 2 and result.stdout == ""
    assert one_line(result).startswith("kg: ")


def test_kg_alone_still_shows_its_help():
    result = runner.invoke(app, [])
    assert "Usage: kg" in result.output and "lookup" in result.output


def _kg_process(*argv, whole: bool = False) -> subprocess.CompletedProcess:
    """``kg argv`` as a user runs it, in a process of its own; ``whole``: through every command's
    parser, as kg did before it built only the one asked for."""
    run = "from kgrdf.cli import app as run" if whole else "from kgrdf.cli import main as run"
    code = f"import sys; sys.argv[0] = 'kg'; {run}; run()"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)


def _seen(done: subprocess.CompletedProcess) -> tuple:
    return done.returncode, done.stdout, done.stderr


def test_each_command_run_as_kg_is_the_command_the_whole_of_kg_has():
    """kg builds only the parser of the command it is asked for (the rest cost a third of a cold
    read): each command's help, run so, is the one the whole of kg shows, groups included."""
    from concurrent.futures import ThreadPoolExecutor

    names = sorted(typer.main.get_command(app).commands)
    asked = [[name, "-h"] for name in names] + [["-h"], []]
    with ThreadPoolExecutor(4) as pool:
        alone = list(pool.map(lambda argv: _kg_process(*argv), asked))
        whole = list(pool.map(lambda argv: _kg_process(*argv, whole=True), asked))
    for argv, one, every in zip(asked, alone, whole, strict=True):
        assert _seen(one) == _seen(every), argv
        named = [word for word in argv if not word.startswith("-")]
        assert (one.stdout or one.stderr).startswith(" ".join(["Usage: kg", *named, "[OPTIONS]"])), argv
    assert all(f"  {name} " in alone[-2].stdout for name in names)  # kg -h lists every command


@pytest.mark.parametrize(
    "argv, told",
    [
        (["lokup", "x"], "No such command 'lokup'. Did you mean 'lookup'?"),
        (["batch", "aply"], "No such command 'aply'. Did you mean 'apply'?"),
        (["--json", "lookup", "x"], "No such option: --json"),
        (["identifiers", "--json"], "No such option: --json"),
        (["--version", "org"], "kg (kgrdf)"),
        (["-h", "lookup"], "  propose "),
        (["index", "-h"], "  compact "),
    ],
)
def test_kg_run_as_a_command_refuses_and_suggests_as_the_whole_of_kg_does(argv, told):
    done = _kg_process(*argv)
    assert _seen(done) == _seen(_kg_process(*argv, whole=True))
    assert told in done.stdout + done.stderr


def test_kg_version_prints_the_installed_version_and_exits_0():
    done = subprocess.run([sys.executable, "-m", "kgrdf", "--version"], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"kg (kgrdf) {version('kgrdf')}\n", "")
    assert runner.invoke(app, ["--version", "lookup", "x"]).stdout == done.stdout  # it answers before any command


# --- what exits 1 without an error is documented --------------------------------------------------------


def _exits(command) -> set[int]:
    """The codes a command's own code exits with (raise typer.Exit(N)), besides its errors'."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(command.callback)))
    return {
        node.exc.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Raise)
        and isinstance(node.exc, ast.Call)
        and node.exc.args
        and isinstance(node.exc.args[0], ast.Constant)
        and getattr(node.exc.func, "attr", "") == "Exit"
    }


def _exit_table() -> dict[int, str]:
    rows = re.findall(r"^\| ([0-3]) \| (.+) \|$", README, re.MULTILINE)
    assert [int(code) for code, _ in rows] == [0, 1, 2, 3], "README's exit code table"
    return {int(code): text for code, text in rows}


EXITING = sorted((" ".join(path), code) for path, command in commands() if command.callback for code in _exits(command))


def test_the_commands_that_exit_without_an_error_are_the_known_ones():
    assert {name for name, _ in EXITING} == {"kg identify", "kg validate", "kg lint", "kg schema check", "kg forget"}


@pytest.mark.parametrize("name,code", EXITING)
def test_a_command_exiting_without_an_error_says_so_in_its_help_and_the_readme(name, code):
    table = _exit_table()
    assert f"`{name}" in table[code], f"README's exit code table does not say {name} exits {code}"
    help_text = runner.invoke(app, [*name.split()[1:], "--help"]).stdout
    assert re.search(rf"\bExits\b[^.]*\b{code}\b", " ".join(help_text.split())), (
        f"{name} --help does not say it exits {code}"
    )


def test_lint_exiting_1_on_findings_is_documented():
    help_text = " ".join(runner.invoke(app, ["lint", "--help"]).stdout.split())
    assert "Exits 0 when there is nothing to fix, 1 with findings" in help_text
    assert "`kg lint`: findings to fix" in _exit_table()[1]


def test_lint_exits_1_with_findings_and_0_without(kg):
    assert kg.json("lint")["findings"] == []
    kg("add-entity", "repo/lonely", "--name", "lonely")  # an orphan entity
    assert kg.json("lint", expect=1)["findings"]


# --- settings -------------------------------------------------------------------------------------------


def _settings_table() -> dict[str, str]:
    """Setting -> its default, from README's settings table."""
    header = "| setting | default | what |"
    assert README.count(header) == 1, "README has one settings table"
    lines = README.split(header, 1)[1].strip().splitlines()[1:]
    table = {}
    for line in lines:
        if not line.startswith("| `KGRDF_"):
            break
        name, default, _what = (cell.strip() for cell in line.strip("|").split("|", 2))
        table[name.strip("`")] = default
    return table


def _names_the_code_reads(package: Path = ROOT / "kgrdf") -> dict[str, list[str]]:
    """Every KGRDF_ name in a package's code (a string that is one whole name, not in a docstring),
    with where: how the code reads a setting, through os.environ, settings.get or an option's envvar."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
                assert not any(re.search(r"KGRDF_[A-Z0-9_]*$", p) for p in parts), (
                    f"{path.name}:{node.lineno} builds a KGRDF_ name at run time, which no test can check"
                )
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if re.fullmatch(r"KGRDF_[A-Z0-9_]+", node.value):
                    found.setdefault(node.value, []).append(f"{path.name}:{node.lineno}")
    return found


def test_every_setting_the_code_reads_is_in_the_readme_table():
    table, read = _settings_table(), _names_the_code_reads()
    missing = {name: where for name, where in read.items() if name not in table}
    assert not missing, f"README's settings table does not list {missing}"
    assert set(table) <= set(read), f"README lists settings no code reads: {sorted(set(table) - set(read))}"


def test_the_readme_gives_each_number_settings_default():
    from kgrdf import lock, settings

    table = _settings_table()
    for name, default in settings.DEFAULTS.items():
        assert table[name] == str(default), f"README says {name} is {table[name]}, the code {default}"
    assert float(table["KGRDF_LOCK_TIMEOUT"]) == lock.DEFAULT_WAIT


def test_the_settings_check_finds_every_way_of_reading_a_setting(tmp_path):
    """Not vacuous: a new read of any form is found; a name built at run time fails outright."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text(
        '"""Reads KGRDF_IN_A_DOCSTRING? No: a docstring only mentions it."""\n'
        'import os\nos.environ.get("KGRDF_NEW_ONE")\n'
        'settings.get("KGRDF_ANOTHER")\n'
        'typer.Option(envvar="KGRDF_THIRD")\n'
    )
    assert set(_names_the_code_reads(package)) == {"KGRDF_NEW_ONE", "KGRDF_ANOTHER", "KGRDF_THIRD"}
    (package / "b.py").write_text('import os\nos.environ.get(f"KGRDF_{name}")\n')
    with pytest.raises(AssertionError, match="builds a KGRDF_ name at run time"):
        _names_the_code_reads(package)
    assert {
        "KGRDF_LOCK_TIMEOUT",
        "KGRDF_NOW",
        "KGRDF_DEBUG",
        "KGRDF_HOME",
        "KGRDF_PERSPECTIVE",
        "KGRDF_MAX_TEXT",
        "KGRDF_BATCH_GROUPS",
    } <= set(_names_the_code_reads())


def test_a_query_argument_that_is_one_word_and_no_file_is_named_as_a_missing_file(base, tmp_path):
    """kg sparql takes a query's text or a file: one word with no braces or IRI is no query, so a
    path that is not there is said to be one (not a SPARQL syntax error); ASK{} is still a query."""
    path = tmp_path / "my-query"
    line = one_line(base("sparql", path, expect=2))
    assert line.startswith(f"kg: cannot read the query file {path}: No such file or directory")
    assert base("sparql", "ASK{}").stdout.strip() == "true"


def test_a_name_not_known_lists_in_candidates_what_its_hint_names(kg):
    """--json's candidates are what a program reads: a near name named in the hint ("did you mean
    organization/acme-corp?") was not among them, which were empty."""
    kg("org", "add", "Acme Corp")
    kg("add-entity", "repo/web-app", "--name", "web-app", "--weak-alias", "frontend")
    near = kg.json("org", "set", "Acme", "founded", "2023", "-s", "ledger:x", expect=1)
    assert near["error"] == "not_found" and "organization/acme-corp" in near["hint"]
    assert near["candidates"] == ["organization/acme-corp"]
    weak = kg.json("lookup", "frontend", expect=1)
    assert "repo/web-app" in weak["hint"] and weak["candidates"] == ["repo/web-app"]
    none = kg.json("lookup", "zzz-nothing", expect=1)
    assert none["candidates"] == [] and "kg add-entity" in none["hint"]
