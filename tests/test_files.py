"""Private files are private (§5, §8): owner-only modes, never a write through a link, and no
character that splits a line of a JSON-lines file."""

import json
import os
import shutil
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Kg, one_line

from .patchlog import patch_files

PRIVATE_FILES = ["identifiers.jsonl", "secret.key", "batch.json"]
PRIVATE_DIRS = ["journal/local", "index", ".git"]


def loose(path) -> list[str]:
    """Everything under ``path`` (itself included) that anyone but its owner may read or enter."""
    found = []
    paths = [path] + (list(path.rglob("*")) if path.is_dir() else [])
    for p in paths:
        mode = os.lstat(p).st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{p} {oct(stat.S_IMODE(mode))}")
    return found


@pytest.fixture(scope="module")
def people_template(tmp_path_factory):
    kg = Kg(tmp_path_factory.mktemp("files") / "kb")
    kg("init")
    kg("add-entity", "person/sam", "--name", "Sam Reyes", "--alias", "Sam")
    kg("add-entity", "repo/web-app", "--name", "web-app")
    kg("propose", "Sam", "reviews", "--object", "web-app", "--source", "slack:p1")
    kg("identifiers", "add", "Sam", "chat", "U024BE7LH")
    kg("batch")
    return kg.path


@pytest.fixture
def people(people_template, tmp_path):
    """A person with a fact, an identifier, a key and a batch."""
    shutil.copytree(people_template, tmp_path / "kb", symlinks=True)
    return Kg(tmp_path / "kb")


def test_private_parts_are_owner_only_after_init(kg):
    assert (kg.path / ".git").is_dir()
    assert loose(kg.path / ".git") == []
    kg("add-entity", "person/ann", "--name", "Ann Lee")
    for name in ["journal/local", "index", ".git", "secret.key"]:
        assert loose(kg.path / name) == [], name


def test_private_parts_are_owner_only_after_writes(people):
    for name in PRIVATE_FILES + PRIVATE_DIRS:
        assert (people.path / name).exists(), name
        assert loose(people.path / name) == []
    people("mentions", "Sam says web-app is slow")  # builds cache/ in a read
    assert loose(people.path / "cache") == []
    people("forget", "person/sam")
    for name in ["forgotten.jsonl", "journal/local", "index", ".git", "identifiers.jsonl"]:
        assert loose(people.path / name) == [], name


@pytest.mark.parametrize("command", [["add-entity", "repo/api", "--name", "api"], ["forget", "person/sam"]])
def test_an_existing_knowledge_base_is_tightened_on_its_next_write(people, command):
    aside = people.path / "journal.aside"
    aside.mkdir()
    (aside / "old.rdfp").write_text("old\n")
    made_loose = [
        people.path / "identifiers.jsonl",
        people.path / "secret.key",
        people.path / "batch.json",
        aside,
        *aside.iterdir(),
        people.path / "journal" / "local",
        people.path / "index",
        *(people.path / "journal" / "local").rglob("*"),
        *(people.path / "index").iterdir(),
    ]
    for path in made_loose:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    people("lookup", "web-app")  # a read changes nothing
    assert loose(people.path / "journal" / "local")
    people(*command)
    for name in ["identifiers.jsonl", "secret.key", "journal/local", "index", "journal.aside"]:
        if (people.path / name).exists():
            assert loose(people.path / name) == [], name


# every temporary or appended path kgrdf writes, and the command that writes it
PLANTS = [
    ("identifiers.jsonl.tmp", ["identifiers", "add", "Sam", "tracker", "sam-r"]),
    ("view.json.tmp", ["add-entity", "repo/api", "--name", "api"]),
    ("batch.json.tmp", ["batch"]),
    ("secret.key.tmp", ["add-entity", "repo/api", "--name", "api"]),
    ("cache/names-main.json{own}", ["mentions", "web-app"]),  # readers' own names, by process and thread
]


@pytest.mark.parametrize("name, command", PLANTS)
def test_a_link_at_a_temporary_path_is_replaced_never_followed(people, tmp_path, name, command):
    from kgrdf import files

    name = name.format(own=files.own_suffix())  # the thread that runs the test runs the command too
    target = tmp_path / "precious.txt"
    target.write_text("precious\n")
    if name == "secret.key.tmp":
        (people.path / "secret.key").unlink()  # the key is made again on the next write
    if name.startswith("cache/"):
        (people.path / "cache").mkdir(exist_ok=True)
        for old in (people.path / "cache").iterdir():
            old.unlink()
    link = people.path / name
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    people(*command)
    assert target.read_text() == "precious\n"
    assert not link.is_symlink()


