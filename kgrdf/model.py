"""Entities and facts as values, and the quads that say them. Pure: no I/O.

A fact is one named graph holding one triple; everything about it is in its provenance graph:
status, authority, sources, the two timelines, supersession, and an update record for every change
that says what each field held before. This module folds the quads of a fact back into a
:class:`Fact`, and turns a new fact or a change into the quads to add and delete.
"""

import hashlib
import re
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field, replace
from functools import cached_property, lru_cache

from pyoxigraph import Literal, NamedNode, Quad

from kgrdf import nquads, settings, vocab
from kgrdf.vocab import kg

# Every field of a fact's metadata: its property and how its value is written.
FIELDS: dict[str, tuple[NamedNode, str]] = {
    "status": (kg("factStatus"), "concept"),
    "authority": (kg("authority"), "concept"),
    "sensitivity": (kg("sensitivity"), "concept"),
    "observed_at": (kg("observedAt"), "datetime"),
    "observations": (kg("observations"), "integer"),
    "valid_from": (kg("validFrom"), "datetime"),
    "valid_to": (kg("validTo"), "datetime"),
    "recorded_at": (kg("recordedAt"), "datetime"),
    "retired_at": (kg("retiredAt"), "datetime"),
    "superseded_by": (kg("supersededBy"), "iri"),
    "last_confirmed_at": (kg("lastConfirmedAt"), "datetime"),
    "reviewed_by": (kg("reviewedBy"), "string"),
    "prevents_rework": (kg("preventsRework"), "boolean"),
    "extracted": (kg("extracted"), "boolean"),
    "claimed_role": (kg("claimedRole"), "string"),
    "verified": (kg("verified"), "boolean"),
    "promoted_to": (kg("promotedTo"), "iri"),
    "merged_from": (kg("mergedFrom"), "iri"),
    "order": (kg("order"), "integer"),
    "perspective": (kg("perspective"), "iri"),
}
# Where a fact was heard: each hearing is a node of its own (a kg:Hearing, a prov:Activity) with these.
# A fact written before hearings existed carries them on itself: it reads as its one hearing.
HEARING_FIELDS: dict[str, tuple[NamedNode, str]] = {
    "audience": (kg("audience"), "string"),
    "said_by": (kg("saidBy"), "iri"),
    "message": (kg("message"), "string"),
    "speaker_affiliation": (kg("speakerAffiliation"), "iri"),
    "heard_at": (kg("heardAt"), "datetime"),
    "confidence": (kg("confidence"), "decimal"),
    "span": (kg("span"), "string"),
}
_FIELD_BY_IRI = {iri.value: name for name, (iri, _) in {**HEARING_FIELDS, **FIELDS}.items()}
_HEARING_BY_IRI = {iri.value: name for name, (iri, _) in HEARING_FIELDS.items()}
SOURCES = "sources"
# The order a change's fields are told in, whatever order a store gives their records in.
_FIELD_ORDER = {name: n for n, name in enumerate([*FIELDS, *HEARING_FIELDS, SOURCES])}
HEARING = kg("Hearing")
HEARD_IN = kg("heardIn")  # fact -> hearing
ADDED_HEARING = kg("addedHearing")  # update record -> the hearing it added
# A field's change says what it held before and after; a change of the sources says the ones it
# added (a record written before kg:added says them all, before and after).
_BEFORE, _AFTER, ADDED = kg("before"), kg("after"), kg("added")
USED = NamedNode(vocab.PROV + "used")  # hearing -> the sources it brought
_SPACES = re.compile(r"\s+")
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"


UNPRINTABLE = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Cs": "a lone surrogate",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}


def refuse_unprintable(text: str, what: str) -> str:
    """``text`` when it holds no control, format or separator character (Unicode categories Cc,
    Cf, Cs, Zl, Zp: newlines and tabs, zero-width and direction marks, U+2028, U+2029); such a
    character splits a line of a file or hides what a value says. Raises BadInput naming it."""
    import unicodedata

    from kgrdf.errors import BadInput

    if text.isprintable():  # (no character of those categories is printable: most texts end here)
        return text
    for index, char in enumerate(text):
        category = unicodedata.category(char)
        if category in UNPRINTABLE:
            raise BadInput(
                f"{what} holds {UNPRINTABLE[category]} (U+{ord(char):04X}) at character {index + 1}; "
                f"use visible characters only"
            )
    return text


# A fact's place in a sequence (has_step's order) is a whole number from 1 to MAX_ORDER: a sequence
# of a million steps is beyond any process, and a larger number would not fit the integers of every
# store the fact goes to (the batch's cache holds 64-bit ones).
MAX_ORDER = 1_000_000


def check_order(order) -> int:
    """``order`` when it is a place in a sequence (1 to MAX_ORDER). Raises BadInput saying the range."""
    from kgrdf.errors import BadInput

    if isinstance(order, bool) or not isinstance(order, int) or not 1 <= order <= MAX_ORDER:
        shown = f"{order!r}"[:40] if not isinstance(order, int) or abs(order) < 10**30 else "of more than 30 digits"
        raise BadInput(f"the order {shown} is not a place in a sequence: give a whole number from 1 to {MAX_ORDER:,}")
    return order


def shared_time(start_a, end_a, start_b, end_b) -> tuple | None:
    """The instants two valid times ([start, end): ISO times, None for an open start or end, the
    beginning and the end of time) share, as (start, end) with None for an open one; None when they
    share none. An empty valid time (it ends where it starts: a value that never held) shares none."""
    start = max(start_a or "", start_b or "")
    ends = [end for end in (end_a, end_b) if end]
    end = min(ends) if ends else None
    if end is not None and not start < end:
        return None
    return (start or None, end)


def normalize(text: str) -> str:
    """Labels and values compare ignoring case, runs of spaces and Unicode form (an accent typed
    as one character or as a letter and a combining mark: NFC)."""
    return _SPACES.sub(" ", nfc(text)).strip().casefold()


def match_key(text: str) -> str:
    """The key a label is found by: NFC, lower case, runs of spaces folded (SPARQL LCASE agrees)."""
    return _SPACES.sub(" ", nfc(text)).strip().lower()


def nfc(text: str) -> str:
    """``text`` in Unicode's composed form (NFC), in which kgrdf keeps and compares every text."""
    if text.isascii():
        return text
    import unicodedata

    return unicodedata.normalize("NFC", text)


def clean_label(text: str) -> str:
    """A label as it is kept: NFC, runs of spaces folded."""
    return _SPACES.sub(" ", nfc(text)).strip()


@dataclass(frozen=True)
class Source:
    kind: str
    ref: str
    quote: str | None = None

    @cached_property  # (a source's node is named in its quads and in its hearing's)
    def digest(self) -> str:
        return hashlib.sha256(f"{self.kind}:{self.ref}".encode()).hexdigest()[:12]

    def label(self) -> str:
        return f"{self.kind}:{self.ref}"


@dataclass(frozen=True, slots=True)  # (an import of 100k facts holds 100k of them)
class Hearing:
    """One time a fact was heard: who could hear it, the sources it came with, who said it in which
    message (and their organization then), when; for an extracted fact, the extractor's confidence
    and the words. ``iri`` is None for the one hearing of a fact written before hearings existed."""

    iri: str | None
    audience: str | None = "owner"  # None: not recorded (a fact from before audiences): the owner's
    sources: tuple = ()  # Source values
    said_by: str | None = None
    message: str | None = None
    speaker_affiliation: str | None = None
    heard_at: str | None = None
    confidence: float | None = None
    span: str | None = None


