"""The journal is the truth and the index is derived: exports other tools read back, rebuilds that
lose nothing, torn tails set aside, the in-memory backend, and the git history."""

import gzip
import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kgrdf import journal as journal_mod
from kgrdf.kb import KnowledgeBase

from .conftest import at_a_terminal
from .patchlog import journal_bytes, patch_bytes, patch_files, write_patch


def _rapper_count(path, syntax):
    if shutil.which("rapper") is None:
        pytest.fail("rapper is missing: install Debian's raptor2-utils (make test does)")
    result = subprocess.run(["rapper", "-i", syntax, "-c", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    for line in result.stderr.splitlines():
        if "returned" in line:
            return int(line.split("returned")[1].split()[0])
    raise AssertionError(result.stderr)


@pytest.mark.parametrize(
    "fmt, rapper_syntax, rdflib_format",
    [
        ("trig", "trig", "trig"),
        ("nquads", "nquads", "nquads"),
    ],
)
def test_export_reads_back_in_rapper_and_rdflib_with_one_triple_per_fact_graph(
    demo, tmp_path, fmt, rapper_syntax, rdflib_format
):
    import rdflib

    out = tmp_path / f"kb.{fmt}"
    demo("export", "--format", fmt, "--output", out)
    dataset = rdflib.Dataset()
    dataset.parse(out, format=rdflib_format)
    quads = list(dataset.quads((None, None, None, None)))
    with KnowledgeBase.open(demo.path).reading() as session:
        expected = sum(1 for _ in session.backend.quads())
    assert len(quads) == expected
    assert _rapper_count(out, rapper_syntax) == expected
    kg_fact = rdflib.URIRef("https://kgrdf.org/ns#Fact")
    facts = {s for s, p, o, g in quads if p == rdflib.RDF.type and o == kg_fact}
    per_graph = Counter(g for s, p, o, g in quads if g in facts)
    assert len(facts) == demo.json("stats")["fact_count"] == 35
    assert set(per_graph.values()) == {1}
    assert set(per_graph) == facts


def test_turtle_export_is_the_current_knowledge_as_one_graph(demo, tmp_path):
    import rdflib

    out = tmp_path / "kb.ttl"
    demo("export", "--format", "turtle", "--output", out)
    graph = rdflib.Graph().parse(out, format="turtle")
    assert _rapper_count(out, "turtle") == len(graph)
    hotfix = rdflib.URIRef("https://kgrdf.org/kb/main/process/hotfix")
    entry = rdflib.URIRef("https://kgrdf.org/ns#entryPoint")
    assert list(graph.objects(hotfix, entry)) == [rdflib.URIRef("https://kgrdf.org/kb/main/channel/deploys")]


def test_export_refuses_an_unknown_format_and_an_unwritable_file(demo, tmp_path):
    assert "unknown export format" in demo("export", "--format", "rdfxml", expect=2).stderr
    result = demo("export", "--output", tmp_path / "missing" / "kb.trig", expect=2)
    assert "cannot write" in result.stderr and "Traceback" not in result.stderr
    folder = tmp_path / "a-folder"
    folder.mkdir()
    result = demo("export", "--output", folder, expect=2)
    assert f"cannot write {folder}" in result.stderr and list(folder.iterdir()) == []


def test_an_export_refused_leaves_the_file_it_was_to_replace_and_nothing_beside_it(demo, tmp_path):
    out = tmp_path / "exports" / "kb.trig"
    out.parent.mkdir()
    out.write_bytes(b"last week's export\n")
    assert "unknown export format" in demo("export", "--format", "rdfxml", "--output", out, expect=2).stderr
    assert out.read_bytes() == b"last week's export\n"
    assert [p.name for p in out.parent.iterdir()] == ["kb.trig"]


def test_an_export_through_a_link_replaces_the_file_the_link_names(demo, tmp_path):
    target = tmp_path / "exports" / "kb.nq"
    target.parent.mkdir()
    target.write_bytes(b"old\n")
    target.chmod(0o640)
    link = tmp_path / "latest.nq"
    link.symlink_to(target)
    written = demo.json("export", "--format", "nquads", "--output", link)
    assert link.is_symlink() and written["bytes"] == target.stat().st_size
    assert target.stat().st_mode & 0o777 == 0o640
    with KnowledgeBase.open(demo.path).reading() as session:
        expected = sum(1 for _ in session.backend.quads())
    assert len(target.read_text(encoding="utf-8").splitlines()) == expected
    assert sorted(p.name for p in target.parent.iterdir()) == ["kb.nq"]


def test_an_export_to_standard_output_is_the_export_to_a_file(demo, tmp_path):
    out = tmp_path / "kb.trig"
    demo("export", "--output", out)
    assert demo("export").stdout == out.read_text(encoding="utf-8")
    assert demo.json("export", "--format", "nquads")["data"] == demo("export", "--format", "nquads").stdout


def test_an_export_written_away_from_the_terminal_says_so_there_and_piped_says_nothing(demo, tmp_path):
    out = tmp_path / "kb.nq"
    done, told = at_a_terminal("export", "--format", "nquads", "--output", out, "--kb", demo.path)
    assert done.returncode == 0
    assert told == ["kg: exporting the knowledge base as nquads ..."]
    assert done.stdout.decode().startswith(f"wrote {out.stat().st_size} bytes of nquads to ")
    done, told = at_a_terminal("export", "--audience", "public", "--kb", demo.path)  # stdout piped: not watched
    assert done.returncode == 0 and done.stdout.startswith(b"@prefix")
    assert told[0] == "kg: exporting what the audience public may read as trig ..."
    piped = demo("export", "--format", "nquads", "--output", tmp_path / "again.nq")
    assert piped.stderr == ""
    assert (tmp_path / "again.nq").read_bytes() == out.read_bytes()


def test_deleting_the_index_loses_nothing(demo):
    before = demo.json("lookup", "hotfix")
    stats = demo.json("stats")
    shutil.rmtree(demo.path / "index")
    assert demo.json("lookup", "hotfix") == before
    assert demo.json("stats") == stats
    assert (demo.path / "index").is_dir()


def test_an_index_behind_the_journal_catches_up(demo, tmp_path):
    stale = tmp_path / "stale-index"
    shutil.copytree(demo.path / "index", stale)
    fact = demo.json("propose", "repo/api", "caveat", "--value", "needs the staging db", "--source", "pr:7")
    shutil.rmtree(demo.path / "index")
    shutil.copytree(stale, demo.path / "index")
    assert fact["id"] in {f["id"] for f in demo.json("facts", "repo/api")["facts"]}


def test_a_write_cut_short_after_the_journal_append_is_finished_by_the_next_command(demo):
    kb = KnowledgeBase.open(demo.path)
    view = json.loads((demo.path / "view.json").read_text())
    # Append a transaction the way a write does, then stop before the index and view.json.
    with kb.writing("propose") as writer:
        writer.propose("repo/api", "caveat", value="written before a crash", sources=["pr:9"])
        position = journal_mod.Position.from_dict(view)
        tx = journal_mod.Transaction(
            seq=writer.seq, command="propose", time="2026-11-30T00:00:00Z", adds=[str(q) for q in writer.adds]
        )
        kb.journal.append(tx, position)
        writer.discard()  # nothing more: the process "dies" here
    assert json.loads((demo.path / "view.json").read_text())["seq"] == view["seq"]
    values = [f.get("value") for f in demo.json("facts", "repo/api")["facts"]]
    assert "written before a crash" in values
    assert json.loads((demo.path / "view.json").read_text())["seq"] == view["seq"] + 1
    status = subprocess.run(["git", "status", "--porcelain"], cwd=demo.path, capture_output=True, text=True)
    assert status.stdout == ""


def next_patch_file(kb_path):
    """Where the shared journal's next patch goes (a write cut short leaves it short)."""
    kb = KnowledgeBase.open(kb_path)
    path = kb.journal.shared.dir / journal_mod.name_of(journal_mod.number_of(kb.view().shared) + 1)
    path.parent.mkdir(exist_ok=True)
    return path


def test_a_torn_journal_tail_is_set_aside_not_dropped(demo):
    torn = next_patch_file(demo.path)
    whole = gzip.compress(b'H id <urn:uuid:torn> .\nH time "t" .\nTX .\nA <urn:a> <urn:b> "half" .\nTC .\n')
    torn.write_bytes(whole[: len(whole) // 2])  # the file as far as the write got
    result = demo("propose", "repo/api", "caveat", "--value", "after the tear", "--source", "pr:3", "--json")
    assert "set aside a torn journal tail" in result.stderr
    aside = list(torn.parent.glob(torn.name + ".torn-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == whole[: len(whole) // 2]
    assert b"torn" not in patch_bytes(torn)  # the write took its place
    assert json.loads(result.stdout)["status"] == "proposed"


def test_a_journal_behind_view_json_refuses_writes_and_says_the_way_out(demo):
    segment = patch_files(demo.path / "journal")[-1]
    data = segment.read_bytes()
    segment.write_bytes(data[: len(data) // 2])
    result = demo("propose", "repo/api", "caveat", "--value", "x", "--source", "pr:3", expect=3)
    assert "move journal/ aside" in result.stderr


def test_the_memory_backend_answers_like_the_disk_index(demo):
    disk = KnowledgeBase.open(demo.path)
    memory = KnowledgeBase.open(demo.path, backend="memory")
    with disk.reading() as a, memory.reading() as b:
        assert b.backend.name == "memory" and not b.backend.persistent
        assert a.lookup("release") == b.lookup("release")
        assert a.neighbors("release", 2) == b.neighbors("release", 2)
        assert a.stats()["facts"] == b.stats()["facts"]


def test_the_git_history_holds_the_journal_and_never_the_index(demo):
    tracked = subprocess.run(["git", "ls-files"], cwd=demo.path, capture_output=True, text=True).stdout.split()
    assert any(name.startswith("journal/") for name in tracked)
    assert "view.json" in tracked and "format.json" in tracked
    assert not any(name.startswith("index/") for name in tracked)
    log = subprocess.run(["git", "log", "--format=%s"], cwd=demo.path, capture_output=True, text=True).stdout
    assert "kg supersede (transaction 3)" in log and "kg import (transaction 1)" in log


def test_a_stale_git_lock_is_removed_with_a_note(demo):
    import os
    import time

    lock = demo.path / ".git" / "index.lock"
    lock.write_text("")
    old = time.time() - 120
    os.utime(lock, (old, old))
    result = demo("propose", "repo/api", "caveat", "--value", "y", "--source", "pr:3")
    assert "removed a stale git lock" in result.stderr
    assert not lock.exists()


def _loose_objects(kb_path, tmp_path, sample_at_least: int = 3) -> None:
    """Loose objects in the knowledge base's history, as many writes leave: at least
    ``sample_at_least`` in the folder git estimates their number from (.git/objects/17)."""
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    made = 0
    while len(list((kb_path / ".git" / "objects" / "17").glob("*"))) < sample_at_least:
        paths = []
        for _ in range(500):
            made += 1
            paths.append(blobs / f"{made}")
            paths[-1].write_text(f"blob {made}\n")
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin-paths"],
            cwd=kb_path,
            input="\n".join(map(str, paths)),
            text=True,
            capture_output=True,
            check=True,
        )


def _packs(kb_path) -> list:
    return list((kb_path / ".git" / "objects" / "pack").glob("*.pack"))


def test_a_write_never_runs_gits_housekeeping_even_when_the_history_is_due_for_it(kg, tmp_path):
    config = subprocess.run(["git", "config", "gc.auto"], cwd=kg.path, capture_output=True, text=True)
    assert config.stdout.strip() == "0"  # kg init switched it off in the repository itself
    # A repository configured by hand to pack at the first loose object, and holding many: git commit
    # would run its housekeeping inside the write.
    subprocess.run(["git", "config", "gc.auto", "1"], cwd=kg.path, check=True)
    _loose_objects(kg.path, tmp_path)
    kg("add-entity", "repo/api", "--name", "api")
    assert _packs(kg.path) == []
    assert (
        "kg add-entity"
        in subprocess.run(["git", "log", "-1", "--format=%s"], cwd=kg.path, capture_output=True, text=True).stdout
    )


def test_a_write_that_leaves_the_history_due_for_housekeeping_starts_it_after_itself(kg, tmp_path, monkeypatch):
    import time

    from kgrdf import vcs

    monkeypatch.setattr(vcs, "LOOSE_OBJECTS", 1)  # due at the first loose objects, as git estimates them
    _loose_objects(kg.path, tmp_path)
    kg("add-entity", "repo/api", "--name", "api")
    # The housekeeping is a process of its own, started as the write ends: it may not be seen running
    # yet when the command returns, so wait for what it leaves (a pack) and for it to end.
    deadline = time.monotonic() + 60
    while (vcs.housekeeping_running(kg.path) or not _packs(kg.path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert vcs.housekeeping_running(kg.path) is None
    assert _packs(kg.path), "the housekeeping packed the history"
    # (the loose blobs made above are reachable from no commit: git keeps those loose for two weeks)
    kg("add-entity", "repo/web", "--name", "web")  # and the history goes on from the packed one
    log = subprocess.run(["git", "log", "--format=%s"], cwd=kg.path, capture_output=True, text=True).stdout
    assert log.splitlines()[:2] == ["kg add-entity (transaction 2)", "kg add-entity (transaction 1)"]


def test_a_deletion_ends_the_housekeeping_before_it_restarts_the_history(kg, tmp_path, monkeypatch):
    import os
    import time

    from kgrdf import vcs

    monkeypatch.setattr(vcs, "LOOSE_OBJECTS", 1)
    _loose_objects(kg.path, tmp_path)
    # git gc --auto runs this hook before it packs: the housekeeping lasts a minute unless it is ended
    hook = kg.path / ".git" / "hooks" / "pre-auto-gc"
    hook.write_text("#!/bin/sh\nsleep 60\n")
    os.chmod(hook, 0o700)
    kg("add-entity", "person/sam", "--name", "Sam Reyes")
    kg("propose", "person/sam", "role", "--value", "on call", "-s", "memory:n")
    housekeeping = vcs.housekeeping_running(kg.path)
    assert housekeeping is not None, "the write left the history due for housekeeping and started it"
    started = time.monotonic()
    kg("forget", "person/sam")
    assert time.monotonic() - started < 50, "forget did not wait for the housekeeping to end by itself"
    try:
        still = b"gc\0" in Path(f"/proc/{housekeeping}/cmdline").read_bytes()  # empty once it has ended
    except FileNotFoundError:
        still = False
    assert not still, "the housekeeping still runs beside the new history"
    assert vcs.housekeeping_running(kg.path) is None
    log = subprocess.run(["git", "log", "--format=%s"], cwd=kg.path, capture_output=True, text=True).stdout
    assert len(log.splitlines()) == 1  # the history restarted from the data as it is now


def test_a_damaged_journal_refuses_writes_reads_go_on_and_moving_it_aside_starts_a_new_one(demo):
    write_patch(next_patch_file(demo.path), b"H id <urn:uuid:x> .\nTZ .\n")  # a row no patch has: not a torn tail
    write = demo("propose", "repo/api", "caveat", "--value", "after the damage", "--source", "pr:8", expect=3)
    assert "unexpected row" in write.stderr and "mv journal journal.aside" in write.stderr
    read = demo("lookup", "hotfix")
    assert "Hotfix process" in read.stdout and "reading the index as of transaction 3" in read.stderr
    old_replica = json.loads((demo.path / "replica.json").read_text())["replica"]
    (demo.path / "journal").rename(demo.path / "journal.aside")
    fact = demo.json("propose", "repo/api", "caveat", "--value", "after the damage", "--source", "pr:8")
    new_replica = json.loads((demo.path / "replica.json").read_text())["replica"]
    assert new_replica != old_replica
    assert sorted({p.parent.parent.name for p in patch_files(demo.path / "journal")}) == ["local", new_replica]
    # The new journal is split as every write is: people and their facts in the private one.
    shared = journal_bytes(demo.path / "journal" / new_replica)
    local = journal_bytes(demo.path / "journal" / "local")
    assert b"Dana Okafor" in local and b"Dana" not in shared and b"Release process" in shared
    # Nothing of the data was lost, the sequence goes on, and the index is the new journal's rebuild.
    stats = demo.json("stats")
    assert stats["fact_count"] == 36 and stats["journal"]["transactions"] == 5
    assert fact["id"] in {f["id"] for f in demo.json("facts", "repo/api")["facts"]}
    demo("validate")
    shutil.rmtree(demo.path / "index")
    assert demo.json("stats")["fact_count"] == 36


def test_a_new_journal_cut_short_is_finished_by_the_next_write(demo):
    from kgrdf.kb import KnowledgeBase

    (demo.path / "journal").rename(demo.path / "journal.aside")
    kb = KnowledgeBase.open(demo.path)
    backend = kb.open_index(read_only=False)
    try:
        kb._write_view(journal_mod.Position())  # the first step of a new journal, then the process dies
    finally:
        kb.close_index(backend)
    demo("propose", "repo/api", "caveat", "--value", "after the cut", "--source", "pr:9")
    assert demo.json("stats")["fact_count"] == 36
    demo("validate")


def test_a_large_write_commits_to_git_beside_the_index_update(kg, tmp_path, monkeypatch):
    """A write of LARGE journal lines or more commits to git in a thread while the index is updated
    (an import of 100k facts); here LARGE is made small so an import of a few records takes that path."""
    import kgrdf.kb

    monkeypatch.setattr(kgrdf.kb, "LARGE", 5)
    records = [{"type": "entity", "id": f"repo/r{n}", "name": f"R{n}"} for n in range(4)]
    records += [
        {"type": "fact", "subject": f"repo/r{n}", "predicate": "depends_on", "object": "repo/r0", "sources": ["doc:a"]}
        for n in range(1, 4)
    ]
    seed = tmp_path / "seed.jsonl"
    seed.write_text("".join(json.dumps(r) + "\n" for r in records))
    commits = int(
        subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=kg.path, capture_output=True, text=True).stdout
    )
    kg("import", seed, "--apply")
    after = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=kg.path, capture_output=True, text=True)
    assert int(after.stdout) == commits + 1
    assert not (kg.path / "uncommitted").exists()
    assert len(kg.json("lookup", "repo/r0")["backlinks"]) == 3
    assert kg("validate").exit_code == 0


def test_the_size_of_an_index_counts_a_file_its_merging_removes_meanwhile_for_nothing(tmp_path, monkeypatch):
    """Whether a bulk load is followed by a compaction is decided on the size of the index's files,
    which the store's background merging removes at any moment: a file gone between the listing and
    its size is counted for nothing, never a failed write (a second import of 10k facts failed so)."""
    import os

    from kgrdf.store import oxigraph

    backend = oxigraph.OxigraphBackend(tmp_path / "index")
    held = backend._bytes_on_disk()
    assert held > 0
    (tmp_path / "index" / "999999.sst").write_bytes(b"x" * 1000)
    assert backend._bytes_on_disk() == held + 1000
    scandir = os.scandir

    def racing(path):
        entries = list(scandir(path))
        (tmp_path / "index" / "999999.sst").unlink()  # merged away after the listing
        return iter(entries)

    monkeypatch.setattr(oxigraph.os, "scandir", racing)
    assert backend._bytes_on_disk() == held
    backend.close()


class _Watched:
    """A store that notes which thread made each bulk load, and fails the load of a chosen row."""

    def __init__(self, store, failing_row: str | None = None):
        import threading

        self._store, self._failing, self.loads, self._lock = store, failing_row, [], threading.Lock()

    def bulk_load(self, **kwargs):
        import threading

        with self._lock:
            self.loads.append(threading.get_ident())
        if self._failing is not None and self._failing.encode() in kwargs["input"]:
            raise OSError("the disk is full")
        return self._store.bulk_load(**kwargs)

    def __getattr__(self, name):
        return getattr(self._store, name)


def _rows(n: int) -> list[str]:
    return [
        f'<https://example.org/s{i}> <https://example.org/p> "v{i}" <https://example.org/g{i % 3}>' for i in range(n)
    ]


def test_a_bulk_load_on_two_threads_leaves_every_row_once_and_a_failing_load_stops_both(tmp_path, monkeypatch):
    """A large write's rows and a rebuild's are loaded a batch at a time on two threads, each taking
    the next batch as it finishes one: every row lands, once, whatever thread loaded it; a batch that
    fails fails the load, and the other thread takes no batch after it."""
    from kgrdf.errors import Damaged
    from kgrdf.journal import Position, Transaction
    from kgrdf.store import oxigraph

    monkeypatch.setattr(oxigraph, "LOAD_LINES", 10)
    monkeypatch.setattr(oxigraph, "LOAD_THREADS", 2)
    backend = oxigraph.OxigraphBackend(tmp_path / "index")
    watched = backend.store = _Watched(backend.store)
    rows = _rows(300)
    backend.replace_all(iter(rows), Position(seq=4, digest="d4"))
    assert len(watched.loads) == 30
    assert len(set(watched.loads)) == 2  # both threads loaded
    assert sorted(str(q) for q in backend.quads()) == sorted(rows)
    assert backend.position() == (4, "d4")
    # A large write's load: the rows added, a deletion applied first.
    more = _rows(400)[300:]
    backend.load(Transaction(seq=5, command="import", time="t", deletes=[rows[0]], adds=more))
    assert {str(q) for q in backend.quads()} == set(rows[1:] + more)

    failing = tmp_path / "failing"
    backend = oxigraph.OxigraphBackend(failing)
    watched = backend.store = _Watched(backend.store, failing_row=rows[150])
    with pytest.raises(OSError, match="disk is full"):
        backend.replace_all(iter(rows), Position(seq=1, digest="d1"))
    # The failing batch is the 16th of 30; the other thread finishes the one it holds and stops.
    assert len(watched.loads) <= 18

    def damaged():  # a rebuild's journal, read as the load goes, found changed halfway
        yield from rows[:150]
        raise Damaged("the journal changed while the index was rebuilt from it")

    backend = oxigraph.OxigraphBackend(tmp_path / "damaged")
    watched = backend.store = _Watched(backend.store)
    with pytest.raises(Damaged, match="changed while the index was rebuilt"):
        backend.replace_all(damaged(), Position(seq=1, digest="d1"))
    assert len(watched.loads) == 15


def test_a_write_leaves_the_index_the_logs_of_its_last_few_opens_not_one_for_every_write(kg, monkeypatch):
    """Each write opens the index to change it, which sets the store's log aside and starts another
    (the store keeps a thousand, of 130-230 KB each: over a hundred MB beside a small index). A write
    deletes all but the last few; the store's own files are left alone."""
    from kgrdf.store import oxigraph

    monkeypatch.setattr(oxigraph, "KEPT_LOGS", 1000)  # as the store alone keeps them
    for n in range(6):
        kg("add-entity", f"repo/r{n}", "--name", f"r{n}")
    index = kg.path / "index"
    aside = sorted(p.name for p in index.glob("LOG.old.*"))
    assert len(aside) >= 5
    monkeypatch.setattr(oxigraph, "KEPT_LOGS", 3)
    deleted = []  # what kgrdf deletes (the store deletes its own files in its own code, never through here)
    unlink = os.unlink
    monkeypatch.setattr(os, "unlink", lambda path, *a, **kw: (deleted.append(Path(path).name), unlink(path, *a, **kw)))
    kg("add-entity", "repo/web", "--name", "web")
    monkeypatch.setattr(os, "unlink", unlink)
    kept = sorted(p.name for p in index.glob("LOG.old.*"))
    assert len(kept) == 3 and aside[-1] in kept and not set(kept) & set(aside[:-2])
    assert (index / "LOG").exists() and (index / "CURRENT").exists() and list(index.glob("MANIFEST-*"))
    assert set(aside[:-2]) <= set(deleted)  # the old logs, deleted by kgrdf; the store's own files, never
    assert not [
        name for name in deleted if name.endswith(".sst") or name.startswith(("MANIFEST", "CURRENT", "OPTIONS"))
    ]
    assert [e["id"] for e in kg.json("search", "web")["results"]] == ["repo/web"]
    assert kg.json("stats")["entity_count"] == 7
    kg("validate")


@pytest.mark.slow
def test_an_exports_memory_does_not_grow_with_the_knowledge_base(tmp_path):
    """The export is written as the index is read: with ten times the facts, its peak memory grows
    by less than the bytes it writes more, as an export held whole before it is written cannot (a
    list of every quad took 4.8 bytes of memory a byte written). What grows is the store's own
    reading of a larger index."""
    import sys

    bench = Path(__file__).resolve().parent.parent / "bench"
    sys.path.insert(0, str(bench))
    import measure
    from generate import generate

    peaks, sizes = [], []
    for facts in (2_000, 20_000):
        kb, out = tmp_path / f"kb-{facts}", tmp_path / f"kb-{facts}.nq"
        generate(kb, facts)
        _seconds, peak = measure.run(["export", "--format", "nquads", "--output", str(out), "--kb", str(kb)])
        peaks.append(peak)
        sizes.append(out.stat().st_size)
    assert sizes[1] > 9 * sizes[0]  # ten times the data written
    assert peaks[1] - peaks[0] < (sizes[1] - sizes[0]) / 1e6, (peaks, sizes)


def test_an_export_to_a_device_or_a_pipe_writes_to_it_and_never_replaces_it(demo, tmp_path):
    import os
    import stat
    import threading

    here = tmp_path / "exports"
    here.mkdir()
    out = here / "kb.nq"
    size = demo.json("export", "--format", "nquads", "--output", out)["bytes"]
    assert size == out.stat().st_size
    pipe = here / "pipe"
    os.mkfifo(pipe)
    heard = []
    reader = threading.Thread(target=lambda: heard.append(pipe.read_bytes()), daemon=True)
    reader.start()
    assert demo.json("export", "--format", "nquads", "--output", pipe)["bytes"] == size
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.stat(pipe).st_mode) and sorted(p.name for p in here.iterdir()) == ["kb.nq", "pipe"]
    assert heard == [out.read_bytes()]
    assert demo.json("export", "--format", "nquads", "--output", "/dev/null")["bytes"] == size
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