@pytest.mark.parametrize("name", ["journal/local/{segment}", "forgotten.jsonl", "lock"])
def test_a_link_where_a_file_is_appended_is_refused(people, tmp_path, name):
    """The link's target holds what the file held, so that reads agree and the write gets to it."""
    target = tmp_path / "precious"
    target.write_bytes(b"")
    if "{segment}" in name:
        segment = patch_files(people.path / "journal" / "local")[-1]
        name = name.format(segment=f"{segment.parent.name}/{segment.name}")
        target.write_bytes(segment.read_bytes())
        command = ["add-entity", "person/ann", "--name", "Ann Lee"]
    elif name == "forgotten.jsonl":
        people("add-entity", "person/ann", "--name", "Ann Lee")
        command = ["forget", "person/ann"]
    else:
        command = ["add-entity", "repo/api", "--name", "api"]
    kept = target.read_bytes()
    link = people.path / name
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    result = people(*command, expect=3)
    line = one_line(result)
    # a journal segment is in git too: the link shows there first as a change made outside kgrdf
    assert "symbolic link" in line or ("journal" in name and "changed outside kgrdf" in line)
    assert target.read_bytes() == kept
    if name == "forgotten.jsonl":  # refused before anything: it rewrote the journal and stopped halfway
        assert "nothing was changed" in line and not (people.path / "purging.json").exists()
        assert [m["id"] for m in people.json("identify", "Ann Lee")["matches"]] == ["person/ann"]
        assert "clean" in people("validate").stdout


@pytest.mark.parametrize(
    "char", ["\u2028", "\u2029", "\n", "\r", "\x00", "\x1b", "\u0085", "\u200b", "\u202e", "\ufeff", "\t"]
)
def test_control_and_separator_characters_are_refused_in_identifiers_and_sources(people, char):
    """Cc, Cf, Zl and Zp (and lone surrogates) are refused; U+0085 is a control (Cc) that
    str.splitlines would have split at."""
    before = people.snapshot()
    ids = (people.path / "identifiers.jsonl").read_bytes()
    result = people("identifiers", "add", "Sam", "chat", f"U0{char}99", expect=2)
    assert f"U+{ord(char):04X}" in one_line(result)
    result = people("propose", "web-app", "lives_in", "--value", "eu", "--source", f"slack:p{char}2", expect=2)
    assert f"U+{ord(char):04X}" in one_line(result)
    result = people(
        "propose",
        "web-app",
        "lives_in",
        "--value",
        "eu",
        "--source",
        "slack:p2",
        "--message",
        f"slack:p{char}3",
        expect=2,
    )
    assert f"U+{ord(char):04X}" in one_line(result)
    assert people.snapshot() == before
    assert (people.path / "identifiers.jsonl").read_bytes() == ids
    people("forget", "person/sam")  # and the file still reads


def test_a_file_holding_a_separator_still_reads(people):
    """A file written before the check (a value holding U+2028 unescaped) reads by its lines."""
    path = people.path / "identifiers.jsonl"
    entry = {"entity": "person/sam", "kind": "tracker", "value": "a\u2028b\u0085c", "added_at": "2026-01-01T00:00:00Z"}
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry, ensure_ascii=False) + "\n")
    listed = people.json("identifiers", "list")
    assert "a\u2028b\u0085c" in json.dumps(listed, ensure_ascii=False)
    people("forget", "person/sam")
    assert "U024BE7LH" not in path.read_text(encoding="utf-8")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=12))
def test_any_identifier_is_stored_and_read_back_or_refused_in_one_line(people, value):
    from typer.testing import CliRunner

    from kgrdf.cli import app

    before = (people.path / "identifiers.jsonl").read_bytes()
    result = CliRunner().invoke(app, ["identifiers", "add", "--kb", str(people.path), "--", "Sam", "tracker", value])
    assert not (result.exception and not isinstance(result.exception, SystemExit)), result.exception
    assert result.exit_code in (0, 1, 2), result.stderr
    if result.exit_code:
        one_line(result)
        assert (people.path / "identifiers.jsonl").read_bytes() == before
    else:
        listed = CliRunner().invoke(app, ["identifiers", "list", "--json", "--kb", str(people.path)])
        assert listed.exit_code == 0, listed.stderr
        assert value.strip() in [e["value"] for e in json.loads(listed.stdout)["identifiers"]]


