"""The ontology agrees with the vocabularies it builds on: PROV-O, the W3C Organization ontology and FOAF.

``tests/vocabularies/`` holds those vocabularies' own files, unchanged (its README says where each
comes from). The OWL RL closure (owlrl) of our ontology, their axioms and a knowledge base made with
the CLI (every predicate between every pair of types it allows, the example organization, hearings
with speakers, claims, a merge, a correction, and a fact in the form before hearings) derives no
clash; the same check finds the clash an axiom PROV-O contradicts makes. And every term of PROV-O,
ORG and FOAF that our files or the code use is one those vocabularies define, and the ORG and FOAF
ones (not imported) are declared in our ontology.
"""

import hashlib
import json
import re
from functools import cache
from pathlib import Path

import pytest
import rdflib
from rdflib import OWL, RDF, RDFS, Literal, URIRef

from kgrdf import model, vocab
from kgrdf import schema as schema_module
from kgrdf.resources import data_dir, example_path

VOCABULARIES = Path(__file__).parent / "vocabularies"
# Each file as it was taken (tests/vocabularies/README.md): a changed byte is a changed vocabulary.
SHA256 = {
    "prov-o.ttl": "7d203989f67b38bca572253942acc5a1bf24ce3ccfece16f072dcb4be2b79a96",
    "org.ttl": "3e01f89a17475a88f8b1606ca0fae04800d34dbbf93adc6db12dc30929848729",
    "foaf.rdf": "de068a4f014c26a6677f01a490657f1859fd0a9d4c8a4965e5b68f081901eb7d",
}
PROV = "http://www.w3.org/ns/prov#"
ORG = "http://www.w3.org/ns/org#"
FOAF = "http://xmlns.com/foaf/0.1/"
NAMESPACES = {"prov": PROV, "org": ORG, "foaf": FOAF}
DEFINED_BY = {ORG: URIRef("http://www.w3.org/ns/org"), FOAF: URIRef(FOAF)}
# owlrl reports what OWL RL finds inconsistent as nodes of this type with an err:error message.
ERR = rdflib.Namespace("http://www.daml.org/2002/03/agents/agent-ont#")
# The XSD datatypes a literal of the key's datatype also belongs to (XSD 1.1's derivation tree, the
# part of it a literal of ours can meet).
_XSD_PARENT = {
    "integer": "decimal",
    "nonNegativeInteger": "integer",
    "positiveInteger": "nonNegativeInteger",
    "nonPositiveInteger": "integer",
    "negativeInteger": "nonPositiveInteger",
    "long": "integer",
    "int": "long",
    "short": "int",
    "byte": "short",
    "unsignedLong": "nonNegativeInteger",
    "unsignedInt": "unsignedLong",
    "unsignedShort": "unsignedInt",
    "unsignedByte": "unsignedShort",
    "normalizedString": "string",
    "token": "normalizedString",
    "language": "token",
    "Name": "token",
    "NCName": "Name",
    "NMTOKEN": "token",
    "dateTimeStamp": "dateTime",
}
XSD = "http://www.w3.org/2001/XMLSchema#"
_PLAIN = URIRef("http://www.w3.org/1999/02/22-rdf-syntax-ns#PlainLiteral")
_LANG = URIRef("http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")


def vocabularies() -> rdflib.Graph:
    graph = rdflib.Graph()
    for name in SHA256:
        graph.parse(VOCABULARIES / name, format="xml" if name.endswith(".rdf") else "turtle")
    return graph


def ontology() -> rdflib.Graph:
    graph = rdflib.Graph()
    for path in schema_module.ontology_files():
        graph.parse(path, format="turtle")
    return graph


def _datatypes_of(literal: Literal) -> set:
    """The datatypes a literal's value belongs to: its own and those it derives from."""
    if literal.language:
        return {_LANG, _PLAIN, RDFS.Literal}
    own = literal.datatype or URIRef(XSD + "string")
    out = {own, RDFS.Literal}
    while own.startswith(XSD) and own[len(XSD) :] in _XSD_PARENT:
        own = URIRef(XSD + _XSD_PARENT[own[len(XSD) :]])
        out.add(own)
    return out | ({_PLAIN} if URIRef(XSD + "string") in out else set())


