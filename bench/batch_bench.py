"""Benchmark: kg batch with many proposals waiting, beside its floor, measured side by side.

    python bench/batch_bench.py                       # 30k and 100k proposals
    python bench/batch_bench.py --sizes 10000

For each size it generates a knowledge base whose every fact is a proposal (bench/generate.py),
then times, on the same data:

- kg: `kg batch --json` in a fresh process, the best of --repeat runs after one that expires
  nothing, warms the files and makes the cache of what waits (kgrdf.waiting, which every write
  keeps current): it reads what waits summed up by thing from that cache, ranks the groups, reads
  the facts of the groups it shows, and saves batch.json. The first run's time (the cache made
  from the index) is printed too;
- floor: queries/batch-piles.rq alone on pyoxigraph in one warm process (the sums the batch is
  ranked from: no grouping, no facts read, nothing printed).

The batch shows a capped number of facts (40): kg's time should stay near the floor's at every
size. The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from generate import generate  # noqa: E402
from measure import best_of, work_folder  # noqa: E402

from kgrdf import queries, vocab  # noqa: E402


def kg_batch(kb: Path) -> None:
    # Without PYTHONDONTWRITEBYTECODE: with it, every cold process compiles kgrdf from source
    # (~0.3 s), which no installed kg pays.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-m", "kgrdf", "batch", "--json", "--kb", str(kb)], check=True, capture_output=True, env=env
    )


def floor(kb: Path, repeat: int) -> float:
    import pyoxigraph as ox

    store = ox.Store.read_only(str(kb / "index"))
    text = queries.load("batch-piles").text
    bindings = {ox.Variable("perspective"): vocab.perspective_iri("main")}
    return best_of(repeat, lambda: list(store.query(text, substitutions=bindings)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[30000, 100000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    with work_folder(args.work, "kgrdf-batch-bench-") as work:
        print(f"kg batch benchmark in {work}")
        for size in args.sizes:
            kb = work / f"kb-{size}"
            if not kb.exists():
                generate(kb, size, statuses=["proposed"])
            first = best_of(1, lambda kb=kb: kg_batch(kb))
            kg_time = best_of(args.repeat, lambda kb=kb: kg_batch(kb))
            floor_time = floor(kb, args.repeat)
            print(
                f"{size:>7} proposals  kg batch {kg_time:6.2f} s | floor (batch-piles.rq on pyoxigraph) "
                f"{floor_time:6.2f} s | kg/floor {kg_time / floor_time:4.1f}x | first run {first:6.2f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
