"""Fuzzing every command's arguments and the records of an import: whatever comes in, kg answers
with an exit code in 0-3 and at most a line of reason, never a traceback and never a bug report,
and a refusal (exit 1 or 2) writes nothing.

The commands and their parameters are read from the typer app itself, so a new command or option
is fuzzed without touching this file.
"""

import json
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.main import get_command
from typer.testing import CliRunner

from kgrdf import settings as kg_settings
from kgrdf.cli import app

runner = CliRunner()

# Strings that broke kg once, or are near a rule's edge.
NASTY = [
    "",
    " ",
    "\t",
    "\udcff",
    "a\udcffb",
    "\ud800",
    "\x00",
    "a\x00b",
    "\n",
    "main\n",
    "x\r\ny",
    "\u2028",
    "\u2029",
    "\u0085",
    "\x0b",
    "\x1c",
    "\u200b",
    "\ufeff",
    "\x1b[31mred",
    "é",
    "e\u0301",
    "𝔘𝔫𝔦",
    "-",
    "--",
    "--json",
    "-h",
    "--help",
    "--kb",
    "--value",
    "-s",
    "--apply",
    "0",
    "-1",
    "1",
    "99999999999",
    str(2**63),
    "9" * 5000,
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "0.5",
    "2026-01-01",
    "2026-13-45",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "x" * 70_000,
    "{",
    "[1,2,3]",
    "null",
    "person/sam",
    "person/sam.lee",
    "repo/web-app",
    "organization/acme",
    "Sam",
    "Sam Lee",
    "SAM  LEE",
    "web-app",
    "Acme",
    "f-aaaaaa",
    "f-",
    "reviews",
    "founded",
    "title",
    "owns",
    "affiliated_with",
    "public",
    "owner",
    "dm:,",
    "dm:sam,jo",
    "channel:c1",
    "channel:c1\n",
    "workspace:w",
    "slack:p1",
    "report:r1",
    "user:x",
    "bogus:1",
    ":",
    "slack:",
    "confirm all",
    "reject 1a, confirm all except 2b",
    "trig",
    "turtle",
    "nquads",
    "jsonld",
    "text",
    "SELECT * WHERE { ?s ?p ?o } LIMIT 1",
    "ASK { }",
    "CONSTRUCT WHERE { ?s ?p ?o } LIMIT 2",
    "x.rq",
    "../../etc/passwd",
    "/proc/self/status",
    "/dev/zero",
    "chat",
    "tracker",
    "code-host",
    "U024BE7LH",
]
TEXT = st.one_of(
    st.sampled_from(NASTY),
    st.sampled_from(NASTY),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=20),  # surrogates included
    st.text(st.characters(categories=["Zs", "Zl", "Zp", "Cc", "Cf"]), max_size=5),
    st.builds(lambda a, b: a + b, st.sampled_from(NASTY), st.text(max_size=8)),
    st.builds(lambda a, b: a + chr(b), st.text(max_size=5), st.integers(0xD800, 0xDFFF)),  # a lone surrogate
)
NUMBER = st.one_of(
    st.integers().map(str),
    st.sampled_from(["0", "-1", "99999999999", str(10**30), "nan", "inf", "-inf", "1e308", "abc", ""]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
SETTINGS = sorted(kg_settings.DEFAULTS) + ["KGRDF_PERSPECTIVE", "KGRDF_NOW"]


def _commands():
    """(path, click command) of every command the kg app offers, groups with a callback included."""

    def walk(command, path):
        if hasattr(command, "commands"):
            if path and command.callback is not None:
                yield path, command
            for name, sub in command.commands.items():
                yield from walk(sub, path + (name,))
        else:
            yield path, command

    return list(walk(get_command(app), ()))


# kg serve, kg mcp and kg console answer requests until they are stopped: a command line that parses
# would not return. Their bad arguments are tried in tests/test_serve_doors.py and tests/test_console.py.
LONG_RUNNING = {("serve",), ("mcp",), ("console",)}
COMMANDS = [(path, command) for path, command in _commands() if path not in LONG_RUNNING]


@pytest.fixture
def world(seeded, tmp_path, monkeypatch):
    """A knowledge base with people, an organization, facts in every status that records of the
    fuzzed imports meet (GOOD's fields) and a saved batch; files to point at."""
    kg = seeded
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T09:00:00Z")
    kg("add-entity", "person/sam", "--name", "Sam Lee", "--alias", "Sam")
    kg("add-entity", "person/sam.lee", "--name", "Samuel Leeds")
    kg("org", "init", "Acme", "--alias", "acme.example")
    kg("propose", "Acme", "caveat", "--value", "a caveat", "-s", "slack:e1")  # expired
    monkeypatch.setenv("KGRDF_NOW", "2026-03-01T09:00:00Z")
    kg("expire")
    monkeypatch.delenv("KGRDF_NOW")
    kg("reject", kg.json("propose", "webapp", "caveat", "--value", "a caveat", "-s", "slack:r1")["id"])
    kg("confirm", kg.json("propose", "Dana", "title", "--value", "a caveat", "-s", "slack:t1")["id"])  # closed
    kg("confirm", kg.json("propose", "Dana", "title", "--value", "2021", "-s", "slack:t2")["id"])
    fact = kg.json("propose", "Dana", "reviews", "--object", "webapp", "-s", "slack:p1")["id"]
    kg("propose", "Acme", "founded", "--value", "2020", "-s", "slack:p2", "--audience", "channel:c1")
    kg("batch")
    files = tmp_path / "files"
    files.mkdir()
    (files / "seed.jsonl").write_text(json.dumps({"type": "entity", "id": "repo/fz", "name": "fz"}) + "\n")
    (files / "talk.jsonl").write_text(json.dumps({"role": "user", "content": "we always deploy on fridays"}) + "\n")
    (files / "junk.bin").write_bytes(bytes(range(256)) * 4)
    (files / "q.rq").write_text("SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 3")
    return kg, fact, files


def _value(draw, param, files, tmp_path, kb):
    """One value for a parameter, as the text a user would type."""
    name = param.name
    if name == "kb":
        return draw(st.sampled_from([str(kb)] * 6 + [str(files / "junk.bin"), "/proc/self", str(files)]))
    kind = type(param.type).__name__
    if kind == "TyperPath":
        if name == "output":
            return draw(st.sampled_from([str(tmp_path / "out.txt"), str(files), "/proc/self/nope/out"]))
        return draw(
            st.sampled_from(
                [str(files / n) for n in ("seed.jsonl", "talk.jsonl", "junk.bin", "q.rq", "missing.jsonl")]
                + [str(files), "/dev/zero"]
            )
        )
    if kind in ("IntParamType", "FloatParamType"):
        return draw(NUMBER)
    return draw(TEXT)


def _argv(draw, path, command, files, tmp_path, kb, fact):
    argv = list(path)
    options = []
    for param in command.params:
        if param.name == "json":
            if draw(st.booleans()):
                options.append("--json")
            continue
        if param.param_type_name == "argument":
            count = draw(st.integers(1, 3)) if param.nargs == -1 else 1
            for _ in range(count):
                if "fact" in param.name or param.name in ("claim",):
                    argv.append(draw(st.one_of(st.just(fact), TEXT)))
                else:
                    argv.append(_value(draw, param, files, tmp_path, kb))
            continue
        if param.name == "kb":
            if path == ("demo",) or draw(st.integers(0, 9)) == 0:  # demo would load into a new folder
                options += ["--kb", str(kb) if path == ("demo",) else _value(draw, param, files, tmp_path, kb)]
            else:
                options += ["--kb", str(kb)]
            continue
        if param.name == "perspective":
            if draw(st.integers(0, 9)) == 0:
                options += ["--perspective", draw(st.one_of(st.just("other"), TEXT))]
            continue
        if not param.required and draw(st.integers(0, 2)) != 0:
            continue
        flag = param.opts[0]
        if getattr(param, "is_flag", False):
            options.append(flag)
        else:
            for _ in range(draw(st.integers(1, 2)) if param.multiple else 1):
                options += [flag, _value(draw, param, files, tmp_path, kb)]
    if draw(st.integers(0, 7)) == 0:  # a stray token anywhere
        tokens = argv + options
        tokens.insert(draw(st.integers(len(path), len(tokens))), draw(TEXT))
        return tokens
    return argv + options


def _environ_can_hold(value: str) -> bool:
    """An environment variable holds bytes without NUL: text that os.environ can encode."""
    try:
        return "\x00" not in value and bool(os.fsencode(value)) is not None
    except UnicodeEncodeError:
        return False


def _check(kg, argv, env, before_snapshot):
    result = runner.invoke(app, argv, env=env)
    shown = f"kg {argv!r} env={env!r}\nexit {result.exit_code}\nstdout: {result.stdout[:500]}\nstderr: {result.stderr[:2000]}"
    assert result.exception is None or isinstance(result.exception, SystemExit), shown + repr(result.exception)
    assert result.exit_code in (0, 1, 2, 3), shown
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, shown
    assert "this is a bug in kgrdf" not in result.stderr, shown
    if result.exit_code and result.stderr.strip() and not result.stderr.startswith("Usage:"):  # help of a group
        assert all(line.startswith("kg: ") for line in result.stderr.strip().splitlines()), shown
    if result.exit_code in (1, 2):
        assert kg.snapshot() == before_snapshot, "refused, yet written: " + shown
    return result


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")  # the repr of a long text
def test_no_argument_gives_a_traceback(world, tmp_path, capsys):
    kg, fact, files = world
    tried = {"cases": 0, "codes": {}}

    @settings(
        max_examples=300,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def run(data):
        path, command = data.draw(st.sampled_from(COMMANDS))
        argv = data.draw(st.composite(lambda draw: _argv(draw, path, command, files, tmp_path, kg.path, fact))())
        env = {}
        if data.draw(st.integers(0, 9)) == 0:
            env[data.draw(st.sampled_from(SETTINGS))] = data.draw(st.one_of(NUMBER, TEXT).filter(_environ_can_hold))
        before = kg.snapshot()
        result = _check(kg, argv, env, before)
        tried["cases"] += 1
        tried["codes"][result.exit_code] = tried["codes"].get(result.exit_code, 0) + 1

    run()
    with capsys.disabled():
        print(f"\nfuzzed {tried['cases']} command lines over {len(COMMANDS)} commands; exit codes {tried['codes']}")
    assert tried["cases"] >= 100


# --- import records -----------------------------------------------------------------------------

FIELDS = [
    "type",
    "id",
    "name",
    "aliases",
    "weak_aliases",
    "summary",
    "subject",
    "predicate",
    "object",
    "value",
    "sources",
    "authority",
    "status",
    "valid_from",
    "valid_to",
    "order",
    "prevents_rework",
    "audience",
    "said_by",
    "message",
    "extracted",
    "confidence",
    "span",
]
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([10**30, -(2**63), 1e308]),
    st.floats(allow_nan=False),
    TEXT,
)
JSON = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)
GOOD = {
    "type": st.sampled_from(["entity", "fact"]),
    "id": st.sampled_from(["repo/fz", "person/fz", "team/fz"]),
    "name": st.sampled_from(["Fz", "Sam Lee"]),
    "subject": st.sampled_from(["webapp", "Dana", "Acme"]),
    "predicate": st.sampled_from(["reviews", "founded", "title", "caveat"]),
    "object": st.sampled_from(["webapp", "Dana"]),
    "value": st.sampled_from(["2021", "a caveat"]),
    "sources": st.sampled_from([["slack:p9"], [{"kind": "report", "ref": "r1"}, "ledger:l1"]]),
}


GOOD_ENTITY = {"type": "entity", "id": "repo/fz", "name": "fz"}

# The world's facts, one in each status: a record of one meets a fact the write does not make.
KNOWN = [
    ("Dana", "reviews", "object", "webapp"),  # proposed
    ("Acme", "founded", "value", "2020"),  # proposed, heard in channel:c1
    ("Acme", "caveat", "value", "a caveat"),  # expired
    ("webapp", "caveat", "value", "a caveat"),  # rejected
    ("Dana", "title", "value", "a caveat"),  # confirmed, then closed
    ("Dana", "title", "value", "2021"),  # confirmed
]


@st.composite
def known(draw):
    """A record of one of the world's facts, in another spelling of its subject and its value."""
    subject, predicate, kind, target = draw(st.sampled_from(KNOWN))
    spell = draw(st.sampled_from([str, str.upper, str.lower, lambda t: f"  {t} "]))
    out = {"type": "fact", "subject": spell(subject), "predicate": predicate, kind: spell(target)}
    return dict(out, sources=draw(GOOD["sources"]))


@st.composite
def record(draw):
    """A record: mostly of the right shape with some fields of a wrong type or value, sometimes no
    object at all, sometimes nested beyond reading, sometimes one of a fact the world holds."""
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return draw(JSON)
    if shape in (2, 3):
        return draw(known())
    if shape == 1:
        depth = draw(st.sampled_from([10, 500, 5000]))
        return json.loads("[" * depth + "]" * depth) if depth < 900 else {"type": "fact", "deep": depth}
    out = {}
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=10, unique=True)) + ["type"]:
        if name in GOOD and draw(st.booleans()):
            out[name] = draw(GOOD[name])
        else:
            out[name] = draw(JSON)
    return out


