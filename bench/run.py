"""Benchmark: kg end to end beside the naive way and the floor, measured side by side in one run.

    python bench/run.py                       # 1k, 10k and 100k facts (make bench)
    python bench/run.py --sizes 1000 10000    # smaller
    python bench/run.py --sizes 1000 10000 100000 1000000 --keep /tmp/kgrdf-bench   # the 1M table

--keep DIR keeps each knowledge base as DIR/kb-<size> and reuses it on the next run (it is generated
only when it is not there): a million facts took 13 minutes to generate on two shared cores (10
minutes of processor), 0.63 GB of memory at peak, and 8.2 GB of disk (journal 0.2 GB, index 7.3 GB
as its many writes left it, 4.3 GB once rebuilt; git 0.18 GB). Each run adds its few proposals to
a kept base.

For each size it generates a knowledge base (bench/generate.py), then times, for one entity:

- kg: the CLI in a fresh process (`kg lookup`, `kg facts`, `kg neighbors --hops 2`, `kg context --for`,
  `kg propose`), the best of --repeat runs;
- floor: the same named SPARQL queries on pyoxigraph in one warm process (best of --repeat); and,
  for the reads, the same once in a fresh process (bench/floor.py: Python, pyoxigraph, the index
  opened, the queries), timed as kg is: the cold floor, which grows with the index's files (opening
  them, a cold block cache) where the answers do not. The summary then gives kg's own time (kg less
  its cold floor) at each size: what kgrdf adds, which is what must not grow; for
  propose, the reads of entity.rq and subject-predicate.rq on the index, then the quads kg propose
  wrote (read back from its journal patches) inserted into a new store on disk and flushed;
- naive: rdflib parsing a TriG export of the same data, then the same queries (what a tool that keeps
  its knowledge in one RDF file pays on every command); for propose, parse, add the fact's quads and
  write the file back.

The entity each read asks about is, at the smallest size, the first repo (lookup: the --person);
at each larger size, the entity of the same type (one of the first ten) whose answer is as large
as there (the facts listed, or the nodes neighbors reaches), else the nearest: the generator draws
links at random, so one entity can have twice the links at one size it has at another, and a read's
cost is to grow with its answer, not with the knowledge base. The table names each entity and its
answer; --same-entity asks about the same entities at every size.

It prints one table: per command and size, kg beside its floor and the naive way, and kg's time at
that size over its time at the smallest size. The targets (a write's and a read's cost do not grow
with size): that ratio at most 1.2; lookup, neighbors and context at most 0.25 s, propose 0.5 s.
A row that misses one is marked "!". The naive way is skipped above --naive-max facts.

The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from floor import floor_runner, is_anchored  # noqa: E402
from generate import generate  # noqa: E402
from measure import best_of, work_folder  # noqa: E402

from kgrdf import clock, queries, vocab  # noqa: E402
from kgrdf.kb import KnowledgeBase  # noqa: E402

KG = [sys.executable, "-m", "kgrdf"]
# Each kg process is timed as a user runs it: with its bytecode cached. Without this, a shell that sets
# PYTHONDONTWRITEBYTECODE makes every process compile kgrdf from source (about 0.3 s).
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "KGRDF_HOME")}
TARGET_RATIO = 1.2  # kg's time at a size over its time at the smallest size
TARGET_SECONDS = {"lookup": 0.25, "neighbors": 0.25, "context": 0.25, "propose": 0.5}


def cli(args: list[str]) -> None:
    result = subprocess.run(KG + args, capture_output=True, text=True, env=ENV)
    if result.returncode != 0:
        raise RuntimeError(f"kg {' '.join(args)} failed: {result.stderr}")


def cold_floor(path: Path, command: str, entity: str) -> None:
    """bench/floor.py's queries of one command in a fresh process (see the module's notes)."""
    subprocess.run([sys.executable, str(HERE / "floor.py"), str(path), command, entity], check=True, env=ENV)


def pick(person: str = "person/per-000001") -> dict:
    """Entities every generated size has (see bench/generate.py for the naming)."""
    return {"person": person, "repo": "repo/rep-000001", "hub": "repo/rep-000001"}


CANDIDATES = 10  # the first entities of a type, which every generated size has


def answer_size(args: list[str], kb_args: list[str]) -> int | None:
    """How large a read command's answer is (the facts it lists, or the nodes neighbors reaches);
    None when it fails (an entity forgotten in a kept knowledge base)."""
    result = subprocess.run(KG + args + ["--json"] + kb_args, capture_output=True, text=True, env=ENV)
    if result.returncode != 0:
        return None
    doc = json.loads(result.stdout)
    if "nodes" in doc:
        return len(doc["nodes"])
    return len(doc.get("facts") or []) + len(doc.get("backlinks") or [])


def matched(args: list[str], entity: str, want: int, kb_args: list[str]) -> tuple[list[str], str, int | None]:
    """The command asked of the entity of ``entity``'s type whose answer is as large as ``want`` (the
    answer at the smallest size), or the nearest: a random generator gives one entity twice the links
    at one size that it has at another, and a read's cost is to grow with its answer, not with the
    knowledge base."""
    prefix = entity.rsplit("-", 1)[0]
    best = (args, entity, answer_size(args, kb_args))
    for n in range(CANDIDATES):
        other = f"{prefix}-{n:06d}"
        if best[2] == want or other == entity:
            continue
        asked = [other if a == entity else a for a in args]
        size = answer_size(asked, kb_args)
        if size is not None and (best[2] is None or abs(size - want) < abs(best[2] - want)):
            best = (asked, other, size)
    return best


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
        anchored = {row["peer"] for row in rows if is_anchored(row)}
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
            env=ENV,
        )
    except subprocess.TimeoutExpired:
        return cap, True
    return time.perf_counter() - start, False


def naive_main(trig: str, command: str, entity: str) -> None:
    load, naive = naive_runner(Path(trig))
    naive[command](load(), entity)


def knowledge_base(work: Path, size: int, keep: bool) -> Path:
    """DIR/kb-<size>: generated, or with ``keep`` the one a run before left there. A base is
    generated under another name and renamed when whole, so a run cut short leaves none to reuse."""
    path = work / f"kb-{size}"
    if keep and path.exists():
        print(f"\n== {size} facts: reusing {path}", flush=True)
        return path
    part = work / f"kb-{size}.part"
    shutil.rmtree(part, ignore_errors=True)
    shutil.rmtree(path, ignore_errors=True)
    print(f"\n== {size} facts: generating ...", flush=True)
    start = time.perf_counter()
    generate(part, size)
    part.rename(path)
    print(f"   generated in {time.perf_counter() - start:.1f} s", flush=True)
    return path


def warm(path: Path) -> None:
    """Read the index's files once, so that every size is measured with its index in the page cache,
    as a knowledge base in use has it: a million facts' index is 7 GB, which the work of a run before
    (another size, a copy) can push out, and then the first reads of kg and of the floor alike wait
    on the disk."""
    for file in sorted((path / "index").rglob("*")):
        if file.is_file():
            with open(file, "rb") as data:
                while data.read(1 << 24):
                    pass


def propose_floor(path: Path, store, entity_id: str, scratch: Path):
    """What pyoxigraph alone does for kg propose: the reads of entity.rq and subject-predicate.rq on
    the index, then the quads the last kg propose wrote (from its journal patches) inserted into a
    new store on disk and flushed. Returns a function that does it once."""
    import pyoxigraph as ox

    view = json.loads((path / "view.json").read_text(encoding="utf-8"))
    patches = []  # the last transaction's: its private patch, if it has one, and its shared patch
    journal = KnowledgeBase.open(path).journal
    if view.get("local"):
        local = journal.local.patch_bytes(journal.local.dir / view["local"]).decode("utf-8")
        if f'H seq "{view["seq"]}" .' in local.splitlines():
            patches.append(local)
    if view.get("shared") and (not patches or "\nH shared <" in patches[0]):
        patches.append(journal.shared.patch_bytes(journal.shared.dir / view["shared"]).decode("utf-8"))
    assert any('H command "propose"' in patch for patch in patches), "the last transaction is not kg propose"
    lines = [line[2:] for patch in patches for line in patch.splitlines() if line.startswith("A ")]
    quads = list(ox.parse("\n".join(lines) + "\n", format=ox.RdfFormat.N_QUADS))
    subject = vocab.entity_iri("main", entity_id)
    predicate = ox.NamedNode(vocab.KG + "caveat")
    entity, by_predicate = queries.load("entity").text, queries.load("subject-predicate").text
    runs = iter(range(10**6))

    def run():
        list(store.query(entity, substitutions={ox.Variable("entity"): subject}))
        list(
            store.query(
                by_predicate, substitutions={ox.Variable("subject"): subject, ox.Variable("predicate"): predicate}
            )
        )
        target = ox.Store(str(scratch / f"store-{next(runs)}"))
        target.extend(quads)
        target.flush()

    return run, len(quads)


def measure(
    size: int,
    repeat: int,
    naive_max: int,
    naive_cap: float,
    work: Path,
    keep: bool,
    person: str,
    answers: dict[str, int] | None = None,
) -> list[dict]:
    """The rows of one size. With ``answers`` (each read's answer size at the smallest size), each
    read asks about the entity whose answer is as large (:func:`matched`)."""
    path = knowledge_base(work, size, keep)
    targets = pick(person)
    kb_args = ["--kb", str(path)]
    commands = {  # name: (the kg command, the entity the floor and the naive way ask about)
        "lookup": (["lookup", targets["person"]], targets["person"]),
        "facts": (["facts", targets["repo"]], targets["repo"]),
        "neighbors": (["neighbors", targets["hub"], "--hops", "2"], targets["hub"]),
        "context": (["context", "--for", targets["repo"]], targets["repo"]),
    }
    rows = []
    warm(path)
    cli(["stats"] + kb_args)  # and the index once
    asked = {}
    for name, (args, entity) in commands.items():
        if answers is None:
            asked[name] = (args, entity, answer_size(args, kb_args))
        else:
            asked[name] = matched(args, entity, answers[name], kb_args)
    store, floor = floor_runner(path)
    for name, (args, entity, answer) in asked.items():
        kg_time = best_of(repeat, lambda args=args: cli(args + kb_args))
        floor_time = best_of(repeat, lambda name=name, entity=entity: floor[name](entity))
        cold = best_of(repeat, lambda name=name, entity=entity: cold_floor(path, name, entity))
        rows.append(
            {
                "size": size,
                "command": name,
                "kg": kg_time,
                "floor": floor_time,
                "cold_floor": cold,
                "entity": entity,
                "answer": answer,
            }
        )
    del store
    counter = iter(range(10**6))
    propose_time = best_of(
        repeat,
        lambda: cli(
            ["propose", targets["repo"], "caveat", "--value", f"bench caveat {next(counter)}", "--source", "pr:bench"]
            + kb_args
        ),
    )
    import pyoxigraph as ox

    store = ox.Store.read_only(str(path / "index"))
    scratch = Path(tempfile.mkdtemp(prefix="kgrdf-bench-floor-"))
    try:
        write, _ = propose_floor(path, store, targets["repo"], scratch)
        propose_floor_time = best_of(repeat, write)
    finally:
        del store
        shutil.rmtree(scratch, ignore_errors=True)
    rows.append({"size": size, "command": "propose", "kg": propose_time, "floor": propose_floor_time})

    if size <= naive_max:
        trig = work / f"kb-{size}.trig"
        with KnowledgeBase.open(path).reading() as session:
            trig.write_bytes(session.export("trig"))
        for row in rows:
            entity = row.get("entity") or targets["repo"]
            row["naive"], row["naive_capped"] = naive_once(trig, row["command"], entity, naive_cap)
        trig.unlink()
        Path(str(trig) + ".out").unlink(missing_ok=True)  # what the naive propose wrote
    for row in rows:
        print(row_text(row), flush=True)
    return rows


def label(size: int) -> str:
    for unit, name in ((10**6, "M"), (10**3, "k")):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{name}"
    return str(size)


HEADER = (
    f"{'command':<10} {'facts':>5} {'kg':>8} {'floor':>10} {'kg/floor':>8} {'naive':>10} {'naive/kg':>9} "
    f"{'vs smallest':>14}   asked about (answer)"
)


def row_text(row: dict, base: dict | None = None) -> str:
    """One line of the table; ``base`` is the same command's row at the smallest size."""
    floor = f"{row['floor'] * 1000:7.1f} ms" if row.get("floor") is not None else f"{'-':>10}"
    bound = ">" if row.get("naive_capped") else " "
    naive = f"{bound}{row['naive']:7.2f} s" if row.get("naive") is not None else f"{'-':>10}"
    ratio_floor = f"{row['kg'] / row['floor']:7.1f}x" if row.get("floor") else f"{'-':>8}"
    ratio_naive = f"{bound}{row['naive'] / row['kg']:7.0f}x" if row.get("naive") else f"{'-':>9}"
    text = (
        f"{row['command']:<10} {label(row['size']):>5} {row['kg']:6.3f} s {floor} {ratio_floor} {naive} {ratio_naive}"
    )
    asked = f"   {row['entity']} ({row['answer']})" if row.get("entity") else ""
    if base is None or base is row:
        return text + f"{'':>14}" + asked + missed(row, None)
    ratio = row["kg"] / base["kg"]
    return text + f" {label(row['size']) + '/' + label(base['size']):>8} {ratio:4.2f}" + asked + missed(row, ratio)


def missed(row: dict, ratio: float | None) -> str:
    """The targets this row misses, marked "!"."""
    out = []
    limit = TARGET_SECONDS.get(row["command"])
    if limit is not None and row["kg"] > limit:
        out.append(f"> {limit} s")
    if ratio is not None and ratio > TARGET_RATIO:
        out.append(f"ratio > {TARGET_RATIO}")
    return f"  ! {', '.join(out)}" if out else ""


def print_table(table: list[dict]) -> None:
    """One table: each command's rows by size, with its time over that at the smallest size; then
    each read's cold floor and kg's own time (kg less that floor) by size."""
    print(HEADER)
    by_command = {}
    for command in dict.fromkeys(row["command"] for row in table):
        rows = sorted((row for row in table if row["command"] == command), key=lambda row: row["size"])
        by_command[command] = rows
        for row in rows:
            print(row_text(row, rows[0]))
    cold = {command: rows for command, rows in by_command.items() if rows[0].get("cold_floor") is not None}
    if not cold:
        return
    print(
        "\n== the reads beside their cold floor (the same queries in a fresh process): kg's own time is kg "
        "less the cold floor"
    )
    print(f"{'command':<10} {'facts':>5} {'kg':>8} {'cold floor':>11} {'kg own':>9} {'own vs smallest':>16}")
    for command, rows in cold.items():
        base = rows[0]["kg"] - rows[0]["cold_floor"]
        for row in rows:
            own = row["kg"] - row["cold_floor"]
            print(
                f"{command:<10} {label(row['size']):>5} {row['kg']:6.3f} s {row['cold_floor']:9.3f} s "
                f"{own:7.3f} s {own / base:15.2f}"
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
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        default=None,
        help="keep the knowledge bases in DIR (kb-<size>) and reuse those a run before left there",
    )
    parser.add_argument(
        "--person",
        default="person/per-000001",
        help="the person kg lookup asks about (another, in a kept knowledge base where that one was forgotten)",
    )
    parser.add_argument(
        "--same-entity",
        action="store_true",
        help="ask every size about the same entities, whatever their answers (default: at each size, "
        "the entity whose answer is as large as at the smallest size)",
    )
    args = parser.parse_args()
    if args.naive_one:
        return naive_main(*args.naive_one)
    os.environ.pop("KGRDF_HOME", None)
    with work_folder(args.keep or args.work, "kgrdf-bench-") as work:
        print(f"kgrdf benchmark in {work} (best of {args.repeat}; ratios are measured side by side)")
        table, answers = [], None
        for size in args.sizes:
            rows = measure(
                size, args.repeat, args.naive_max, args.naive_cap, work, args.keep is not None, args.person, answers
            )
            table += rows
            if answers is None and not args.same_entity:
                answers = {row["command"]: row["answer"] for row in rows if row.get("answer") is not None}
        print(
            f"\n== summary: cold kg (a fresh process, best of {args.repeat}) beside its floor; targets: "
            f"the ratio to the smallest size <= {TARGET_RATIO}, "
            + ", ".join(f"{name} <= {limit} s" for name, limit in TARGET_SECONDS.items())
        )
        print_table(table)


if __name__ == "__main__":
    main()