def hearing_iri(fact_iri: str, seq: int, step: int) -> str:
    """The ``step``-th hearing of ``fact_iri`` recorded by transaction ``seq``."""
    return f"{fact_iri}/hearing/{seq}.{step}"


# A disclosure: one time a fact was told, in a reply (a message) to an audience. It is said in the
# fact's provenance graph beside its hearings, and changes none of the fact's fields.
DISCLOSURE = kg("Disclosure")
DISCLOSED = kg("disclosed")  # disclosure -> the fact it told
TOLD_TO, TOLD_IN, TOLD_AT, TOLD_BY = kg("toldTo"), kg("toldIn"), kg("toldAt"), kg("toldBy")
_DISCLOSURE_PATH = "/disclosure/"


def disclosure_iri(fact_iri: str, seq: int, step: int) -> str:
    """The ``step``-th disclosure of ``fact_iri`` recorded by transaction ``seq``."""
    return f"{fact_iri}{_DISCLOSURE_PATH}{seq}.{step}"


def is_disclosure(iri: str) -> bool:
    """Whether an IRI names a disclosure node (disclosure_iri)."""
    return _DISCLOSURE_PATH in iri and "/fact/" in iri


def disclosure_quads(fact_iri: str, node: str, audience: str, message: str, at: str, by: str) -> list[Quad]:
    """The quads of one disclosure of a fact, in its provenance graph: the fact it told, the
    audience (canonical) and the message of the reply, when it was recorded and by whom."""
    fact = NamedNode(fact_iri)
    graph = vocab.provenance_graph(fact)
    subject = NamedNode(node)
    return [
        Quad(subject, vocab.RDF_TYPE, DISCLOSURE, graph),
        Quad(subject, DISCLOSED, fact, graph),
        Quad(subject, TOLD_TO, Literal(audience), graph),
        Quad(subject, TOLD_IN, Literal(message), graph),
        Quad(subject, TOLD_AT, vocab.datetime_literal(at), graph),
        Quad(subject, TOLD_BY, Literal(by), graph),
    ]


@dataclass
class Entity:
    id: str
    iri: str
    type: str
    name: str
    aliases: list[str] = field(default_factory=list)
    weak_aliases: list[str] = field(default_factory=list)
    summary: str | None = None
    is_self: bool = False  # the perspective's own organization (kg org init)
    merged_into: str | None = None  # the survivor's IRI, for an organization merged into another
    merged_names: list[str] = field(default_factory=list)  # its aliases when merged (the survivor took them)
    # the match keys of its aliases and of its weak aliases, once counted (see alias_keys)
    _keys: tuple | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def a_type(self) -> str:
        """Its type with its article, as a sentence says it: "a person", "an organization"."""
        return ("an " if self.type[:1] in "aeio" else "a ") + self.type

    def goes_by(self, how: str, label: str) -> bool:
        """Whether it goes by ``label`` now, as its name (``how`` "name") or a strong alias."""
        return label == self.name if how == "name" else label in self.aliases

    def known_as(self, text: str) -> bool:
        """Whether ``text`` is its name or a strong alias, in any case, composed or not."""
        key = match_key(clean_label(text))
        return key == match_key(self.name) or key in self.alias_keys()[0]

    def alias_keys(self) -> tuple[set[str], set[str]]:
        """The match keys of its strong aliases and of its weak ones. Counted once: an entity
        changed by a write (entity_change) is handed its keys by the change, which looked at the
        aliases it added alone. (Its aliases are not changed in place once it is staged.)"""
        if self._keys is None:
            self._keys = ({match_key(a) for a in self.aliases}, {match_key(a) for a in self.weak_aliases})
        return self._keys

    def as_json(self) -> dict:
        out = {
            "id": self.id,
            "type": self.type,
            "name": self.name,
            "aliases": self.aliases,
            "weak_aliases": self.weak_aliases,
        }
        if self.summary:
            out["summary"] = self.summary
        if self.is_self:
            out["self"] = True
        if self.merged_into:
            out["merged_into"] = vocab.id_of(self.merged_into)
        return out


@dataclass
class Update:
    seq: int
    action: str
    at: str
    reason: str | None = None
    hearings: Sequence = ()  # the hearings this update recorded (an observation, a merge), if any
    # field -> (what it held before, what it held after); for the sources (SOURCES), whichever way
    # the record says them: (the ones it took away, the ones it added)
    changes: dict[str, tuple[list, list]] = field(default_factory=dict)


@dataclass(slots=True)  # (an import of 100k facts holds each, at 150 bytes less than with a dict)
class Fact:
    """A fact as the knowledge base holds it now. Times are xsd:dateTime strings in UTC."""

    id: str
    iri: str
    subject: str
    predicate: str
    target: object  # NamedNode (an entity) or Literal (a value)
    status: str = "proposed"
    authority: str = "observed"
    sensitivity: str = "internal"
    sources: list[Source] = field(default_factory=list)
    observed_at: str | None = None
    observations: int = 1
    valid_from: str | None = None
    valid_to: str | None = None
    recorded_at: str | None = None
    retired_at: str | None = None
    superseded_by: str | None = None
    last_confirmed_at: str | None = None
    reviewed_by: str | None = None
    prevents_rework: bool = False
    extracted: bool | None = None  # read out of text by a model: always a proposal
    claimed_role: str | None = None  # an affiliation claim's role ("IT")
    verified: bool | None = None  # an affiliation claim: false until promoted
    promoted_to: str | None = None  # the actor a claim was promoted to
    merged_from: str | None = None  # the fact this one carries over from a merged organization
    order: int | None = None
    perspective: str | None = None
    hearings: list[Hearing] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    # source_kinds' count so far: (the sources list counted, how many of it, the kinds among them)
    _kinds: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def source_kinds(self) -> frozenset[str]:
        """The kinds of its sources, each once. A write only ever appends to a fact's sources, so
        the count is kept with the list it counted and how far: asked again, only the sources added
        since are looked at. An import observing one fact N times asks N times, and would otherwise
        look at N²/2 sources (20k copies with --auto-confirm: 50 s against 3 s)."""
        sources = self.sources
        memo = self._kinds
        if memo is None or memo[0] is not sources or memo[1] > len(sources):
            memo = (sources, 0, set())
        _, counted, kinds = memo
        for source in sources[counted:]:
            kinds.add(source.kind)
        self._kinds = (sources, len(sources), kinds)
        return frozenset(kinds)

    @property
    def said_by(self) -> str | None:
        """A speaker of the fact (of its latest hearing that has one), or None: a fact someone said."""
        return next((h.said_by for h in reversed(self.hearings) if h.said_by), None)

    def audiences(self) -> list[str]:
        """The audiences it was heard in, each once, in the order first heard."""
        return list(dict.fromkeys(h.audience or "owner" for h in self.hearings))

    @property
    def is_entity_target(self) -> bool:
        return isinstance(self.target, NamedNode)

    @property
    def current(self) -> bool:
        return self.status in ("proposed", "confirmed") and self.retired_at is None

    def value_key(self) -> str:
        if self.is_entity_target:
            return self.target.value
        return normalize(self.target.value)


# --- reading quads back into values ----------------------------------------------------------


