"""A site's schema extension: ``schema.json`` in the knowledge base, turned into RDF and checked (§4).

    {"types": [{"name": "contract", "axis": "Organizations", "subclass_of": "decision"}],
     "predicates": [{"name": "on_call_for", "axis": "Process", "object": "entity",
                     "domain": ["team"], "range": ["service"], "sentence": "{subject} is on call for {target}",
                     "single_valued": false, "subproperty_of": null}]}

First its names are checked (below), then the extension is converted to RDF, the OWL RL closure of
the core ontology plus the extension is computed (owlrl), and the closure is validated against
``shapes/schema.ttl``: no extension can add a predicate about a person, directly or through a
subclass or subproperty chain. A refused extension never stops the knowledge base: it keeps
working on the core schema. A subproperty of a high-risk or single-valued core predicate is one
too: saying it says its parent (a site ``lifecycle`` under ``status`` is never confirmed by sources
alone, and holds one value at a time). And a value of a subproperty is one of its parent's, so it
takes what its parent takes: the same kind of object, subjects and objects of its parent's types
(one that names no domain or range takes its parents' in common), or it is refused.

**Names.** Each name becomes an IRI, ``site:NAME`` (https://kgrdf.org/ns/site#NAME), and a key that
commands take: a type's is the first part of an entity id (``contract/acme``), a predicate's is what
``kg propose`` takes. A name is valid when it is lower-case ASCII (letters and ``_`` for a type, as an
entity id has it; letters, digits and ``_`` for a predicate), starts with a letter and is at most 64
characters, so that one name is one IRI and no two valid names differ only in case or Unicode form.
A valid name is compared with every other by key and by IRI local name, after Unicode NFKC and case
folding. Each kind of name it can meet, and what happens:

    the other name                           a site type is refused as    a site predicate is refused as
    core type by key (team)                  already a core type          named like a core type
    core type by IRI (kg:Team)               (its key: a core type's IRI is its key capitalised)
    core predicate by key (owns)             named like a core predicate  already a core predicate
    core predicate by IRI (kg:memberOf)      memberof differs only in case from kg:memberOf
    a site type of the same name             given twice                  both a type and a predicate
    a site predicate of the same name        both a type and a predicate  given twice
    reserved word (fact, entities)           reserved (RESERVED says why) no clash: it is in no IRI path
    concept (confirmed, ticket, kg:TicketSource; statuses, authorities, source kinds, sensitivities, axes)
                                             no clash                     no clash
    other core vocabulary (kg:Entity, kg:summary, kg:audience)
                                             no clash                     no clash
    any of these in another case or Unicode form (Owns, ｏｗｎｓ, owns + U+200B, ówns, member-of)
                                             an invalid name, saying what it reads as (the core predicate owns)

"Both a type and a predicate" is one IRI typed as a class and as a property. A concept is a value of
a fact's metadata, never a type or a predicate, and its IRI is in kg:, as the rest of the core
vocabulary is, which no site name becomes and no command takes as a key: a type named ticket (a
source kind) is fine. The core itself has one key of two kinds (``actor``, a type and a predicate);
a site cannot add another. Each clash and each invalid name is refused with its own one-line reason.
"""

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from kgrdf.autoconfirm import CLAIM
from kgrdf.errors import BadInput

SITE = "https://kgrdf.org/ns/site#"
AXES = {"People": "People", "Process": "ProcessAxis", "Product": "ProductAxis", "Organizations": "Organizations"}
MAX_NAME = 64
# of to_quads: 2, a subproperty takes its parent's high risk and single value; 3, its bounds; 4, its value type
QUADS_FORMAT = "4"
TYPE_FIELDS = ("name", "axis", "label", "subclass_of")
PREDICATE_FIELDS = ("name", "axis", "object", "sentence", "label", "domain", "range", "single_valued", "subproperty_of")
_PREDICATE_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
GRAMMAR = {
    "type": "a type name is lower-case ASCII letters and _, starting with a letter, as in an entity id (contract/acme)",
    "predicate": "a predicate name is lower-case ASCII letters, digits and _, starting with a letter",
}
# Type names kgrdf's own IRIs use where a type's name goes: an entity's IRI is
# <kb>/<perspective>/<type>/<name>.
RESERVED = {
    "fact": "kgrdf names a fact <kb>/<perspective>/fact/<id>, so an entity fact/<id> would take a fact's IRI",
    "entities": "kgrdf names a perspective's entity graph <kb>/<perspective>/entities, which its entities' "
    "IRIs would extend",
}


