"""SHACL validation of what a write touches, before anything reaches the journal (§6, §4), and of
the whole knowledge base (kg validate).

The shapes check a *validation view*: one plain graph holding the ontology, each fact's provenance
triples and its one triple said about it (``kg:assertedSubject``, ``kg:assertedPredicate``,
``kg:assertedObject``), and the entities' descriptions. ``queries/validation-view.rq`` builds it
from the dataset: from the index here, from kg export's TriG with any other engine. A write's view holds the
facts it touches, the entities they name and, as context only, the other facts with the same subject
and predicate (for the single-valued warning), so the cost follows the size of the change; kg
validate's holds everything. kgrdf.shacl checks it against ``shapes/facts.ttl``.
"""

import re

from kgrdf import files, vocab
from kgrdf.errors import Refused
from kgrdf.shacl import Finding, readable, shapes_graph  # noqa: F401 (callers find them here too)

ASSERTED = {"s": vocab.kg("assertedSubject"), "p": vocab.kg("assertedPredicate"), "o": vocab.kg("assertedObject")}


def view_of(dataset):
    """The validation view of the dataset held in the pyoxigraph store ``dataset`` (the schema in the
    graph https://kgrdf.org/ns, each fact and its provenance in graphs of their own, the entities
    in theirs), built by queries/validation-view.rq, as a new in-memory store. Oxigraph writes the
    view out and reads it back in one go: no term passes through Python."""
    from pyoxigraph import RdfFormat, Store

    from kgrdf import queries

    constructed = dataset.query(queries.load("validation-view").text)
    store = Store()
    store.bulk_load(input=constructed.serialize(format=RdfFormat.N_TRIPLES), format=RdfFormat.N_TRIPLES)
    return store


def _add_view(dataset) -> None:
    """The view of an in-memory dataset of our own, added to its default graph, which is all the
    shapes read: validation-view.rq's CONSTRUCT run as an INSERT (half the time of writing the view
    out and reading it into another store)."""
    from kgrdf import queries

    text = queries.load("validation-view").text
    dataset.update(re.sub(r"^CONSTRUCT\s*\{", "INSERT {", text, count=1, flags=re.M))


def view(fact_quads, entity_quads, ontology=None):
    """The validation view of some facts' quads (assertion and provenance graphs), entities' quads
    and the ontology (the schema's, by default) in the default graph of an in-memory Oxigraph store.
    A quad in the default graph is taken as already in the view's form (the examples under
    tests/shapes are written so)."""
    from pyoxigraph import NamedNode, Quad, Store

    from kgrdf import schema

    ontology = schema.quads() if ontology is None else ontology
    schema_graph = NamedNode(schema.SCHEMA_GRAPH)
    store = Store()
    store.extend(Quad(q.subject, q.predicate, q.object, schema_graph) for q in ontology)
    store.extend([*fact_quads, *entity_quads])
    _add_view(store)
    return store


def view_from_lines(fact_lines, entity_lines, ontology):
    """The same view as :func:`view`, from the journal's N-Quads lines, parsed by Oxigraph in one go:
    what a large write's checker builds for each chunk of it. validation-view.rq's rule, made on the
    lines themselves, which the checker knows to be a fact's triple or its provenance: twice as fast
    as loading them and running the query, a second and a half of an import of 10k facts (a test
    checks that both give the same view)."""
    from pyoxigraph import DefaultGraph, Quad, RdfFormat, Store

    asserted = {k: f"<{v.value}>" for k, v in ASSERTED.items()}
    out = []
    for line in fact_lines:
        triple, _, graph = line.rpartition(" ")
        if graph.endswith("/provenance>"):
            out.append(triple)
        else:
            s, p, o = triple.split(" ", 2)
            out += [f"{graph} {asserted['s']} {s}", f"{graph} {asserted['p']} {p}", f"{graph} {asserted['o']} {o}"]
    out += [line.rpartition(" ")[0] for line in entity_lines]
    store = Store()
    store.load(input=(" .\n".join(out) + " .\n").encode("utf-8"), format=RdfFormat.N_TRIPLES)
    default = DefaultGraph()
    store.extend(Quad(q.subject, q.predicate, q.object, default) for q in ontology)
    return store


def check_lines(fact_lines, entity_lines, ontology_lines) -> list[Finding]:
    """The violations in a view made of N-Quads lines: what a large write's worker runs on each
    chunk of it."""
    from pyoxigraph import RdfFormat, parse

    from kgrdf import shacl

    ontology = list(parse(input=(" .\n".join(ontology_lines) + " .\n").encode("utf-8"), format=RdfFormat.N_QUADS))
    data = view_from_lines(fact_lines, entity_lines, ontology)
    return shacl.check(data, shapes_graph(), severities=("violation",), threads=2)