def _py(term, kind: str, schema):
    if term is None:
        return None
    if kind == "concept":
        return schema.notation(term.value)
    if kind == "integer":
        return int(term.value)
    if kind == "boolean":
        return term.value in ("true", "1")
    if kind == "decimal":
        return float(term.value)
    return term.value


# the predicates fold_fact reads, as the strings a row's terms hold (made once, not a row at a time)
_P_WAS_DERIVED_FROM, _P_HEARD_IN, _P_USED = vocab.WAS_DERIVED_FROM.value, HEARD_IN.value, USED.value
_P_SOURCE_KIND, _P_SOURCE_REF, _P_QUOTE = kg("sourceKind").value, kg("sourceRef").value, kg("quote").value
_P_UPDATE_NUMBER, _P_ACTION, _P_REASON = kg("updateNumber").value, kg("action").value, kg("reason").value
_P_CHANGE, _P_FIELD, _P_ENDED_AT = kg("change").value, kg("field").value, vocab.ENDED_AT.value
_P_ADDED_HEARING, _P_BEFORE, _P_AFTER, _P_ADDED = ADDED_HEARING.value, _BEFORE.value, _AFTER.value, ADDED.value


def held_at(fact: Fact, at: str) -> Fact | None:
    """The fact as the knowledge base held it at ``at`` (an xsd:dateTime string, UTC): every update
    recorded after it undone, newest first, each field back to what the record says it held before,
    the sources it added taken away (and any it took away given back); the hearings heard after it
    left out. None when it was not recorded by then, or when every hearing of it shown (to a read's
    audience, see heard_triples) came after: that audience had not heard it then. Pure."""
    if fact.recorded_at is not None and fact.recorded_at > at:
        return None
    hearings = [h for h in fact.hearings if h.heard_at is None or h.heard_at <= at]
    if fact.hearings and not hearings:
        return None
    later = [update for update in fact.updates if update.at > at]
    if not later and len(hearings) == len(fact.hearings):
        return fact
    held = replace(fact, sources=list(fact.sources), hearings=hearings, updates=[u for u in fact.updates if u.at <= at])
    for update in reversed(later):
        for name, (before, after) in update.changes.items():
            if name == SOURCES:
                gone = set(after)
                held.sources = [s for s in held.sources if s.label() not in gone] + [
                    Source(*label.split(":", 1)) for label in before if ":" in label
                ]
            elif name in FIELDS:
                setattr(held, name, before[0] if before else _default(name))
    if hearings:  # as heard_triples counts them: the hearings shown, the latest of them
        held.observations = len(hearings)
        held.observed_at = max((h.heard_at for h in hearings if h.heard_at), default=held.observed_at)
    return held


def true_at(fact: Fact, valid_at: str) -> bool:
    """Whether ``fact`` is current (proposed or confirmed) and true at ``valid_at`` (an xsd:dateTime
    string, UTC), by the status and valid time it holds (as held at a time: held_at). Pure."""
    return fact.status in ("proposed", "confirmed") and not (
        (fact.valid_from and fact.valid_from > valid_at) or (fact.valid_to and fact.valid_to <= valid_at)
    )


def _default(name: str):
    """What a field of Fact holds when no record gave it a value."""
    value = Fact.__dataclass_fields__[name].default
    return None if value is MISSING else value


def fold_fact(fact_iri: str, rows: list[dict], schema) -> Fact | None:
    """A Fact from the rows of ``fact.rq`` (graph, s, p, o of its assertion and provenance graphs).
    A fact with no hearing records (written before hearings existed) gets one from what is said
    about the fact itself: its audience, speaker, message, and all its sources."""
    triple = None
    meta: dict[str, object] = {}
    legacy: dict[str, object] = {}
    sources: dict[str, dict] = {}
    source_nodes: list[str] = []
    hearing_nodes: list[str] = []
    hearings: dict[str, dict] = {}
    updates: dict[str, dict] = {}
    changes: dict[str, dict] = {}
    for row in rows:
        s, p, o = row["s"].value, row["p"].value, row["o"]
        if row["kind"].value == "assertion":
            triple = (s, p, o)
            continue
        if s == fact_iri:
            if p == _P_WAS_DERIVED_FROM:
                source_nodes.append(o.value)
            elif p == _P_HEARD_IN:
                hearing_nodes.append(o.value)
            elif p in _HEARING_BY_IRI:
                name = _HEARING_BY_IRI[p]
                legacy[name] = _py(o, HEARING_FIELDS[name][1], schema)
            elif p in _FIELD_BY_IRI:
                name = _FIELD_BY_IRI[p]
                meta[name] = _py(o, FIELDS[name][1], schema)
            continue
        if p == _P_SOURCE_KIND:
            sources.setdefault(s, {})["kind"] = schema.notation(o.value)
        elif p == _P_SOURCE_REF:
            sources.setdefault(s, {})["ref"] = o.value
        elif p == _P_QUOTE:
            sources.setdefault(s, {})["quote"] = o.value
        elif p == _P_USED:
            hearings.setdefault(s, {}).setdefault("source_nodes", []).append(o.value)
        elif p in _HEARING_BY_IRI:
            name = _HEARING_BY_IRI[p]
            hearings.setdefault(s, {})[name] = _py(o, HEARING_FIELDS[name][1], schema)
        elif p == _P_UPDATE_NUMBER:
            updates.setdefault(s, {})["seq"] = int(o.value)
        elif p == _P_ACTION:
            updates.setdefault(s, {})["action"] = o.value
        elif p == _P_ENDED_AT:
            updates.setdefault(s, {})["at"] = o.value
        elif p == _P_REASON:
            updates.setdefault(s, {})["reason"] = o.value
        elif p == _P_ADDED_HEARING:
            updates.setdefault(s, {}).setdefault("hearings", []).append(o.value)
        elif p == _P_CHANGE:
            updates.setdefault(s, {}).setdefault("change_nodes", []).append(o.value)
        elif p == _P_FIELD:
            changes.setdefault(s, {})["field"] = _FIELD_BY_IRI.get(o.value, SOURCES)
        elif p == _P_BEFORE:
            changes.setdefault(s, {}).setdefault("before", []).append(o)
        elif p == _P_AFTER:
            changes.setdefault(s, {}).setdefault("after", []).append(o)
        elif p == _P_ADDED:
            changes.setdefault(s, {}).setdefault("added", []).append(o)
    if triple is None:
        return None
    fact = Fact(
        id=vocab.id_of(fact_iri), iri=fact_iri, subject=triple[0], predicate=triple[1], target=triple[2], **meta
    )

    def source(node: str) -> Source:
        return Source(sources[node].get("kind", "?"), sources[node].get("ref", ""), sources[node].get("quote"))

    fact.sources = sorted((source(n) for n in source_nodes if n in sources), key=lambda src: (src.kind, src.ref))
    for node in hearing_nodes:
        data = hearings.get(node, {})
        used = sorted(
            (source(n) for n in data.pop("source_nodes", []) if n in sources), key=lambda src: (src.kind, src.ref)
        )
        fact.hearings.append(Hearing(node, **{"audience": "owner", **data, "sources": tuple(used)}))
    fact.hearings.sort(key=lambda h: (h.heard_at or "", _hearing_order(h.iri)))
    if not hearing_nodes:
        fact.hearings = [
            Hearing(None, **{"audience": None, "heard_at": fact.recorded_at, **legacy, "sources": tuple(fact.sources)})
        ]
    for node, data in updates.items():
        update = Update(
            seq=data.get("seq", 0),
            action=data.get("action", "?"),
            at=data.get("at", ""),
            reason=data.get("reason"),
            hearings=tuple(data.get("hearings", ())),
        )
        told = sorted(
            data.get("change_nodes", []),
            key=lambda n: (_FIELD_ORDER.get(changes.get(n, {}).get("field", "?"), len(_FIELD_ORDER)), n),
        )
        for change_node in told:
            change = changes.get(change_node, {})
            name = change.get("field", "?")
            kind = {**HEARING_FIELDS, **FIELDS}[name][1] if name in _FIELD_NAMES else "iri"
            before = [_py(t, kind, schema) for t in change.get("before", [])]
            after = [_py(t, kind, schema) for t in change.get("after", [])]
            if name == SOURCES:  # all of them before and after (an older record), or the ones added
                held, holds = set(before), set(after)
                before = [s for s in before if s not in holds]
                after = [s for s in after if s not in held] + sorted(t.value for t in change.get("added", []))
            update.changes[name] = (before, after)
        fact.updates.append((len(node), node, update))
    fact.updates = [u for _, _, u in sorted(fact.updates, key=lambda entry: (entry[2].seq, entry[0], entry[1]))]
    return fact