@dataclass
class Extension:
    """What schema.json holds, as RDF, and whether it may be used."""

    path: Path | None
    quads: list = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    digest: str = ""
    types: list[str] = field(default_factory=list)
    predicates: dict[str, str] = field(default_factory=dict)  # name -> "entity" or "value"

    @property
    def accepted(self) -> bool:
        return bool(self.digest) and not self.problems


# --- names ------------------------------------------------------------------------------------------


def fold(name: str) -> str:
    """A name as it is compared: Unicode NFKC, case folded."""
    return unicodedata.normalize("NFKC", name).casefold()


def _loose(name: str) -> str:
    """What an invalid name reads as: its letters without accents, invisible characters or case,
    spaces and hyphens as _."""
    letters = "".join(
        c for c in unicodedata.normalize("NFKD", name) if unicodedata.category(c) not in ("Mn", "Cf", "Cc")
    )
    return re.sub(r"[\s\-]+", "_", unicodedata.normalize("NFKC", letters).casefold()).strip("_")


def _local(iri: str) -> str:
    return iri.rsplit("#", 1)[-1]


def _prefixed(iri: str) -> str:
    from kgrdf import vocab

    return "kg:" + _local(iri) if iri.startswith(vocab.KG) else f"<{iri}>"


def _valid(name: str, kind: str) -> bool:
    from kgrdf import vocab

    if len(name) > MAX_NAME:
        return False
    if kind == "type":  # the first part of an entity id
        return "/" not in name and bool(vocab.ID_PATTERN.match(f"{name}/x"))
    return bool(_PREDICATE_NAME.match(name))


class _Names:
    """The names a schema.json is checked against: the core's types and predicates by key and by IRI
    local name, folded; the reserved words; and the site's own as they are read."""

    def __init__(self, core):
        self.by_key: dict[str, list[tuple[str, object]]] = {}
        self.by_iri: dict[str, list[tuple[str, object]]] = {}
        for kind, group in (("type", core.types), ("predicate", core.predicates)):
            for item in group.values():
                self.by_key.setdefault(fold(item.key), []).append((kind, item))
                self.by_iri.setdefault(fold(_local(item.iri)), []).append((kind, item))
        self.site: dict[str, list[str]] = {}  # name -> the kinds it is given as, in order

    def reads_as(self, name: str) -> str:
        """'; it reads as ...' when an invalid name folds to a known one, else ''."""
        loose = _loose(name)
        for kind, item in self.by_key.get(loose, []) + self.by_iri.get(loose, []):
            return f"; it reads as the core {kind} {item.key}"
        if loose in RESERVED:
            return f"; it reads as the reserved word {loose}"
        if loose in self.site:
            return f"; it reads as the site {self.site[loose][0]} {loose}"
        return ""

    def clash(self, name: str, kind: str) -> str | None:
        """Why a valid site name may not be used, or None."""
        key = fold(name)
        by_key = self.by_key.get(key, [])
        if any(other == kind for other, _item in by_key):
            return f"the {kind} {name} is already a core {kind}"
        if by_key:
            other, item = by_key[0]
            return (
                f"the {kind} {name} has the name of the core {other} {item.key}: one key would name a {kind} "
                f"and a {other}"
            )
        for other, item in self.by_iri.get(key, []):
            return f"the {kind} {name} differs only in case from {_prefixed(item.iri)}, the core {other} {item.key}"
        if kind == "type" and key in RESERVED:
            return f"the type {name} is a reserved word: {RESERVED[key]}"
        return None


def _shown(value) -> str:
    """A JSON value for a message: short text as itself, anything else as inputs.shown says it."""
    from kgrdf import inputs

    if isinstance(value, str) and len(value) <= 40:
        return f"text ({value!r})"
    return inputs.shown(value)