def clashes(graph: rdflib.Graph) -> list[str]:
    """Every clash in the OWL RL closure of ``graph`` (closed in place). owlrl's own reports (a member
    of two disjoint classes or of owl:Nothing, a literal its datatype cannot read, ...), a member of
    owl:Nothing and of two disjoint classes found again here, and what OWL RL's datatype rules find
    and owlrl leaves out (dt-diff, dt-not-type): a literal given a datatype by a range that its value
    is not of, and two different values of a functional property. Two of our IRIs made the same by a
    functional property is a clash too: each names one thing."""
    import owlrl

    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics).expand(graph)
    found = {f"owlrl: {message}" for message in graph.objects(None, ERR.error)}
    found |= {f"{x} is a member of owl:Nothing" for x in graph.subjects(RDF.type, OWL.Nothing)}
    for a, b in graph.subject_objects(OWL.disjointWith):
        for x in graph.subjects(RDF.type, a):
            if (x, RDF.type, b) in graph:
                found.add(f"{x} is a member of the disjoint classes {a} and {b}")
    for x, datatype in graph.subject_objects(RDF.type):
        if (
            isinstance(x, Literal)
            and (str(datatype).startswith(XSD) or datatype in (_PLAIN, _LANG))
            and datatype not in _datatypes_of(x)
        ):
            found.add(f"the literal {x.n3()} is given the datatype {datatype}")
    for x, y in graph.subject_objects(OWL.sameAs):
        if x != y and not (isinstance(x, Literal) and isinstance(y, Literal) and x.eq(y)):
            found.add(f"{x.n3()} and {y.n3()} are made the same")
    return sorted(found)


# --- a knowledge base with every kind of thing kgrdf writes ---------------------------------------------


def _records() -> list[dict]:
    """Import records for every predicate between each of its subject types and each of its object
    types (a value of its datatype for a value predicate); a type it does not restrict is stood in
    for by a system and a service. Subject and object are entities of their own per fact, so that
    no single-valued predicate meets a second value."""
    core = schema_module.core()
    people = {"person", "actor"}
    one_kind = {str(p) for p in ontology().subjects(RDF.type, URIRef(vocab.kg("OneKindPredicate").value))}
    entities: dict[str, dict] = {}
    facts = []

    def entity(type_key: str, label: str) -> str:
        entity_id = f"{type_key}/{label}"
        entities.setdefault(entity_id, {"type": "entity", "id": entity_id, "name": f"{type_key} {label}"})
        return entity_id

    for key, predicate in sorted(core.predicates.items()):
        subjects = sorted(predicate.domain) or ["system"]
        objects = (sorted(predicate.range) or ["service"]) if predicate.takes_entity else [None]
        if predicate.iri in one_kind:  # (another name of one thing: of its kind)
            objects = subjects
        if not predicate.person_ok:
            subjects = [t for t in subjects if t not in people]
            objects = [t for t in objects if t not in people]
        for i in range(max(len(subjects), len(objects))):
            subject_type, object_type = subjects[i % len(subjects)], objects[i % len(objects)]
            record = {
                "type": "fact",
                "subject": entity(subject_type, f"{key}-{i}-s"),
                "predicate": key,
                "sources": [f"report:{key}-{i}"],
            }
            if object_type:
                record["object"] = entity(object_type, f"{key}-{i}-o")
            else:
                record["value"] = "2026-10-04" if predicate.value_type == vocab.XSD_DATE.value else f"{key} {i}"
            if predicate.ordered:
                record["order"] = i + 1
            if key.startswith("stated_"):
                record["authority"] = "user"
            if key == "claimed_member":  # (a claim records who said it)
                record["said_by"] = entity("actor", "claim-speaker")
            facts.append(record)
    return list(entities.values()) + facts


