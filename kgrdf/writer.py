"""Writing: the operations of §6 as changes to the knowledge base, checked before anything is saved.

A :class:`Writer` collects one command's change (quads to delete and to add) while seeing its own
pending changes, so that one command may add an entity and a fact about it (an import does).
Nothing reaches the journal until the command's last check has passed; an exception leaves the
knowledge base as it was.
"""

from dataclasses import dataclass, replace
from functools import cached_property

from pyoxigraph import Literal, NamedNode, Quad

from kgrdf import audience as audiences
from kgrdf import autoconfirm, clock, inputs, model, nquads, privacy, vocab
from kgrdf.errors import BadInput, Refused
from kgrdf.session import Session

DEFAULT_REVIEWER = "cli"
PACKED = ("packed",)  # a new fact's first rows, once they are kept in a block (Writer._pack)


@dataclass
class Outcome:
    """What a write did to one fact: created, observed again, left rejected, revived, confirmed,
    reconfirmed, unchanged; and, when a rule confirmed it, which (``rule``), or why none did."""

    fact: model.Fact
    action: str
    note: str | None = None
    closed: list = None
    rule: str | None = None


@dataclass
class Heard:
    """Where a fact was heard: the audience that could hear it, who said it and in which message,
    and for a fact a model extracted from text, its confidence and the words (then it is always a
    proposal)."""

    audience: str = audiences.OWNER
    said_by: str | None = None  # an actor or person: an id, name or alias
    message: str | None = None
    extracted: bool = False
    confidence: float | None = None
    span: str | None = None


def _key_of(target) -> str:
    """The key of a fact's object or value as the index holds it (as model.Fact.value_key has it)."""
    return target.value if isinstance(target, NamedNode) else model.normalize(target.value)


def _overlap(a: model.Fact, b: model.Fact) -> bool:
    """Whether two facts' valid times share an instant: [valid_from, valid_to), an open start
    reaching back to the beginning and an open end to the end of time; an empty one shares none."""
    start = max(a.valid_from or "", b.valid_from or "")
    ends = [end for end in (a.valid_to, b.valid_to) if end]
    return not ends or start < min(ends)


def parse_source(text: str, kinds, limit: int | None = None) -> model.Source:
    """``KIND:REF`` as a Source. Raises BadInput naming the kinds. ``limit``: KGRDF_MAX_TEXT, when the
    caller read it once for many sources (inputs.text)."""
    kind, sep, ref = inputs.text(text, "a source", limit).partition(":")
    kind = kind.strip().lower()
    if not sep or not ref.strip():
        raise BadInput(f"source {text!r} must be KIND:REF, e.g. slack:https://chat.example/p123")
    if kind not in kinds:
        raise BadInput(f"unknown source kind {kind!r}; use one of {', '.join(sorted(kinds))}")
    return model.Source(kind, model.refuse_unprintable(ref.strip(), "the source reference"))


