"""Benchmark: the index on an Oxigraph server beside the index on disk, the same journal under both.

    python bench/remote_bench.py                      # 10k facts
    python bench/remote_bench.py --sizes 10000 100000 --repeat 5
    python bench/remote_bench.py --sizes --sync 10000     # only the sync of 10k transactions

For each size it generates a knowledge base (bench/generate.py), copies it, moves the copy's index
to an Oxigraph server started on a free loopback port (``kg index move URL``), and measures:

- rebuild: that move, which loads the whole journal onto the server, beside the same rebuild on
  disk (the index folder removed, then one command);
- lookup, neighbors --hops 2, context --for and propose: the CLI in a fresh process, the best of
  --repeat runs, on disk and through the server;
- import: a file of --import facts (depends_on between the generated repos) with --apply, on each.
- propose with the server stopped (validated against an index made from the journal in memory),
  beside a propose on disk.

- sync (``--sync N``, 10k by default, 0 to skip): a replica writes N transactions (one propose
  each, written through the library without git, which would cost more than the write), then
  ``kg sync`` pushes them to a hub (an Oxigraph server), a second replica's ``kg sync`` pulls and
  folds them in (one write), and its ``kg sync`` again pushes that write (one large patch) and
  finds nothing new to fold.

The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
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

        def propose_args(kb: Path) -> list[str]:
            value = f"bench {next(counter)}"
            return ["propose", targets["repo"], "caveat", "--value", value, "-s", "pr:bench", "--kb", str(kb)]

        def propose(kb: Path) -> float:
            return min(measure.run(propose_args(kb))[0] for _ in range(repeat))

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
        # Last, the server down: a write is validated against an index made from the journal, kept
        # in cache/standby/ by the first write of the outage and brought up to date by the next.
        # (The server is not started again: at 100k facts its start may outlast the wait.)
        server.stop()
        first = {"disk": measure.run(propose_args(disk))[0], "server": measure.run(propose_args(remote))[0]}
        rows.append({"size": size, "what": "propose, server down, first", **first})
        rows.append(
            {"size": size, "what": "propose, server down, next", "disk": propose(disk), "server": propose(remote)}
        )
    finally:
        server.stop()
    for row in rows:
        print(
            f"{row['size']:>7}  {row['what']:<28} disk {row['disk']:7.3f} s   server {row['server']:7.3f} s", flush=True
        )
    return rows


def write_transactions(path: Path, count: int) -> float:
    """A knowledge base at ``path`` with ``count`` transactions in its shared journal, one propose
    each (depends_on between 200 repos); the seconds the writes took. Written with git off the
    PATH: the knowledge base then keeps no git history, and a write costs its journal and index."""
    import os

    from kgrdf.kb import KnowledgeBase

    saved = os.environ["PATH"]
    os.environ["PATH"] = os.pathsep.join(p for p in saved.split(os.pathsep) if not (Path(p) / "git").exists())
    try:
        kb = KnowledgeBase.open(KnowledgeBase.create(path).path)
        with kb.writing("add-entity") as writer:
            for n in range(200):
                writer.add_entity(f"repo/rep-{n:06d}", f"rep {n}")
        start = time.perf_counter()
        for n in range(count - 1):
            with kb.writing("propose") as writer:
                a = n % 200
                b = (a + 1 + n // 200) % 200  # a new pair each time, up to 40k
                writer.propose(
                    f"repo/rep-{a:06d}",
                    "depends_on",
                    object=f"repo/rep-{b:06d}",
                    sources=[f"doc:bench-{n}"],
                    auto_confirm=False,
                )
            if n and n % 1000 == 0:
                print(f"  {n} transactions written", flush=True)
        return time.perf_counter() - start
    finally:
        os.environ["PATH"] = saved


def measure_sync(count: int, work: Path) -> list[dict]:
    print(f"\n== sync of {count} transactions: writing them ...", flush=True)
    server = OxigraphServer(work / "hub")
    server.start()
    try:
        ana, ben = work / "sync-ana", work / "sync-ben"
        written = write_transactions(ana, count)
        measure.run(["init", "--kb", str(ben)])
        for kb in (ana, ben):
            measure.run(["remote", "add", "hub", server.url, "--kb", str(kb)])
        rows = [{"what": f"write {count} transactions (library, no git)", "seconds": written, "mb": 0.0}]
        for what, kb in (
            (f"kg sync: push {count} patches", ana),
            (f"kg sync: pull and fold {count} patches", ben),
            ("kg sync again: its fold pushed, nothing to fold", ben),
        ):
            seconds, mb = measure.run(["sync", "--kb", str(kb)])
            rows.append({"what": what, "seconds": seconds, "mb": mb})
        facts = json.loads(
            subprocess.run(
                [*measure.KG, "stats", "--json", "--kb", str(ben)], capture_output=True, text=True, check=True
            ).stdout
        )["fact_count"]
        assert facts == count - 1, facts
    finally:
        server.stop()
    for row in rows:
        print(f"{row['what']:<44} {row['seconds']:8.2f} s  {row['mb']:6.0f} MB", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--import", dest="import_facts", type=int, default=1000)
    parser.add_argument("--sync", type=int, default=10_000, help="transactions to sync (0: none)")
    args = parser.parse_args()
    table, synced = [], []
    with measure.work_folder(None, "kgrdf-remote-bench-") as work:
        for size in args.sizes:
            table += measure_size(size, args.repeat, args.import_facts, work)
        if args.sync:
            synced = measure_sync(args.sync, work)
    if table:
        print("\n| facts | what | on disk | on the server | server / disk |")
        print("|---|---|---|---|---|")
    for row in table:
        print(
            f"| {row['size']} | {row['what']} | {row['disk']:.3f} s | {row['server']:.3f} s "
            f"| {row['server'] / row['disk']:.1f} |"
        )

    if synced:
        print("\n| what | time | peak memory |")
        print("|---|---|---|")
        for row in synced:
            print(f"| {row['what']} | {row['seconds']:.2f} s | {row['mb']:.0f} MB |")


if __name__ == "__main__":
    main()
