"""Benchmark: what a fact costs on disk (journal, index, git), beside the floor, measured side by side.

    python bench/disk_bench.py                                   # 1k, 10k and 100k facts
    python bench/disk_bench.py --sizes 1000000 --keep /tmp/kgrdf-bench   # a kept base (bench/run.py --keep)

For each size it generates a knowledge base (bench/generate.py), or reuses DIR/kb-<size> with --keep,
and reports bytes per fact (the files' own sizes, not the disk blocks they fill):

- kg: the journal (both RDF Patch logs), the index (the Oxigraph store kg keeps), git (the history,
  after kg's own writes: loose objects and packs as they are), and cache/;
- floor: the same data as the fewest bytes each part could take: for the journal, the index's quads
  written as N-Quads (the rows, without the patch headers) and the same gzipped (what a compressed
  log would hold); for the index, those quads bulk-loaded into a new pyoxigraph store and compacted
  (what Oxigraph itself needs for them, whatever kg does). Also the quads per fact, which every
  byte of the index scales with.

The issue's targets: journal <= 1 KB and index <= 2 KB a fact.
"""

import argparse
import gzip
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from generate import generate  # noqa: E402
from measure import work_folder  # noqa: E402

from kgrdf.schema import SCHEMA_GRAPH  # noqa: E402

TARGETS = {"journal": 1024, "index": 2048}


def size_of(folder: Path) -> int:
    """The bytes of every file under ``folder`` (their lengths, as ls shows them)."""
    total = 0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                pass  # a file RocksDB or git removed while it was counted
    return total


def floors(index: Path, work: Path) -> dict:
    """The index's data quads as N-Quads (plain and gzipped) and as a fresh, compacted pyoxigraph store."""
    import pyoxigraph as ox

    store = ox.Store.read_only(str(index))
    schema = ox.NamedNode(SCHEMA_GRAPH)
    lines = [str(q).encode("utf-8") for q in store if q.graph_name != schema]
    del store
    nquads = b" .\n".join(lines) + b" .\n"
    fresh = work / "floor-index"
    shutil.rmtree(fresh, ignore_errors=True)
    loaded = ox.Store(str(fresh))
    loaded.bulk_load(input=nquads, format=ox.RdfFormat.N_QUADS)
    loaded.optimize()
    del loaded
    out = {"quads": len(lines), "nquads": len(nquads), "nquads.gz": len(gzip.compress(nquads, 6))}
    out["store"] = size_of(fresh)
    shutil.rmtree(fresh, ignore_errors=True)
    return out


def measure(path: Path, size: int, work: Path) -> dict:
    kb = {"journal": size_of(path / "journal"), "index": size_of(path / "index"), "git": size_of(path / ".git")}
    kb["cache"] = size_of(path / "cache")
    return {"size": size, "kg": kb, "floor": floors(path / "index", work)}


def print_table(rows: list[dict]) -> None:
    print(f"{'facts':>9} {'part':<8} {'kg B/fact':>10} {'floor B/fact':>13} {'kg/floor':>9}  floor is")
    for row in rows:
        n, kg, floor = row["size"], row["kg"], row["floor"]
        parts = (
            ("journal", kg["journal"], floor["nquads"], "the quads as N-Quads"),
            ("journal", kg["journal"], floor["nquads.gz"], "the same, gzipped"),
            ("index", kg["index"], floor["store"], "a new compacted store of the quads"),
            ("git", kg["git"], floor["nquads.gz"], "the quads gzipped"),
            ("cache", kg["cache"], 0, ""),
        )
        for part, mine, least, what in parts:
            mark = " !" if mine / n > TARGETS.get(part, float("inf")) else ""
            ratio = f"{mine / least:9.2f}" if least else f"{'':9}"
            print(f"{n:>9} {part:<8} {mine / n:>10.0f} {least / n:>13.0f} {ratio}  {what}{mark}")
        print(f"{n:>9} {'quads':<8} {floor['quads'] / n:>10.1f} a fact")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--keep", type=Path, metavar="DIR", help="reuse (or leave) DIR/kb-<size>")
    args = parser.parse_args()
    rows = []
    with work_folder(args.keep, "kgrdf-disk-") as work:
        for size in args.sizes:
            path = work / f"kb-{size}"
            if not (args.keep and path.exists()):
                shutil.rmtree(path, ignore_errors=True)
                print(f"generating {size} facts in {path} ...", flush=True)
                generate(path, size)
            rows.append(measure(path, size, work))
            if not args.keep:
                shutil.rmtree(path, ignore_errors=True)
    print(
        f"\n== bytes a fact on disk, kg beside the floor; targets: journal <= {TARGETS['journal']}, "
        f"index <= {TARGETS['index']} (! marks a miss)"
    )
    print_table(rows)


if __name__ == "__main__":
    main()
