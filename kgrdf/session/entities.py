"""Entities and names: an entity, which one a name means, search, the perspectives."""

from dataclasses import replace

from pyoxigraph import Literal, NamedNode

from kgrdf import inputs, model, vocab
from kgrdf.errors import BadInput, NotFound, Refused
from kgrdf.session.reading import Reading


class EntityReads(Reading):
    """entity, entity_by_id, identify, resolve, search, perspectives."""

    @property
    def entities_graph(self) -> NamedNode:
        return vocab.entities_graph(self.perspective)

    def entity_iri(self, entity_id: str) -> NamedNode:
        return vocab.entity_iri(self.perspective, entity_id)

    def entity(self, iri: NamedNode) -> model.Entity | None:
        """The entity ``iri`` names, or None; for an audience, None for one that does not exist for
        it (see may_see), and without the names of an organization merged into it that does not
        (hidden_names)."""
        found = self.named_entity(iri)
        if found is not None and not self.may_see(found.iri):
            return None
        hidden = self.hidden_names(found.iri) if found is not None else set()
        if hidden:
            found = replace(
                found,
                aliases=[a for a in found.aliases if a not in hidden],
                weak_aliases=[a for a in found.weak_aliases if a not in hidden],
            )
        return found

    def _names_hidden(self, entity: str, text: str) -> bool:
        key = model.match_key(text)
        return any(model.match_key(name) == key for name in self.hidden_names(entity))

    def hidden_names(self, entity: str) -> set[str]:
        """For a read for an audience, the names an organization merged into ``entity`` (an IRI)
        went by, when it does not exist for that audience (may_see): the kept one took them as
        aliases, and a merge never widens an audience (§9). Empty for the owner's read. The merges
        of the perspective are read once (merged-names.rq)."""
        if self.hearer is None:
            return set()
        return {name for into, names in self._merged_into(entity) if not self.may_see(into) for name in names}

    def took_in_merge(self, entity: str, text: str) -> bool:
        """Whether ``text`` is a name ``entity`` (an IRI) took from an organization merged into it,
        and not its own name: a name that tells of the merge, whoever reads."""
        key = model.match_key(model.clean_label(text))
        found = self.named_entity(NamedNode(entity))
        if found is not None and model.match_key(found.name) == key:
            return False
        return any(model.match_key(name) == key for _into, names in self._merged_into(entity) for name in names)

    def _merged_into(self, entity: str):
        """(IRI, the names it went by) of each organization merged into ``entity``, and each merged
        into one of those, and so on: the kept one took all their names."""
        seen, todo = {entity}, [entity]
        while todo:
            for into, names in self.merges().get(todo.pop(), {}).items():
                if into not in seen:
                    seen.add(into)
                    todo.append(into)
                    yield into, names

    def merges(self) -> dict[str, dict[str, set[str]]]:
        """Each organization another was merged into -> each one merged into it -> the names that
        one went by (merged-names.rq), read once."""
        merged = self.__dict__.get("_merged")
        if merged is None:
            merged = {}
            for row in self.rows("merged-names", entities=self.entities_graph):
                merged.setdefault(row["survivor"].value, {}).setdefault(row["merged"].value, set()).add(
                    row["label"].value
                )
            self._merged = merged
        return merged

    def named_entity(self, iri: NamedNode) -> model.Entity | None:
        """The entity ``iri`` names, or None, as it is described: for an entity a fact the read's
        audience may hear names, which exists for that audience (kgrdf.audience), so that may_see's
        query of the audiences of every fact naming it is not asked."""
        return model.fold_entity(iri.value, self.rows("entity", entity=iri))

    def entity_by_id(self, entity_id: str) -> model.Entity | None:
        if not vocab.ID_PATTERN.match(entity_id):
            return None
        return self.entity(self.entity_iri(entity_id))

    def survivor(self, entity: model.Entity) -> model.Entity:
        """An organization merged into another resolves to the one that was kept."""
        seen = {entity.iri}
        while entity.merged_into and entity.merged_into not in seen:
            seen.add(entity.merged_into)
            entity = self.entity(NamedNode(entity.merged_into)) or entity
        return entity

    def identify(self, text: str) -> dict:
        """Entities named ``text``: by id, which means that entity alone (as resolve reads it); else
        by name or strong alias (matches); by weak alias (suggestions). A merged organization's id
        and names lead to the one it was merged into."""
        text = inputs.text(text, "the name")  # (a name no entity can hold is refused, not looked for)
        entity = self.entity_by_id(text.strip())
        if entity is not None:
            kept = self.survivor(entity)
            how = "id" if kept.iri == entity.iri else f"id of {entity.id}, merged into it"
            match = {"id": kept.id, "type": kept.type, "name": kept.name, "matched": how, "label": text.strip()}
            return {"text": text, "matches": [match], "suggestions": []}
        matches, suggestions = {}, {}
        for row in self.values("identify", key=Literal(model.match_key(text)), entities=self.entities_graph):
            if not self.may_see(row["entity"]):
                continue  # it does not exist for this audience
            if row["how"] != "name" and self._names_hidden(row["entity"], text):
                continue  # a name of a merged organization it may not know
            if row.get("mergedInto"):
                survivor = self.survivor(self.entity_by_id(row["id"]))
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
        text = inputs.text(text, f"the {role}")
        if not model.match_key(text):
            raise BadInput(f"the {role} is empty: give an entity id, name or alias")
        entity = self.entity_by_id(text.strip())
        if entity is not None:
            return self.survivor(entity)
        found = self.identify(text)
        if len(found["matches"]) == 1:
            return self.survivor(self.entity_by_id(found["matches"][0]["id"]))
        if len(found["matches"]) > 1:
            names = ", ".join(f"{m['id']} ({m['matched']} {m['label']!r})" for m in found["matches"])
            raise Refused(
                f"{role} {text!r} is ambiguous: it names {names}",
                hint="give the id instead",
                candidates=[m["id"] for m in found["matches"]],
            )
        candidates = [s["id"] for s in found["suggestions"]]  # (what the hint names, for a program)
        if found["suggestions"]:
            hint = (
                "did you mean "
                + ", ".join(f"{s['id']} (weak alias {s['label']!r})" for s in found["suggestions"])
                + "?"
            )
        else:
            near = self.search(text)[:3]
            candidates = [n["id"] for n in near]
            if near:
                hint = "did you mean " + ", ".join(f"{n['id']} ({n['name']!r})" for n in near) + "?"
            else:
                hint = "kg add-entity makes it; kg search finds names"
        raise NotFound(f"{role} {text!r} is not known", hint=hint, candidates=candidates)

    _HOW = {
        vocab.PREF_LABEL.value: "name",
        vocab.ALT_LABEL.value: "alias",
        vocab.WEAK_ALIAS.value: "weak alias",
        vocab.IDENTIFIER.value: "id",
    }

    def search(self, text: str) -> list[dict]:
        """Entities whose id, name, alias or weak alias contains ``text``, ignoring case.
        Exact matches first."""
        needle = model.match_key(inputs.text(text, "the text searched for"))
        if not needle:
            raise BadInput("search needs some text")
        found: dict[str, dict] = {}
        merged = {into for survivor in self.merges().values() for into in survivor}
        for row in self.values("search", text=Literal(needle), entities=self.entities_graph):
            if row["id"] not in found and not self.may_see(row["entity"]):
                continue  # it does not exist for this audience
            if row["entity"] in merged:  # merged into another: found as the one kept, where it exists for the read
                duplicate = self.named_entity(NamedNode(row["entity"]))
                kept = self.survivor(duplicate) if duplicate is not None else None
                if kept is not None and kept.iri != row["entity"]:
                    if row["labelProperty"] == vocab.IDENTIFIER.value:  # (its names are the kept one's aliases)
                        hit = found.setdefault(
                            kept.id, {"id": kept.id, "type": kept.type, "name": kept.name, "matched": []}
                        )
                        hit["matched"].append({"how": "id", "label": row["label"]})
                    continue
            if row["labelProperty"] != vocab.PREF_LABEL.value and row["label"] in self.hidden_names(row["entity"]):
                continue  # a name of a merged organization it may not know
            hit = found.setdefault(
                row["id"], {"id": row["id"], "type": row["type"], "name": row["name"], "matched": []}
            )
            hit["matched"].append({"how": self._HOW[row["labelProperty"]], "label": row["label"]})
        exact = [h for h in found.values() if any(model.match_key(m["label"]) == needle for m in h["matched"])]
        return exact + [h for h in found.values() if h not in exact]

    def perspective_exists(self) -> bool:
        """Whether the read's perspective is one: the knowledge base's default one, or one that holds
        data (one index lookup: is its entities graph empty?)."""
        return (
            self.perspective == self.kb.default_perspective
            or next(iter(self.backend.quads_in(self.entities_graph)), None) is not None
        )

    def unknown_perspective(self) -> Refused:
        """The refusal of a perspective that is none (perspective_exists), naming the known ones."""
        known = [p["perspective"] for p in self.perspectives() if p["entities"] or p["facts"] or p["default"]]
        return Refused(
            f"no perspective {self.perspective!r}; known: {', '.join(known)}",
            hint=f"kg org init NAME --perspective {self.perspective} provisions it with its self "
            "organization; else check KGRDF_PERSPECTIVE and --perspective",
        )

    def perspectives(self) -> list[dict]:
        """Every perspective with data, and the knowledge base's default one: name and counts."""
        found: dict[str, dict] = {self.kb.default_perspective: {"entities": 0, "facts": 0}}
        for row in self.values("perspectives"):
            name = vocab.perspective_of(row["perspective"])
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
