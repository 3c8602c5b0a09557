"""The core of a write: the pending change (the rows to delete and to add), seen by every read of
the write before the index, and the state the operations share. The groups of operations
(kgrdf.writer's other modules) are written over it; kgrdf.writer.Writer is all of them at once."""

from dataclasses import dataclass
from functools import cached_property

from pyoxigraph import Literal, NamedNode, Quad

from kgrdf import audience as audiences
from kgrdf import clock, inputs, model, nquads, privacy, vocab
from kgrdf.errors import BadInput
from kgrdf.session import Session
from kgrdf.writer.pending import PendingFacts, rival_key

DEFAULT_REVIEWER = "cli"
PACKED = ("packed",)  # a new fact's first rows, once they are kept in a block (Staging._pack)


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


_CONFIRMED = vocab.kg("Confirmed")


def _key_of(target) -> str:
    """The key of a fact's object or value as the index holds it (as model.Fact.value_key has it)."""
    return target.value if isinstance(target, NamedNode) else model.normalize(target.value)


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


def unsaid_claim(hint: str | None = None) -> BadInput:
    """The refusal of a claim without a speaker (kg org affiliate, or a claimed_member proposed): a
    face whose speaker is fixed when it starts says it in its own words (needs_speaker)."""
    return BadInput("a claim records who said it: give --said-by", hint=hint, needs_speaker=True)


