"""Benchmark: hostile shapes that made a command's cost grow with the square of its input, measured
at n and 4n side by side (the ratio to read: about 4 is linear, 16 is every pair).

    python bench/history_bench.py                  # n = 1000 and 4000
    python bench/history_bench.py --sizes 500 2000

- history: one subject with n values of a single-valued predicate (status), each true for one day
  of its own, imported and confirmed (a ledger's years of one field); then, in fresh processes,
  `kg propose` of one more value (its check reads the n values beside it), `kg validate` (the
  single-valued shape pairs values of one subject) and `kg lint` (its overlaps);
- mentions: a value naming one person n times (`kg propose`, then `kg forget --dry-run`, whose
  matcher reads it), and a message of n times "the " against n/2 names that begin with "the"
  (`kg mentions`).

Each figure is beside what the same command takes on a subject of 10 values or a text of 10 words
(the base: what any command costs, a process and the index opened).

The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import datetime
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import measure  # noqa: E402

NOW = "2026-03-02T09:00:00Z"
CAPS = {"KGRDF_BATCH_FACTS": "1000000", "KGRDF_BATCH_GROUPS": "1000000", "KGRDF_GROUP_FACTS": "26"}


def kg(*args: str) -> float:
    return measure.run(list(args))[0]


def history(n: int, work: Path) -> dict:
    """A knowledge base whose environment/stg holds n past values of status, all confirmed; the
    times of one more proposed, of kg validate and of kg lint on it."""
    kb = work / f"history-{n}"
    shutil.rmtree(kb, ignore_errors=True)
    kg("init", "--kb", str(kb))
    seed = work / f"history-{n}.jsonl"
    first = datetime.date(2000, 1, 1)
    with open(seed, "w", encoding="utf-8") as out:
        out.write(json.dumps({"type": "entity", "id": "environment/stg", "name": "stg"}) + "\n")
        for i in range(n):
            start = first + datetime.timedelta(days=i)
            record = {
                "type": "fact",
                "subject": "environment/stg",
                "predicate": "status",
                "value": f"state {i}",
                "valid_from": start.isoformat(),
                "valid_to": (start + datetime.timedelta(days=1)).isoformat(),
                "sources": [f"ledger:{i}"],
            }
            out.write(json.dumps(record) + "\n")
    kg("import", str(seed), "--apply", "--kb", str(kb))
    os.environ.update(CAPS)
    try:
        kg("batch", "--kb", str(kb))
        kg("batch", "apply", "confirm all", "--kb", str(kb))
    finally:
        for name in CAPS:
            os.environ.pop(name)
    return {
        "propose": kg("propose", "stg", "status", "--value", "live", "-s", "doc:y", "--kb", str(kb)),
        "validate": kg("validate", "--kb", str(kb)),
        "lint": measure.run(["lint", "--kb", str(kb)], ok=(0, 1))[0],
    }


def mentions(n: int, work: Path) -> dict:
    """A value naming Sam n times, proposed and then read by kg forget --dry-run; kg mentions of a
    message of n "the" against n/2 names "the repoN"."""
    kb = work / f"mentions-{n}"
    shutil.rmtree(kb, ignore_errors=True)
    kg("init", "--kb", str(kb))
    seed = work / f"mentions-{n}.jsonl"
    with open(seed, "w", encoding="utf-8") as out:
        out.write(json.dumps({"type": "entity", "id": "person/sam", "name": "Sam Reyes", "aliases": ["Sam"]}) + "\n")
        out.write(json.dumps({"type": "entity", "id": "process/release", "name": "Release"}) + "\n")
        for i in range(max(1, n // 2)):
            out.write(json.dumps({"type": "entity", "id": f"repo/r{i}", "name": f"r{i}", "aliases": [f"the repo{i}"]}))
            out.write("\n")
    kg("import", str(seed), "--apply", "--kb", str(kb))
    kg("mentions", "the repo1", "--kb", str(kb))  # (the names' cache, made once)
    propose = kg("propose", "release", "caveat", "--value", "Sam " * n, "-s", "slack:x", "--kb", str(kb))
    return {
        "propose": propose,
        "forget --dry-run": kg("forget", "person/sam", "--dry-run", "--kb", str(kb)),
        "mentions": kg("mentions", "the " * n, "--kb", str(kb)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[1000, 4000], metavar="N", help="n and 4n")
    parser.add_argument("--keep", type=Path, help="work in this folder and leave it (default: a temporary one)")
    args = parser.parse_args()
    os.environ["KGRDF_NOW"] = NOW
    with measure.work_folder(args.keep, "kgrdf-history-") as work:
        for name, case in (("history", history), ("mentions", mentions)):
            base = case(10, work)
            figures = [case(n, work) for n in args.sizes]
            print(
                f"{name}: n = 10 / {args.sizes[0]} / {args.sizes[1]}  (ratio: {args.sizes[1]} beside {args.sizes[0]})"
            )
            for command in base:
                small, large = (f[command] for f in figures)
                print(
                    f"  {command:<18} {base[command]:7.2f} s {small:7.2f} s {large:7.2f} s"
                    f"   ratio {large / small:5.1f}   beyond the base {(large - base[command]) / max(small - base[command], 1e-3):5.1f}"
                )


if __name__ == "__main__":
    main()
