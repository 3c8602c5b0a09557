"""kg batch reads what waits from a cache beside the index (kgrdf.waiting), kept current by every
write: the batch it prints is the one the index's own queries give, after every kind of write."""

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from kgrdf import batch
from kgrdf.kb import KnowledgeBase

from .conftest import Kg, at_a_terminal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from generate import generate

CACHE = Path("cache") / "batch-main.sqlite"


def from_index(path: Path) -> dict:
    """Today's batch as the index's queries give it, without the cache."""
    with KnowledgeBase.open(path).reading() as session:
        document = batch.make(session)
    document.pop("made_at")
    return document


def printed(kg: Kg) -> dict:
    document = kg.json("batch")
    document.pop("made_at")
    assert document.pop("expired") == 0
    assert document.pop("expired_after_days") == 30
    assert document.pop("perspective") == "main"  # (saved with it: kg batch apply answers it there alone)
    # (the line to paste, for the default perspective, naming the folder kg batch was given)
    assert document.pop("answer_with") == f"kg batch apply --kb {kg.path}"
    return document


@pytest.fixture
def kb(tmp_path):
    path = tmp_path / "kb"
    generate(path, 400, statuses=["proposed"])
    return Kg(path)


def test_the_batch_from_the_cache_is_the_batch_from_the_index_after_every_write(kb):
    first = printed(kb)
    assert first == from_index(kb.path) and first["waiting"] == 400 and first["groups"]
    made = (kb.path / CACHE).stat().st_ino

    shown = first["groups"][0]
    writes = [
        ("propose", "repo/rep-000001", "caveat", "--value", "rebuilt nightly", "--source", "slack:x"),
        (
            "propose",
            "repo/rep-000001",
            "caveat",
            "--value",
            "the rework one",
            "--source",
            "slack:x",
            "--prevents-rework",
        ),
        ("add-entity", "repo/brand-new", "--name", "Brand new repo"),
        ("propose", "repo/brand-new", "caveat", "--value", "one", "--source", "slack:y"),
        ("confirm", shown["facts"][0]["id"]),
        ("reject", shown["facts"][1]["id"]),
    ]
    for args in writes:
        kb(*args)
        assert printed(kb) == from_index(kb.path), f"after kg {' '.join(args)}"
    assert (kb.path / CACHE).stat().st_ino == made  # kept current by each write, never made again

    before = printed(kb)
    assert before["groups"][0]["facts"][0]["prevents_rework"]  # the new rework proposal comes first
    kb("batch", "apply", "confirm 1, reject 2a")
    after = printed(kb)
    assert after == from_index(kb.path) and after["waiting"] < before["waiting"]
    assert (kb.path / CACHE).stat().st_ino == made


def test_a_cache_for_another_state_is_made_again_and_never_read(kb):
    printed(kb)
    cache = kb.path / CACHE
    stale = cache.read_bytes()
    kb("propose", "repo/rep-000002", "caveat", "--value", "new", "--source", "slack:x")
    cache.write_bytes(stale)  # a cache from before the write, as a copy restored from elsewhere leaves it
    assert printed(kb) == from_index(kb.path)
    assert cache.read_bytes() != stale


def test_a_damaged_cache_is_made_again(kb):
    printed(kb)
    (kb.path / CACHE).write_bytes(b"not a database")
    assert printed(kb) == from_index(kb.path)


def test_an_index_rebuild_makes_the_cache_again(kb):
    first = printed(kb)
    with sqlite3.connect(kb.path / CACHE) as db:  # a cache that says what the index does not
        db.execute("UPDATE waiting SET recorded = '0000', rework = 1")
        db.execute("UPDATE piles SET recorded = '0000', rework = 1")
    assert printed(kb) != first  # it is what kg batch reads
    shutil.rmtree(kb.path / "index")  # the next command rebuilds the index from the journal
    assert printed(kb) == first == from_index(kb.path)


def test_a_large_write_leaves_the_cache_to_be_made_again(kb, tmp_path):
    printed(kb)
    records = [
        {
            "type": "fact",
            "subject": "repo/rep-000003",
            "predicate": "caveat",
            "value": f"caveat {n}",
            "sources": ["slack:s"],
        }
        for n in range(400)
    ]
    seed = tmp_path / "seed.jsonl"
    seed.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    kb("import", seed, "--apply")
    assert not (kb.path / CACHE).exists()
    assert printed(kb) == from_index(kb.path)


def test_a_cache_made_again_is_told_at_a_terminal_and_a_kept_one_is_not(seeded):
    """The caches of kg batch and kg lint are made again after an index rebuild or a large import:
    seconds at 100k facts, told to a person at a terminal as they start; read as kept, nothing."""
    seeded("propose", "repo/api", "caveat", "--value", "flaky on Mondays", "--source", "slack:p1")
    seeded("propose", "Dana", "member_of", "--object", "team/web", "--source", "slack:p2")
    for name in ("batch-main.sqlite", "measures.sqlite"):
        (seeded.path / "cache" / name).unlink(missing_ok=True)  # as an index rebuild leaves them
    for command, made, exit_code in (
        ("batch", "kg: finding what waits for review, kept for the next batches in cache/batch-main.sqlite ...", 0),
        ("lint", "kg: summing up every fact, kept for the next reads in cache/measures.sqlite ...", 1),
    ):
        for told_now in ([made], []):
            done, told = at_a_terminal(command, "--kb", seeded.path)
            assert (done.returncode, told) == (exit_code, told_now), command
            assert done.stdout  # the batch, or lint's findings (two entities are called Web): as ever


def test_threads_that_make_the_cache_at_once_each_get_a_whole_one(kb):
    """The console's threads (a look, a decision, its warming) make the cache at once: each through
    a temporary file named by the process alone, so that one renamed another's half-made file into
    place ('no such table: anchors', a 500 on the review page)."""
    import threading

    from kgrdf import waiting

    opened = KnowledgeBase.open(kb.path)
    failures, made = [], []
    with opened.up_to_date() as backend:
        path = waiting.cache_path(opened.path, opened.perspective)

        def look():
            for _ in range(15):
                path.unlink(missing_ok=True)
                try:
                    cache = waiting.open_cache(opened.path, backend, opened.perspective)
                    made.append(cache is not None)
                    if cache is not None:
                        cache.anchors()
                        cache.piles()
                        cache.close()
                except Exception as exc:  # (what the console answered as a bug)
                    failures.append(repr(exc))

        threads = [threading.Thread(target=look) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
    assert made == [True] * 45
