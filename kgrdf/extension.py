"""A site's schema extension: ``schema.json`` in the knowledge base, turned into RDF and checked (§4).

    {"types": [{"name": "contract", "axis": "Organizations", "subclass_of": "decision"}],
     "predicates": [{"name": "on_call_for", "axis": "Process", "object": "entity",
                     "domain": ["team"], "range": ["service"], "sentence": "{subject} is on call for {target}",
                     "single_valued": false, "subproperty_of": null}]}

The extension is converted to RDF, the OWL RL closure of the core ontology plus the extension is
computed (owlrl), and the closure is validated against ``shapes/schema.ttl``: no extension can add
a predicate about a person, directly or through a subclass or subproperty chain. A refused
extension never stops the knowledge base: it keeps working on the core schema.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from kgrdf.errors import BadInput

SITE = "https://kgrdf.org/ns/site#"
AXES = {"People": "People", "Process": "ProcessAxis", "Product": "ProductAxis", "Organizations": "Organizations"}


@dataclass
class Extension:
    """What schema.json holds, as RDF, and whether it may be used."""

    path: Path | None
    quads: list = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    digest: str = ""

    @property
    def accepted(self) -> bool:
        return bool(self.quads) and not self.problems


def _names(value) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def to_quads(data: dict, core) -> list:
    """The extension as quads in the schema graph. Raises BadInput when its form is wrong."""
    from pyoxigraph import Literal, NamedNode, Quad

    from kgrdf import vocab
    from kgrdf.schema import SCHEMA_GRAPH

    if not isinstance(data, dict) or not set(data) <= {"types", "predicates"}:
        raise BadInput('schema.json must be an object with "types" and "predicates" lists')
    graph = NamedNode(SCHEMA_GRAPH)
    rdf_type, label = vocab.RDF_TYPE, vocab.term("rdfs:label")
    quads = []
    site_types = {}
    for entry in data.get("types", []):
        if not isinstance(entry, dict) or not entry.get("name"):
            raise BadInput('each type in schema.json needs a "name"')
        site_types[entry["name"]] = NamedNode(SITE + entry["name"])

    def type_iri(name: str) -> NamedNode:
        if name in core.types:
            return NamedNode(core.types[name].iri)
        if name in site_types:
            return site_types[name]
        raise BadInput(f"schema.json names the type {name!r}, which is neither a core type nor one it adds")

    def axis(entry) -> NamedNode:
        if entry.get("axis") not in AXES:
            raise BadInput(f"{entry['name']}: axis must be one of {', '.join(AXES)}")
        return vocab.kg(AXES[entry["axis"]])

    for entry in data.get("types", []):
        node = site_types[entry["name"]]
        quads += [Quad(node, rdf_type, vocab.term("owl:Class"), graph),
                  Quad(node, rdf_type, vocab.kg("EntityType"), graph),
                  Quad(node, rdf_type, vocab.kg("SiteType"), graph),
                  Quad(node, vocab.kg("key"), Literal(entry["name"]), graph),
                  Quad(node, vocab.kg("axis"), axis(entry), graph),
                  Quad(node, label, Literal(entry.get("label", entry["name"])), graph),
                  Quad(node, vocab.term("rdfs:subClassOf"), vocab.kg("Entity"), graph)]
        for parent in _names(entry.get("subclass_of")):
            quads.append(Quad(node, vocab.term("rdfs:subClassOf"), type_iri(parent), graph))
    for entry in data.get("predicates", []):
        if not isinstance(entry, dict) or not entry.get("name"):
            raise BadInput('each predicate in schema.json needs a "name"')
        if entry.get("object") not in ("entity", "value"):
            raise BadInput(f'{entry["name"]}: "object" must be "entity" or "value"')
        node = NamedNode(SITE + entry["name"])
        kind = "owl:ObjectProperty" if entry["object"] == "entity" else "owl:DatatypeProperty"
        quads += [Quad(node, rdf_type, vocab.term(kind), graph),
                  Quad(node, rdf_type, vocab.kg("SitePredicate"), graph),
                  Quad(node, vocab.kg("key"), Literal(entry["name"]), graph),
                  Quad(node, vocab.kg("axis"), axis(entry), graph),
                  Quad(node, label, Literal(entry["name"].replace("_", " ")), graph)]
        if entry.get("sentence"):
            quads.append(Quad(node, vocab.kg("sentence"), Literal(entry["sentence"]), graph))
        if entry["object"] == "value":
            quads.append(Quad(node, vocab.kg("valueType"), vocab.XSD_STRING, graph))
        if entry.get("single_valued"):
            quads.append(Quad(node, rdf_type, vocab.kg("SingleValuedPredicate"), graph))
        for name in _names(entry.get("domain")):
            quads.append(Quad(node, vocab.kg("domainIncludes"), type_iri(name), graph))
        for name in _names(entry.get("range")):
            quads.append(Quad(node, vocab.kg("rangeIncludes"), type_iri(name), graph))
        for parent in _names(entry.get("subproperty_of")):
            if parent not in core.predicates:
                raise BadInput(f"{entry['name']}: subproperty_of {parent!r} is not a core predicate")
            quads.append(Quad(node, vocab.term("rdfs:subPropertyOf"), NamedNode(core.predicates[parent].iri), graph))
    return quads


def problems_of(quads, core_quads) -> list[str]:
    """Why the extension is refused: its OWL RL closure with the core ontology against the schema shapes."""
    import owlrl
    import rdflib
    from pyshacl import validate

    from kgrdf.validation import shapes_graph

    graph = rdflib.Graph()
    for quad in list(core_quads) + list(quads):
        graph.add(tuple(_rdflib(t) for t in (quad.subject, quad.predicate, quad.object)))
    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics).expand(graph)
    _conforms, report, _text = validate(graph, shacl_graph=shapes_graph("schema.ttl"), inference="none",
                                        advanced=True)
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    return sorted({str(report.value(r, sh.resultMessage)) for r in report.subjects(rdflib.RDF.type, sh.ValidationResult)})


def _rdflib(term):
    import rdflib
    from pyoxigraph import BlankNode, Literal, NamedNode

    if isinstance(term, NamedNode):
        return rdflib.URIRef(term.value)
    if isinstance(term, BlankNode):
        return rdflib.BNode(term.value)
    if isinstance(term, Literal):
        if term.language:
            return rdflib.Literal(term.value, lang=term.language)
        if term.datatype.value.endswith("#string"):
            return rdflib.Literal(term.value)
        return rdflib.Literal(term.value, datatype=rdflib.URIRef(term.datatype.value))
    raise TypeError(term)


def check_file(path: Path) -> Extension:
    """Read and check a schema.json; never raises for its content (the problems say why)."""
    import hashlib

    from kgrdf import schema

    from kgrdf import inputs
    from kgrdf.errors import BadInput

    ext = Extension(path)
    try:
        raw = inputs.read(path, "KGRDF_MAX_IMPORT", "the schema file")
    except BadInput as exc:
        ext.problems.append(exc.message)
        return ext
    ext.digest = hashlib.sha256(raw).hexdigest()
    try:
        data = json.loads(raw)
        ext.quads = to_quads(data, schema.core())
    except ValueError as exc:
        ext.problems.append(f"{path.name} is not JSON: {exc}")
        return ext
    except BadInput as exc:
        ext.problems.append(exc.message)
        return ext
    ext.problems = problems_of(ext.quads, schema.quads())
    return ext
