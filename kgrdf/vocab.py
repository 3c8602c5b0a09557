"""Namespaces and the IRIs kgrdf mints for entities, facts and their graphs.

IRIs are readable and stable, derived from the id and the perspective (§3, §9):
``https://kgrdf.org/kb/<perspective>/person/dana`` for an entity,
``https://kgrdf.org/kb/<perspective>/fact/f-3k9x2a`` for a fact (the name of its assertion graph),
and ``.../fact/f-3k9x2a/provenance`` for the graph that says everything about it.
"""

import re
from urllib.parse import quote

from pyoxigraph import DefaultGraph, Literal, NamedNode

KG = "https://kgrdf.org/ns#"
KB = "https://kgrdf.org/kb/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
XSD = "http://www.w3.org/2001/XMLSchema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
PROV = "http://www.w3.org/ns/prov#"
DCT = "http://purl.org/dc/terms/"
SCHEMA_GRAPH = "https://kgrdf.org/ns"  # the graph of the index that holds the effective schema

PREFIXES = {
    "kg": KG,
    "rdf": RDF,
    "rdfs": RDFS,
    "xsd": XSD,
    "skos": SKOS,
    "prov": PROV,
    "dcterms": DCT,
    "owl": "http://www.w3.org/2002/07/owl#",
    "org": "http://www.w3.org/ns/org#",
}

# \Z, not $: $ also matches before a final newline, which an IRI cannot hold.
ID_PATTERN = re.compile(r"^[a-z][a-z_]*/[a-z0-9][a-z0-9._-]*\Z")
FACT_ID_PATTERN = re.compile(r"^f-[a-z0-9]{6}\Z")
PERSPECTIVE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}\Z")
REPLICA_PATTERN = re.compile(r"r-[0-9a-f]{8}\Z")  # a replica's id, as kg init mints it: also its journal's folder


def kg(local: str) -> NamedNode:
    return NamedNode(KG + local)


def term(prefixed: str) -> NamedNode:
    """``skos:prefLabel`` as a NamedNode."""
    prefix, local = prefixed.split(":", 1)
    return NamedNode(PREFIXES[prefix] + local)


RDF_TYPE = NamedNode(RDF + "type")
PREF_LABEL = NamedNode(SKOS + "prefLabel")
ALT_LABEL = NamedNode(SKOS + "altLabel")
WEAK_ALIAS = kg("weakAlias")
SUMMARY = kg("summary")
IDENTIFIER = NamedNode(DCT + "identifier")
SELF_ORGANIZATION = NamedNode(KG + "selfOrganization")
MERGED_INTO = NamedNode(KG + "mergedInto")
FACT = kg("Fact")
SOURCE = kg("Source")
UPDATE = kg("Update")
CHANGE = kg("Change")
WAS_DERIVED_FROM = NamedNode(PROV + "wasDerivedFrom")
ENDED_AT = NamedNode(PROV + "endedAtTime")
XSD_DATETIME = NamedNode(XSD + "dateTime")
XSD_DATE = NamedNode(XSD + "date")
XSD_INTEGER = NamedNode(XSD + "integer")
XSD_BOOLEAN = NamedNode(XSD + "boolean")
XSD_STRING = NamedNode(XSD + "string")
XSD_DECIMAL = NamedNode(XSD + "decimal")
DEFAULT_GRAPH = DefaultGraph()

# Where the index records the journal position it reflects: the store's default graph, which no
# fact or entity uses, so that the data and its position change in one atomic update.
INDEX_NODE = NamedNode("urn:kgrdf:index")
# A graph nothing is ever written to: a dataset whose default graph or named graphs are to be empty
# names it alone (an empty list would say "every graph" to a SPARQL server). Not INDEX_NODE, which a
# server's index uses as its bookkeeping graph.
NO_GRAPH = NamedNode("urn:kgrdf:no-graph")


def perspective_base(perspective: str) -> str:
    return f"{KB}{perspective}/"


def perspective_iri(perspective: str) -> NamedNode:
    return NamedNode(perspective_base(perspective))


def perspective_of(iri: str) -> str:
    """The perspective an IRI of the knowledge base is in (a perspective's own IRI included)."""
    return iri.removeprefix(KB).split("/", 1)[0]


def entity_iri(perspective: str, entity_id: str) -> NamedNode:
    return NamedNode(perspective_base(perspective) + quote(entity_id, safe="/._-"))


def entities_graph(perspective: str) -> NamedNode:
    """The graph that holds the perspective's entity descriptions (type, labels, summary)."""
    return NamedNode(perspective_base(perspective) + "entities")


def fact_iri(perspective: str, fact_id: str) -> NamedNode:
    return NamedNode(perspective_base(perspective) + "fact/" + fact_id)


def provenance_graph(fact: NamedNode) -> NamedNode:
    return NamedNode(fact.value + "/provenance")


def source_iri(fact: NamedNode, digest: str) -> NamedNode:
    return NamedNode(f"{fact.value}/source/{digest}")


def update_iri(fact: NamedNode, seq: int, step: int = 1) -> NamedNode:
    """The record of a change to ``fact`` made by transaction ``seq`` (its ``step``-th change of the
    fact in that transaction, when one command changes a fact twice: proposed, then confirmed)."""
    return NamedNode(f"{fact.value}/update/{seq}" + (f".{step}" if step > 1 else ""))


def change_iri(update: NamedNode, field_key: str) -> NamedNode:
    return NamedNode(f"{update.value}/{field_key}")


def id_of(iri: str) -> str:
    """The entity or fact id an IRI of ours names: ``.../kb/main/person/dana`` -> ``person/dana``."""
    rest = iri[len(KB) :] if iri.startswith(KB) else iri
    _, _, local = rest.partition("/")
    return local.removeprefix("fact/")


def string(value: str) -> Literal:
    return Literal(value)


def integer(value: int) -> Literal:
    return Literal(str(int(value)), datatype=XSD_INTEGER)


def decimal(value: float) -> Literal:
    """A number to six places as xsd:decimal, in the one form Oxigraph keeps it in (the index and a
    rebuild of it from the journal must agree): no trailing zeros, and zero never "-0"."""
    text = f"{float(value):.6f}".rstrip("0").rstrip(".")
    return Literal("0" if text == "-0" else text, datatype=XSD_DECIMAL)


def boolean(value: bool) -> Literal:
    return Literal("true" if value else "false", datatype=XSD_BOOLEAN)


def datetime_literal(text: str) -> Literal:
    return Literal(text, datatype=XSD_DATETIME)