def _entries(data, label: str, problems: list[str]) -> tuple[list[dict], list[dict]]:
    """The type and predicate entries of a schema.json, each an object; what is not is a problem."""
    if not isinstance(data, dict):
        problems.append(f'{label} must be an object with "types" and "predicates" lists, not {_shown(data)}')
        return [], []
    unknown = sorted(set(data) - {"types", "predicates"})
    if unknown:
        problems.append(f'{label} holds {", ".join(map(repr, unknown))}: it may hold only "types" and "predicates"')
    out = []
    for group, kind in (("types", "type"), ("predicates", "predicate")):
        entries = data.get(group, [])
        if not isinstance(entries, list):
            problems.append(f'"{group}" must be a list, not {_shown(entries)}')
            entries = []
        kept = []
        for number, entry in enumerate(entries, start=1):
            if not isinstance(entry, dict):
                problems.append(f"{kind} {number} must be an object, not {_shown(entry)}")
            else:
                kept.append(entry)
        out.append(kept)
    return out[0], out[1]


def _field_problems(entry: dict, kind: str, number: int) -> list[str]:
    """What is wrong with one entry's fields, other than its name's clashes."""
    from kgrdf import inputs

    name = entry.get("name")
    what = f"the {kind} {name}" if isinstance(name, str) and _valid(name, kind) else f"{kind} {number}"
    allowed = TYPE_FIELDS if kind == "type" else PREDICATE_FIELDS
    problems = []
    unknown = [k for k in entry if k not in allowed]
    if unknown:
        problems.append(
            f"{what} has the field{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}, "
            f"which a {kind} does not take; its fields are {', '.join(allowed)}"
        )
    # (a list or an object is no key of AXES: asked as one, it would raise, not be a problem)
    if not isinstance(entry.get("axis"), str) or entry["axis"] not in AXES:
        problems.append(f"{what}: axis must be one of {', '.join(AXES)}, not {_shown(entry.get('axis'))}")
    if kind == "predicate":
        if not isinstance(entry.get("object"), str) or entry["object"] not in ("entity", "value"):
            problems.append(f'{what}: "object" must be "entity" or "value", not {_shown(entry.get("object"))}')
        if "single_valued" in entry and not isinstance(entry["single_valued"], bool):
            problems.append(f'{what}: "single_valued" must be true or false, not {_shown(entry["single_valued"])}')
        sentence = entry.get("sentence")
        if sentence is None or (isinstance(sentence, str) and not sentence.strip()):  # (each named, not once for all)
            problems.append(f'{what} needs a reviewer sentence ("sentence": "{{subject}} ... {{target}}")')
    for key in ("label", "sentence"):
        if entry.get(key) is not None and key in allowed:
            named = f'{what}: "{key}"'
            try:
                inputs.refuse_controls(inputs.text(entry[key], named), named)  # read as written: a CR is refused
            except BadInput as exc:
                problems.append(exc.message)
    for key in ("subclass_of", "domain", "range", "subproperty_of"):
        value = entry.get(key)
        if (
            key in allowed
            and value is not None
            and not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)))
        ):
            problems.append(f'{what}: "{key}" must be a name or a list of names, not {_shown(value)}')
    return problems