_FIELD_NAMES = set(FIELDS) | set(HEARING_FIELDS)


def _hearing_order(iri: str | None) -> tuple:
    """Hearings recorded at one time go in the order they were recorded (``.../hearing/SEQ.STEP``)."""
    seq, _, step = (iri or "").rpartition("/")[2].partition(".")
    return (int(seq) if seq.isdigit() else 0, int(step) if step.isdigit() else 0)


def fold_entity(entity_iri: str, rows: list[dict]) -> Entity | None:
    """An Entity from the rows of ``entity.rq`` (p, o of its description, and its type's key)."""
    data: dict[str, list] = {}
    type_key = "?"
    for row in rows:
        data.setdefault(row["p"].value, []).append(row["o"].value)
        if row["p"] == vocab.RDF_TYPE and row.get("typeKey") is not None:
            type_key = row["typeKey"].value
    if vocab.IDENTIFIER.value not in data:
        return None
    return Entity(
        id=data[vocab.IDENTIFIER.value][0],
        iri=entity_iri,
        type=type_key,
        # (no name where it was kept apart, in a private journal another replica's read lacks: its id,
        # as a forget leaves it)
        name=(data.get(vocab.PREF_LABEL.value) or data[vocab.IDENTIFIER.value])[0],
        aliases=sorted(data.get(vocab.ALT_LABEL.value, [])),
        weak_aliases=sorted(data.get(vocab.WEAK_ALIAS.value, [])),
        summary=(data.get(vocab.SUMMARY.value) or [None])[0],
        is_self="true" in data.get(vocab.SELF_ORGANIZATION.value, []),
        merged_into=(data.get(vocab.MERGED_INTO.value) or [None])[0],
        merged_names=sorted(data.get(MERGED_NAME.value, [])),
    )


# --- values into quads -----------------------------------------------------------------------


_CONCEPT_GROUPS = {"status": "statuses", "authority": "authorities", "sensitivity": "sensitivities"}


def _term(value, kind: str, schema, name: str = ""):
    if kind == "concept":
        for group in [_CONCEPT_GROUPS[name]] if name in _CONCEPT_GROUPS else _CONCEPT_GROUPS.values():
            concept = getattr(schema, group).get(value)
            if concept is not None:
                return NamedNode(concept.iri)
        from kgrdf.errors import Damaged

        raise Damaged(  # a value no write of kgrdf gives: the knowledge base was changed outside it
            f"the {name or 'concept'} {value!r} is none the schema has: the knowledge base holds a value "
            "kgrdf did not write",
            hint="kg validate names what holds it",
        )
    if kind == "datetime":
        return vocab.datetime_literal(value)
    if kind == "integer":
        return vocab.integer(value)
    if kind == "boolean":
        return vocab.boolean(value)
    if kind == "decimal":
        return vocab.decimal(value)
    if kind == "iri":
        return NamedNode(value)
    return Literal(str(value))


def fact_quads(fact: Fact, schema) -> list[Quad]:
    """Every quad of a new fact: its assertion graph and its provenance graph."""
    return nquads.parsed(fact_lines(fact, schema))


# The same as the journal's rows (kgrdf.nquads), which is how they are made: a large write keeps a new
# fact's rows alone, and making the text without the quads takes a fifth of the time.

_TYPE, _IDENTIFIER, _PROVENANCE_OF = str(vocab.RDF_TYPE), str(vocab.IDENTIFIER), str(kg("provenanceOf"))
_FACT, _SOURCE, _HEARING = str(vocab.FACT), str(vocab.SOURCE), str(HEARING)
_DERIVED, _KIND, _REF, _QUOTE = (
    str(vocab.WAS_DERIVED_FROM),
    str(kg("sourceKind")),
    str(kg("sourceRef")),
    str(kg("quote")),
)
_HEARD_IN, _USED = str(HEARD_IN), str(USED)
_FIELD_TEXT = {name: str(predicate) for name, (predicate, _kind) in {**FIELDS, **HEARING_FIELDS}.items()}


def _term_text(value, kind: str, schema, name: str = "") -> str:
    """_term's term as a row writes it."""
    if kind == "string":
        return nquads.string(str(value))
    if kind == "iri":
        return nquads.iri(value)
    if kind == "concept":
        return str(_term(value, kind, schema, name))
    return _typed_text(value, kind)


@lru_cache(maxsize=4096)
def _typed_text(value, kind: str) -> str:  # (a write's times are mostly its own "now")
    return str(_term(value, kind, None))


_FIELD_ROWS = tuple((name, _FIELD_TEXT[name], kind) for name, (_predicate, kind) in FIELDS.items())


def _holds(name: str, value) -> bool:
    """Whether a fact's field holds a value its rows say (prevents_rework only when it is set)."""
    return value is not None and (value is not False or name != "prevents_rework")


def _field_objects(name: str, value, schema) -> list[str]:
    """The objects a fact's field holds, as rows write them: none when it holds nothing."""
    return [_term_text(value, FIELDS[name][1], schema, name)] if _holds(name, value) else []


def field_lines(fact: Fact, name: str, value, schema) -> list[str]:
    return [
        f"<{fact.iri}> {_FIELD_TEXT[name]} {obj} <{fact.iri}/provenance>" for obj in _field_objects(name, value, schema)
    ]


def source_lines(fact: Fact, source: Source, schema) -> list[str]:
    node, graph = f"<{fact.iri}/source/{source.digest}>", f"<{fact.iri}/provenance>"
    kind = schema.source_kinds[source.kind]
    lines = [
        f"<{fact.iri}> {_DERIVED} {node} {graph}",
        f"{node} {_TYPE} {_SOURCE} {graph}",
        f"{node} {_KIND} {nquads.iri(kind.iri)} {graph}",
        f"{node} {_REF} {nquads.string(source.ref)} {graph}",
    ]
    if source.quote:
        lines.append(f"{node} {_QUOTE} {nquads.string(source.quote)} {graph}")
    return lines


