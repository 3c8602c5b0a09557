"""Writes about organizations (§9): their attributes, claims of who works there, and a merge of two."""

import shlex
from dataclasses import replace

from pyoxigraph import NamedNode

from kgrdf import extension, inputs, model, pasted, privacy, vocab
from kgrdf.errors import BadInput, Refused
from kgrdf.writer.proposals import said_again
from kgrdf.writer.staging import Heard, Outcome, Staging, unsaid_claim


class Organizations(Staging):
    """kg org's writes: set_attribute, claim_member, promote_claim, merge_organizations."""

    PROMOTED = ("founded", "industry", "relationship", "first_contact_at", "last_contact_at")

    def add_organization(
        self, name: str, aliases=(), org_id: str | None = None, is_self: bool = False, join_named: bool = True
    ):
        """kg org add (and init): the organization ``name``, its id made from the name unless
        ``org_id`` is given, made or given ``aliases``; as add_entity returns. With ``join_named``,
        a name an organization goes by already (its name or a strong alias, in any case, composed
        or not: "texturehq.com" of Texture) means that one: ``aliases`` are added to it, and its name
        stays (a second organization would make the name ambiguous everywhere). A name whose id is
        that of an organization named otherwise is refused: the letters an id keeps are the same
        for Ωmega and Mega, and adding to it would rename Mega."""
        entity_id = model.organization_id(name, org_id)
        if org_id is not None:
            held = None
        elif join_named:
            held = self.organization_named(name)
        else:
            held = self.entity(vocab.entity_iri(self.perspective, entity_id))
        if held is not None:
            if not held.known_as(name):
                raise id_taken(name, entity_id, held.name)
            return self.add_entity(held.id, held.name, list(aliases), is_self=is_self)  # (its name kept)
        return self.add_entity(entity_id, name, list(aliases), is_self=is_self)

    def set_attribute(self, org: str, key: str, value: str, sources=(), heard: Heard | None = None) -> Outcome:
        """An organization's attribute: a promoted key is its own predicate, any other key a free-text
        ``attribute`` fact written KEY: VALUE. A proposal, like any fact heard."""
        key = model.clean_label(inputs.label(key, "the attribute key"))  # (nothing in it hidden: no look-alike keys)
        if not key or ":" in key:
            raise BadInput(f"an attribute key is a word or a few, without ':', not {key!r}")
        entity = self._organization(org)
        normal = model.attribute_name(key)
        if normal in self.PROMOTED:
            return self.propose(entity.id, normal, value=value, sources=sources, heard=heard)
        predicate = self.schema.predicates.get(normal)
        if (  # a site's own predicate of an organization's value (a date's subproperty takes dates alone)
            predicate is not None
            and not predicate.takes_entity
            and predicate.iri.startswith(extension.SITE)
            and (not predicate.domain or "organization" in predicate.domain)
        ):
            return self.propose(entity.id, normal, value=value, sources=sources, heard=heard)
        if predicate is not None and predicate.takes_entity:  # a relation: text would hide it from kg org relations
            if predicate.domain and entity.type not in predicate.domain:  # (and none of an organization)
                raise BadInput(
                    f"{normal} relates {' or '.join(sorted(predicate.domain))} to an entity, not {entity.a_type}, "
                    f"so it is no attribute of {entity.id}: an attribute's key is a word or a few of your own, "
                    f"and {normal} is a predicate's",
                    hint="kg schema lists each predicate under the types it is about",
                )
            raise BadInput(
                f"{normal} relates two entities, so it is no attribute: it is a fact of its own",
                hint=f"kg propose {entity.id} {normal} --object ENTITY --source KIND:REF",
            )
        return self.propose(entity.id, "attribute", value=f"{key}: {value.strip()}", sources=sources, heard=heard)

    def organization_named(self, name: str) -> model.Entity | None:
        """The organization ``name`` means already, as kg org add takes it: the one whose id the name
        makes, when the name is one of its own; else the one organization going by it (Texture, by
        its alias texturehq.com; Nestlé S.A., by its alias Nestlé, whose letters make the id of
        Nestle); else the one holding that id (named otherwise: Mega, for Ωmega), or None."""
        held = self.entity(vocab.entity_iri(self.perspective, model.organization_id(name)))
        if held is not None and held.merged_into:  # its names are the one it was merged into's now
            held = None
        if held is not None and held.known_as(name):
            return held
        return self.organization_going_by(name) or held

    def organization_going_by(self, name: str) -> model.Entity | None:
        """The one organization whose name or strong alias ``name`` is, if there is one."""
        found = [
            m
            for m in self.identify(model.clean_label(name))["matches"]
            if m["type"] == "organization" and m["matched"] in ("name", "alias")
        ]
        return self.entity(self.entity_iri(found[0]["id"])) if len(found) == 1 else None

    def _organization(self, text: str) -> model.Entity:
        entity = self.resolve(text)
        if entity.type != "organization":
            raise Refused(f"{entity.id} is {entity.a_type}, not an organization")
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
            raise unsaid_claim()
        role = inputs.refuse_controls(model.clean_label(inputs.text(role, "the role")), "the role") if role else None
        facts.update({"claimed_role": role or None, "verified": False})
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
        if not claim.current and claim.superseded_by:  # (a merge of its organization carries it over)
            now = vocab.id_of(claim.superseded_by)
            raise Refused(
                f"{claim.id} is no longer current: {now} replaced it", hint=f"kg org promote {now} {shlex.quote(actor)}"
            )
        if not claim.current:
            raise Refused(f"{claim.id} is {claim.status}: only a current claim can be promoted")
        person = self.resolve(actor, role="actor")
        if person.type not in privacy.PERSON_TYPES:
            raise Refused(f"{person.id} is {person.a_type}: a claim is promoted to an actor or a person")
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
        a new fact that carries over its status and each of its hearings (audience, sources,
        speaker, message) and names the fact it came from (kg:mergedFrom), which is closed as
        superseded, its own history intact. A fact ``keep`` holds already is observed again instead;
        a proposal ``keep`` holds as rejected stays rejected, and one it holds as expired is proposed
        again, as kg propose takes them; a fact between the two ends there (it would relate ``keep``
        to itself). What ``merge`` rejected is carried to ``keep``, still rejected (_carry_rejection). ``keep`` takes ``merge``'s name and aliases as aliases; ``merge`` records that it
        was merged into ``keep``, and its id resolves there."""
        survivor, merged = self._organization(keep), self._organization(merge)
        if survivor.iri == merged.iri:
            raise Refused(f"{survivor.id} and {merged.id} are one organization already")
        if merged.is_self:
            raise Refused(
                f"{merged.id} is the perspective's self organization: merge the other into it",
                hint=pasted.kg("org", "merge", merged.id, survivor.id),
            )
        moved, observed, rejected, revived, retired, refusals = [], [], [], [], [], []
        for row in self.rows("entity-facts", entity=NamedNode(merged.iri)):
            old = self.fact(row["id"].value)
            if not old.current and old.status != "rejected":
                continue  # history stays with the merged organization
            subject = survivor.iri if old.subject == merged.iri else old.subject
            target = NamedNode(survivor.iri) if old.is_entity_target and old.target.value == merged.iri else old.target
            if not old.current:  # a rejection: it stays one, said of the kept organization
                if self._carry_rejection(old, subject, target):
                    refusals.append(old.id)
                continue
            if isinstance(target, NamedNode) and target.value == subject:  # (between the two: of neither now)
                self._change(
                    old,
                    {"valid_to": self._merged_end(old), "retired_at": self.now},
                    "merge",
                    f"{merged.id} was merged into {survivor.id}: the fact related the two",
                )
                retired.append(old.id)
                continue
            key = target.value if isinstance(target, NamedNode) else model.normalize(target.value)
            held = [f for f in self._facts_for(subject, old.predicate, key) if f.value_key() == key]
            same = [f for f in held if f.current and _agrees(old, f)]
            # a proposal meets the survivor's rejected or expired fact as kg propose would: the
            # rejected stays rejected (the proposal is closed into it), the expired is proposed again
            ended = [f for f in held if f.status in ("rejected", "expired") and not f.superseded_by]
            if not same and ended and old.status == "proposed" and ended[0].status == "rejected":
                kept = ended[0]
                rejected.append(kept.id)
            elif same or (ended and old.status == "proposed"):  # observed again, or an expired one revived
                into = same[0] if same else ended[0]
                changes = {"observed_at": self.now, "observations": into.observations + old.observations}
                changes |= said_again(into, old.authority, old.sources, old.prevents_rework)  # (what its copy said)
                if old.sensitivity == "personal" and into.sensitivity != "personal":
                    changes["sensitivity"] = "personal"
                if same and old.status == "confirmed" and into.status == "proposed":  # (its status comes along)
                    changes |= {"status": "confirmed", "last_confirmed_at": old.last_confirmed_at or self.now}
                    changes |= {"reviewed_by": old.reviewed_by} if old.reviewed_by else {}
                if not same:  # (revived as kg propose revives it: with the times and order the proposal gives)
                    changes |= {"status": "proposed", "retired_at": None} | {
                        name: getattr(old, name) for name in _TIMES if getattr(old, name) is not None
                    }
                kept = self._change(
                    into,
                    changes,
                    "observe" if same else "revive",
                    f"merged from {old.id}",
                    old.sources,
                    self._rehomed(into, old.hearings),
                )
                (observed if same else revived).append(kept.id)
            else:
                kept = self._carry(old, subject, target)
                moved.append(kept.id)
            self._change(
                old,
                {"valid_to": self._merged_end(old), "superseded_by": kept.iri, "retired_at": self.now},
                "merge",
                f"{merged.id} was merged into {survivor.id}",
            )
        names = [name for name in (merged.name, *merged.aliases) if name != merged.id]  # (an id is no alias)
        self.add_entity(
            survivor.id,
            survivor.name,
            [n for n in names if n != survivor.name],
            merged.weak_aliases,
            check_aliases=False,
        )
        # Its own names, its name with them (a name it is given later never uncovers the one the kept
        # one took): those it took from an organization merged into it before stay that one's.
        taken = {name for names in self.merges().get(merged.iri, {}).values() for name in names}
        after = replace(
            merged,
            aliases=[],
            weak_aliases=[],
            merged_into=survivor.iri,
            merged_names=sorted({merged.name, *merged.aliases, *merged.weak_aliases} - taken),
        )
        self._replace_entity(merged, after)
        return {
            "kept": survivor.id,
            "merged": merged.id,
            "moved": moved,
            "observed": observed,
            "stayed_rejected": rejected,
            "rejections": refusals,
            "revived": revived,
            "retired": retired,
            "aliases": names,
        }

    def _carry_rejection(self, old: model.Fact, subject: str, target) -> bool:
        """Carry the merged organization's rejected ``old`` to the kept one as a fact of its own, still
        rejected and naming the fact it came from (kg:mergedFrom): a rejected fact stays rejected
        whatever comes later, and the same proposal made of the kept organization under the
        duplicate's name (its alias now) meets it there, as kg propose meets a rejection. None is
        carried where the kept organization holds that value already (its own status stands), or
        that relates the two."""
        if isinstance(target, NamedNode) and target.value == subject:
            return False
        key = target.value if isinstance(target, NamedNode) else model.normalize(target.value)
        if any(f.value_key() == key for f in self._facts_for(subject, old.predicate, key)):
            return False
        self._carry(old, subject, target)
        return True

    def _carry(self, old: model.Fact, subject: str, target) -> model.Fact:
        """A new fact of ``subject`` and ``target`` that carries ``old`` on, as it stands (its status,
        times and each of its hearings), naming it (kg:mergedFrom), staged."""
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
        return kept

    def _merged_end(self, fact: model.Fact):
        """The end a merge gives the merged organization's ``fact``: now, as the copy that carries it
        on begins to stand for it, but never before the fact began (one that begins later ends where
        it begins) nor after the end it had (a value over before the merge keeps its end: a merge
        changes who the fact is about, never when it was true)."""
        ends = max(self.now, fact.valid_from or self.now)
        return min(fact.valid_to or ends, ends)


_TIMES = ("valid_from", "valid_to", "order")


def _agrees(fact: model.Fact, held: model.Fact) -> bool:
    """Whether ``held`` says ``fact``'s valid time and order, where ``fact`` gives them: observing
    it again then changes no time (kg propose refuses a proposal that gives another one), so a
    merge observes it; one that says another time is carried over as a fact of its own."""
    return all(getattr(fact, name) is None or getattr(fact, name) == getattr(held, name) for name in _TIMES)


def id_taken(name: str, entity_id: str, holder: str | None) -> Refused:
    """The refusal of ``name``, whose id ``entity_id`` is another organization's: named ``holder``,
    with the ways out, or (None: to a token whose audience does not know it) unnamed."""
    if holder is None:
        return Refused(f"the id made from {name!r}, {entity_id}, is that of an organization already")
    return Refused(
        f"the id made from {name!r}, {entity_id}, is that of {holder!r} already",
        hint=f"give {name!r} an id of its own (--id), or make it a name of {holder!r} (--alias)",
    )
