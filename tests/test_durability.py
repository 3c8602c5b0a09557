"""Durability (§5, §11 Reliability): writes killed at any point, writers in several processes at
once, readers beside them, and the ways out of a journal that is damaged or gone.

Every command here runs in a process of its own where the fault needs one (a kill, a second writer,
a reader beside it); the checks that follow use the in-process ``kg`` runner. The random fault test
is seeded: set KGRDF_FAULT_SEED to replay a failure (the seed is in every assertion message).
"""

import itertools
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from pyoxigraph import NamedNode

from kgrdf import validation
from kgrdf.cli import app
from kgrdf.journal import Position
from kgrdf.kb import KnowledgeBase
from kgrdf.store.oxigraph import OxigraphBackend

from .conftest import Kg, one_line, runner
from .patchlog import check_journals, patch_bytes, patch_files, write_patch

SEED = int(os.environ.get("KGRDF_FAULT_SEED") or 20261130)
ENTITIES = 20  # repo/r0 .. repo/r19: facts spread over them, as real writes are

# A kg command that kills itself with SIGKILL at one named point of the library: just before or
# just after a function runs, the first time its arguments mention a text (argv: module:qualified.name,
# before|after, the text or "", the kg arguments). The library has no fault hooks; this puts the kill
# at an exact phase instead of a lucky delay.
KILL_AT = r"""
import importlib, os, signal, sys
target, when, match, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
module_name, _, qualname = target.partition(":")
owner = importlib.import_module(module_name)
*path, name = qualname.split(".")
for part in path:
    owner = getattr(owner, part)
original = getattr(owner, name)
def patched(*args, **kwargs):
    if match not in repr((args, kwargs)):
        return original(*args, **kwargs)
    if when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    result = original(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
    return result
setattr(owner, name, patched)
sys.argv = ["kg", *argv]
from kgrdf.cli import main
main()
"""

# Where the pinpointed kills land, in the order a write passes them.
POINTS = [
    ("kgrdf.journal:Journal.append", "before", ""),  # validated, nothing written
    ("kgrdf.store.oxigraph:OxigraphBackend.apply", "before", ""),  # in the journal, not in the index
    ("kgrdf.store.oxigraph:OxigraphBackend.apply", "after", ""),  # in the index, view.json behind
    ("kgrdf.kb:KnowledgeBase._write_view", "after", ""),  # view.json written, no git commit
    ("kgrdf.vcs:_git", "after", "'add'"),  # git add done, git commit not run
    ("kgrdf.vcs:commit", "after", ""),  # committed, the answer not printed
]

PHASES = [
    "before the journal append",
    "during the journal append (torn tail)",
    "after the journal append, before the index update",
    "index updated, before view.json",
    "during the git commit",
    "committed, before the answer",
    "after the answer (acknowledged)",
]


# --- helpers --------------------------------------------------------------------------------------