def _names(value) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def name_problems(data, core, label: str = "schema.json") -> list[str]:
    """Why a schema.json's content cannot be turned into RDF: its form, its fields, each name that is
    invalid, reserved or clashes (see the table above), and each name it refers to that is not
    there, each with a one-line reason, in the order of the file. Pure: ``core`` is the core
    :class:`kgrdf.schema.Schema`."""
    problems: list[str] = []
    types, predicates = _entries(data, label, problems)
    given = (("type", types), ("predicate", predicates))
    valid: dict[str, list[str]] = {}  # each valid name -> the kinds it is given as
    for kind, entries in given:
        for entry in entries:
            name = entry.get("name")
            if isinstance(name, str) and _valid(name, kind):
                valid.setdefault(name, []).append(kind)
    names = _Names(core)
    names.site = valid
    site_types = {name for name, kinds in valid.items() if "type" in kinds}
    reported = set()
    for kind, entries in given:
        fields = TYPE_FIELDS if kind == "type" else PREDICATE_FIELDS
        for number, entry in enumerate(entries, start=1):
            name = entry.get("name")
            problems += _field_problems(entry, kind, number)
            if name is None or name == "":
                problems.append(f'{kind} {number} needs a "name"')
            elif not isinstance(name, str):
                problems.append(f'{kind} {number}: "name" must be text, not {_shown(name)}')
            elif (name, kind) not in reported:
                reported.add((name, kind))
                if len(name) > MAX_NAME:
                    problems.append(
                        f"the {kind} name {name[:40]!r}... is {len(name)} characters long; the most is {MAX_NAME}"
                    )
                elif not _valid(name, kind):
                    problems.append(
                        f"the {kind} name {name[:40]!r} is not valid: {GRAMMAR[kind]}{names.reads_as(name)}"
                    )
                elif (reason := names.clash(name, kind)) is not None:
                    problems.append(reason)
                elif valid[name].count(kind) > 1:
                    problems.append(f"the {kind} {name} is given twice")
                elif kind == "predicate" and "type" in valid[name]:
                    problems.append(
                        f"{name} is both a type and a predicate: one IRI, site:{name}, would be a class and a property"
                    )
            what = f"the {kind} {name}" if isinstance(name, str) and _valid(name, kind) else f"{kind} {number}"
            for key in ("subclass_of", "domain", "range"):
                if key in fields and isinstance(entry.get(key), (str, list)):
                    for ref in _names(entry[key]):
                        if isinstance(ref, str) and ref not in core.types and ref not in site_types:
                            problems.append(
                                f"{what} names the type {ref[:40]!r} in {key}, which is neither a core "
                                "type nor one the schema adds"
                            )
            if kind == "predicate" and isinstance(entry.get("subproperty_of"), (str, list)):
                parents = _names(entry["subproperty_of"])
                for ref in parents:
                    if isinstance(ref, str) and ref not in core.predicates:
                        problems.append(f"{what}: subproperty_of {ref[:40]!r} is not a core predicate")
                kinds = {
                    core.predicates[ref].value_type
                    for ref in parents
                    if isinstance(ref, str) and ref in core.predicates and core.predicates[ref].value_type
                }
                if len(kinds) > 1:  # (a value of it is one of each parent's: a date and a text at once)
                    problems.append(
                        f"{what}: its parents in subproperty_of take values of different kinds (dates and text)"
                    )
                if CLAIM in parents:  # (its facts would be claims kg org affiliate did not record)
                    problems.append(
                        f"{what}: {CLAIM} takes no subproperty: a claim is hearsay, recorded with its speaker by "
                        "kg org affiliate and never confirmed by its sources"
                    )
    return problems


# --- RDF ----------------------------------------------------------------------------------------------


def to_quads(data: dict, core) -> list:
    """The extension as quads in the schema graph. Raises BadInput with the first of
    :func:`name_problems` when there is one."""
    from pyoxigraph import Literal, NamedNode, Quad

    from kgrdf import vocab
    from kgrdf.schema import SCHEMA_GRAPH

    problems = name_problems(data, core)
    if problems:
        raise BadInput(problems[0])
    graph = NamedNode(SCHEMA_GRAPH)
    rdf_type, label = vocab.RDF_TYPE, vocab.term("rdfs:label")

    def type_iri(name: str) -> NamedNode:
        return NamedNode(core.types[name].iri) if name in core.types else NamedNode(SITE + name)

    quads = []
    for entry in data.get("types", []):
        node = NamedNode(SITE + entry["name"])
        quads += [
            Quad(node, rdf_type, vocab.term("owl:Class"), graph),
            Quad(node, rdf_type, vocab.kg("EntityType"), graph),
            Quad(node, rdf_type, vocab.kg("SiteType"), graph),
            Quad(node, vocab.kg("key"), Literal(entry["name"]), graph),
            Quad(node, vocab.kg("axis"), vocab.kg(AXES[entry["axis"]]), graph),
            Quad(node, label, Literal(entry.get("label") or entry["name"]), graph),
            Quad(node, vocab.term("rdfs:subClassOf"), vocab.kg("Entity"), graph),
        ]
        for parent in _names(entry.get("subclass_of")):
            quads.append(Quad(node, vocab.term("rdfs:subClassOf"), type_iri(parent), graph))
    for entry in data.get("predicates", []):
        node = NamedNode(SITE + entry["name"])
        kind = "owl:ObjectProperty" if entry["object"] == "entity" else "owl:DatatypeProperty"
        quads += [
            Quad(node, rdf_type, vocab.term(kind), graph),
            Quad(node, rdf_type, vocab.kg("SitePredicate"), graph),
            Quad(node, vocab.kg("key"), Literal(entry["name"]), graph),
            Quad(node, vocab.kg("axis"), vocab.kg(AXES[entry["axis"]]), graph),
            Quad(node, label, Literal(entry.get("label") or entry["name"].replace("_", " ")), graph),
        ]
        if entry.get("sentence"):
            quads.append(Quad(node, vocab.kg("sentence"), Literal(entry["sentence"]), graph))
        parents = [core.predicates[parent] for parent in _names(entry.get("subproperty_of"))]
        if entry["object"] == "value":  # (a value of a date's subproperty is a date: its parent's is)
            kinds = sorted({parent.value_type for parent in parents if parent.value_type})
            kind = NamedNode(kinds[0]) if len(kinds) == 1 else vocab.XSD_STRING
            quads.append(Quad(node, vocab.kg("valueType"), kind, graph))
        # What it says, its parents say too: a value of theirs is one of its own, so their bounds are its own
        if entry.get("single_valued") or any(parent.single_valued for parent in parents):
            quads.append(Quad(node, rdf_type, vocab.kg("SingleValuedPredicate"), graph))
        if any(parent.high_risk for parent in parents):
            quads.append(Quad(node, rdf_type, vocab.kg("HighRiskPredicate"), graph))
        # One that names no domain (range) takes its parents' in common: the shapes refuse one wider than theirs
        domain = _names(entry.get("domain")) or _shared(parent.domain for parent in parents)
        range_ = _names(entry.get("range")) or _shared(p.range for p in parents if entry["object"] == "entity")
        for name in domain:
            quads.append(Quad(node, vocab.kg("domainIncludes"), type_iri(name), graph))
        for name in range_:
            quads.append(Quad(node, vocab.kg("rangeIncludes"), type_iri(name), graph))
        for parent in parents:
            quads.append(Quad(node, vocab.term("rdfs:subPropertyOf"), NamedNode(parent.iri), graph))
    return quads


