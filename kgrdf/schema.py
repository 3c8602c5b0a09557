"""The effective schema, read from ``ontology/*.ttl``: types, predicates, markers and sentences.

Nothing of the schema is repeated here; this module turns the ontology into values the write path
checks against. Loading it costs a few milliseconds (pyoxigraph parses the Turtle).
"""

from dataclasses import dataclass, field
from functools import cache

from kgrdf import queries, vocab
from kgrdf.errors import Refused

SCHEMES = {
    "StatusScheme": "statuses",
    "AuthorityScheme": "authorities",
    "SourceKindScheme": "source_kinds",
    "SensitivityScheme": "sensitivities",
}


@dataclass(frozen=True)
class EntityType:
    key: str
    iri: str
    axis: str
    label: str
    comment: str | None = None


def key_of(predicate: str) -> str:
    """A predicate's key, or the last part of an IRI the schema does not hold."""
    return predicate.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Predicate:
    key: str
    iri: str
    axis: str
    label: str
    sentence: str
    takes_entity: bool
    value_type: str | None
    single_valued: bool
    high_risk: bool
    person_ok: bool
    ordered: bool
    profile: bool = False
    grouping: str | None = None  # "anchor", "container" or "area": how the daily batch groups its facts
    domain: frozenset[str] = frozenset()
    range: frozenset[str] = frozenset()

    @property
    def object_kind(self) -> str:
        return "entity" if self.takes_entity else "value"

    @property
    def one_value(self) -> bool:
        """Whether its values rival: single-valued, or a free-text attribute whose values of one key
        (``KEY: VALUE``) do."""
        return self.single_valued or self.key == "attribute"

    def coexists_on(self, subject_type: str) -> bool:
        """Whether rival values of it stay side by side on a subject of ``subject_type`` instead of the
        newer closing the older: an organization's attributes (§9), where two people's accounts both
        deserve to be seen until a person rejects or corrects the one that is wrong."""
        return not self.takes_entity and self.axis == "Organizations" and subject_type == "organization"

    def reads(self, subject: str, target: str) -> str:
        """The reviewer sentence filled in (see read_out)."""
        return read_out(self.sentence, subject, target)


def read_out(sentence: str | None, subject: str, target: str, predicate: str | None = None) -> str:
    """A predicate's sentence filled in with a subject and a target, on one line: a value may hold
    newlines, and its sentence is printed as one line among others (a batch's lettered facts, a context
    pack's cited lines), where a line it began would read as one kgrdf printed. Each newline shows as ⏎.
    A fact whose predicate the schema no longer has (a site extension taken away or refused) has no
    sentence: it reads as its subject, [the predicate] and its target."""
    if sentence is None:
        sentence = f"{{subject}} [{key_of(predicate) if predicate else 'a predicate not in the schema'}] {{target}}"
    filled = sentence.replace("{subject}", subject).replace("{target}", target)
    return filled.replace("\n", " ⏎ ") if "\n" in filled else filled


@dataclass(frozen=True)
class Concept:
    notation: str
    iri: str
    label: str
    trusted: bool | None = None


@dataclass
class Schema:
    types: dict[str, EntityType]
    predicates: dict[str, Predicate]
    statuses: dict[str, Concept] = field(default_factory=dict)
    authorities: dict[str, Concept] = field(default_factory=dict)
    source_kinds: dict[str, Concept] = field(default_factory=dict)
    sensitivities: dict[str, Concept] = field(default_factory=dict)

    def __post_init__(self):
        self._by_iri = {p.iri: p for p in self.predicates.values()}
        self._concept_by_iri = {
            c.iri: c
            for group in (self.statuses, self.authorities, self.source_kinds, self.sensitivities)
            for c in group.values()
        }

    def predicate(self, key: str) -> Predicate:
        """The predicate named ``key``; raises Refused naming the known ones."""
        found = self.predicates.get(key)
        if found is None:
            close = [k for k in self.predicates if key.lower() in k or k in key.lower()]
            hint = f"did you mean {', '.join(close)}?" if close else "kg schema lists the predicates"
            shown = key if len(key) <= 80 else f"{key[:80]}…"  # (a predicate's name is short: say what began it)
            raise Refused(f"unknown predicate {shown!r}: it is not in the schema", hint=hint)
        return found

    def predicate_by_iri(self, iri: str) -> Predicate | None:
        return self._by_iri.get(iri)

    def notation(self, iri: str | None) -> str | None:
        if iri is None:
            return None
        concept = self._concept_by_iri.get(iri)
        return concept.notation if concept else iri


SCHEMA_GRAPH = vocab.SCHEMA_GRAPH


def ontology_files() -> list:
    from kgrdf.resources import data_dir

    return sorted(data_dir("ontology").glob("*.ttl"))


@cache
def _ontology_hash():
    """The ontology files' part of :func:`digest`, read once a process (like the named queries: the
    package's own files do not change under a running program)."""
    import hashlib

    h = hashlib.sha256()
    for path in ontology_files():
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h


@cache
def _extension_shapes_hash() -> bytes:
    """The digest of shapes/schema.ttl, which judges a schema.json, read once a process."""
    import hashlib

    from kgrdf.resources import data_dir

    return hashlib.sha256((data_dir("shapes") / "schema.ttl").read_bytes()).digest()