def _records(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _entities(kg, tmp_path):
    kg(
        "import",
        _records(
            tmp_path / "entities.jsonl",
            [{"type": "entity", "id": f"repo/r{i}", "name": f"r{i}"} for i in range(ENTITIES)],
        ),
        "--apply",
    )


def _spawn(kb_path: Path, *argv: str) -> subprocess.Popen:
    """A kg command in a fresh process, in a process group of its own (its git children with it)."""
    return subprocess.Popen(
        [sys.executable, *argv, "--kb", str(kb_path), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group is still running (not a zombie nobody reaped)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _finish(proc: subprocess.Popen) -> tuple[str, str]:
    """Collect a process's output, then wait for what it left running (a git command it started):
    the next command starts after them, as a user's next command would."""
    out, err = proc.communicate(timeout=120)
    deadline = time.monotonic() + 30
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.005)
    return out, err


def _journal_bytes(kb_path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(kb_path / "journal"):
        for name in files:
            if name.endswith((".rdfp", ".rdfp.gz")):
                try:
                    total += os.stat(os.path.join(root, name)).st_size
                except FileNotFoundError:
                    pass
    return total


def _git(kb_path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=kb_path, capture_output=True, text=True, check=True).stdout


def _acknowledged(proc: subprocess.Popen, out: str) -> str | None:
    """The fact id a write printed, when it exited 0: what the user was told landed."""
    if proc.returncode != 0:
        return None
    doc = json.loads(out)
    return doc.get("id", "import")


def _state(kb_path: Path) -> dict:
    return {
        "view": (kb_path / "view.json").read_text(),
        "journal": KnowledgeBase.open(kb_path).journal.end_offset(),
        "head": _git(kb_path, "rev-parse", "HEAD").strip(),
    }


def _phase(kb_path: Path, before: dict) -> str:
    """Where a write that did not answer was cut short, read from what it left on disk."""
    kb = KnowledgeBase.open(kb_path)
    if kb.journal.end_offset() == before["journal"]:
        return PHASES[0]
    entries, _torn = kb.journal.read_after(Position.from_dict(json.loads(before["view"])))
    if not entries:
        return PHASES[1]
    index = OxigraphBackend(kb.index_path, read_only=True)
    try:
        at = index.position()
    finally:
        index.close()
    if at is None or at[0] < entries[-1][0].seq:
        return PHASES[2]
    if (kb_path / "view.json").read_text() == before["view"]:
        return PHASES[3]
    if _git(kb_path, "rev-parse", "HEAD").strip() == before["head"]:
        return PHASES[4]
    return PHASES[5]


def _kill_when(proc: subprocess.Popen, ready, delay: float) -> None:
    """SIGKILL the process ``delay`` seconds after ``ready()`` first holds (polled every 0.5 ms)."""
    while proc.poll() is None:
        if ready():
            if delay:
                time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            return
        time.sleep(0.0005)


def _timeline(kb_path: Path, *argv: str) -> dict:
    """Run a write to the end, noting when the journal grows and when the process exits."""
    start = time.monotonic()
    size = _journal_bytes(kb_path)
    proc = _spawn(kb_path, *argv)
    grew = None
    while proc.poll() is None:
        if grew is None and _journal_bytes(kb_path) != size:
            grew = time.monotonic() - start
        time.sleep(0.0005)
    out, err = _finish(proc)
    assert proc.returncode == 0, err
    took = time.monotonic() - start
    return {"took": took, "journal": grew if grew is not None else took, "out": out}


def _import_file(tmp_path: Path, tag: str) -> tuple[Path, int]:
    entities = [{"type": "entity", "id": f"repo/i{tag}-{k}", "name": f"i{tag}-{k}"} for k in range(10)]
    facts = [
        {
            "type": "fact",
            "subject": f"repo/i{tag}-{k}",
            "predicate": "caveat",
            "value": f"import {tag} {k} {j}",
            "sources": ["slack:import"],
        }
        for k in range(10)
        for j in range(12)
    ]
    return _records(tmp_path / f"import-{tag}.jsonl", entities + facts), len(facts)


def _after_kill(kg, rng, tag, mode, facts, fact_id, landed) -> list[str]:
    """The next commands after a kill, a read and a write in either order: they succeed and see the
    whole write or nothing of it; what was acknowledged is there; nothing is damaged. Returns the
    ids the follow-up write acknowledged."""
    acked = []
    for step in rng.sample(["read", "write"], 2):
        if step == "read":
            stats = kg.json("stats")
            assert stats["fact_count"] == facts, f"stats: {stats}"
        else:
            doc = kg.json(
                "propose",
                f"repo/r{rng.randrange(ENTITIES)}",
                "caveat",
                "--value",
                f"after kill {tag}",
                "--source",
                "pr:after",
            )
            assert doc["outcome"] == "created"
            acked.append(doc["id"])
            facts += 1
    if fact_id and fact_id != "import":
        assert kg.json("history", fact_id)["fact"]["id"] == fact_id
    if mode.startswith("import") and landed:  # (one that did not land left the count as it was)
        assert len(kg.json("facts", f"repo/i{tag}-0")["facts"]) == 12
    damage = validation.check_store(KnowledgeBase.open(kg.path))
    assert damage == []
    return acked


# --- 1. writes killed at any point ---------------------------------------------------------------


@pytest.mark.slow
def test_a_write_killed_at_any_point_loses_nothing_acknowledged_and_the_next_command_finishes_it(kg, tmp_path):
    rng = random.Random(SEED)
    _entities(kg, tmp_path)
    path = kg.path

    def propose_argv(tag):
        return [
            "propose",
            f"repo/r{rng.randrange(ENTITIES)}",
            "caveat",
            "--value",
            f"write {tag}",
            "--source",
            f"pr:{tag}",
        ]

    # How long a write takes in a fresh process, and where in it the journal grows.
    warm = [_timeline(path, "-m", "kgrdf", *propose_argv(f"warm-{i}")) for i in range(2)]
    acked = [json.loads(w["out"])["id"] for w in warm]
    took = statistics.median(w["took"] for w in warm)
    tail = statistics.median(w["took"] - w["journal"] for w in warm)  # journal append -> exit
    import_file, import_facts = _import_file(tmp_path, "warm")
    warm_import = _timeline(path, "-m", "kgrdf", "import", str(import_file), "--apply")
    import_took, import_tail = warm_import["took"], warm_import["took"] - warm_import["journal"]
    facts = kg.json("stats")["fact_count"]

    modes = (
        ["timed"] * 24
        + ["journal"] * 9
        + ["git"] * 5
        + ["point"] * len(POINTS)
        + ["import timed"] * 4
        + ["import journal"] * 4
    )
    rng.shuffle(modes)
    phases: dict[str, Counter] = {}
    point = 0
    started = time.monotonic()
    for number, mode in enumerate(modes):
        tag = f"{number}"
        new_facts = 1
        if mode.startswith("import"):
            file, new_facts = _import_file(tmp_path, tag)
            argv = ["-m", "kgrdf", "import", str(file), "--apply"]
        elif mode == "point":
            target, when, match = POINTS[point % len(POINTS)]
            point += 1
            argv = ["-c", KILL_AT, target, when, match, *propose_argv(tag)]
        else:
            argv = ["-m", "kgrdf", *propose_argv(tag)]
        before = _state(path)
        size = _journal_bytes(path)
        proc = _spawn(path, *argv)
        if mode == "timed":
            delay = rng.uniform(0, 1.15 * took)
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
        elif mode == "import timed":
            delay = rng.uniform(0, 1.15 * import_took)
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
        elif mode == "journal":
            delay = rng.choice([0.0, rng.uniform(0, 0.03), rng.uniform(0, tail)])  # at once, in index and git, any
            _kill_when(proc, lambda size=size: _journal_bytes(path) != size, delay)
        elif mode == "import journal":
            delay = rng.uniform(0, import_tail)
            _kill_when(proc, lambda size=size: _journal_bytes(path) != size, delay)
        elif mode == "git":
            delay = 0.0
            _kill_when(proc, lambda: os.path.exists(path / ".git" / "index.lock"), 0)
        else:
            delay = 0.0
        out, err = _finish(proc)
        where = (
            f"kill {number} ({mode}{f' at {target} {when}' if mode == 'point' else ''}, "
            f"delay {delay:.3f} s) of seed {SEED}; exit {proc.returncode}; stderr: {err[-800:]}"
        )
        if mode == "point":
            assert proc.returncode == -signal.SIGKILL, f"the kill point is gone from the library: {where}"
        else:
            assert proc.returncode in (0, -signal.SIGKILL), where
        phase = "?"
        try:  # whatever fails, say which kill of which seed
            fact_id = _acknowledged(proc, out)
            phase = PHASES[-1] if fact_id else _phase(path, before)
            phases.setdefault(mode, Counter())[phase] += 1
            landed = phase not in PHASES[:2]
            if fact_id and fact_id != "import":
                acked.append(fact_id)
            if landed:
                facts += new_facts
            acked += _after_kill(kg, rng, tag, mode, facts, fact_id, landed)
            facts += 1  # the follow-up write
            if number % 15 == 14:
                kg("validate")
        except Exception as exc:
            raise AssertionError(f"after a kill {phase}: {where}\n{exc}") from exc
    kills_took = time.monotonic() - started

    # Everything acknowledged is there, the journal is one chain, and the whole base validates.
    for fact_id in acked:
        assert kg.json("history", fact_id)["fact"]["id"] == fact_id, f"{fact_id} lost; seed {SEED}"
    assert kg.json("stats")["fact_count"] == facts
    entries, torn = KnowledgeBase.open(path).journal.read_after(Position())
    assert torn == []
    assert [tx.seq for tx, _ in entries] == list(range(1, len(entries) + 1)), f"seed {SEED}"
    check_journals(path / "journal", KnowledgeBase.open(path).replica)  # each journal a whole patch log
    kg("validate")

    total = Counter()
    for counts in phases.values():
        total.update(counts)
    print(
        f"\nseed {SEED}: {len(modes)} kills in {kills_took:.0f} s; a write takes {took:.2f} s "
        f"(journal append to exit {tail:.2f} s), an import of {import_facts} facts {import_took:.2f} s "
        f"(journal append to exit {import_tail:.2f} s)"
    )
    for phase in PHASES:
        by_mode = ", ".join(f"{mode} {counts[phase]}" for mode, counts in sorted(phases.items()) if counts[phase])
        print(f"  {total[phase]:3d}  {phase}" + (f"  ({by_mode})" if by_mode else ""))
    print(f"  acknowledged writes (including the follow-ups): {len(acked)}; facts at the end: {facts}")
    # The kills covered the whole write: before it wrote anything, and each step between the journal
    # append and the answer (the pinpointed kills make sure of these; the others land where they may).
    for phase in [PHASES[0], *PHASES[2:-1]]:
        assert total[phase] >= 1, f"no kill landed {phase}; seed {SEED}: {dict(total)}"


# --- 2. writers and readers in several processes at once ------------------------------------------

# A writer: N writes, each its own transaction, once the file GO exists (argv: kb, tag, N, GO, PAUSE).
# Between two writes it pauses up to PAUSE seconds, as a caller doing other work would.
WRITER = r"""
import json, random, sys, time
from pathlib import Path
from kgrdf.kb import KnowledgeBase
path, tag, count, go, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), float(sys.argv[5])
kb = KnowledgeBase.open(path)
Path(f"{go}.{tag}").touch()
while not go.exists():
    time.sleep(0.001)
ids, waits, rng = [], [], random.Random(tag)
for i in range(count):
    started = time.monotonic()
    with kb.writing("propose") as writer:
        waits.append(time.monotonic() - started)
        outcome = writer.propose(f"repo/r{i % 20}", "caveat", value=f"{tag} {i}", sources=[f"pr:{tag}-{i}"])
    ids.append(outcome.fact.id)
    time.sleep(rng.uniform(0, pause))
print(json.dumps({"ids": ids, "longest_wait": max(waits)}))
"""

# A reader: reads in a loop until the file STOP exists (argv: kb, GO, STOP, BASE). In each read,
# every fact has its whole provenance (a status, an authority, a source with its kind) and its
# assertion, and the facts are as many as the writes the index says it reflects (each write after
# transaction BASE adds one fact): a half-applied write would break one or the other.
READER = r"""
import json, sys, time, traceback
from pathlib import Path
from kgrdf.kb import KnowledgeBase
path, go, stop, base = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
INCOMPLETE = '''
PREFIX kg: <https://kgrdf.org/ns#>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?fact WHERE {
  GRAPH ?provenance { ?fact a kg:Fact }
  FILTER NOT EXISTS { GRAPH ?provenance { ?fact kg:factStatus ?status ; kg:authority ?authority ;
                                                prov:wasDerivedFrom ?source . ?source kg:sourceKind ?kind } }
  FILTER NOT EXISTS { GRAPH ?fact { ?s ?p ?o } }
}'''
kb = KnowledgeBase.open(path)
Path(f"{go}.reader").touch()
while not go.exists():
    time.sleep(0.001)
reads, problems, errors, seen, slowest = 0, [], [], set(), 0.0
while not stop.exists():
    started = time.monotonic()
    try:
        with kb.reading() as session:
            stats = session.stats()
            incomplete = [row["fact"].value for row in session.sparql(INCOMPLETE)]
    except Exception:
        errors.append(traceback.format_exc())
        continue
    slowest = max(slowest, time.monotonic() - started)
    reads += 1
    at = stats["journal"]["transactions"]
    seen.add(at)
    if incomplete:
        problems.append(f"at transaction {at}: facts without their provenance: {incomplete[:3]}")
    if stats["fact_count"] != at - base:
        problems.append(f"at transaction {at}: {stats['fact_count']} facts, expected {at - base}")
    time.sleep(0.02)
print(json.dumps({"reads": reads, "positions": len(seen), "problems": problems[:10], "errors": errors[:3],
                  "slowest": slowest}))
"""


def _start_together(tmp_path: Path, procs: dict, names) -> None:
    """Let the processes go at once, when all of them have loaded kgrdf and opened the base."""
    go = tmp_path / "go"
    deadline = time.monotonic() + 60
    while not all(Path(f"{go}.{name}").exists() for name in names):
        for name, proc in procs.items():
            assert proc.poll() is None, f"{name} stopped early: {proc.communicate()}"
        assert time.monotonic() < deadline, "the processes did not start"
        time.sleep(0.01)
    go.touch()


def _writers(tmp_path: Path, kb_path: Path, count: int, pause: float, env=None) -> dict:
    return {
        tag: subprocess.Popen(
            [sys.executable, "-c", WRITER, str(kb_path), tag, str(count), str(tmp_path / "go"), str(pause)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        for tag in ("a", "b")
    }


def _tags_in_journal(kb_path: Path) -> list[tuple[int, str]]:
    """(sequence number, the writer's "a 12" value) of each transaction that proposed a value."""
    out = []
    for tx, _ in KnowledgeBase.open(kb_path).journal.read_after(Position())[0]:
        for line in tx.adds:
            if "<https://kgrdf.org/ns#caveat>" in line:
                out.append((tx.seq, line.split('"')[1]))
    return out


@pytest.mark.slow
def test_two_writers_at_once_both_land_in_one_order_and_a_reader_never_sees_half_a_write(kg, tmp_path):
    _entities(kg, tmp_path)
    base = KnowledgeBase.open(kg.path).view().seq
    count = 100
    writers = _writers(tmp_path, kg.path, count, pause=0.03)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(kg.path), str(tmp_path / "go"), str(tmp_path / "stop"), str(base)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = time.monotonic()
    _start_together(tmp_path, {**writers, "reader": reader}, ["a", "b", "reader"])
    results = {}
    for tag, proc in writers.items():
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"writer {tag}: {err[-2000:]}"
        results[tag] = json.loads(out)
    took = time.monotonic() - started
    (tmp_path / "stop").touch()
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err[-2000:]
    reads = json.loads(out)

    # Every write landed, once, and is found by its value and its id.
    ids = {tag: r["ids"] for tag, r in results.items()}
    assert len(set(ids["a"]) | set(ids["b"])) == 2 * count
    assert kg.json("stats")["fact_count"] == 2 * count
    found = {}
    for i in range(ENTITIES):
        for fact in kg.json("facts", f"repo/r{i}")["facts"]:
            found[fact["value"]] = fact["id"]
    expected = {f"{tag} {i}": ids[tag][i] for tag in ids for i in range(count)}
    assert found == expected

    # The journal holds the writes in one order: 1..N without gaps or repeats, each after the one
    # before it, and each writer's writes in the order it made them.
    entries, torn = KnowledgeBase.open(kg.path).journal.read_after(Position())
    assert torn == []
    assert [tx.seq for tx, _ in entries] == list(range(1, base + 2 * count + 1))
    check_journals(kg.path / "journal", KnowledgeBase.open(kg.path).replica)  # each journal a whole patch log
    order = [value for _, value in _tags_in_journal(kg.path)]
    for tag in ids:
        assert [v for v in order if v.startswith(f"{tag} ")] == [f"{tag} {i}" for i in range(count)]
    switches = sum(1 for x, y in itertools.pairwise(order) if x[0] != y[0])

    # The index equals a rebuild, nothing is left uncommitted, and git has one commit per write.
    assert validation.check_store(KnowledgeBase.open(kg.path)) == []
    kg("validate")
    log = _git(kg.path, "log", "--format=%s").splitlines()
    assert log[-1] == "kg init"
    writes = [f"kg propose (transaction {n})" for n in range(base + 1, base + 2 * count + 1)]
    assert sorted(log[:-1]) == sorted([f"kg import (transaction {base})", *writes])

    # The reader read all along, never failed, and never saw half a write.
    assert reads["errors"] == []
    assert reads["problems"] == []
    print(
        f"\n{2 * count} writes in {took:.1f} s; the writers took turns {switches} times; longest wait for "
        f"the lock: a {results['a']['longest_wait']:.2f} s, b {results['b']['longest_wait']:.2f} s; "
        f"{reads['reads']} reads at {reads['positions']} positions, the slowest {reads['slowest']:.2f} s"
    )
    assert reads["positions"] >= 5, reads


@pytest.mark.slow
def test_a_writer_that_writes_without_pause_does_not_starve_the_other(kg, tmp_path):
    _entities(kg, tmp_path)
    count = 30
    # A lock timeout well above one write (~0.3 s) and below one writer's whole run (~9 s).
    writers = _writers(tmp_path, kg.path, count, pause=0, env={"KGRDF_LOCK_TIMEOUT": "5"})
    _start_together(tmp_path, writers, ["a", "b"])
    failed = {}
    for tag, proc in writers.items():
        _out, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failed[tag] = err.strip().splitlines()[-1:]
    assert failed == {}, "a writer gave up waiting for the lock while the other wrote"
    order = [value.split()[0] for _, value in _tags_in_journal(kg.path)]
    longest = max(len(run) for run in "".join(order).replace("ab", "a b").replace("ba", "b a").split())
    assert longest <= 10, f"one writer made {longest} writes in a row while the other waited: {''.join(order)}"


# --- 3. git locks, a journal that is damaged or gone ----------------------------------------------


def test_a_fresh_git_lock_is_waited_for_or_reported_and_the_answer_tells_the_truth(kg, tmp_path):
    _entities(kg, tmp_path)
    lock = kg.path / ".git" / "index.lock"  # as a git command killed with its kg, or one running, leaves it
    lock.write_text("")
    aged = time.time() - 25
    os.utime(lock, (aged, aged))
    proc = _spawn(
        kg.path, "-m", "kgrdf", "propose", "repo/r1", "caveat", "--value", "beside a git lock", "--source", "pr:1"
    )
    out, err = _finish(proc)
    assert "Traceback" not in err
    landed = "beside a git lock" in [f["value"] for f in kg.json("facts", "repo/r1")["facts"]]
    if proc.returncode == 0:
        assert landed and json.loads(out)["id"]
    else:  # reported: one line, and nothing written
        assert proc.returncode in (1, 3) and len(err.strip().splitlines()) == 1, err
        assert not landed
    lock.unlink(missing_ok=True)  # the git command that held it has finished
    kg.json("stats")
    kg("validate")
    seq = KnowledgeBase.open(kg.path).view().seq
    assert f"(transaction {seq})" in _git(kg.path, "log", "--format=%s")


@pytest.mark.parametrize(
    "target, when, match, first",
    [
        pytest.param(*point, first, id=f"{name}, then {first}")
        for name, point in [
            ("after the journal append", POINTS[1]),
            ("after view.json", POINTS[3]),
            ("after git add", POINTS[4]),
            ("after the commit", POINTS[5]),
        ]
        for first in ("kg validate", "a read")
    ],
)
def test_a_write_cut_short_is_finished_by_whatever_command_comes_next(kg, tmp_path, target, when, match, first):
    _entities(kg, tmp_path)
    proc = _spawn(
        kg.path,
        "-c",
        KILL_AT,
        target,
        when,
        match,
        "propose",
        "repo/r1",
        "caveat",
        "--value",
        "cut short",
        "--source",
        "pr:1",
    )
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    seq = KnowledgeBase.open(kg.path).journal.read_after(Position())[0][-1][0].seq  # the write cut short
    if first == "a read":
        assert "cut short" in [f["value"] for f in kg.json("facts", "repo/r1")["facts"]]
    kg("validate")  # clean: the write was cut short, nothing is damaged
    assert "cut short" in [f["value"] for f in kg.json("facts", "repo/r1")["facts"]]
    assert _git(kg.path, "status", "--porcelain", "--untracked-files=no") == ""
    kg("propose", "repo/r2", "caveat", "--value", "the next write", "--source", "pr:2")
    log = _git(kg.path, "log", "--format=%s").splitlines()
    assert [line for line in log if f"(transaction {seq})" in line]
    assert log[0] == f"kg propose (transaction {seq + 1})"  # its own commit, not folded into this one


# A large write (kgrdf.kb.LARGE made small) killed with the index loaded beside a journal append that
# has not written the write ("before"); once the journal holds it, with the index not yet given its
# position ("after"); with the load held back, once the caches kept from its rows stand at the
# journal's end ("caches"); for a load followed by a compaction, with the compaction held back
# once the caches stand there ("compacting"); and for a write whose journal is written beside the
# compaction, after the load (kgrdf.kb.LATE_JOURNAL_ROWS made 0), before and after the journal holds
# it ("late-before", "late-after").
KILL_BESIDE_THE_LOAD = r"""
import os, signal, sys, threading
import kgrdf.kb
from kgrdf.journal import Journal
from kgrdf.kb import KnowledgeBase
from kgrdf.store.oxigraph import OxigraphBackend
kgrdf.kb.LARGE = 5
mode, argv = sys.argv[1], sys.argv[2:]
if mode.startswith("late-"):
    kgrdf.kb.LATE_JOURNAL_ROWS = 0
    OxigraphBackend.compacts_after = lambda self, tx: True
    mode = mode.removeprefix("late-")
loaded = threading.Event()
load, append, keep = OxigraphBackend.load, Journal.append, KnowledgeBase._keep_row_caches
compact = OxigraphBackend.compact
def loading(self, tx, compact=None):
    if mode == "caches":
        threading.Event().wait(60)
    load(self, tx, compact)
    loaded.set()
def compacting(self):
    if mode == "compacting":
        threading.Event().wait(60)
    compact(self)
if mode == "compacting":
    OxigraphBackend.compacts_after = lambda self, tx: True
OxigraphBackend.compact = compacting
def appending(self, *args, **kwargs):
    if mode == "before":
        loaded.wait(60)
        os.kill(os.getpid(), signal.SIGKILL)
    result = append(self, *args, **kwargs)
    if mode == "after":
        os.kill(os.getpid(), signal.SIGKILL)
    return result
def keeping(self, *args, **kwargs):
    keep(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
OxigraphBackend.load, Journal.append, KnowledgeBase._keep_row_caches = loading, appending, keeping
sys.argv = ["kg", *argv]
from kgrdf.cli import main
main()
"""


@pytest.mark.parametrize("mode", ["before", "after", "caches", "compacting", "late-before", "late-after"])
def test_a_large_write_killed_while_the_index_loads_beside_the_journal_leaves_no_write_the_journal_lacks(
    kg, tmp_path, mode
):
    """A large write loads the index while the journal is written. Killed when the index holds the
    write and the journal does not (``before``), the next command rebuilds the index from the
    journal: the write is not there, and the index matches the journal. Killed once the journal
    holds it (``after``), or once the caches kept from its rows hold it too (``caches``; for a load
    followed by a compaction, kept beside the compaction: ``compacting``), the write is there, whole;
    so too for a journal written beside the compaction, after the load (``late-``). A measures cache left holds what one made from the index holds."""
    from kgrdf import files, measures

    from .test_measures import _kept, _made

    _entities(kg, tmp_path)
    facts = kg.json("stats")["fact_count"]
    records = [
        {"type": "fact", "subject": f"repo/r{n}", "predicate": "depends_on", "object": "repo/r0", "sources": ["doc:a"]}
        for n in range(1, 4)
    ]
    proc = _spawn(
        kg.path, "-c", KILL_BESIDE_THE_LOAD, mode, "import", str(_records(tmp_path / "i.jsonl", records)), "--apply"
    )
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill points are gone from the library"
    left = OxigraphBackend(kg.path / "index", read_only=True)
    try:
        assert left.position() == (-1, "loading")  # the window the kill was meant to hit
        if mode.endswith("before"):  # the index holds the write that the journal lacks
            depends_on = NamedNode("https://kgrdf.org/ns#dependsOn")
            assert len(list(left.store.quads_for_pattern(None, depends_on, None, None))) == 3
    finally:
        left.close()
    landed = 0 if mode.endswith("before") else 3
    assert kg.json("stats")["fact_count"] == facts + landed
    assert len(kg.json("lookup", "repo/r0")["backlinks"]) == landed
    report = kg.json("validate")
    assert report["damage"] == report["findings"] == []
    if files.cache_files(kg.path, measures.NAME):  # (the rebuild of the index drops it)
        at, kept = _kept(kg.path)
        view = KnowledgeBase.open(kg.path).view()
        assert at == f"{view.seq}:{view.digest}"
        assert kept == _made(kg.path)


def _three_facts(kg, tmp_path) -> list[str]:
    _entities(kg, tmp_path)
    return [
        kg.json("propose", f"repo/r{i}", "caveat", "--value", f"known {i}", "--source", f"pr:{i}")["id"]
        for i in range(3)
    ]


def _follow_the_way_out(kg, ids: list[str], hint: str) -> None:
    """Move journal/ aside as the hint says; the next write starts a new journal as a new replica,
    from the current data, and nothing known is lost."""
    assert "mv journal journal.aside" in hint
    replica = KnowledgeBase.open(kg.path).replica
    seq = KnowledgeBase.open(kg.path).view().seq
    (kg.path / "journal").rename(kg.path / "journal.aside")
    aside = {p.relative_to(kg.path): p.read_bytes() for p in (kg.path / "journal.aside").rglob("*") if p.is_file()}
    assert kg.json("stats")["fact_count"] == len(ids)  # reads go on
    result = kg("propose", "repo/r5", "caveat", "--value", "in the new journal", "--source", "pr:5", "--json")
    assert "new journal" in result.stderr
    new = json.loads(result.stdout)["id"]
    kb = KnowledgeBase.open(kg.path)
    assert kb.replica != replica
    assert kb.view().seq > seq  # the sequence goes on: no (replica, sequence) is used twice
    more = [
        kg.json("propose", f"repo/r{i}", "caveat", "--value", f"later {i}", "--source", "pr:6")["id"]
        for i in range(6, 9)
    ]
    assert not {new, *more} & set(ids)
    for fact_id in [*ids, new, *more]:
        assert kg.json("history", fact_id)["fact"]["id"] == fact_id
    assert kg.json("stats")["fact_count"] == len(ids) + 4
    kg("validate")
    assert {
        p.relative_to(kg.path): p.read_bytes() for p in (kg.path / "journal.aside").rglob("*") if p.is_file()
    } == aside  # the old journal is left as it was


def test_a_journal_behind_view_json_refuses_writes_and_its_way_out_starts_a_new_journal(kg, tmp_path):
    ids = _three_facts(kg, tmp_path)
    segment = patch_files(kg.path / "journal")[-1]
    segment.write_bytes(segment.read_bytes()[: segment.stat().st_size // 2])
    refused = kg("propose", "repo/r4", "caveat", "--value", "refused", "--source", "pr:4", expect=3)
    assert "Traceback" not in refused.stderr
    read = kg("stats", "--json")  # reads go on, with a line saying the journal is damaged
    assert json.loads(read.stdout)["fact_count"] == len(ids)
    assert "journal" in read.stderr
    _follow_the_way_out(kg, ids, refused.stderr)


def test_a_journal_moved_aside_is_started_again_from_the_current_data(kg, tmp_path):
    ids = _three_facts(kg, tmp_path)
    from kgrdf.journal import WAY_OUT

    _follow_the_way_out(kg, ids, WAY_OUT)


def test_a_journal_damaged_inside_refuses_writes_with_the_way_out_and_reads_go_on(kg, tmp_path):
    ids = _three_facts(kg, tmp_path)
    segment = patch_files(kg.path / "journal" / "local")[0]
    data = patch_bytes(segment)
    assert data.count(b'H seq "1" .') == 1
    write_patch(segment, data.replace(b'H seq "1" .', b'H seq "X" .'))  # in a patch before the end
    found = kg("validate", expect=3)
    assert "journal" in found.stdout + found.stderr
    refused = kg("propose", "repo/r4", "caveat", "--value", "on a damaged journal", "--source", "pr:4", expect=3)
    assert "move journal/ aside" in refused.stderr
    assert kg.json("stats")["fact_count"] == len(ids)


def _folder_bytes(kb_path: Path) -> dict:
    return {p.relative_to(kb_path): p.read_bytes() for p in (kb_path / "journal").rglob("*") if p.is_file()}


@pytest.mark.parametrize("git", ["as it was", "not yet committed", "its index garbage", "gone"])
def test_a_patch_damaged_before_a_write_cut_short_is_finished_refuses_the_write_and_commits_nothing(kg, git):
    """A write killed before its git commit leaves ``uncommitted``; the next write finishes it by
    committing the journal. A patch damaged meanwhile, before the journal's end, is found first,
    whether git holds it, holds it not yet, or cannot say: the write is refused as damage, naming
    the file, and nothing is written or committed."""
    kg("add-entity", "repo/api", "--name", "api")
    for value in ("one", "two", "three"):
        kg("propose", "repo/api", "caveat", "--value", value, "-s", "doc:a")
    replica = KnowledgeBase.open(kg.path).replica
    if git == "not yet committed":  # the last two writes' commits were cut short
        _git(kg.path, "reset", "-q", "HEAD~2")
    damaged = patch_files(kg.path / "journal" / replica)[2]  # the second propose's, the third's after it
    damaged.write_bytes(damaged.read_bytes()[:100])
    (kg.path / "uncommitted").touch()
    if git == "its index garbage":
        (kg.path / ".git" / "index").write_text("garbage\n")
    elif git == "gone":
        shutil.rmtree(kg.path / ".git")
    journal, view = _folder_bytes(kg.path), (kg.path / "view.json").read_bytes()
    log = _git(kg.path, "log", "--format=%s") if git != "gone" else None

    line = one_line(kg("propose", "repo/api", "caveat", "--value", "four", "-s", "doc:a", expect=3))
    assert str(damaged.relative_to(kg.path)) in line and "bug" not in line
    assert _folder_bytes(kg.path) == journal and (kg.path / "view.json").read_bytes() == view
    if log is not None:
        assert _git(kg.path, "log", "--format=%s") == log
    assert {f["value"] for f in kg.json("facts", "repo/api")["facts"]} == {"one", "two", "three"}  # reads go on
    kg("propose", "repo/api", "caveat", "--value", "four", "-s", "doc:a", expect=3)  # and writes go on refusing


def test_a_git_history_that_does_not_read_is_said_so_and_its_way_out_starts_it_again_from_the_whole_journal(kg):
    """A damaged .git/HEAD is the history's damage, not the journal's: the write is refused saying
    so, never with advice to move a whole journal aside, and the way out it gives (the history moved
    aside) starts the history again with the next write, the facts and the replica as they were."""
    kg("add-entity", "repo/api", "--name", "api")
    kg("propose", "repo/api", "caveat", "--value", "one", "-s", "doc:a")
    replica = KnowledgeBase.open(kg.path).replica
    (kg.path / ".git" / "HEAD").write_text("garbage\n")
    journal, view = _folder_bytes(kg.path), (kg.path / "view.json").read_bytes()

    line = one_line(kg("propose", "repo/api", "caveat", "--value", "two", "-s", "doc:b", expect=3))
    assert "git history" in line and "journal is whole" in line
    assert "journal aside" not in line and "mv journal" not in line
    assert _folder_bytes(kg.path) == journal and (kg.path / "view.json").read_bytes() == view
    report = kg.json("validate", expect=3)
    assert [d["check"] for d in report["damage"]] == ["git history"]

    move = line[line.index("mv ") : line.index(")", line.index("mv "))].split()
    subprocess.run(move, check=True)
    made = kg("propose", "repo/api", "caveat", "--value", "two", "-s", "doc:b")
    assert "git did not commit" not in made.stderr
    assert KnowledgeBase.open(kg.path).replica == replica
    assert {f["value"] for f in kg.json("facts", "repo/api")["facts"]} == {"one", "two"}
    assert _git(kg.path, "status", "--porcelain") == ""
    kg("propose", "repo/api", "caveat", "--value", "three", "-s", "doc:c")
    assert _git(kg.path, "log", "--format=%s").splitlines()[0].startswith("kg propose")
    assert kg.json("validate")["damage"] == []


def test_a_damaged_git_index_is_made_again_from_the_last_commit_and_the_history_is_kept(kg):
    """Garbage in .git/index (git's list of staged files, not the history) is the history's damage as
    a damaged HEAD is, but its way out keeps every commit: git's index made again from the last one.
    Following it, the next write is committed on top of the history as it was."""
    kg("add-entity", "repo/api", "--name", "api")
    kg("propose", "repo/api", "caveat", "--value", "one", "-s", "doc:a")
    before = _git(kg.path, "log", "--format=%H").splitlines()
    (kg.path / ".git" / "index").write_bytes(b"not an index\n")
    journal = _folder_bytes(kg.path)

    line = one_line(kg("propose", "repo/api", "caveat", "--value", "two", "-s", "doc:b", expect=3))
    assert "git history" in line and ".git/index" in line
    assert "mv " not in line and "journal aside" not in line
    assert _folder_bytes(kg.path) == journal

    way_out = line[line.index("(rm ") + 1 : line.index(")", line.index("(rm "))]
    subprocess.run(way_out, shell=True, check=True)
    kg("propose", "repo/api", "caveat", "--value", "two", "-s", "doc:b")
    after = _git(kg.path, "log", "--format=%H").splitlines()
    assert after[1:] == before  # one commit more, on the history as it was
    assert _git(kg.path, "status", "--porcelain") == ""
    assert {f["value"] for f in kg.json("facts", "repo/api")["facts"]} == {"one", "two"}
    assert kg.json("validate")["damage"] == []


def _after_init_cut_short(path: Path) -> None:
    """What a user meets after a kg init that did not end: a read says there is no knowledge base,
    or reads it, never 'damaged' or 'a bug'; kg init makes it, or says it is made; then a write
    lands and the knowledge base validates clean, all its files committed."""
    kg = Kg(path)
    status = runner.invoke(app, ["status", "--kb", str(path)])
    assert status.exit_code in (0, 1), status.stdout + status.stderr
    if status.exit_code == 1:
        assert f"kg init --kb {path}" in status.stderr and "cut short" in status.stderr, status.stderr
        kg("init")
    else:
        assert "a knowledge base already" in kg("init", expect=1).stderr
    kg("add-entity", "repo/api", "--name", "api")
    report = kg.json("validate")
    assert report["damage"] == [] and report["findings"] == []
    assert kg.json("lookup", "api")["entity"]["id"] == "repo/api"


@pytest.mark.parametrize(
    "target, when, match",
    [
        pytest.param("kgrdf.files:replace", "after", "replica.json", id="replica.json written"),
        pytest.param("kgrdf.files:replace", "before", "format.json", id="the journal folder made"),
        pytest.param("kgrdf.files:replace", "after", "format.json", id="format.json written"),
        pytest.param("kgrdf.vcs:init", "after", "", id="git made"),
        pytest.param("kgrdf.vcs:commit", "after", "", id="committed"),
    ],
)
def test_a_kg_init_killed_at_any_step_leaves_a_folder_the_next_commands_make_whole(tmp_path, target, when, match):
    """A kg init killed after it wrote format.json and before replica.json left a folder every read
    called 'a bug', kg init called a knowledge base already, and a write sent to a git history
    that was not there. Now the folder is a knowledge base from format.json on, written last."""
    path = tmp_path / "kb"
    proc = _spawn(path, "-c", KILL_AT, target, when, match, "init")
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    _after_init_cut_short(path)


@pytest.mark.parametrize(
    "left",
    [
        {"format.json": '{"my": "own settings"}\n'},
        {"format.json": '{"format": 3, "perspective": "main", "remotes": {"team": "http://hub:7878"}}\n'},
        {"replica.json": '{"replica": "r-1234abcd", "note": "mine"}\n', "journal/": ""},
        {"replica.json": "not json\n"},
        {"replica.json.tmp": "my notes\n"},
        {"format.json.tmp": '{"my": "own"}\n', "journal/": ""},
    ],
    ids=[
        "a format.json of its own",
        "settings past an init's",
        "a replica.json of its own",
        "not json",
        "a .tmp of its own",
        "a .tmp of json",
    ],
)
def test_kg_init_never_takes_a_file_of_a_name_it_writes_that_it_did_not_write_for_a_leftover(tmp_path, left):
    path = tmp_path / "kb"
    path.mkdir()
    for name, text in left.items():
        if name.endswith("/"):
            (path / name).mkdir()
        else:
            (path / name).write_text(text)
    before = {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()}
    refused = runner.invoke(app, ["init", "--kb", str(path)])
    assert refused.exit_code == 1 and ("already" in refused.stderr or "not empty" in refused.stderr)
    assert {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()} == before


def test_a_folder_an_older_kg_init_left_with_format_json_alone_is_made_by_the_next_kg_init(tmp_path):
    path = tmp_path / "kb"
    path.mkdir()
    (path / "format.json").write_text('{"format": 3, "perspective": "main"}\n')
    (path / "replica.json.tmp").write_text("")  # (killed after it made the file, before it wrote it)
    _after_init_cut_short(path)


def _committed_by_the_next_read(kg: Kg) -> None:
    """A read commits what a write cut short before its commit left (format.json, sync.json): kg
    validate then finds nothing edited outside kgrdf, and git holds every file as it is."""
    kg("status")
    assert kg.json("validate")["damage"] == []
    git = subprocess.run(["git", "status", "--porcelain"], cwd=kg.path, capture_output=True, text=True, check=True)
    assert git.stdout == ""


@pytest.mark.parametrize(
    "command", [["remote", "add", "team", "http://127.0.0.1:9"], ["remote", "remove", "old"]], ids=" ".join
)
@pytest.mark.parametrize("cut", ["killed before the commit", "git busy"])
def test_a_settings_write_cut_short_before_its_commit_is_committed_by_the_next_command(kg, command, cut):
    """kg remote add killed between writing format.json and its git commit (or with git busy, when
    it said the next command commits it): every read went on, and kg validate said the folder was
    damaged, edited outside kgrdf, until some later write committed it."""
    kg("remote", "add", "old", "http://127.0.0.1:8")
    if cut == "git busy":
        (kg.path / ".git" / "index.lock").touch()
        said = kg(*command).stderr
        assert "the next command commits it" in said
        (kg.path / ".git" / "index.lock").unlink()
    else:
        proc = _spawn(kg.path, "-c", KILL_AT, "kgrdf.vcs:commit", "before", "", *command)
        _finish(proc)
        assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    _committed_by_the_next_read(kg)


def test_a_sync_killed_before_it_commits_what_it_synced_is_committed_by_the_next_command(kg, server):
    """The same of sync.json, which kg sync writes after its fold, then commits."""
    kg("add-entity", "repo/api", "--name", "api")
    kg("remote", "add", "team", server.url)
    proc = _spawn(kg.path, "-c", KILL_AT, "kgrdf.vcs:commit", "before", "kg sync: team", "sync")
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    _committed_by_the_next_read(kg)
    assert "nothing new" in kg("sync").stdout


@pytest.mark.parametrize(
    "target, when, match",
    [
        pytest.param("kgrdf.kb:KnowledgeBase._write_view", "after", "", id="view.json reset"),
        pytest.param("kgrdf.journal:Journal.append", "after", "", id="first transaction appended"),
        pytest.param("kgrdf.vcs:commit", "before", "", id="before the commit"),
    ],
)
def test_starting_a_new_journal_cut_short_is_finished_by_the_next_command(kg, tmp_path, target, when, match):
    ids = _three_facts(kg, tmp_path)
    (kg.path / "journal").rename(kg.path / "journal.aside")
    proc = _spawn(
        kg.path,
        "-c",
        KILL_AT,
        target,
        when,
        match,
        "propose",
        "repo/r5",
        "caveat",
        "--value",
        "cut short",
        "--source",
        "pr:5",
    )
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    assert kg.json("stats")["fact_count"] == len(ids)  # the next command: a read
    for fact_id in ids:
        assert kg.json("history", fact_id)["fact"]["id"] == fact_id
    kg("propose", "repo/r6", "caveat", "--value", "after the cut", "--source", "pr:6")
    assert kg.json("stats")["fact_count"] == len(ids) + 1
    kg("validate")


# --- an export cut short -------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["nquads", "turtle"])
def test_an_export_killed_before_it_is_whole_leaves_the_file_it_was_to_replace_as_it_was(kg, tmp_path, fmt):
    _three_facts(kg, tmp_path)
    out = tmp_path / f"kb.{fmt}"
    out.write_bytes(b"last week's export\n")
    proc = _spawn(
        kg.path,
        "-c",
        KILL_AT,
        "kgrdf.session.raw:RawReads.export_to",
        "after",  # the whole export written beside the file, not yet put in its place
        "",
        "export",
        "--format",
        fmt,
        "--output",
        str(out),
    )
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    assert out.read_bytes() == b"last week's export\n"
    [left] = [p for p in tmp_path.iterdir() if p.name.startswith(f".{out.name}.")]
    assert left.stat().st_size > 1000  # the export was written, beside the file and under another name
    cut_short = _triples(left, fmt)
    kg("export", "--format", fmt, "--output", out)
    assert _triples(out, fmt) == cut_short  # the next export is the same knowledge
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{out.name}.")] == []  # and takes the part away


def _triples(path: Path, fmt: str) -> set:
    import rdflib

    if fmt == "nquads":
        return set(path.read_text(encoding="utf-8").splitlines())
    return set(rdflib.Graph().parse(path, format="turtle"))


def _damaged_index(kg, how: str) -> None:
    index = kg.path / "index"
    if how == "current":  # a rebuild cut short: the folder is there, its CURRENT file is not the store's
        (index / "CURRENT").write_text("junk\n")
        return
    for table in index.glob("*.sst"):  # a block near each table's end overwritten: "block checksum mismatch"
        with open(table, "r+b") as opened:
            opened.seek(max(0, table.stat().st_size - 200))
            opened.write(random.Random(7).randbytes(40))


@pytest.mark.parametrize("how", ["current", "table"])
@pytest.mark.parametrize("command", [["status"], ["propose", "repo/api", "caveat", "-v", "again", "-s", "slack:2"]])
def test_an_index_that_does_not_open_is_made_again_by_the_next_command_status_and_writes_too(kg, how, command):
    """README: an index that does not open is made again by the next command, a read included. A
    table failing its checksum is no index another process holds (its message says 'block')."""
    kg("add-entity", "repo/api", "--name", "Api")
    kg("propose", "repo/api", "caveat", "--value", "first", "-s", "slack:1")
    _damaged_index(kg, how)
    result = kg(*command)
    assert "rebuilding it from the journal" in result.stderr
    status = kg.json("status")
    assert status["index"]["behind"] == 0 and status["index"]["transaction"] == status["journal"]["transactions"]
    assert "first" in {f["value"] for f in kg.json("facts", "repo/api")["facts"]}


@pytest.mark.parametrize("command", [["validate"], ["index", "compact"]])
def test_a_table_whose_block_fails_its_checksum_after_the_store_opened_is_never_called_a_bug(
    demo_template, tmp_path, command
):
    """A block in the middle of a table, which the open does not read: the compaction met it, and
    then the store's flush on closing raised 'Corruption: block checksum mismatch', which replaced
    whatever the command had said with 'an unexpected error ... a bug in kgrdf', every time."""
    import shutil

    shutil.copytree(demo_template, tmp_path / "kb", symlinks=True)
    kg = Kg(tmp_path / "kb")
    table = max((kg.path / "index").glob("*.sst"), key=lambda p: p.stat().st_size)
    with open(table, "r+b") as opened:
        opened.seek(table.stat().st_size // 2)
        opened.write(b"X" * 16)
    done = subprocess.run(
        [sys.executable, "-m", "kgrdf", *command, "--kb", str(kg.path)], capture_output=True, text=True, timeout=300
    )
    said = done.stdout + done.stderr
    assert "bug in kgrdf" not in said
    assert done.returncode == 0 or (done.returncode == 3 and re.search(INDEX_WAYS_OUT, said)), said
    assert kg.json("lookup", "process/release")["entity"]["id"] == "process/release"


INDEX_WAYS_OUT = r"rm -r index|the next command makes it again from the journal"


@pytest.mark.parametrize(
    "command", [["export", "--format", "nquads"], ["validate"], ["sparql", "SELECT * { ?s ?p ?o }"]]
)
def test_a_table_that_fails_its_checksum_when_a_read_meets_it_is_made_again_by_the_next_command(
    demo_template, tmp_path, command
):
    """The store opened, and a read met a damaged block in a table: every read that met it failed
    as 'a bug in kgrdf' (exit 3), kg status said the index was up to date, and nothing made it
    again. The read says what happened, and the next command rebuilds the index from the journal.
    (Each command in a process of its own, as a person runs them.)"""
    import shutil

    shutil.copytree(demo_template, tmp_path / "kb", symlinks=True)
    kb = tmp_path / "kb"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "kgrdf", *args, "--kb", str(kb)], capture_output=True, text=True, timeout=300
        )

    def named(text: str) -> list[str]:  # (the schema's blank nodes are named anew by each load)
        return sorted(line for line in text.splitlines() if "_:" not in line)

    whole = run("export", "--format", "nquads").stdout
    for table in (kb / "index").glob("*.sst"):  # a block inside each table, which an open does not read
        if table.stat().st_size > 20_000:
            with open(table, "r+b") as opened:
                opened.seek(table.stat().st_size // 3)
                opened.write(b"X" * 16)
    done = run(*command)
    said = done.stdout[-2000:] + done.stderr  # (kg validate reports it with its other checks)
    assert done.returncode == 3 and "bug in kgrdf" not in said, (done.returncode, said)
    # (said by the read that met it; or, when the process met it first in a read of its own and opened
    # the index again after, by that open, which finds the index marked damaged)
    assert re.search(
        r"the index failed to read its own files.*next command makes it again"
        r"|a table of it failed its checksum when read.*the next command rebuilds it",
        said,
    ), said
    again = run("export", "--format", "nquads")
    assert again.returncode == 0 and "rebuilding it from the journal" in again.stderr, again.stderr
    assert named(again.stdout) == named(whole)
    assert run("validate").returncode == 0


def test_kg_status_after_a_load_cut_short_makes_the_index_again_and_counts_true(kg):
    """A large write killed while its index loaded leaves the index marked as loading (a position
    no transaction has): kg status said "at transaction -1, 2 behind the journal" of a journal of
    one. It makes the index again, as a read would (README), and then says where it stands."""
    from kgrdf.kb import LOADING

    kg("add-entity", "repo/api", "--name", "Api")
    kg("propose", "repo/api", "caveat", "--value", "first", "-s", "slack:1")
    index = OxigraphBackend(kg.path / "index")
    try:
        index.set_position(LOADING)  # as _commit_beside_index leaves it when killed in the load
    finally:
        index.close()
    status = kg.json("status")
    assert status["index"]["transaction"] == status["journal"]["transactions"] and status["index"]["behind"] == 0
    assert "transaction -1" not in kg("status").stdout and "up to date" in kg("status").stdout
    assert "first" in {f["value"] for f in kg.json("facts", "repo/api")["facts"]}


def _patch_after_the_last(kg, row: str) -> None:
    """A whole patch after the shared journal's last, as kgrdf would chain it, holding ``row``."""
    replica = json.loads((kg.path / "replica.json").read_text())["replica"]
    last = patch_files(kg.path / "journal" / replica)[-1]
    number = int(last.name.split(".")[0]) + 1
    prev = json.loads((kg.path / "view.json").read_text())["shared_id"]
    data = (
        "H id <urn:uuid:11111111-1111-1111-1111-111111111111> .\n"
        f"H prev <{prev}> .\n"
        'H time "2026-12-05T23:30:00Z" .\nH command "propose" .\nTX .\n'
        f"A {row} .\nTC .\n"
    ).encode()
    write_patch(last.with_name(f"{number:010d}.rdfp" + (".gz" if last.name.endswith(".gz") else "")), data)


@pytest.mark.parametrize("index", ["kept", "removed"])
def test_a_journal_row_that_is_not_n_quads_is_damage_in_one_line_never_a_bug(kg, index):
    """A patch kgrdf did not write, whose row does not parse: reads go on from the index as it was
    (or, with no index to read, say so and how to restore the journal); never 'a bug in kgrdf'."""
    kg("add-entity", "repo/api", "--name", "api")
    kg("propose", "repo/api", "caveat", "--value", "one", "-s", "doc:a")
    base = "https://kgrdf.org/kb/main/"
    _patch_after_the_last(kg, f'<{base}repo/api> <https://kgrdf.org/ns#caveat> "unterminated <{base}fact/f-zzzzzz>')
    if index == "removed":
        shutil.rmtree(kg.path / "index")
        line = one_line(kg("lookup", "api", expect=3))
        assert "not N-Quads" in line and "git checkout -- journal/" in line and "bug" not in line
        return
    read = kg("lookup", "api")
    assert "not N-Quads" in read.stderr and "bug" not in read.stderr and "Traceback" not in read.stderr
    assert "one" in read.stdout
    line = one_line(kg("propose", "repo/api", "caveat", "--value", "two", "-s", "doc:b", expect=3))
    assert "not N-Quads" in line and "bug" not in line


def test_a_folder_that_lost_its_format_file_is_damage_with_the_way_back_not_an_invitation_to_init(kg):
    kg("add-entity", "repo/api", "--name", "api")
    (kg.path / "format.json").unlink()
    line = one_line(kg("lookup", "api", expect=3))
    assert "no format.json" in line and "git -C" in line and "checkout -- format.json" in line
    subprocess.run(["git", "-C", str(kg.path), "checkout", "--", "format.json"], check=True)
    assert kg.json("lookup", "api")["entity"]["id"] == "repo/api"


def _kg_with_files_up_to(kg, size: int, *args, env=None) -> subprocess.CompletedProcess:
    """``kg ARGS`` in a process that may write no file larger than ``size`` bytes (ulimit -f): a disk
    without room for what it writes, as the store meets it (EFBIG, as ENOSPC)."""
    import resource

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    environment = {k: v for k, v in os.environ.items() if k != "KGRDF_HOME"} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "kgrdf", *args, "--kb", str(kg.path)],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        env=environment,
    )


def test_a_write_the_index_has_no_room_for_is_acknowledged_from_the_journal_and_caught_up_later(kg, monkeypatch):
    """The journal holds the write (54 KB gzipped) before the index takes it (90 KB of text, past
    the limit): said as what it is, exit 0, and the next command brings the index up to it; the
    same proposal again is an observation of it, not a second fact."""
    monkeypatch.setenv("KGRDF_MAX_TEXT", "200000")
    kg("add-entity", "repo/api", "--name", "api")
    value = random.Random(3).randbytes(45_000).hex()
    made = _kg_with_files_up_to(
        kg, 80 * 1024, "propose", "repo/api", "caveat", "--value", value, "-s", "doc:a", "--json"
    )
    assert made.returncode == 0, made.stderr
    assert "could not take transaction 2" in made.stderr and "it is in the journal" in made.stderr
    fact = json.loads(made.stdout)["id"]
    assert kg.json("status")["index"]["behind"] == 1
    assert [f["id"] for f in kg.json("facts", "repo/api")["facts"]] == [fact]
    assert kg.json("status")["index"]["behind"] == 0  # (the read caught up)
    again = kg.json("propose", "repo/api", "caveat", "--value", value, "-s", "doc:b")
    assert again["id"] == fact and again["observations"] == 2


def test_an_index_on_a_disk_without_room_to_open_it_is_kept_not_made_again(kg):
    kg("add-entity", "repo/api", "--name", "api")
    identity = (kg.path / "index" / "IDENTITY").read_bytes()  # the store's own id, minted when it is made
    refused = _kg_with_files_up_to(kg, 20 * 1024, "propose", "repo/api", "caveat", "--value", "x", "-s", "doc:a")
    assert refused.returncode == 3 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "no room" in refused.stderr and "rebuilding" not in refused.stderr and "rm -r index" not in refused.stderr
    # the same store, not one made again (its tables may have been compacted meanwhile, in the background)
    assert (kg.path / "index" / "IDENTITY").read_bytes() == identity
    assert kg.json("status")["index"]["transaction"] == 1


def test_a_status_no_write_of_kgrdf_gives_is_damage_named_never_a_bug(kg):
    """A patch written by hand gave a fact the status kg:Bogus: kg confirm of it then failed as 'an
    unexpected error (ValueError: unknown concept ...); this is a bug in kgrdf'."""
    import pyoxigraph as ox

    kg("add-entity", "repo/api", "--name", "Api")
    fact = kg.json("propose", "repo/api", "caveat", "--value", "first", "-s", "slack:1")["id"]
    index = OxigraphBackend(kg.path / "index")
    try:
        status = ox.NamedNode("https://kgrdf.org/ns#factStatus")
        [held] = [q for q in index.store.quads_for_pattern(None, status, None) if q.subject.value.endswith(fact)]
        index.store.remove(held)
        index.store.add(ox.Quad(held.subject, status, ox.NamedNode("https://kgrdf.org/ns#Bogus"), held.graph_name))
    finally:
        index.close()
    said = one_line(kg("confirm", fact, expect=3))
    assert "'https://kgrdf.org/ns#Bogus' is none the schema has" in said and "bug" not in said


@pytest.mark.parametrize("mark", [b"\xff\xfe not text", None], ids=["not-utf8", "a-folder"])
def test_a_damage_mark_that_does_not_read_still_has_the_index_made_again(kg, mark):
    """The mark a read leaves on a damaged index (store/oxigraph.py DAMAGED), unreadable: every
    command failed as a bug in kgrdf, kg status included, and the index was never made again."""
    from kgrdf.store.oxigraph import DAMAGED

    kg("add-entity", "repo/api", "--name", "Api")
    marked = kg.path / "index" / DAMAGED
    marked.mkdir() if mark is None else marked.write_bytes(mark)
    assert "rebuilding it from the journal" in kg("status").stderr
    assert not marked.exists() and kg.json("lookup", "repo/api")["entity"]["id"] == "repo/api"


def test_a_damaged_table_of_an_audiences_kept_dataset_is_made_again_and_leaves_the_index_alone(demo_template, tmp_path):
    """A table of cache/heard/ (an audience's dataset, kept beside the index) failing its checksum
    marked the index instead: the index was rebuilt on every command after, and every read for
    that audience failed on the same table."""
    import shutil

    from kgrdf.store.oxigraph import DAMAGED

    shutil.copytree(demo_template, tmp_path / "kb", symlinks=True)
    kb = tmp_path / "kb"

    def export() -> subprocess.CompletedProcess:
        command = ["export", "--audience", "public", "--format", "nquads", "--kb", str(kb)]
        return subprocess.run([sys.executable, "-m", "kgrdf", *command], capture_output=True, text=True, timeout=300)

    whole = export().stdout
    tables = [t for t in (kb / "cache" / "heard").glob("*/*.sst") if t.stat().st_size > 20_000]
    assert tables
    for table in tables:
        with open(table, "r+b") as opened:
            opened.seek(table.stat().st_size // 3)
            opened.write(b"X" * 16)
    done = export()
    assert done.returncode == 3 and "the index failed to read its own files" in done.stderr, done.stderr
    assert not (kb / "index" / DAMAGED).exists()
    again = export()
    assert again.returncode == 0 and "rebuilding" not in again.stderr and again.stdout == whole


def test_an_audiences_kept_dataset_that_does_not_open_is_made_again_and_leaves_the_index_alone(demo_template, tmp_path):
    """A kept dataset whose CURRENT file is not the store's ("Corruption: CURRENT file corrupted",
    naming no table) was taken for the index's damage: every command after rebuilt the index, and
    every read for that audience failed (exit 3) on the same folder, for ever."""
    import shutil

    shutil.copytree(demo_template, tmp_path / "kb", symlinks=True)
    kb = tmp_path / "kb"
    query = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"

    def sparql() -> subprocess.CompletedProcess:
        command = ["sparql", query, "--audience", "public", "--json", "--kb", str(kb)]
        return subprocess.run([sys.executable, "-m", "kgrdf", *command], capture_output=True, text=True, timeout=300)

    whole = sparql()
    assert whole.returncode == 0, whole.stderr
    kept = list((kb / "cache" / "heard").glob("*/CURRENT"))
    assert kept
    for current in kept:
        current.write_text("junk\n")
    index = sorted(p.name for p in (kb / "index").iterdir())
    for _ in range(2):
        again = sparql()
        assert (again.returncode, again.stderr, again.stdout) == (0, "", whole.stdout)
    assert sorted(p.name for p in (kb / "index").iterdir()) == index


RUNAWAY_READ = """
import sys
from pathlib import Path
import pyoxigraph as ox
from kgrdf.queries import Query
from kgrdf.store import oxigraph

path = Path(sys.argv[1])
store = ox.Store(str(path))
store.bulk_extend(
    ox.Quad(ox.NamedNode(f"urn:s{i}"), ox.NamedNode("urn:p"), ox.Literal("v" * 64 + str(i)), ox.NamedNode("urn:g"))
    for i in range(300_000)
)
del store
oxigraph.RUNAWAY_BYTES = 8 << 20  # (the damaged table's read grows without end; this one, to a few hundred MB)
backend = oxigraph.OxigraphBackend(path, read_only=True)
query = Query("sorted", "every row, sorted", "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY DESC(?o) ?s")
rows = backend.select(query)
print("answered", len(rows))
"""


def test_a_read_that_takes_memory_without_end_is_stopped_and_the_index_marked_damaged(tmp_path):
    """A table failing its checksum under a query that sorts: the store collected its error again and
    again, without end, and kg lookup (or a served process) grew to all the machine's memory until
    the kernel killed it, or aborted with a Rust backtrace: never exit 3, and nothing marked the
    index, so the next command did the same. Past its bound, the read is stopped: one line, exit 3,
    the store marked damaged, which the next command makes again (a sorted read of many rows stands
    in for the damaged table here, its bound lowered)."""
    from kgrdf.store.oxigraph import DAMAGED

    done = subprocess.run(
        [sys.executable, "-c", RUNAWAY_READ, str(tmp_path / "index")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 3 and "answered" not in done.stdout, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("kg: a read of it took more than 8 MB of memory (a table read without end)")
    assert done.stderr.count("\n") == 1 and "next command makes the index again from the journal" in done.stderr
    assert (tmp_path / "index" / DAMAGED).exists()


def test_kg_status_names_an_index_of_another_journal_and_the_next_read_makes_it_again(kg, tmp_path):
    """An index of another journal at the same transaction (a format 1 folder's, after its
    migration): kg status called it up to date, or "13 behind: the next command catches up" while
    itself, the next command, caught nothing up."""
    other = Kg(tmp_path / "other")
    other("init")
    other("add-entity", "repo/web", "--name", "web")
    kg("add-entity", "repo/api", "--name", "api")
    shutil.rmtree(kg.path / "index")
    shutil.copytree(other.path / "index", kg.path / "index")
    for _ in range(2):
        assert "of another journal" in kg("status").stdout
    assert kg.json("status")["index"]["stale"] is True
    assert kg.json("lookup", "api")["entity"]["id"] == "repo/api"
    status = kg.json("status")["index"]
    assert "stale" not in status and status["behind"] == 0


def test_kg_status_after_the_journal_is_moved_aside_says_what_comes_next(kg):
    """mv journal journal.aside is the way out of a damaged journal: kg status then exited 3, telling
    to move the journal aside."""
    kg("add-entity", "repo/api", "--name", "api")
    (kg.path / "journal").rename(kg.path / "journal.aside")
    shown = kg("status").stdout
    assert "journal: none here (moved aside?): reads go on from the index, as of transaction 1" in shown
    assert kg.json("status")["journal"] == {"transactions": 1, "gone": True}
    kg("add-entity", "repo/web", "--name", "web")
    assert "gone" not in kg.json("status")["journal"]


def test_with_the_journal_moved_aside_and_no_index_status_and_reads_say_to_move_it_back(kg):
    """kg status said reads go on from the index, which was gone; every read then told to move the
    journal aside, which it was already."""
    kg("add-entity", "repo/api", "--name", "api")
    (kg.path / "journal").rename(kg.path / "journal.aside")
    shutil.rmtree(kg.path / "index")
    shown = kg("status").stdout
    assert "reads go on" not in shown and "move the journal back (mv journal.aside journal" in shown
    assert kg.json("status")["index"]["holds_the_data"] is False
    assert "move it back (mv journal.aside journal" in one_line(kg("lookup", "api", expect=3))
    (kg.path / "journal.aside").rename(kg.path / "journal")
    assert kg.json("lookup", "api")["entity"]["id"] == "repo/api"


@pytest.mark.parametrize("back", [["checkout", "-q", "HEAD~2"], ["reset", "-q", "--hard", "HEAD~2"]])
def test_a_folder_gone_back_in_git_is_refused_by_every_command_and_its_commit_named(kg, back):
    """The folder's git history taken back (a checkout or reset of older commits) while the index
    kept the newer transactions: every read made the index again from the older journal without a
    word, the confirmed fact gone, and the next write gave its id to another fact. Every command is
    refused; the commit it names brings the transactions back, and all goes on as before."""
    kg("add-entity", "process/release", "--name", "Release process")
    kept = kg.json("propose", "Release process", "caveat", "--value", "one", "-s", "ledger:a", "-s", "report:a")
    later = kg.json("propose", "Release process", "caveat", "--value", "two", "-s", "ledger:b", "-s", "report:b")
    assert later["status"] == "confirmed"
    _git(kg.path, *back)

    def files() -> dict:
        return {
            p: p.read_bytes()
            for p in sorted(kg.path.rglob("*"))
            if p.is_file() and not {"index", ".git"} & set(p.parts)
        }

    before = files()
    said = ""
    for command in (
        ["facts", "Release process"],
        ["propose", "Release process", "caveat", "--value", "three", "-s", "pr:1"],
    ):
        said = kg(*command, expect=3).stderr
        assert "the index holds transaction 3, past where the journal ends (1)" in said, said
    assert "past where the journal ends" in kg("status").stdout
    assert files() == before
    way = re.search(r"git -C (\S+) reset --hard ([0-9a-f]+) brings them back", said)
    assert way and Path(way.group(1)) == kg.path
    _git(kg.path, "reset", "-q", "--hard", way.group(2))
    held = {f["id"]: f["status"] for f in kg.json("facts", "Release process")["facts"]}
    assert held == {kept["id"]: kept["status"], later["id"]: "confirmed"}
    made = kg.json("propose", "Release process", "caveat", "--value", "three", "-s", "pr:1")
    assert made["id"] not in held and "clean" in kg("validate").stdout
