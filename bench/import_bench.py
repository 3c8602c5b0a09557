"""Benchmark: kg import end to end, beside the floor and the naive way, measured side by side.

    python bench/import_bench.py                      # 1k, 10k and 100k facts
    python bench/import_bench.py --sizes 1000 10000

For each size it writes a synthetic organization as import records (bench/generate.py --records),
then times, on the same data:

- kg: `kg import FILE --apply` in a fresh process on a new knowledge base: every record through the
  writer's checks, the SHACL shapes over the whole import, the journal (fsynced), the index and the
  git commit;
- floor: pyoxigraph `bulk_load` of the N-Quads that import journaled into a new store on disk, with
  no check at all (what the index alone costs);
- naive: rdflib parsing those N-Quads into a Dataset and writing them out as one TriG file (what a
  tool that keeps its knowledge in one RDF file pays, still without any check), in a fresh process
  cut off at --naive-cap seconds (then ">" marks a lower bound).

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

from generate import records  # noqa: E402


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def kg(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "kgrdf", *args], check=True, capture_output=True, text=True)


def measure(size: int, work: Path, cap: float) -> dict:
    import pyoxigraph as ox

    seed = work / f"records-{size}.jsonl"
    records(seed, size)
    kb = work / f"kb-{size}"
    shutil.rmtree(kb, ignore_errors=True)
    kg("init", "--kb", str(kb))
    kg_time = timed(lambda: kg("import", str(seed), "--apply", "--kb", str(kb)))
    nquads = work / f"kb-{size}.nq"
    kg("export", "--format", "nquads", "--output", str(nquads), "--kb", str(kb))
    floor_store = work / f"floor-{size}"
    shutil.rmtree(floor_store, ignore_errors=True)

    def floor():
        store = ox.Store(str(floor_store))
        store.bulk_load(path=str(nquads), format=ox.RdfFormat.N_QUADS)
        store.flush()

    floor_time = timed(floor)

    start = time.perf_counter()
    try:
        subprocess.run(
            [sys.executable, __file__, "--naive-one", str(nquads), str(work / f"naive-{size}.trig")],
            check=True,
            timeout=cap,
            capture_output=True,
        )
        naive_time, capped = time.perf_counter() - start, False
    except subprocess.TimeoutExpired:
        naive_time, capped = cap, True
    return {"size": size, "kg": kg_time, "floor": floor_time, "naive": naive_time, "capped": capped}


def naive(nquads: str, trig: str) -> None:
    """rdflib: parse the N-Quads into a Dataset, write one TriG file."""
    import rdflib

    dataset = rdflib.Dataset()
    dataset.parse(nquads, format="nquads")
    dataset.serialize(destination=trig, format="trig")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument(
        "--naive-cap",
        type=float,
        default=120.0,
        help="stop the naive way after this many seconds and report it as a lower bound",
    )
    parser.add_argument("--naive-one", nargs=2, metavar=("NQUADS", "TRIG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.naive_one:
        return naive(*args.naive_one)
    work = args.work or Path(tempfile.mkdtemp(prefix="kgrdf-import-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"kg import benchmark in {work}")
    for size in args.sizes:
        row = measure(size, work, args.naive_cap)
        bound = ">" if row["capped"] else " "
        print(
            f"{row['size']:>7} facts  kg import {row['kg']:7.1f} s | floor (bulk_load, no checks) "
            f"{row['floor']:6.1f} s | naive (rdflib to TriG, no checks) {bound}{row['naive']:6.1f} s "
            f"| kg/floor {row['kg'] / row['floor']:4.1f}x | naive/kg {bound}{row['naive'] / row['kg']:4.1f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
