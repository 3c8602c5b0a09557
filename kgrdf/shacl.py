"""Whole-knowledge-base validation: the shapes of ``shapes/facts.ttl`` as set-based SPARQL on Oxigraph.

pySHACL checks one focus node at a time, which is right for a write (a handful of nodes) and far too
slow for a whole knowledge base (100k facts). Here each constraint becomes one SPARQL query that
finds every violating node at once. Only the SHACL features the shapes use are translated: class,
subjects-of and objects-of targets; minCount, maxCount, in, datatype, nodeKind IRI, class,
minLength, minInclusive, lessThanOrEquals, disjoint; and SPARQL-based constraints. A test checks
that this and pySHACL report the same findings on every example under tests/shapes/.
"""

import re

from kgrdf.validation import Finding, readable

SH = "http://www.w3.org/ns/shacl#"
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


def _property_queries(shapes, prop, target: str):
    """(query, message) for each core constraint of one property shape."""
    import rdflib

    sh = rdflib.Namespace(SH)
    path = _n3(shapes.value(prop, sh.path))
    message = str(shapes.value(prop, sh.message) or "does not conform")
    value = f"{{ {target} }} ?this {path} ?v ."
    checks = []
    for count in shapes.objects(prop, sh.minCount):
        checks.append(f"{{ SELECT ?this (COUNT(?v) AS ?n) WHERE {{ {{ {target} }} OPTIONAL {{ ?this {path} ?v }} }} "
                      f"GROUP BY ?this }} FILTER (?n < {int(count)})")
    for count in shapes.objects(prop, sh.maxCount):
        checks.append(f"{{ SELECT ?this (COUNT(?v) AS ?n) WHERE {{ {value} }} GROUP BY ?this }} FILTER (?n > {int(count)})")
    for items in shapes.objects(prop, sh["in"]):
        members = ", ".join(_n3(m) for m in rdflib.collection.Collection(shapes, items))
        checks.append(f"{value} FILTER (?v NOT IN ({members}))")
    for datatype in shapes.objects(prop, sh.datatype):
        checks.append(f"{value} FILTER (!isLiteral(?v) || DATATYPE(?v) != {_n3(datatype)})")
    for kind in shapes.objects(prop, sh.nodeKind):
        if kind == sh.IRI:
            checks.append(f"{value} FILTER (!isIRI(?v))")
    for cls in shapes.objects(prop, sh["class"]):
        checks.append(f"{value} FILTER NOT EXISTS {{ ?v rdf:type/rdfs:subClassOf* {_n3(cls)} }}")
    for length in shapes.objects(prop, sh.minLength):
        checks.append(f"{value} FILTER (STRLEN(STR(?v)) < {int(length)})")
    for low in shapes.objects(prop, sh.minInclusive):
        checks.append(f"{value} FILTER (?v < {_n3(low)})")
    for other in shapes.objects(prop, sh.lessThanOrEquals):
        checks.append(f"{value} ?this {_n3(other)} ?w . FILTER (!(?v <= ?w))")
    for other in shapes.objects(prop, sh.disjoint):
        checks.append(f"{value} ?this {_n3(other)} ?v .")
    return [(f"{PREFIXES}SELECT DISTINCT ?this WHERE {{ {body} }}", message) for body in checks]


def _sparql_queries(shapes, constraint, target: str):
    import rdflib

    sh = rdflib.Namespace(SH)
    prefixes = PREFIXES
    for decl_owner in shapes.objects(constraint, sh.prefixes):
        for decl in shapes.objects(decl_owner, sh.declare):
            prefixes += f"PREFIX {shapes.value(decl, sh.prefix)}: <{shapes.value(decl, sh.namespace)}>\n"
    select = str(shapes.value(constraint, sh.select)).replace("$this", "?this")
    # Join the target into the constraint's own WHERE clause, so only targets are reported.
    select = re.sub(r"WHERE\s*\{", lambda m: m.group(0) + f" {{ {target} }}", select, count=1)
    return [(prefixes + select, str(shapes.value(constraint, sh.message) or "does not conform"))]


def queries(shapes):
    """(query, message template, severity, shape IRI) for every constraint of every node shape."""
    import rdflib

    sh = rdflib.Namespace(SH)
    out = []
    for shape in sorted(set(shapes.subjects(rdflib.RDF.type, sh.NodeShape)), key=str):
        severity = "warning" if shapes.value(shape, sh.severity) == sh.Warning else "violation"
        for target in _targets(shapes, shape):
            for prop in shapes.objects(shape, sh.property):
                out += [(q, m, severity, str(shape)) for q, m in _property_queries(shapes, prop, target)]
            for constraint in shapes.objects(shape, sh.sparql):
                out += [(q, m, severity, str(shape)) for q, m in _sparql_queries(shapes, constraint, target)]
    return out


def check(store, shapes, severities=("violation", "warning"), threads: int = 2) -> list[Finding]:
    """Every finding of the shapes on the whole view held in the pyoxigraph ``store`` (of the
    given severities only: an import leaves the warnings to kg lint)."""
    from concurrent.futures import ThreadPoolExecutor

    def run(constraint) -> set:
        query, template, severity, shape = constraint
        found = set()
        for row in store.query(query):
            def fill(match, row=row):
                term = row[match.group(1)]
                return "" if term is None else term.value
            message = re.sub(r"\{\?(\w+)\}", fill, template)
            found.add(Finding(focus=row["this"].value, message=readable(message), severity=severity, shape=shape))
        return found

    # Oxigraph lets go of the GIL while it evaluates: two queries at a time use both cores.
    chosen = [c for c in queries(shapes) if c[2] in severities]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        findings = set().union(*pool.map(run, chosen))
    return sorted(findings, key=lambda f: (f.severity, f.focus, f.message))
