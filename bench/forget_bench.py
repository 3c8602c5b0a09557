"""Benchmark: kg forget at 10k and 100k facts, beside what it cannot do without, side by side.

    python bench/forget_bench.py                      # 10k and 100k facts
    python bench/forget_bench.py --sizes 10000
    python bench/forget_bench.py --kb /tmp/kb-10k /tmp/kb-100k   # copies of kept bases (bench/generate.py)

For each size it generates a synthetic organization (bench/generate.py; a tenth of its entities
and facts name people, whose records are in the private journal), then times, in fresh processes:

- forget: `kg forget person/per-000001`: the scan of both journals for every record naming them,
  the private journal rewritten, leftovers deleted, the index rebuilt in a new folder, view.json,
  the git history restarted;
- rebuild: the index alone rebuilt from the journal (`rm -rf index; kg stats`), the floor of any
  deletion that must not leave the person's bytes in the store's files;
- write: one `kg propose` on the same knowledge base, for scale;

Each kg command's time and peak resident memory (bench/measure.py) are printed; the rebuild's and
the forget's memory must not follow the size of the journal (the target: 4 GB at a million facts).

and, on pyoxigraph directly in one process, on a copy of the index before the forget:

- floor: the index's quads after the forget (dumped from the store) bulk loaded into a new folder:
  what any deletion pays that leaves none of the person's bytes in the store's files;
- in place: the person's quads (every graph where their IRI is a subject or an object, and their
  entity's rows) deleted from the store, then `optimize()` (a compaction of every column family) and
  the store closed; it is not a way to forget: it reports whether the person's IRI is still in the
  store's files afterwards (it is: Oxigraph never deletes a string it has stored).

The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from generate import generate  # noqa: E402
from measure import run  # noqa: E402

from kgrdf import vocab  # noqa: E402
from kgrdf.kb import KnowledgeBase  # noqa: E402


def kg(*args: str) -> tuple[float, float]:
    """(seconds, peak MB) of one kg command in a fresh process."""
    return run(list(args))


PERSON = "person/per-000001"


def in_place(index: Path, person: str) -> tuple[float, bool]:
    """Delete the person's quads from a copy of the index and compact it: (seconds, whether the
    person's IRI is still in one of the store's files)."""
    import pyoxigraph as ox

    store = ox.Store(str(index))
    start = time.perf_counter()
    graphs = {
        row["g"]
        for row in store.query(
            "SELECT DISTINCT ?g ?person WHERE { { GRAPH ?g { ?person ?x ?y } } UNION { GRAPH ?g { ?y ?x ?person } } }",
            substitutions={ox.Variable("person"): ox.NamedNode(person)},
        )
    }
    for graph in graphs:
        quads = list(store.quads_for_pattern(None, None, None, graph))
        if graph.value.endswith("/entities"):
            quads = [q for q in quads if q.subject == ox.NamedNode(person)]
        for quad in quads:
            store.remove(quad)
    store.flush()
    store.optimize()
    del store  # closed: the write-ahead log is rolled over
    took = time.perf_counter() - start
    needle = person.encode("utf-8")
    left = any(needle in p.read_bytes() for p in index.rglob("*") if p.is_file())
    return took, left


def floor(index: Path, target: Path) -> float:
    """Bulk load the index's quads (without the forgotten person's: the index after the forget)
    into a new folder, the data in memory first."""
    import pyoxigraph as ox

    data = ox.Store.read_only(str(index)).dump(format=ox.RdfFormat.N_QUADS)
    start = time.perf_counter()
    store = ox.Store(str(target))
    store.bulk_load(input=data, format=ox.RdfFormat.N_QUADS, lenient=True)
    store.flush()
    del store
    return time.perf_counter() - start


def measure(size: int, work: Path, kept: Path | None = None) -> dict:
    """One knowledge base of ``size`` facts, generated, or copied from ``kept`` (never changed)."""
    kb = work / f"kb-{size}"
    shutil.rmtree(kb, ignore_errors=True)
    if kept is None:
        generate(kb, size)
    else:
        shutil.copytree(kept, kb, symlinks=True)
    where = ["--kb", str(kb)]
    kg("stats", *where)  # warm: the index is there and fresh
    journal_mb = sum(p.stat().st_size for p in (kb / "journal").rglob("*.rdfp*")) / 1e6
    write, _ = kg("propose", "repo/rep-000001", "caveat", "--value", "measured", "--source", "pr:1", *where)
    shutil.rmtree(kb / "index")
    rebuild, rebuild_mb = kg("stats", *where)
    before = work / f"index-{size}"
    shutil.copytree(kb / "index", before)
    iri = vocab.entity_iri(KnowledgeBase.open(kb).perspective, PERSON).value
    place, left = in_place(before, iri)
    shutil.rmtree(before)
    forget, forget_mb = kg("forget", PERSON, *where)
    bulk = floor(kb / "index", work / f"floor-{size}")
    shutil.rmtree(work / f"floor-{size}")
    shutil.rmtree(kb)
    return {
        "size": size,
        "journal_mb": journal_mb,
        "forget": forget,
        "forget_mb": forget_mb,
        "rebuild": rebuild,
        "rebuild_mb": rebuild_mb,
        "write": write,
        "floor": bulk,
        "in_place": place,
        "trace": left,
    }


def _size_of(kb: Path) -> int:
    """The number of facts of a kept knowledge base (kg stats)."""
    import json

    done = subprocess.run(
        [sys.executable, "-m", "kgrdf", "stats", "--json", "--kb", str(kb)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)["fact_count"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--kb", type=Path, nargs="+", help="kept knowledge bases to copy instead of generating")
    args = parser.parse_args()
    bases = [(_size_of(path), path) for path in args.kb] if args.kb else [(size, None) for size in args.sizes]
    rows = []
    with tempfile.TemporaryDirectory(prefix="kgrdf-forget-") as tmp:
        for size, kept in bases:
            rows.append(measure(size, Path(tmp), kept))
            row = rows[-1]
            print(
                f"{size:>7} facts  journal {row['journal_mb']:.0f} MB  forget {row['forget']:.1f} s "
                f"{row['forget_mb']:.0f} MB peak  index rebuild {row['rebuild']:.1f} s {row['rebuild_mb']:.0f} MB peak  "
                f"floor (bulk load) {row['floor']:.1f} s  "
                f"in place + optimize {row['in_place']:.1f} s ({'leaves' if row['trace'] else 'no'} trace)  "
                f"one write {row['write']:.2f} s  forget/rebuild {row['forget'] / row['rebuild']:.1f}x  "
                f"forget/floor {row['forget'] / row['floor']:.1f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
