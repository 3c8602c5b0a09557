"""The shapes of ``shapes/facts.ttl`` as set-based SPARQL on Oxigraph: kg validate, an import and a write.

A SHACL engine checks one focus node at a time, which is far too slow for a whole knowledge base
(100k facts). Here each constraint becomes one SPARQL query that finds every violating node at once.
Only the SHACL features the shapes use are translated: class, subjects-of and objects-of targets;
minCount, maxCount, in, datatype, nodeKind IRI, class, minLength, minInclusive, lessThanOrEquals,
disjoint; and SPARQL-based constraints on node shapes, with SHACL's pre-binding of $this,
$currentShape and $shapesGraph (see :func:`prebound`). A test checks that this and pySHACL report
the same findings on every example under tests/shapes/.
"""

import functools
import re
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from kgrdf import vocab


@dataclass(frozen=True)
class Finding:
    focus: str
    message: str
    severity: str  # "violation" or "warning"
    shape: str | None = None

    def as_json(self) -> dict:
        return {"focus": vocab.id_of(self.focus), "message": self.message, "severity": self.severity}

    @property
    def fact(self) -> str:
        """The fact its focus is, or is a part of (a source, a hearing, an update); else the focus."""
        return self.focus.split("/source/")[0].split("/hearing/")[0].split("/update/")[0]


@cache
def shapes_graph(name: str = "facts.ttl"):
    """The shapes of ``shapes/<name>``: facts.ttl for writes, schema.ttl for schema extensions."""
    import rdflib

    from kgrdf.resources import data_dir

    return rdflib.Graph().parse(data_dir("shapes") / name, format="turtle")


_KB_IRI = re.compile(r"https://kgrdf\.org/kb/[^\s/]+/(?:fact/)?([\w/.-]+)")


def readable(message: str) -> str:
    """A shape's message with the IRIs it names shown as ids (f-3k9x2a, repo/web-app)."""
    return _KB_IRI.sub(lambda m: m.group(1), message)


SH = "http://www.w3.org/ns/shacl#"
# The named graph $shapesGraph is pre-bound to: check() loads the shapes there when a query reads it.
SHAPES_GRAPH = "https://kgrdf.org/ns#shapesGraph"
PREFIXES = """PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""


def _n3(term) -> str:
    import rdflib

    if isinstance(term, rdflib.URIRef):
        return f"<{term}>"
    return term.n3()


def _targets(shapes, shape) -> list[str]:
    import rdflib

    sh = rdflib.Namespace(SH)
    out = [f"?this rdf:type/rdfs:subClassOf* {_n3(c)} ." for c in shapes.objects(shape, sh.targetClass)]
    out += [f"?this {_n3(p)} ?targetValue ." for p in shapes.objects(shape, sh.targetSubjectsOf)]
    out += [f"?targetSubject {_n3(p)} ?this ." for p in shapes.objects(shape, sh.targetObjectsOf)]
    return out


def _property_checks(shapes, prop) -> tuple[str, list[str], list[str]]:
    """(path, conditions on the number of values, conditions on one value ``?v``) of one property
    shape's core constraints."""
    import rdflib

    sh = rdflib.Namespace(SH)
    path = _n3(shapes.value(prop, sh.path))
    counts = [f"COUNT(?v) < {int(count)}" for count in shapes.objects(prop, sh.minCount)]
    counts += [f"COUNT(?v) > {int(count)}" for count in shapes.objects(prop, sh.maxCount)]
    values = []
    for items in shapes.objects(prop, sh["in"]):
        members = ", ".join(_n3(m) for m in rdflib.collection.Collection(shapes, items))
        values.append(f"?v NOT IN ({members})")
    values += [f"!isLiteral(?v) || DATATYPE(?v) != {_n3(t)}" for t in shapes.objects(prop, sh.datatype)]
    values += ["!isIRI(?v)" for kind in shapes.objects(prop, sh.nodeKind) if kind == sh.IRI]
    values += [f"NOT EXISTS {{ ?v rdf:type/rdfs:subClassOf* {_n3(c)} }}" for c in shapes.objects(prop, sh["class"])]
    values += [f"STRLEN(STR(?v)) < {int(n)}" for n in shapes.objects(prop, sh.minLength)]
    values += [f"?v < {_n3(low)}" for low in shapes.objects(prop, sh.minInclusive)]
    values += [
        f"EXISTS {{ ?this {_n3(o)} ?w FILTER (!(?v <= ?w)) }}" for o in shapes.objects(prop, sh.lessThanOrEquals)
    ]
    values += [f"EXISTS {{ ?this {_n3(o)} ?v }}" for o in shapes.objects(prop, sh.disjoint)]
    return path, counts, values


