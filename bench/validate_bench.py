"""Benchmark: kg validate over the whole knowledge base, each shape's own time, beside the floor.

    python bench/validate_bench.py                    # 10k and 100k facts
    python bench/validate_bench.py --sizes 10000
    python bench/validate_bench.py --kb COPY ...       # knowledge bases made already (give copies)

For each size it generates a knowledge base (bench/generate.py), then measures:

- kg: `kg validate --json` in a fresh process (time and peak memory): the store's own checks (the
  index against a rebuild of the journal among them), then the validation view made from the
  journal's lines a chunk of facts at a time, every constraint of shapes/facts.ttl run on each
  chunk as one set-based query;
- read: reading the journal's rebuild and laying it out in chunks, in this process;
- view: making the view of the entities and of every chunk (the entities it names), one at a time;
- each shape: the time of its constraints' queries on those views, one at a time, so that a
  shape added later that multiplies the whole is seen by name;
- floor: one pass over every quad of the index on pyoxigraph (what reading the data once costs).

The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import shutil
import sys
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


def views_and_shapes(kb: Path) -> tuple[float, float, dict[str, float]]:
    """(seconds reading the journal and laying it out in chunks, seconds making the views, shape
    name -> seconds of its constraints' queries): the views kg validate checks, made one at a time."""
    from kgrdf.kb import KnowledgeBase

    knowledge_base = KnowledgeBase.open(kb)
    with knowledge_base.reading() as session:
        read, (chunks, entity_lines, _facts) = timed(
            lambda: validation._chunks(validation._journal_lines(knowledge_base), validation.FACTS_PER_CHUNK)
        )
        ontology = session.backend.schema_quads()
    compiled = shacl.compiled()
    by_shape = defaultdict(list)
    for constraint in compiled.constraints:
        by_shape[constraint.shape.rsplit("#", 1)[-1]].append(constraint)
    entities = validation._Entities(entity_lines)
    made = [lambda: validation.view_from_lines([], entity_lines, ontology)]
    made += [lambda c=chunk: validation.view_from_lines(c, entities.named_in(c), ontology) for chunk in chunks if chunk]
    if len(chunks) == 1:  # one view of everything, as kg validate makes it
        made = [lambda: validation.view_from_lines(chunks[0], entity_lines, ontology)]
    view_time, shapes = 0.0, defaultdict(float)
    for make in made:
        seconds, view = timed(make)
        view_time += seconds
        for name, constraints in by_shape.items():
            shapes[name] += timed(
                lambda c=constraints, v=view: shacl.check(v, shacl.Compiled(c, compiled.ntriples), threads=1)
            )[0]
    return read, view_time, dict(shapes)


def measure_kb(kb: Path, size: int) -> dict:
    import pyoxigraph as ox

    kg_time, kg_memory = measure.run(["validate", "--json", "--kb", str(kb)], ok=(0, 1))
    store = ox.Store.read_only(str(kb / "index"))
    floor, _ = timed(lambda: sum(1 for _ in store.quads_for_pattern(None, None, None, None)))
    read, view_time, shapes = views_and_shapes(kb)
    return {
        "size": size,
        "kg": kg_time,
        "memory": kg_memory,
        "floor": floor,
        "read": read,
        "view": view_time,
        "shapes": shapes,
    }


def measure_size(size: int, work: Path) -> dict:
    kb = work / f"kb-{size}"
    shutil.rmtree(kb, ignore_errors=True)
    generate(kb, size)
    return measure_kb(kb, size)


def facts_in(kb: Path) -> int:
    """The number of facts a knowledge base's index holds."""
    import pyoxigraph as ox

    from kgrdf import vocab

    store = ox.Store.read_only(str(kb / "index"))
    return sum(1 for _ in store.quads_for_pattern(None, vocab.RDF_TYPE, vocab.kg("Fact"), None))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--work", type=Path, default=None, help="where the knowledge bases go (default: a temporary folder)"
    )
    parser.add_argument(
        "--kb", type=Path, nargs="+", default=None, help="measure these knowledge bases instead of generating any"
    )
    args = parser.parse_args()
    if args.kb:
        rows = [measure_kb(kb, facts_in(kb)) for kb in args.kb]
    else:
        with measure.work_folder(args.work, "kgrdf-validate-") as work:
            rows = [measure_size(size, work) for size in args.sizes]
    print(f"{'facts':>8} | {'kg validate':>11} {'peak MB':>8} | {'floor':>7} {'kg/floor':>8} | {'read':>6} {'view':>6}")
    for row in rows:
        print(
            f"{row['size']:>8} | {row['kg']:>10.1f}s {row['memory']:>8.0f} | {row['floor']:>6.2f}s "
            f"{row['kg'] / row['floor']:>8.1f} | {row['read']:>5.1f}s {row['view']:>5.1f}s"
        )
    shapes = sorted({name for row in rows for name in row["shapes"]}, key=lambda n: -rows[-1]["shapes"].get(n, 0))
    print("\neach shape's own time (its constraints' queries on the views, one at a time)")
    print(f"{'shape':<32}" + "".join(f"{row['size']:>10}" for row in rows))
    for name in shapes:
        print(f"{name:<32}" + "".join(f"{row['shapes'].get(name, 0):>9.2f}s" for row in rows))
    print(f"{'all shapes':<32}" + "".join(f"{sum(row['shapes'].values()):>9.2f}s" for row in rows))


if __name__ == "__main__":
    main()
