"""Benchmark: kg import end to end, beside the floor and the naive way, measured side by side.

    python bench/import_bench.py                      # 1k, 10k and 100k facts
    python bench/import_bench.py --sizes 1000 10000

For each size it writes a synthetic organization as import records (bench/generate.py --records),
then times, on the same data:

- kg: `kg import FILE --apply` in a fresh process on a new knowledge base (its time and peak memory): every record through the
  writer's checks, the SHACL shapes over the whole import, the journal (fsynced), the index and the
  git commit;
- floor: pyoxigraph `bulk_load` of the N-Quads that import journaled into a new store on disk, with
  no check at all (what the index alone costs);
- naive: rdflib parsing those N-Quads into a Dataset and writing them out as one TriG file (what a
  tool that keeps its knowledge in one RDF file pays, still without any check), in a fresh process
  cut off at --naive-cap seconds (then ">" marks a lower bound).

Hostile imports, each beside the same floor (`--copies N ...`, `--values N ...`, `--big-value`):

- copies: one entity and N records of one fact (the same subject, predicate and value), each line
  another source: the result is one fact observed N times, with N hearings and N sources; with
  `--auto-confirm`, the same again with the auto-confirm rules on (each copy asks them);
- values: one entity and N records of N values of one predicate of it (N facts that are siblings);
- big value: 250 fact records on a subject that already holds a 1 MB value, beside the same 250 on
  a subject that holds none (the import must not pay for the value it does not touch);
- onto (`--onto KB ...`): 300 new facts and 100 new entities, an alias each, imported onto a copy of
  each knowledge base given (bench/run.py --keep's kb-1000, kb-100000, kb-1000000), best of 3: an
  import's cost is not to grow with the base.

The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import measure  # noqa: E402
from generate import records  # noqa: E402


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


# Without PYTHONDONTWRITEBYTECODE: set, every cold kg process would compile kgrdf from source again
# (about 0.3 s each), which is no part of what an import costs.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def kg(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "kgrdf", *args], check=True, capture_output=True, text=True, env=ENV)


def measure_size(size: int, work: Path, cap: float) -> dict:

    seed = work / f"records-{size}.jsonl"
    records(seed, size)
    kb = work / f"kb-{size}"
    shutil.rmtree(kb, ignore_errors=True)
    kg("init", "--kb", str(kb))
    kg_time, kg_memory = measure.run(["import", str(seed), "--apply", "--kb", str(kb)])
    floor_time = floor_of(kb, work, f"kb-{size}")
    nquads = work / f"kb-{size}.nq"  # written by floor_of

    start = time.perf_counter()
    try:
        subprocess.run(
            [sys.executable, __file__, "--naive-one", str(nquads), str(work / f"naive-{size}.trig")],
            check=True,
            timeout=cap,
            capture_output=True,
        )
        naive_time, capped = time.perf_counter() - start, False
    except subprocess.TimeoutExpired:
        naive_time, capped = cap, True
    return {
        "size": size,
        "kg": kg_time,
        "memory": kg_memory,
        "floor": floor_time,
        "naive": naive_time,
        "capped": capped,
    }


def floor_of(kb: Path, work: Path, name: str) -> float:
    """pyoxigraph bulk_load of what ``kb`` holds (its N-Quads export) into a new store on disk."""
    import pyoxigraph as ox

    nquads = work / f"{name}.nq"
    kg("export", "--format", "nquads", "--output", str(nquads), "--kb", str(kb))
    store_path = work / f"floor-{name}"
    shutil.rmtree(store_path, ignore_errors=True)

    def load():
        store = ox.Store(str(store_path))
        store.bulk_load(path=str(nquads), format=ox.RdfFormat.N_QUADS)
        store.flush()

    return timed(load)


def copies(n: int, work: Path, *flags: str) -> dict:
    """An import of n copies of one fact, each from another source, on a new knowledge base."""
    return one_subject(n, work, "copies", lambda i: "flaky tests", *flags)


def values(n: int, work: Path) -> dict:
    """An import of n values of one predicate of one entity, on a new knowledge base."""
    return one_subject(n, work, "values", lambda i: f"caveat {i}")


def one_subject(n: int, work: Path, name: str, value, *flags: str) -> dict:
    """An import of n caveats of one entity, the i-th with ``value(i)``, each from another source."""
    import json

    seed = work / f"{name}-{n}.jsonl"
    with open(seed, "w", encoding="utf-8") as out:
        out.write(json.dumps({"type": "entity", "id": "repo/api", "name": "api"}) + "\n")
        for i in range(n):
            record = {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": value(i)}
            out.write(json.dumps(dict(record, sources=[f"slack:msg-{i}"])) + "\n")
    kb = work / f"kb-{name}-{n}"
    shutil.rmtree(kb, ignore_errors=True)
    kg("init", "--kb", str(kb))
    kg_time, kg_memory = measure.run(["import", str(seed), "--apply", *flags, "--kb", str(kb)])
    return {"kg": kg_time, "memory": kg_memory, "floor": floor_of(kb, work, f"{name}-{n}")}


def big_value(work: Path) -> dict:
    """250 fact records imported on a subject holding a 1 MB value, and on one holding none."""
    import json

    out = {}
    for label, size in (("with", 1_000_000), ("without", 0)):
        kb = work / f"kb-big-{label}"
        shutil.rmtree(kb, ignore_errors=True)
        kg("init", "--kb", str(kb))
        first = work / f"big-{label}.jsonl"
        records = [{"type": "entity", "id": "repo/api", "name": "api"}]
        if size:
            value = ("the deploy went through staging before the canary checks ran " * (size // 60))[:size]
            records.append(
                {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": value, "sources": ["doc:big"]}
            )
        first.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
        kg("import", str(first), "--apply", "--kb", str(kb))
        seed = work / "after-250.jsonl"
        seed.write_text(
            "\n".join(
                json.dumps(
                    {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": f"caveat {i}"}
                    | {"sources": [f"slack:m{i}"]}
                )
                for i in range(250)
            ),
            encoding="utf-8",
        )
        out[label] = timed(lambda kb=kb, seed=seed: kg("import", str(seed), "--apply", "--kb", str(kb)))
    out["floor"] = floor_of(work / "kb-big-with", work, "big-with")
    return out


def onto(kbs: list[Path], work: Path, records: int = 300, entities: int = 100, repeat: int = 3) -> list[dict]:
    """``records`` new facts and ``entities`` new entities with an alias each imported onto a copy
    of each knowledge base (say bench/run.py --keep's kb-1000 and kb-100000), best of ``repeat`` (a
    new file each time): a write's cost is not to grow with the base it is written to."""
    import json
    import random

    rows = []
    for kb in kbs:
        copy = work / f"onto-{kb.name}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(kb, copy, symlinks=True)
        times = []
        for attempt in range(repeat):
            seed = work / f"onto-{kb.name}-{attempt}.jsonl"
            with open(seed, "w", encoding="utf-8") as out:
                for i in range(entities):  # each alias checked against every name and alias there is
                    entity = {"type": "entity", "id": f"repo/onto-{attempt}-{i}", "name": f"Onto {attempt} {i}"}
                    out.write(json.dumps(dict(entity, aliases=[f"onto alias {attempt} {i}"])) + "\n")
                for i in range(records):
                    value = f"imported caveat {attempt}.{i} {random.random()}"
                    record = {
                        "type": "fact",
                        "subject": f"repo/rep-{i % 10:06d}",
                        "predicate": "caveat",
                        "value": value,
                    }
                    out.write(json.dumps(dict(record, sources=[f"slack:onto-{attempt}-{i}"])) + "\n")
            times.append(measure.run(["import", str(seed), "--apply", "--kb", str(copy)]))
        shutil.rmtree(copy, ignore_errors=True)
        best = min(times)
        rows.append({"kb": kb.name, "kg": best[0], "memory": best[1]})
    return rows


