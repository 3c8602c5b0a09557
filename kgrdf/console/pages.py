"""The console's pages as documents: each is what its page shows and its JSON twin (``.json``).

Every document is built from the library calls the CLI makes for the same question (``kg stats``,
``kg batch``, ``kg lookup``, ``kg facts``, ``kg history``, ``kg search``, ``kg neighbors``,
``kg disclosures``), for the view's perspective and audience, so that nothing here is computed
differently from ``kg``. Then every entity id in it is replaced by an opaque key (:class:`Keys`):
a page's address, and what it shows, name nobody by id.
"""

import base64
import hashlib
import hmac
import re
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path

from kgrdf import model
from kgrdf.errors import BadInput, NotFound, Refused

RAW_SHOWN = 200  # entities listed on one Raw data page; a search narrows the rest
MAX_NODES = 40  # the neighbourhood drawn: the entity and its nearest neighbours, never the whole graph
REVIEW_IS_THE_OWNERS = "the review queue is the owner's"  # as kg serve tells an audience's token that asks for it
PERSON_NOTE = "Work-operational facts only. Delete on request: kg forget person/ID"
_ENTITY_ID = re.compile(r"^([a-z][a-z0-9_-]*)/\S+\Z")
_KEY = re.compile(r"^k[a-z2-7]{16}\Z")
_ID_IN_TEXT = model.ENTITY_IDS_IN_TEXT  # (person/j, and person/ana_ whole: not person/ana, another)
_UNSCRUBBED = {"sources", "sentence", "value", "reason", "quote", "title", "name", "aliases", "weak_aliases", "states"}


class Keys:
    """Opaque keys for entities, minted under a secret of this start: a key names an entity of one
    perspective to this console only, and an address kept in a browser's history names nobody
    once the console stops. The console remembers each key it gave out, so a page can only be
    reached through a link it made."""

    def __init__(self, secret: bytes | None = None):
        self._secret = secret or secrets.token_bytes(32)
        self._known: dict[str, tuple[str, str]] = {}

    def key(self, perspective: str, entity_id: str) -> str:
        digest = hmac.new(self._secret, f"{perspective}\0{entity_id}".encode(), hashlib.sha256).digest()
        made = "k" + base64.b32encode(digest[:10]).decode().lower()
        self._known[made] = (perspective, entity_id)
        return made

    def entity(self, perspective: str, key: str) -> str:
        """The entity id a key names. Raises NotFound for a key this console did not give out (or
        gave out for another perspective)."""
        known = self._known.get(key) if _KEY.match(key or "") else None
        if known is None or known[0] != perspective:
            raise NotFound("this page is not known to this console", hint="keys last as long as kg console runs")
        return known[1]


@dataclass(frozen=True)
class View:
    """Whose knowledge, as whom, and when: the query string every page carries."""

    perspective: str | None = None
    audience: str | None = None  # "show as": None is the owner, who may hear everything
    as_of: str | None = None  # valid time
    known_at: str | None = None  # transaction time
    hops: int = 1

    @classmethod
    def of(cls, params: dict) -> "View":
        hops = params.get("hops") or "1"
        if hops not in ("1", "2"):
            raise BadInput("hops is 1 or 2")
        audience = (params.get("as") or "").strip()
        if audience and audience.lower() != "owner":
            from kgrdf import audience as audiences

            try:
                audiences.parse(
                    audience
                )  # (a read fails closed on one that does not parse: an empty page says nothing)
            except BadInput as exc:
                raise BadInput(exc.message, hint="show as public, channel:NAME, dm:A,B or owner") from None
        return cls(
            params.get("p") or None,
            audience if audience and audience.lower() != "owner" else None,  # the owner's read names none
            params.get("as_of") or None,
            params.get("known_at") or None,
            int(hops),
        )

    def as_json(self) -> dict:
        return {
            "perspective": self.perspective,
            "audience": self.audience or "owner",
            "as_of": self.as_of,
            "known_at": self.known_at,
            "hops": self.hops,
        }