def _property_queries(shapes, prop, target: str, split: bool = False):
    """(query, message) for one property shape: one query for all its core constraints, which share
    its message. Each focus node's values are gathered once (an OPTIONAL, grouped by the node) and
    the node fails when a count is out of bounds or any value fails a value condition; a condition
    that raises an error on a value does not fail it, as a FILTER that raises one keeps no row. With
    ``split``, one query a constraint instead: the same findings, at three times the cost over an
    import (kept to test the one against the other)."""
    import rdflib

    path, counts, values = _property_checks(shapes, prop)
    message = str(shapes.value(prop, rdflib.Namespace(SH).message) or "does not conform")
    if split:
        value = f"{{ {target} }} ?this {path} ?v ."
        bodies = [
            f"{{ SELECT ?this (COUNT(?v) AS ?n) WHERE {{ {{ {target} }} OPTIONAL {{ ?this {path} ?v }} }} "
            f"GROUP BY ?this }} FILTER (?n{count.removeprefix('COUNT(?v)')})"
            for count in counts
        ]
        bodies += [f"{value} FILTER ({condition})" for condition in values]
        return [(f"{PREFIXES}SELECT DISTINCT ?this WHERE {{ {body} }}", message) for body in bodies]
    if not counts and not values:
        return []
    failing = list(counts)
    if values:
        any_fails = " || ".join(f"COALESCE({condition}, false)" for condition in values)
        failing.append(f"MAX(IF(BOUND(?v) && ({any_fails}), 1, 0)) = 1")
    query = (
        f"{PREFIXES}SELECT ?this WHERE {{ {{ {target} }} OPTIONAL {{ ?this {path} ?v }} }} "
        f"GROUP BY ?this HAVING ({' || '.join(failing)})"
    )
    return [(query, message)]


def _sparql_queries(shapes, shape, constraint, target: str):
    import rdflib

    sh = rdflib.Namespace(SH)
    prefixes = PREFIXES
    for decl_owner in shapes.objects(constraint, sh.prefixes):
        for decl in shapes.objects(decl_owner, sh.declare):
            prefixes += f"PREFIX {shapes.value(decl, sh.prefix)}: <{shapes.value(decl, sh.namespace)}>\n"
    select = str(shapes.value(constraint, sh.select))
    # $currentShape and $shapesGraph are the same for every focus node: pre-bound in the text.
    constants = {"shapesGraph": f"<{SHAPES_GRAPH}>"}
    if isinstance(shape, rdflib.URIRef):
        constants["currentShape"] = _n3(shape)
    return [
        (
            prefixes + prebound(select, target, constants),
            str(shapes.value(constraint, sh.message) or "does not conform"),
        )
    ]


# --- SPARQL-based constraints: SHACL's pre-binding, for every focus node at once ----------------------


class Unsupported(ValueError):
    """A shape's SPARQL that SHACL does not allow (§5.3.1.1), or that this evaluator cannot pre-bind."""


_TOKEN = re.compile(
    r'''
    (?P<string>"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^'\\]|\\.|'(?!''))*\'\'\'|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
  | (?P<comment>\#[^\n]*)
  | (?P<var>[?$](?:[A-Za-z0-9_]|[^\x00-\xb6])+)  # (past ASCII: not below U+00B7, quick to compile)
  | (?P<name>[A-Za-z_][\w.-]*:[\w.:%-]*|:[\w.:%-]*|[A-Za-z_]\w*)
  | (?P<space>\s+)
  | (?P<other>.)
''',
    re.VERBOSE | re.DOTALL,
)


_IRI_TEXT = re.compile(r'[^<>"{}|^`\\\x00-\x20]+')  # what may stand between < and > in a query