def _shared(bounds) -> list[str]:
    """The types every one of ``bounds`` (type key sets; an empty one bounds nothing) takes, sorted."""
    given = [set(bound) for bound in bounds if bound]
    return sorted(set.intersection(*given)) if given else []


def problems_of(quads, core_quads) -> list[str]:
    """Why the extension is refused: its OWL RL closure with the core ontology against the schema
    shapes, checked by kg's own evaluator of the shapes (kgrdf.shacl) on an Oxigraph store of the
    closure. pySHACL, which the tests hold it to, took 12 s for ten predicates and 72 s for forty
    (its SPARQL runs in Python over the closure), in kg schema check and in the first command after
    a schema.json is put in place; kg's takes milliseconds."""
    import owlrl
    import rdflib
    from pyoxigraph import DefaultGraph, Quad, Store

    from kgrdf import shacl

    graph = rdflib.Graph()
    for quad in list(core_quads) + list(quads):
        graph.add(tuple(_rdflib(t) for t in (quad.subject, quad.predicate, quad.object)))
    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics).expand(graph)
    store = Store()
    # (OWL RL's closure also says things of literals, "x" a rdfs:Literal, which RDF cannot: no shape reads them)
    store.extend(
        Quad(_oxigraph(s), _oxigraph(p), _oxigraph(o), DefaultGraph())
        for s, p, o in graph
        if not isinstance(s, rdflib.Literal) and isinstance(p, rdflib.URIRef)
    )
    return sorted({finding.message for finding in shacl.check(store, shacl.compiled("schema.ttl"), threads=1)})


def _oxigraph(term):
    import rdflib
    from pyoxigraph import BlankNode, Literal, NamedNode

    if isinstance(term, rdflib.URIRef):
        return NamedNode(str(term))
    if isinstance(term, rdflib.BNode):
        return BlankNode(str(term))
    if term.language:
        return Literal(str(term), language=term.language)
    if term.datatype is not None:
        return Literal(str(term), datatype=NamedNode(str(term.datatype)))
    return Literal(str(term))


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


# --- a knowledge base's use of its site names -----------------------------------------------------------


def usage(kb) -> dict[str, dict[str, int]]:
    """Site name -> how the knowledge base's data uses it, over every perspective: {"entities": n}
    for a type, {"entity": n, "value": n} (facts whose object is an entity, or a value) for a
    predicate. A schema.json serves every perspective, so all of them count."""
    from kgrdf import queries

    with kb.reading() as session:
        rows = session.backend.select(queries.load("schema-usage"))
    found: dict[str, dict[str, int]] = {}
    for row in rows:
        term, use, count = (queries.value(row[k]) for k in ("term", "use", "count"))
        found.setdefault(term.removeprefix(SITE), {})[use] = int(count)
    return found


