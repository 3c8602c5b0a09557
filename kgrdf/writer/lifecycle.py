"""A fact's life after it is proposed: confirmed, rejected, superseded, retimed, closed, expired."""

import re

from pyoxigraph import NamedNode

from kgrdf import audience as audiences
from kgrdf import clock, model, pasted, privacy, schema, vocab
from kgrdf.errors import BadInput, NotFound, Refused
from kgrdf.session.reading import days_before
from kgrdf.writer.pending import rival_key
from kgrdf.writer.staging import DEFAULT_REVIEWER, Heard, Outcome, Staging, parse_source


def _keeping_key(old: str, value: str) -> str:
    """The new value of a free-text attribute (``KEY: VALUE``) whose old value is ``old``: a value
    without a key of its own takes the old one's ("12M" for "revenue: 10M" is "revenue: 12M"); one
    with a key ("revenue: 12M", "annual revenue: 12M") is taken as given, as is any value for an old
    one that had no key ("founded in Texas" for "founded in Ohio")."""
    if ":" in value or ":" not in old:
        return value
    return f"{old.partition(':')[0].strip()}: {value.strip()}"


def _overlap(a: model.Fact, b: model.Fact) -> bool:
    """Whether two facts' valid times share an instant (model.shared_time)."""
    return model.shared_time(a.valid_from, a.valid_to, b.valid_from, b.valid_to) is not None


def _narrowed(fact: model.Fact, before: model.Fact) -> bool:
    """Whether ``fact`` is ``before`` retimed to a valid time inside the one it held: it takes time
    away and adds none."""
    starts = before.valid_from is None or (fact.valid_from is not None and fact.valid_from >= before.valid_from)
    ends = before.valid_to is None or (fact.valid_to is not None and fact.valid_to <= before.valid_to)
    return fact.iri == before.iri and starts and ends


