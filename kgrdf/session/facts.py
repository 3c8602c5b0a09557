"""Reads of facts: one fact and where it was heard, a subject's facts, neighbors, history, stats."""

import dataclasses

from pyoxigraph import NamedNode

from kgrdf import clock, model, schema, vocab
from kgrdf.errors import BadInput
from kgrdf.session.reading import AT_ONCE, MAX_HOPS, Reading, no_fact, now_literal

_AUDIENCE = vocab.kg("audience")


class FactReads(Reading):
    """fact, describe, lookup, facts, neighbors, history, stats."""

    def fact_iri(self, fact_id: str) -> NamedNode:
        fact_id = fact_id.strip()
        if not vocab.FACT_ID_PATTERN.match(fact_id):
            raise BadInput(f"{fact_id!r} is not a fact id; fact ids look like f-3k9x2a")
        return vocab.fact_iri(self.perspective, fact_id)

    def fact(self, fact_id: str, history: bool = True) -> model.Fact:
        """The fact ``fact_id`` with its update records (without them: ``history`` off), as the read's
        audience is shown it. Raises NotFound."""
        fact_id = fact_id.strip()
        iri = self.fact_iri(fact_id)
        rows = self.rows("fact" if history else "fact-heard", fact=iri)
        if self._hearer is not None and rows:
            if not history and self._partly_heard(iri.value, rows):
                rows = self.rows("fact", fact=iri)
            rows = self._heard_rows(iri.value, rows)
        fact = model.fold_fact(iri.value, rows, self.schema)
        if fact is None:
            raise no_fact(fact_id)
        return fact if history else dataclasses.replace(fact, updates=[])

    def facts_heard(self, fact_ids: list[str], history: bool = False) -> dict[str, model.Fact]:
        """The facts ``fact_ids`` without their update records (with them: ``history``), as
        ``fact`` gives each, by id, read by one query for each ``AT_ONCE`` of them. Raises
        NotFound for one that is not there."""
        iris = {self.fact_iri(fact_id.strip()).value: fact_id for fact_id in fact_ids}
        rows_of: dict[str, list[dict]] = {iri: [] for iri in iris}
        name = "fact" if history else "fact-heard"
        for row in self.rows_for_each(name, "fact", [NamedNode(iri) for iri in iris], AT_ONCE):
            rows_of[row["fact"].value].append(row)
        if self._hearer is not None and not history:
            partly = [iri for iri, rows in rows_of.items() if rows and self._partly_heard(iri, rows)]
            for iri in partly:
                rows_of[iri] = []
            for row in self.rows_for_each("fact", "fact", [NamedNode(iri) for iri in partly], AT_ONCE):
                rows_of[row["fact"].value].append(row)
        found = {}
        for iri, rows in rows_of.items():
            if self._hearer is not None and rows:
                rows = self._heard_rows(iri, rows)
            fact = model.fold_fact(iri, rows, self.schema)
            if fact is None:
                raise no_fact(iris[iri])
            found[iris[iri]] = fact if history else dataclasses.replace(fact, updates=[])
        return found

    def _partly_heard(self, fact: str, rows: list[dict]) -> bool:
        """Whether the read's audience does not hear one of a fact's hearings (of fact-heard.rq's
        rows): then what the fact shows it (its authority, its flags) is read from its update
        records (model.heard_triples), which that light read leaves out."""
        hearings = {row["o"].value for row in rows if row["s"].value == fact and row["p"] == model.HEARD_IN}
        audiences = {
            row["s"].value: row["o"].value for row in rows if row["p"] == _AUDIENCE and row["s"].value in hearings
        }
        return any(not self.may_hear_in(audiences.get(hearing, "owner")) for hearing in hearings)

    def _heard_rows(self, fact: str, rows: list[dict]) -> list[dict]:
        """fact.rq's rows as the read's audience is shown them (heard.provenance_shown)."""
        from kgrdf import heard

        assertion = [row for row in rows if row["kind"].value == "assertion"]
        kind = next((row["kind"] for row in rows if row["kind"].value != "assertion"), None)
        triples = [(row["s"], row["p"], row["o"]) for row in rows if row["kind"].value != "assertion"]
        shown = heard.provenance_shown(fact, triples, self.may_hear_in, self.may_hear, self.may_hear_promotion)
        return assertion + [{"kind": kind, "s": s, "p": p, "o": o} for s, p, o in shown]

    def describe(self, fact: model.Fact) -> dict:
        """A fact as a plain dict for output, with names and its reviewer sentence."""
        predicate = self.schema.predicate_by_iri(fact.predicate)
        subject = self.entity(NamedNode(fact.subject))
        out = {
            "id": fact.id,
            "subject": subject.id if subject else vocab.id_of(fact.subject),
            "subject_name": subject.name if subject else None,
            "predicate": predicate.key if predicate else schema.key_of(fact.predicate),
        }
        if fact.is_entity_target:
            target = self.entity(fact.target)
            out["object"] = target.id if target else vocab.id_of(fact.target.value)
            out["object_name"] = target.name if target else None
            shown = out["object_name"] or out["object"]
        else:
            out["value"] = fact.target.value
            shown = fact.target.value
        for name in (
            "status",
            "authority",
            "sensitivity",
            "valid_from",
            "valid_to",
            "recorded_at",
            "retired_at",
            "observed_at",
            "observations",
            "last_confirmed_at",
            "reviewed_by",
            "prevents_rework",
            "order",
        ):
            value = getattr(fact, name)
            if value is not None:
                out[name] = value
        if fact.superseded_by:
            out["superseded_by"] = vocab.id_of(fact.superseded_by)
        recorded = next((u for u in fact.updates if u.action == "record" and u.reason), None)
        if recorded:
            out["reason"] = recorded.reason  # why it was recorded (kg propose --reason)
        out["sources"] = [
            {"kind": s.kind, "ref": s.ref, **({"quote": s.quote} if s.quote else {})} for s in fact.sources
        ]
        out.update(self._heard_of(fact))
        out["sentence"] = schema.read_out(
            predicate.sentence if predicate else None, out["subject_name"] or out["subject"], shown, fact.predicate
        )
        return out

    def _named_in_hearing(self, iri: str) -> model.Entity | None:
        """A speaker or their organization then, named as a hearing the read may hear is shown (whether
        or not the entity itself exists for the read's audience)."""
        if self._hearer is None:
            return self.entity(NamedNode(iri))
        named = self.__dict__.setdefault("_named", {})
        if iri not in named:
            named[iri] = model.fold_entity(iri, self.rows("entity", entity=NamedNode(iri)))
        return named[iri]

    def _heard_of(self, fact: model.Fact) -> dict:
        """Where a fact was heard, shown: the audiences, and each hearing with its sources, speaker
        (and their organization then), message and time; the latest speaker and message beside them;
        extraction, a claim's role and whether it is verified, what it was promoted to or came from."""
        hearings = []
        for hearing in fact.hearings:
            shown = {
                "audience": hearing.audience or "owner",
                "heard_at": hearing.heard_at,
                "sources": [{"kind": s.kind, "ref": s.ref} for s in hearing.sources],
            }
            for name in ("said_by", "speaker_affiliation"):
                iri = getattr(hearing, name)
                if iri:
                    entity = self._named_in_hearing(iri)
                    shown[name] = entity.id if entity else vocab.id_of(iri)
                    if entity:
                        shown[name + "_name"] = entity.name
            for name in ("message", "confidence", "span"):
                if getattr(hearing, name) is not None:
                    shown[name] = getattr(hearing, name)
            hearings.append({k: v for k, v in shown.items() if v is not None})
        out = {"audiences": list(dict.fromkeys(h["audience"] for h in hearings)) or ["owner"], "hearings": hearings}
        said = next((h for h in reversed(hearings) if h.get("said_by")), None)
        if said:
            out.update(
                {
                    k: said[k]
                    for k in ("said_by", "said_by_name", "speaker_affiliation", "speaker_affiliation_name", "message")
                    if k in said
                }
            )
        elif any(h.get("message") for h in hearings):
            out["message"] = next(h["message"] for h in reversed(hearings) if h.get("message"))
        extracted = next((h for h in reversed(hearings) if "confidence" in h or "span" in h), {})
        out.update({k: extracted[k] for k in ("confidence", "span") if k in extracted})
        for name in ("promoted_to", "merged_from"):
            iri = getattr(fact, name)
            if iri:
                out[name] = vocab.id_of(iri)
        for name in ("extracted", "claimed_role", "verified"):
            if getattr(fact, name) is not None:
                out[name] = getattr(fact, name)
        return out

    def _group(self, rows: list[dict], entity: model.Entity) -> list[dict]:
        """Fact rows (one per source) folded into one dict per fact, in the query's order.

        ``?peer`` is the other end of each fact: its object, or its subject when ``direction`` is "in".
        """
        facts: dict[str, dict] = {}
        notations = self.notations
        for row in rows:
            fact = facts.get(row["id"])
            if fact is None:
                peer_shown = row.get("peerName") or row.get("peerId") or row["peer"]
                if row.get("direction") == "in":
                    ends = {
                        "subject": row.get("peerId"),
                        "subject_name": row.get("peerName"),
                        "object": entity.id,
                        "object_name": entity.name,
                    }
                    subject_shown, target_shown = peer_shown, entity.name
                else:
                    ends = {"subject": entity.id, "subject_name": entity.name}
                    if row.get("peerId"):
                        ends.update({"object": row["peerId"], "object_name": row.get("peerName")})
                    else:
                        ends["value"] = row["peer"]
                    subject_shown, target_shown = entity.name, peer_shown
                fact = {
                    "id": row["id"],
                    **ends,
                    "predicate": row["predicateKey"] or schema.key_of(row["predicate"]),
                    "status": notations[row["statusConcept"]],
                    "authority": notations[row["authorityConcept"]],
                    "sentence": schema.read_out(row["sentence"], subject_shown, target_shown, row["predicate"]),
                }
                for key, name in (
                    ("validFrom", "valid_from"),
                    ("validTo", "valid_to"),
                    ("recordedAt", "recorded_at"),
                    ("retiredAt", "retired_at"),
                    ("observations", "observations"),
                    ("order", "order"),
                    ("direction", "direction"),
                ):
                    if row.get(key) is not None:
                        fact[name] = row[key]
                if row.get("supersededBy"):
                    fact["superseded_by"] = vocab.id_of(row["supersededBy"])
                if row.get("preventsRework"):
                    fact["prevents_rework"] = True
                facts[row["id"]] = fact
        return list(facts.values())

    def with_sources(self, facts: list[dict]) -> list[dict]:
        """Each listed fact's sources and hearings, as the read's audience is shown them (read by
        facts_heard, the facts given as values: joined into the listing, Oxigraph would plan the
        path from fact to source as a scan of every source). The count of observations is the
        number of hearings shown; a successor the audience may not hear is not named; its authority
        and its prevents-rework flag are as the hearings the audience hears left them."""
        heard = self.facts_heard([listed["id"] for listed in facts])
        fields = ("recorded_at", "observations") + (() if self._hearer is None else ("authority", "prevents_rework"))
        for listed in facts:
            self._shown_as(listed, heard[listed["id"]], fields)
            if not listed.get("prevents_rework"):
                listed.pop("prevents_rework", None)  # (a fact without the flag is listed without it)
        return facts

    def rework_as_heard(self, facts: list[dict]) -> list[dict]:
        """The listed facts (of a read that does not read their sources: a context pack) with their
        prevents-rework flag as the read's audience is shown it: a flag set by a hearing it does not
        hear is taken off (with_sources does it, and more, for a listing with its sources)."""
        flagged = [listed["id"] for listed in facts if listed.get("prevents_rework")]
        if self._hearer is None or not flagged:
            return facts
        heard = self.facts_heard(flagged)
        for listed in facts:
            if listed["id"] in heard and not heard[listed["id"]].prevents_rework:
                listed["prevents_rework"] = False
        return facts

    def _rework_first(self, facts: list[dict]) -> list[dict]:
        """A listing in its query's order (facts.rq, lookup.rq: by direction, what prevents rework
        first, predicate, order, the entity at the other end, id; what a query leaves unbound
        first) once the read's audience is shown their flags (with_sources): one a hearing it does
        not hear flagged does not come first."""

        def key(listed: dict) -> tuple:
            peer = listed.get("subject") if listed.get("direction") == "in" else listed.get("object")
            order = listed.get("order")
            return (
                listed.get("direction") or "",
                not listed.get("prevents_rework"),
                listed["predicate"],
                (order is not None, order or 0),
                (peer is not None, peer or ""),
                listed["id"],
            )

        if self._hearer is not None:
            facts.sort(key=key)
        return facts

    def _shown_as(self, listed: dict, fact: model.Fact, fields: tuple) -> None:
        """A listed fact given ``fields``, its successor, sources and hearings as the read's audience
        is shown ``fact`` (for an audience, recorded when it first heard it: model.heard_triples)."""
        for name in fields:
            value = getattr(fact, name)
            if value is None:
                listed.pop(name, None)
            else:
                listed[name] = value
        if fact.superseded_by:
            listed["superseded_by"] = vocab.id_of(fact.superseded_by)
        else:
            listed.pop("superseded_by", None)
        listed["sources"] = [{"kind": s.kind, "ref": s.ref} for s in fact.sources]
        listed.update(self._heard_of(fact))

    def _as_held(self, facts: list[dict], known_at: str, valid_at: str, everything: bool = False) -> list[dict]:
        """The listed facts as the knowledge base held them at ``known_at`` (model.held_at: each
        read with its update records, those made later undone), with the sources and hearings held
        then; kept when it was recorded by then and the read's audience had heard it, and, unless
        ``everything``, when as held then it was current and true at ``valid_at``."""
        kept = []
        read = self.facts_heard([listed["id"] for listed in facts], history=True)
        for listed in facts:
            held = model.held_at(read[listed["id"]], known_at)
            if held is None or not (everything or model.true_at(held, valid_at)):
                continue
            fields = (
                "status",
                "authority",
                "valid_from",
                "valid_to",
                "recorded_at",
                "retired_at",
                "observations",
                "order",
                "prevents_rework",
            )
            self._shown_as(listed, held, fields)
            if not listed.get("prevents_rework"):
                listed.pop("prevents_rework", None)  # (as a read of now lists a fact without the flag)
            kept.append(listed)
        if not everything:  # in facts.rq's order, by what was held then (an order or a flag set later was not)
            kept.sort(
                key=lambda f: (
                    not f.get("prevents_rework"),
                    f["predicate"],
                    f.get("order") is not None,
                    f.get("order") or 0,
                    "object" in f,
                    f.get("object") or "",
                    f["id"],
                )
            )
        return kept

    def true_as_held(self, fact_ids: list[str], known_at: str, valid_at: str) -> set[str]:
        """Those of the facts ``fact_ids`` that, as the knowledge base held them at ``known_at``
        (model.held_at), were current and true at ``valid_at`` (xsd:dateTime strings, UTC)."""
        read = self.facts_heard(fact_ids, history=True)
        return {
            fact_id
            for fact_id, fact in read.items()
            if (held := model.held_at(fact, known_at)) is not None and model.true_at(held, valid_at)
        }

    def sources_heard(self, fact: str) -> list[dict]:
        """The sources of the fact ``fact`` (an IRI) the read's audience is shown (those of the
        hearings it may hear), by kind and reference: one light query, for a context pack."""
        shown = {}
        for row in self.values("fact-sources", fact=NamedNode(fact)):
            if self.may_hear_in(row.get("audience")):
                shown.setdefault((row["kind"], row["ref"]), {"kind": row["kind"], "ref": row["ref"]})
        return list(shown.values())

    def mark_conflicts(self, facts: list[dict], known_at: str | None = None) -> list[dict]:
        """Two current, confirmed values of a single-valued predicate (or of one key of a free-text
        attribute) of one subject whose valid times overlap conflict ("postgres 14 until March" and
        "postgres 16 from March" do not): each is marked with the others, and they are listed
        together, newest first, where the first of them was (§9: contradictions coexist until a
        person resolves them with kg supersede). Newest by the hearings heard by ``known_at``, for a
        read of what the knowledge base held then."""
        groups: dict[tuple, list[dict]] = {}
        for fact in facts:
            predicate = self.schema.predicates.get(fact.get("predicate") or "")
            if (
                predicate is None
                or fact.get("status") != "confirmed"
                or fact.get("retired_at")
                or not predicate.one_value
            ):
                continue
            key = model.attribute_key(fact.get("value") or "") if predicate.key == "attribute" else None
            groups.setdefault((fact.get("subject"), predicate.key, key), []).append(fact)
        group_of: dict[int, list[dict]] = {}  # id(fact) -> its conflicting group, newest first
        for values in groups.values():
            for group in _overlapping(values):
                heard = self._heard_last(group, known_at)
                group.sort(key=lambda fact: heard[fact["id"]], reverse=True)
                for fact in group:
                    fact["conflicting"] = [other["id"] for other in group if other is not fact and _share(fact, other)]
                    group_of[id(fact)] = group
        out, placed = [], set()
        for fact in facts:
            group = group_of.get(id(fact))
            if group is None:
                out.append(fact)
            elif id(group) not in placed:
                placed.add(id(group))
                out.extend(group)
        return out

    def _heard_last(self, facts: list[dict], known_at: str | None = None) -> dict[str, str]:
        """Fact id -> when the read's audience last heard the value: its newest hearing it may hear
        (by ``known_at``), read for all of ``facts`` at once. Not when the fact was recorded: a merge
        records the duplicate's facts anew, at the merge, with their hearings' own times (a value
        heard a month before the other was listed as the newer)."""
        from kgrdf import audience

        hearer = self._hearer or audience.OWNER
        read = self.facts_heard([fact["id"] for fact in facts])
        out = {}
        for fact in facts:
            heard = [
                h.heard_at
                for h in read[fact["id"]].hearings
                if h.heard_at and audience.may_hear(h.audience, hearer) and (known_at is None or h.heard_at <= known_at)
            ]
            out[fact["id"]] = max(heard, default=fact.get("recorded_at") or "")
        return out

    def lookup(self, text: str, sources: bool = True) -> dict:
        """The entity ``text`` names and its current facts, as subject and as object; without
        ``sources``, the facts alone (with_sources reads them for those shown)."""
        entity = self.resolve(text)
        rows = self.values("lookup", entity=NamedNode(entity.iri), now=now_literal())
        facts = self._group(rows, entity)
        facts = self._rework_first(self.with_sources(facts) if sources else self.rework_as_heard(facts))
        return {
            "entity": entity.as_json(),
            "facts": self.mark_conflicts([f for f in facts if f["direction"] == "out"]),
            "backlinks": [f for f in facts if f["direction"] == "in"],
        }

    def facts(
        self,
        text: str,
        predicate: str | None = None,
        as_of=None,
        known_at=None,
        everything: bool = False,
        sources: bool = True,
    ) -> dict:
        """Facts about a subject: current (default), true at ``as_of``, held at ``known_at``, or all;
        without ``sources``, the facts alone (with_sources reads them for those shown)."""
        entity = self.resolve(text, role="subject")
        bindings = {"subject": NamedNode(entity.iri)}
        if predicate:
            bindings["predicate"] = NamedNode(self.schema.predicate(predicate).iri)
        if everything:
            rows = self.values("facts-all", **bindings)
        else:
            now = clock.now()
            bindings["validAt"] = now_literal(as_of or known_at or now)
            bindings["knownAt"] = now_literal(known_at or now)
            rows = self.values("facts", **bindings)
        facts = self._group(rows, entity)
        merged = self._merged_facts_held(entity, bindings, facts, everything) if known_at else []
        facts += merged
        if known_at:
            facts = self._as_held(facts, clock.iso(known_at), clock.iso(as_of or known_at), everything)
            if merged and everything:  # one whose carried copy was held then too is shown once: as the copy
                held = {f["id"] for f in facts}
                carried = {f["id"] for f in merged if f.get("superseded_by") in held}
                facts = [f for f in facts if f["id"] not in carried]
        else:  # (without sources, a page of them is read later: its flags and order are the audience's now)
            facts = self.with_sources(facts) if sources else self.rework_as_heard(facts)
            facts = facts if everything else self._rework_first(facts)  # (facts-all.rq: by predicate and time)
        out = {
            "entity": entity.as_json(),
            "facts": self.mark_conflicts(facts, clock.iso(known_at) if known_at else None),
        }
        if as_of:
            out["as_of"] = clock.iso(as_of)
        if known_at:
            out["known_at"] = clock.iso(known_at)
        return out

    def _merged_facts_held(
        self, entity: model.Entity, bindings: dict, shown: list[dict], everything: bool = False
    ) -> list[dict]:
        """The facts of each organization merged into ``entity`` that the knowledge base held at
        ``bindings``' knownAt (every one of them, whatever its valid time, with ``everything``; the
        caller keeps those held then), each about the one it was about then. A merge carries a duplicate's
        facts over as new ones, recorded when it was made: asked what it held before then, the
        knowledge base held them about the duplicate, whose name now leads here. One whose carried
        copy is shown as well (asked after the merge, of a valid time before it) is left out. One
        merged into one merged into ``entity`` is read too, nearest first: each merge carried the
        facts one step on."""
        found = []
        ids = {fact["id"] for fact in shown}
        seen, todo = {entity.iri}, [entity.iri]
        while todo:
            for merged in sorted(set(self.merges().get(todo.pop(0), ())) - seen):
                seen.add(merged)
                todo.append(merged)
                duplicate = self.named_entity(NamedNode(merged))
                if duplicate is None:
                    continue
                at = {**bindings, "subject": NamedNode(merged)}
                rows = self.values("facts-all", **at) if everything else self.values("facts", **at)
                held = [f for f in self._group(rows, duplicate) if everything or f.get("superseded_by") not in ids]
                ids |= {fact["id"] for fact in held}
                found += held
        return found

    def neighbors(self, text: str, hops: int = 1) -> dict:
        """Entities within ``hops`` current facts of an entity, breadth first, and the facts between."""
        if not 1 <= hops <= MAX_HOPS:
            raise BadInput(f"hops must be between 1 and {MAX_HOPS}, not {hops}")
        start = self.resolve(text)
        now = now_literal()
        seen = {start.id: 0}
        nodes = [{"id": start.id, "type": start.type, "name": start.name, "distance": 0}]
        edges, seen_edges = [], set()
        frontier = [start]
        for distance in range(1, hops + 1):
            next_frontier = []
            # The facts of the whole frontier, AT_ONCE entities a query (a query each made a
            # hub of 2,000 links take 3 s at two hops); each entity's rows in the query's order.
            rows_of: dict[str, list[dict]] = {}
            for at in range(0, len(frontier), AT_ONCE):
                asked = [NamedNode(node.iri) for node in frontier[at : at + AT_ONCE]]
                for row in self.values("neighbors", entity=asked, now=now):
                    rows_of.setdefault(row["entity"], []).append(row)
            for node in frontier:
                for row in rows_of.get(node.iri, ()):
                    if row["id"] not in seen_edges:
                        seen_edges.add(row["id"])
                        src, dst = (node.id, row["peerId"]) if row["direction"] == "out" else (row["peerId"], node.id)
                        edges.append(
                            {
                                "fact": row["id"],
                                "from": src,
                                "predicate": row["predicateKey"] or schema.key_of(row["predicate"]),
                                "to": dst,
                                "status": row["status"],
                            }
                        )
                    if row["peerId"] not in seen:
                        seen[row["peerId"]] = distance
                        nodes.append(
                            {
                                "id": row["peerId"],
                                "type": row["peerType"],
                                "name": row["peerName"],
                                "distance": distance,
                            }
                        )
                        next_frontier.append(model.Entity(row["peerId"], row["peer"], row["peerType"], row["peerName"]))
            frontier = next_frontier
        return {"entity": start.as_json(), "hops": hops, "nodes": nodes, "edges": edges}

    def history(self, fact_id: str) -> dict:
        """A fact and every change to it, oldest first, with what each field held before (the
        sources: the ones each change added)."""
        fact = self.fact(fact_id)
        events = [{"at": fact.recorded_at, "action": "recorded"}]
        for update in fact.updates:
            if update.action == "record":  # why it was recorded (Writer._record): said on its first line
                if update.reason:
                    events[0]["reason"] = update.reason
                continue
            event = {"at": update.at, "action": update.action, "transaction": update.seq}
            if update.reason:
                event["reason"] = update.reason
            event["changes"] = {  # (a change whose values the audience may not hear is none to it)
                name: {"before": [self._shown(v, name) for v in before], "after": [self._shown(v, name) for v in after]}
                for name, (before, after) in update.changes.items()
                if name != model.SOURCES and (before or after)
            }
            taken, added = update.changes.get(model.SOURCES, ([], []))
            if added or taken:  # the sources it added (and any it took away), not all it held
                event["changes"][model.SOURCES] = {"added": added, **({"removed": taken} if taken else {})}
            events.append(event)
        later = {label for u in fact.updates for label in u.changes.get(model.SOURCES, ([], []))[1]}
        first = [s.label() for s in fact.sources if s.label() not in later]
        if first:  # the sources it was recorded with: all it holds but the ones a change added
            events[0]["changes"] = {model.SOURCES: {"added": first}}
        return {"fact": self.describe(fact), "history": events}

    @staticmethod
    def _shown(value, field: str):
        if field == "superseded_by" and isinstance(value, str):
            return vocab.id_of(value)
        return value

    def stats(self) -> dict:
        out = {"entities": {}, "facts": {}}
        alone = not self._other_graphs()
        name = "stats-alone" if alone else "stats"
        for row in self.values(name, entities=self.entities_graph):
            out[row["what"]][row["key"]] = row["count"]
        out["entity_count"] = sum(out["entities"].values())
        out["fact_count"] = sum(out["facts"].values())
        position = self.kb.view()
        out["journal"] = {"replica": self.kb.replica, "transactions": position.seq}
        out["backend"] = self.backend.name
        return out


def _share(a: dict, b: dict) -> bool:
    """Whether two facts (as shown) are true at a shared instant (model.shared_time)."""
    return model.shared_time(a.get("valid_from"), a.get("valid_to"), b.get("valid_from"), b.get("valid_to")) is not None


def _overlapping(facts: list[dict]) -> list[list[dict]]:
    """The facts in groups of two or more linked by shared valid time (each shares an instant with
    another of its group), in their order; a fact that shares none with the others is in none."""
    groups: list[list[dict]] = []
    for fact in facts:
        linked = [group for group in groups if any(_share(fact, other) for other in group)]
        merged = [fact] + [other for group in linked for other in group]
        groups = [group for group in groups if not any(group is other for other in linked)] + [merged]
    return [group for group in groups if len(group) > 1]
