"""Benchmark: kg end to end beside the naive way and the floor, measured side by side in one run.

    python bench/run.py                       # 1k, 10k and 100k facts
    python bench/run.py --sizes 1000 10000    # smaller

For each size it generates a knowledge base (bench/generate.py), then times, for the same entity:

- kg: the CLI in a fresh process (`kg lookup`, `kg facts`, `kg neighbors --hops 2`, `kg context --for`,
  `kg propose`), the best of --repeat runs;
- floor: the same named SPARQL queries on pyoxigraph in one warm process (best of --repeat);
- naive: rdflib parsing a TriG export of the same data, then the same queries (what a tool that keeps
  its knowledge in one RDF file pays on every command); for propose, parse, add the fact's quads and
  write the file back.

The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from generate import generate  # noqa: E402

from kgrdf import clock, queries, vocab  # noqa: E402
from kgrdf.kb import KnowledgeBase  # noqa: E402

KG = [sys.executable, "-m", "kgrdf"]


def best_of(repeat: int, run) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def cli(args: list[str]) -> None:
    result = subprocess.run(KG + args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"kg {' '.join(args)} failed: {result.stderr}")


def pick() -> dict:
    """Entities every generated size has (see bench/generate.py for the naming)."""
    return {"person": "person/per-000001", "repo": "repo/rep-000001", "hub": "repo/rep-000001"}


def floor_runner(path: Path):
    """The same named queries as the commands, on pyoxigraph in this warm process."""
    import pyoxigraph as ox

    store = ox.Store.read_only(str(path / "index"))
    now = vocab.datetime_literal(clock.iso(clock.now()))

    def run(name, **bindings):
        return list(
            store.query(queries.load(name).text, substitutions={ox.Variable(k): v for k, v in bindings.items()})
        )

    def lookup(entity_id):
        iri = vocab.entity_iri("main", entity_id)
        run("entity", entity=iri)
        for row in run("lookup", entity=iri, now=now):
            run("fact-sources", fact=row["fact"])

    def facts(entity_id):
        iri = vocab.entity_iri("main", entity_id)
        run("entity", entity=iri)
        for row in run("facts", subject=iri, validAt=now, knownAt=now):
            run("fact-sources", fact=row["fact"])

    def neighbors(entity_id, hops=2):
        frontier, seen = [vocab.entity_iri("main", entity_id)], set()
        for _ in range(hops):
            nxt = []
            for node in frontier:
                for row in run("neighbors", entity=node, now=now):
                    if row["peer"].value not in seen:
                        seen.add(row["peer"].value)
                        nxt.append(row["peer"])
            frontier = nxt

    def context(entity_id):
        # a pack's reads: the entity, its confirmed facts, those of the entities anchored to it, and a
        # source for each fact (kg reads sources only for the facts the budget keeps: at most this many)
        iri = vocab.entity_iri("main", entity_id)
        run("entity", entity=iri)
        rows = run("context-facts", entity=iri, now=now)
        anchored = {row["peer"] for row in rows if _anchored(row)}
        for node in anchored:
            rows += [row for row in run("context-facts", entity=node, now=now) if row["direction"].value == "out"]
        for row in rows:
            run("fact-sources", fact=row["fact"])

    return store, {"lookup": lookup, "facts": facts, "neighbors": neighbors, "context": context}


def _anchored(row) -> bool:
    """Whether a row of context-facts.rq leads to an entity anchored to the packed one."""
    anchoring = row["anchoring"].value if row["anchoring"] is not None else None
    return (anchoring, row["direction"].value) in (("container", "out"), ("anchor", "in"))


def naive_runner(trig: Path):
    """rdflib over the TriG file: parse it, then the same named queries with initBindings."""
    import rdflib

    def load():
        dataset = rdflib.Dataset()
        dataset.parse(trig, format="trig")
        return dataset

    now = rdflib.Literal(clock.iso(clock.now()), datatype=rdflib.XSD.dateTime)

    def run(dataset, name, **bindings):
        return list(
            dataset.query(queries.load(name).text, initBindings={rdflib.Variable(k): v for k, v in bindings.items()})
        )

    def iri(entity_id):
        return rdflib.URIRef(vocab.entity_iri("main", entity_id).value)

    def lookup(dataset, entity_id):
        run(dataset, "entity", entity=iri(entity_id))
        for row in run(dataset, "lookup", entity=iri(entity_id), now=now):
            run(dataset, "fact-sources", fact=row[0])

    def facts(dataset, entity_id):
        run(dataset, "entity", entity=iri(entity_id))
        for row in run(dataset, "facts", subject=iri(entity_id), validAt=now, knownAt=now):
            run(dataset, "fact-sources", fact=row[0])

    def neighbors(dataset, entity_id, hops=2):
        frontier, seen = [iri(entity_id)], set()
        for _ in range(hops):
            nxt = []
            for node in frontier:
                for row in dataset.query(
                    queries.load("neighbors").text,
                    initBindings={rdflib.Variable("entity"): node, rdflib.Variable("now"): now},
                ):
                    peer = row["peer"]
                    if peer not in seen:
                        seen.add(peer)
                        nxt.append(peer)
            frontier = nxt

    def context(dataset, entity_id):
        run(dataset, "entity", entity=iri(entity_id))
        rows = run(dataset, "context-facts", entity=iri(entity_id), now=now)
        anchored = {row["peer"] for row in rows if _anchored(row)}
        for node in anchored:
            rows += [
                row for row in run(dataset, "context-facts", entity=node, now=now) if row["direction"].value == "out"
            ]
        for row in rows:
            run(dataset, "fact-sources", fact=row["fact"])

    def propose(dataset, entity_id):
        subject = iri(entity_id)
        graph = rdflib.URIRef(vocab.fact_iri("main", "f-naive1").value)
        dataset.add((subject, rdflib.URIRef(vocab.KG + "caveat"), rdflib.Literal("naive"), graph))
        dataset.serialize(destination=str(trig) + ".out", format="trig")

    return load, {"lookup": lookup, "facts": facts, "neighbors": neighbors, "context": context, "propose": propose}


def naive_once(trig: Path, command: str, entity: str, cap: float) -> tuple[float, bool]:
    """One naive command in a fresh process, as a file-based tool would run it: parse, then answer.
    Returns (seconds, capped): a run cut off at ``cap`` seconds gives a lower bound."""
    start = time.perf_counter()
    try:
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--naive-one", str(trig), command, entity],
            check=True,
            timeout=cap,
            capture_output=True,
        )
    except subprocess.TimeoutExpired:
        return cap, True
    return time.perf_counter() - start, False


def naive_main(trig: str, command: str, entity: str) -> None:
    load, naive = naive_runner(Path(trig))
    naive[command](load(), entity)


def measure(size: int, repeat: int, naive_max: int, naive_cap: float, work: Path) -> list[dict]:
    path = work / f"kb-{size}"
    print(f"\n== {size} facts: generating ...", flush=True)
    start = time.perf_counter()
    generate(path, size)
    print(f"   generated in {time.perf_counter() - start:.1f} s", flush=True)
    targets = pick()
    kb_args = ["--kb", str(path)]
    commands = {  # name: (the kg command, the entity the floor and the naive way ask about)
        "lookup": (["lookup", targets["person"]], targets["person"]),
        "facts": (["facts", targets["repo"]], targets["repo"]),
        "neighbors": (["neighbors", targets["hub"], "--hops", "2"], targets["hub"]),
        "context": (["context", "--for", targets["repo"]], targets["repo"]),
    }
    rows = []
    cli(["stats"] + kb_args)  # warm the page cache and the index once
    store, floor = floor_runner(path)
    for name, (args, entity) in commands.items():
        kg_time = best_of(repeat, lambda args=args: cli(args + kb_args))
        floor_time = best_of(repeat, lambda name=name, entity=entity: floor[name](entity))
        rows.append({"size": size, "command": name, "kg": kg_time, "floor": floor_time})
    del store
    counter = iter(range(10**6))
    propose_time = best_of(
        repeat,
        lambda: cli(
            ["propose", targets["repo"], "caveat", "--value", f"bench caveat {next(counter)}", "--source", "pr:bench"]
            + kb_args
        ),
    )
    rows.append({"size": size, "command": "propose", "kg": propose_time, "floor": None})

    if size <= naive_max:
        trig = work / f"kb-{size}.trig"
        with KnowledgeBase.open(path).reading() as session:
            trig.write_bytes(session.export("trig"))
        for row in rows:
            name = row["command"]
            entity = targets["person"] if name == "lookup" else targets["repo"]
            row["naive"], row["naive_capped"] = naive_once(trig, name, entity, naive_cap)
    for row in rows:
        print_row(row)
    return rows


def print_row(row: dict) -> None:
    floor = f"{row['floor'] * 1000:8.1f} ms" if row.get("floor") is not None else "         -"
    bound = ">" if row.get("naive_capped") else " "
    naive = f"{bound}{row['naive']:8.2f} s" if row.get("naive") is not None else "          -"
    ratio_floor = f"{row['kg'] / row['floor']:7.1f}x" if row.get("floor") else "       -"
    ratio_naive = f"{bound}{row['naive'] / row['kg']:7.0f}x" if row.get("naive") else "        -"
    print(
        f"{row['size']:>7} {row['command']:<10} kg {row['kg']:6.3f} s | floor {floor} | naive {naive} "
        f"| kg/floor {ratio_floor} | naive/kg {ratio_naive}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--naive-max", type=int, default=100000, help="skip the naive way above this size")
    parser.add_argument(
        "--naive-cap",
        type=float,
        default=120.0,
        help="stop a naive run after this many seconds and report it as a lower bound",
    )
    parser.add_argument("--naive-one", nargs=3, metavar=("TRIG", "COMMAND", "ENTITY"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--work", type=Path, default=None, help="where to put the knowledge bases (default: a temporary folder)"
    )
    args = parser.parse_args()
    if args.naive_one:
        return naive_main(*args.naive_one)
    work = args.work or Path(tempfile.mkdtemp(prefix="kgrdf-bench-"))
    os.environ.pop("KGRDF_HOME", None)
    print(f"kgrdf benchmark in {work} (best of {args.repeat}; ratios are measured side by side)")
    table = []
    for size in args.sizes:
        table += measure(size, args.repeat, args.naive_max, args.naive_cap, work)
    print("\n== summary")
    for row in table:
        print_row(row)


if __name__ == "__main__":
    main()
