"""Benchmark: the reads of one entity with many facts, beside their floors, side by side.

    python bench/degree_bench.py                  # entities with 100, 2,000 and 20,000 facts
    python bench/degree_bench.py --degrees 2000 --repeat 5

For each degree N it imports one entity with N caveats (each from another source) and a second entity
with 5, on a new knowledge base, then times, best of --repeat:

- kg: `kg lookup ENTITY --json` and `kg facts ENTITY --json` in a fresh process, for the entity of N
  facts and for the one of 5 (what any command costs: a process, the index opened);
- floor: the same named queries on pyoxigraph (bench/floor.py: lookup.rq, then fact-heard.rq for the
  listed facts), in this warm process and once in a fresh one.

A listing's cost grows with what it lists: the figure to read is kg's time a fact beside the floor's,
and kg/floor.

The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import measure  # noqa: E402
from floor import floor_runner  # noqa: E402


def knowledge_base(n: int, work: Path) -> Path:
    """A new knowledge base: repo/hub with n caveats, repo/leaf with 5."""
    seed = work / f"degree-{n}.jsonl"
    with open(seed, "w", encoding="utf-8") as out:
        for entity in ("repo/hub", "repo/leaf"):
            out.write(json.dumps({"type": "entity", "id": entity, "name": entity.split("/")[1]}) + "\n")
        for entity, count in (("repo/hub", n), ("repo/leaf", 5)):
            for i in range(count):
                fact = {"type": "fact", "subject": entity, "predicate": "caveat", "value": f"caveat {i} of {entity}"}
                out.write(json.dumps(dict(fact, sources=[f"slack:{entity}-{i}"])) + "\n")
    kb = work / f"kb-degree-{n}"
    shutil.rmtree(kb, ignore_errors=True)
    measure.run(["init", "--kb", str(kb)])
    measure.run(["import", str(seed), "--apply", "--kb", str(kb)])
    return kb


def measure_degree(n: int, work: Path, repeat: int) -> list[dict]:
    kb = knowledge_base(n, work)
    _store, floor = floor_runner(kb)
    rows = []
    for command in ("lookup", "facts"):
        for entity, degree in (("repo/hub", n), ("repo/leaf", 5)):
            listed = subprocess.run(
                [*measure.KG, command, entity, "--json", "--kb", str(kb)], capture_output=True, text=True, check=True
            )
            assert len(json.loads(listed.stdout)["facts"]) == degree, (command, entity)
            took = min(measure.run([command, entity, "--json", "--kb", str(kb)])[0] for _ in range(repeat))
            warm = measure.best_of(repeat, lambda command=command, entity=entity: floor[command](entity))
            cold = measure.best_of(
                repeat,
                lambda command=command, entity=entity: subprocess.run(
                    [sys.executable, str(HERE / "floor.py"), str(kb), command, entity], check=True
                ),
            )
            rows.append({"command": command, "degree": degree, "kb": n, "kg": took, "floor": warm, "cold": cold})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--degrees", type=int, nargs="+", default=[100, 2000, 20000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    with measure.work_folder(args.work, "kgrdf-degree-") as work:
        print(
            f"{'command':<8} {'facts':>6} {'of kb':>6} {'kg':>8} {'kg/fact':>9} {'floor':>8} {'cold floor':>10} {'kg/floor':>8}"
        )
        for n in args.degrees:
            for row in measure_degree(n, work, args.repeat):
                print(
                    f"{row['command']:<8} {row['degree']:>6} {row['kb']:>6} {row['kg']:7.3f}s "
                    f"{row['kg'] / row['degree'] * 1000:7.3f}ms {row['floor']:7.3f}s {row['cold']:9.3f}s "
                    f"{row['kg'] / row['cold']:7.1f}x",
                    flush=True,
                )


if __name__ == "__main__":
    main()