class Pages:
    """The documents of the console serving the knowledge base at ``path``."""

    def __init__(self, path: Path, keys: Keys | None = None, resident=None, perspective: str | None = None):
        self.path = Path(path)
        self.keys = keys or Keys()
        self.perspective = perspective  # the only one served (kg console --perspective), else any
        self.resident = resident  # the index held open between requests (kgrdf.resident), as kg serve holds it
        self._warm = threading.Event()  # clear while warm() runs: the whole-knowledge-base pages wait for it
        self._warm.set()
        self._measured: dict[tuple, dict] = {}  # whole-knowledge-base measures, by what they were read from

    def _measure(self, kb, session, what: str, view: View, build) -> dict:
        """A whole-knowledge-base measure, read once for each journal position (and day, and view):
        the Briefing and the Constellation scan everything, and nothing changes until a write."""
        from kgrdf import clock

        position = kb.view()
        key = (what, kb.perspective, position.seq, position.digest, clock.iso(clock.now())[:13], view)
        if key not in self._measured:
            if len(self._measured) > 32:
                self._measured.clear()
            self._measured[key] = build()
        return self._measured[key]

    # --- plumbing ------------------------------------------------------------------------------------

    def kb(self, view: View):
        """The knowledge base as the view's perspective sees it. Raises NotFound for another
        perspective than the one a console started with --perspective serves: it sees that one only."""
        from kgrdf.kb import KnowledgeBase

        if self.perspective and view.perspective not in (None, self.perspective):
            raise NotFound(
                f"this console serves perspective {self.perspective!r} only (kg console --perspective), "
                f"not {view.perspective!r}",
                hint=f"kg console --perspective {view.perspective} serves that one",
            )
        opened = KnowledgeBase.open(self.path, perspective=view.perspective or self.perspective, resident=self.resident)
        opened.perspective_asked = view.perspective is not None  # a typo is refused, as by the CLI, on every page
        return opened

    def warming(self) -> None:
        """warm() is about to run (in a thread of its own): the Briefing and the Constellation wait for it."""
        self._warm.clear()

    def warm(self, perspective: str | None = None) -> None:
        """Bring the derived caches the Briefing reads (kgrdf.measures, kgrdf.waiting) up to the
        index, made once when missing (a knowledge base of an older kgrdf, or just rebuilt); every
        write keeps them current from then on. Then read the Briefing's measures once, as its page
        does: the first Briefing after the start is the one read then, until the next write."""
        from kgrdf import batch, briefing, measures

        try:
            view = View(perspective)
            kb = self.kb(view)
            with kb.reading() as session:
                measures.of(session).close()
            batch.for_review(kb)
            with kb.reading() as session:
                self._measure(kb, session, "briefing", view, lambda: briefing.briefing(session))
                self._measure(kb, session, "perspectives", View(), lambda: _perspectives(session))
        finally:
            self._warm.set()  # a Briefing asked meanwhile waits for the caches rather than making them twice

    def _reading(self, view: View):
        from contextlib import contextmanager

        @contextmanager
        def reading():
            kb = self.kb(view)
            with kb.reading() as session:
                session.hear_as(view.audience)
                yield kb, session

        return reading()

    def _keyed(self, value, perspective: str, types: set[str]):
        """``value`` with every entity id replaced by its key (sources and free text left whole)."""
        if isinstance(value, dict):
            return {k: (v if k in _UNSCRUBBED else self._keyed(v, perspective, types)) for k, v in value.items()}
        if isinstance(value, list):
            return [self._keyed(v, perspective, types) for v in value]
        if isinstance(value, str):
            found = _ENTITY_ID.match(value)
            if found and found.group(1) in types:
                return self.key(perspective, value)
        return value

    def key(self, perspective: str, entity_id: str) -> str:
        return self.keys.key(perspective, entity_id)

    def _switcher(self, kb, session) -> list[str]:
        """The perspectives the page offers to switch to: every one, or the one this console serves."""
        if self.perspective:
            return [self.perspective]
        return self._measure(kb, session, "perspectives", View(), lambda: _perspectives(session))

    def refusal(self, exc, view: View):
        """A decision's refusal as the review page shows it: each entity id in its reason and hint by
        the entity's name (the console shows no id), and a conflict's way out in the page's words,
        not kg batch apply's."""
        from kgrdf.errors import KgError

        hint = "confirm one of them, and reject or defer the others" if exc.details.get("conflict") else exc.hint
        if not _ID_IN_TEXT.search(f"{exc.message} {hint or ''}"):
            return type(exc)(exc.message, hint, **exc.details)
        try:
            kb = self.kb(view)
            with kb.reading() as session:
                types = set(session.schema.types)
                message = _named_ids(exc.message, session, types)
                hint = _named_ids(hint, session, types) if hint else None
        except KgError:  # no read to name them by: nothing of the reason is shown
            message, hint = "the decision was refused; nothing was decided", "reload the review queue"
        return type(exc)(message, hint, **exc.details)

    def _done(self, doc: dict, kb, session, view: View) -> dict:
        types = set(session.schema.types)
        shown = self._keyed(_reasons_named(doc, session, types), kb.perspective, types)
        axes = {name: kind.axis for name, kind in session.schema.types.items()}
        return {**shown, "view": {**view.as_json(), "perspective": kb.perspective}, "axes": axes}

    # --- pages ---------------------------------------------------------------------------------------

    def home(self, view: View) -> dict:
        """The Knowledge home: the Briefing (kgrdf.briefing) of what the view's audience may hear, and
        today's batch (kg batch), which is the owner's alone: shown as an audience, it is not there,
        as kg serve refuses an audience's token the batch."""
        from kgrdf import batch, briefing

        self._warm.wait()
        if view.audience:
            kb = self.kb(view)
            with kb.reading() as session:
                perspectives = self._switcher(kb, session)
                session.hear_as(view.audience)
                measures = self._measure(kb, session, "briefing", view, lambda: briefing.briefing(session))
                doc = {"page": "home", **measures, "batch": None, "review": None, "perspectives": perspectives}
                doc["review_note"] = REVIEW_IS_THE_OWNERS
                return self._done(doc, kb, session, view)

        kb = self.kb(view)
        document = batch.for_review(kb)
        with kb.reading() as session:
            measures = self._measure(kb, session, "briefing", view, lambda: briefing.briefing(session))
            perspectives = self._switcher(kb, session)
            document = self._figures_now(kb, session, view, document)
            doc = {
                "page": "home",
                **measures,
                "batch": _batch_summary(document),
                "review": document,
                "perspectives": perspectives,
            }
            return self._done(doc, kb, session, view)

    def constellation(self, view: View, stars: int = 150) -> dict:
        """The graph of current links: the most connected entities, the rest folded (kgrdf.briefing)."""
        from kgrdf import briefing, clock

        valid_at = clock.parse_optional(view.as_of, "as of")
        known_at = clock.parse_optional(view.known_at, "known at")
        self._warm.wait()
        with self._reading(view) as (kb, session):
            graph = self._measure(
                kb,
                session,
                f"constellation {stars}",
                view,
                lambda: briefing.constellation(session, stars, valid_at, known_at),
            )
            return self._done({"page": "constellation", **graph}, kb, session, view)

    def raw(self, view: View, axis: str | None, kind: str | None, text: str) -> dict:
        """Raw data: entities browsed by axis and type (kg stats's counts), filtered by a search (kg
        search), with the proposals waiting for review about each type. Shown as an audience: the
        entities that exist for it (kgrdf.briefing), and no proposals waiting, since what
        waits for review is the owner's (kg batch), as the review queue is."""
        from pyoxigraph import NamedNode

        from kgrdf import briefing

        with self._reading(view) as (kb, session):
            schema = session.schema
            if kind is not None and kind not in schema.types:
                raise BadInput(f"there is no type {kind!r}; the types are " + ", ".join(sorted(schema.types)))
            waiting: dict[str, int] | None = {}
            existing = self._measure(kb, session, "existing", view, lambda: briefing.existing(session))
            if existing is not None:
                counts = briefing.by_type(existing)
                waiting = None
            else:
                counts = self._measure(kb, session, "stats", View(), session.stats)["entities"]
                for row in self._measure(kb, session, "waiting", view, lambda: session.values("raw-waiting")):
                    subject_type = _ENTITY_ID.match(_id_of(row["subject"]))
                    if subject_type:
                        waiting[subject_type.group(1)] = waiting.get(subject_type.group(1), 0) + row["facts"]
            axes: dict[str, dict] = {}
            for key, entity_type in schema.types.items():
                held = axes.setdefault(
                    entity_type.axis,
                    {"axis": entity_type.axis, "types": [], "waiting": 0 if waiting is not None else None},
                )
                held["types"].append(
                    {
                        "type": key,
                        "label": entity_type.label,
                        "entities": counts.get(key, 0),
                        "waiting": waiting.get(key, 0) if waiting is not None else None,
                    }
                )
                if waiting is not None:
                    held["waiting"] += waiting.get(key, 0)
            if axis is not None and axis not in axes:
                raise BadInput(f"there is no axis {axis!r}; the axes are " + ", ".join(axes))
            wanted = {kind} if kind else {t["type"] for t in axes[axis]["types"]} if axis else None
            if text.strip():
                found = [
                    {"id": h["id"], "name": h["name"], "type": h["type"]}
                    for h in session.search(text)
                    if wanted is None or h["type"] in wanted
                ]
            elif kind:
                rows = session.values(
                    "raw-entities", entities=session.entities_graph, **{"class": NamedNode(schema.types[kind].iri)}
                )
                found = [
                    {"id": row["id"], "name": row["name"], "type": kind}
                    for row in rows
                    if existing is None or row["entity"] in existing
                ]
            else:
                found = []
            found.sort(key=lambda e: (e["name"].casefold(), e["id"]))
            doc = {
                "page": "raw",
                "browse": list(axes.values()),
                "axis": axis,
                "type": kind,
                "text": text,
                "found": len(found),
                "entities": found[:RAW_SHOWN],
                "review_note": REVIEW_IS_THE_OWNERS if waiting is None else None,
            }
            return self._done(doc, kb, session, view)

    def review(self, view: View) -> dict:
        """Today's batch as kg batch prints it, each fact with its status now."""
        from kgrdf import batch

        if view.audience:
            raise Refused(REVIEW_IS_THE_OWNERS, hint="stop showing as " + view.audience)
        kb = self.kb(view)
        document = batch.for_review(kb)
        with kb.reading() as session:
            document = self._figures_now(kb, session, view, document)
            return self._done({"page": "review", "review": document}, kb, session, view)

    def _figures_now(self, kb, session, view: View, document: dict) -> dict:
        """The batch with what waits now, as kg batch says it: a batch made earlier in the day keeps
        its facts, but writes since change how many proposals wait (read once a journal position)."""
        from kgrdf import batch

        return {**document, **self._measure(kb, session, "batch-figures", view, lambda: batch.figures(session))}

    def search(self, view: View, text: str) -> dict:
        """The entity ``text`` names (kg identify: a name or strong alias; a weak alias only
        suggests) and the entities whose name, alias or weak alias holds it (kg search), without ids."""
        with self._reading(view) as (kb, session):
            hits = session.search(text) if text.strip() else []
            for hit in hits:
                hit["matched"] = [m for m in hit.get("matched", []) if m.get("how") != "id"]
            named = session.identify(text) if text.strip() else {"matches": [], "suggestions": []}
            doc = {
                "page": "search",
                "text": text,
                "identified": named["matches"],
                "suggested": named["suggestions"],
                "results": hits,
            }
            return self._done(doc, kb, session, view)

    def entity(self, view: View, key: str) -> dict:
        """An entity's page: kg lookup's facts grouped by predicate (or kg facts --as-of / --known-at
        when the view travels in time), the facts it replaced, backlinks and its neighbourhood."""
        from kgrdf import clock

        with self._reading(view) as (kb, session):
            entity_id = self.keys.entity(kb.perspective, key)
            travels = bool(view.as_of or view.known_at)
            known = clock.parse_optional(view.known_at, "known at")
            try:
                looked = session.lookup(entity_id, sources=not travels)
            except NotFound:  # (shown as an audience, or forgotten since: the console names no one by id)
                raise NotFound(
                    "this entity is not known to this view", hint="it may be heard elsewhere, or gone since"
                ) from None
            entity = looked["entity"]
            facts, backlinks = looked["facts"], looked["backlinks"]
            if travels:  # the current facts give way to those of then (but in an organization's digest)
                session.with_sources(backlinks + (facts if entity["type"] == "organization" else []))
                when = clock.parse_optional(view.as_of, "as of")
                facts = session.facts(entity_id, as_of=when, known_at=known)["facts"]
            person = entity["type"] == "person"
            if person:
                allowed = {key for key, p in session.schema.predicates.items() if p.person_ok}
                facts = [f for f in facts if f["predicate"] in allowed]
                entity.pop("summary", None)
            # every fact ever, for the replaced ones: a replacement is named as the audience may hear
            # it (with_sources), which is read for those alone, not for an entity's thousands
            # (as held then, when the view travels in known time: a fact replaced since was not yet)
            everything = session.facts(entity_id, everything=True, sources=False, known_at=known)["facts"]
            by_id = {f["id"]: f for f in everything}
            superseded = []
            for fact in session.with_sources([f for f in everything if f.get("superseded_by")]):
                if fact.get("superseded_by"):
                    replacement = by_id.get(fact["superseded_by"])
                    superseded.append(
                        {
                            **fact,
                            "replaced_by": {
                                "id": fact["superseded_by"],
                                "sentence": (replacement or {}).get("sentence"),
                            },
                        }
                    )
            around = session.neighbors(entity_id, view.hops)
            doc = {
                "page": "entity",
                "entity": entity,
                "person": person,
                "note": PERSON_NOTE if person else None,
                "groups": _by_predicate(facts, session.schema),
                "superseded": [] if person else superseded,
                "backlinks": backlinks,
                "neighbourhood": _nearest(around),
            }
            if entity["type"] == "process":
                doc["flow"] = _flow(session, facts)
            if entity["type"] == "organization":
                from kgrdf import digest

                doc["digest"] = digest.sections(looked)
            return self._done(doc, kb, session, view)

    def fact(self, view: View, fact_id: str) -> dict:
        """A fact's page: its whole history (kg history) and who was told it (kg disclosures)."""
        from kgrdf import disclosure

        with self._reading(view) as (kb, session):
            history = session.history(fact_id)
            told = disclosure.of_fact(session, fact_id)
            doc = {"page": "fact", **history, "disclosures": told.get("disclosures", [])}
            subject = _ENTITY_ID.match(history["fact"].get("subject", ""))
            if subject and subject.group(1) == "person":
                doc["note"] = PERSON_NOTE
            return self._done(doc, kb, session, view)