def check(data, focus: list[str], kb_path=None) -> list[Finding]:
    """Validate the view ``data`` on the ``focus`` nodes (and the sources of the facts among them);
    every finding, violations and warnings. The same set-based evaluator as kg validate's
    (kgrdf.shacl): on a write's small view it takes milliseconds, and a write, an import and kg
    validate cannot disagree. With ``kb_path``, the compiled shapes are kept in its cache/."""
    from kgrdf import shacl

    if not focus:
        return []
    # A fact's sources are checked with it.
    derived = vocab.term("prov:wasDerivedFrom")
    nodes = set(focus) | {
        q.object.value
        for f in focus
        if "/fact/" in f
        for q in data.quads_for_pattern(vocab.NamedNode(f), derived, None)
    }
    return shacl.check(data, shacl.compiled(kb_path=kb_path), threads=1, focus=nodes)


def refuse_violations(findings: list[Finding]) -> list[Finding]:
    """Raise Refused with the first violation's message; return the warnings."""
    violations = [f for f in findings if f.severity == "violation"]
    if violations:
        first = violations[0]
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        # A refused fact's id was never given out: name only an entity.
        where = "" if "/fact/" in first.focus else f"{vocab.id_of(first.focus)}: "
        raise Refused(f"{where}{first.message}{more}", findings=[f.as_json() for f in violations])
    return [f for f in findings if f.severity == "warning"]


# --- the whole knowledge base ---------------------------------------------------------------------


def validate_all(session, progress=None) -> list[Finding]:
    """Every fact and entity against the shapes: the whole validation view (of every perspective)
    built by queries/validation-view.rq on the index, in one in-memory Oxigraph store, each
    constraint one set-based query (see kgrdf.shacl)."""
    from kgrdf import shacl

    data = view_of(session.backend.store)
    if progress:
        progress(sum(1 for _ in data.quads_for_pattern(None, ASSERTED["p"], None)))  # one a fact
    return shacl.check(data, shapes_graph())


def check_store(kb) -> list[dict]:
    """The store's own checks: each finding is {"check", "message"}; any of them means damage."""
    import subprocess

    from kgrdf import journal as journal_mod
    from kgrdf.errors import Damaged
    from kgrdf.schema import SCHEMA_GRAPH

    problems = []
    view_position = kb.view()
    try:
        entries, torn = kb.journal.read_after(journal_mod.Position())
    except Damaged as exc:
        return [{"check": "journal parses", "message": exc.message}]
    for piece in torn:
        problems.append(
            {
                "check": "torn tail",
                "message": f"{piece.segment.parent.name}/{piece.segment.name} ends with {piece.size} bytes that are "
                f"not a whole transaction",
            }
        )
    last = entries[-1][1] if entries else journal_mod.Position()
    if (last.seq, last.digest) != (view_position.seq, view_position.digest):
        problems.append(
            {
                "check": "journal position",
                "message": f"view.json is at transaction {view_position.seq}, the journal ends at {last.seq}"
                + ("" if last.seq != view_position.seq else " with another digest (edited outside kgrdf?)"),
            }
        )
    backend = kb.open_index(read_only=True)
    try:
        if backend is None:
            problems.append({"check": "index", "message": "there is no index (the next command rebuilds it)"})
        else:
            at = backend.position()
            if at != (view_position.seq, view_position.digest):
                problems.append(
                    {
                        "check": "index position",
                        "message": f"the index reflects transaction {at[0] if at else 'none'}, view.json {view_position.seq}",
                    }
                )
            # The schema graph comes from ontology/, not the journal: compare the data only.
            # Each of the index's quads is struck off the rebuild's as it is read: no second set of them.
            expected = journal_mod.fold(tx for tx, _ in entries)
            del entries
            more = 0
            for quad in backend.quads():
                if quad.graph_name.value != SCHEMA_GRAPH:
                    line = str(quad)
                    if line in expected:
                        expected.discard(line)
                    else:
                        more += 1
            if more or expected:
                problems.append(
                    {
                        "check": "index equals a rebuild",
                        "message": f"the index differs from the journal's rebuild: {more} quads more, "
                        f"{len(expected)} fewer",
                    }
                )
    finally:
        kb.close_index(backend)
    if (kb.path / ".git").exists():
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=kb.path, capture_output=True, text=True
        ).stdout.split("\n")
        edited = [line[3:] for line in status if line.strip()]
        if edited:
            problems.append(
                {"check": "edited outside kgrdf", "message": "changed since the last commit: " + ", ".join(edited[:5])}
            )
    for name in ("view.json", "format.json", "replica.json"):
        try:
            files.read_json(kb.path / name)
        except Damaged as exc:
            problems.append({"check": "files parse", "message": exc.message})
    return problems