class Lifecycle(Staging):
    """A person's review (confirm, reject, supersede) and the closing, retiming and expiry it brings."""

    def confirm(
        self, fact_id: str, reviewed_by: str = DEFAULT_REVIEWER, reason: str | None = None, close_replaced: bool = True
    ) -> Outcome:
        """Confirm a fact. For a single-valued predicate, close the confirmed value it replaces, or,
        when the fact begins after now, end that value where it begins (_replace) (unless
        ``close_replaced`` is off: an automatic confirmation leaves that to a person).

        Confirming a confirmed fact again (a person vouching for it anew) refreshes its
        last_confirmed_at, and closes any value it replaces that an automatic confirmation left open.
        """
        fact = self.fact(fact_id)
        if fact.superseded_by:
            self._refuse_superseded(fact)
        if fact.status == "rejected":
            raise Refused(f"{fact.id} was rejected, and a rejected fact stays rejected", hint=self._revival(fact))
        if not fact.current and fact.status == "confirmed":
            raise Refused(f"{fact.id} is closed; only a current fact can be confirmed")
        action = "reconfirm" if fact.status == "confirmed" else "confirm"
        if action == "reconfirm" and reviewed_by == "auto":
            return Outcome(fact, "unchanged", f"{fact.id} is confirmed already", [])
        changes = {"status": "confirmed", "retired_at": None, "last_confirmed_at": self.now, "reviewed_by": reviewed_by}
        if reviewed_by != "auto":  # (an automatic confirmation follows the proposal's own reading)
            changes.update(self._named_since(fact))
        rivals, beside = self._replaced_by(fact)
        coexist = bool(rivals) and self._coexists(fact)
        if close_replaced and rivals and not coexist and fact.valid_from is None:
            # It holds from where the values it replaces end (now): left open, its valid time would
            # reach back over theirs, two values true at once.
            changes["valid_from"] = self.now
        after = self._change(fact, changes, action, reason)
        if coexist:
            standing = [r for r in rivals if not self.ended(r)]  # (one that ended holds no more: no rival now)
            if not standing:
                return Outcome(after, action + "ed", None, [])
            ids = ", ".join(r.id for r in standing)
            stay, both = ("stays", "both") if len(standing) == 1 else ("stay", "all")
            return Outcome(
                after,
                action + "ed",
                f"{ids} {stay} beside it, {both} shown as conflicting until a person resolves them "
                f"(kg reject or kg supersede the one that is wrong: {pasted.kg('reject', standing[0].id)}, "
                f"or {pasted.kg('reject', after.id)})",
                [],
            )
        if close_replaced:
            replaced = [self._replace(other, after) for other in rivals]
            notes = [self._replaced_note(old, new, after) for old, new in zip(rivals, replaced, strict=True)]
            notes += [self._beside_note(after, other) for other in beside]
            closed = [new for new in replaced if new.superseded_by]
            return Outcome(after, action + "ed", "; ".join(n for n in notes if n) or None, closed)
        note = None
        if rivals:
            ids = ", ".join(r.id for r in rivals)
            later = after.valid_from and after.valid_from > self.now
            does = f"ends {ids} where it begins" if later else f"closes {ids}"
            note = f"{ids} stays current beside it until a person confirms the change (kg confirm {after.id} {does})"
        return Outcome(after, action + "ed", note, [])

    def _named_since(self, fact: model.Fact) -> dict:
        """{"sensitivity": "personal"} when a fact not yet personal names a person added since it was
        written (its texts read as a proposal's are), else {}: a fact a person confirms is read again,
        as one heard again is. An inference that names one is refused, as its proposal would be now."""
        if fact.sensitivity == "personal" or not self._names_a_person(privacy.fact_texts(fact, places=True)):
            return {}
        if fact.authority == "inferred":
            raise Refused(
                f"{fact.id} names a person known since it was proposed, and a fact with authority inferred "
                "may not name a person: an inference about a person is not kept",
                hint=f"{pasted.kg('reject', fact.id)}; propose what was observed, with its source",
                whitelist=True,
            )
        return {"sensitivity": "personal"}

    def ended(self, fact: model.Fact) -> bool:
        """Whether a fact's valid time ended by now: "it was being built until 2021"."""
        return bool(fact.valid_to) and fact.valid_to <= self.now

    def in_confirming_order(self, fact_ids: list[str]) -> list[str]:
        """``fact_ids`` as one decision confirms them: the values whose valid time ended first (each
        replaces none), then the rest in their order, each of which closes the ended values it
        replaces, as it would confirmed on a later day. In any other order a value current now,
        confirmed first, would stay beside an ended one confirmed after it, the two overlapping."""
        ended = {fact_id: None for fact_id in fact_ids if self.ended(self.fact(fact_id))}
        return list(ended) + [fact_id for fact_id in fact_ids if fact_id not in ended]

    def _replaced_by(self, fact: model.Fact) -> tuple[list[model.Fact], list[model.Fact]]:
        """(the rival values confirming ``fact`` replaces, those it leaves beside it). A rival whose
        valid time it does not share is no rival: a planned change ("postgres 14 until March",
        "postgres 16 from March") holds both, in either order. A value whose valid time ended by
        now ("it was being built until 2021") replaces none: the value current now stays current,
        and a rival that shared part of its time is left beside it (kg lint shows the overlap).
        Any other replaces each rival whose time it shares."""
        rivals = [other for other in self._rivals(fact) if _overlap(fact, other)]
        if self.ended(fact):
            return [], rivals
        return rivals, []

    @staticmethod
    def _beside_note(fact: model.Fact, other: model.Fact) -> str:
        """What confirming a past value says of a rival whose valid time it shares: both stay."""
        return f"{other.id} held another value during part of that time: both stay, and kg lint shows how to end the overlap"

    def confirmed_together(self, fact_ids: list[str]) -> list[list[model.Fact]]:
        """The facts among ``fact_ids`` that may not be confirmed in one decision: two or more
        different values of a single-valued predicate (or of one key of an attribute) of one subject
        whose valid times overlap. Confirmed one after the other, each would close the one before,
        and which value stays would be the order of the batch's letters, not a person's choice.
        (An organization's attributes stand side by side, and are never among them.) A value whose
        valid time ended is never among them: it replaces none, and a decision confirms it first
        (in_confirming_order), so the value current now closes it as a later day's would."""
        buckets: dict[tuple, list[model.Fact]] = {}
        for fact_id in dict.fromkeys(fact_ids):
            fact = self.fact(fact_id)
            if self.ended(fact):
                continue
            predicate = self.schema.predicate_by_iri(fact.predicate)
            if predicate is None or not predicate.one_value:
                continue
            if self._coexists(fact):
                continue
            key = (fact.subject, fact.predicate, rival_key(self.schema, fact.predicate, fact.target))
            buckets.setdefault(key, []).append(fact)
        return [
            facts
            for facts in buckets.values()
            if any(
                a.value_key() != b.value_key() and _overlap(a, b) for i, a in enumerate(facts) for b in facts[i + 1 :]
            )
        ]

    def _rivals(self, fact: model.Fact) -> list[model.Fact]:
        """The other current confirmed values of a single-valued predicate (or of the same key of a
        free-text attribute) that ``fact`` replaces."""
        predicate = self.schema.predicate_by_iri(fact.predicate)
        if predicate is None or not predicate.one_value:
            return []
        return self.confirmed_rivals(fact)

    def _coexists(self, fact: model.Fact) -> bool:
        """Whether rival values stay side by side instead of the newer closing the older (schema.Predicate.coexists_on)."""
        predicate = self.schema.predicate_by_iri(fact.predicate)
        subject = self.entity(NamedNode(fact.subject))
        return predicate is not None and subject is not None and predicate.coexists_on(subject.type)

    def _replace(self, old: model.Fact, replacement: model.Fact, why: str | None = None) -> model.Fact:
        """``old``, replaced by ``replacement`` (a confirmation or a correction): closed (_close),
        unless the replacement begins after now and after ``old`` begins. Then ``old`` is true until
        the replacement begins, and holds until then (_hand_over): closed now, it would leave nothing
        true between now and then."""
        start = replacement.valid_from
        if start and start > self.now and not (old.valid_from and old.valid_from >= start):
            return self._hand_over(old, replacement, why)
        return self._close(old, replacement, why)

    def _hand_over(self, old: model.Fact, replacement: model.Fact, why: str | None = None) -> model.Fact:
        """End ``old``'s valid time where ``replacement``, which begins later, begins (never later
        than it ended): it stays confirmed and current until then, as the first value of a planned
        change does ("postgres 14 until March", "postgres 16 from March"), and is not superseded (a
        superseded fact is retired, and this one is true until then). Its update record says which
        fact it ends for (kg history)."""
        if old.valid_to and old.valid_to <= replacement.valid_from:
            return old  # it ends by then already
        return self._change(
            old,
            {"valid_to": replacement.valid_from},
            "retime",
            f"ends where {replacement.id} begins" + (f": {why}" if why else ""),
        )

    def _replaced_note(self, old: model.Fact, after: model.Fact, replacement: model.Fact) -> str | None:
        """What replacing ``old`` (``after``, as it is now) by ``replacement`` did, when it is more
        than closing it now."""
        if after.superseded_by:
            return self._closed_note(old, after)
        if after.valid_to == replacement.valid_from:
            return f"{old.id} holds until {after.valid_to}, when {replacement.id} begins"
        return f"{old.id} holds until {after.valid_to}, as it did; {replacement.id} begins at {replacement.valid_from}"

    def _proposing(self, fact: model.Fact, *more: str) -> str:
        """The kg propose command that says ``fact``'s value again (without its sources), then ``more``."""
        subject = self.entity(NamedNode(fact.subject))
        predicate = self.schema.predicate_by_iri(fact.predicate)
        said = ["--object", vocab.id_of(fact.target.value)] if fact.is_entity_target else ["--value", fact.target.value]
        key = predicate.key if predicate else fact.predicate
        return pasted.kg("propose", subject.id if subject else vocab.id_of(fact.subject), key, *said, *more)

    def _revival(self, fact: model.Fact) -> str:
        """The way back for the rejected ``fact``, as a hint."""
        return "the user's own words bring it back: " + self._proposing(
            fact, "--from-user", "--quote", "WORDS", "--transcript", "FILE"
        )

    def _refuse_superseded(self, fact: model.Fact) -> None:
        """Refuse to confirm a fact a replacement closed, naming the way out: confirm the replacement
        instead, or, when it was rejected since, propose the closed fact's value anew (a closed fact
        is not reopened; the new one is proposed, then confirmed)."""
        successor = vocab.id_of(fact.superseded_by)
        try:
            rejected = self.fact(successor, history=False).status == "rejected"
            gone = False
        except NotFound:  # deleted since: forgotten on request, or past retention
            rejected, gone = False, True
        if not rejected and not gone:
            raise Refused(f"{fact.id} was superseded by {successor}", hint=f"confirm {successor} instead")
        command = self._proposing(fact, "--source", "KIND:REF")
        why = "which was deleted since (forgotten, or past retention)" if gone else "which was rejected since"
        raise Refused(
            f"{fact.id} was superseded by {successor}, {why}; {fact.id} stays closed",
            hint=f"to hold its value again, propose it anew: {command}, then kg confirm the new fact",
        )

    def _close(
        self, old: model.Fact, replacement: model.Fact, why: str | None = None, ends: str | None = None
    ) -> model.Fact:
        """Close ``old``, replaced by ``replacement``: retired now, and its valid time ends where the
        replacement's begins (now, for one that begins later: confirming and correcting hand a value
        to one that begins later instead, see _replace), or at ``ends`` (where a value between
        the two, not held here, began), so that the two never hold at once. It never ends later than
        it did; one whose replacement begins at or before its own start never held: it ends at its
        start (an empty interval)."""
        end = self.now
        began = ends or replacement.valid_from
        if began and began <= self.now:
            end = began
        if old.valid_to and old.valid_to < end:
            end = old.valid_to
        if old.valid_from and end < old.valid_from:
            end = old.valid_from
        self.__dict__.setdefault("_ends_closed", {}).setdefault(old.iri, old.valid_to)
        return self._change(
            old,
            {"valid_to": end, "superseded_by": replacement.iri, "retired_at": self.now},
            "close",
            f"replaced by {replacement.id}" + (f": {why}" if why else ""),
        )

    def close_for(
        self,
        fact_id: str,
        replacement_id: str,
        why: str | None = None,
        starts: str | None = None,
        ends: str | None = None,
    ) -> model.Fact:
        """Close a current fact, replaced by another current one, as confirming or superseding closes
        the value it replaces (a closure another replica made, folded in by kg sync). ``starts`` is
        when the replacement holds from, where it says no time of its own (the time it was given
        where the closure was made): the closed fact ends there, or at ``ends`` (where the value
        that replaced it there began, itself replaced since)."""
        old, replacement = self.fact(fact_id), self.fact(replacement_id)
        if not old.current or not replacement.current:
            raise Refused(f"{old.id} and {replacement.id} must both be current to close one for the other")
        if starts and not replacement.valid_from:
            replacement = self._change(replacement, {"valid_from": starts}, "retime", why)
        return self._close(old, replacement, why, ends=ends)

    def reopen(self, fact_id: str, why: str) -> model.Fact:
        """Undo the closing of a confirmed fact (kg sync: the later of two people's choices, made on
        another replica, chose it): current again, with the end it had before it was closed."""
        fact = self.fact(fact_id)
        if fact.status != "confirmed" or not fact.superseded_by:
            raise Refused(f"{fact.id} is not a closed confirmed fact")
        ends = self.__dict__.setdefault("_ends_closed", {})  # (the end each fact this write closed had)
        if fact.iri in ends:
            end = ends[fact.iri]
        else:  # closed by an earlier write: the end its closing record says it had
            held = self.held_fact(fact_id)
            closing = next((u for u in reversed(held.updates) if "superseded_by" in u.changes), None)
            end = held.valid_to
            if closing is not None and "valid_to" in closing.changes:
                before = closing.changes["valid_to"][0]
                end = str(before[0]) if before else None
        return self._change(fact, {"valid_to": end, "superseded_by": None, "retired_at": None}, "reopen", why)

    @staticmethod
    def _closed_note(old: model.Fact, closed: model.Fact) -> str | None:
        """What closing did to a value's valid time, when it is more than ending it now."""
        if closed.valid_from and closed.valid_to == closed.valid_from:
            return (
                f"{old.id} never held: its replacement holds from its own start {old.valid_from} or before, "
                f"so {old.id} is closed at that start"
            )
        return None

    def _refuse_overlap(self, fact: model.Fact, before: model.Fact, new: bool = False) -> None:
        """Refuse a fact of a single-valued predicate whose valid time would overlap that of another
        confirmed value held for the same subject: two values true at once. ``before`` is what the
        correction replaces (the fact itself before a retime, the superseded fact): a current value
        that overlapped it already is a contradiction a person has yet to resolve (kg lint shows
        it), which a correction of one of the two may carry on, not one it makes; a current value
        it did not overlap (a planned change, "live from June") is one it would make, and refused.
        A retime that only takes time away makes no overlap, and carries on any other (a value
        overlapping two others, its overlap with each fixed one at a time as kg lint advises).
        Reads the subject's facts of that predicate (one index lookup)."""
        predicate = self.schema.predicate_by_iri(fact.predicate)
        if predicate is None or not predicate.single_valued:
            return
        for other in self._facts_for(fact.subject, fact.predicate):
            if (
                other.iri in (fact.iri, before.iri)
                or other.status != "confirmed"
                or (other.current and fact.current and _overlap(before, other))
                or (_narrowed(fact, before) and _overlap(before, other))
                or other.value_key() == fact.value_key()
                or not _overlap(fact, other)
            ):
                continue
            shown = other.target.value if not other.is_entity_target else vocab.id_of(other.target.value)
            which = "the replacement" if new else fact.id
            held = "holds" if other.current else "held"
            until = f"to {other.valid_to}" if other.valid_to else "on"
            if other.valid_from and (fact.valid_from is None or fact.valid_from < other.valid_from):
                hint = f"give --valid-to {other.valid_from} or earlier"
            else:
                hint = (
                    f"give --valid-from {other.valid_to} or later"
                    if other.valid_to
                    else f"correct {other.id}, which holds then, instead: {pasted.kg('supersede', other.id)} ..."
                )
            raise Refused(
                f"{which} would hold from {fact.valid_from or 'the beginning'} while {other.id} ({shown!r}) "
                f"{held} from {other.valid_from or 'the beginning'} {until}: "
                f"{predicate.key} takes one value at a time, so nothing was written",
                hint=hint,
                conflict=True,
            )

    def reject(
        self, fact_id: str, reviewed_by: str = DEFAULT_REVIEWER, reason: str | None = None, closed: bool = False
    ) -> Outcome:
        """Reject a fact: it leaves current reads, and stays rejected. A closed one is refused, unless
        ``closed`` (kg sync: a rejection on another replica holds here, on a fact closed meanwhile)."""
        fact = self.fact(fact_id)
        if fact.status == "rejected":
            return Outcome(fact, "unchanged", f"{fact.id} is rejected already")
        if fact.superseded_by and not closed:
            raise Refused(f"{fact.id} was superseded by {vocab.id_of(fact.superseded_by)}; it is closed already")
        handed = self._handed_to(fact) if fact.status == "confirmed" else []
        after = self._change(
            fact, {"status": "rejected", "retired_at": self.now, "reviewed_by": reviewed_by}, "reject", reason
        )
        notes = []
        for other, end in handed:
            self._change(
                other, {"valid_to": end}, "retime", f"holds on as before: {fact.id}, which it ended for, was rejected"
            )
            notes.append(
                f"{other.id} holds on "
                + (f"until {end}" if end else "with no end")
                + f", as it did before {fact.id} was confirmed"
            )
        if fact.status == "confirmed":  # a value it closed stays closed (a closed fact is not reopened): its way back
            notes += [
                f"{other.id}, which it replaced, stays closed; to hold its value again: "
                f"{self._proposing(other, '--source', 'KIND:REF')}, then kg confirm the new fact"
                for other in self._facts_for(fact.subject, fact.predicate)
                if other.superseded_by == fact.iri and other.status == "confirmed"
            ]
        return Outcome(after, "rejected", "; ".join(notes) or None)

    def _handed_to(self, fact: model.Fact) -> list[tuple[model.Fact, str | None]]:
        """The values confirming ``fact`` ended where it begins (_hand_over), each with the end it
        had before: rejected, ``fact`` was never the value that follows them, and they hold on as
        they did. The end they had before is read back past every handover to a fact rejected since
        and every end given back so (a planned change corrected twice, then both rejected, gives the
        value its own end again); one retimed since by a person keeps the end the person gave it."""
        found = []
        for other in self._rivals(fact):
            if not fact.valid_from or other.valid_to != fact.valid_from:
                continue
            given_back = self._end_before_handovers(other, fact)
            if given_back is not None:
                found.append((other, given_back[0]))
        return found

    _HANDED = re.compile(r"ends where (f-[0-9a-z]+) begins|holds on as before: (f-[0-9a-z]+),")

    def _end_before_handovers(self, other: model.Fact, fact: model.Fact) -> tuple[str | None] | None:
        """(the end ``other`` had before it was ended for ``fact`` and for facts rejected since,) or
        None when its end is not theirs: its last change of end is a person's, or a handover to a
        fact that still holds, or none names ``fact``."""
        skipped, for_fact = None, False
        for update in reversed([u for u in other.updates if "valid_to" in u.changes]):
            named = self._HANDED.match(update.reason or "") if update.action == "retime" else None
            if named is None:
                break
            handed_to, given_back = named.groups()
            if handed_to is not None and handed_to != fact.id and not self._rejected(handed_to):
                break  # (ended for a value that still follows it)
            skipped, for_fact = update, for_fact or handed_to == fact.id or given_back == fact.id
        if skipped is None or not for_fact:
            return None
        before = skipped.changes["valid_to"][0]
        return (str(before[0]) if before else None,)

    def _rejected(self, fact_id: str) -> bool:
        try:
            return self.fact(fact_id).status == "rejected"
        except NotFound:
            return False

    def _follow_start(self, fact: model.Fact, start: str | None) -> list[str]:
        """The values ``fact`` was handed over from (ended where it began), ended where it begins now
        that its start is corrected to ``start`` (never later than they ended before it, nor into a
        value the subject holds after them): a value left ending at the old start would leave nothing
        true between the two, or overlap the new one."""
        if not (fact.valid_from and start and fact.status == "confirmed"):
            return []
        notes = []
        for other, end in self._handed_to(fact):
            moved, by = (start, fact) if end is None or start < end else (end, None)
            if moved > other.valid_to:  # lengthened: up to the next value held after it, if one begins before
                moved, by = min([(moved, by)] + self._held_after(other, fact), key=lambda pair: pair[0])
                if moved == other.valid_to:
                    continue
            if other.valid_from and moved <= other.valid_from:
                continue  # (it would end before it begins: the overlap check says so)
            self._change(other, {"valid_to": moved}, "retime", f"ends where {fact.id} begins, its start corrected")
            ends = "it begins" if by is fact else f"{by.id} begins" if by else "it ended before"
            notes.append(f"{other.id} now ends where {ends}, at {moved}")
        return notes

    def _held_after(self, other: model.Fact, fact: model.Fact) -> list[tuple[str, model.Fact]]:
        """(start, value) of the confirmed values rival to ``other`` (its subject, predicate and, for
        an attribute, key), but ``fact``, that begin where ``other`` ends or later: held for a while
        (one closed at its start never held)."""
        key = rival_key(self.schema, other.predicate, other.target)
        return [
            (held.valid_from, held)
            for held in self._facts_for(other.subject, other.predicate)
            if held.iri not in (other.iri, fact.iri)
            and rival_key(self.schema, other.predicate, held.target) == key
            and held.status == "confirmed"
            and held.valid_from
            and held.valid_from >= other.valid_to
            and not (held.valid_to and held.valid_to <= held.valid_from)
        ]

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
        """Correct a fact: a confirmed replacement with the new object or value (and the old one's
        order and prevents_rework, unless ``order`` says another) closes the old one.
        The replacement holds from ``valid_from`` (default: now) and the old value until then (one
        whose replacement begins at or before its own start never held: see _close; one whose
        replacement begins after now is not closed, but holds until then: see _replace); a replacement
        whose valid time would overlap another value the subject held is refused. It is heard in
        each audience the old one was heard in (whoever was told the old value may be told the
        correction, and nobody else), unless ``audience`` says where.

        Without a new object or value, the fact's own valid time or order is corrected (retime).
        """
        old = self.fact(fact_id)
        if object is None and value is None and (old.current or old.status == "confirmed"):
            if audience is not None:
                raise BadInput(
                    "--audience says where a new --object or --value is heard; a correction of the valid "
                    "time or order alone changes the fact where it was heard"
                )
            if sources:
                raise BadInput(
                    "--source says where a new --object or --value comes from; a correction of the valid "
                    "time or order alone keeps the fact's sources: say why with --reason"
                )
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
        if predicate is None:  # (a site predicate schema.json no longer declares, or one refused)
            raise Refused(
                f"{old.id} is a fact of {schema.key_of(old.predicate)}, which the schema in use does not hold: "
                "it is read, not corrected",
                hint="kg schema says whether schema.json was refused; one that declares it again lets it change",
            )
        subject = self.entity(NamedNode(old.subject))
        if value is not None and predicate.key == "attribute":
            value = _keeping_key(old.target.value, value)
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
            order=order if order is not None else old.order,  # a correction changes the object or value only
            prevents_rework=old.prevents_rework,
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
                hint=f"to correct only its valid time or order: {pasted.kg('supersede', old.id, '--valid-from', 'DATE')}",
            )
        if outcome.action == "rejected":
            raise Refused(
                f"the replacement value was rejected before ({new.id}), and a rejected fact stays rejected",
                hint=self._revival(new),
            )
        # A value of a predicate that holds several at once, confirmed and held already beside the old
        # one: its own valid time is left as it was (the old one alone ends, now), not rewritten.
        beside = (
            outcome.action == "observed"
            and new.status == "confirmed"
            and valid_from is None
            and not (predicate and predicate.single_valued)
            and (new.valid_from is None or new.valid_from <= self.now)
        )
        if new.status != "confirmed":
            new = self.confirm(new.id, close_replaced=False, reason=f"supersedes {old.id}").fact
        if new.valid_from is None and not beside:  # a value held already, from no time in particular: from now on
            new = self._change(new, {"valid_from": self.now}, "retime", f"replaces {old.id} from now on")
        # The reason is heard where the correction is: it stays with the hearing the correction added
        # to its replacement (a record only that audience is shown); the record closing the old fact
        # says it too only when everyone who may hear the old fact may hear the correction.
        said = audience is None or all(audiences.may_hear(audiences.parse(audience), a) for a in old.audiences())
        why = reason if said else None
        replaced = self._close(old, new, why, ends=self.now) if beside else self._replace(old, new, why)
        self._refuse_overlap(new, old, new=outcome.action == "created")
        note = self._replaced_note(old, replaced, new)
        if not replaced.superseded_by:
            return Outcome(new, "superseded", note, [])
        return Outcome(
            new, "superseded", note or f"{old.id} closed at {replaced.valid_to}, replaced by {new.id}", [replaced]
        )

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
        followed = self._follow_start(fact, changes["valid_from"]) if "valid_from" in changes else []
        after = self._change(fact, changes, "retime", reason or "valid time or order corrected by a person")
        self._refuse_overlap(after, fact)
        return Outcome(
            after,
            "retimed",
            f"{fact.id} corrected in place"
            + note
            + f" (kg history {fact.id} shows what it said before)"
            + "".join(f"; {n}" for n in followed),
        )

    # --- expiry and retention -------------------------------------------------------------------------

    def expire_proposals(self, days: int) -> list[model.Fact]:
        """Proposals not observed again for ``days`` days become expired (kept, with their history);
        proposing one again revives it. One that breaks the schema in use (a site predicate
        schema.json dropped) expires too: a write may take it out of current reads (_left_broken)."""
        self.check_perspective()  # (a typo in --perspective would expire nothing, and say so as a success)
        expired = []
        for row in self.rows("proposals-due", before=days_before(self.now, days)):
            fact = self.fact(row["id"].value)
            expired.append(
                self._change(
                    fact, {"status": "expired", "retired_at": self.now}, "expire", f"not observed again for {days} days"
                )
            )
        return expired
