"""The floor of bench/run.py's reads: the same named SPARQL queries as each kg command, on pyoxigraph
alone, with no kgrdf between (no CLI, no checks, no rendering).

bench/run.py runs them in its own warm process (the store open, its caches filled), and each once in
a fresh process, timed from outside as kg is (`python bench/floor.py KB COMMAND ENTITY`: Python
started, pyoxigraph imported, the index opened read-only, the queries run). The warm floor is what
the queries cost; the cold one is what any process that answers them from the index pays, which
grows with the index's files even where the queries' answers do not.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kgrdf import clock, queries, vocab  # noqa: E402


def floor_runner(path: Path):
    """The same named queries as the commands, on pyoxigraph in this warm process."""
    import pyoxigraph as ox

    store = ox.Store.read_only(str(path / "index"))
    now = vocab.datetime_literal(clock.iso(clock.now()))

    def run(name, **bindings):
        return list(store.query(queries.bind(queries.load(name).text, bindings)))

    # kg lookup and kg facts read their listed facts' sources and hearings with fact-heard.rq (the
    # facts given as values, 500 a query), as kg context reads its kept facts' with fact-sources.rq
    def heard(facts):
        facts = list(facts)
        for at in range(0, len(facts), 500):
            run("fact-heard", fact=facts[at : at + 500])

    def lookup(entity_id):
        iri = vocab.entity_iri("main", entity_id)
        run("entity", entity=iri)
        heard(dict.fromkeys(row["fact"] for row in run("lookup", entity=iri, now=now)))

    def facts(entity_id):
        iri = vocab.entity_iri("main", entity_id)
        run("entity", entity=iri)
        heard(dict.fromkeys(row["fact"] for row in run("facts", subject=iri, validAt=now, knownAt=now)))

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
        anchored = {row["peer"] for row in rows if is_anchored(row)}
        for node in anchored:
            rows += [row for row in run("context-facts", entity=node, now=now) if row["direction"].value == "out"]
        for row in rows:
            run("fact-sources", fact=row["fact"])

    return store, {"lookup": lookup, "facts": facts, "neighbors": neighbors, "context": context}


def is_anchored(row) -> bool:
    """Whether a row of context-facts.rq leads to an entity anchored to the packed one."""
    anchoring = row["anchoring"].value if row["anchoring"] is not None else None
    return (anchoring, row["direction"].value) in (("container", "out"), ("anchor", "in"))


if __name__ == "__main__":
    path, command, entity = sys.argv[1:]
    floor_runner(Path(path))[1][command](entity)
