"""Writes of entities: making one, adding names and aliases, and the checks a name passes."""

from dataclasses import replace
from functools import cached_property

from pyoxigraph import Literal, NamedNode

from kgrdf import inputs, model, privacy, vocab
from kgrdf.errors import BadInput, Refused
from kgrdf.writer.staging import Staging


class Entities(Staging):
    """add_entity and what it refuses: an alias another entity goes by, a person forgotten on request, an
    organization merged into another."""

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

        An organization merged into another is refused whole: the kept one took its names, and
        merged-names.rq hides them by what it went by.

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
        if summary is not None:  # Unicode text of a bounded size (KGRDF_MAX_TEXT), its line ends newlines
            # ("" takes a summary away: kept as none, so that giving it to an entity without one changes nothing)
            summary = inputs.newlines(inputs.text(summary, "the summary")) or None
            cleared = summary is None
        else:
            cleared = False
        for what, given in (
            [("the name", name or "")]
            + [("the alias", a) for a in aliases]
            + [("the weak alias", a) for a in weak_aliases]
        ):
            inputs.label(given, what)  # and nothing in it that hides what it says
        inputs.text(entity_id, "the entity id")  # (one longer than a text may be is no id to ask by)
        name = model.clean_label(name or "")
        if not name:
            raise BadInput("an entity needs a --name")
        aliases = [model.clean_label(a) for a in aliases if model.clean_label(a)]
        weak = [model.clean_label(a) for a in weak_aliases if model.clean_label(a)]
        iri = vocab.entity_iri(self.perspective, entity_id)
        old = self.entity(iri)
        if old is not None and old.merged_into:  # its names are the kept one's: a new one would show them
            kept = self.survivor(old)
            raise Refused(
                f"{entity_id} was merged into {kept.id}: a merged organization is not changed",
                hint=f"change {kept.id} instead, which holds its names and facts",
            )
        if old is None and type_key in privacy.PERSON_TYPES and not self.allow_forgotten:
            self._refuse_forgotten(entity_id)
        if old is None and type_key not in privacy.PERSON_TYPES:
            self._refuse_id_naming_a_person(entity_id, name)
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
                summary=summary if summary is not None or cleared else old.summary,
                is_self=old.is_self or is_self,
            )
            new.aliases = [a for a in new.aliases if a != new.name]
            strong = set(new.aliases)
            new.weak_aliases = [a for a in new.weak_aliases if a not in strong and a != new.name]
            outcome = "unchanged" if new == old else "updated"
        if outcome != "unchanged":
            # What this record adds, looked at alone: an import adding an alias a record to one
            # entity looked at all its aliases a record (1,000 records: 18 s; 4,000: past 5 min).
            held = set(old.aliases) if old is not None else set()
            added = [a for a in new.aliases if a not in held]
            for alias in added if check_aliases else ():
                self._refuse_taken(alias, new)
            labels = [("alias", a) for a in added]
            if old is None or old.name != new.name:
                labels.insert(0, ("name", new.name))
            if new.type in privacy.PERSON_TYPES:  # (refused before anything of it is staged)
                held_weak = set(old.weak_aliases) if old is not None else set()
                weak_added = [("weak alias", a) for a in new.weak_aliases if a not in held_weak]
                self._refuse_in_identifier(new, labels + weak_added, created=old is None)
            else:
                self._refuse_identifier_as_label(new, labels)
            self._replace_entity(old, new)
            if old is None:
                self._created.add(iri.value)
            for how, label in labels:
                self._pending_labels.setdefault(model.match_key(label), {})[(new.iri, how, label)] = None
            if new.type in privacy.PERSON_TYPES:
                self._pending_people.add_person(new.iri, new.id, [new.name, *new.aliases, *new.weak_aliases])
                self._person_added()
        return new, outcome

    def _refuse_in_identifier(self, person: model.Entity, labels: list[tuple[str, str]], created: bool) -> None:
        """Refuse a person's new name, alias or id that another person's identifier holds as kg
        forget reads names (a new person named Bo, where person/ana's code-host login is bo):
        forgetting this one would take that identifier, which is the other's alone. kg identifiers
        add refuses the same from the other side. Only the identifiers that hold every word of a
        label are read through a matcher (of that label alone: where a third person's longer name
        holds it, forget would not take it, and it is refused all the same)."""
        if not self._identifier_words:
            return
        asked = labels + ([("id", person.id)] if created else [])
        for how, label in asked:
            wanted = set(privacy.words(label.rpartition("/")[2] if how == "id" else label))
            matcher = None
            for entry, held in self._identifier_words:
                if entry["entity"] == person.id or not wanted <= held:
                    continue
                if matcher is None:
                    matcher = privacy.People()
                    if how == "id":
                        matcher.add_person(person.iri, person.id)
                    else:
                        matcher.add_name(label, person.iri)
                if person.iri in matcher.in_text(entry["value"]):
                    raise Refused(
                        f"the {how} {label!r} of {person.id} is in the {entry['kind']} identifier "
                        f"{entry['value']!r} of {entry['entity']} as kg forget reads names: forgetting "
                        f"{person.id} would take that identifier, which is {entry['entity']}'s alone",
                        hint="give a fuller name, one the identifier does not hold (with a family name)"
                        if how != "id"
                        else "give the person another id",
                    )

    def _refuse_identifier_as_label(self, entity: model.Entity, labels: list[tuple[str, str]]) -> None:
        """Refuse a name or strong alias of an entity not a person that is a person's identifier (a
        repo named Atlas, where atlas is person/ana's chat id): every fact whose words name the entity
        so would be taken for one naming the person, and kept in the private journal alone. kg
        identifiers add refuses the same from the other side."""
        for how, label in labels:
            entry = self._identifiers_by_key.get(privacy.fold(model.match_key(label)))
            if entry is not None:
                raise Refused(
                    f"the {how} {label!r} of {entity.id} is the {entry['kind']} identifier of {entry['entity']}: "
                    f"every fact naming {entity.id} so would be taken for one naming {entry['entity']}",
                    hint="give it another name; a weak alias (--weak-alias) may keep this one",
                )

    @cached_property
    def _identifiers_by_key(self) -> dict[str, dict]:
        """The perspective's identifiers by their values' match keys, folded as the matcher reads them
        (model.match_key, privacy.fold: ＡＴＬＡＳ is atlas)."""
        return {privacy.fold(model.match_key(entry["value"])): entry for entry, _words in self._identifier_words}

    @cached_property
    def _identifier_words(self) -> list[tuple[dict, set[str]]]:
        """The perspective's identifiers, each with its words (as the matcher folds them)."""
        from kgrdf import identifiers

        return [
            (entry, set(privacy.words(entry["value"])))
            for entry in identifiers.read(self.kb)
            if privacy.identifier_is_of(entry, self.perspective)
        ]

    LABELS_AT_ONCE = 500  # match keys a query of expect_aliases reads

    def expect_people(self, people) -> None:
        """Know the people (id, their names) that later records of this write add, as people this
        write adds: one write is one transaction, so a fact an import stages before a person's record
        names them as one staged after it does (it is personal: never an inference, never confirmed
        by sources alone). A record that is then refused leaves its facts judged the stricter way."""
        for entity_id, names in people:
            iri = vocab.entity_iri(self.perspective, entity_id).value
            self._pending_people.add_person(iri, entity_id, names)
            self._expected_names[iri] = names[0]  # (its record's name, or its first alias)

    def expect_aliases(self, aliases) -> None:
        """Read ahead, LABELS_AT_ONCE keys a query (labels-taken.rq), which of ``aliases`` an entity
        of the index goes by already: an alias this write then adds whose key none does is refused
        for none, with no query of its own. A large write (an import) gives its aliases a block of
        records ahead; reading every label of the base instead took 0.3 s at 100k facts and grew
        with the base, and a query an alias takes half a millisecond."""
        keys = {_key_ahead(a, self._text_limit) for a in aliases} - self._keys_read
        keys = sorted(key for key in keys if key)
        if not keys:
            return
        rows = self.rows_for_each(
            "labels-taken", "key", [Literal(k) for k in keys], self.LABELS_AT_ONCE, entities=self.entities_graph
        )
        self._keys_taken.update(row["key"].value for row in rows)
        self._keys_read.update(keys)

    def _refuse_taken(self, alias: str, entity: model.Entity) -> None:
        """Refuse a strong alias that another entity of the perspective goes by already (its name or
        a strong alias, compared by match key): one index lookup by that key (identify.rq), unless
        read ahead (expect_aliases) as no entity's of the index nor of this write."""
        key = model.match_key(alias)
        if key in self._keys_read and key not in self._keys_taken and key not in self._pending_labels:
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

    def _refuse_id_naming_a_person(self, entity_id: str, name: str) -> None:
        """Refuse a new entity whose id spells a known person's name (organization/sam-reyes, where
        Sam Reyes is a person: privacy.id_spells): an id is in every record of its entity and of its
        facts, the shared journal's among them, which is never rewritten, so kg forget could not take
        it. Its name may be theirs: a name naming a person is kept in the private journal, and a
        forget makes it the id. (An alias in an id is no spelling: "process/deploy" stays free of a
        person whose weak alias is "deploy".)"""
        # (the people its id or its name names: an id made from a name holds it without its marks)
        texts = [entity_id.split("/", 1)[1], name]
        asked = {iri for found in self._matchers(texts) for text in texts for iri in found.in_text(text)}
        named = [
            iri for iri in asked if any(privacy.id_spells(entity_id, theirs) for theirs in self._names_of_person(iri))
        ]
        if named:
            ids = ", ".join(sorted(vocab.id_of(iri) for iri in named))
            raise Refused(
                f"the id {entity_id} names {ids}: an id is in every record of its entity, the shared "
                "journal's too, which is never rewritten, so kg forget could not take it",
                hint="give the entity an id of its own: kg add-entity TYPE/ID, or kg org add NAME --id ID; "
                "its name may still be theirs",
                whitelist=True,
                id_names_person=True,
            )

    def _names_of_person(self, iri: str) -> list[str]:
        """The name of a person known to this write: as the index or the write holds them, or as a
        later record of an import gives it (expect_people)."""
        person = self.entity(NamedNode(iri))
        return [name for name in (person.name if person else None, self._expected_names.get(iri)) if name]

    def _refuse_forgotten(self, entity_id: str) -> None:
        if self._forgotten is None:
            self._forgotten = privacy.forgotten(self.kb)
        if self._forgotten and (self.key or privacy.key(self.kb, make=False)).is_forgotten(entity_id, self._forgotten):
            raise Refused(
                f"{entity_id} was forgotten on request; adding them again is refused",
                hint="add them again knowingly with --allow-forgotten",
            )

    def _replace_entity(self, old: model.Entity | None, new: model.Entity) -> None:
        """Stage the change from ``old``'s description (None: a new entity) to ``new``'s."""
        self.stage(*model.entity_change(old, new, self.perspective, self.schema))
        self._entities[new.iri] = new


def _key_ahead(alias, limit: int) -> str | None:
    """The match key of an alias read ahead of its record; None for one that is no text the
    knowledge base can hold (its record is refused for it when staged, alone)."""
    try:
        return model.match_key(model.clean_label(inputs.text(alias, "an alias", limit)))
    except BadInput:
        return None
