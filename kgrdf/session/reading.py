"""The core of a read: the named queries it runs, the schema it reads once, and the audience it is
for (every group of reads in kgrdf.session is written over it)."""

from collections.abc import Iterator
from functools import cached_property

from pyoxigraph import Literal, NamedNode

from kgrdf import clock, queries, vocab
from kgrdf.errors import BadInput, NotFound, Refused

MAX_HOPS = 4


def no_fact(fact_id: str) -> NotFound:
    """The answer for a fact that is not there, or not there for the one asking: the two read alike."""
    return NotFound(f"no fact {fact_id}", hint="kg facts SUBJECT --all lists a subject's facts")


def now_literal(moment=None) -> Literal:
    return vocab.datetime_literal(clock.iso(moment or clock.now()))


def days_before(now: str, days: int) -> Literal:
    """The moment ``days`` days before ``now`` (an ISO time), as the queries of expiry and
    retention take it (their ``$before``)."""

    return now_literal(clock.days_before(clock.parse_time(now), days))


UNKNOWN_AUDIENCE = "?"  # an audience that did not parse: it may hear nothing
# Nodes one query is asked about (VALUES): facts whose hearings it reads, the entities of a hop; its
# text stays under 50 KB.
AT_ONCE = 500


class Reading:
    """A read of one index: its queries, and what the audience it is for may hear (see kgrdf.session)."""

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
        ``limit``, the first rows only (of a query that orders them): the engine is read no further.
        A parameter given a list is read for each of its values at once (queries.bind)."""
        query = self._query(name, bindings)
        if self._hearer is None or query.scope == "entities":
            return self.backend.select(query, bindings, limit=limit)
        return self._rows_for_hearer(name, query, bindings)[:limit]

    def past_retention(self, days: int, now: str) -> list[str]:
        """The facts naming a person not observed or confirmed again in the ``days`` days before
        ``now``, whatever their status (their IRIs): kg expire deletes them as kg forget deletes."""
        return [row["fact"].value for row in self.rows("lint-retention", before=days_before(now, days))]

    def rows_iter(self, name: str, **bindings) -> Iterator[dict]:
        """The rows of rows(), one at a time, for a reader that keeps none of them (an export): the
        owner's as the engine gives them; an audience's are read whole, to keep those it may hear."""
        query = self._query(name, bindings)
        if self._hearer is None or query.scope == "entities":
            return self.backend.select_iter(query, bindings)
        return iter(self._rows_for_hearer(name, query, bindings))

    def _query(self, name: str, bindings: dict):
        """The named query; a query that reads the whole knowledge base is given the session's
        perspective in ``bindings`` unless they name one."""
        query = queries.load(name)
        if "perspective" in query.params and "perspective" not in bindings:
            bindings["perspective"] = vocab.perspective_iri(self.perspective)
        return query

    def rows_for_each(self, name: str, param: str, values: list, at_once: int = 500, **bindings) -> list[dict]:
        """Rows of the named query with ``param`` given each of ``values``, ``at_once`` of them a
        query (the values as a VALUES block: queries.bind), in one list."""
        return [
            row
            for at in range(0, len(values), at_once)
            for row in self.rows(name, **bindings, **{param: list(values[at : at + at_once])})
        ]

    def _rows_for_hearer(self, name: str, query, bindings: dict) -> list[dict]:
        fact = bindings.get("fact")
        if "fact" in query.params and isinstance(fact, (list, tuple)):
            hearable = self.may_hear_many(one.value for one in fact)
            heard = [one for one in fact if one.value in hearable]
            return self.backend.select(query, {**bindings, "fact": heard}) if heard else []
        if "fact" in query.params:
            return self.backend.select(query, bindings) if fact is not None and self.may_hear(fact.value) else []
        rows = self.backend.select(query, bindings)
        if rows and "fact" not in rows[0]:
            raise Refused(f"{name}.rq cannot be asked for an audience: its rows do not name their facts")
        hearable = self.may_hear_many(row["fact"].value for row in rows if row["fact"] is not None)
        return [row for row in rows if row["fact"] is None or row["fact"].value in hearable]

    # --- the audience a read is for ------------------------------------------------------------------

    _hearer: str | None = None  # the audience a read is for (None: the owner's, who may hear all)
    _hearable: dict  # fact IRI -> whether the hearer may hear it, as asked

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
        self._hearable = {}

    def may_hear(self, fact: str) -> bool:
        """Whether the read's audience may hear the fact ``fact`` (an IRI): one of its hearings."""
        from kgrdf import audience

        if self._hearer is None:
            return True
        if fact not in self._hearable:
            rows = (
                []
                if self._hearer == UNKNOWN_AUDIENCE
                else self.backend.select(queries.load("fact-audience"), {"fact": NamedNode(fact)})
            )
            heard_in = [row["audience"].value if row.get("audience") is not None else None for row in rows]
            self._hearable[fact] = audience.may_hear_any(heard_in, self._hearer)
        return self._hearable[fact]

    def may_hear_many(self, facts) -> set[str]:
        """Of the facts ``facts`` (IRIs), those the read's audience may hear, as may_hear decides:
        the hearings of those not yet asked read AT_ONCE facts a query, not one a fact."""
        from kgrdf import audience

        facts = list(facts)
        if self._hearer is None:
            return set(facts)
        asked = [fact for fact in dict.fromkeys(facts) if fact not in self._hearable]
        for start in range(0, len(asked), AT_ONCE):
            heard_in: dict[str, list] = {fact: [] for fact in asked[start : start + AT_ONCE]}
            if self._hearer != UNKNOWN_AUDIENCE:
                given = {"fact": [NamedNode(fact) for fact in heard_in]}
                for row in self.backend.select(queries.load("fact-audience"), given):
                    said = row.get("audience")
                    heard_in[row["fact"].value].append(said.value if said is not None else None)
            for fact, said in heard_in.items():
                self._hearable[fact] = audience.may_hear_any(said, self._hearer)
        return {fact for fact in facts if self._hearable[fact]}

    def may_hear_in(self, heard_in: str | None) -> bool:
        """Whether the read's audience may hear what was heard in ``heard_in`` (an audience)."""
        from kgrdf import audience

        if self._hearer is None:
            return True
        return self._hearer != UNKNOWN_AUDIENCE and audience.may_hear(heard_in, self._hearer)

    def may_hear_promotion(self, claim: str) -> bool:
        """Whether the read's audience may hear the promotion of the claim ``claim`` (an IRI) to an
        actor: one of the hearings kg org promote made (promotion-audiences.rq). None: it may not."""
        if self._hearer is None:
            return True
        if self._hearer == UNKNOWN_AUDIENCE:
            return False
        rows = self.backend.select(queries.load("promotion-audiences"), {"claim": NamedNode(claim)})
        return any(self.may_hear_in(row["audience"].value) for row in rows)

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
