"""Benchmark: the index on an Oxigraph server beside the index on disk, the same journal under both.

    python bench/remote_bench.py                      # 10k facts
    python bench/remote_bench.py --sizes 10000 100000 --repeat 5

For each size it generates a knowledge base (bench/generate.py), copies it, moves the copy's index
to an Oxigraph server started on a free loopback port (``kg index move URL``), and measures:

- rebuild: that move, which loads the whole journal onto the server, beside the same rebuild on
  disk (the index folder removed, then one command);
- lookup, neighbors --hops 2, context --for and propose: the CLI in a fresh process, the best of
  --repeat runs, on disk and through the server;
- import: a file of --import facts (depends_on between the generated repos) with --apply, on each.

Sync of replicas is not measured: kg remote and kg sync are not built yet. The machine is shared
and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

import measure  # noqa: E402
from generate import generate  # noqa: E402
from run import pick  # noqa: E402
from sparqlserver import OxigraphServer  # noqa: E402


def best(repeat: int, args: list[str]) -> float:
    return min(measure.run(args)[0] for _ in range(repeat))


def import_file(path: Path, facts: int) -> Path:
    """``facts`` depends_on links between the generated repos (which every size has by the hundred)."""
    out = path / "links.jsonl"
    with out.open("w") as file:
        for n in range(facts):
            a, b = 1 + n % 100, 1 + (n * 7 + 3) % 100
            if a == b:
                b = 1 + (b % 100)
            fact = {"type": "fact", "subject": f"repo/rep-{a:06d}", "predicate": "depends_on"}
            file.write(json.dumps({**fact, "object": f"repo/rep-{b:06d}", "sources": [f"doc:bench-{n}"]}) + "\n")
    return out


def commands(targets: dict) -> dict:
    return {
        "lookup": ["lookup", targets["person"]],
        "neighbors --hops 2": ["neighbors", targets["hub"], "--hops", "2"],
        "context": ["context", "--for", targets["repo"]],
    }


def measure_size(size: int, repeat: int, import_facts: int, work: Path) -> list[dict]:
    print(f"\n== {size} facts: generating ...", flush=True)
    disk = work / f"kb-{size}"
    generate(disk, size)
    remote = work / f"kb-{size}-remote"
    shutil.copytree(disk, remote, symlinks=True)
    shutil.rmtree(remote / "index")
    server = OxigraphServer(work / f"server-{size}")
    server.start()
    try:
        rows = []
        rebuild_remote = measure.run(["index", "move", server.url, "--kb", str(remote)])[0]
        shutil.rmtree(disk / "index")
        rebuild_disk = measure.run(["stats", "--kb", str(disk)])[0]
        rows.append({"size": size, "what": "rebuild", "disk": rebuild_disk, "server": rebuild_remote})
        targets = pick()
        for name, args in commands(targets).items():
            rows.append(
                {
                    "size": size,
                    "what": name,
                    "disk": best(repeat, args + ["--kb", str(disk)]),
                    "server": best(repeat, args + ["--kb", str(remote)]),
                }
            )
        counter = iter(range(10**6))

        def propose(kb: Path) -> float:
            args = ["propose", targets["repo"], "caveat", "--value", f"bench {next(counter)}", "-s", "pr:bench"]
            return min(measure.run(args + ["--kb", str(kb)])[0] for _ in range(repeat))

        rows.append({"size": size, "what": "propose", "disk": propose(disk), "server": propose(remote)})
        links = import_file(work, import_facts)
        rows.append(
            {
                "size": size,
                "what": f"import {import_facts} facts --apply",
                "disk": measure.run(["import", str(links), "--apply", "--kb", str(disk)])[0],
                "server": measure.run(["import", str(links), "--apply", "--kb", str(remote)])[0],
            }
        )
        status = json.loads(
            subprocess.run(
                [*measure.KG, "status", "--json", "--kb", str(remote)], capture_output=True, text=True, check=True
            ).stdout
        )
        assert status["index"]["behind"] == 0, status
    finally:
        server.stop()
    for row in rows:
        print(
            f"{row['size']:>7}  {row['what']:<28} disk {row['disk']:7.3f} s   server {row['server']:7.3f} s", flush=True
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--import", dest="import_facts", type=int, default=1000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kgrdf-remote-bench-"))
    table = []
    try:
        for size in args.sizes:
            table += measure_size(size, args.repeat, args.import_facts, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n| facts | what | on disk | on the server | server / disk |")
    print("|---|---|---|---|---|")
    for row in table:
        print(
            f"| {row['size']} | {row['what']} | {row['disk']:.3f} s | {row['server']:.3f} s "
            f"| {row['server'] / row['disk']:.1f} |"
        )


if __name__ == "__main__":
    main()
