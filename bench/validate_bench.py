"""Benchmark: kg validate over the whole knowledge base, each shape's own time, beside the floor.

    python bench/validate_bench.py                    # 10k and 100k facts
    python bench/validate_bench.py --sizes 10000

For each size it generates a knowledge base (bench/generate.py), then measures:

- kg: `kg validate --json` in a fresh process (time and peak memory): the store's own checks (the
  index against a rebuild of the journal among them), then the validation view made from the
  journal's lines a chunk of facts at a time, every constraint of shapes/facts.ttl run on each
  chunk as one set-based query;
- view: reading the journal and making every chunk's view, in this process;
- each shape: the time of its constraints' queries on the chunks' views, one at a time, so that a
  shape added later that multiplies the whole is seen by name;
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


def shapes_of(views) -> dict[str, float]:
    """Shape name -> the seconds kg's check of its constraints alone takes on every chunk's view."""
    compiled = shacl.compiled()
    by_shape = defaultdict(list)
    for constraint in compiled.constraints:
        by_shape[constraint.shape.rsplit("#", 1)[-1]].append(constraint)
    return {
        name: sum(
            timed(lambda c=constraints, v=view: shacl.check(v, shacl.Compiled(c, compiled.ntriples), threads=1))[0]
            for view in views
        )
        for name, constraints in by_shape.items()
    }


def views_of(kb: Path) -> list:
    """The views kg validate checks, one a chunk of facts (all held at once: a benchmark's memory)."""
    from kgrdf.kb import KnowledgeBase

    knowledge_base = KnowledgeBase.open(kb)
    with knowledge_base.reading() as session:
        chunks, entity_lines, _facts = validation._chunks(
            validation._journal_lines(knowledge_base), validation.FACTS_PER_CHUNK
        )
        ontology = session.backend.schema_quads()
    return [validation.view_from_lines(chunk, entity_lines, ontology) for chunk in chunks]


def measure_size(size: int, work: Path) -> dict:
    import pyoxigraph as ox

    kb = work / f"kb-{size}"
    shutil.rmtree(kb, ignore_errors=True)
    generate(kb, size)
    kg_time, kg_memory = measure.run(["validate", "--json", "--kb", str(kb)], ok=(0, 1))
    store = ox.Store.read_only(str(kb / "index"))
    floor, _ = timed(lambda: sum(1 for _ in store.quads_for_pattern(None, None, None, None)))
    view_time, views = timed(lambda: views_of(kb))
    return {
        "size": size,
        "kg": kg_time,
        "memory": kg_memory,
        "floor": floor,
        "view": view_time,
        "shapes": shapes_of(views),
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