def _knowledge_base(kg, tmp_path) -> bytes:
    """The TriG export of a knowledge base made with the CLI."""
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    imported = kg.json("import", records, "--apply", "--auto-confirm")
    assert imported["refused_total"] == 0, imported["refusals"]
    assert kg.json("import", example_path("fernhill.jsonl"), "--apply")["refused_total"] == 0
    kg("org", "init", "Acme Labs", "--alias", "acme.io")
    kg("org", "add", "Texture", "--alias", "texturehq.com")
    kg("add-entity", "actor/jo", "--name", "Jo Park")
    kg("add-entity", "actor/jim", "--name", "Jim Beale")
    works_at = kg.json("propose", "actor/jo", "affiliated_with", "--object", "Texture", "-s", "profile:dir/jo")
    kg("confirm", works_at["id"])
    said = kg.json(
        "propose",
        "Texture",
        "industry",
        "--value",
        "utilities",
        "-s",
        "slack:p3",
        "--said-by",
        "Jo Park",
        "--message",
        "slack:p3",
        "--audience",
        "dm:jo,sam",
    )
    kg("propose", "Texture", "industry", "--value", "utilities", "-s", "slack:p9", "--audience", "public")
    kg(
        "propose",
        "Texture",
        "founded",
        "--value",
        "2023",
        "-s",
        "slack:p4",
        "--extracted",
        "--confidence",
        "0.8",
        "--span",
        "since 2023",
        "--said-by",
        "Jo Park",
        "--message",
        "slack:p4",
    )
    claim = kg.json(
        "org",
        "affiliate",
        "Texture",
        "--claimed-name",
        "Jim",
        "--role",
        "IT",
        "--said-by",
        "Jo Park",
        "--message",
        "slack:p5",
    )
    kg("org", "promote", claim["id"], "actor/jim")
    kg("org", "add", "Texture Inc")
    kg("propose", "Texture Inc", "industry", "--value", "energy", "-s", "slack:p6", "--said-by", "Jo Park")
    kg("org", "merge", "Texture", "Texture Inc")
    entry = next(f for f in kg.json("facts", "process/hotfix")["facts"] if f["predicate"] == "entry_point")
    kg("supersede", entry["id"], "--object", "channel/deploys", "--valid-from", "2026-10-20", "--reason", "moved")
    kg("reject", said["id"])
    kg(
        "add-entity",
        "system/old-ci",
        "--name",
        "Old CI",
        "--alias",
        "oldci",
        "--weak-alias",
        "jenkins",
        "--summary",
        "The build server before CI.",
    )
    from kgrdf.kb import KnowledgeBase

    with KnowledgeBase.open(kg.path).reading() as session:
        return session.export("trig")


def _written_before_hearings() -> list:
    """A fact in the form before hearings (audience, speaker and the rest said on the fact itself),
    as kgrdf still writes such a fact back."""
    fact_iri = vocab.fact_iri("main", "f-000000")  # 0 is no letter of a minted id: no other fact's
    texture = vocab.entity_iri("main", "organization/texture").value
    hearing = model.Hearing(
        None,
        "dm:jo,sam",
        (model.Source("slack", "old-1"),),
        said_by=vocab.entity_iri("main", "actor/jo").value,
        message="slack:old-1",
        speaker_affiliation=texture,
        confidence=0.7,
        span="utilities",
    )
    fact = model.Fact(
        id="f-000000",
        iri=fact_iri.value,
        subject=texture,
        predicate=vocab.kg("industry").value,
        target=vocab.string("utilities"),
        sources=[model.Source("slack", "old-1")],
        observed_at="2026-01-01T00:00:00Z",
        recorded_at="2026-01-01T00:00:00Z",
        perspective=vocab.perspective_iri("main").value,
        hearings=[hearing],
    )
    quads = model.fact_quads(fact, schema_module.core())
    assert any(q.subject == fact_iri and q.predicate == vocab.kg("saidBy") for q in quads)
    return quads


def _rdflib(term):
    from pyoxigraph import Literal as OxLiteral
    from pyoxigraph import NamedNode

    if isinstance(term, NamedNode):
        return URIRef(term.value)
    if isinstance(term, OxLiteral):
        return (
            Literal(term.value, lang=term.language)
            if term.language
            else Literal(term.value, datatype=URIRef(term.datatype.value))
        )
    raise TypeError(term)


