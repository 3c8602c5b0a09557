"""Reads about organizations (§9) and the names a message mentions."""

from pyoxigraph import NamedNode

from kgrdf import clock, files, model, schema, vocab
from kgrdf.errors import BadInput
from kgrdf.session.reading import Reading


class OrganizationReads(Reading):
    """own_organization, quiet_customers, organizations_of, relations, mentions."""

    def own_organization(self) -> model.Entity | None:
        """The perspective's self organization (kg org init), or None."""
        rows = self.rows("self-organization", entities=self.entities_graph)
        return self.entity(NamedNode(rows[0]["entity"].value)) if rows else None

    def quiet_customers(self, days: int) -> dict:
        """Customers not spoken to for ``days`` days (or never): customers-quiet.rq."""

        if days < 0:
            raise BadInput(f"--quiet-days is a number of days, not {days}")
        ours = self.own_organization()
        cutoff = clock.days_before(clock.now(), days).date().isoformat()  # (year 1 at the earliest)
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
                        "sentence": schema.read_out(row["sentence"], subject or "?", target or "?"),
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

        from kgrdf.privacy import NameIndex

        at = self.backend.position()
        path = self.kb.path / "cache" / f"names-{self.perspective}.json"
        key = f"{NameIndex.FORMAT}:{at[0]}:{at[1]}" if at else ""
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
                    suffix=files.own_suffix(),
                )  # readers share the lock
            except OSError:
                pass  # a read-only folder: the next read builds it again
        return index, names

    def mentions(self, text: str) -> list[dict]:
        """The known names and strong aliases ``text`` mentions, whole words, any case: where names
        overlap the longest wins, wherever each starts (of two as long, the first); a name two entities share is
        one mention with both (ambiguous). In the order of the text, with character offsets."""
        index, names = self._names()
        spans: dict[tuple[int, int], dict[str, dict]] = {}
        merged = {into for survivor in self.merges().values() for into in survivor}
        for start, end, (iri, label, how) in index.find(text):
            if iri in merged or not self.may_see(iri):
                continue  # merged into another (which took its names), or not there for this audience
            if how != "name" and label in self.hidden_names(iri):
                continue  # a name of a merged organization it may not know
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
        from bisect import bisect, insort

        taken: list[tuple[int, int]] = []  # apart from each other, in the order of the text
        for start, end in sorted(spans, key=lambda span: (span[0] - span[1], span[0])):  # the longest first
            at = bisect(taken, (start, end))
            if (at and taken[at - 1][1] > start) or (at < len(taken) and taken[at][0] < end):
                continue  # it overlaps a longer one (or one as long that starts earlier)
            insort(taken, (start, end))
        return [
            {
                "start": start,
                "end": end,
                "text": text[start:end],
                "entities": sorted(spans[(start, end)].values(), key=lambda e: e["id"]),
            }
            for start, end in sorted(taken)
        ]