def hearing_lines(fact: Fact, hearing: Hearing, schema) -> list[str]:
    """The rows of one hearing: its node, linked from the fact, with its fields and the sources it
    brought (their nodes are the fact's: source_lines)."""
    graph = f"<{fact.iri}/provenance>"
    node = f"<{hearing.iri}>"
    lines = [f"<{fact.iri}> {_HEARD_IN} {node} {graph}", f"{node} {_TYPE} {_HEARING} {graph}"]
    for name, (_predicate, kind) in HEARING_FIELDS.items():
        value = getattr(hearing, name)
        if value is not None:
            lines.append(f"{node} {_FIELD_TEXT[name]} {_term_text(value, kind, schema, name)} {graph}")
    lines += [f"{node} {_USED} <{fact.iri}/source/{s.digest}> {graph}" for s in hearing.sources]
    return lines


def _legacy_lines(fact: Fact, hearing: Hearing, schema) -> list[str]:
    """The rows a fact written before hearings existed says its one hearing with, on itself."""
    return [
        f"<{fact.iri}> {_FIELD_TEXT[name]} {_term_text(getattr(hearing, name), kind, schema, name)} "
        f"<{fact.iri}/provenance>"
        for name, (_predicate, kind) in HEARING_FIELDS.items()
        if name != "heard_at" and getattr(hearing, name) is not None
    ]


def fact_lines(fact: Fact, schema) -> list[str]:
    """Every row of a new fact: its assertion graph and its provenance graph."""
    node, graph = f"<{fact.iri}>", f"<{fact.iri}/provenance>"
    lines = [
        f"<{fact.subject}> {nquads.iri(fact.predicate)} {fact.target} {node}",
        f"{node} {_TYPE} {_FACT} {graph}",
        f"{node} {_IDENTIFIER} {nquads.string(fact.id)} {graph}",
        f"{graph} {_PROVENANCE_OF} {node} {graph}",
    ]
    for name, predicate, kind in _FIELD_ROWS:  # (field_lines, without a call and a list a field)
        value = getattr(fact, name)
        if _holds(name, value):
            lines.append(f"{node} {predicate} {_term_text(value, kind, schema, name)} {graph}")
    for source in fact.sources:
        lines += source_lines(fact, source, schema)
    for hearing in fact.hearings:  # (a fact written before hearings existed says its one on itself)
        lines += _legacy_lines(fact, hearing, schema) if hearing.iri is None else hearing_lines(fact, hearing, schema)
    return lines


@dataclass
class Draft:
    """The update record a transaction last made for a fact, and the fact as it stands after it. A
    later change of the fact in the same transaction, by the same action for the same reason, folds
    into that record (fold_change) rather than adding one of its own: N observations of one fact in
    one write cost N quads and N steps, not N squared."""

    fact: Fact  # the transaction's own copy, changed in place as changes fold in
    update: NamedNode
    entry: Update  # the record as Fact.updates holds it
    changed: dict = field(default_factory=dict)  # field -> (its terms before the record, its terms now)
    source_keys: set = field(default_factory=set)  # (kind, ref) of every source the fact holds
    sources_change: bool = False  # whether the record has its change node for the sources
    written: bool = False  # whether the record's own quads are staged (it changed something)
    number: int = 1  # the record's number among the transaction's records of the fact


def change_quads(fact: Fact, changes: dict, **options) -> tuple[list[Quad], list[Quad], Fact]:
    """The quads to delete and add to change ``fact``'s fields, with an update record saying what
    each field held before, which sources it added (kg:added, each ``KIND:REF``) and the hearings it
    adds (each named by the record). A fact written before hearings existed that is heard again gets
    its one hearing recorded as a node first. Returns (deletes, adds, the fact as it is after).
    The ``options`` are draft_change's: seq, at, action, reason, schema, new_sources, new_hearings."""
    deletes, adds, draft = draft_change(fact, changes, **options)
    return nquads.parsed(deletes), nquads.parsed(adds), draft.fact


def draft_change(
    fact: Fact,
    changes: dict,
    *,
    seq: int,
    at: str,
    action: str,
    reason: str | None,
    schema,
    new_sources: list[Source] = (),
    new_hearings: list[Hearing] = (),
    last: Draft | None = None,
) -> tuple[list[str], list[str], Draft]:
    """change_quads as rows (kgrdf.nquads), with the update record as a Draft that later changes
    fold into. After ``last``, the transaction's last record of the fact (``fact`` is its
    ``last.fact``), the fact is changed in place rather than copied: the cost follows the change,
    not what the fact holds."""
    if last is not None:
        after, number, keys = fact, last.number + 1, last.source_keys
    else:
        after = replace(fact, sources=list(fact.sources), hearings=list(fact.hearings), updates=list(fact.updates))
        number, keys = 1 + sum(1 for u in fact.updates if u.seq == seq), {(s.kind, s.ref) for s in fact.sources}
    update = vocab.update_iri(NamedNode(fact.iri), seq, number)
    entry = Update(seq, action, at, reason, [])
    after.updates.append(entry)
    draft = Draft(after, update, entry, source_keys=keys, number=number)
    deletes, adds = fold_change(draft, changes, schema=schema, new_sources=new_sources, new_hearings=new_hearings)
    return deletes, adds, draft


_CHANGE, _CHANGE_TYPE, _FIELD = str(vocab.kg("change")), str(vocab.CHANGE), str(vocab.kg("field"))
_BEFORE_TEXT, _AFTER_TEXT, _ADDED_TEXT = str(_BEFORE), str(_AFTER), str(ADDED)
_ADDED_HEARING_TEXT, _UPDATE_TYPE, _UPDATES = str(ADDED_HEARING), str(vocab.UPDATE), str(vocab.kg("updates"))
_UPDATE_NUMBER, _ACTION, _ENDED_AT = str(vocab.kg("updateNumber")), str(vocab.kg("action")), str(vocab.ENDED_AT)
_REASON = str(vocab.kg("reason"))