def test_a_read_never_writes_or_reads_names_through_a_link_at_cache(people, tmp_path):
    """kg mentions keeps its name matcher in cache/: a link there is neither written to nor
    trusted, and the read still answers (the next write refuses the link)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(people.path / "cache", ignore_errors=True)
    (people.path / "cache").symlink_to(elsewhere)
    found = people.json("mentions", "Sam says web-app is slow")
    assert {e["id"] for m in found["mentions"] for e in m["entities"]} == {"person/sam", "repo/web-app"}, found
    assert list(elsewhere.iterdir()) == []


def _as_a_user(argv: list[str]) -> list[str]:
    """The command run without root's right to pass over permissions (as every other user runs it)."""
    if os.geteuid() != 0:
        return argv
    assert shutil.which("setpriv"), "setpriv (util-linux) runs a command as root without its rights over files"
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner,-chown", "--", *argv]


def _run_as_a_user(kb, *args: str):
    import subprocess
    import sys

    argv = _as_a_user([sys.executable, "-m", "kgrdf", *args, "--kb", str(kb)])
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("made_read_only", ["every file and folder", "the folders"])
def test_a_read_only_knowledge_base_is_read_and_a_write_says_why_it_cannot(people, made_read_only):
    """Every read of a read-only copy failed on its lock file ("remove a link or folder standing
    there": there was none); with only its folders read-only, a write said the index did not open,
    "rebuilding it", and failed on that. Reads go on under a shared lock; a write is refused before
    anything, saying it cannot write there."""
    people("add-entity", "repo/api", "--name", "api")  # (its journal's newest folder as a write leaves it)
    paths = [people.path, *people.path.rglob("*")]
    kept = {p: p.read_bytes() for p in paths if p.is_file() and ".git" not in p.parts}
    modes = {p: stat.S_IMODE(os.lstat(p).st_mode) for p in paths if not p.is_symlink()}
    try:
        for p, mode in modes.items():
            if made_read_only == "every file and folder" or p.is_dir():
                os.chmod(p, mode & ~0o222)
        for args, says in [
            (["lookup", "Sam"], "Sam Reyes"),
            (["facts", "Sam"], "reviews"),
            (["validate"], "clean"),
            (["status"], "up to date"),
        ]:
            read = _run_as_a_user(people.path, *args)
            assert read.returncode == 0 and says in read.stdout, read.stderr
        write = _run_as_a_user(people.path, "add-entity", "repo/db", "--name", "db")
        assert write.returncode == 3 and "cannot be written here" in write.stderr, write.stderr
        assert "reads go on" in write.stderr and "rebuilding" not in write.stderr
    finally:
        for p, mode in modes.items():
            os.chmod(p, mode)
    assert {p: p.read_bytes() for p in kept} == kept
    people("add-entity", "repo/db", "--name", "db")


def test_a_read_only_knowledge_base_without_its_index_says_what_a_read_needed(people):
    """Its read, which makes the index from the journal, was refused with a write's words ("cannot be
    written here ... reads go on")."""
    shutil.rmtree(people.path / "index")
    paths = [people.path, *people.path.rglob("*")]
    modes = {p: stat.S_IMODE(os.lstat(p).st_mode) for p in paths if not p.is_symlink()}
    try:
        for p, mode in modes.items():
            os.chmod(p, mode & ~0o222)
        read = _run_as_a_user(people.path, "lookup", "Sam")
        assert read.returncode == 3 and "the index is missing or behind the journal" in read.stderr, read.stderr
        assert "this read cannot bring it up to date" in read.stderr and "reads go on" in read.stderr
    finally:
        for p, mode in modes.items():
            os.chmod(p, mode)
    assert people.json("lookup", "Sam")["entity"]["id"] == "person/sam"  # made where it can be written


def test_a_read_only_knowledge_base_is_served_for_reading(people):
    """kg serve on a read-only copy failed every read (503, and a 500 "bug" with a traceback for
    /sparql: it held the index by a file it could not write), and its shutdown failed the same way."""
    import urllib.parse

    from tests.serving import Server

    people("add-entity", "actor/bot", "--name", "Bot")
    secret = people.json(
        "tokens", "add", "bot", "--perspective", "main", "--audience", "owner", "--write", "--speaker", "actor/bot"
    )["secret"]
    paths = [people.path, *people.path.rglob("*")]
    modes = {p: stat.S_IMODE(os.lstat(p).st_mode) for p in paths if not p.is_symlink()}
    prefix = tuple(_as_a_user([]))
    try:
        for p, mode in modes.items():
            os.chmod(p, mode & ~0o222)
        server = Server(people.path, prefix=prefix)
        try:
            status, body = server.request("/api/lookup?entity=Sam", secret)
            assert status == 200 and json.loads(body)["entity"]["id"] == "person/sam", body
            query = urllib.parse.urlencode({"query": "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"})
            status, body = server.request("/sparql?" + query, secret)
            assert status == 200 and int(json.loads(body)["results"]["bindings"][0]["n"]["value"]) > 0, body
            status, said = server.post(
                "propose", secret, {"subject": "Sam", "predicate": "timezone", "value": "UTC", "sources": ["slack:a"]}
            )
            assert status >= 400 and "cannot be written here" in said["message"], said
        finally:
            server.stop()
        shown = server.process.stderr.read().decode()
        assert "Traceback" not in shown and "bug" not in shown, shown
    finally:
        for p, mode in modes.items():
            os.chmod(p, mode)


