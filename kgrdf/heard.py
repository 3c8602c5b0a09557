"""The dataset an audience may read, as a store of its own (``kg sparql --audience``, ``kg export
--audience``, and ``/sparql`` for a token's audience).

It holds the schema; the facts the audience may hear, each provenance graph as the audience is shown
it (:func:`kgrdf.model.heard_triples`); the descriptions of the entities those facts name and of the
perspective's own organization; nothing else. A user's query runs on it alone, so that no FROM,
GRAPH or path can reach past it.

Made whole, it costs a read of every fact's audiences and of each heard fact's two graphs: seconds
at 100k facts. A resident process (kg serve) keeps one per audience and brings it up to date with
the transactions written since, fact by fact (:meth:`HeardSet.catch_up`), so a served query pays the
change, not the knowledge base; a change it cannot follow fact by fact (the schema, a fact another
audience could hear before and not now, a large transaction) makes it whole again.
"""

import time
from contextlib import contextmanager

import pyoxigraph as ox

from kgrdf import model, queries, vocab
from kgrdf.errors import KgError, Refused
from kgrdf.store import open_backend

LARGE = 2000  # quads a transaction changes past which the set is made whole again
KEPT = 8  # audiences a resident process keeps a set for


class HeardSet:
    """What one audience of one perspective may read, at one index position."""

    def __init__(self, session):
        self.perspective = session.perspective
        self.base = vocab.perspective_base(session.perspective)
        self.entities = session.entities_graph
        self.backend = open_backend("memory")
        self.store = self.backend.store
        self.named: dict[str, frozenset] = {}  # heard fact -> the entities its graph names
        self.naming: dict[str, int] = {}  # entity -> how many heard facts name it
        self.position = None  # the journal position it reflects (a resident's set)

    def release(self) -> None:
        """Let other requests change a resident's set again (a query's fork has its own copy)."""

    # --- made whole ----------------------------------------------------------------------------------

    def fill(self, session, deadline: float | None = None, timeout: float | None = None) -> "HeardSet":
        """Read it whole from the session's index. Raises Refused once past ``deadline``
        (time.monotonic()): a query's time limit counts the gathering."""
        from kgrdf.schema import SCHEMA_GRAPH

        backend = session.backend
        self.store.extend(backend.quads_in(ox.NamedNode(SCHEMA_GRAPH)))
        heard = all_heard(session)
        kept = []
        for done, fact in enumerate(heard):  # each graph by its name: the cost follows what it may read
            if done % 256 == 0:
                if deadline is not None and time.monotonic() > deadline:
                    raise past_limit(timeout)
                self.store.bulk_extend(kept)  # in batches: a store call costs more than its quads
                kept = []
            kept += self._fact_quads(session, fact, heard.__contains__)
        for subject, quads in _by_subject(backend.quads_in(self.entities)).items():
            if self.naming.get(subject) or _is_self(quads):
                kept += quads
        self.store.bulk_extend(kept)
        return self

    def _fact_quads(self, session, fact: str, hears_fact) -> list:
        """The quads of a heard fact as the audience is shown them; the entities it names are counted."""
        backend = session.backend
        quads = list(backend.quads_in(ox.NamedNode(fact)))
        names = set()
        for quad in quads:
            names.add(quad.subject.value)
            if isinstance(quad.object, ox.NamedNode):
                names.add(quad.object.value)
        graph = vocab.provenance_graph(ox.NamedNode(fact))
        triples = [(q.subject, q.predicate, q.object) for q in backend.quads_in(graph)]
        shown = model.heard_triples(fact, triples, session.may_hear_in, hears_fact)
        self.named[fact] = frozenset(names)
        for name in names:
            self.naming[name] = self.naming.get(name, 0) + 1
        return quads + [ox.Quad(s, p, o, graph) for s, p, o in shown]

    def _drop_fact(self, fact: str) -> None:
        node = ox.NamedNode(fact)
        for graph in (node, vocab.provenance_graph(node)):
            for quad in list(self.store.quads_for_pattern(None, None, None, graph)):
                self.store.remove(quad)
        for name in self.named.pop(fact, ()):
            self.naming[name] -= 1

    # --- brought up to date ----------------------------------------------------------------------------

    def catch_up(self, session, transactions) -> bool:
        """Follow ``transactions`` (journal Transactions written since the set was made) fact by fact.
        False when one of them is a change it cannot follow: the caller makes it whole again."""
        from kgrdf.schema import SCHEMA_GRAPH

        facts, entities = set(), set()
        for tx in transactions:
            if len(tx.deletes) + len(tx.adds) > LARGE:
                return False
            for line in (*tx.deletes, *tx.adds):
                quad = _quad(line)
                if not isinstance(quad.graph_name, ox.NamedNode):
                    continue  # the index's own bookkeeping
                graph = quad.graph_name.value
                if graph == SCHEMA_GRAPH:
                    return False  # another schema: every fact may read otherwise
                if graph == self.entities.value:
                    entities.add(quad.subject.value)
                elif graph.startswith(self.base):
                    facts.add(graph.removesuffix("/provenance"))
        heard_now = {fact for fact in facts if session.may_hear(fact)}
        for fact in facts:
            if (fact in self.named) != (fact in heard_now) and _is_old(fact, transactions):
                return False  # heard before and not now, or now and not before: others' provenance names it
        was_named = {name for fact in facts for name in self.named.get(fact, ())}
        heard = (self.named.keys() - facts) | heard_now

        def hears_fact(other: str) -> bool:
            return other in heard

        for fact in facts:
            self._drop_fact(fact)
        for fact in sorted(heard_now):
            self.store.extend(self._fact_quads(session, fact, hears_fact))
        now_named = {name for fact in heard_now for name in self.named.get(fact, ())}
        for subject in entities | was_named | now_named:
            self._describe(session, subject)
        return True

    def _describe(self, session, subject: str) -> None:
        """Keep the entity's description as the index holds it when a heard fact names it (or it is
        the perspective's own organization), and none of it otherwise."""
        node = ox.NamedNode(subject)
        for quad in list(self.store.quads_for_pattern(node, None, None, self.entities)):
            self.store.remove(quad)
        quads = list(session.backend.quads_in(self.entities, node))
        if quads and (self.naming.get(subject) or _is_self(quads)):
            self.store.extend(quads)