class _Group:
    """A group graph pattern ``{ ... }`` of a query, as far as $this is concerned."""

    def __init__(self, start: int, parent: "_Group | None", subquery: bool = False):
        self.start = start  # the offset just after its "{"
        self.end = start  # the offset of its "}"
        self.parent = parent
        self.subquery = subquery  # the "{ SELECT ... }" around a subquery: not a pattern of its own
        self.children: list[_Group] = []
        self.mentions = False  # $this occurs in it or in a group inside it
        self.bound_at: int | None = None  # where a triple pattern (or subquery) of its own first binds $this
        self.used_at: int | None = None  # where an expression of its own (BIND) first reads $this
        self.parens: list[str] = []  # for each "(" open at its own level, the keyword its expression began with
        self.keyword = ""  # FILTER or BIND once read at its own level, until its expression closes
        self.projects = False  # a subquery: whether it returns $this
        self.in_projection = True  # a subquery: still between SELECT and its WHERE


def _parse_groups(text: str, constants=()) -> tuple[_Group, list[tuple[int, int]]]:
    """The tree of group patterns of a SELECT query, each noting how it meets $this, and where the
    variables named in ``constants`` occur ((start, end) offsets). Raises Unsupported for what SHACL
    forbids in a query that has pre-bound variables (§5.3.1.1)."""
    top = _Group(0, None, subquery=True)
    group, previous, spans = top, "", []
    for match in _TOKEN.finditer(text):
        kind, token = match.lastgroup, match.group()
        if kind in ("space", "comment", "string", "iri"):
            if kind in ("string", "iri"):
                previous = token
            continue
        word = token.upper() if kind == "name" else token
        if word in ("VALUES", "SERVICE"):
            raise Unsupported(f"SHACL does not allow {word} in a SPARQL constraint")
        if kind == "var" and (token[1:] == "this" or token[1:] in constants) and previous.upper() == "AS":
            raise Unsupported(f"a SPARQL constraint may not bind ${token[1:]} (AS ${token[1:]}): it is pre-bound")
        if kind == "var" and token[1:] in constants:
            spans.append((match.start(), match.end()))
        elif kind == "var" and token[1:] == "this":
            node = group
            while node is not None and not node.mentions:
                node.mentions = True
                node = node.parent
            if group.subquery:
                if group.in_projection and not group.parens:
                    group.projects = True
            elif not group.parens:
                if group.bound_at is None:
                    group.bound_at = match.start()
            elif group.parens[0] != "FILTER" and group.used_at is None:
                group.used_at = match.start()  # in a BIND, or an expression in a triple pattern
        elif word in ("FILTER", "BIND") and not group.parens:
            group.keyword = word
        elif token == "*" and group.subquery and group.in_projection and not group.parens:
            group.projects = True
        elif word == "WHERE" and group.subquery:
            group.in_projection = False
        elif token == "(":
            group.parens.append(group.parens[0] if group.parens else group.keyword or previous.upper())
        elif token == ")" and group.parens:
            group.parens.pop()
            if not group.parens:
                group.keyword = ""
        elif token == "{":
            if group.subquery:
                group.in_projection = False
            rest = text[match.end() :].lstrip()
            child = _Group(match.end(), group, subquery=rest[:6].upper() == "SELECT" and not rest[6:7].isalnum())
            group.children.append(child)
            if not group.parens:
                group.keyword = ""  # FILTER NOT EXISTS { ... }: its expression is the group
            group = child
        elif token == "}":
            if group.parent is None:
                raise Unsupported("the query's braces do not match")
            if group.subquery and group.mentions and not group.projects:
                raise Unsupported("a subquery that uses $this must return it (SELECT $this ...), as SHACL asks")
            group.end = match.start()
            parent = group.parent
            if group.subquery and group.projects and not parent.parens and parent.bound_at is None:
                parent.bound_at = group.start  # a subquery returning $this binds it as a triple pattern does
            group = parent
        previous = token
    if group is not top:
        raise Unsupported("the query's braces do not match")
    if not top.children:
        raise Unsupported("the query has no WHERE clause")
    if not top.projects:
        raise Unsupported("a SPARQL constraint must return $this (SELECT $this ...)")
    return top, spans