def naive(nquads: str, trig: str) -> None:
    """rdflib: parse the N-Quads into a Dataset, write one TriG file."""
    import rdflib

    dataset = rdflib.Dataset()
    dataset.parse(nquads, format="nquads")
    dataset.serialize(destination=trig, format="trig")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument(
        "--naive-cap",
        type=float,
        default=120.0,
        help="stop the naive way after this many seconds and report it as a lower bound",
    )
    parser.add_argument("--naive-one", nargs=2, metavar=("NQUADS", "TRIG"), help=argparse.SUPPRESS)
    parser.add_argument("--copies", type=int, nargs="+", default=[], help="import N copies of one fact, for each N")
    parser.add_argument(
        "--auto-confirm", action="store_true", help="--copies: each N again, with the auto-confirm rules on"
    )
    parser.add_argument("--values", type=int, nargs="+", default=[], help="import N values of one entity's predicate")
    parser.add_argument("--big-value", action="store_true", help="import 250 records beside a 1 MB value")
    parser.add_argument(
        "--onto",
        type=Path,
        nargs="+",
        default=[],
        metavar="KB",
        help="import 300 facts and 100 entities onto a copy of each KB",
    )
    args = parser.parse_args()
    if args.naive_one:
        return naive(*args.naive_one)
    with measure.work_folder(args.work, "kgrdf-import-bench-") as work:
        measure_all(args, work)


def measure_all(args, work: Path) -> None:
    print(f"kg import benchmark in {work}")
    hostile = [(f"{n:>7} copies of one fact", copies, (n, work)) for n in args.copies]
    if args.auto_confirm:
        hostile += [(f"{n:>7} copies, --auto-confirm", copies, (n, work, "--auto-confirm")) for n in args.copies]
    hostile += [(f"{n:>7} values of one subject", values, (n, work)) for n in args.values]
    for label, run, run_args in hostile:
        row = run(*run_args)
        print(
            f"{label}  kg import {row['kg']:7.1f} s, peak {row['memory']:5.0f} MB | floor (bulk_load of the result) "
            f"{row['floor']:6.2f} s | kg/floor {row['kg'] / row['floor']:5.1f}x",
            flush=True,
        )
    if args.big_value:
        row = big_value(work)
        print(
            f"    250 records beside a 1 MB value  kg import {row['with']:6.2f} s | without it {row['without']:6.2f} s "
            f"| floor (bulk_load of the result) {row['floor']:6.2f} s",
            flush=True,
        )
    if args.onto:
        rows = onto(args.onto, work)
        for row in rows:
            print(
                f"    300 facts, 100 entities onto {row['kb']:<12} kg import {row['kg']:6.2f} s, peak {row['memory']:5.0f} MB | "
                f"vs the first {row['kg'] / rows[0]['kg']:4.2f}",
                flush=True,
            )
    if hostile or args.big_value or args.onto:
        return
    for size in args.sizes:
        row = measure_size(size, work, args.naive_cap)
        bound = ">" if row["capped"] else " "
        print(
            f"{row['size']:>7} facts  kg import {row['kg']:7.1f} s, peak {row['memory']:5.0f} MB | floor (bulk_load, no checks) "
            f"{row['floor']:6.1f} s | naive (rdflib to TriG, no checks) {bound}{row['naive']:6.1f} s "
            f"| kg/floor {row['kg'] / row['floor']:4.1f}x | naive/kg {bound}{row['naive'] / row['kg']:4.1f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