def test_the_way_out_of_a_link_at_the_private_journal_brings_it_back(people, tmp_path):
    """The advice for a link at journal/local was the one for the index (remove it; the next command
    makes the folder again): followed, the private journal was gone and the knowledge base damaged."""
    elsewhere = tmp_path / "elsewhere"
    (people.path / "journal" / "local").rename(elsewhere)
    (people.path / "journal" / "local").symlink_to(elsewhere)
    refused = one_line(people("add-entity", "repo/api", "--name", "api", expect=3))
    assert "journal/local is a symbolic link" in refused and "remove the link" not in refused
    way = refused[refused.index("(rm ") + 1 : refused.index("): what")]
    import subprocess

    subprocess.run(way, shell=True, check=True)
    people("add-entity", "repo/api", "--name", "api")
    assert "clean" in people("validate").stdout and people.json("lookup", "Sam")["entity"]["id"] == "person/sam"


@pytest.mark.parametrize("large", [False, True], ids=["a write", "an import"])
def test_a_write_whose_view_json_the_folder_refuses_is_acknowledged_once(people, tmp_path, large):
    """A folder left at view.json.tmp: the write was journaled and indexed, then exited 3 as refused,
    and the retry its message asked for made it twice (3 observations for 2 writes)."""
    (people.path / "view.json.tmp").mkdir()
    if large:  # (a large write keeps its rows beside the index: another path to view.json)
        records = tmp_path / "many.jsonl"
        rows = [{"type": "entity", "id": f"repo/mk{n}", "name": f"mk{n}"} for n in range(2500)]
        records.write_text("".join(json.dumps(r) + "\n" for r in rows))
        done = people("import", records, "--apply")
    else:
        done = people("propose", "web-app", "caveat", "--value", "mkonce", "-s", "doc:once")
    said = [line for line in done.stderr.splitlines() if line.startswith("kg: ")]
    assert len(said) == 1 and "is in the journal all the same (do not make it again)" in said[0], said
    checked = people("validate", expect=3).stdout  # the cause and its way out, before what it left
    assert checked.startswith("damaged: step cut short: view.json.tmp cannot be made"), checked
    (people.path / "view.json.tmp").rmdir()
    status = people.json("status")
    assert status["index"]["behind"] == 0
    if large:
        assert people.json("stats")["entities"]["repo"] >= 2500
    else:
        [fact] = [f for f in people.json("facts", "web-app")["facts"] if f["value"] == "mkonce"]
        assert fact["observations"] == 1
    assert people("validate").stdout.startswith("clean")


@pytest.mark.parametrize("marker, holds", [("purging.json", "a forget"), ("migrating.json", "a migration")])
@pytest.mark.parametrize(
    "text",
    [
        "{bad",
        "{}",
        '{"graphs": 5, "lines": [], "identifiers": [], "format": 3, "view": 7}',
        '{"graphs": [], "lines": [], "identifiers": [], "record": 5, "format": 99, "view": null}',
        '{"graphs": "abc", "lines": [], "identifiers": [], "format": true, "view": {"x": 1}}',
    ],
)
def test_a_marker_of_a_step_cut_short_that_does_not_read_is_damage_with_its_way_out(people, marker, holds, text):
    """purging.json or migrating.json broken by hand: every command, kg status and kg validate too,
    said 'a bug in kgrdf'."""
    (people.path / marker).write_text(text)
    for command in (["status"], ["lookup", "web-app"], ["add-entity", "repo/x", "--name", "x"]):
        line = one_line(people(*command, expect=3))
        assert f"{marker} holds {holds}" in line and "restore" in line and "bug" not in line, line
    checked = people("validate", expect=3)  # (a migration is finished as the folder opens: before the checks)
    assert f"{marker} holds {holds}" in checked.stdout + checked.stderr and "bug" not in checked.stderr
    assert json.loads((people.path / "format.json").read_text())["format"] == 3  # (never another's number)