class Staging(Session):
    """One command's pending change and the reads that see it (see kgrdf.writer)."""

    BULK = 200  # facts and entities: above this, the shapes run set-based over the whole change

    def __init__(self, kb, backend, seq: int, now: str | None = None):
        super().__init__(kb, backend)
        self.seq = seq
        self._deletes: dict[str, None] = {}  # the rows, in the order staged
        self._adds: dict[str, None] = {}  # the rows alone (a quad takes twice a row's memory): see adds
        self.validated = False  # set when the pending change has been validated as it stands
        self._entities: dict[str, model.Entity] = {}  # pending, by IRI
        self._facts: dict[str, model.Fact] = {}  # pending, by IRI
        self._drafts: dict[str, model.Draft] = {}  # fact IRI -> its last update record of this write
        self._pending = PendingFacts()  # where the pending facts are, by what is asked of them
        self._held_rivals: dict[tuple[str, str], dict[str | None, list[str]]] = {}  # see confirmed_rivals
        self._held_pairs: dict[tuple[str, str], tuple] = {}  # see _held_facts
        self._minted = 0
        self._created: set[str] = set()  # entities this command makes: the index holds no fact about them
        self._held: dict[str, model.Entity | None] = {}  # entities read from the index, by IRI
        # match key -> (entity IRI, how, label) of the pending entities' labels, as each was added
        self._pending_labels: dict[str, dict[tuple[str, str, str], None]] = {}
        self._unused_ids: list[str] = []  # minted ids no fact of the index has, the next last (Proposals._mint)
        # A large write checks its facts in chunks while it goes on staging (see check_chunk).
        self._first_lines: dict[str, list[str] | None] = {}  # fact IRI -> its quads as staged first
        # A large write's new facts, once checked, their rows packed: fact IRI -> its nquads.Block
        self._blocks: dict[str, nquads.Block] = {}
        self._unchecked: set[str] = set()  # facts staged since the last chunk was checked
        self._chunks: list = []  # (facts checked, entity IRIs, future findings)
        self._entities_checked: dict[str, model.Entity] = {}  # pending entities as the last chunk checked them
        self._entity_texts: dict[str, tuple] = {}  # entity IRI -> (the entity, its lines) of a chunk's view
        self._checker = None
        self._standing = None  # the view of the facts it changes again and again (validation.StandingView)
        self._version = 0  # moves on with every change of the pending rows
        self._prepared: tuple | None = None  # (the version, what prepare_commit read of the rows then)
        # Recorded time never goes backwards (clock.for_write refuses a clock behind the journal).
        self.now = now or clock.iso(clock.for_write(kb.journal))
        self.warnings: list = []
        self._minted_iris: set[str] = set()  # facts this write makes: their ids exist only once it is written
        self._perspective_known: bool | None = None  # whether the perspective exists (see check_perspective)
        self.provisions_perspective = False  # kg org init: the self organization makes the perspective
        self._keys_read: set[str] = set()  # match keys looked up ahead in the index (expect_aliases)
        self._keys_taken: set[str] = set()  # those an entity of the index goes by
        self._people = None  # the people texts may name (kgrdf.people), once a text needs it
        self._person_checks = 0  # texts looked at for people: past BULK, the people's cache is held
        self._pending_people = privacy.People()  # and the people this write adds or renames
        self._expected_names: dict[str, str] = {}  # person IRI -> the name a later record gives (an import's)
        self._facts_before_person = 0  # the facts staged (self._facts, in order) before the last of them
        self._staged_before_person: set[str] | None = None  # their IRIs, once asked for
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
        return self.held_entity(iri)

    def held_entity(self, iri: NamedNode):
        """The entity as the index holds it: before this write changed it."""
        if iri.value not in self._held:
            self._held[iri.value] = super().entity(iri)
        return self._held[iri.value]

    def identify(self, text: str) -> dict:
        found = super().identify(text)
        key = model.match_key(text)
        for kind in ("matches", "suggestions"):  # the index's, less the labels this write took away
            found[kind] = [m for m in found[kind] if self._still_goes_by(m, key)]
        known = {m["id"] for m in found["matches"]}
        for iri, how, label in self._pending_labels.get(key, ()):
            entity = self._entities.get(iri)
            if entity is None or entity.id in known or not entity.goes_by(how, label):
                continue  # (a name it no longer goes by)
            known.add(entity.id)
            found["matches"].append(
                {"id": entity.id, "type": entity.type, "name": entity.name, "matched": how, "label": label}
            )
        return found

    def _still_goes_by(self, match: dict, key: str) -> bool:
        """Whether an entity the index found by a name, alias or weak alias still goes by it: one this
        write renamed does not go by its old name (an import that renames an entity and then names
        another by that name means the other)."""
        entity = self._entities.get(self.entity_iri(match["id"]).value)
        if entity is None:
            return True
        strong, weak = entity.alias_keys()
        held = {"name": model.match_key(entity.name) == key, "alias": key in strong, "weak alias": key in weak}
        return held.get(match["matched"], True)

    def resolve(self, text: str, role: str = "entity") -> model.Entity:
        self.check_perspective()  # a name not found in a perspective that does not exist: say that
        return super().resolve(text, role)

    def fact(self, fact_id: str, history: bool = True) -> model.Fact:
        self.check_perspective()
        iri = self.fact_iri(fact_id)
        return self._facts.get(iri.value) or super().fact(fact_id, history)

    def held_fact(self, fact_id: str) -> model.Fact:
        """The fact as the index holds it, with its history: before this write changed it."""
        return super().fact(fact_id, True)

    @cached_property
    def _text_limit(self) -> int:
        """KGRDF_MAX_TEXT, read once a write: an import checks two texts a record against it, and
        reading the environment twice a record took 0.3 s of 100k."""
        from kgrdf import settings

        return settings.get("KGRDF_MAX_TEXT")

    def check_perspective(self) -> None:
        """A write goes to a perspective that exists: the knowledge base's default one, one that
        holds data, or the one ``kg org init`` provisions in this write (provisions_perspective).
        Else a typo in --perspective (or KGRDF_PERSPECTIVE) would make a new perspective: refused,
        naming the known ones. One index lookup a write (is its entities graph empty?)."""
        if self._perspective_known or self.provisions_perspective:
            return
        if not self.perspective_exists():
            raise self.unknown_perspective()
        self._perspective_known = True

    def _facts_for(self, subject: str, predicate: str, key: str | None = None) -> list[model.Fact]:
        """Every fact, pending or held, with this subject and predicate; with ``key``, only those
        whose object or value has that key (model.Fact.value_key): the others are not read whole,
        so observing a fact again costs the same beside ten siblings or ten thousand."""
        out = {}
        if subject not in self._created:
            every, by_key, _confirmed = self._held_facts(subject, predicate)
            for iri in every if key is None else by_key.get(key, []):
                out[iri] = self._facts.get(iri) or super().fact(vocab.id_of(iri))
        for iri in self._pending.with_pair(subject, predicate, key):
            out[iri] = self._facts[iri]
        return list(out.values())

    def _held_facts(self, subject: str, predicate: str) -> tuple[list[str], dict[str, list[str]], list[tuple]]:
        """The IRIs of the facts the index holds with this subject and predicate, the same by the
        key of their object or value, and (IRI, object or value) of those it holds as confirmed and
        current: asked once a write, since the index does not change under it, so that an import
        of N records about one thing asks once, not N times."""
        pair = (subject, predicate)
        if pair not in self._held_pairs:
            every, by_key, confirmed = [], {}, []
            for row in self.rows("subject-predicate", subject=NamedNode(subject), predicate=NamedNode(predicate)):
                every.append(row["fact"].value)
                by_key.setdefault(_key_of(row["target"]), []).append(row["fact"].value)
                if row["status"] == _CONFIRMED and row.get("retiredAt") is None:
                    confirmed.append((row["fact"].value, row["target"]))
            self._held_pairs[pair] = every, by_key, confirmed
        return self._held_pairs[pair]

    def confirmed_rivals(self, fact: model.Fact) -> list[model.Fact]:
        """The other facts, pending or held, that stand confirmed and current with ``fact``'s
        subject and predicate (and, for an attribute, its key). Only those are read whole, not
        every value the subject ever had: an organization's attribute proposed beside 2,000 others
        read all 2,000 facts (2.4 s a propose), and an import of N attributes read N² of them."""
        rival = rival_key(self.schema, fact.predicate, fact.target)
        pair = (fact.subject, fact.predicate)
        out = {}
        if fact.subject not in self._created:
            held = self._held_rivals.get(pair)
            if held is None:
                held = self._held_rivals[pair] = {}
                for iri, target in self._held_facts(*pair)[2]:
                    held.setdefault(rival_key(self.schema, fact.predicate, target), []).append(iri)
            for iri in held.get(rival, ()):
                if iri not in self._facts:  # (as the index holds it: this write did not change it)
                    out[iri] = super().fact(vocab.id_of(iri))
        for iri in self._pending.confirmed(*pair, rival):
            out[iri] = self._facts[iri]
        out.pop(fact.iri, None)
        return list(out.values())

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
                if not private and not changed and self._staged_before(iri):
                    private = any(self._pending_people.in_text(text) for text in privacy.fact_texts(fact) if text)
            if noted is not None and not private:
                held, texts, _quads, private = noted
                private = (
                    private
                    or privacy.fact_is_private(held)
                    or self._names_a_person([*privacy.fact_texts(held), *texts])
                )
            self._private[iri] = private
        return self._private[iri]

    def _person_added(self) -> None:
        """This write added a person (or gave one a name) after it staged facts, whose texts were
        looked at for the people known then: their lines are routed again, the person known too. One
        write is one transaction: what goes to the private journal does not follow the order of an
        import's records (a fact naming a person staged before them went to the shared one, and the
        person could not be forgotten)."""
        if self._facts:
            self._facts_before_person, self._staged_before_person = len(self._facts), None
            self._private.clear()

    def _staged_before(self, iri: str) -> bool:
        """Whether the fact ``iri`` was staged before the last person this write added."""
        if not self._facts_before_person:
            return False
        if self._staged_before_person is None:
            from itertools import islice

            self._staged_before_person = set(islice(self._facts, self._facts_before_person))
        return iri in self._staged_before_person

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
        matchers = self._matchers(texts)  # (once: it reads the people's cache)
        return any(found.in_text(text) for text in texts for found in matchers)

    def people_named_in(self, text: str) -> set[str]:
        """The IRIs of the known people and actors ``text`` names, as routing and kg forget read it
        (see privacy.People): by name or alias in any case or Unicode form, by id, by identifier."""
        return {iri for found in self._matchers([text]) for iri in found.in_text(text)} if text else set()

    def _matchers(self, texts: list[str]) -> list[privacy.People]:
        """The matchers of the people ``texts`` may name: of the index's (read from kgrdf.people's
        cache by the texts' words) and of this write's."""
        if self._people is None:
            from kgrdf import identifiers, people

            kb_path = self.kb.path if self.kb.backend_kind != "memory" else None
            self._people = people.Index(kb_path, self.backend, self.perspective, identifiers.read(self.kb))
        self._person_checks += 1
        if self._person_checks == self.BULK:
            self._people.hold()  # a large write: one read of the cache, not a query a record
        return [found for found in (self._people.named_in(texts), self._pending_people) if found]

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
        self.stage([], quads)

    def stage(self, deletes, adds, fact: model.Fact | None = None) -> None:
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
        new = fact.iri not in self._facts
        self._first_lines[fact.iri] = first_lines if new else None  # (changed since: read it whole)
        self._facts[fact.iri] = fact
        self._pending.note(fact, new, self.schema)
        self._unchecked.add(fact.iri)

    def _change(
        self, fact: model.Fact, changes: dict, action: str, reason: str | None = None, sources=(), hearings=()
    ) -> model.Fact:
        """Change ``fact`` with an update record of this write. A fact this write changed already (the
        very object the last change returned) by the same action for the same reason folds the change
        into that record: an import of N copies of one fact makes one record adding N hearings and
        their sources, not N records each listing all before it; by another action or for another
        reason, its record follows, the fact changed in place (it is this write's own copy). Returns
        the fact as it is after (callers say what it held before the change, not after it). Raises
        BadInput, before anything is staged, for an order out of range (model.check_order) and for a
        reason that is too long or holds a control character."""
        if changes.get("order") is not None:
            model.check_order(changes["order"])
        reason = self._checked_reason(reason)
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

    def _checked_reason(self, reason: str | None) -> str | None:
        """A reason as it is kept (every change's passes here): text of at most KGRDF_MAX_TEXT
        characters without a control character (inputs.prose), or None."""
        return None if reason is None else inputs.prose(reason, "the reason", self._text_limit)

    def heard_by(self, audience: str, fact: str) -> None:
        """Raises NotFound, as for a fact that is not there, unless the audience ``audience`` may
        hear the fact ``fact``, as this write's index holds it (kgrdf.audience)."""
        from kgrdf.session import Session

        reader = Session(self.kb, self.backend)
        reader.hear_as(audience)
        reader.fact(fact, history=False)

    def seen_by(self, audience: str, entity: str) -> bool:
        """Whether the entity ``entity`` (an IRI) exists for the audience ``audience``, as this
        write's index holds it (Session.may_see)."""
        from kgrdf.session import Session

        reader = Session(self.kb, self.backend)
        reader.hear_as(audience)
        return reader.may_see(entity)

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

    def fork(self) -> "Staging":
        """A writer for the same transaction with nothing pending (an import stages into it, then
        adopts it once its refused records are out): of this writer's own class, with what the
        command allowed it (an import's --allow-forgotten)."""
        fork = type(self)(self.kb, self.backend, self.seq, now=self.now)
        fork.allow_forgotten = self.allow_forgotten
        return fork

    def adopt(self, other: "Staging") -> None:
        """Take over ``other``'s pending change (self had none), leaving ``other`` empty: its router
        holds its methods, a cycle that would keep the change from being freed once written."""
        self.__dict__.update(other.__dict__)
        other.__dict__.clear()
        self.is_private = privacy.Router(self._fact_is_private, self._row_names_a_person)

    def drop_fact(self, iri: str) -> None:
        """Take a pending fact, and every change this write made to it, out of the write."""
        self.drop_facts([iri])

    def drop_facts(self, iris) -> None:
        """Take pending facts, and every change this write made to them, out of the write: in one
        pass over the pending rows, whatever their number (an import that drops 10k of 100k facts
        would read its two million rows 10k times, one fact at a time). Dropping none changes nothing."""
        iris = list(iris)
        if not iris:
            return
        self._version += 1
        graphs = set()
        for iri in iris:
            graphs |= {iri, iri + "/provenance"}
            self._blocks.pop(iri, None)
            self._drafts.pop(iri, None)
            fact = self._facts.pop(iri, None)
            if fact is not None:
                self._pending.drop(fact, self.schema)
        for pending in (self._adds, self._deletes):
            for key in [k for k in pending if nquads.graph_of(k) in graphs]:
                del pending[key]

    def pending_facts(self) -> dict[str, model.Fact]:
        """The facts this write makes or changes, by IRI, as they will be."""
        return self._facts