def fold_change(
    draft: Draft, changes: dict, *, schema, new_sources: list[Source] = (), new_hearings: list[Hearing] = ()
) -> tuple[list[str], list[str]]:
    """The rows to delete and add to change ``draft.fact`` further within its update record: a
    field it changed already keeps what it held before the record and says what it holds now; the
    sources and hearings are added to the record's. Changes ``draft`` in place; the cost follows
    what this change adds, not what the fact or the record holds. Returns (deletes, adds), as text:
    an import observing one fact N times makes them N times, and parsing them would be most of it."""
    fact = draft.fact
    graph = f"<{fact.iri}/provenance>"
    update = f"<{draft.update.value}>"
    deletes: list[str] = []
    adds: list[str] = []
    record: list[str] = []
    for name, new in changes.items():
        old = getattr(fact, name)
        if old == new:
            continue
        before_now = _field_objects(name, old, schema)
        setattr(fact, name, new)
        now = _field_objects(name, new, schema)
        subject = f"<{fact.iri}> {_FIELD_TEXT[name]} "
        deletes += [f"{subject}{obj} {graph}" for obj in before_now]
        adds += [f"{subject}{obj} {graph}" for obj in now]
        node = f"<{draft.update.value}/{name}>"
        head = [
            f"{update} {_CHANGE} {node} {graph}",
            f"{node} {_TYPE} {_CHANGE_TYPE} {graph}",
            f"{node} {_FIELD} {_FIELD_TEXT[name]} {graph}",
        ]
        if name in draft.changed:
            before, held = draft.changed.pop(name)
            deletes += [f"{node} {_AFTER_TEXT} {obj} {graph}" for obj in held]
            if before == now:  # back to what it held before the record: the record no longer changes it
                deletes += head + [f"{node} {_BEFORE_TEXT} {obj} {graph}" for obj in before]
                continue
        else:
            before = before_now
            record += head + [f"{node} {_BEFORE_TEXT} {obj} {graph}" for obj in before]
        record += [f"{node} {_AFTER_TEXT} {obj} {graph}" for obj in now]
        draft.changed[name] = (before, now)
    fresh = []
    for source in new_sources:
        if (source.kind, source.ref) not in draft.source_keys:
            draft.source_keys.add((source.kind, source.ref))
            fresh.append(source)
    if fresh:
        node = f"<{draft.update.value}/{SOURCES}>"
        if not draft.sources_change:
            draft.sources_change = True
            record += [
                f"{update} {_CHANGE} {node} {graph}",
                f"{node} {_TYPE} {_CHANGE_TYPE} {graph}",
                f"{node} {_FIELD} {_DERIVED} {graph}",
            ]
        for source in fresh:
            adds += source_lines(fact, source, schema)
            fact.sources.append(source)
            record.append(f"{node} {_ADDED_TEXT} {nquads.string(source.label())} {graph}")
    if new_hearings and fact.hearings and fact.hearings[0].iri is None:  # (then it is the only one)
        legacy = fact.hearings[0]
        deletes += _legacy_lines(fact, legacy, schema)
        fact.hearings[0] = replace(legacy, iri=f"{fact.iri}/hearing/0", audience=legacy.audience or "owner")
        adds += hearing_lines(fact, fact.hearings[0], schema)
    for hearing in new_hearings:
        adds += hearing_lines(fact, hearing, schema)
        fact.hearings.append(hearing)
        draft.entry.hearings.append(hearing.iri)
        record.append(f"{update} {_ADDED_HEARING_TEXT} <{hearing.iri}> {graph}")
    if (deletes or adds) and not draft.written:
        draft.written = True
        entry = draft.entry
        record += [
            f"{update} {_TYPE} {_UPDATE_TYPE} {graph}",
            f"{update} {_UPDATES} <{fact.iri}> {graph}",
            f"{update} {_UPDATE_NUMBER} {_typed_text(entry.seq, 'integer')} {graph}",
            f"{update} {_ACTION} {nquads.string(entry.action)} {graph}",
            f"{update} {_ENDED_AT} {_typed_text(entry.at, 'datetime')} {graph}",
        ]
        if entry.reason:
            record.append(f"{update} {_REASON} {nquads.string(entry.reason)} {graph}")
    if deletes or adds:
        adds += record
    return deletes, adds


# --- what an audience is shown of a fact's provenance -------------------------------------------------

# (the count and the latest time of observation are the hearings shown: a record of them would say the others)
_HIDDEN_CHANGES = {
    kg("observations").value,
    kg("observedAt").value,
    *(iri.value for iri, _ in HEARING_FIELDS.values()),
}
_AUDIENCE, _OBSERVATIONS, _OBSERVED_AT, _HEARD_AT = kg("audience"), kg("observations"), kg("observedAt"), kg("heardAt")
_RECORDED_AT, _LAST_CONFIRMED_AT = kg("recordedAt"), kg("lastConfirmedAt")
_SUPERSEDED_BY, _MERGED_FROM, _FIELD, _CHANGE = kg("supersededBy"), kg("mergedFrom"), kg("field"), kg("change")
_REASON, _SOURCE_REF = kg("reason"), kg("sourceRef")
FACT_IDS_IN_TEXT = re.compile(r"\bf-[a-z0-9]{6}\b")  # the fact ids a text (a reason, a message) names
# what may be an entity id in a text (a refusal's reason): TYPE/SLUG, as vocab.ID_PATTERN spells them;
# a sentence's full stop may follow one, so entity_ids_in reads each as found and less each of its
# trailing dots, dashes and underscores in turn
ENTITY_IDS_IN_TEXT = re.compile(r"(?<![\w./:-])[a-z][a-z_]*/[a-z0-9][a-z0-9._-]*")


def entity_ids_in(text: str) -> set[str]:
    """Every entity id ``text`` may name (a superset: the caller keeps those it holds)."""
    found = set()
    for each in ENTITY_IDS_IN_TEXT.findall(text):
        found.add(each)
        while each[-1] in "._-":
            each = each[:-1]
            found.add(each)
    return found


def heard_triples(fact_iri: str, triples: list[tuple], hears, hears_fact) -> list[tuple]:
    """The triples of a fact's provenance graph that an audience is shown, for a fact it may hear:
    the hearings it may hear (``hears(audience)``) and nothing of the others: their sources, speakers,
    messages, the update records that added them, the count of them (kg:observations becomes the
    number of hearings shown, kg:observedAt the latest of them); a successor or an origin it may not
    hear (``hears_fact(iri)``) is left out, with the change that recorded it, and so is an update's
    reason that names one; a disclosure is shown when it may hear the audience it was told to
    (``hears(audience)``). Pure.

    ``triples`` are (subject, predicate, object) terms; a fact with no hearing records (written
    before hearings existed) is one hearing, shown whole."""
    fact = fact_iri
    # A disclosure is shown as a hearing is: to an audience that may hear the one it was told to.
    untold = {s.value for s, p, o in triples if p == TOLD_TO and not hears(o.value)}
    if untold:
        triples = [(s, p, o) for s, p, o in triples if s.value not in untold]
    heard_in = [o.value for s, p, o in triples if s.value == fact and p == HEARD_IN]
    audience_of = {s.value: o.value for s, p, o in triples if p == _AUDIENCE and s.value != fact}
    shown = {h for h in heard_in if hears(audience_of.get(h, "owner"))}
    hidden = set(heard_in) - shown
    if not heard_in:
        return list(triples)
    used = {o.value for s, p, o in triples if p == USED and s.value in shown}
    sources = {o.value for s, p, o in triples if s.value == fact and p == vocab.WAS_DERIVED_FROM}
    hidden |= sources - used
    refs = {s.value: o.value for s, p, o in triples if p == _SOURCE_REF}
    shown_refs = {refs.get(n) for n in used}
    added: dict[str, set] = {}
    for s, p, o in triples:
        if p == ADDED_HEARING:
            added.setdefault(s.value, set()).add(o.value)
    hidden |= {u for u, hs in added.items() if not hs & shown}
    times = [o.value for s, p, o in triples if s.value in shown and p == _HEARD_AT]
    latest, first = max(times, default=None), min(times, default=None)
    narrowed = first is not None and len(shown) < len(heard_in)
    if narrowed:  # what was done before it first heard the fact is no part of its history
        hidden |= _done_before(triples, shown, heard_in)
    # A change a write made beside a hearing the audience does not hear (a confirmation by sources) is
    # shown, without its reason: the reason tells of the sources that hearing brought.
    unheard_writes = {_transaction_of(h) for h in set(heard_in) - shown} - {_transaction_of(h) for h in shown}
    unsaid = {
        s.value
        for s, p, o in triples
        if unheard_writes and p.value == _P_UPDATE_NUMBER and o.value.isdigit() and int(o.value) in unheard_writes
    }
    change_of = {}  # change node -> its field
    for s, p, o in triples:
        if p == _FIELD:
            change_of[s.value] = o.value
    owner_of = {o.value: s.value for s, p, o in triples if p == _CHANGE}
    hidden |= {c for c, u in owner_of.items() if u in hidden or change_of.get(c) in _HIDDEN_CHANGES}
    hidden |= {s.value for s, p, o in triples if s.value in change_of and _names_unheard_fact(p, o, hears_fact)}
    unheard = {u for u, hs in added.items() if not hs & shown}
    # Recorded with a hearing it does not hear (one write may record several: an import, a merge)
    recording = min(map(_transaction_of, heard_in))
    unrecorded = any(_transaction_of(h) == recording and h not in shown for h in heard_in)
    # (every hearing it hears, the record's too: the fact's fields are as they stand)
    as_heard = (
        _fields_as_heard(fact, triples, change_of, owner_of, unheard, unrecorded) if unheard or unrecorded else {}
    )
    out = []
    for s, p, o in triples:
        if s.value in hidden or (p in (HEARD_IN, vocab.WAS_DERIVED_FROM, _CHANGE, ADDED_HEARING) and o.value in hidden):
            continue
        if s.value == fact and p.value in as_heard:
            o = as_heard[p.value]
            if o is None:
                continue  # (a flag the hearings it hears never set)
        if s.value == fact and p == _OBSERVATIONS:
            o = vocab.integer(len(shown))
        elif s.value == fact and p == _OBSERVED_AT and latest is not None:
            o = vocab.datetime_literal(latest)
        elif s.value == fact and p in (_RECORDED_AT, _LAST_CONFIRMED_AT) and narrowed:
            o = vocab.datetime_literal(max(first, o.value))  # learned, as far as it may know, when it first heard it
        elif p in (_SUPERSEDED_BY, _MERGED_FROM) and not hears_fact(o.value):
            continue
        elif p in (_BEFORE, _AFTER, ADDED) and change_of.get(s.value) == vocab.WAS_DERIVED_FROM.value:
            kind_ref = o.value.partition(":")
            if kind_ref[2] not in shown_refs:  # (a set: a record may add thousands)
                continue
        elif p == _REASON and (
            s.value in unsaid
            or any(not hears_fact(fact[: fact.rindex("/") + 1] + found) for found in FACT_IDS_IN_TEXT.findall(o.value))
        ):
            continue
        out.append((s, p, o))
    return out


