"""Proposing a fact: a new one, or an observation of one held; where it was heard; its record."""

from dataclasses import replace
from functools import cached_property

from pyoxigraph import Literal, NamedNode, Quad

from kgrdf import audience as audiences
from kgrdf import autoconfirm, clock, inputs, model, pasted, privacy, vocab
from kgrdf.errors import BadInput, Refused
from kgrdf.writer.staging import Heard, Outcome, Staging, parse_source, unsaid_claim


class Proposals(Staging):
    """propose (then the auto-confirm rules), and the parts of a fact it makes: id, target, hearings."""

    MINTED_ALONE = 32  # ids a write checks one at a time; after them, a block of MINT_BLOCK at once
    MINT_BLOCK = 500

    def _mint(self) -> str:
        """A fact id no fact has: the write's next candidate (model.mint_fact_id) that neither the
        index nor this write holds. A large write checks its candidates a block at a time, each
        looked up by itself (reading every fact id of the index once took 1.9 s at 100k facts, for
        an import of 300)."""
        from kgrdf import queries

        while True:
            if self._minted < self.MINTED_ALONE:
                fact_id = model.mint_fact_id(self.kb.replica, self.seq, self._minted)
                self._minted += 1
                iri = vocab.fact_iri(self.perspective, fact_id)
                if iri.value not in self._facts and not self.backend.ask(queries.load("fact-exists"), {"fact": iri}):
                    return fact_id
                continue
            if not self._unused_ids:
                self._unused_ids = self._mint_block()
            fact_id = self._unused_ids.pop()
            if vocab.fact_iri(self.perspective, fact_id).value not in self._facts:
                return fact_id

    def _mint_block(self) -> list[str]:
        """The next MINT_BLOCK candidates no fact of the index has, the first last."""
        candidates = [model.mint_fact_id(self.kb.replica, self.seq, self._minted + n) for n in range(self.MINT_BLOCK)]
        self._minted += self.MINT_BLOCK
        iris = [vocab.fact_iri(self.perspective, fact_id) for fact_id in candidates]
        taken = {row["fact"].value for row in self.rows("facts-exist", fact=iris)}
        return [fact_id for fact_id, iri in zip(candidates, iris, strict=True) if iri.value not in taken][::-1]

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

        text = inputs.prose(value_text, f"the value for {predicate.key}", self._text_limit).strip()
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
        if (
            self.schema.predicate(predicate).key == autoconfirm.CLAIM and heard["said_by"] is None
        ):  # (as kg org affiliate)
            raise unsaid_claim(hint="kg org affiliate ORG --claimed-name NAME records one")
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
        if heard["extracted"] or (outcome.fact.extracted and not verified and outcome.fact.status == "proposed"):
            # (a fact once extracted stays so: sources heard with it later do not confirm it either,
            # and those of its extraction would count with theirs; a person's verified words do)
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
        if pred.key == "attribute":  # "status: churned" is as high-risk as a status is
            named = self.schema.predicates.get(model.attribute_name(outcome.fact.target.value.partition(":")[0]))
            # (and "claimed_member: Jim" as hearsay as a claim is)
            pred = named if named is not None and (named.high_risk or named.key == autoconfirm.CLAIM) else pred
        decision = autoconfirm.decide(
            predicate=pred,
            kinds=outcome.fact.source_kinds(),
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
            span = model.clean_label(inputs.text(heard.span, "the span"))  # its line ends and tabs folded
            out["span"] = inputs.refuse_controls(span, "the span") or None
        if heard.message is not None:
            message = inputs.text(heard.message, "the message").strip()
            out["message"] = model.refuse_unprintable(message, "the message reference") or None
        if heard.said_by is not None:
            speaker = self.resolve(heard.said_by, role="speaker")
            if speaker.type not in privacy.PERSON_TYPES:
                raise Refused(f"{speaker.id} is {speaker.a_type}: --said-by names an actor or a person")
            out["said_by"] = speaker.iri
            out["speaker_affiliation"] = self._affiliation(speaker.iri, out["audience"])
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

    def _affiliation(self, speaker: str, heard_in: str) -> str | None:
        """The organization a speaker is affiliated with now, as the audience ``heard_in`` may know it:
        their newest current, confirmed affiliated_with fact heard where it may hear (recorded with
        what they say; never a reason to trust it). One heard in a private conversation alone would
        show its organization to every reader of this hearing (a public one: to anyone)."""
        from kgrdf import audience

        predicate = self.schema.predicate("affiliated_with")
        current = [
            f
            for f in self._facts_for(speaker, predicate.iri)
            if f.status == "confirmed"
            and f.current
            and f.is_entity_target
            and any(audience.may_hear(h.audience, heard_in) for h in f.hearings)
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
        if order is not None:
            model.check_order(order)
        reason = self._checked_reason(reason)
        subject_entity = self.resolve(subject, role="subject")
        target = self._target(pred, object, value)
        if isinstance(target, model.Entity) and target.iri == subject_entity.iri:
            raise Refused(
                f"{subject.strip()!r} and {str(object).strip()!r} are one entity, {subject_entity.id}: "
                f"a fact of {pred.key} relates an entity to another"
            )
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
                fact.sensitivity == "personal"
                or _heard_from_people(heards)
                or self._names_person(subject_entity, target, target_term, heards, sources, reason)
            ):
                raise Refused(
                    f"{fact.id} names a person, and a fact with authority inferred may not name a person: "
                    "an inference about a person is not observed either",
                    whitelist=True,
                )
            hearings = self._hearings(fact, heards, sources)
            changes = {"observed_at": self.now, "observations": fact.observations + len(hearings), **times}
            changes.update(self._made_personal(fact, heards, sources, reason))
            changes.update(said_again(fact, authority, sources, prevents_rework))
            after = self._change(fact, changes, "observe", reason, sources, hearings)
            return Outcome(
                after,
                "observed",
                f"{fact.id} was known: observed again ({after.observations} observations)" + times_note,
            )
        rejected = [f for f in same if f.status == "rejected" and not f.superseded_by]
        if rejected and revive_rejected:
            return self._revive(
                rejected[0],
                asked,
                heards,
                sources,
                (authority, prevents_rework),
                reason or "the user's verified words bring it back",
                "had been rejected: the user's own words bring it back",
            )
        if rejected:
            fact = rejected[0]
            return Outcome(
                fact,
                "rejected",
                f"{fact.id} was rejected; it stays rejected, and nothing of this proposal was recorded",
            )
        # (an inference that names a person is refused, whether it makes a fact or brings an expired one back)
        names_person = self._names_person(subject_entity, target, target_term, heards, sources, reason)
        if authority == "inferred" and (names_person or _heard_from_people(heards)):
            raise Refused(
                "a fact with authority inferred may not name a person, and this one does"
                + (
                    ""
                    if self._is_about_person(subject_entity, target)
                    else " in its words, a source or its reason"
                    if names_person
                    else ": it was said by one, or heard in a private conversation"
                ),
                hint="an inference about a person is not kept: give what was observed (--authority observed) and its source",
                whitelist=True,
            )
        expired = [f for f in same if f.status == "expired"]
        if expired:
            said = (authority, prevents_rework)
            return self._revive(expired[0], asked, heards, sources, said, reason, "had expired: proposed again")
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

    def observe_settled(self, fact: model.Fact, sources, heard: "list[Heard]", reason: str) -> model.Fact:
        """Record on a rejected or closed fact the sources another replica heard it in since (kg
        sync), an observation that leaves its status as it is. A proposal records nothing on such a
        fact; sync only ever adds sources, so that replicas that have seen the same patches hold the
        same sources of every fact, settled ones too, whatever order they synced in."""
        heards = [self._heard(h) for h in heard]
        hearings = self._hearings(fact, heards, sources)
        changes = {"observed_at": self.now, "observations": fact.observations + len(hearings)}
        changes.update(self._made_personal(fact, heards, sources, reason))
        return self._change(fact, changes, "observe", reason, sources, hearings)

    def _revive(
        self, fact: model.Fact, asked: dict, heards: list[dict], sources, said: tuple[str, bool], reason, why: str
    ) -> Outcome:
        """Bring a rejected or expired fact back as a proposal, heard again: its valid time and order
        as now said (they were not held), one more observation a hearing, and what the hearing
        says of it (``said``: its authority and whether it prevents rework), as a fact observed
        again takes them (said_again)."""
        times = self._retimed(fact, asked, allowed=True)
        times_note = self._times_note(fact, times)  # said before the change: what it held
        hearings = self._hearings(fact, heards, sources)
        changes = {
            "status": "proposed",
            "retired_at": None,
            "observed_at": self.now,
            "observations": fact.observations + len(hearings),
            **times,
            **self._made_personal(fact, heards, sources, reason),
            **said_again(fact, said[0], sources, said[1]),
        }
        after = self._change(fact, changes, "revive", reason, sources, hearings)
        return Outcome(after, "revived", f"{fact.id} {why}" + times_note)

    @staticmethod
    def _is_about_person(subject_entity: model.Entity, target) -> bool:
        """Whether a fact's subject or its object is a person or an actor."""
        return subject_entity.type in privacy.PERSON_TYPES or (
            isinstance(target, model.Entity) and target.type in privacy.PERSON_TYPES
        )

    def _names_person(self, subject_entity, target, target_term, heards, sources, reason) -> bool:
        """Whether a proposal names a person: its subject or object is one, or its value or a text it
        brings names one (SPEC §3: such a fact is personal)."""
        return self._is_about_person(subject_entity, target) or self._names_a_person(
            [target_term.value if isinstance(target_term, Literal) else None]
            + self._brought_texts(heards, sources, reason)
        )

    @staticmethod
    def _brought_texts(heards: list[dict], sources, reason) -> list:
        """The texts a proposal brings that may name a person: each hearing's channel or workspace
        (one may be named after a person: kg forget reads it as it reads every text; a private
        conversation's audience lists its people, and is private by that alone: privacy), span and
        message, a claim's role, the reason, and the sources' refs and quotes."""
        return [
            *(
                text
                for heard in heards
                for text in (
                    privacy.audience_place(heard.get("audience")),
                    heard["span"],
                    heard["message"],
                    heard.get("claimed_role"),
                )
            ),
            reason,
            *(text for s in sources for text in (s.ref, s.quote)),
        ]

    def _made_personal(self, fact: model.Fact, heards: list[dict], sources, reason) -> dict:
        """{"sensitivity": "personal"} when a fact not yet personal is heard again with a text
        naming a person (a source, a message, the words, a claim's role, the reason), else {}: a fact
        naming a person is one whichever of its hearings names them, and the auto-confirm rules and
        the routing to the private journal read it so. Its own value is read again too: a person
        added since it was made may be named in it."""
        if fact.sensitivity == "personal":
            return {}
        own = [fact.target.value] if isinstance(fact.target, Literal) else []
        if not self._names_a_person(own + self._brought_texts(heards, sources, reason)):
            return {}
        return {"sensitivity": "personal"}

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
            command = pasted.kg(
                "supersede", fact.id, *(w for n, g in changes.items() for w in (self._TIME_OPTIONS[n], str(g)))
            )
            raise Refused(
                f"{fact.id} says this already with {held}: proposing it again observes it, and an "
                f"observation does not change a fact's valid time or order, so nothing was written",
                hint=f"{command} corrects it: a person's correction, kept in its history",
                conflict=True,
            )
        return changes

    @classmethod
    def _times_note(cls, fact: model.Fact, changes: dict) -> str:
        if not changes:
            return ""
        return "; " + ", ".join(f"{name} {getattr(fact, name) or 'none'} -> {given}" for name, given in changes.items())


def _heard_from_people(heards: list[dict]) -> bool:
    """Whether a hearing names people by who it is: a speaker (--said-by), or a private
    conversation, whose audience lists its people. An inference may name no one (SPEC §4)."""
    return any(h["said_by"] is not None or (h["audience"] or "").startswith("dm:") for h in heards)


def said_again(fact: model.Fact, authority: str, sources, prevents_rework: bool) -> dict:
    """What hearing a known fact again changes of its own fields (kg propose of it again, a merge
    bringing another organization's copy of it): the user's own words (a source of kind user,
    authority user) make it the user's; a fact only inferred, heard now, is observed (or a
    stakeholder's); a hearing that says it prevents rework flags it."""
    changes = {}
    if authority == "user" and any(s.kind == "user" for s in sources):
        changes["authority"] = "user"
    elif fact.authority == "inferred" and authority != "inferred":  # seen now, no longer only inferred
        changes["authority"] = authority if authority == "stakeholder" else "observed"
    if prevents_rework and not fact.prevents_rework:
        changes["prevents_rework"] = True
    return changes