def prebound(select: str, target: str, constants: dict[str, str] | None = None) -> str:
    """The SELECT of a SPARQL constraint, rewritten so that one evaluation gives, for every node the
    ``target`` pattern binds to ?this, what SHACL's pre-binding of $this to that node gives (§5.3.1):
    the query evaluated as if $this were that node in every part of it.

    Evaluated bottom-up, a group pattern that reads $this without binding it first (a branch of a
    UNION, an OPTIONAL, a MINUS, a FILTER EXISTS, a subquery: ``{ BIND ($this AS ?node) }``) sees it
    unbound, and a group that binds it (``{ $this kg:p ?x }``) yields every node's rows; only the join
    with the rest on ?this then keeps the right ones. So the target pattern is joined in first in the
    query's WHERE and in every group that reads $this before a triple pattern of its own binds it;
    a group whose own triple pattern binds $this first already gives each node's rows, joined on
    ?this with the rest, and is left alone (no needless join). $currentShape and $shapesGraph, the
    same for every node, are put in the text from ``constants`` (variable name: term).

    Raises Unsupported for what SHACL forbids beside pre-bound variables (§5.3.1.1): VALUES,
    SERVICE, ``AS $this``, a subquery that uses $this without returning it. MINUS, which SHACL
    forbids too, is kept and read as the join reads it: $this is one of the variables its two sides
    share, as rdflib's pre-binding (and so pySHACL's) has it.
    """
    constants = constants or {}
    top, spans = _parse_groups(select, constants)
    edits = [(start, end, constants[select[start + 1 : end]]) for start, end in spans]

    def visit(group: _Group, outermost: bool) -> None:
        if not group.subquery and (group.mentions or outermost):
            safe = group.bound_at is not None and (group.used_at is None or group.bound_at < group.used_at)
            if outermost or not safe:
                edits.append((group.start, group.start, f" {target} "))
        for child in group.children:
            visit(child, False)

    visit(top.children[0], True)
    text = select
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


class Constraint(NamedTuple):
    query: str
    message: str  # the shape's template: {?var} is filled from each row
    severity: str  # "violation" or "warning"
    shape: str  # the node shape's IRI
    sparql: bool  # a SPARQL-based constraint (one result a row), else a core one (one a focus node)
    wheres: tuple = ()  # where a focus is given to the query (_where_clauses), kept with it in the cache


def queries(shapes, split: bool = False) -> list[Constraint]:
    """Every constraint of every node shape, as one query each (a property shape's core constraints
    as one query; with ``split``, one each)."""
    import rdflib

    sh = rdflib.Namespace(SH)
    out = []
    for shape in sorted(set(shapes.subjects(rdflib.RDF.type, sh.NodeShape)), key=str):
        severity = "warning" if shapes.value(shape, sh.severity) == sh.Warning else "violation"
        for target in _targets(shapes, shape):
            for prop in shapes.objects(shape, sh.property):
                out += [
                    Constraint(q, m, severity, str(shape), False, _where_clauses(q))
                    for q, m in _property_queries(shapes, prop, target, split)
                ]
            for constraint in shapes.objects(shape, sh.sparql):
                out += [
                    Constraint(q, m, severity, str(shape), True, _where_clauses(q))
                    for q, m in _sparql_queries(shapes, shape, constraint, target)
                ]
    return out


FOCUS_BOUND = 5_000  # focus nodes up to which a query is given them (VALUES), rather than filtered after


def focused(query: str, focus, wheres=None) -> str:
    """``query`` evaluated for the ``focus`` nodes alone (IRIs): ``VALUES ?this`` with them at the
    start of the WHERE clause of the query and of every subquery that returns $this. Every $this
    stands for the node a result is about (pre-binding), so each part may be given the nodes asked
    about; a subquery is evaluated on its own, and would otherwise compute every node's rows (a
    write's check of a value beside a subject's history of 4,000 others took 11 s, its pairs all)."""
    values = " VALUES ?this { " + " ".join(f"<{node}>" for node in sorted(focus)) + " } "
    for start in wheres or _where_clauses(query):
        query = query[:start] + values + query[start:]
    return query


@functools.lru_cache(maxsize=256)
def _where_clauses(query: str) -> tuple[int, ...]:
    """Where the WHERE clause of ``query`` and of each of its subqueries that returns $this opens
    (just past its "{"), last first: parsed as the shapes are compiled (38 queries, 3 ms a write)."""
    offset = query.index("SELECT")
    top, _ = _parse_groups(query[offset:])
    starts, todo = [], [top]
    while todo:
        group = todo.pop()
        if group.subquery and group.projects and group.children:
            starts.append(offset + group.children[0].start)  # its WHERE clause
        todo += group.children
    return tuple(sorted(starts, reverse=True))