def digest(kb_path=None) -> str:
    """A digest of the ontology files and a knowledge base's schema.json: the index reloads its
    schema graph when it changes. Every read asks for it, so schema.json alone is read each time,
    as an extension is read (up to KGRDF_MAX_IMPORT bytes): one it cannot read, refused whatever
    it holds, is none (the core schema), so that the bound in force decides for the index too."""
    from kgrdf import extension
    from kgrdf.errors import BadInput

    path = kb_path / "schema.json" if kb_path is not None else None
    if path is None or not path.is_file():
        return digest_of(None)
    try:
        return digest_of(extension.read(path))
    except BadInput:
        return digest_of(None)


def digest_of(raw: bytes | None) -> str:
    """:func:`digest` of the bytes of a schema.json (None: there is none)."""
    h = _ontology_hash().copy()
    if raw is not None:
        from kgrdf import extension

        # (and how it is read and judged: an index holding what an older kg made of the same file, or
        # accepted by older shapes, reloads it)
        h.update(f"schema.json {extension.QUADS_FORMAT}\0".encode() + _extension_shapes_hash())
        h.update(raw)
    return h.hexdigest()


def effective_quads(kb_path) -> tuple[list, object]:
    """The core ontology plus a knowledge base's schema.json when it is accepted, and the extension
    (None without a schema.json). A refused extension leaves the core schema."""
    core_quads = quads()
    path = kb_path / "schema.json"
    if not path.is_file():
        return core_quads, None
    from kgrdf import extension

    ext = extension.check_file(path, cache=kb_path / "cache")
    return (core_quads + ext.quads if ext.accepted else core_quads), ext


def quads() -> list:
    """The ontology as quads in the schema graph, which the index holds beside the data."""
    from pyoxigraph import NamedNode, Quad, RdfFormat, parse

    graph = NamedNode(SCHEMA_GRAPH)
    out = []
    for path in ontology_files():
        for triple in parse(path=str(path), format=RdfFormat.TURTLE):
            out.append(Quad(triple.subject, triple.predicate, triple.object, graph))
    return out


SCHEMA_QUERIES = ("schema-types", "schema-predicates", "schema-concepts")


def of_index(backend, kb_path=None) -> Schema:
    """The schema the index holds, from ``cache/schema.json`` in the knowledge base at ``kb_path``
    when it was made for the same schema digest and the same schema queries, else from the index
    (then kept there). Every command reads the schema: from the cache it costs a millisecond,
    whatever the size of the knowledge base."""
    import hashlib

    from kgrdf import files

    at = backend.schema_digest() if kb_path is not None else None
    if at is None:
        return from_backend(backend)
    h = hashlib.sha256(at.encode())
    for name in SCHEMA_QUERIES:
        h.update(b"\0" + queries.load(name).text.encode("utf-8"))
    key = h.hexdigest()
    rows = files.read_cache(kb_path, "schema", key)
    if rows is None or set(rows) != set(SCHEMA_QUERIES):
        rows = _schema_rows(backend)
        files.write_cache(kb_path, "schema", key, rows)
    return from_rows(rows)


def _schema_rows(backend) -> dict[str, list[dict]]:
    """The rows of the schema queries, as plain values, by query."""
    return {
        name: [{k: queries.value(v) for k, v in row.items()} for row in backend.select(queries.load(name))]
        for name in SCHEMA_QUERIES
    }


def from_backend(backend) -> Schema:
    """The schema the index holds in its schema graph."""
    return from_rows(_schema_rows(backend))


def from_rows(rows: dict[str, list[dict]]) -> Schema:
    """The schema from the rows of the schema queries (see :func:`_schema_rows`)."""

    def select(name):
        return rows[name]

    types = {
        r["key"]: EntityType(r["key"], r["type"], r["axis"], r["label"] or r["key"], r["comment"])
        for r in select("schema-types")
    }
    grouped: dict[str, dict] = {}
    for r in select("schema-predicates"):
        entry = grouped.setdefault(r["key"], {**r, "domain": set(), "range": set()})
        if r["domain"]:
            entry["domain"].add(r["domain"])
        if r["range"]:
            entry["range"].add(r["range"])
    predicates = {
        key: Predicate(
            key=key,
            iri=r["predicate"],
            axis=r["axis"],
            label=r["label"] or key,
            sentence=r["sentence"],
            takes_entity=bool(r["isObject"]),
            value_type=r["valueType"],
            single_valued=bool(r["singleValued"]),
            high_risk=bool(r["highRisk"]),
            person_ok=bool(r["personOk"]),
            ordered=bool(r["ordered"]),
            profile=bool(r["profile"]),
            grouping=r["grouping"],
            domain=frozenset(r["domain"]),
            range=frozenset(r["range"]),
        )
        for key, r in grouped.items()
    }
    schema = Schema(types=types, predicates=predicates)
    for r in select("schema-concepts"):
        group = getattr(schema, SCHEMES[r["scheme"].rsplit("#", 1)[-1]])
        group[r["notation"]] = Concept(r["notation"], r["concept"], r["label"] or r["notation"], r["trusted"])
    schema.__post_init__()
    return schema


@cache
def core() -> Schema:
    """The core schema of ``ontology/``, without a knowledge base."""
    from kgrdf.store.oxigraph import OxigraphBackend

    backend = OxigraphBackend(None)
    backend.store.extend(quads())
    return from_backend(backend)