def _line(item) -> str:
    if isinstance(item, dict) and isinstance(item.get("deep"), int):  # nesting json.dumps cannot write
        return '{"type": "fact", "value": ' + "[" * item["deep"] + "]" * item["deep"] + "}"
    return json.dumps(item)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")  # the repr of a long text
def test_no_import_record_gives_a_traceback_and_each_is_refused_alone(world, tmp_path, capsys):
    kg, _fact, _files = world
    tried = {"imports": 0, "records": 0, "refused": 0}
    path = tmp_path / "records.jsonl"

    @settings(
        max_examples=100,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        items=st.lists(record(), min_size=1, max_size=12),
        junk=st.lists(
            st.sampled_from(["not json", "5", "[1,2,3]", '"text"', "null", "{", "\x00", "\udcff"]), max_size=2
        ),
        apply=st.booleans(),
        auto=st.booleans(),
        seed=st.integers(0, 2**16),
    )
    def run(items, junk, apply, auto, seed):
        lines = [_line(item) for item in items] + junk
        random.Random(seed).shuffle(lines)
        lines.insert(0, json.dumps(GOOD_ENTITY))  # JSON lines, not one JSON array
        path.write_bytes("\n".join(lines).encode("utf-8", errors="surrogateescape"))
        argv = (
            ["import", str(path), "--json", "--kb", str(kg.path)]
            + (["--apply"] if apply else [])
            + (["--auto-confirm"] if auto else [])
        )
        before = kg.snapshot()
        result = _check(kg, argv, {}, before)
        # JSON lines: a record that is not one is refused alone; the import itself goes on
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["records"] == len([line for line in lines if line.strip()])
        if not apply:
            assert kg.snapshot() == before
        tried["imports"] += 1
        tried["records"] += report["records"]
        tried["refused"] += report["refused_total"]

    run()
    with capsys.disabled():
        print(f"\nfuzzed {tried['imports']} imports of {tried['records']} records ({tried['refused']} refused)")
    assert tried["imports"] >= 50