# A fact's own fields a hearing may change (kg propose heard again with --authority, --prevents-rework, or a
# text naming a person): an audience is shown them as the hearings it hears left them.
_AUTHORITY, _PREVENTS_REWORK = kg("authority").value, kg("preventsRework").value
_SET_BY_HEARINGS = {_AUTHORITY, _PREVENTS_REWORK, kg("sensitivity").value}
_USER_SAID, _STAKEHOLDER_SAID, _OBSERVED = kg("UserSaid"), kg("StakeholderSaid"), kg("Observed")


def _fields_as_heard(
    fact: str,
    triples: list[tuple],
    change_of: dict,
    owner_of: dict,
    unheard: set[str],
    unrecorded: bool,
) -> dict:
    """Field IRI -> the value an audience is shown of it (None: none), where that is not the fact's:
    of each field in _SET_BY_HEARINGS, the value the last change it may see left (a change an update
    adding only hearings it does not hear made, ``unheard``, is not one), or before any, the value the
    fact was recorded with. Where the fact was recorded with a hearing it does not hear
    (``unrecorded``), what that hearing may have said is not shown: the user's authority, a
    stakeholder's (it is observed), the prevents-rework flag. What each hearing said of them is
    not kept apart, and a write may record a fact with several (an import, a merge, a sync): then
    an audience that heard one of them is shown less than it said, never what another said.
    ``change_of`` is a change node's field, ``owner_of`` its update's node."""
    number = {s.value: int(o.value) for s, p, o in triples if p.value == _P_UPDATE_NUMBER and o.value.isdigit()}
    before = {s.value: o for s, p, o in triples if p == _BEFORE and s.value in change_of}
    after = {s.value: o for s, p, o in triples if p == _AFTER and s.value in change_of}
    now = {p.value: o for s, p, o in triples if s.value == fact and p.value in _SET_BY_HEARINGS}
    changes: dict[str, list[tuple[int, bool, str]]] = {}
    for change, of in change_of.items():
        update = owner_of.get(change)
        if of in _SET_BY_HEARINGS and update in number:
            changes.setdefault(of, []).append((number[update], update in unheard, change))
    shown = {}
    for of in _SET_BY_HEARINGS:
        made = sorted(changes.get(of, ()))
        recorded = before.get(made[0][2]) if made else now.get(of)
        if unrecorded and of == _AUTHORITY and recorded in (_USER_SAID, _STAKEHOLDER_SAID):
            recorded = _OBSERVED
        elif unrecorded and of == _PREVENTS_REWORK:
            recorded = None
        seen = [change for _n, unheard_one, change in made if not unheard_one]
        value = after.get(seen[-1]) if seen else recorded
        if value != now.get(of):
            shown[of] = value
    return shown


def _done_before(triples: list[tuple], shown: set[str], heard_in: list[str]) -> set[str]:
    """The update records of transactions before the first that recorded a hearing in ``shown``: by
    transaction, not by time (two transactions may share a second, and a record of the earlier one
    would pass for one of the hearing's own). When the fact was recorded before that, that
    transaction's own records go too: to the audience it is the one that recorded the fact, said on
    its first line with the sources it heard, where its record "observe" told of a hearing before, and
    a confirmation by sources in the same write told of their kinds and the status it had before."""
    first = min(_transaction_of(hearing) for hearing in shown)
    if first > min(_transaction_of(hearing) for hearing in heard_in):
        first += 1
    return {
        s.value for s, p, o in triples if p.value == _P_UPDATE_NUMBER and o.value.isdigit() and int(o.value) < first
    }


def _transaction_of(hearing: str) -> int:
    """The transaction that recorded a hearing, from its IRI (hearing_iri: ``.../hearing/SEQ.STEP``)."""
    seq = hearing.rpartition("/hearing/")[2].partition(".")[0]
    return int(seq) if seq.isdigit() else 0


def _names_unheard_fact(p, o, hears_fact) -> bool:
    """Whether a change's value (kg:before, kg:after, kg:added) is a fact the audience may not hear: a
    successor, an origin. The change is left out whole, with the link to it: a change with its value
    taken out still said that there was one."""
    return (
        p in (_BEFORE, _AFTER, ADDED) and isinstance(o, NamedNode) and "/fact/" in o.value and not hears_fact(o.value)
    )


MERGED_NAME = kg("mergedName")  # an alias a merged organization went by, which its survivor took


