"""A knowledge base written in format 1 (tests/fixtures/kb-v1, made by tests/fixtures/make_kb_v1.sh
with the kgrdf of that format) is migrated on open: it answers the same reads, each of its journals
is then an RDF Patch log on its own, the sequence goes on, and a migration killed at any point
leaves the old files or the new ones, never a mix. One written in format 2 (tests/fixtures/kb-v2,
by the same commands), whose patch files are plain, keeps them byte for byte and goes on gzipped."""

import json
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from kgrdf import vcs
from kgrdf.journal import Position
from kgrdf.kb import FORMAT, KnowledgeBase

from .conftest import Kg
from .fixtures.capture_reads import reads
from .patchlog import check_journals
from .test_durability import KILL_AT, _finish, _spawn
from .test_forget import _files_naming, _unpack_git

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE = FIXTURES / "kb-v1"
EXPECTED = json.loads((FIXTURES / "kb-v1.expected.json").read_text())
REPLICA = EXPECTED["replica"]
V2 = FIXTURES / "kb-v2"
EXPECTED_V2 = json.loads((FIXTURES / "kb-v2.expected.json").read_text())


def _copy(tmp_path: Path) -> Path:
    """The fixture as a user has it: in its own folder, with its git history."""
    path = tmp_path / "kb"
    shutil.copytree(FIXTURE, path)
    vcs.init(path)
    vcs.commit(path, "kg: a knowledge base in format 1")
    return path


def _journal_files(path: Path) -> dict:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _git(path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=path, capture_output=True, text=True, check=True).stdout


def _v1_headers(name: str) -> list[dict]:
    """The header rows of each block of a format 1 journal of the fixture."""
    blocks, current = [], None
    for segment in sorted((FIXTURE / "journal" / name).glob("*.rdfp")):
        for line in segment.read_text().split("\n"):
            if line.startswith("H "):
                if current is None:
                    current = {}
                    blocks.append(current)
                key, _, value = line[2:-2].partition(" ")
                current[key] = value.strip('<>"')
            elif line == "TC .":
                current = None
    return blocks


def test_the_fixture_is_format_1_with_what_the_migration_must_handle():
    assert json.loads((FIXTURE / "format.json").read_text())["format"] == 1 < FORMAT
    local, shared = _v1_headers("local"), _v1_headers(REPLICA)
    local_ids = {b["id"] for b in local}
    # The faults of format 1: a shared block's prev names a transaction of the private journal alone,
    # a transaction spans both journals under one id, and segments hold several patches.
    assert any(b.get("prev") in local_ids - {s["id"] for s in shared} for b in shared)
    assert any(b["streams"] == f"local {REPLICA}" for b in shared)
    assert len(shared) > 1
    assert sum("placeholder" in b for b in local) == 3  # forget left placeholders, one of a two-journal transaction


def test_a_format_1_knowledge_base_is_migrated_on_open_and_answers_the_same_reads(tmp_path):
    path = _copy(tmp_path)
    kb = KnowledgeBase.open(path)
    assert kb.format == FORMAT and json.loads((path / "format.json").read_text())["format"] == FORMAT
    assert reads(path) == EXPECTED
    # Each journal is now a patch log on its own; the shared one names nothing private.
    shared, local = check_journals(path / "journal", REPLICA)
    v1_shared = _v1_headers(REPLICA)
    assert [p["headers"]["id"] for p in shared] == [b["id"] for b in v1_shared]  # the shared ids stay
    assert [p["headers"]["time"] for p in shared] == [b["time"] for b in v1_shared]
    assert sum("placeholder" in p["headers"] for p in local) == 3
    entries, torn = kb.journal.read_after(Position())
    assert torn == [] and [tx.seq for tx, _ in entries] == list(range(1, EXPECTED["transactions"] + 1))
    # Committed, and nothing of format 1 is left beside it.
    assert _git(path, "status", "--porcelain", "--untracked-files=all") == ""
    assert f"format {FORMAT}" in _git(path, "log", "-1", "--format=%s")
    assert sorted(p.name for p in path.iterdir() if p.name.startswith(("journal", "migrating"))) == ["journal"]
    kg = Kg(path)
    assert kg.json("validate")["damage"] == []
    # The sequence goes on, and a forget afterwards leaves both logs whole.
    kg("propose", "repo/web", "caveat", "--value", "after the migration", "-s", "pr:99")
    assert kg.json("stats")["journal"]["transactions"] == EXPECTED["transactions"] + 1
    kg("add-entity", "person/lee", "--name", "Lee Park")
    kg("propose", "person/lee", "member_of", "--object", "team/web", "-s", "profile:directory")
    forgot = kg.json("forget", "person/lee")
    assert forgot["placeholders"] >= 1
    shared_after, local_after = check_journals(path / "journal", REPLICA)
    assert [p["headers"]["id"] for p in shared_after[: len(shared)]] == [p["headers"]["id"] for p in shared]
    assert sum("placeholder" in p["headers"] for p in local_after) == 3 + forgot["placeholders"]
    assert kg.json("validate")["damage"] == []
    assert reads(path)["facts"]["repo/api"] == EXPECTED["facts"]["repo/api"]


