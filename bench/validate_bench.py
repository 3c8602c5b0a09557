"""Benchmark: kg validate over the whole knowledge base, each shape's own time, beside the floor.

    python bench/validate_bench.py                    # 10k and 100k facts
    python bench/validate_bench.py --sizes 10000

For each size it generates a knowledge base (bench/generate.py), then measures:

- kg: `kg validate --json` in a fresh process (time and peak memory): the validation view built
  from the index, every constraint of shapes/facts.ttl run on it as one set-based query, and the
  store's own checks (the index against a rebuild of the journal among them);
- view: queries/validation-view.rq building the view alone, on pyoxigraph in this process;
- each shape: the time of its constraints' queries on that view, one at a time, so that a shape
  added later that multiplies the whole is seen by name;
- floor: one pass over every quad of the index on pyoxigraph (what reading the data once costs).

The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import measure  # noqa: E402
from generate import generate  # noqa: E402

from kgrdf import shacl, validation  # noqa: E402


def timed(run):
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def shapes_of(view) -> dict[str, float]:
    """Shape name -> the seconds kg's check of its constraints alone takes on the view."""
    compiled = shacl.compiled()
    by_shape = defaultdict(list)
    for constraint in compiled.constraints:
        by_shape[constraint.shape.rsplit("#", 1)[-1]].append(constraint)
    return {
        name: timed(lambda c=constraints: shacl.check(view, shacl.Compiled(c, compiled.ntriples), threads=1))[0]
        for name, constraints in by_shape.items()
    }


def measure_size(size: int, work: Path) -> dict:
    import pyoxigraph as ox

    kb = work / f"kb-{size}"
    shutil.rmtree(kb, ignore_errors=True)
    generate(kb, size)
    kg_time, kg_memory = measure.run(["validate", "--json", "--kb", str(kb)], ok=(0, 1))
    store = ox.Store.read_only(str(kb / "index"))
    floor, _ = timed(lambda: sum(1 for _ in store.quads_for_pattern(None, None, None, None)))
    view_time, view = timed(lambda: validation.view_of(store))
    return {
        "size": size,
        "kg": kg_time,
        "memory": kg_memory,
        "floor": floor,
        "view": view_time,
        "shapes": shapes_of(view),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--work", type=Path, default=None, help="where the knowledge bases go (default: a temporary folder)"
    )
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="kgrdf-validate-"))
    rows = [measure_size(size, work) for size in args.sizes]
    print(f"{'facts':>8} | {'kg validate':>11} {'peak MB':>8} | {'floor':>7} {'kg/floor':>8} | {'view':>6}")
    for row in rows:
        print(
            f"{row['size']:>8} | {row['kg']:>10.1f}s {row['memory']:>8.0f} | {row['floor']:>6.2f}s "
            f"{row['kg'] / row['floor']:>8.1f} | {row['view']:>5.1f}s"
        )
    shapes = sorted({name for row in rows for name in row["shapes"]}, key=lambda n: -rows[-1]["shapes"].get(n, 0))
    print("\neach shape's own time (its constraints' queries on the view, one at a time)")
    print(f"{'shape':<32}" + "".join(f"{row['size']:>10}" for row in rows))
    for name in shapes:
        print(f"{name:<32}" + "".join(f"{row['shapes'].get(name, 0):>9.2f}s" for row in rows))
    print(f"{'all shapes':<32}" + "".join(f"{sum(row['shapes'].values()):>9.2f}s" for row in rows))


if __name__ == "__main__":
    main()