def test_the_vocabularies_are_the_files_as_published():
    for name, digest in SHA256.items():
        assert hashlib.sha256((VOCABULARIES / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.slow  # about 20 s: the CLI makes the knowledge base (7 s), owlrl closes 7k triples (12 s)
def test_a_knowledge_base_with_prov_o_org_and_foaf_derives_no_clash(kg, tmp_path):
    """Every graph of the export as one graph (what a reasoner over the dataset's union sees), with
    the ontology, PROV-O, ORG and FOAF: its OWL RL closure holds no clash."""
    trig = _knowledge_base(kg, tmp_path)
    dataset = rdflib.Dataset()
    dataset.parse(data=trig.decode("utf-8"), format="trig")
    graph = vocabularies() + ontology()
    for s, p, o, _g in dataset.quads((None, None, None, None)):
        graph.add((s, p, o))
    for quad in _written_before_hearings():
        graph.add(tuple(_rdflib(t) for t in (quad.subject, quad.predicate, quad.object)))
    kinds = set(graph.objects(None, RDF.type))
    for kind in ("Process", "Step", "Gate", "Person", "Team", "Organization", "Actor", "Hearing", "Update"):
        assert vocab.kg(kind).value in {str(k) for k in kinds}, kind
    used = {str(p) for _s, p, _o, _g in dataset.quads((None, None, None, None))}
    assert {p.iri for p in schema_module.core().predicates.values()} <= used
    assert clashes(graph) == []
    # The closure says what the ontology means: a process is a plan, a hearing's speaker influenced it.
    process = URIRef(vocab.entity_iri("main", "process/release").value)
    assert (process, RDF.type, URIRef(PROV + "Plan")) in graph
    assert (process, RDF.type, URIRef(PROV + "Activity")) not in graph
    assert any(
        graph.triples((None, URIRef(PROV + "wasInfluencedBy"), URIRef(vocab.entity_iri("main", "actor/jo").value)))
    )
    team = URIRef(vocab.entity_iri("main", "team/platform").value)
    assert (team, RDF.type, URIRef(FOAF + "Organization")) in graph  # ORG: org:Organization = foaf:Organization


# A process that uses a system and is done by a team, in a knowledge base: the smallest data the
# old axioms clash on. With it (in _check), one thing of every core type but person and actor at once:
# a site type may be a subclass of any of them (never of those two), so no pair of them may be disjoint.
_PROCESS = """
@prefix kg: <https://kgrdf.org/ns#> .
<https://kgrdf.org/kb/main/process/release> a kg:Process ;
    kg:uses <https://kgrdf.org/kb/main/system/ci> ;
    kg:actor <https://kgrdf.org/kb/main/team/platform> .
<https://kgrdf.org/kb/main/system/ci> a kg:System .
<https://kgrdf.org/kb/main/team/platform> a kg:Team .
"""


_LOGICAL = {RDF.type, RDFS.subClassOf, RDFS.subPropertyOf, RDFS.domain, RDFS.range, RDF.first, RDF.rest}


def _axioms(graph: rdflib.Graph) -> rdflib.Graph:
    """What OWL RL's rules read of a vocabulary (types, class and property axioms, OWL's own terms,
    lists), without its labels, comments and other annotations: the same clashes, in less time."""
    out = rdflib.Graph()
    for s, p, o in graph:
        if p in _LOGICAL or str(p).startswith(str(OWL)):
            out.add((s, p, o))
    return out


@cache
def _base() -> rdflib.Graph:
    return _axioms(vocabularies() + ontology())


def _check(*extra: str) -> list[str]:
    graph = rdflib.Graph()
    graph += _base()
    graph.parse(data=_PROCESS, format="turtle")
    for key, entity_type in schema_module.core().types.items():
        if key not in ("person", "actor"):
            graph.add((URIRef("https://kgrdf.org/kb/main/site/any"), RDF.type, URIRef(entity_type.iri)))
    prefixes = (
        "@prefix kg: <https://kgrdf.org/ns#> . @prefix prov: <http://www.w3.org/ns/prov#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
    )
    for text in extra:
        graph.parse(data=prefixes + text, format="turtle")
    return clashes(graph)


@pytest.mark.parametrize(
    "axiom",
    [
        None,
        "kg:uses rdfs:subPropertyOf prov:used .",
        "kg:actor rdfs:subPropertyOf prov:wasAssociatedWith .",
    ],
)
def test_a_process_that_uses_a_system_and_has_an_actor_clashes_only_with_the_old_prov_claims(axiom):
    """kg:Process is a prov:Plan, so a prov:Entity; prov:used and prov:wasAssociatedWith make their
    subject a prov:Activity, which PROV-O makes disjoint from prov:Entity. Without those claims, no clash."""
    found = _check(*[axiom] if axiom else [])
    if axiom is None:
        assert found == []
        return
    process = "https://kgrdf.org/kb/main/process/release"
    assert {
        f"{process} is a member of the disjoint classes {PROV}Activity and {PROV}Entity",
        f"{process} is a member of the disjoint classes {PROV}Entity and {PROV}Activity",
    } & set(found), found
    assert any(m.startswith("owlrl: Disjoint classes") and process in m for m in found), found


def test_the_check_finds_each_kind_of_clash():
    found = "\n".join(
        _check(
            "<https://kgrdf.org/kb/main/team/platform> a kg:Person .",  # an org:Organization (so a foaf:Organization) and a foaf:Person
            '<https://kgrdf.org/kb/main/fact/f-aaaaaa> kg:validFrom "2026-10-01"^^xsd:date .',  # not the range's datatype
            "<https://kgrdf.org/kb/main/fact/f-bbbbbb> kg:observations 1, 2 .",  # two values of a functional property
            "<https://kgrdf.org/kb/main/fact/f-cccccc> kg:authority kg:Observed, kg:UserSaid .",
            "<https://kgrdf.org/kb/main/nothing> a owl:Nothing .",
        )
    )
    team = "https://kgrdf.org/kb/main/team/platform"
    assert f"{team} is a member of the disjoint classes" in found
    assert "owlrl: Disjoint classes" in found
    assert (
        '"2026-10-01"^^<http://www.w3.org/2001/XMLSchema#date> is given the datatype '
        "http://www.w3.org/2001/XMLSchema#dateTime" in found
    )
    integers = ('"1"^^<http://www.w3.org/2001/XMLSchema#integer>', '"2"^^<http://www.w3.org/2001/XMLSchema#integer>')
    assert (
        f"{integers[0]} and {integers[1]} are made the same" in found
        or f"{integers[1]} and {integers[0]} are made the same" in found
    )
    assert (
        "<https://kgrdf.org/ns#Observed> and <https://kgrdf.org/ns#UserSaid> are made the same" in found
        or "<https://kgrdf.org/ns#UserSaid> and <https://kgrdf.org/ns#Observed> are made the same" in found
    )
    assert "https://kgrdf.org/kb/main/nothing is a member of owl:Nothing" in found


def _iris_in_text(text: str) -> set[str]:
    """The PROV-O, ORG and FOAF terms a query, a Python module or a Turtle file names: as a prefixed
    name (prov:used), a full IRI, or a namespace constant plus a name (vocab.PROV + "used")."""
    found = set()
    for prefix, namespace in NAMESPACES.items():
        found |= {namespace + local for local in re.findall(rf"\b{prefix}:([A-Za-z_][\w-]*)", text)}
        found |= {namespace + local for local in re.findall(re.escape(namespace) + r"([A-Za-z_][\w-]*)", text)}
        found |= {
            namespace + local for local in re.findall(rf"\b{prefix.upper()}\s*\+\s*[\"']([A-Za-z_]\w*)[\"']", text)
        }
    return found


def _iris_in_graph(path: Path) -> set[str]:
    graph = rdflib.Graph().parse(path, format="turtle")
    return {
        str(t)
        for triple in graph
        for t in triple
        if isinstance(t, URIRef) and any(str(t).startswith(ns) for ns in NAMESPACES.values())
    }


def test_every_prov_org_and_foaf_term_used_is_defined_and_org_and_foaf_ones_are_declared():
    """The terms of these vocabularies in ontology/, shapes/, queries/ and the code: each is one the
    vocabulary's own file defines (no misspelt or invented term), with the kind it has there; PROV-O
    is imported (owl:imports), and each ORG and FOAF term is declared in our ontology with that kind
    and rdfs:isDefinedBy its vocabulary."""
    ours = ontology()
    used: dict[str, set[str]] = {}
    for folder, pattern in (("ontology", "*.ttl"), ("shapes", "*.ttl"), ("queries", "*.rq")):
        for path in sorted(data_dir(folder).glob(pattern)):
            text = path.read_text(encoding="utf-8")
            for term in _iris_in_graph(path) if path.suffix == ".ttl" else _iris_in_text(text):
                used.setdefault(term, set()).add(f"{folder}/{path.name}")
    for path in sorted(Path(model.__file__).parent.rglob("*.py")):
        for term in _iris_in_text(path.read_text(encoding="utf-8")):
            used.setdefault(term, set()).add(f"kgrdf/{path.name}")
    # the namespaces themselves (a prefix declaration) and the vocabularies' own documents
    for iri in (*NAMESPACES.values(), "http://www.w3.org/ns/prov-o", *map(str, DEFINED_BY.values())):
        used.pop(iri, None)
    assert {t for t in used if t.startswith(PROV)} >= {PROV + "wasDerivedFrom", PROV + "used", PROV + "Plan"}
    assert {t for t in used if t.startswith(ORG)} and {t for t in used if t.startswith(FOAF)}
    theirs = vocabularies()
    kinds = (OWL.Class, RDFS.Class, OWL.ObjectProperty, OWL.DatatypeProperty, OWL.AnnotationProperty, RDF.Property)
    problems = []
    for term, where in sorted(used.items()):
        iri = URIRef(term)
        their_kinds = {k for k in theirs.objects(iri, RDF.type) if k in kinds}
        if not their_kinds:
            problems.append(f"{term} (in {', '.join(sorted(where))}) is not a term its vocabulary defines")
            continue
        if term.startswith(PROV):
            continue  # imported: <https://kgrdf.org/ns> owl:imports <http://www.w3.org/ns/prov-o>
        # the OWL kind it has there (an rdfs:Class is an owl:Class; a bare rdf:Property, any property)
        allowed = their_kinds & {OWL.Class, OWL.ObjectProperty, OWL.DatatypeProperty, OWL.AnnotationProperty}
        allowed |= {OWL.Class} if RDFS.Class in their_kinds else set()
        if their_kinds == {RDF.Property}:
            allowed = {OWL.ObjectProperty, OWL.DatatypeProperty, OWL.AnnotationProperty}
        if not set(ours.objects(iri, RDF.type)) & allowed:
            problems.append(
                f"{term} (in {', '.join(sorted(where))}) is not declared with its kind "
                f"({', '.join(sorted(str(k) for k in their_kinds))})"
            )
        namespace = ORG if term.startswith(ORG) else FOAF
        if (iri, RDFS.isDefinedBy, DEFINED_BY[namespace]) not in ours:
            problems.append(f"{term} is not rdfs:isDefinedBy {DEFINED_BY[namespace]}")
    assert problems == []
    assert (URIRef("https://kgrdf.org/ns"), OWL.imports, URIRef("http://www.w3.org/ns/prov-o")) in ours


def test_the_term_check_finds_an_undeclared_or_invented_term(tmp_path):
    text = (
        "SELECT ?x WHERE { ?x foaf:name ?n ; org:memberOff ?o ; <http://www.w3.org/ns/prov#usedd> ?u }\n"
        'X = NamedNode(PROV + "wasAssociatedWith")'
    )
    assert _iris_in_text(text) == {FOAF + "name", ORG + "memberOff", PROV + "usedd", PROV + "wasAssociatedWith"}
    theirs = vocabularies()
    assert not set(theirs.objects(URIRef(ORG + "memberOff"), RDF.type))
    assert not set(theirs.objects(URIRef(PROV + "usedd"), RDF.type))
    assert set(theirs.objects(URIRef(FOAF + "name"), RDF.type))  # defined by FOAF...
    assert not set(ontology().objects(URIRef(FOAF + "name"), RDF.type))  # ...but not declared by us