def usage_problems(ext: Extension, used: dict[str, dict[str, int]]) -> list[str]:
    """What the knowledge base's data uses that ``ext``, as its next schema.json, would take away:
    a site type its entities have, a site predicate its facts have, or the kind of object those
    facts have (an entity or a value). Pure."""
    problems = []
    for name, uses in sorted(used.items()):
        if uses.get("entities"):
            if name not in ext.types:
                n = uses["entities"]
                problems.append(
                    f"the knowledge base has {n} entit{'ies' if n != 1 else 'y'} of the site type {name}, "
                    "which this schema drops"
                )
            continue
        facts = uses.get("entity", 0) + uses.get("value", 0)
        if not facts:
            continue
        if name not in ext.predicates:
            problems.append(
                f"the knowledge base has {facts} fact{'s' if facts != 1 else ''} of the site predicate "
                f"{name}, which this schema drops"
            )
            continue
        wrong = "value" if ext.predicates[name] == "entity" else "entity"
        if uses.get(wrong):
            n = uses[wrong]
            problems.append(
                f"the knowledge base has {n} fact{'s' if n != 1 else ''} of {name} whose object is "
                f"{'a value' if wrong == 'value' else 'an entity'}, and this schema makes it take "
                f"{'an entity' if wrong == 'value' else 'a value'}"
            )
    return problems


# --- reading and checking -------------------------------------------------------------------------------


def read(path: Path) -> bytes:
    """The bytes of a schema file, at most KGRDF_MAX_IMPORT of them. Raises BadInput (exit 2) naming
    the file when it is missing, a folder, a device, unreadable or too large."""
    from kgrdf import inputs

    return inputs.read(path, "KGRDF_MAX_IMPORT", "the schema file")


def check(raw: bytes, label: str, path: Path | None = None, kb=None, cache: Path | None = None) -> Extension:
    """Check a schema file's bytes; never raises for their content (the problems say why). With
    ``kb``, as that knowledge base's next schema.json: it must also keep what the data uses. With
    ``cache`` (a knowledge base's cache folder), the verdict of the OWL RL closure is kept there for
    the same bytes (see _closure_problems)."""
    import hashlib

    from kgrdf import inputs, schema

    ext = Extension(path, digest=hashlib.sha256(raw).hexdigest())
    try:
        data = inputs.parse_json(raw)
    except ValueError as exc:
        ext.problems.append(f"{label} is not JSON: {exc}")
        return ext
    core = schema.core()
    ext.problems = name_problems(data, core, label)
    if ext.problems:
        return ext
    ext.types = [entry["name"] for entry in data.get("types", [])]
    ext.predicates = {entry["name"]: entry["object"] for entry in data.get("predicates", [])}
    ext.quads = to_quads(data, core)
    if ext.quads:
        ext.problems = _closure_problems(ext, raw, cache)
    if kb is not None:
        ext.problems += usage_problems(ext, usage(kb))
    return ext


def check_file(path: Path, cache: Path | None = None) -> Extension:
    """Read and check a knowledge base's schema.json; never raises for its content or for a file
    that cannot be read (the problems say why: the knowledge base then works on the core schema)."""
    try:
        raw = read(path)
    except BadInput as exc:
        return Extension(path, problems=[exc.message])
    return check(raw, Path(path).name, path, cache=cache)


def _closure_problems(ext: Extension, raw: bytes, cache: Path | None) -> list[str]:
    """problems_of the extension, kept in ``cache``/extension.json for the schema digest of these
    bytes (the core ontology, the shapes and how a file is read included): the closure takes a
    second or more (OWL RL in Python: a chain of 300 subclasses, a minute), and kg schema, like every
    index that loads the schema, asked for it again each time. Derived, like the index: never in git, deleted by kg forget."""
    import json

    from kgrdf import files, schema

    if cache is None or cache.is_symlink():
        return problems_of(ext.quads, schema.quads())
    key, kept = schema.digest_of(raw), cache / "extension.json"
    try:
        held = json.loads(kept.read_text(encoding="utf-8"))
        if held["digest"] == key and isinstance(held["problems"], list):
            return [str(problem) for problem in held["problems"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    problems = problems_of(ext.quads, schema.quads())
    try:
        cache.mkdir(exist_ok=True)
        files.replace(
            kept, json.dumps({"digest": key, "problems": problems}).encode("utf-8"), suffix=files.own_suffix()
        )
    except OSError:
        pass  # a folder that takes no file: judged again next time
    return problems