def test_a_format_1_knowledge_base_without_git_or_index_is_migrated_too(tmp_path):
    path = tmp_path / "kb"
    shutil.copytree(FIXTURE, path)
    assert reads(path) == EXPECTED
    check_journals(path / "journal", REPLICA)


@pytest.mark.parametrize(
    "target, when, match",
    [
        pytest.param("kgrdf.migrate:build", "after", "", id="new journal built, before the commit point"),
        pytest.param("kgrdf.files:write_json", "after", "migrating", id="at the commit point"),
        pytest.param("kgrdf.migrate:os.replace", "after", "journal", id="between the two renames"),
        pytest.param("kgrdf.files:write_json", "after", "view.json", id="view.json written, not format.json"),
        pytest.param("kgrdf.kb:KnowledgeBase.git_commit", "before", "", id="before the commit"),
    ],
)
def test_a_migration_killed_at_any_point_leaves_the_old_or_the_new_and_the_next_open_finishes(
    tmp_path, target, when, match
):
    path = _copy(tmp_path)
    before = _journal_files(path / "journal")
    proc = _spawn(path, "-c", KILL_AT, target, when, match, "stats")
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    if (path / "migrating.json").exists():
        assert json.loads((path / "migrating.json").read_text())["format"] == FORMAT  # the new: carried forward
    elif json.loads((path / "format.json").read_text())["format"] == FORMAT:
        check_journals(path / "journal", REPLICA)  # the new, whole (its git commit owed)
        assert (path / "uncommitted").exists()
    else:  # the old, whole: not a byte of its journal changed
        assert json.loads((path / "format.json").read_text())["format"] == 1
        assert _journal_files(path / "journal") == before
        assert "segment" in json.loads((path / "view.json").read_text())  # view.json of format 1
    assert reads(path) == EXPECTED
    check_journals(path / "journal", REPLICA)
    assert json.loads((path / "format.json").read_text())["format"] == FORMAT
    assert not (path / "migrating.json").exists() and not (path / "journal.v1").exists()
    assert not (path / "journal.v2").exists()
    kg = Kg(path)
    assert kg.json("validate")["damage"] == []
    kg("propose", "repo/web", "caveat", "--value", "after the cut", "-s", "pr:98")
    assert _git(path, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_torn_tail_of_format_1_is_set_aside_in_the_new_journal_and_nothing_else_changes(tmp_path):
    path = _copy(tmp_path)
    segment = next((path / "journal" / REPLICA).glob("*.rdfp"))
    with open(segment, "ab") as out:  # a format 1 write cut short in its block
        out.write(b'H id <urn:uuid:torn> .\nH seq "14" .\nTX .\nA <urn:a> <urn:b> "half')
    vcs.commit(path, "kg: the torn tail as git holds it")
    assert reads(path) == EXPECTED
    aside = list((path / "journal" / REPLICA).glob(f"{segment.name}.torn-*"))
    assert len(aside) == 1 and aside[0].read_bytes().endswith(b'"half')
    check_journals(path / "journal", REPLICA)
    assert Kg(path).json("validate")["damage"] == []


# --- format 2: the same patches, plain -----------------------------------------------------------


def test_a_format_2_knowledge_base_keeps_its_plain_patches_answers_the_same_and_goes_on_gzipped(tmp_path):
    path = tmp_path / "kb"
    shutil.copytree(V2, path)
    vcs.init(path)
    vcs.commit(path, "kg: a knowledge base in format 2")
    plain = _journal_files(path / "journal")
    assert json.loads((path / "format.json").read_text())["format"] == 2 < FORMAT
    assert plain and all(name.endswith(".rdfp") for name in plain)
    kb = KnowledgeBase.open(path)
    assert kb.format == FORMAT and json.loads((path / "format.json").read_text())["format"] == FORMAT
    assert reads(path) == EXPECTED_V2
    assert _journal_files(path / "journal") == plain  # not a byte of the old patches changed
    assert f"format {FORMAT}" in _git(path, "log", "-1", "--format=%s")
    assert _git(path, "status", "--porcelain", "--untracked-files=all") == ""
    kg = Kg(path)
    kg("propose", "repo/web", "caveat", "--value", "after the migration", "-s", "pr:99")
    added = sorted(set(_journal_files(path / "journal")) - set(plain))
    assert added and all(name.endswith(".rdfp.gz") for name in added), added
    assert kg.json("stats")["journal"]["transactions"] == EXPECTED_V2["transactions"] + 1
    check_journals(path / "journal", EXPECTED_V2["replica"])
    assert kg.json("validate")["damage"] == []
    # The index made again from the mixed journal holds what it held.
    quads = reads(path)["quads"]
    shutil.rmtree(path / "index")
    assert reads(path)["quads"] == quads
    # A forget reads and rewrites both forms and leaves no trace in either.
    kg("add-entity", "person/lee", "--name", "Lee Park")
    kg("propose", "person/lee", "member_of", "--object", "team/web", "-s", "profile:directory")
    assert _files_naming(path, ["Lee Park"])
    assert kg.json("forget", "person/lee")["remaining"] == []
    _unpack_git(path)
    assert _files_naming(path, ["Lee Park", "person/lee"]) == []
    check_journals(path / "journal", EXPECTED_V2["replica"])
    assert reads(path)["facts"]["repo/api"] == EXPECTED_V2["facts"]["repo/api"]