def _perspectives(session) -> list[str]:
    return [p["perspective"] for p in session.perspectives()]


def _id_of(iri: str) -> str:
    from kgrdf import vocab

    return vocab.id_of(iri)


def _batch_summary(document: dict) -> dict:
    """The figures kg batch prints above its groups."""
    return {
        "groups": len(document["groups"]),
        "in_batch": document["in_batch"],
        "waiting": document["waiting"],
        "batches": document["batches"],
        "made_at": document["made_at"],
        "answered_at": document.get("answered_at"),
    }


def _by_predicate(facts: list[dict], schema) -> list[dict]:
    """Facts grouped by predicate, in the order each predicate first appears."""
    groups: dict[str, dict] = {}
    for fact in facts:
        predicate = schema.predicates.get(fact["predicate"])
        label = predicate.label if predicate else fact["predicate"]
        groups.setdefault(fact["predicate"], {"predicate": fact["predicate"], "label": label, "facts": []})
        groups[fact["predicate"]]["facts"].append(fact)
    return list(groups.values())


def _nearest(around: dict) -> dict:
    """kg neighbors' answer cut to the MAX_NODES nearest entities and the links among them."""
    nodes = sorted(around["nodes"], key=lambda n: n["distance"])[:MAX_NODES]
    kept = {n["id"] for n in nodes}
    edges = [e for e in around["edges"] if e["from"] in kept and e["to"] in kept]
    return {"hops": around["hops"], "nodes": nodes, "edges": edges, "total": len(around["nodes"])}


