"""The checks of a write: the SHACL shapes on what it touches, a small write's focused on its
nodes, a large one's in chunks while it goes on staging (Staging holds what they read)."""

from pyoxigraph import NamedNode

from kgrdf import model, vocab
from kgrdf.errors import NotFound, Refused
from kgrdf.writer.staging import PACKED, Staging


class Checks(Staging):
    """The shapes on the pending change: findings, validate, and a large write's check_chunk."""

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
        if standing:  # checked in chunks: the facts heard most are in their view already, beside their entities
            view, taken = self._standing, self._standing.take()
            entity_lines = frozenset(self._entity_lines(self._standing.facts | set(self._facts)))
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
        changed = self._entities_changed()
        entity_lines = self._entity_lines(self._unchecked, own=changed)
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
        standing = self._standing.facts if self._standing is not None else set()  # (one it started now too)
        checked, self._unchecked = self._unchecked - standing, set()
        if len(self._chunks) >= self.CHUNKS_HELD:  # each holds its rows as text until it is checked
            wait([self._chunks[-self.CHUNKS_HELD][2]])
        future = self._checker.submit(validation.check_lines, fact_lines, list(entity_lines), self._ontology)
        self._chunks.append((checked, changed, future))
        for iri in packable:
            self._pack(iri)
        if self._standing is not None:
            run = self._standing.check if last else self._standing.apply
            named = frozenset(self._entity_lines(self._standing.facts, own=()))  # its facts' findings alone count
            future = self._checker.submit(run, *self._standing.take(), named)
            if last:
                self._chunks.append((set(standing), set(), future))

    def _entities_changed(self) -> set[str]:
        """The IRIs of the pending entities staged or changed since the last chunk was checked (a
        change replaces the pending entity: _replace_entity). A chunk checks these as they now stand;
        one unchanged since keeps the findings of the chunk that checked it last (_bulk_findings), as
        an entity's shapes read its own lines alone, but for the self organization's, which a chunk
        checks beside the others. Each of 10k entities checked in each of the ten chunks of an
        import of 100k facts was 5 s of its staging and as much again of its checks."""
        changed = {iri for iri, entity in self._entities.items() if self._entities_checked.get(iri) is not entity}
        self._entities_checked.update((iri, self._entities[iri]) for iri in changed)
        return changed

    def _entity_lines(self, facts: set[str], own: set[str] | None = None) -> set[str]:
        """The lines of the entities a check of the facts ``facts`` (IRIs) needs, as this write leaves
        them: the facts' subjects and objects, this write's own entities ``own`` (default: all of
        them), the perspective's self organization when this write makes one (the one it must not
        be a second of), and the entities those are merged into. Not every entity of the knowledge
        base: read and checked in every chunk, they were most of what made an import of 300 facts
        take 3.5 s onto a base of 100k facts and 50 s onto 1M (0.6 s onto 1k)."""
        named = set(self._entities) if own is None else set(own)
        for iri in facts:
            fact = self._facts.get(iri)
            if fact is not None:
                named.add(fact.subject)
                if fact.is_entity_target:
                    named.add(fact.target.value)
        selves = {iri for iri, entity in self._entities.items() if entity.is_self}
        if selves:
            named |= selves | {
                row["entity"].value for row in self.rows("self-organization", entities=self.entities_graph)
            }
        lines, todo, seen = set(), list(named), set()
        while todo:
            iri = todo.pop()
            if iri in seen:
                continue
            seen.add(iri)
            entity = self.entity(NamedNode(iri))
            if entity is None:
                continue
            kept = self._entity_texts.get(iri)
            if kept is None or kept[0] is not entity:  # (an entity named by many chunks is written once)
                kept = self._entity_texts[iri] = (
                    entity,
                    [str(q) for q in model.entity_quads(entity, self.perspective, self.schema)],
                )
            lines.update(kept[1])
            if entity.merged_into:
                todo.append(entity.merged_into)
        return lines

    def validate(self) -> list:
        """Check what this write touches against the SHACL shapes. Raises Refused on a violation
        (nothing has been written yet); returns the warnings."""
        from kgrdf import validation

        if self.validated:
            return self.warnings
        findings = self.findings()
        findings, inherited = self.refusable(findings)
        try:
            self.warnings = validation.refuse_violations(findings)
        except Refused as exc:
            exc.details["findings"] = [self._shown_finding(f) for f in findings if f.severity == "violation"]
            if all(inherited(f) for f in findings if f.severity == "violation"):
                exc.hint = (
                    "the fact broke the schema in use before this write (a schema.json copied in unchecked): "
                    "kg reject takes it out of current reads, or put back the schema.json it was written under"
                )
            raise
        self.validated = True
        return self.warnings

    def refusable(self, findings: list) -> tuple[list, object]:
        """``findings`` less the violations a write may leave (see _broken_before), and a test of
        whether a finding was there before this write, on its fact or the one it came from."""
        origins = self._origins([f for f in findings if f.severity == "violation"])
        before = self._broken_before(origins)

        def inherited(finding) -> bool:
            origin = origins.get(finding.fact)
            return origin is not None and (origin.iri, finding.message) in before

        kept = [f for f in findings if not (inherited(f) and not self._facts[f.fact].current)]
        return kept, inherited

    def _origins(self, violations: list) -> dict[str, model.Fact]:
        """The fact of this write each of ``violations`` is on -> that fact as the index held it
        before the write, or, for one the write made from another (an organization merge's copy,
        kg:mergedFrom), the fact it came from as held."""
        origins: dict[str, model.Fact] = {}
        for iri in dict.fromkeys(finding.fact for finding in violations):
            fact = self._facts.get(iri)
            for held in [h for h in (iri, fact.merged_from) if h] if fact is not None else ():
                try:
                    origins[iri] = self.held_fact(vocab.id_of(held))
                    break
                except NotFound:  # (made by this write, of nothing held: what it breaks is its own)
                    continue
        return origins

    def _broken_before(self, origins: dict[str, model.Fact]) -> set[tuple[str, str]]:
        """(fact IRI, message) of each violation found on the facts ``origins`` gives as the index
        held them. A schema.json copied in unchecked can make facts break the shapes in use (a
        predicate taken away, a range narrowed, text where dates are now asked): a write may take
        such a fact out of current reads (a rejection, a correction that closes it, an expiry, a
        merge's rejected copy), as kg validate asks, never confirm or change one into them."""
        from kgrdf import validation

        held = {fact.iri: fact for fact in origins.values()}
        if not held:
            return set()
        named = {f.subject for f in held.values()} | {f.target.value for f in held.values() if f.is_entity_target}
        entities = [self.held_entity(NamedNode(iri)) for iri in named]
        entity_lines = [
            str(q) for e in entities if e is not None for q in model.entity_quads(e, self.perspective, self.schema)
        ]
        fact_lines = [line for fact in held.values() for line in model.fact_lines(fact, self.schema)]
        data = validation.view_from_lines(fact_lines, entity_lines, self.backend.schema_quads())
        found = validation.check(data, list(held), self.kb.path)
        return {(f.fact, f.message) for f in found if f.severity == "violation"}

    def _shown_finding(self, finding) -> dict:
        """A finding for a refusal's JSON. A fact this write would have made is refused with it, so
        its id was never given out (the next write mints it again for another fact): the finding
        describes the fact instead, marked as not created."""
        fact_iri = finding.fact
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
