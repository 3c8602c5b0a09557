"""Benchmark: kg forget at 10k and 100k facts, beside what it cannot do without, side by side.

    python bench/forget_bench.py                      # 10k and 100k facts
    python bench/forget_bench.py --sizes 10000

For each size it generates a synthetic organization (bench/generate.py; a tenth of its entities
and facts name people, whose records are in the private journal), then times, in fresh processes:

- forget: `kg forget person/per-000001`: the scan of both journals for every record naming them,
  the private journal rewritten, leftovers deleted, the index rebuilt in a new folder, view.json,
  the git history restarted;
- rebuild: the index alone rebuilt from the journal (`rm -rf index; kg stats`), the floor of any
  deletion that must not leave the person's bytes in the store's files;
- write: one `kg propose` on the same knowledge base, for scale.

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


def kg(*args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kgrdf", *args], capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"kg {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return took


def measure(size: int, work: Path) -> dict:
    kb = work / f"kb-{size}"
    shutil.rmtree(kb, ignore_errors=True)
    generate(kb, size)
    where = ["--kb", str(kb)]
    kg("stats", *where)  # warm: the index is there and fresh
    journal_mb = sum(p.stat().st_size for p in (kb / "journal").rglob("*.rdfp")) / 1e6
    write = kg("propose", "repo/rep-000001", "caveat", "--value", "measured", "--source", "pr:1", *where)
    shutil.rmtree(kb / "index")
    rebuild = kg("stats", *where)
    forget = kg("forget", "person/per-000001", *where)
    return {"size": size, "journal_mb": journal_mb, "forget": forget, "rebuild": rebuild, "write": write}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kgrdf-forget-") as tmp:
        for size in args.sizes:
            rows.append(measure(size, Path(tmp)))
            row = rows[-1]
            print(
                f"{size:>7} facts  journal {row['journal_mb']:.0f} MB  forget {row['forget']:.1f} s  "
                f"index rebuild {row['rebuild']:.1f} s  one write {row['write']:.2f} s  "
                f"forget/rebuild {row['forget'] / row['rebuild']:.1f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