def _flow(session, facts: list[dict]) -> dict:
    """A process as an ordered flow: its steps in order, each with its actors, gates and systems,
    and the process's entry points and systems (each kg lookup's facts of the step, without their
    sources, which the flow does not show)."""
    steps = sorted(
        (f for f in facts if f["predicate"] == "has_step" and f.get("object")),
        key=lambda f: (f.get("order") is None, f.get("order") or 0, f.get("object_name") or ""),
    )
    out = []
    for step in steps:
        try:
            own = session.lookup(step["object"], sources=False)["facts"]
        except Refused:
            own = []
        roles = {}
        for fact in own:
            if fact["predicate"] in ("actor", "gated_by", "uses", "posts_to", "escalates_to"):
                roles.setdefault(fact["predicate"], []).append(
                    {"entity": fact.get("object"), "name": fact.get("object_name") or fact.get("value")}
                )
        out.append({"step": step["object"], "name": step.get("object_name"), "fact": step["id"], **roles})
    pick = {"entry_point": "entry_points", "uses": "systems", "gated_by": "gates", "posts_to": "posts_to"}
    doc = {"steps": out}
    for predicate, name in pick.items():
        doc[name] = [
            {"entity": f.get("object"), "name": f.get("object_name") or f.get("value"), "fact": f["id"]}
            for f in facts
            if f["predicate"] == predicate
        ]
    return doc


def _reasons_named(value, session, types: set[str]):
    """``value`` with each entity id inside a reason's text ("organization/acme-inc was merged into
    organization/acme", which kgrdf writes) replaced by the entity's name, or by its type alone
    where the view may not see it: the console shows no id, and a reason is text, not scrubbed."""
    if isinstance(value, dict):
        return {
            k: (
                _named_ids(v, session, types)
                if k == "reason" and isinstance(v, str)
                else _reasons_named(v, session, types)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_reasons_named(v, session, types) for v in value]
    return value


def _named_ids(text: str, session, types: set[str]) -> str:
    def named(found: re.Match) -> str:
        said = found.group()
        kind = said.split("/", 1)[0]
        if kind not in types:
            return said
        held = said  # the longest id held, of the text and the text without its last dots, dashes and underscores
        while True:
            entity = session.entity_by_id(held)
            if entity is not None or held[-1] not in "._-":
                break
            held = held[:-1]
        rest = said[len(held) :] if entity is not None else ""
        if entity is None or not session.may_see(entity.iri):
            return f"another {kind}" + rest
        return entity.name + rest

    return _ID_IN_TEXT.sub(named, text)