class Writer(Session):
    def __init__(self, kb, backend, seq: int, now: str | None = None):
        super().__init__(kb, backend)
        self.seq = seq
        self._deletes: dict[str, None] = {}  # the rows, in the order staged
        self._adds: dict[str, None] = {}  # the rows alone (a quad takes twice a row's memory): see adds
        self.validated = False  # set when the pending change has been validated as it stands
        self._entities: dict[str, model.Entity] = {}  # pending, by IRI
        self._facts: dict[str, model.Fact] = {}  # pending, by IRI
        self._drafts: dict[str, model.Draft] = {}  # fact IRI -> its last update record of this write
        self._by_subject_predicate: dict[tuple[str, str], list[str]] = {}
        self._held_pairs: dict[tuple[str, str], tuple] = {}  # see _held_facts
        self._minted = 0
        self._created: set[str] = set()  # entities this command makes: the index holds no fact about them
        self._held: dict[str, model.Entity | None] = {}  # entities read from the index, by IRI
        self._pending_labels: dict[str, list] = {}  # match key -> (how, label, entity) of pending entities
        self._fact_ids: set[str] | None = None  # every fact id of the index, once a large write needs it
        # A large write checks its facts in chunks while it goes on staging (see check_chunk).
        self._first_lines: dict[str, list[str] | None] = {}  # fact IRI -> its quads as staged first
        # A large write's new facts, once checked, their rows packed: fact IRI -> its nquads.Block
        self._blocks: dict[str, nquads.Block] = {}
        self._unchecked: set[str] = set()  # facts staged since the last chunk was checked
        self._chunks: list = []  # (facts checked, entity IRIs, future findings)
        self._checker = None
        self._standing = None  # the view of the facts it changes again and again (validation.StandingView)
        self._version = 0  # moves on with every change of the pending rows
        self._prepared: tuple | None = None  # (the version, what prepare_commit read of the rows then)
        self._index_entities: set[str] | None = None
        self._entity_adds: set[str] = set()  # lines staged in the entities graph (some since cancelled)
        # Recorded time never goes backwards (clock.for_write refuses a clock behind the journal).
        self.now = now or clock.iso(clock.for_write(kb.journal))
        self.warnings: list = []
        self._minted_iris: set[str] = set()  # facts this write makes: their ids exist only once it is written
        self._perspective_known: bool | None = None  # whether the perspective exists (see check_perspective)
        self.provisions_perspective = False  # kg org init: the self organization makes the perspective
        self._label_checks = 0  # aliases checked against the labels in use (see _refuse_taken)
        self._label_keys: set[str] | None = None
        self._people = None  # the people texts may name (kgrdf.people), once a text needs it
        self._person_checks = 0  # texts looked at for people: past BULK, the people's cache is held
        self._pending_people = privacy.People()  # and the people this write adds or renames
        self._private: dict[str, bool] = {}  # fact IRI -> whether its lines go to the private journal
        self._noted: dict[str, tuple] = {}  # fact IRI -> (the fact, texts, quads, private) of records about it
        self.key: privacy.Key | None = None  # the secret key, as the write found it (see privacy.key)
        self.allow_forgotten = False  # adding a forgotten person again is refused unless this is set
        self._forgotten: list[dict] | None = None
        self.is_private = privacy.Router(self._fact_is_private, self._row_names_a_person)

    # --- pending state seen before the index -----------------------------------------------------

    def entity(self, iri: NamedNode):
        pending = self._entities.get(iri.value)
        if pending is not None:
            return pending
        if iri.value not in self._held:
            self._held[iri.value] = super().entity(iri)
        return self._held[iri.value]

    def identify(self, text: str) -> dict:
        found = super().identify(text)
        known = {m["id"] for m in found["matches"]}
        for how, label, entity in self._pending_labels.get(model.match_key(text), []):
            if entity.id not in known and self._entities.get(entity.iri) is entity:
                known.add(entity.id)
                found["matches"].append(
                    {"id": entity.id, "type": entity.type, "name": entity.name, "matched": how, "label": label}
                )
        return found

    def resolve(self, text: str, role: str = "entity") -> model.Entity:
        self.check_perspective()  # a name not found in a perspective that does not exist: say that
        return super().resolve(text, role)

    def fact(self, fact_id: str, history: bool = True) -> model.Fact:
        self.check_perspective()
        iri = self.fact_iri(fact_id)
        return self._facts.get(iri.value) or super().fact(fact_id, history)

    def check_perspective(self) -> None:
        """A write goes to a perspective that exists: the knowledge base's default one, one that
        holds data, or the one ``kg org init`` provisions in this write (provisions_perspective).
        Else a typo in --perspective (or KGRDF_PERSPECTIVE) would make a new perspective: refused,
        naming the known ones. One index lookup a write (is its entities graph empty?)."""
        if self._perspective_known or self.provisions_perspective:
            return
        if (
            self.perspective == self.kb.default_perspective
            or next(iter(self.backend.quads_in(self.entities_graph)), None) is not None
        ):
            self._perspective_known = True
            return
        known = [p["perspective"] for p in self.perspectives() if p["entities"] or p["facts"] or p["default"]]
        raise Refused(
            f"no perspective {self.perspective!r}; known: {', '.join(known)}",
            hint=f"kg org init NAME --perspective {self.perspective} provisions it with its self "
            "organization; else check KGRDF_PERSPECTIVE and --perspective",
        )

    def _facts_for(self, subject: str, predicate: str, key: str | None = None) -> list[model.Fact]:
        """Every fact, pending or held, with this subject and predicate; with ``key``, only those
        whose object or value has that key (model.Fact.value_key): the others are not read whole,
        so observing a fact again costs the same beside ten siblings or ten thousand."""
        out = {}
        if subject not in self._created:
            every, by_key = self._held_facts(subject, predicate)
            for iri in every if key is None else by_key.get(key, []):
                out[iri] = self._facts.get(iri) or super().fact(vocab.id_of(iri))
        for iri in self._by_subject_predicate.get((subject, predicate), []):
            if key is None or self._facts[iri].value_key() == key:
                out[iri] = self._facts[iri]
        return list(out.values())

    def _held_facts(self, subject: str, predicate: str) -> tuple[list[str], dict[str, list[str]]]:
        """The IRIs of the facts the index holds with this subject and predicate, and the same by
        the key of their object or value: asked once a write, since the index does not change under
        it, so that an import of N records about one thing asks once, not N times."""
        pair = (subject, predicate)
        if pair not in self._held_pairs:
            every, by_key = [], {}
            for row in self.rows("subject-predicate", subject=NamedNode(subject), predicate=NamedNode(predicate)):
                every.append(row["fact"].value)
                by_key.setdefault(_key_of(row["target"]), []).append(row["fact"].value)
            self._held_pairs[pair] = every, by_key
        return self._held_pairs[pair]

    def saying(self, fact: model.Fact) -> list[model.Fact]:
        """The facts, pending or held, that say what ``fact`` says (its subject, predicate and
        object or value, as proposing it again would find them), whatever their status."""
        key = fact.value_key()
        return [f for f in self._facts_for(fact.subject, fact.predicate, key) if f.value_key() == key]

    @property
    def adds(self) -> list[Quad]:
        """The pending additions as quads, parsed now from the rows they are kept as."""
        return list(nquads.quads(self.add_lines()))

    @property
    def has_change(self) -> bool:
        return bool(self._deletes or self._adds or self._blocks)

    def discard(self) -> None:
        """Drop the pending change: the write ends with nothing written."""
        self._version += 1
        self._deletes.clear()
        self._adds.clear()
        self._blocks.clear()
        self._drafts.clear()
        self._noted.clear()

    def delete_lines(self) -> list[str]:
        """The pending deletions as the journal's N-Quads lines."""
        return list(self._deletes)

    def add_lines(self) -> nquads.Rows:
        """The pending additions as the journal's lines, a large write's new facts still packed."""
        return nquads.Rows(list(self._adds), self._blocks.values())

    def _pack(self, iri: str) -> None:
        """Keep a new fact's rows as one block (nquads.Block) from now on: they are checked, and
        nothing reads them again before the commit, which unpacks them a block at a time."""
        lines = self._first_lines[iri]
        for line in lines:
            del self._adds[line]
        self._blocks[iri] = nquads.Block.pack(lines)
        self._first_lines[iri] = PACKED

    def _unpack(self, iri: str) -> None:
        """A packed fact that this write changes again: its rows back among the others."""
        self._adds.update(dict.fromkeys(self._blocks.pop(iri).lines()))
        self._first_lines[iri] = None

    def _fact_is_private(self, iri: str) -> bool | None:
        """A fact's lines are private when it is (privacy.fact_is_private), or when a text it holds
        now names a person: a fact this write changed is looked at again (a new source may name one).
        So are the records this write adds about a fact (add_to_provenance) when the fact is, or when
        their own texts name a person."""
        fact = self._facts.get(iri)
        noted = self._noted.get(iri)
        if fact is None and noted is None:
            return None
        if iri not in self._private:
            private = False
            if fact is not None:
                changed = self._first_lines.get(iri) is None
                private = privacy.fact_is_private(fact) or (changed and self._names_a_person(privacy.fact_texts(fact)))
            if noted is not None and not private:
                held, texts, _quads, private = noted
                private = (
                    private
                    or privacy.fact_is_private(held)
                    or self._names_a_person([*privacy.fact_texts(held), *texts])
                )
            self._private[iri] = private
        return self._private[iri]

    def _row_names_a_person(self, line: str) -> bool:
        """Whether an entity row of this write holds a name, alias or summary that names a person."""
        if nquads.predicate_of(line) not in privacy.TEXT_PROPERTIES:
            return False  # told from the text: an import's entity rows are mostly types and keys
        if line not in self._adds and line not in self._deletes:
            return False
        (quad,) = nquads.parsed([line])
        return isinstance(quad.object, Literal) and self._names_a_person([quad.object.value])

    def _names_a_person(self, texts) -> bool:
        """Whether any text names a known person or actor (see privacy.People): by name or strong
        alias, by id, or by an identifier's value. The people the texts' words lead to are read
        from kgrdf.people's cache, not everyone: the cost follows the texts, not the knowledge base."""
        texts = [text for text in texts if text]
        if not texts:
            return False
        if self._people is None:
            from kgrdf import identifiers, people

            kb_path = self.kb.path if self.kb.backend_kind != "memory" else None
            self._people = people.Index(kb_path, self.backend, self.perspective, identifiers.read(self.kb))
        self._person_checks += 1
        if self._person_checks == self.BULK:
            self._people.hold()  # a large write: one read of the cache, not a query a record
        matchers = [found for found in (self._people.named_in(texts), self._pending_people) if found]
        return any(found.in_text(text) for text in texts for found in matchers)

    def close(self) -> None:
        """Let go of what the write holds open beside the index (the people's cache), and of the
        router, whose hold on this writer's methods would leave the whole change to the cyclic
        collector: an import disables it, and it would then walk millions of objects at once."""
        if self._people is not None:
            self._people.close()
        self.is_private = None

    def add_to_provenance(self, fact: model.Fact, quads: list[Quad], texts=(), private: bool = False) -> None:
        """Add records about a fact the index holds to its provenance graph, changing none of its
        fields (a disclosure: kgrdf.disclosure). They go to the private journal when ``private``,
        when the fact's own records do, or when one of ``texts`` (what they say: an audience, a
        message) names a person; the nodes they type are checked against the shapes with the write
        (validate)."""
        graph = vocab.provenance_graph(NamedNode(fact.iri))
        if any(q.graph_name != graph for q in quads):
            raise ValueError(f"records about {fact.id} belong in its provenance graph")
        _held, held_texts, held_quads, was_private = self._noted.get(fact.iri, (fact, [], [], False))
        self._noted[fact.iri] = (fact, [*held_texts, *texts], [*held_quads, *quads], was_private or private)
        self._private.pop(fact.iri, None)  # decided again, with these texts
        self._stage([], quads)

    def _stage(self, deletes, adds, fact: model.Fact | None = None) -> None:
        """Add quads to the pending change (_stage_lines)."""
        self._stage_lines([str(q) for q in deletes], [str(q) for q in adds], fact)

    def _stage_lines(self, deletes: list[str], adds: list[str], fact: model.Fact | None = None) -> None:
        """Add rows to the pending change. A row added and deleted within one command cancels out."""
        self.check_perspective()
        self.validated = False
        self._version += 1
        if self._blocks:
            touched = {privacy.fact_of(nquads.graph_of(line)) for line in (*deletes, *adds)}
            for iri in touched.intersection(self._blocks):
                self._unpack(iri)
        for key in deletes:
            if key in self._adds:
                del self._adds[key]
            else:
                self._deletes[key] = None
        for key in adds:
            if key in self._deletes:
                del self._deletes[key]
            else:
                self._adds[key] = None  # kept as the row alone: a quad takes twice its memory
        in_entities = f" <{self.entities_graph.value}>"
        self._entity_adds.update(key for key in adds if key.endswith(in_entities))
        if fact is not None:
            if self._standing is not None:
                self._standing.note(fact.iri, deletes, adds)
            self._track(fact, None)

    def stage_new_fact(self, fact: model.Fact, lines: list[str]) -> None:
        """Add a fact this write makes, as its rows (model.fact_lines): all in its own graphs, so none
        cancels a pending deletion or is an entity's. They are kept as text alone, the half of what
        their quads would take; what needs them as quads parses them (adds)."""
        self.check_perspective()
        self.validated = False
        self._version += 1
        self._minted_iris.add(fact.iri)
        self._adds.update(dict.fromkeys(lines))
        self._track(fact, lines)

    def _track(self, fact: model.Fact, first_lines: list[str] | None) -> None:
        """Note a staged fact, with its rows when it is new and unchanged since (else None)."""
        if fact.iri not in self._facts:
            self._by_subject_predicate.setdefault((fact.subject, fact.predicate), []).append(fact.iri)
            self._first_lines[fact.iri] = first_lines
        else:
            self._first_lines[fact.iri] = None  # changed since it was staged: read it whole
        self._facts[fact.iri] = fact
        self._unchecked.add(fact.iri)

    def _change(
        self, fact: model.Fact, changes: dict, action: str, reason: str | None = None, sources=(), hearings=()
    ) -> model.Fact:
        """Change ``fact`` with an update record of this write. A fact this write changed already (the
        very object the last change returned) by the same action for the same reason folds the change
        into that record: an import of N copies of one fact makes one record adding N hearings and
        their sources, not N records each listing all before it; by another action or for another
        reason, its record follows, the fact changed in place (it is this write's own copy). Returns
        the fact as it is after (callers say what it held before the change, not after it)."""
        draft = self._drafts.get(fact.iri)
        own = draft is not None and draft.fact is fact
        if own and (draft.entry.action, draft.entry.reason) == (action, reason):
            deletes, adds = model.fold_change(
                draft, changes, schema=self.schema, new_sources=list(sources), new_hearings=list(hearings)
            )
        else:
            deletes, adds, draft = model.draft_change(
                fact,
                changes,
                seq=self.seq,
                at=self.now,
                action=action,
                reason=reason,
                schema=self.schema,
                new_sources=list(sources),
                new_hearings=list(hearings),
                last=draft if own else None,
            )
            self._drafts[fact.iri] = draft
        self._stage_lines(deletes, adds, draft.fact)
        return draft.fact

    # --- validation ------------------------------------------------------------------------------

    BULK = 200  # facts and entities: above this, the shapes run set-based over the whole change
    MANY_LINES = 100_000  # a write's view of more rows than this (a fact heard 10k times) is checked on two threads

    def findings(self, meanwhile=None) -> list:
        """Every finding of the SHACL shapes on what this write touches (violations and warnings).

        A small write builds its validation view (its facts with their sources, the entities they
        name, the facts beside a single-valued one) and runs kg's own evaluator of the shapes
        (kgrdf.shacl) focused on those nodes. A large
        one (an import) loads its facts and the entities graph into the view and runs each
        constraint as one set-based query (kgrdf.shacl), keeping the violations about its own
        nodes; its warnings (a second current value of a single-valued predicate) are kg lint's.

        ``meanwhile`` is called once the last check of a write checked in chunks runs, before
        waiting for it (an import reads what its commit will need: prepare_commit).
        """
        from kgrdf import validation

        noted = self._noted_findings() if self._noted else []
        facts = list(self._facts.values())
        if not facts and not self._entities:
            return noted
        if len(facts) + len(self._entities) > self.BULK:
            return self._bulk_findings(meanwhile) + noted
        focus = [f.iri for f in facts] + list(self._entities)
        context: dict[str, model.Fact] = {}
        for fact in facts:
            predicate = self.schema.predicate_by_iri(fact.predicate)
            if predicate is not None and predicate.single_valued:
                for other in self._facts_for(fact.subject, fact.predicate):
                    context.setdefault(other.iri, other)
        context.update({f.iri: f for f in facts})
        named = {f.subject for f in facts} | {f.target.value for f in facts if f.is_entity_target}
        if any(e.is_self for e in self._entities.values()):  # the one it must not be a second of
            named |= {row["entity"].value for row in self.rows("self-organization", entities=self.entities_graph)}
        # Made from rows, which Oxigraph parses in one go: a fact heard 100k times has a million.
        standing = self._standing.facts if self._standing is not None else set()
        fact_lines = [
            line for f in context.values() if f.iri not in standing for line in model.fact_lines(f, self.schema)
        ]
        threads = 2 if standing or len(fact_lines) > self.MANY_LINES else 1  # its queries take seconds: both cores
        if standing:  # checked in chunks: the facts heard most are in their view already, beside every entity
            view, taken, entity_lines = self._standing, self._standing.take(), frozenset(self._entity_lines())
            self._standing = None

            def check():
                data = view.with_facts(*taken, entity_lines, fact_lines)
                return validation.check(data, focus, self.kb.path, threads)

            found = self._checker.submit(check)
            if meanwhile is not None:
                meanwhile()
            found = found.result()
            self._checker.shutdown()
            self._checker = None
            return found + noted
        entities = [self.entity(NamedNode(iri)) for iri in named | set(self._entities)]
        entity_lines = [
            str(q) for e in entities if e is not None for q in model.entity_quads(e, self.perspective, self.schema)
        ]
        data = validation.view_from_lines(fact_lines, entity_lines, self.backend.schema_quads())
        return validation.check(data, focus, self.kb.path, threads) + noted

    def _noted_findings(self) -> list:
        """The findings on the records this write adds about facts it does not change
        (add_to_provenance): a view of those facts with the records, focused on the nodes the
        records type (each disclosure)."""
        from kgrdf import validation

        quads, focus = [], set()
        for iri, (fact, _texts, added, _private) in self._noted.items():
            quads += model.fact_quads(self._facts.get(iri, fact), self.schema)
            quads += added
            focus |= {q.subject.value for q in added if q.predicate == vocab.RDF_TYPE}
        data = validation.view(quads, [], self.backend.schema_quads())
        return validation.check(data, sorted(focus), self.kb.path)

    def _bulk_findings(self, meanwhile=None) -> list:
        """The violations of a large write: what check_chunk has checked, and the rest now."""
        self.check_chunk(last=True)
        if meanwhile is not None:
            meanwhile()
        latest: dict[str, list] = {}  # node -> the findings of the last chunk that checked it
        for checked, entities, future in self._chunks:
            found = future.result()
            for iri in checked | entities:
                latest[iri] = []
            for finding in found:
                node = finding.focus.split("/source/")[0]
                if node in checked or node in entities:
                    latest[node].append(finding)
        self._chunks = []
        if self._checker is not None:
            self._checker.shutdown()
            self._checker = None
        return [
            finding
            for node in sorted(latest)
            for finding in latest[node]
            if node in self._facts or node in self._entities
        ]

    CHUNKS_HELD = 3  # chunks given to the checker and not checked yet: staging waits for the first of them
    HEARD_OFTEN = 100  # hearings: a fact changed with more than this is checked in the standing view

    def check_chunk(self, last: bool = False) -> None:
        """Check the facts staged since the last chunk against the shapes in a worker thread, while
        the write goes on staging (Oxigraph lets go of the interpreter lock while it loads and
        queries). A fact staged again later is checked again, as it is then, in a later chunk; but
        one this write changed that was heard more than HEARD_OFTEN times goes to the standing view
        (validation.StandingView), which each chunk brings the rows staged for it since, and only
        the ``last`` checks: checked whole in every chunk, N copies of one fact would cost N squared
        over the chunk size, and built whole at the end, a million rows after the staging. (A worker
        process was tried: on two cores it competes for the CPU as much as a thread does for the
        lock, and it was slower.)"""
        from concurrent.futures import ThreadPoolExecutor, wait

        from kgrdf import validation

        if not self._unchecked and not self._entities and self._standing is None:
            return
        if self._checker is None:
            self._checker = ThreadPoolExecutor(max_workers=1)
            self._ontology = self.backend.schema_quads()
        entity_lines = self._entity_lines()
        fact_lines, packable = [], []
        for iri in self._unchecked:
            first = self._first_lines.get(iri)
            fact = self._facts[iri]
            if first is not None and first is not PACKED:
                fact_lines += first
                packable.append(iri)
            elif len(fact.hearings) > self.HEARD_OFTEN or (self._standing and iri in self._standing.facts):
                if self._standing is None:
                    self._standing = validation.StandingView(self._ontology)
                if iri not in self._standing.facts:
                    self._standing.start(iri, model.fact_lines(fact, self.schema))
            else:
                fact_lines += model.fact_lines(fact, self.schema)
        standing = self._standing.facts if self._standing is not None else set()
        checked, self._unchecked = self._unchecked - standing, set()
        if len(self._chunks) >= self.CHUNKS_HELD:  # each holds its rows as text until it is checked
            wait([self._chunks[-self.CHUNKS_HELD][2]])
        future = self._checker.submit(validation.check_lines, fact_lines, list(entity_lines), self._ontology)
        self._chunks.append((checked, set(self._entities), future))
        for iri in packable:
            self._pack(iri)
        if self._standing is not None:
            run = self._standing.check if last else self._standing.apply
            future = self._checker.submit(run, *self._standing.take(), frozenset(entity_lines))
            if last:
                self._chunks.append((set(standing), set(), future))

    def _entity_lines(self) -> set[str]:
        """The entities graph's lines as this write leaves it: the index's, read once, and the pending change's."""
        if self._index_entities is None:
            entities_graph = vocab.entities_graph(self.perspective)
            self._index_entities = {str(q) for q in self.backend.quads_in(entities_graph)}
        entity_lines = self._index_entities.difference(self._deletes)
        entity_lines.update(k for k in self._entity_adds if k in self._adds)
        return entity_lines

    def heard_by(self, audience: str, fact: str) -> None:
        """Raises NotFound, as for a fact that is not there, unless the audience ``audience`` may
        hear the fact ``fact``, as this write's index holds it (kgrdf.audience)."""
        from kgrdf.session import Session

        reader = Session(self.kb, self.backend)
        reader.hear_as(audience)
        reader.fact(fact, history=False)

    def validate(self) -> list:
        """Check what this write touches against the SHACL shapes. Raises Refused on a violation
        (nothing has been written yet); returns the warnings."""
        from kgrdf import validation

        if self.validated:
            return self.warnings
        findings = self.findings()
        try:
            self.warnings = validation.refuse_violations(findings)
        except Refused as exc:
            exc.details["findings"] = [self._shown_finding(f) for f in findings if f.severity == "violation"]
            raise
        self.validated = True
        return self.warnings

    def _shown_finding(self, finding) -> dict:
        """A finding for a refusal's JSON. A fact this write would have made is refused with it, so
        its id was never given out (the next write mints it again for another fact): the finding
        describes the fact instead, marked as not created."""
        node = finding.focus
        fact_iri = node.split("/source/")[0].split("/hearing/")[0].split("/update/")[0]
        if fact_iri not in self._minted_iris or fact_iri not in self._facts:
            return finding.as_json()
        fact = self._facts[fact_iri]
        predicate = self.schema.predicate_by_iri(fact.predicate)
        shown = {"subject": vocab.id_of(fact.subject), "predicate": predicate.key if predicate else fact.predicate}
        shown["object" if fact.is_entity_target else "value"] = (
            vocab.id_of(fact.target.value) if fact.is_entity_target else fact.target.value
        )
        return {
            "focus": None,
            "fact": {**shown, "created": False},
            "message": finding.message,
            "severity": finding.severity,
        }

    # --- a large write (an import) -------------------------------------------------------------------

    def prepare_commit(self) -> None:
        """Read now what the commit will read of the pending rows alone (what they change in the
        measures cache): done while the write's last check runs, and used by the commit unless the
        rows change since (a fact the check refused is dropped)."""
        from kgrdf import measures

        self._prepared = (self._version, measures.changes_of(self.delete_lines(), self.add_lines()))

    def prepared(self):
        """What prepare_commit read, if the pending rows are still those it read (else None)."""
        if self._prepared is None or self._prepared[0] != self._version:
            return None
        return self._prepared[1]

    def fork(self) -> "Writer":
        """A writer for the same transaction with nothing pending (an import stages into it, then
        adopts it once its refused records are out)."""
        return Writer(self.kb, self.backend, self.seq, now=self.now)

    def adopt(self, other: "Writer") -> None:
        """Take over ``other``'s pending change (self had none), leaving ``other`` empty: its router
        holds its methods, a cycle that would keep the change from being freed once written."""
        self.__dict__.update(other.__dict__)
        other.__dict__.clear()
        self.is_private = privacy.Router(self._fact_is_private, self._row_names_a_person)

    def drop_fact(self, iri: str) -> None:
        """Take a pending fact, and every change this write made to it, out of the write."""
        self._version += 1
        graphs = {iri, iri + "/provenance"}
        self._blocks.pop(iri, None)
        for pending in (self._adds, self._deletes):
            for key in [k for k in pending if nquads.graph_of(k) in graphs]:
                del pending[key]
        fact = self._facts.pop(iri, None)
        self._drafts.pop(iri, None)
        if fact is not None:
            listed = self._by_subject_predicate.get((fact.subject, fact.predicate), [])
            if iri in listed:
                listed.remove(iri)

    def pending_facts(self) -> dict[str, model.Fact]:
        """The facts this write makes or changes, by IRI, as they will be."""
        return self._facts

    # --- entities -----------------------------------------------------------------------------------

    def add_entity(
        self,
        entity_id: str,
        name: str,
        aliases=(),
        weak_aliases=(),
        summary: str | None = None,
        is_self: bool = False,
        check_aliases: bool = True,
    ):
        """Make an entity, or add to one: a new name or summary replaces the old, aliases are added.
        ``is_self`` makes an organization the perspective's own (kg org init; the shapes allow one),
        and so provisions the perspective when it is new.

        A name or alias holding a character that hides what it says (invisible, or a bidirectional
        control) is refused (inputs.label). A strong alias is an identity: one that another entity
        already goes by (its name or a strong alias, by match key) is refused with that entity's id,
        since it would make that name ambiguous (unless ``check_aliases`` is off: a merge hands an
        organization's names to the one it is merged into, making nothing more ambiguous).

        Returns (entity, "created" | "updated" | "unchanged").
        """
        if is_self:
            self.provisions_perspective = True
        self.check_perspective()
        entity_id = entity_id.strip()
        if not vocab.ID_PATTERN.match(entity_id):
            raise BadInput(f"entity id {entity_id!r} must be TYPE/NAME in lower case, e.g. person/dana or repo/web-app")
        type_key = entity_id.split("/", 1)[0]
        if type_key not in self.schema.types:
            raise Refused(
                f"unknown entity type {type_key!r} in {entity_id}",
                hint="one of " + ", ".join(sorted(self.schema.types)),
            )
        inputs.text(summary or "", "the summary")  # Unicode text of a bounded size (KGRDF_MAX_TEXT)
        for what, given in (
            [("the name", name or "")]
            + [("the alias", a) for a in aliases]
            + [("the weak alias", a) for a in weak_aliases]
        ):
            inputs.label(given, what)  # and nothing in it that hides what it says
        name = model.clean_label(name or "")
        if not name:
            raise BadInput("an entity needs a --name")
        aliases = [model.clean_label(a) for a in aliases if model.clean_label(a)]
        weak = [model.clean_label(a) for a in weak_aliases if model.clean_label(a)]
        iri = vocab.entity_iri(self.perspective, entity_id)
        old = self.entity(iri)
        if old is None and type_key in privacy.PERSON_TYPES and not self.allow_forgotten:
            self._refuse_forgotten(entity_id)
        if old is None:
            new = model.Entity(
                entity_id,
                iri.value,
                type_key,
                name,
                sorted(set(aliases) - {name}),
                sorted(set(weak) - {name} - set(aliases)),
                summary,
                is_self,
            )
            outcome = "created"
        else:
            new = replace(
                old,
                name=name or old.name,
                aliases=sorted(set(old.aliases) | set(aliases)),
                weak_aliases=sorted(set(old.weak_aliases) | set(weak)),
                summary=summary if summary is not None else old.summary,
                is_self=old.is_self or is_self,
            )
            new.aliases = [a for a in new.aliases if a != new.name]
            new.weak_aliases = [a for a in new.weak_aliases if a not in new.aliases and a != new.name]
            outcome = "unchanged" if new == old else "updated"
        if outcome != "unchanged":
            for alias in new.aliases if check_aliases else ():
                if old is None or alias not in old.aliases:
                    self._refuse_taken(alias, new)
            self._replace_entity(old, new)
            if old is None:
                self._created.add(iri.value)
            for how, label in [("name", new.name)] + [("alias", a) for a in new.aliases]:
                self._pending_labels.setdefault(model.match_key(label), []).append((how, label, new))
            if new.type in privacy.PERSON_TYPES:
                self._pending_people.add_person(new.iri, new.id, [new.name, *new.aliases, *new.weak_aliases])
        return new, outcome

    def _refuse_taken(self, alias: str, entity: model.Entity) -> None:
        """Refuse a strong alias that another entity of the perspective goes by already (its name or
        a strong alias, compared by match key): one index lookup by that key (identify.rq). A large
        write (an import) reads every label's key once instead, and looks up only the keys found."""
        key = model.match_key(alias)
        self._label_checks += 1
        if self._label_keys is None and self._label_checks > 64:
            self._label_keys = {
                model.match_key(row["label"].value) for row in self.rows("labels", entities=self.entities_graph)
            }
        if self._label_keys is not None and key not in self._label_keys and key not in self._pending_labels:
            return
        others = [m for m in self.identify(alias)["matches"] if m["id"] != entity.id]
        if others:
            named = ", ".join(f"{m['id']} ({m['name']!r}, its {m['matched']})" for m in others)
            raise Refused(
                f"the alias {alias!r} of {entity.id} is already a name of {named}: an alias names one "
                f"entity, and this one would make {alias!r} ambiguous",
                hint="a related term that may be shared is a weak alias: --weak-alias",
                candidates=[m["id"] for m in others],
                conflict=True,
            )

    def _refuse_forgotten(self, entity_id: str) -> None:
        if self._forgotten is None:
            self._forgotten = privacy.forgotten(self.kb)
        if self._forgotten and (self.key or privacy.key(self.kb, make=False)).is_forgotten(entity_id, self._forgotten):
            raise Refused(
                f"{entity_id} was forgotten on request; adding them again is refused",
                hint="add them again knowingly with --allow-forgotten",
            )

    # --- facts --------------------------------------------------------------------------------------

    def _mint(self) -> str:
        from kgrdf import queries

        if self._fact_ids is None and self._minted >= 32:
            self._fact_ids = {row["id"].value for row in self.rows("fact-ids")}
        while True:
            fact_id = model.mint_fact_id(self.kb.replica, self.seq, self._minted)
            self._minted += 1
            iri = vocab.fact_iri(self.perspective, fact_id)
            if iri.value in self._facts:
                continue
            if self._fact_ids is not None:
                if fact_id not in self._fact_ids:
                    return fact_id
            elif not self.backend.ask(queries.load("fact-exists"), {"fact": iri}):
                return fact_id

    def _target(self, predicate, object_text: str | None, value_text: str | None):
        """The object entity or the value literal, checked against the predicate's kind and type."""
        if (object_text is None) == (value_text is None):
            raise BadInput(f"give exactly one of --object (an entity) or --value (text) for {predicate.key}")
        if predicate.takes_entity:
            if object_text is None:
                raise Refused(
                    f"{predicate.key} takes an entity (--object), not a value",
                    hint=f"e.g. --object {next(iter(sorted(predicate.range)), 'team')}/NAME",
                )
            return self.resolve(object_text, role="object")
        if value_text is None:
            raise Refused(f"{predicate.key} takes a value (--value), not an entity")
        from kgrdf import inputs

        text = inputs.text(value_text, f"the value for {predicate.key}", self._text_limit).strip()
        if not text:
            raise BadInput(f"the value for {predicate.key} is empty")
        if predicate.value_type == vocab.XSD_DATE.value:
            return Literal(clock.parse_date(text, what=f"{predicate.key} value").isoformat(), datatype=vocab.XSD_DATE)
        return Literal(text)

    def propose(
        self,
        subject: str,
        predicate: str,
        *,
        object: str | None = None,
        value: str | None = None,
        sources=(),
        authority: str = "observed",
        valid_from: str | None = None,
        valid_to: str | None = None,
        order: int | None = None,
        prevents_rework: bool = False,
        status: str = "proposed",
        reason: str | None = None,
        user_words=None,
        auto_confirm: bool = True,
        heard: "Heard | list[Heard] | None" = None,
        retime: bool = False,
        default_start: str | None = None,
    ) -> Outcome:
        """Propose a fact, or observe it again if the knowledge base holds it already, then apply the
        auto-confirm rules (unless ``auto_confirm`` is off).

        An observation agrees with the fact it observes: a valid time or an order given that the
        fact does not hold is refused with the fact's own (an observation changes neither), unless
        ``retime`` (a person's correction, kg supersede) sets them as asked. A new fact without
        ``valid_from`` holds from ``default_start`` (None: from no time in particular). ``reason``
        is kept with what the write does: the fact's record when it makes the fact, else the update's.

        ``user_words`` is ``(source, verdict)``: a user source carrying the quote, and the
        transcript's verdict on it (kgrdf.transcript.verify). Verified words confirm the fact, and
        bring back a rejected one; words not verified leave it proposed and the outcome says why.
        ``heard`` is where it was heard (a list: heard in each, as one write does for a correction).
        """
        heards = [self._heard(h) for h in (heard if isinstance(heard, list) else [heard or Heard()])]
        heard = heards[0]
        if heard["extracted"] and (user_words is not None or status != "proposed"):
            raise BadInput("an extracted fact is always a proposal: --extracted does not go with --from-user")
        verified = user_words is not None and user_words[1].verified
        if user_words is not None:
            sources = [*sources, user_words[0]]
        if verified:
            authority = "user"
        outcome = self._propose(
            subject,
            predicate,
            object=object,
            value=value,
            sources=sources,
            authority=authority,
            valid_from=valid_from,
            valid_to=valid_to,
            order=order,
            prevents_rework=prevents_rework,
            status=status,
            reason=reason,
            revive_rejected=verified,
            heard=heards,
            retime=retime,
            default_start=default_start,
        )
        if heard["extracted"]:
            return replace(
                outcome,
                note="; ".join(
                    n
                    for n in (
                        outcome.note,
                        "stays proposed: it was extracted from text, and extracted facts are always reviewed",
                    )
                    if n
                ),
            )
        if outcome.fact.status != "proposed" or not (auto_confirm or verified):
            return outcome
        pred = self.schema.predicate(predicate)
        decision = autoconfirm.decide(
            predicate=pred,
            sources=outcome.fact.sources,
            source_kinds=self.schema.source_kinds,
            names_person=outcome.fact.sensitivity == "personal",
            user_verified=verified,
        )
        if decision.rule is None:
            why = user_words[1].reason if user_words is not None else decision.why_not
            note = f"{outcome.note}; " if outcome.note else ""
            return replace(outcome, note=f"{note}stays proposed: {why}")
        confirmed = self.confirm(
            outcome.fact.id, reviewed_by="auto", reason=f"auto-confirmed: {decision.rule}", close_replaced=False
        )
        note = "; ".join(n for n in (outcome.note, f"confirmed automatically: {decision.rule}", confirmed.note) if n)
        return Outcome(confirmed.fact, outcome.action, note, [], decision.rule)

    def _heard(self, heard: Heard) -> dict:
        """The fields a Heard gives a new fact: a canonical audience, the speaker resolved (an actor
        or a person) and their organization now. Raises BadInput or Refused before anything is staged."""
        out = {
            "audience": audiences.parse(heard.audience),
            "said_by": None,
            "message": None,
            "speaker_affiliation": None,
            "extracted": True if heard.extracted else None,
            "confidence": None,
            "span": None,
        }
        if heard.confidence is not None or heard.span is not None:
            if not heard.extracted:
                raise BadInput("--confidence and --span describe an extracted fact: add --extracted")
        if heard.confidence is not None:
            if not 0 <= heard.confidence <= 1:
                raise BadInput(f"--confidence is between 0 and 1, not {heard.confidence}")
            out["confidence"] = float(heard.confidence)
        if heard.span is not None:
            out["span"] = model.clean_label(inputs.text(heard.span, "the span")) or None
        if heard.message is not None:
            message = inputs.text(heard.message, "the message").strip()
            out["message"] = model.refuse_unprintable(message, "the message reference") or None
        if heard.said_by is not None:
            speaker = self.resolve(heard.said_by, role="speaker")
            if speaker.type not in privacy.PERSON_TYPES:
                raise Refused(f"{speaker.id} is a {speaker.type}: --said-by names an actor or a person")
            out["said_by"] = speaker.iri
            out["speaker_affiliation"] = self._affiliation(speaker.iri)
        return out

    _FACT_HEARD = ("extracted", "claimed_role", "verified")  # said of the fact, not of one hearing

    def _hearings(self, fact: model.Fact, heards: list[dict], sources) -> list[model.Hearing]:
        """A hearing of ``fact`` for each of ``heards`` (Writer._heard's fields), now, with ``sources``."""
        return [
            model.Hearing(
                iri,
                heard["audience"],
                tuple(sources),
                said_by=heard["said_by"],
                message=heard["message"],
                speaker_affiliation=heard["speaker_affiliation"],
                heard_at=self.now,
                confidence=heard["confidence"],
                span=heard["span"],
            )
            for iri, heard in zip(self._new_hearings(fact, len(heards)), heards, strict=True)
        ]

    def _rehomed(self, fact: model.Fact, hearings) -> list[model.Hearing]:
        """Hearings as hearings of ``fact``, each named by this transaction (a merge carries another
        fact's over, each with its own audience, sources, speaker, message and time)."""
        return [replace(h, iri=iri) for iri, h in zip(self._new_hearings(fact, len(hearings)), hearings, strict=True)]

    def _new_hearings(self, fact: model.Fact, count: int) -> list[str]:
        """The IRIs of ``count`` hearings this transaction adds to ``fact``, after those it added."""
        prefix = f"{fact.iri}/hearing/{self.seq}."
        last = fact.hearings[-1].iri if fact.hearings else None
        if last and last.startswith(prefix):  # this write's hearings come last, in the order named
            step = int(last[len(prefix) :])
        else:
            step = sum(1 for h in fact.hearings if h.iri and h.iri.startswith(prefix))
        return [model.hearing_iri(fact.iri, self.seq, step + n) for n in range(1, count + 1)]

    def _affiliation(self, speaker: str) -> str | None:
        """The organization a speaker is affiliated with now: their newest current, confirmed
        affiliated_with fact (recorded with what they say; never a reason to trust it)."""
        predicate = self.schema.predicate("affiliated_with")
        current = [
            f
            for f in self._facts_for(speaker, predicate.iri)
            if f.status == "confirmed" and f.current and f.is_entity_target
        ]
        current.sort(key=lambda f: f.recorded_at or "", reverse=True)
        return current[0].target.value if current else None

    def _propose(
        self,
        subject: str,
        predicate: str,
        *,
        object,
        value,
        sources,
        authority,
        valid_from,
        valid_to,
        order,
        prevents_rework,
        status,
        reason,
        revive_rejected: bool,
        heard: "dict | list[dict] | None" = None,
        retime: bool = False,
        default_start: str | None = None,
    ) -> Outcome:
        pred = self.schema.predicate(predicate)
        if authority not in self.schema.authorities:
            raise BadInput(f"unknown authority {authority!r}; use one of {', '.join(self.schema.authorities)}")
        if status not in ("proposed", "confirmed"):
            raise BadInput(f"a new fact is proposed or confirmed, not {status!r}")
        sources = [
            s if isinstance(s, model.Source) else parse_source(s, self.schema.source_kinds, self._text_limit)
            for s in sources
        ]
        if not sources:
            raise BadInput(
                "a fact needs at least one --source KIND:REF (where it came from)",
                hint="e.g. --source slack:https://chat.example/p123 or --source report:weekly-2026-11",
            )
        start, end = (clock.parse_optional(valid_from, "--valid-from"), clock.parse_optional(valid_to, "--valid-to"))
        start, end = (clock.iso(start) if start else None), (clock.iso(end) if end else None)
        if start and end and start > end:
            raise BadInput(f"--valid-from {start} is after --valid-to {end}")
        if order is not None and not pred.ordered:
            raise BadInput(f"--order applies to ordered predicates (has_step), not {pred.key}")
        subject_entity = self.resolve(subject, role="subject")
        target = self._target(pred, object, value)
        target_term = NamedNode(target.iri) if isinstance(target, model.Entity) else target
        key = target_term.value if isinstance(target_term, NamedNode) else model.normalize(target_term.value)

        same = [f for f in self._facts_for(subject_entity.iri, pred.iri, key) if f.value_key() == key]
        current = [f for f in same if f.current]
        heards = heard if isinstance(heard, list) else [heard or self._heard(Heard())]
        heard = heards[0]  # and a new fact's own fields (extracted; a claim's role and verification)
        asked = {"valid_from": start, "valid_to": end, "order": order}  # None: not said
        if current:
            fact = current[0]
            times = self._retimed(fact, asked, allowed=retime)
            times_note = self._times_note(fact, times)  # said before the change: what it held
            if authority == "inferred" and (
                subject_entity.type in privacy.PERSON_TYPES
                or (isinstance(target, model.Entity) and target.type in privacy.PERSON_TYPES)
            ):
                raise Refused(
                    f"{fact.id} names a person, and a fact with authority inferred may not name a person: "
                    "an inference about a person is not observed either"
                )
            hearings = self._hearings(fact, heards, sources)
            changes = {"observed_at": self.now, "observations": fact.observations + len(hearings), **times}
            if authority == "user" and any(s.kind == "user" for s in sources):
                changes["authority"] = "user"  # the user's own words now back it
            if prevents_rework and not fact.prevents_rework:
                changes["prevents_rework"] = True
            after = self._change(fact, changes, "observe", reason, sources, hearings)
            return Outcome(
                after,
                "observed",
                f"{fact.id} was known: observed again ({after.observations} observations)" + times_note,
            )
        rejected = [f for f in same if f.status == "rejected" and not f.superseded_by]
        if rejected and revive_rejected:
            fact = rejected[0]
            times = self._retimed(fact, asked, allowed=True)  # not held: brought back as now said
            times_note = self._times_note(fact, times)  # said before the change: what it held
            hearings = self._hearings(fact, heards, sources)
            after = self._change(
                fact,
                {
                    "status": "proposed",
                    "retired_at": None,
                    "observed_at": self.now,
                    "observations": fact.observations + len(hearings),
                    **times,
                },
                "revive",
                reason or "the user's verified words bring it back",
                sources,
                hearings,
            )
            return Outcome(
                after,
                "revived",
                f"{fact.id} had been rejected: the user's own words bring it back" + times_note,
            )
        if rejected:
            fact = rejected[0]
            return Outcome(
                fact,
                "rejected",
                f"{fact.id} was rejected; it stays rejected, and nothing of this proposal was recorded",
            )
        expired = [f for f in same if f.status == "expired"]
        if expired:
            fact = expired[0]
            times = self._retimed(fact, asked, allowed=True)  # not held: proposed again as now said
            times_note = self._times_note(fact, times)  # said before the change: what it held
            hearings = self._hearings(fact, heards, sources)
            after = self._change(
                fact,
                {
                    "status": "proposed",
                    "retired_at": None,
                    "observed_at": self.now,
                    "observations": fact.observations + len(hearings),
                    **times,
                },
                "revive",
                reason,
                sources,
                hearings,
            )
            return Outcome(after, "revived", f"{fact.id} had expired: proposed again" + times_note)

        names_person = (
            subject_entity.type in privacy.PERSON_TYPES
            or (isinstance(target, model.Entity) and target.type in privacy.PERSON_TYPES)
            or self._names_a_person(
                [
                    target_term.value if isinstance(target_term, Literal) else None,
                    heard["span"],
                    heard["message"],
                    heard.get("claimed_role"),
                    reason,
                ]
                + [text for s in sources for text in (s.ref, s.quote)]
            )
        )
        start = start or default_start
        if start and end and start > end:
            raise BadInput(f"--valid-to {end} is before {start}, when it would begin")
        fact_id = self._mint()
        fact = model.Fact(
            id=fact_id,
            iri=vocab.fact_iri(self.perspective, fact_id).value,
            subject=subject_entity.iri,
            predicate=pred.iri,
            target=target_term,
            status=status,
            authority=authority,
            sensitivity="personal" if names_person else "internal",
            sources=sources,
            observed_at=self.now,
            observations=len(heards),
            valid_from=start,
            valid_to=end,
            recorded_at=self.now,
            prevents_rework=prevents_rework,
            order=order,
            perspective=self._perspective_value,
            last_confirmed_at=self.now if status == "confirmed" else None,
            **{k: v for k, v in heard.items() if k in self._FACT_HEARD},
        )
        fact.hearings = self._hearings(fact, heards, sources)
        self.stage_new_fact(fact, model.fact_lines(fact, self.schema) + model.lines(self._record(fact, reason)))
        return Outcome(fact, "created")

    @cached_property
    def _text_limit(self) -> int:
        """KGRDF_MAX_TEXT, read once a write: an import checks two texts a record against it, and
        reading the environment twice a record took 0.3 s of 100k."""
        from kgrdf import settings

        return settings.get("KGRDF_MAX_TEXT")

    @cached_property
    def _perspective_value(self) -> str:
        """The perspective's IRI: one string for every fact the write makes (100k copies of it cost
        an import of 100k facts 7 MB)."""
        return vocab.perspective_iri(self.perspective).value

    def _record(self, fact: model.Fact, reason: str | None) -> list[Quad]:
        """The reason a new fact was recorded, kept as reasons are: an update record (kg:reason) of
        this transaction, action "record", naming the hearings it recorded (so an audience is shown
        it when it may hear one of them) and changing nothing. kg history shows it on the fact's
        first line. None without a reason."""
        if not reason:
            return []
        fact_node = NamedNode(fact.iri)
        graph = vocab.provenance_graph(fact_node)
        update = vocab.update_iri(fact_node, self.seq, 1)
        quads = [
            Quad(update, vocab.RDF_TYPE, vocab.UPDATE, graph),
            Quad(update, vocab.kg("updates"), fact_node, graph),
            Quad(update, vocab.kg("updateNumber"), vocab.integer(self.seq), graph),
            Quad(update, vocab.kg("action"), Literal("record"), graph),
            Quad(update, vocab.ENDED_AT, vocab.datetime_literal(self.now), graph),
            Quad(update, vocab.kg("reason"), Literal(reason), graph),
        ]
        quads += [Quad(update, model.ADDED_HEARING, NamedNode(h.iri), graph) for h in fact.hearings]
        fact.updates = [model.Update(self.seq, "record", self.now, reason, tuple(h.iri for h in fact.hearings))]
        return quads

    _TIME_OPTIONS = {"valid_from": "--valid-from", "valid_to": "--valid-to", "order": "--order"}

    def _retimed(self, fact: model.Fact, asked: dict, allowed: bool) -> dict:
        """The valid time and order a proposal asks of a known fact that differ from what it holds
        ({field: value}). Refused unless ``allowed``: an observation does not change them."""
        changes = {name: given for name, given in asked.items() if given is not None and getattr(fact, name) != given}
        if not changes:
            return {}
        start = changes.get("valid_from", fact.valid_from)
        end = changes.get("valid_to", fact.valid_to)
        if start and end and start > end:
            raise BadInput(f"{fact.id} would be valid from {start} to {end}, which ends before it starts")
        if not allowed:
            held = ", ".join(
                f"{name} {getattr(fact, name) if getattr(fact, name) is not None else 'none'} (proposed: {given})"
                for name, given in changes.items()
            )
            command = " ".join(f"{self._TIME_OPTIONS[name]} {given}" for name, given in changes.items())
            raise Refused(
                f"{fact.id} says this already with {held}: proposing it again observes it, and an "
                f"observation does not change a fact's valid time or order, so nothing was written",
                hint=f"kg supersede {fact.id} {command} corrects it: a person's correction, kept in its history",
                conflict=True,
            )
        return changes

    @classmethod
    def _times_note(cls, fact: model.Fact, changes: dict) -> str:
        if not changes:
            return ""
        return "; " + ", ".join(f"{name} {getattr(fact, name) or 'none'} -> {given}" for name, given in changes.items())

    def confirm(
        self, fact_id: str, reviewed_by: str = DEFAULT_REVIEWER, reason: str | None = None, close_replaced: bool = True
    ) -> Outcome:
        """Confirm a fact. For a single-valued predicate, close the confirmed value it replaces
        (unless ``close_replaced`` is off: an automatic confirmation leaves that to a person).

        Confirming a confirmed fact again (a person vouching for it anew) refreshes its
        last_confirmed_at, and closes any value it replaces that an automatic confirmation left open.
        """
        fact = self.fact(fact_id)
        if fact.superseded_by:
            raise Refused(
                f"{fact.id} was superseded by {vocab.id_of(fact.superseded_by)}",
                hint=f"confirm {vocab.id_of(fact.superseded_by)} instead",
            )
        if not fact.current and fact.status == "confirmed":
            raise Refused(f"{fact.id} is closed; only a current fact can be confirmed")
        action = "reconfirm" if fact.status == "confirmed" else "confirm"
        if action == "reconfirm" and reviewed_by == "auto":
            return Outcome(fact, "unchanged", f"{fact.id} is confirmed already", [])
        changes = {"status": "confirmed", "retired_at": None, "last_confirmed_at": self.now, "reviewed_by": reviewed_by}
        rivals = self._rivals(fact)
        coexist = bool(rivals) and self._coexists(fact)
        if close_replaced and rivals and not coexist and fact.valid_from is None:
            # It holds from where the values it replaces end (now): left open, its valid time would
            # reach back over theirs, two values true at once.
            changes["valid_from"] = self.now
        after = self._change(fact, changes, action, reason)
        if coexist:
            ids = ", ".join(r.id for r in rivals)
            return Outcome(
                after,
                action + "ed",
                f"{ids} stays beside it, both shown as conflicting until a person "
                f"resolves them (kg supersede {rivals[0].id} ... or kg supersede "
                f"{after.id} ...)",
                [],
            )
        if close_replaced:
            closed = [self._close(other, after) for other in rivals]
            notes = [self._closed_note(old, new) for old, new in zip(rivals, closed, strict=True)]
            return Outcome(after, action + "ed", "; ".join(n for n in notes if n) or None, closed)
        note = None
        if rivals:
            ids = ", ".join(r.id for r in rivals)
            note = (
                f"{ids} stays current beside it until a person confirms the change (kg confirm {after.id} closes {ids})"
            )
        return Outcome(after, action + "ed", note, [])

    # --- organizations: attributes, claims -------------------------------------------------------------

    PROMOTED = ("founded", "industry", "relationship", "first_contact_at", "last_contact_at")

    def set_attribute(self, org: str, key: str, value: str, sources=(), heard: Heard | None = None) -> Outcome:
        """An organization's attribute: a promoted key is its own predicate, any other key a free-text
        ``attribute`` fact written KEY: VALUE. A proposal, like any fact heard."""
        key = key.strip()
        if not key or ":" in key:
            raise BadInput(f"an attribute key is a word or a few, without ':', not {key!r}")
        entity = self._organization(org)
        normal = key.lower().replace(" ", "_").replace("-", "_")
        if normal in self.PROMOTED:
            return self.propose(entity.id, normal, value=value, sources=sources, heard=heard)
        return self.propose(entity.id, "attribute", value=f"{key}: {value.strip()}", sources=sources, heard=heard)

    def _organization(self, text: str) -> model.Entity:
        entity = self.resolve(text)
        if entity.type != "organization":
            raise Refused(f"{entity.id} is a {entity.type}, not an organization")
        return entity

    def claim_member(
        self, org: str, claimed_name: str, role: str | None, sources=(), heard: Heard | None = None
    ) -> Outcome:
        """Someone said a person by this name works at ``org`` ("check with Jim, he's our IT guy"):
        recorded as an unverified claim with its provenance, a proposal. No actor is made: a name
        said once is not an identity (kg org promote links it to a real actor later)."""
        name = model.clean_label(claimed_name or "")
        if not name:
            raise BadInput("a claim needs the name that was said (--claimed-name)")
        entity = self._organization(org)
        facts = self._heard(heard or Heard())
        if facts["said_by"] is None:
            raise BadInput("a claim records who said it: give --said-by")
        facts.update({"claimed_role": model.clean_label(role) if role else None, "verified": False})
        sources = list(sources)
        if not sources and facts["message"]:
            sources = [f"chat:{facts['message']}"]  # the message it was said in is where it came from
        if not sources:
            raise BadInput("a claim needs where it was said: --message REF or --source KIND:REF")
        outcome = self._propose(
            entity.id,
            "claimed_member",
            object=None,
            value=name,
            sources=sources,
            authority="stakeholder",
            valid_from=None,
            valid_to=None,
            order=None,
            prevents_rework=False,
            status="proposed",
            reason=None,
            revive_rejected=False,
            heard=facts,
        )
        return replace(
            outcome,
            note="an unverified claim: no actor was made (kg org promote "
            f"{outcome.fact.id} ACTOR links it to a real one)",
        )

    def promote_claim(self, claim_id: str, actor: str) -> Outcome:
        """Link a claim to a real actor, as a separate, verified step: a confirmed affiliated_with
        fact whose source is the claim, which stays as it was (unverified hearsay) and names the
        actor it was promoted to."""
        claim = self.fact(claim_id)
        predicate = self.schema.predicate_by_iri(claim.predicate)
        if predicate is None or predicate.key != "claimed_member":
            raise Refused(f"{claim.id} is not an affiliation claim (kg org affiliate records one)")
        if claim.promoted_to:
            raise Refused(f"{claim.id} was promoted to {vocab.id_of(claim.promoted_to)} already")
        if not claim.current:
            raise Refused(f"{claim.id} is {claim.status}: only a current claim can be promoted")
        person = self.resolve(actor, role="actor")
        if person.type not in privacy.PERSON_TYPES:
            raise Refused(f"{person.id} is a {person.type}: a claim is promoted to an actor or a person")
        organization = self.entity(NamedNode(claim.subject))
        link = self.propose(
            person.id,
            "affiliated_with",
            object=organization.id,
            status="confirmed",
            sources=[model.Source("user", f"kg org promote {claim.id}")],
            authority="user",
            reason=f"promoted from the claim {claim.id}",
            auto_confirm=False,
        )
        self._change(claim, {"promoted_to": person.iri}, "promote", f"linked to {person.id} by {link.fact.id}")
        return replace(link, note=f"{claim.id} stays as the evidence: an unverified claim, promoted to {person.id}")

    def merge_organizations(self, keep: str, merge: str) -> dict:
        """Make one organization of two duplicates: ``merge``'s current facts move to ``keep``, each
        a new fact that carries over its status and each of its hearings (audience, sources, speaker,
        message) and names the fact it came from (kg:mergedFrom), which is closed as superseded, its own history intact; a fact
        ``keep`` holds already is observed again instead. ``keep`` takes ``merge``'s name and aliases
        as aliases; ``merge`` records that it was merged into ``keep``, and its id resolves there."""
        survivor, merged = self._organization(keep), self._organization(merge)
        if survivor.iri == merged.iri:
            raise Refused(f"{survivor.id} and {merged.id} are one organization already")
        if merged.is_self:
            raise Refused(
                f"{merged.id} is the perspective's self organization: merge the other into it",
                hint=f"kg org merge {merged.id} {survivor.id}",
            )
        moved, observed = [], []
        for row in self.rows("entity-facts", entity=NamedNode(merged.iri)):
            old = self.fact(row["id"].value)
            if not old.current:
                continue  # history stays with the merged organization
            subject = survivor.iri if old.subject == merged.iri else old.subject
            target = NamedNode(survivor.iri) if old.is_entity_target and old.target.value == merged.iri else old.target
            key = target.value if isinstance(target, NamedNode) else model.normalize(target.value)
            same = [f for f in self._facts_for(subject, old.predicate) if f.current and f.value_key() == key]
            if same:
                hearings = self._rehomed(same[0], old.hearings)
                kept = self._change(
                    same[0],
                    {"observed_at": self.now, "observations": same[0].observations + old.observations},
                    "observe",
                    f"merged from {old.id}",
                    old.sources,
                    hearings,
                )
                observed.append(kept.id)
            else:
                fact_id = self._mint()
                kept = replace(
                    old,
                    id=fact_id,
                    iri=vocab.fact_iri(self.perspective, fact_id).value,
                    subject=subject,
                    target=target,
                    recorded_at=self.now,
                    merged_from=old.iri,
                    updates=[],
                    sources=list(old.sources),
                    superseded_by=None,
                    hearings=[],
                )
                kept.hearings = self._rehomed(kept, old.hearings)
                self.stage_new_fact(kept, model.fact_lines(kept, self.schema))
                moved.append(kept.id)
            self._change(
                old,
                {"valid_to": self.now, "superseded_by": kept.iri, "retired_at": self.now},
                "merge",
                f"{merged.id} was merged into {survivor.id}",
            )
        names = [merged.name, *merged.aliases]
        self.add_entity(
            survivor.id,
            survivor.name,
            [n for n in names if n != survivor.name],
            merged.weak_aliases,
            check_aliases=False,
        )
        after = replace(merged, aliases=[], weak_aliases=[], merged_into=survivor.iri)
        self._replace_entity(merged, after)
        return {"kept": survivor.id, "merged": merged.id, "moved": moved, "observed": observed, "aliases": names}

    def _replace_entity(self, old: model.Entity | None, new: model.Entity) -> None:
        """Stage the change from ``old``'s description (None: a new entity) to ``new``'s."""
        old_quads = model.entity_quads(old, self.perspective, self.schema) if old else []
        new_quads = model.entity_quads(new, self.perspective, self.schema)
        old_lines, new_lines = {str(q) for q in old_quads}, {str(q) for q in new_quads}
        self._stage(
            [q for q in old_quads if str(q) not in new_lines], [q for q in new_quads if str(q) not in old_lines]
        )
        self._entities[new.iri] = new

    def _rivals(self, fact: model.Fact) -> list[model.Fact]:
        """The other current confirmed values of a single-valued predicate (or of the same key of a
        free-text attribute) that ``fact`` replaces."""
        predicate = self.schema.predicate_by_iri(fact.predicate)
        if predicate is None or not (predicate.single_valued or predicate.key == "attribute"):
            return []
        key = model.attribute_key(fact.target.value) if predicate.key == "attribute" else None
        return [
            other
            for other in self._facts_for(fact.subject, fact.predicate)
            if other.iri != fact.iri
            and other.status == "confirmed"
            and other.current
            and (key is None or model.attribute_key(other.target.value) == key)
        ]

    def _coexists(self, fact: model.Fact) -> bool:
        """Whether rival values stay side by side instead of the newer closing the older: an
        organization's attributes (§9), where two people's accounts both deserve to be seen."""
        predicate = self.schema.predicate_by_iri(fact.predicate)
        subject = self.entity(NamedNode(fact.subject))
        return (
            predicate is not None
            and not predicate.takes_entity
            and predicate.axis == "Organizations"
            and subject is not None
            and subject.type == "organization"
        )

    def _close(self, old: model.Fact, replacement: model.Fact, why: str | None = None) -> model.Fact:
        """Close ``old``, replaced by ``replacement``: retired now, and its valid time ends where the
        replacement's begins (now, for one that begins later), so that the two never hold at once.
        It never ends later than it did; one whose replacement begins at or before its own start
        never held: it ends at its start (an empty interval)."""
        end = self.now
        if replacement.valid_from and replacement.valid_from <= self.now:
            end = replacement.valid_from
        if old.valid_to and old.valid_to < end:
            end = old.valid_to
        if old.valid_from and end < old.valid_from:
            end = old.valid_from
        return self._change(
            old,
            {"valid_to": end, "superseded_by": replacement.iri, "retired_at": self.now},
            "close",
            f"replaced by {replacement.id}" + (f": {why}" if why else ""),
        )

    def close_for(
        self, fact_id: str, replacement_id: str, why: str | None = None, starts: str | None = None
    ) -> model.Fact:
        """Close a current fact, replaced by another current one, as confirming or superseding closes
        the value it replaces (a closure another replica made, folded in by kg sync). ``starts`` is
        when the replacement holds from, where it says no time of its own (the time it was given
        where the closure was made): the closed fact ends there."""
        old, replacement = self.fact(fact_id), self.fact(replacement_id)
        if not old.current or not replacement.current:
            raise Refused(f"{old.id} and {replacement.id} must both be current to close one for the other")
        if starts and not replacement.valid_from:
            replacement = self._change(replacement, {"valid_from": starts}, "retime", why)
        return self._close(old, replacement, why)

    @staticmethod
    def _closed_note(old: model.Fact, closed: model.Fact) -> str | None:
        """What closing did to a value's valid time, when it is more than ending it now."""
        if closed.valid_from and closed.valid_to == closed.valid_from:
            return (
                f"{old.id} never held: its replacement holds from its own start {old.valid_from} or before, "
                f"so {old.id} is closed at that start"
            )
        return None

    def _refuse_overlap(self, fact: model.Fact, ignore=(), new: bool = False) -> None:
        """Refuse a fact of a single-valued predicate whose valid time would overlap that of another
        confirmed value held for the same subject: two values true at once. (Two current values
        are a contradiction already, which stays visible until a person resolves it: kg lint.)
        Reads the subject's facts of that predicate (one index lookup)."""
        predicate = self.schema.predicate_by_iri(fact.predicate)
        if predicate is None or not predicate.single_valued:
            return
        for other in self._facts_for(fact.subject, fact.predicate):
            if (
                other.iri == fact.iri
                or other.iri in ignore
                or other.status != "confirmed"
                or (other.current and fact.current)
                or other.value_key() == fact.value_key()
                or not _overlap(fact, other)
            ):
                continue
            shown = other.target.value if not other.is_entity_target else vocab.id_of(other.target.value)
            which = "the replacement" if new else fact.id
            raise Refused(
                f"{which} would hold from {fact.valid_from or 'the beginning'} while {other.id} ({shown!r}) "
                f"held from {other.valid_from or 'the beginning'} to {other.valid_to or 'now'}: "
                f"{predicate.key} takes one value at a time, so nothing was written",
                hint=f"give --valid-from {other.valid_to} or later" if other.valid_to else None,
                conflict=True,
            )

    def reject(self, fact_id: str, reviewed_by: str = DEFAULT_REVIEWER, reason: str | None = None) -> Outcome:
        fact = self.fact(fact_id)
        if fact.status == "rejected":
            return Outcome(fact, "unchanged", f"{fact.id} is rejected already")
        if fact.superseded_by:
            raise Refused(f"{fact.id} was superseded by {vocab.id_of(fact.superseded_by)}; it is closed already")
        after = self._change(
            fact, {"status": "rejected", "retired_at": self.now, "reviewed_by": reviewed_by}, "reject", reason
        )
        return Outcome(after, "rejected")

    def supersede(
        self,
        fact_id: str,
        *,
        object: str | None = None,
        value: str | None = None,
        sources=(),
        valid_from: str | None = None,
        valid_to: str | None = None,
        order: int | None = None,
        reason: str | None = None,
        audience: str | None = None,
    ) -> Outcome:
        """Correct a fact: a confirmed replacement with the new object or value closes the old one.
        The replacement holds from ``valid_from`` (default: now) and the old value until then (one
        whose replacement begins at or before its own start never held: see _close); a replacement
        whose valid time would overlap another value the subject held is refused. It is heard in
        each audience the old one was heard in (whoever was told the old value may be told the
        correction, and nobody else), unless ``audience`` says where.

        Without a new object or value, the fact's own valid time or order is corrected (retime).
        """
        old = self.fact(fact_id)
        if object is None and value is None and (old.current or old.status == "confirmed"):
            return self.retime(old, valid_from=valid_from, valid_to=valid_to, order=order, reason=reason)
        if not old.current:
            state = f"superseded by {vocab.id_of(old.superseded_by)}" if old.superseded_by else old.status
            raise Refused(
                f"{old.id} is not current ({state}); only a current fact can be superseded"
                + (
                    ""
                    if old.status != "confirmed"
                    else f", though its valid time may be corrected (kg supersede {old.id} --valid-from/--valid-to)"
                )
            )
        predicate = self.schema.predicate_by_iri(old.predicate)
        subject = self.entity(NamedNode(old.subject))
        all_sources = [parse_source(s, self.schema.source_kinds) if isinstance(s, str) else s for s in sources]
        all_sources.append(model.Source("user", "kg supersede"))
        outcome = self.propose(
            subject.id,
            predicate.key,
            object=object,
            value=value,
            sources=all_sources,
            authority="user",
            valid_from=valid_from,
            valid_to=valid_to,
            order=order,
            status="confirmed",
            reason=reason,
            retime=True,
            default_start=self.now,
            heard=[Heard(a) for a in ([audience] if audience is not None else old.audiences() or [audiences.OWNER])],
        )
        new = outcome.fact
        if new.iri == old.iri:
            raise Refused(
                f"{old.id} already says that; nothing to supersede",
                hint=f"to correct only its valid time or order: kg supersede {old.id} --valid-from DATE",
            )
        if outcome.action == "rejected":
            raise Refused(
                f"the replacement value was rejected before ({new.id})",
                hint=f"confirm {new.id} first if it is right after all",
            )
        if new.status != "confirmed":
            new = self.confirm(new.id, close_replaced=False, reason=f"supersedes {old.id}").fact
        if new.valid_from is None:  # a value held already, from no time in particular: from now on
            new = self._change(new, {"valid_from": self.now}, "retime", f"replaces {old.id} from now on")
        closed = self._close(old, new, reason)
        self._refuse_overlap(new, ignore={old.iri}, new=outcome.action == "created")
        note = self._closed_note(old, closed) or f"{old.id} closed at {closed.valid_to}, replaced by {new.id}"
        return Outcome(new, "superseded", note, [closed])

    def retime(
        self,
        fact: model.Fact,
        *,
        valid_from: str | None = None,
        valid_to: str | None = None,
        order: int | None = None,
        reason: str | None = None,
    ) -> Outcome:
        """Correct a fact's own valid time or order (kg supersede F --valid-from DATE): an update
        record that says what they held before; a valid time that would overlap another value the
        subject held is refused."""
        if valid_from is None and valid_to is None and order is None:
            raise BadInput(
                "say what replaces it: a new --object or --value, or its corrected --valid-from, --valid-to or --order"
            )
        predicate = self.schema.predicate_by_iri(fact.predicate)
        if order is not None and not (predicate and predicate.ordered):
            raise BadInput(
                f"--order applies to ordered predicates (has_step), not {predicate.key if predicate else '?'}"
            )
        start, end = clock.parse_optional(valid_from, "--valid-from"), clock.parse_optional(valid_to, "--valid-to")
        asked = {
            "valid_from": clock.iso(start) if start else None,
            "valid_to": clock.iso(end) if end else None,
            "order": order,
        }
        changes = self._retimed(fact, asked, allowed=True)
        if not changes:
            raise Refused(f"{fact.id} already says that; nothing to supersede")
        note = self._times_note(fact, changes)  # said before the change: what it held
        after = self._change(fact, changes, "retime", reason or "valid time or order corrected by a person")
        self._refuse_overlap(after)
        return Outcome(
            after,
            "retimed",
            f"{fact.id} corrected in place" + note + f" (kg history {fact.id} shows what it said before)",
        )

    # --- expiry and retention -------------------------------------------------------------------------

    def _cutoff(self, days: int):
        from datetime import timedelta

        return vocab.datetime_literal(clock.iso(clock.parse_time(self.now) - timedelta(days=days)))

    def expire_proposals(self, days: int) -> list[model.Fact]:
        """Proposals not observed again for ``days`` days become expired (kept, with their history);
        proposing one again revives it."""
        expired = []
        for row in self.rows("proposals-due", before=self._cutoff(days)):
            fact = self.fact(row["id"].value)
            expired.append(
                self._change(
                    fact, {"status": "expired", "retired_at": self.now}, "expire", f"not observed again for {days} days"
                )
            )
        return expired

    def past_retention(self, days: int) -> list[str]:
        """The facts naming a person that were not observed again for ``days`` days, whatever their
        status (their IRIs): kg expire deletes them with kgrdf.forget."""
        return [row["fact"].value for row in self.rows("lint-retention", before=self._cutoff(days))]