def results(store, constraint: Constraint, focus=None):
    """(finding, row) for each row of the constraint's query (of the ``focus`` nodes only, if given)."""
    query = constraint.query
    if focus is not None and len(focus) <= FOCUS_BOUND and all(_IRI_TEXT.fullmatch(node) for node in focus):
        query = focused(query, focus, constraint.wheres)
    solutions = store.query(query)
    names = [v.value for v in solutions.variables]
    for row in solutions:
        if focus is not None and row["this"].value not in focus:
            continue

        def fill(match, row=row):
            term = row[match.group(1)]
            return "" if term is None else term.value

        message = re.sub(r"\{\?(\w+)\}", fill, constraint.message)
        yield (
            Finding(
                focus=row["this"].value, message=readable(message), severity=constraint.severity, shape=constraint.shape
            ),
            tuple(row[n] for n in names),
        )


class Compiled(NamedTuple):
    """The shapes of a file as their constraints' queries, and as N-Triples (what $shapesGraph
    holds): all a check needs, without rdflib."""

    constraints: list[Constraint]
    ntriples: bytes


def compiled(name: str = "facts.ttl", kb_path=None) -> Compiled:
    """The shapes of ``shapes/<name>`` compiled to queries; with ``kb_path`` (a knowledge base folder),
    kept there as ``shapes-<name>.json`` for the bytes of the shapes and of this translator, so that
    a write's check need not load rdflib (a third of a second) to read the shapes again."""
    import hashlib
    from pathlib import Path

    from kgrdf import files
    from kgrdf.resources import data_dir

    key = hashlib.sha256((data_dir("shapes") / name).read_bytes() + b"\0" + Path(__file__).read_bytes()).hexdigest()
    cache_name = f"shapes-{name.removesuffix('.ttl')}"
    if kb_path is not None:
        data = files.read_cache(kb_path, cache_name, key)
        try:
            constraints = [Constraint(*c[:5], tuple(c[5])) for c in data["constraints"]]  # (JSON has no tuples)
            return Compiled(constraints, data["ntriples"].encode("utf-8"))
        except (TypeError, KeyError, AttributeError, IndexError):
            pass  # missing, or not what this translator writes: made again
    shapes = shapes_graph(name)
    made = Compiled(queries(shapes), shapes.serialize(format="nt", encoding="utf-8"))
    if kb_path is not None:
        data = {"constraints": [list(c) for c in made.constraints], "ntriples": made.ntriples.decode("utf-8")}
        files.write_cache(kb_path, cache_name, key, data)
    return made


def check(store, shapes, severities=("violation", "warning"), threads: int = 2, focus=None) -> list[Finding]:
    """Every finding of the shapes (an rdflib graph, or :class:`Compiled`) on the view held in the
    pyoxigraph ``store``, each once (of the given severities only: an import leaves the warnings to
    kg lint; of the ``focus`` nodes only, if given: a write reports on what it touches, not on the
    facts beside them)."""
    from concurrent.futures import ThreadPoolExecutor

    def run(constraint) -> set:
        return {finding for finding, _row in results(store, constraint, focus)}

    made = isinstance(shapes, Compiled)
    chosen = [c for c in (shapes.constraints if made else queries(shapes)) if c.severity in severities]
    if any(f"<{SHAPES_GRAPH}>" in c.query for c in chosen):
        _load_shapes(store, shapes.ntriples if made else shapes.serialize(format="nt", encoding="utf-8"))
    if threads <= 1 or len(chosen) <= 1:
        findings = set().union(*map(run, chosen))
    else:
        # Oxigraph lets go of the GIL while it evaluates: two queries at a time use both cores.
        with ThreadPoolExecutor(max_workers=threads) as pool:
            findings = set().union(*pool.map(run, chosen))
    return sorted(findings, key=lambda f: (f.severity, f.focus, f.message))


def _load_shapes(store, ntriples: bytes) -> None:
    """The shapes graph, in the store as the named graph $shapesGraph is pre-bound to."""
    from pyoxigraph import NamedNode, RdfFormat

    store.load(
        input=ntriples,
        format=RdfFormat.N_TRIPLES,
        to_graph=NamedNode(SHAPES_GRAPH),
    )
