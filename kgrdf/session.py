"""Reading the knowledge base: every answer comes from a named query in ``queries/``.

A :class:`Session` wraps an index that reflects the whole journal. Its methods return plain
values (dicts and lists) that the CLI renders for a person or prints as JSON.
"""

from functools import cached_property

from pyoxigraph import Literal, NamedNode

from kgrdf import clock, files, model, queries, vocab
from kgrdf.errors import BadInput, NotFound, Refused

MAX_HOPS = 4


def no_fact(fact_id: str) -> NotFound:
    """The answer for a fact that is not there, or not there for the one asking: the two read alike."""
    return NotFound(f"no fact {fact_id}", hint="kg facts SUBJECT --all lists a subject's facts")


def _now_literal(moment=None) -> Literal:
    return vocab.datetime_literal(clock.iso(moment or clock.now()))


UNKNOWN_AUDIENCE = "?"  # an audience that did not parse: it may hear nothing


class Session:
    def __init__(self, kb, backend):
        self.kb = kb
        self.backend = backend
        self.perspective = kb.perspective

    @cached_property
    def schema(self):
        from kgrdf import schema

        def load():
            return schema.of_index(self.backend, self.kb.path if self.kb.backend_kind != "memory" else None)

        return self._schema_bound("schema", load)

    @cached_property
    def notations(self) -> dict[str, str]:
        """Concept IRI -> notation (status, authority, source kind, sensitivity), from the schema graph."""

        def load():
            return {row["concept"]: row["notation"] for row in self.values("schema-concepts")}

        return self._schema_bound("notations", load)

    def _schema_bound(self, name: str, load):
        """What ``load`` reads from the schema graph: a resident process keeps it while the index
        holds the same schema (its digest names it), so a served request does not read it again."""
        resident = self.kb.resident
        if resident is None:
            return load()
        return resident.remember((name, self.backend.schema_digest()), load)

    # --- running queries --------------------------------------------------------------------------

    def rows(self, name: str, *, limit: int | None = None, **bindings) -> list[dict]:
        """Rows of the named query as terms. A query that reads the whole knowledge base takes the
        session's perspective (``$perspective``) unless it is given: no read sees another's. In a
        read for an audience, only the rows of the facts it may hear come back (see hear_as). With
        ``limit``, the first rows only (of a query that orders them): the engine is read no further."""
        query = queries.load(name)
        if "perspective" in query.params and "perspective" not in bindings:
            bindings["perspective"] = vocab.perspective_iri(self.perspective)
        if self._hearer is None or query.scope == "entities":
            return self.backend.select(query, bindings, limit=limit)
        return self._rows_for_hearer(name, query, bindings)[:limit]

    def _rows_for_hearer(self, name: str, query, bindings: dict) -> list[dict]:
        if "fact" in query.params:
            fact = bindings.get("fact")
            return self.backend.select(query, bindings) if fact is not None and self.may_hear(fact.value) else []
        rows = self.backend.select(query, bindings)
        if rows and "fact" not in rows[0]:
            raise Refused(f"{name}.rq cannot be asked for an audience: its rows do not name their facts")
        return [row for row in rows if row["fact"] is None or self.may_hear(row["fact"].value)]

    # --- the audience a read is for ------------------------------------------------------------------

    _hearer: str | None = None  # the audience a read is for (None: the owner's, who may hear all)
    _heard: dict  # fact IRI -> whether the hearer may hear it, as asked

    def hear_as(self, text: str | None) -> None:
        """Read, from now on, only what the audience ``text`` may hear (kgrdf.audience): the rows of
        every query are kept only for the facts that audience may hear one of the hearings of,
        before anything ranks, limits or packs them (each fact's hearings' audiences are read once,
        when a row first names it); a fact is shown with those hearings' provenance alone
        (model.heard_triples); an entity no such fact names does not exist (may_see); ``kg sparql``
        and ``kg export`` see a dataset of just that. An audience that does not parse fails closed:
        no fact, no entity but the self organization, and a note on stderr. None: the owner's."""
        import sys

        from kgrdf import audience

        if text is None:
            return
        try:
            self._hearer = audience.parse(text)
            if self._hearer == audience.OWNER:
                self._hearer = None  # the owner's read: everything, as without --audience
        except BadInput as exc:
            print(f"kg: {exc.message}: nothing is shown (an unknown audience fails closed)", file=sys.stderr)
            self._hearer = UNKNOWN_AUDIENCE
        self._heard = {}

    def may_hear(self, fact: str) -> bool:
        """Whether the read's audience may hear the fact ``fact`` (an IRI): one of its hearings."""
        from kgrdf import audience

        if self._hearer is None:
            return True
        if fact not in self._heard:
            rows = (
                []
                if self._hearer == UNKNOWN_AUDIENCE
                else self.backend.select(queries.load("fact-audience"), {"fact": NamedNode(fact)})
            )
            heard_in = [row["audience"].value if row.get("audience") is not None else None for row in rows]
            self._heard[fact] = audience.may_hear_any(heard_in, self._hearer)
        return self._heard[fact]

    def may_hear_in(self, heard_in: str | None) -> bool:
        """Whether the read's audience may hear what was heard in ``heard_in`` (an audience)."""
        from kgrdf import audience

        if self._hearer is None:
            return True
        return self._hearer != UNKNOWN_AUDIENCE and audience.may_hear(heard_in, self._hearer)

    def may_see(self, entity: str) -> bool:
        """Whether the entity ``entity`` (an IRI) exists for the read's audience: a fact it may hear
        names it, or it is the perspective's own organization (entity-audiences.rq; kgrdf.audience
        decides)."""
        from kgrdf import audience

        if self._hearer is None:
            return True
        seen = self.__dict__.setdefault("_seen", {})
        if entity not in seen:
            if "_self_iri" not in self.__dict__:
                rows = self.rows("self-organization", entities=self.entities_graph)
                self._self_iri = rows[0]["entity"].value if rows else None
            if entity == self._self_iri:
                seen[entity] = True
            elif self._hearer == UNKNOWN_AUDIENCE:
                seen[entity] = False
            else:
                rows = self.backend.select(queries.load("entity-audiences"), {"entity": NamedNode(entity)})
                heard_in = [row["audience"].value if row.get("audience") is not None else None for row in rows]
                seen[entity] = audience.may_hear_any(heard_in, self._hearer)
        return seen[entity]

    @property
    def hearer(self) -> str | None:
        """The audience the read is for, canonical (None: the owner's)."""
        return self._hearer

    def may_hear_anything(self) -> bool:
        """False for an audience that did not parse: it fails closed."""
        return self._hearer != UNKNOWN_AUDIENCE

    def may_read(self, graph: str) -> bool:
        """Whether a graph is the owner's to read in this perspective: its own, or the schema (a read
        for an audience runs on the dataset kgrdf.heard keeps for it instead)."""
        from kgrdf.schema import SCHEMA_GRAPH

        return graph == SCHEMA_GRAPH or graph.startswith(vocab.perspective_base(self.perspective))

    def values(self, name: str, **bindings) -> list[dict]:
        """Rows of the named query as plain Python values."""
        return [{k: queries.value(v) for k, v in row.items()} for row in self.rows(name, **bindings)]

    # --- entities ----------------------------------------------------------------------------------

    @property
    def entities_graph(self) -> NamedNode:
        return vocab.entities_graph(self.perspective)

    def entity_iri(self, entity_id: str) -> NamedNode:
        return vocab.entity_iri(self.perspective, entity_id)

    def entity(self, iri: NamedNode) -> model.Entity | None:
        """The entity ``iri`` names, or None; for an audience, None for one that does not exist for
        it (see may_see)."""
        found = self.named_entity(iri)
        if found is not None and not self.may_see(found.iri):
            return None
        return found

    def named_entity(self, iri: NamedNode) -> model.Entity | None:
        """The entity ``iri`` names, or None, as it is described: for an entity a fact the read's
        audience may hear names, which exists for that audience (kgrdf.audience), so that may_see's
        query of the audiences of every fact naming it is not asked."""
        return model.fold_entity(iri.value, self.rows("entity", entity=iri))

    def entity_by_id(self, entity_id: str) -> model.Entity | None:
        if not vocab.ID_PATTERN.match(entity_id):
            return None
        return self.entity(self.entity_iri(entity_id))

    def _survivor(self, entity: model.Entity) -> model.Entity:
        """An organization merged into another resolves to the one that was kept."""
        seen = {entity.iri}
        while entity.merged_into and entity.merged_into not in seen:
            seen.add(entity.merged_into)
            entity = self.entity(NamedNode(entity.merged_into)) or entity
        return entity

    def identify(self, text: str) -> dict:
        """Entities named ``text``: by name or strong alias (matches); by weak alias (suggestions).
        A merged organization's names lead to the one it was merged into."""
        matches, suggestions = {}, {}
        for row in self.values("identify", key=Literal(model.match_key(text)), entities=self.entities_graph):
            if not self.may_see(row["entity"]):
                continue  # it does not exist for this audience
            if row.get("mergedInto"):
                survivor = self._survivor(self.entity_by_id(row["id"]))
                row = {
                    **row,
                    "id": survivor.id,
                    "type": survivor.type,
                    "name": survivor.name,
                    "how": f"{row['how']} of {row['id']}, merged into it",
                }
            target = suggestions if row["how"] == "weak alias" else matches
            target.setdefault(
                row["id"],
                {
                    "id": row["id"],
                    "type": row["type"],
                    "name": row["name"],
                    "matched": row["how"],
                    "label": text.strip(),
                },
            )
        for entity_id in matches:
            suggestions.pop(entity_id, None)
        return {"text": text, "matches": list(matches.values()), "suggestions": list(suggestions.values())}

    def resolve(self, text: str, role: str = "entity") -> model.Entity:
        """The one entity ``text`` names (id, name or strong alias).

        Raises NotFound for an unknown name (with weak-alias suggestions) and Refused for an
        ambiguous one (with the candidates).
        """
        entity = self.entity_by_id(text.strip())
        if entity is not None:
            return self._survivor(entity)
        found = self.identify(text)
        if len(found["matches"]) == 1:
            return self._survivor(self.entity_by_id(found["matches"][0]["id"]))
        if len(found["matches"]) > 1:
            names = ", ".join(f"{m['id']} ({m['matched']} {m['label']!r})" for m in found["matches"])
            raise Refused(
                f"{role} {text!r} is ambiguous: it names {names}",
                hint="give the id instead",
                candidates=[m["id"] for m in found["matches"]],
            )
        hint = None
        if found["suggestions"]:
            hint = (
                "did you mean "
                + ", ".join(f"{s['id']} (weak alias {s['label']!r})" for s in found["suggestions"])
                + "?"
            )
        else:
            near = self.search(text)[:3]
            if near:
                hint = "did you mean " + ", ".join(f"{n['id']} ({n['name']!r})" for n in near) + "?"
            else:
                hint = "kg add-entity makes it; kg search finds names"
        raise NotFound(f"{role} {text!r} is not known", hint=hint, candidates=[s["id"] for s in found["suggestions"]])

    _HOW = {
        vocab.PREF_LABEL.value: "name",
        vocab.ALT_LABEL.value: "alias",
        vocab.WEAK_ALIAS.value: "weak alias",
        vocab.IDENTIFIER.value: "id",
    }

    def search(self, text: str) -> list[dict]:
        """Entities whose id, name, alias or weak alias contains ``text``, ignoring case.
        Exact matches first."""
        needle = model.match_key(text)
        if not needle:
            raise BadInput("search needs some text")
        found: dict[str, dict] = {}
        for row in self.values("search", text=Literal(needle), entities=self.entities_graph):
            if row["id"] not in found and not self.may_see(row["entity"]):
                continue  # it does not exist for this audience
            hit = found.setdefault(
                row["id"], {"id": row["id"], "type": row["type"], "name": row["name"], "matched": []}
            )
            hit["matched"].append({"how": self._HOW[row["labelProperty"]], "label": row["label"]})
        exact = [h for h in found.values() if any(model.match_key(m["label"]) == needle for m in h["matched"])]
        return exact + [h for h in found.values() if h not in exact]

    def perspectives(self) -> list[dict]:
        """Every perspective with data, and the knowledge base's default one: name and counts."""
        found: dict[str, dict] = {self.kb.default_perspective: {"entities": 0, "facts": 0}}
        for row in self.values("perspectives"):
            name = row["perspective"].removeprefix(vocab.KB).rstrip("/")
            entities = self.values(
                "perspective-entities", perspective=NamedNode(row["perspective"]), entities=vocab.entities_graph(name)
            )
            held = entities[0]["count"] if entities else 0
            found[name] = {"entities": held, "facts": row["count"] - held}
        return [
            {
                "perspective": name,
                **counts,
                "default": name == self.kb.default_perspective,
                "current": name == self.perspective,
            }
            for name, counts in sorted(found.items())
        ]

    # --- organizations -------------------------------------------------------------------------------

    def own_organization(self) -> model.Entity | None:
        """The perspective's self organization (kg org init), or None."""
        rows = self.rows("self-organization", entities=self.entities_graph)
        return self.entity(NamedNode(rows[0]["entity"].value)) if rows else None

    def quiet_customers(self, days: int) -> dict:
        """Customers not spoken to for ``days`` days (or never): customers-quiet.rq."""
        from datetime import timedelta

        if days < 0:
            raise BadInput(f"--quiet-days is a number of days, not {days}")
        ours = self.own_organization()
        try:
            cutoff = (clock.now() - timedelta(days=days)).date().isoformat()
        except OverflowError:
            cutoff = "0001-01-01"  # before the calendar: only customers never spoken to
        customers: dict[str, dict] = {}
        for row in self.values(
            "customers-quiet", us=NamedNode(ours.iri if ours else vocab.KB + "no-self-organization")
        ):
            customer = customers.setdefault(row["id"], {"id": row["id"], "name": row["name"], "last_contact": None})
            heard = row.get("contactFact") and self.may_hear(row["contactFact"])
            if heard and (customer["last_contact"] or "") < row["contact"]:
                customer["last_contact"] = row["contact"]  # coexisting values: the newer counts
        quiet = [c for c in customers.values() if (c["last_contact"] or "") < cutoff]
        quiet.sort(key=lambda c: (c["last_contact"] or "", c["id"]))
        return {"days": days, "before": cutoff, "self": ours.id if ours else None, "customers": quiet}

    def organizations_of(self, actors: list[str]) -> dict:
        """The organizations each actor is affiliated with now (the actors of a conversation)."""
        out = []
        for text in actors:
            actor = self.resolve(text, role="actor")
            rows = self.values("actor-organizations", actor=NamedNode(actor.iri))
            out.append(
                {
                    "actor": actor.id,
                    "name": actor.name,
                    "organizations": [{"id": r["id"], "name": r["name"], "fact": r["factId"]} for r in rows],
                }
            )
        return {"actors": out}

    def relations(self, text: str, hops: int = 2) -> dict:
        """An organization's relations (customer_of, vendor_of, parent_of), breadth first to ``hops``."""
        if hops not in (1, 2, 3):
            raise BadInput(f"--hops is 1, 2 or 3, not {hops}")
        start = self.resolve(text)
        seen, frontier, edges, listed = {start.iri: 0}, [start], [], set()
        for distance in range(1, hops + 1):
            following = []
            for org in frontier:
                for row in self.values("org-relations", org=NamedNode(org.iri)):
                    subject, target = (
                        (org.name, row["peerName"]) if row["direction"] == "out" else (row["peerName"], org.name)
                    )
                    edge = {
                        "fact": row["factId"],
                        "hop": distance,
                        "predicate": row["predicateKey"],
                        "sentence": row["sentence"]
                        .replace("{subject}", subject or "?")
                        .replace("{target}", target or "?"),
                    }
                    if edge["fact"] not in listed:
                        listed.add(edge["fact"])
                        edges.append(edge)
                    if row["peer"] not in seen:
                        seen[row["peer"]] = distance
                        following.append(model.Entity(row["peerId"], row["peer"], "organization", row["peerName"]))
            frontier = following
        return {"organization": start.as_json(), "hops": hops, "relations": edges}

    def _names(self):
        """The word-keyed matcher of every name and strong alias (labels.rq) and each entity's name.
        Built once per state of the index and kept in ``cache/`` beside it (derived, like the index;
        never in git; deleted by kg forget): loading it costs a fraction of reading 20k labels."""
        import json
        import os

        from kgrdf.privacy import NameIndex

        at = self.backend.position()
        path = self.kb.path / "cache" / f"names-{self.perspective}.json"
        key = f"{at[0]}:{at[1]}" if at else ""
        if path.parent.is_symlink():
            key = ""  # never read names from, or write them to, where a link points (a write refuses it)
        try:
            cached = json.loads(path.read_text(encoding="utf-8")) if key else {}
            if cached.get("at") == key and key:
                return NameIndex.load(cached["index"]), cached["names"]
        except (OSError, ValueError, KeyError):
            pass
        index, names = NameIndex(), {}
        for row in self.rows("labels", entities=self.entities_graph):
            iri, label = row["entity"].value, row["label"].value
            how = "name" if row["property"] == vocab.PREF_LABEL else "alias"
            if how == "name":
                names[iri] = label
            index.add(label, (iri, label, how))
        if key and self.kb.backend_kind != "memory":
            try:
                path.parent.mkdir(exist_ok=True)
                files.replace(
                    path,
                    json.dumps({"at": key, "index": index.dump(), "names": names}).encode("utf-8"),
                    suffix=f".{os.getpid()}.tmp",
                )  # readers share the lock
            except OSError:
                pass  # a read-only folder: the next read builds it again
        return index, names

    def mentions(self, text: str) -> list[dict]:
        """The known names and strong aliases ``text`` mentions, whole words, any case: at each place
        the longest name wins and overlapping shorter ones are dropped; a name two entities share is
        one mention with both (ambiguous). In the order of the text, with character offsets."""
        index, names = self._names()
        spans: dict[tuple[int, int], dict[str, dict]] = {}
        for start, end, (iri, label, how) in index.find(text):
            if not self.may_see(iri):
                continue  # it does not exist for this audience
            entities = spans.setdefault((start, end), {})
            entity_id = vocab.id_of(iri)
            if entity_id not in entities or how == "name":
                entities[entity_id] = {
                    "id": entity_id,
                    "type": entity_id.split("/", 1)[0],
                    "name": names.get(iri, label),
                    "matched": how,
                    "label": label,
                }
        out, taken_to = [], -1
        for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):
            if start < taken_to:
                continue  # inside or across a longer mention that starts earlier
            taken_to = end
            out.append(
                {
                    "start": start,
                    "end": end,
                    "text": text[start:end],
                    "entities": sorted(spans[(start, end)].values(), key=lambda e: e["id"]),
                }
            )
        return out

    # --- facts -------------------------------------------------------------------------------------

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
            rows = self._heard_rows(iri.value, rows)
        fact = model.fold_fact(iri.value, rows, self.schema)
        if fact is None:
            raise no_fact(fact_id)
        return fact

    def _heard_rows(self, fact: str, rows: list[dict]) -> list[dict]:
        """fact.rq's rows as the read's audience is shown them (model.heard_triples)."""
        assertion = [row for row in rows if row["kind"].value == "assertion"]
        kind = next((row["kind"] for row in rows if row["kind"].value != "assertion"), None)
        triples = [(row["s"], row["p"], row["o"]) for row in rows if row["kind"].value != "assertion"]
        shown = model.heard_triples(fact, triples, self.may_hear_in, self.may_hear)
        return assertion + [{"kind": kind, "s": s, "p": p, "o": o} for s, p, o in shown]

    def describe(self, fact: model.Fact) -> dict:
        """A fact as a plain dict for output, with names and its reviewer sentence."""
        predicate = self.schema.predicate_by_iri(fact.predicate)
        subject = self.entity(NamedNode(fact.subject))
        out = {
            "id": fact.id,
            "subject": subject.id if subject else vocab.id_of(fact.subject),
            "subject_name": subject.name if subject else None,
            "predicate": predicate.key if predicate else fact.predicate,
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
        if predicate:
            out["sentence"] = predicate.reads(out["subject_name"] or out["subject"], shown)
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
                    "predicate": row["predicateKey"],
                    "status": notations[row["statusConcept"]],
                    "authority": notations[row["authorityConcept"]],
                    "sentence": row["sentence"].replace("{subject}", subject_shown).replace("{target}", target_shown),
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

    def _with_sources(self, facts: list[dict]) -> list[dict]:
        """Each listed fact's sources and hearings, as the read's audience is shown them (one small
        query a fact: joined into the listing, Oxigraph would plan the path from fact to source as a
        scan of every source). The count of observations is the number of hearings shown; a
        successor the audience may not hear is not named."""
        for listed in facts:
            fact = self.fact(listed["id"], history=False)
            listed["sources"] = [{"kind": s.kind, "ref": s.ref} for s in fact.sources]
            listed["observations"] = fact.observations
            if fact.superseded_by:
                listed["superseded_by"] = vocab.id_of(fact.superseded_by)
            else:
                listed.pop("superseded_by", None)
            listed.update(self._heard_of(fact))
        return facts

    def sources_heard(self, fact: str) -> list[dict]:
        """The sources of the fact ``fact`` (an IRI) the read's audience is shown (those of the
        hearings it may hear), by kind and reference: one light query, for a context pack."""
        shown = {}
        for row in self.values("fact-sources", fact=NamedNode(fact)):
            if self.may_hear_in(row.get("audience")):
                shown.setdefault((row["kind"], row["ref"]), {"kind": row["kind"], "ref": row["ref"]})
        return list(shown.values())

    def mark_conflicts(self, facts: list[dict]) -> list[dict]:
        """Two current, confirmed values of a single-valued predicate (or of one key of a free-text
        attribute) of one subject conflict: each is marked with the others, and they are listed
        together, newest first, where the first of them was (§9: contradictions coexist until a
        person resolves them with kg supersede)."""
        groups: dict[tuple, list[dict]] = {}
        for fact in facts:
            predicate = self.schema.predicates.get(fact.get("predicate") or "")
            if (
                predicate is None
                or fact.get("status") != "confirmed"
                or fact.get("retired_at")
                or not (predicate.single_valued or predicate.key == "attribute")
            ):
                continue
            key = model.attribute_key(fact.get("value") or "") if predicate.key == "attribute" else None
            groups.setdefault((fact.get("subject"), predicate.key, key), []).append(fact)
        group_of: dict[int, list[dict]] = {}  # id(fact) -> its conflicting group, newest first
        for group in groups.values():
            if len(group) > 1:
                group.sort(key=lambda f: f.get("recorded_at") or "", reverse=True)
                for fact in group:
                    fact["conflicting"] = [other["id"] for other in group if other is not fact]
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

    def lookup(self, text: str, sources: bool = True) -> dict:
        """The entity ``text`` names and its current facts, as subject and as object; without
        ``sources``, the facts alone (no query a fact for its sources and hearings)."""
        entity = self.resolve(text)
        rows = self.values("lookup", entity=NamedNode(entity.iri), now=_now_literal())
        facts = self._group(rows, entity)
        if sources:
            facts = self._with_sources(facts)
        return {
            "entity": entity.as_json(),
            "facts": self.mark_conflicts([f for f in facts if f["direction"] == "out"]),
            "backlinks": [f for f in facts if f["direction"] == "in"],
        }

    def facts(
        self, text: str, predicate: str | None = None, as_of=None, known_at=None, everything: bool = False
    ) -> dict:
        """Facts about a subject: current (default), true at ``as_of``, held at ``known_at``, or all."""
        entity = self.resolve(text, role="subject")
        bindings = {"subject": NamedNode(entity.iri)}
        if predicate:
            bindings["predicate"] = NamedNode(self.schema.predicate(predicate).iri)
        if everything:
            rows = self.values("facts-all", **bindings)
        else:
            now = clock.now()
            bindings["validAt"] = _now_literal(as_of or known_at or now)
            bindings["knownAt"] = _now_literal(known_at or now)
            rows = self.values("facts", **bindings)
        out = {"entity": entity.as_json(), "facts": self.mark_conflicts(self._with_sources(self._group(rows, entity)))}
        if as_of:
            out["as_of"] = clock.iso(as_of)
        if known_at:
            out["known_at"] = clock.iso(known_at)
        return out

    def neighbors(self, text: str, hops: int = 1) -> dict:
        """Entities within ``hops`` current facts of an entity, breadth first, and the facts between."""
        if not 1 <= hops <= MAX_HOPS:
            raise BadInput(f"--hops must be between 1 and {MAX_HOPS}")
        start = self.resolve(text)
        now = _now_literal()
        seen = {start.id: 0}
        nodes = [{"id": start.id, "type": start.type, "name": start.name, "distance": 0}]
        edges, seen_edges = [], set()
        frontier = [start]
        for distance in range(1, hops + 1):
            next_frontier = []
            for node in frontier:
                for row in self.values("neighbors", entity=NamedNode(node.iri), now=now):
                    if row["id"] not in seen_edges:
                        seen_edges.add(row["id"])
                        src, dst = (node.id, row["peerId"]) if row["direction"] == "out" else (row["peerId"], node.id)
                        edges.append(
                            {
                                "fact": row["id"],
                                "from": src,
                                "predicate": row["predicateKey"],
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
            event["changes"] = {
                name: {"before": [self._shown(v, name) for v in before], "after": [self._shown(v, name) for v in after]}
                for name, (before, after) in update.changes.items()
                if name != model.SOURCES
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

    # --- raw SPARQL and export -----------------------------------------------------------------------

    def sparql(self, text: str, timeout: float | None = None):
        """Run a user's SPARQL query over the perspective's data graphs and the schema graph: the
        dataset the engine sees holds nothing else (for an audience, only what it may read: see
        _heard_quads). The text passes :func:`kgrdf.sandbox.check` first (no SERVICE, bounded size
        and nesting) and the query runs for at most ``timeout`` seconds (else
        :func:`kgrdf.sandbox.time_limit`) and :func:`kgrdf.sandbox.memory_limit`; its answer is
        returned read whole."""
        from kgrdf import sandbox

        sandbox.check(text)
        if timeout is None:
            timeout = sandbox.time_limit()
        if self._hearer is not None:
            import time

            from kgrdf import heard

            started = time.monotonic()
            with heard.held(self, deadline=started + timeout, timeout=timeout) as dataset:
                left = timeout - (time.monotonic() - started)  # gathering it counts in the limit
                if left <= 0:
                    raise heard.past_limit(timeout)
                return dataset.backend.sparql(text, timeout=left, memory=sandbox.memory_limit(), forked=dataset.release)
        backend = self.backend
        scope = None  # the whole dataset: the knowledge base holds no other perspective
        if self._other_graphs():
            scope = [g for g in backend.graphs() if self.may_read(g.value)]
        return backend.sparql(text, graphs=scope, timeout=timeout, memory=sandbox.memory_limit())

    def _other_graphs(self) -> bool:
        """Whether the index holds an entity or fact of another perspective (one scan of
        kg:perspective), remembered by a resident process until the index moves on."""
        mine = vocab.perspective_iri(self.perspective)

        def scan() -> bool:
            return bool(self.backend.select(queries.load("other-perspectives"), {"perspective": mine}, limit=1))

        resident = self.kb.resident
        if resident is None:
            return scan()
        return resident.remember(("other-perspectives", self.perspective, self.backend.position()), scan)

    def export(self, fmt: str) -> bytes:
        """The knowledge base as TriG, N-Quads or JSON-LD (the whole dataset), or as Turtle
        (the current knowledge as one plain graph: entity descriptions and current fact triples)."""
        import pyoxigraph as ox

        formats = {
            "trig": ox.RdfFormat.TRIG,
            "nquads": ox.RdfFormat.N_QUADS,
            "jsonld": ox.RdfFormat.JSON_LD,
            "turtle": ox.RdfFormat.TURTLE,
        }
        if fmt not in formats:
            raise BadInput(f"unknown export format {fmt!r}; use one of {', '.join(formats)}")
        if fmt == "turtle":
            from pyoxigraph import Triple

            rows = self.rows("graph-current", now=_now_literal())
            if self._hearer is not None:  # the descriptions of the entities the facts shown name
                named = {r["s"].value for r in rows if r["fact"] is not None}
                named |= {r["o"].value for r in rows if r["fact"] is not None and isinstance(r["o"], NamedNode)}
                ours = self.own_organization()
                named |= {ours.iri} if ours else set()
                rows = [r for r in rows if r["fact"] is not None or r["s"].value in named]
            data = list(dict.fromkeys(Triple(r["s"], r["p"], r["o"]) for r in rows))
        elif self._hearer is not None:
            from kgrdf import heard

            with heard.held(self) as dataset:
                data = list(dataset.store)
        else:
            data = [q for q in self.backend.quads() if self.may_read(q.graph_name.value)]
        prefixes = {k: v for k, v in vocab.PREFIXES.items()}
        if fmt in ("trig", "turtle"):
            return ox.serialize(data, format=formats[fmt], prefixes=prefixes)
        return ox.serialize(data, format=formats[fmt])