def entity_quads(entity: Entity, perspective: str, schema) -> list[Quad]:
    """The entity's quads in its perspective's entities graph. Refused for an entity of a type the
    schema does not hold (a site type schema.json no longer declares): its facts are read, not changed."""
    node = NamedNode(entity.iri)
    graph = vocab.entities_graph(perspective)
    kind = schema.types.get(entity.type)
    if kind is None:
        from kgrdf.errors import Refused

        raise Refused(
            f"{entity.id} is of a type the schema in use does not hold ({entity.id.split('/')[0]}): "
            "its facts are read, not changed",
            hint="kg schema says whether schema.json was refused; one that declares the type again lets them change",
        )
    quads = [
        Quad(node, vocab.RDF_TYPE, NamedNode(kind.iri), graph),
        Quad(node, vocab.IDENTIFIER, Literal(entity.id), graph),
        Quad(node, vocab.PREF_LABEL, Literal(entity.name), graph),
        Quad(node, vocab.kg("perspective"), vocab.perspective_iri(perspective), graph),
    ]
    quads += [Quad(node, vocab.ALT_LABEL, Literal(a), graph) for a in entity.aliases]
    quads += [Quad(node, vocab.WEAK_ALIAS, Literal(a), graph) for a in entity.weak_aliases]
    keys = {(kg("nameKey"), match_key(entity.name))}
    keys |= {(kg("aliasKey"), match_key(a)) for a in entity.aliases}
    keys |= {(kg("weakAliasKey"), match_key(a)) for a in entity.weak_aliases}
    quads += [Quad(node, prop, Literal(key), graph) for prop, key in sorted(keys, key=str)]
    if entity.summary:
        quads.append(Quad(node, vocab.SUMMARY, Literal(entity.summary), graph))
    if entity.is_self:
        quads.append(Quad(node, vocab.SELF_ORGANIZATION, Literal(True), graph))
    if entity.merged_into:
        quads.append(Quad(node, vocab.MERGED_INTO, NamedNode(entity.merged_into), graph))
    quads += [Quad(node, MERGED_NAME, Literal(name), graph) for name in entity.merged_names]
    return quads


def entity_change(old: Entity | None, new: Entity, perspective: str, schema) -> tuple[list[Quad], list[Quad]]:
    """The quads to delete and add to change ``old``'s description (None: none yet) to ``new``'s
    (entity_quads), worked out from what changed: an entity given one more alias by each of N
    records costs each record its own alias, not all N before it. Raises BadInput for a new summary
    holding a control character (inputs.prose), before anything is changed."""
    if new.summary and (old is None or new.summary != old.summary):
        from kgrdf import inputs

        inputs.refuse_controls(new.summary, "the summary")
    if old is None or (old.iri, old.id, old.type) != (new.iri, new.id, new.type):
        before = entity_quads(old, perspective, schema) if old is not None else []
        after = entity_quads(new, perspective, schema)
        gone, kept = {str(q) for q in before}, {str(q) for q in after}
        return [q for q in before if str(q) not in kept], [q for q in after if str(q) not in gone]
    node, graph = NamedNode(new.iri), vocab.entities_graph(perspective)
    deletes: list[Quad] = []
    adds: list[Quad] = []

    def one(prop, was, now, term=Literal) -> None:
        if was != now:
            deletes.extend([Quad(node, prop, term(was), graph)] if was not in (None, False) else [])
            adds.extend([Quad(node, prop, term(now), graph)] if now not in (None, False) else [])

    one(vocab.PREF_LABEL, old.name, new.name)
    one(kg("nameKey"), match_key(old.name), match_key(new.name))
    one(vocab.SUMMARY, old.summary or None, new.summary or None)
    one(vocab.SELF_ORGANIZATION, old.is_self, new.is_self)
    one(vocab.MERGED_INTO, old.merged_into, new.merged_into, NamedNode)
    deletes += [
        Quad(node, MERGED_NAME, Literal(n), graph) for n in sorted(set(old.merged_names) - set(new.merged_names))
    ]
    adds += [Quad(node, MERGED_NAME, Literal(n), graph) for n in sorted(set(new.merged_names) - set(old.merged_names))]
    keys = []
    for prop, key_prop, was, now, was_keys in (
        (vocab.ALT_LABEL, kg("aliasKey"), old.aliases, new.aliases, old.alias_keys()[0]),
        (vocab.WEAK_ALIAS, kg("weakAliasKey"), old.weak_aliases, new.weak_aliases, old.alias_keys()[1]),
    ):
        held, holds = set(was), set(now)
        gone, added = sorted(held - holds), sorted(holds - held)
        deletes += [Quad(node, prop, Literal(a), graph) for a in gone]
        adds += [Quad(node, prop, Literal(a), graph) for a in added]
        now_keys = set(was_keys)
        if gone:  # (seldom: an alias made the name, a weak alias made strong) counted again
            now_keys = {match_key(a) for a in now}
        else:
            now_keys.update(match_key(a) for a in added)
        deletes += [Quad(node, key_prop, Literal(k), graph) for k in sorted(was_keys - now_keys)]
        adds += [Quad(node, key_prop, Literal(k), graph) for k in sorted(now_keys - was_keys)]
        keys.append(now_keys)
    new._keys = tuple(keys)
    return deletes, adds


def slug(name: str) -> str:
    """A name as an id's slug: its letters without their marks, composed or not (Café is cafe, as
    Cafe\u0301 is), in lower case, and a hyphen for every run of anything else ("José Núñez" is
    jose-nunez; a letter with no plain form, as Ł, is left out)."""
    import unicodedata

    bare = "".join(c for c in unicodedata.normalize("NFD", name) if not unicodedata.combining(c))
    return re.sub(r"[^a-z0-9]+", "-", bare.casefold()).strip("-")


def organization_id(name: str, given: str | None = None) -> str:
    """``organization/<slug of the name>``, unless an id is given. Raises BadInput for a name
    with nothing to make a slug of, or an id given empty."""
    from kgrdf.errors import BadInput

    if given is not None:
        if not given.strip():  # (not taken as no id: the name's would be made without a word)
            raise BadInput("the id given is empty", hint="give organization/SLUG, or none to make it from the name")
        return given if given.startswith("organization/") else f"organization/{given}"

    limit = settings.get("KGRDF_MAX_TEXT")
    if len(name) > limit:  # (the name's own bound is said first, as kg add-entity says it)
        raise BadInput(f"the name is {len(name)} characters long; the most is {limit}", hint="KGRDF_MAX_TEXT sets it")
    made_slug = slug(name)
    if not made_slug:
        raise BadInput(f"cannot make an id from the name {name!r}", hint="give one with --id")
    made = f"organization/{made_slug}"
    if len(made) > limit:
        raise BadInput(
            f"the id made from the name is {len(made)} characters long; the most is {limit}",
            hint="give a shorter one with --id",
        )
    return made


def attribute_name(key: str) -> str:
    """The predicate key an attribute's key would be (``Gated by`` -> ``gated_by``; full-width letters
    and other compatibility forms, and case, folded: ``Ｓｔａｔｕｓ`` and ``ſtatus`` -> ``status``; what
    shows as nothing dropped: ``sta\u00adtus``, ``status\u200b`` and a variation selector's ``status``
    -> ``status``), read as the matcher of people reads text (privacy.fold), for the keys that are
    predicates of their own (an organization's promoted keys, a high-risk one, a claim)."""
    from kgrdf.privacy import fold

    return re.sub(r"[\s-]+", "_", fold(key).strip())


def attribute_key(text: str) -> str:
    """The key of a free-text attribute ``KEY: VALUE``, compared as match keys."""
    return match_key(text.partition(":")[0])


def mint_fact_id(replica: str, seq: int, n: int) -> str:
    """``f-`` and six characters, derived from the replica and the journal sequence number."""
    # The first six base32 characters of the digest: its first 30 bits, five at a time.
    bits = int.from_bytes(hashlib.sha256(f"{replica}:{seq}:{n}".encode()).digest()[:4], "big") >> 2
    return "f-" + "".join(_BASE32[(bits >> shift) & 31] for shift in (25, 20, 15, 10, 5, 0))


def lines(quads) -> list[str]:
    """Quads as the journal's canonical N-Quads lines (without the final dot)."""
    return [str(q) for q in quads]
