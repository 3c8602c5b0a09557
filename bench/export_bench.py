"""Benchmark: kg export of the whole knowledge base, time and peak memory, beside the floor.

    python bench/export_bench.py                       # 10k and 100k facts
    python bench/export_bench.py --kb DIR/kb-1000000   # knowledge bases made already (read, not changed)

For each knowledge base and each format (N-Quads, TriG, JSON-LD; Turtle, the current facts alone):

- kg: `kg export --format F --output FILE` in a fresh process (time and peak memory);
- floor: a fresh process that opens the index read-only and dumps every quad to a file in the same
  syntax with pyoxigraph's own Store.dump (no Python between the store and the file).

An export is written as the index is read: its peak memory should stay flat as the base grows, and
its time should follow the floor's. The machine is shared and noisy: read the ratios.
"""

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import measure  # noqa: E402
from generate import generate  # noqa: E402

FORMATS = {"nquads": "N_QUADS", "trig": "TRIG", "jsonld": "JSON_LD", "turtle": None}

FLOOR = """
import sys, pyoxigraph as ox
store = ox.Store.read_only(sys.argv[1])
store.dump(sys.argv[2], getattr(ox.RdfFormat, sys.argv[3]))
"""


def floor(index: Path, out: Path, syntax: str) -> float:
    """Seconds of a fresh process dumping the index to ``out`` with pyoxigraph alone."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, str(index), str(out), syntax], check=True)
    return time.perf_counter() - start


def measure_kb(kb: Path, work: Path, formats: list[str]) -> None:
    for fmt in formats:
        syntax = FORMATS[fmt]
        out = work / f"export.{fmt}"
        seconds, peak = measure.run(["export", "--format", fmt, "--output", str(out), "--kb", str(kb)])
        size = out.stat().st_size
        line = f"{kb.name:>14} {fmt:>7}  kg export {seconds:6.2f} s, peak {peak:5.0f} MB, {size / 1e6:7.1f} MB written"
        if syntax is not None:
            floor_seconds = floor(kb / "index", work / f"floor.{fmt}", syntax)
            line += f" | floor (Store.dump) {floor_seconds:6.2f} s | kg/floor {seconds / floor_seconds:4.1f}x"
        print(line, flush=True)
        out.unlink()
        (work / f"floor.{fmt}").unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--kb", type=Path, nargs="+", help="knowledge bases made already (bench/run.py --keep)")
    parser.add_argument("--formats", nargs="+", choices=list(FORMATS), default=list(FORMATS))
    args = parser.parse_args()
    with measure.work_folder(None, "kgrdf-export-bench-") as work:
        if args.kb:
            for kb in args.kb:
                measure_kb(kb, work, args.formats)
            return
        for size in args.sizes:
            kb = work / f"kb-{size}"
            generate(kb, size)
            measure_kb(kb, work, args.formats)
            shutil.rmtree(kb)


if __name__ == "__main__":
    main()