def all_heard(session) -> set[str]:
    """Every fact of the session's perspective its audience may hear (one read of every fact's
    hearings, audiences.rq; kgrdf.audience decides)."""
    if not session.may_hear_anything():
        return set()  # an audience that did not parse
    facts, hearings, audience_of = set(), {}, {}
    for row in session.backend.select(
        queries.load("audiences"), {"perspective": vocab.perspective_iri(session.perspective)}
    ):
        fact, hearing, audience = row.get("fact"), row.get("hearing"), row.get("audience")
        if audience is not None:
            audience_of[hearing.value] = audience.value
        elif hearing is not None:
            hearings.setdefault(fact.value, []).append(hearing.value)
        else:
            facts.add(fact.value)
    heard = set()
    for fact in facts:
        said = [audience_of.get(h) for h in hearings.get(fact, ())] or [audience_of.get(fact)]
        if any(session.may_hear_in(one) for one in said):
            heard.add(fact)
    return heard


@contextmanager
def held(session, deadline: float | None = None, timeout: float | None = None):
    """The audience's set, for one read: a resident process's, brought up to date and held (no other
    request changes it) until ``release()`` or the end of the block; else one made for this read."""
    resident = session.kb.resident
    position = session.kb.view()
    if resident is None or session.backend.position() != (position.seq, position.digest):
        yield HeardSet(session).fill(session, deadline, timeout)  # a command's, or an index behind
        return
    kept = resident.keep(("heard", session.perspective, session.hearer), KEPT)
    kept.acquire()
    try:
        current = kept.value
        if current is not None and current.position != position and not _caught_up(current, session, position):
            current = None
        if current is None:  # made whole, whatever the query's limit: the next query finds it
            kept.value = None
            current = HeardSet(session).fill(session)
        current.position = position
        kept.value = current
        current.release = kept.release
        yield current
    finally:
        kept.release()


def past_limit(timeout: float) -> Refused:
    return Refused(
        f"gathering what the audience may read took longer than the query's time limit of {timeout:g} s",
        hint="give it longer with --timeout (a running kg serve keeps what it gathered: ask again)",
    )


def _caught_up(current: HeardSet, session, position) -> bool:
    try:
        done, torn = session.kb.journal.read_after(current.position)
    except (KgError, OSError, ValueError):
        return False  # a journal it cannot follow from there: made whole again
    if torn or not done or done[-1][1] != position:
        return False
    return current.catch_up(session, [tx for tx, _ in done])


def _quad(line: str) -> ox.Quad:
    return next(iter(ox.parse(line.encode("utf-8"), format=ox.RdfFormat.N_QUADS)))


def _is_old(fact: str, transactions) -> bool:
    """Whether the fact existed before these transactions (none of them adds its kg:Fact type)."""
    typed = f"<{fact}> <{vocab.RDF_TYPE.value}> <{vocab.FACT.value}>"
    return not any(line.startswith(typed) for tx in transactions for line in tx.adds)


def _by_subject(quads) -> dict[str, list]:
    out: dict[str, list] = {}
    for quad in quads:
        out.setdefault(quad.subject.value, []).append(quad)
    return out


def _is_self(quads) -> bool:
    return any(q.predicate == vocab.SELF_ORGANIZATION for q in quads)
