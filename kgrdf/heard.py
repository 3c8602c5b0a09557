"""The dataset an audience may read, as a store of its own (``kg sparql --audience``, ``kg export
--audience``, and ``/sparql`` for a token's audience).

It holds the schema; the facts the audience may hear, each provenance graph as the audience is shown
it (:func:`kgrdf.model.heard_triples`); the descriptions of the entities those facts name and of the
perspective's own organization; nothing else. A user's query runs on it alone, so that no FROM,
GRAPH or path can reach past it.

Made whole, it costs a read of every fact's audiences and of each heard fact's two graphs: 30 s at
100k facts, and a store of its own about the size of the index. So it is kept, derived like every
cache, in ``cache/heard/`` (one Oxigraph store an audience, at most KEPT of them, the least recently
used removed), and brought up to date with the transactions written since it was made, fact by fact
(:meth:`HeardSet.catch_up`): a read pays the change, not the knowledge base. A change it cannot
follow fact by fact (the schema, a fact heard before and not now or the other way round, a change
large beside what it holds) makes it whole again. A gathering cut short by a query's time limit keeps
what it gathered, and the next one at the same journal position and schema goes on from it. Its own
bookkeeping (the journal position and schema it reflects, how many facts it holds, the entities each
heard fact names, how far a gathering cut short got) is in its default graph, which a query never
sees. One process at a time has a kept store open (a lock beside it); another one meanwhile reads
with a store in memory, made for that read. kg forget deletes cache/ with all it holds (a resident
process then makes its sets again), and an export is of what a query sees, without the bookkeeping.
"""

import fcntl
import hashlib
import json
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

import pyoxigraph as ox

from kgrdf import files, model, nquads, queries, vocab
from kgrdf.errors import Damaged, KgError, Refused, one_line
from kgrdf.journal import Position
from kgrdf.store import open_backend

# A set is followed fact by fact while the facts changed since it was made are no more than the facts
# it holds, and those of them it may hear no more than half of them (or FOLLOWED, whichever is more);
# past that it is made whole again. Following costs about 0.15 ms a changed fact and 0.6 ms more a
# heard one; making it whole about 0.25 ms a fact it holds (measured at 10k facts). So a daily import
# of a few hundred facts onto 100k costs the next query that change, not the 25 s of the whole.
FOLLOWED = 100
KEPT = 4  # audiences whose sets are kept
BATCH = 100_000  # quads a bulk write of a set made whole takes at once (60 ms a call at 256 facts a call)
FORMAT = "7"  # what a kept set holds and how: a set of another format is made again
_AT = vocab.kg("heardSetAt")  # <index node> _AT "JSON": the journal position it reflects, and the schema's digest
_SIZE = vocab.kg("heardSetFacts")  # <index node> _SIZE n: the facts it holds (none said: unknown)
_NAMES = vocab.kg("heardSetNames")  # <fact> _NAMES <entity>: a heard fact and an entity it names
# <index node> _GATHERED "JSON": a gathering cut short by its time limit, at a journal position and
# schema, and how many of the heard facts, in order, it holds; the next one there goes on from them
_GATHERED = vocab.kg("heardSetGathered")
_BOOK = ox.DefaultGraph()


class HeardSet:
    """What one audience of one perspective may read, at one journal position (``position``)."""

    def __init__(self, session, folder: Path | None = None):
        self.base = vocab.perspective_base(session.perspective)
        self.entities = session.entities_graph
        self.folder = folder
        self.backend = None
        self._open(writable=folder is None or not folder.exists())
        self.position = self.schema = None
        for quad in self.store.quads_for_pattern(vocab.INDEX_NODE, _AT, None, _BOOK):
            at = json.loads(quad.object.value)
            self.position, self.schema = Position.from_dict(at), at.get("schema")
        self.size = 0
        for quad in self.store.quads_for_pattern(vocab.INDEX_NODE, _SIZE, None, _BOOK):
            self.size = int(quad.object.value)

    def _open(self, writable: bool) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = self.store = None  # dropped, so closed, before the next one opens
        if self.folder is None:
            self.backend = open_backend("memory")
        else:
            try:
                self.backend = open_backend("oxigraph", self.folder, read_only=not writable)
            except (KgError, RuntimeError) as exc:  # its message and hint are the index's: this is a cache of its own
                # (a RuntimeError is the store's own word for a corrupt folder, "Corruption: CURRENT file
                # corrupted", naming no table: left to the command, it would be taken for the index's)
                why = (
                    exc.message.removeprefix(f"cannot open the index at {self.folder}: ")
                    if isinstance(exc, KgError)
                    else one_line(exc)
                )
                raise Damaged(
                    f"cannot open the kept dataset of an audience at {self.folder}: {why}",
                    hint="remove the cache/ folder (rm -r cache): it is derived, and made again at the next read",
                ) from None
        self.store, self.writable = self.backend.store, writable

    def _changing(self) -> None:
        if not self.writable:
            self._open(writable=True)

    def quads(self):
        """Every quad a reader of the set is shown: all but its own bookkeeping (an export)."""
        return (quad for quad in self.store if quad.graph_name != _BOOK)

    def settle(self) -> None:
        """Open a kept store read-only again after a change. A query runs in a forked child, and a
        store open for writing may have background work holding its locks at the fork, which the
        child would wait on for ever; a read-only one has none."""
        if self.folder is not None and self.writable:
            self._open(writable=False)

    def release(self) -> None:
        """Let other requests change a resident's set again (a query's fork has its own copy)."""

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = self.store = None  # dropped: a reference kept elsewhere (a traceback) holds no store

    def record(self, position, schema: str | None) -> None:
        """Record the journal position it reflects now, with the digest of the schema it holds (a
        schema.json put in place changes the schema and not the journal), and how many facts it holds
        (last, after its change: a set cut short reflects the position before, and following the same
        transactions again is harmless)."""
        self._changing()
        self._book(_GATHERED, None)
        self._book(_AT, json.dumps({**position.as_dict(), "schema": schema}))
        self._book(_SIZE, str(self.size))
        self.position, self.schema = position, schema

    def _book(self, what, value: str | None) -> None:
        """Set the bookkeeping ``what`` of the set to ``value`` (None: take it away)."""
        for quad in list(self.store.quads_for_pattern(vocab.INDEX_NODE, what, None, _BOOK)):
            self.store.remove(quad)
        if value is not None:
            self.store.add(ox.Quad(vocab.INDEX_NODE, what, ox.Literal(value), _BOOK))

    # --- made whole ----------------------------------------------------------------------------------

    def fill(self, session, deadline: float | None = None, timeout: float | None = None, at=None) -> "HeardSet":
        """Read it whole from the session's index. Raises Refused once past ``deadline``
        (time.monotonic()): a query's time limit counts the gathering. A kept set gathered for
        ``at`` (the journal position and schema digest the index is at) keeps what it gathered then,
        and the next gathering at the same ``at`` goes on from there: a knowledge base whose
        gathering takes longer than any limit (minutes at 1M facts) is gathered over several
        queries, each holding the lock no longer than its limit."""
        from kgrdf.schema import SCHEMA_GRAPH

        backend = session.backend
        self.position = None
        session.kb.note(f"gathering what the audience {session.hearer} may read ...")  # (kept for the next reads)
        heard = all_heard(session)
        order = sorted(heard)  # the same order at the same position: a gathering cut short goes on
        start = self._gathered(at, len(order))
        if start == 0:
            self._empty()
            kept = list(backend.quads_in(ox.NamedNode(SCHEMA_GRAPH)))
            named = set()
        else:
            self._changing()
            kept = []
            named = {q.object.value for q in self.store.quads_for_pattern(None, _NAMES, None, _BOOK)}
        self.size = len(heard)
        for done in range(start, len(order)):  # each graph by its name: the cost follows what it may read
            # (checked once 256 facts are gathered: each gathering gets on, however long the reads before)
            if done > start and done % 256 == 0 and deadline is not None and time.monotonic() > deadline:
                raise past_limit(timeout, kept=self._cut_short(kept, at, done))
            if len(kept) >= BATCH:  # in large batches: each call of a store on disk writes files of its own
                self.store.bulk_extend(kept)
                kept = []
            quads, names = self._fact_quads(session, order[done], heard.__contains__)
            kept += quads
            named |= names
        for subject, quads in _by_subject(backend.quads_in(self.entities)).items():
            if subject in named or _is_self(quads):
                kept += described(session, subject, quads)
        self.store.bulk_extend(kept)
        return self

    def _cut_short(self, kept: list, at, done: int) -> bool:
        """Keep what a gathering cut short has gathered, the ``done`` first heard facts, for the next
        one at ``at``; whether it is kept (a set in memory is not)."""
        if self.folder is None or at is None:
            return False
        self.store.bulk_extend(kept)
        self._book(_GATHERED, json.dumps([*at, done]))
        return True

    def _gathered(self, at, facts: int) -> int:
        """How many of the ``facts`` heard facts, in order, a gathering cut short at ``at`` left in
        the set; 0 (the set to be emptied) for any other."""
        if at is None or self.folder is None:
            return 0
        for quad in self.store.quads_for_pattern(vocab.INDEX_NODE, _GATHERED, None, _BOOK):
            *cut_at, done = json.loads(quad.object.value)
            if cut_at == list(at) and 0 < done <= facts:
                return done
        return 0

    def _empty(self) -> None:
        if self.folder is not None:  # a store of its own again: clearing one leaves its bytes on disk
            self.close()
            shutil.rmtree(self.folder, ignore_errors=True)
            self._open(writable=True)
        else:
            self.store.clear()

    def _fact_quads(self, session, fact: str, hears_fact) -> tuple[list, set]:
        """The quads of a heard fact as the audience is shown them, with the bookkeeping of the
        entities it names; and those entities."""
        backend = session.backend
        node = ox.NamedNode(fact)
        quads = list(backend.quads_in(node))
        names = set()
        for quad in quads:
            names.add(quad.subject.value)
            if isinstance(quad.object, ox.NamedNode):
                names.add(quad.object.value)
        graph = vocab.provenance_graph(node)
        triples = [(q.subject, q.predicate, q.object) for q in backend.quads_in(graph)]
        shown = provenance_shown(fact, triples, session.may_hear_in, hears_fact, session.may_hear_promotion)
        quads += [ox.Quad(s, p, o, graph) for s, p, o in shown]
        quads += [ox.Quad(node, _NAMES, ox.NamedNode(name), _BOOK) for name in names]
        return quads, names

    def _heard(self, fact: str) -> bool:
        return any(True for _ in self.store.quads_for_pattern(ox.NamedNode(fact), _NAMES, None, _BOOK))

    def _named(self, entity: str) -> bool:
        return any(True for _ in self.store.quads_for_pattern(None, _NAMES, ox.NamedNode(entity), _BOOK))

    def _drop_fact(self, fact: str) -> set[str]:
        """Take the fact out; the entities it named."""
        node = ox.NamedNode(fact)
        names = {q.object.value for q in self.store.quads_for_pattern(node, _NAMES, None, _BOOK)}
        for graph in (node, vocab.provenance_graph(node)):
            if self.store.contains_named_graph(graph):
                self.store.remove_graph(graph)
        for quad in list(self.store.quads_for_pattern(node, _NAMES, None, _BOOK)):
            self.store.remove(quad)
        return names

    # --- brought up to date ----------------------------------------------------------------------------

    def catch_up(self, session, transactions) -> bool:
        """Follow ``transactions`` (journal Transactions written since the set was made) fact by fact.
        False when one of them is a change it cannot follow, or one too large beside the set for
        following to cost less than making it whole (FOLLOWED): the caller makes it whole again.
        Each row is read by its text (its graph and subject)."""
        from kgrdf.schema import SCHEMA_GRAPH

        facts, entities = set(), set()
        for tx in transactions:
            for line in (*tx.deletes, *tx.adds):
                graph = nquads.graph_of(line)
                if graph == SCHEMA_GRAPH:
                    return False  # another schema: every fact may read otherwise
                if graph == self.entities.value:
                    entities.add(nquads.subject_of(line) or _quad(line).subject.value)  # (a blank node: parsed)
                elif graph.startswith(self.base):
                    facts.add(graph.removesuffix("/provenance"))
        if len(facts) > max(FOLLOWED, self.size):
            return False
        made = _made(transactions)
        heard_now = session.may_hear_many(facts)
        if len(heard_now) > max(FOLLOWED, self.size // 2):
            return False
        heard_before = {fact for fact in facts if self._heard(fact)}
        if any((fact in heard_before) != (fact in heard_now) and fact not in made for fact in facts):
            return False  # heard before and not now, or now and not before: others' provenance names it
        self._changing()
        self.size = max(0, self.size + len(heard_now) - len(heard_before))  # (a set kept before it counted: 0)

        def hears_fact(other: str) -> bool:
            return other in heard_now or (other not in facts and self._heard(other))

        touched = set(entities)
        for fact in facts:
            touched |= self._drop_fact(fact)
        for fact in sorted(heard_now):
            quads, names = self._fact_quads(session, fact, hears_fact)
            self.store.extend(quads)
            touched |= names
        for subject in touched:
            self._describe(session, subject)
        return True

    def _describe(self, session, subject: str) -> None:
        """Keep the entity's description as the index holds it when a heard fact names it (or it is
        the perspective's own organization), and none of it otherwise."""
        node = ox.NamedNode(subject)
        for quad in list(self.store.quads_for_pattern(node, None, None, self.entities)):
            self.store.remove(quad)
        quads = list(session.backend.quads_in(self.entities, node))
        if quads and (self._named(subject) or _is_self(quads)):
            self.store.extend(described(session, subject, quads))


_PROMOTED_TO, _ACTION, _CHANGE = vocab.kg("promotedTo"), vocab.kg("action"), vocab.kg("change")


def provenance_shown(fact: str, triples: list[tuple], hears, hears_fact, hears_promotion) -> list[tuple]:
    """The triples of a heard fact's provenance graph an audience is shown: model.heard_triples's,
    and of a claim promoted to an actor, the promotion (kg:promotedTo, and the update that recorded
    it with its changes) only when it may hear the promotion (``hears_promotion(fact)``): the actor
    exists for an audience only when a fact it may hear names it, and a claim heard in one audience
    says nothing of what the owner linked it to. Every read of provenance for an audience passes
    here: the set it may read, and the facts a session reads for it (FactReads). Pure."""
    shown = model.heard_triples(fact, triples, hears, hears_fact)
    if not any(s.value == fact and p == _PROMOTED_TO for s, p, o in shown) or hears_promotion(fact):
        return shown
    hidden = {s.value for s, p, o in triples if p == _ACTION and o.value == "promote"}
    hidden |= {o.value for s, p, o in triples if p == _CHANGE and s.value in hidden}
    return [(s, p, o) for s, p, o in shown if s.value not in hidden and not (s.value == fact and p == _PROMOTED_TO)]


_ALIASES = {vocab.ALT_LABEL, vocab.WEAK_ALIAS}
_ALIAS_KEYS = {vocab.kg("aliasKey"), vocab.kg("weakAliasKey")}


def described(session, subject: str, quads: list) -> list:
    """An entity's description (its quads or triples) as the audience is shown it: without the names
    of an organization merged into it that does not exist for it (Session.hidden_names), nor their
    match keys. Every read of descriptions for an audience passes them here: the set it may read,
    and the Turtle export (RawReads._current_triples)."""
    hidden = session.hidden_names(subject)
    if not hidden:
        return quads
    keys = {model.match_key(name) for name in hidden}
    return [
        q
        for q in quads
        if not (q.predicate in _ALIASES and q.object.value in hidden)
        and not (q.predicate in _ALIAS_KEYS and q.object.value in keys)
    ]


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
    """The audience's set, brought up to date, for one read. A resident process (kg serve) keeps it
    open and held (no other request changes it) until ``release()`` or the end of the block; a
    command opens the kept one and closes it after. Where none may be kept (no cache/ to write, an
    index behind the journal, another process using it) one is made in memory for this read."""
    position = session.kb.view()
    if session.backend.position() != (position.seq, position.digest):
        yield HeardSet(session).fill(session, deadline, timeout)  # the index as it is, behind
        return
    resident = session.kb.resident
    if resident is None:
        current = _opened(session)
        if current is None:
            yield HeardSet(session).fill(session, deadline, timeout)
            return
        try:
            yield _current(current, session, position, deadline, timeout)
        finally:
            _close(current)
        return
    kept = resident.keep(("heard", session.perspective, session.hearer), KEPT)
    kept.acquire()
    try:
        if kept.value is not None and _lost(kept.value):  # kg forget deleted cache/ under it: made again
            _close(kept.value)
            kept.value = None
        if kept.value is None:
            kept.value = _opened(session) or HeardSet(session)
        current = kept.value
        _current(current, session, position)  # made whole, whatever the query's limit: the next query finds it
        current.release = kept.release
        yield current
    finally:
        kept.release()


def _current(current: HeardSet, session, position, deadline=None, timeout=None) -> HeardSet:
    schema = session.backend.schema_digest()
    if (current.position, current.schema) == (position, schema):
        return current
    if current.position is None or current.schema != schema or not _caught_up(current, session, position):
        current.fill(session, deadline, timeout, at=(position.seq, position.digest, schema))
    current.record(position, schema)
    current.settle()
    return current


def _opened(session) -> HeardSet | None:
    """The kept set of the session's audience, opened with its lock held; None where none may be
    kept or another process has it open."""
    kb_path = getattr(session.kb, "path", None)
    if kb_path is None or session.kb.backend_kind == "memory":
        return None
    cache = Path(kb_path) / files.CACHE
    key = hashlib.sha256(f"{FORMAT} {session.perspective} {session.hearer}".encode()).hexdigest()[:16]
    folder = cache / "heard" / key
    try:
        if cache.is_symlink() or folder.parent.is_symlink():
            return None  # never where a link points
        folder.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        fd = os.open(folder.parent / f"{key}.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
    except OSError:
        return None
    try:
        os.utime(fd)  # the most recently used: the last one removed
        _forget_least_used(folder.parent)
        try:
            current = HeardSet(session, folder)
        except KgError:  # a store that does not open: made again
            shutil.rmtree(folder, ignore_errors=True)
            current = HeardSet(session, folder)
    except (OSError, KgError):
        os.close(fd)
        return None
    current.lock = fd
    return current


def _lost(current: HeardSet) -> bool:
    """Whether a kept set's folder or lock file was removed since it was opened (kg forget deletes
    cache/ whole): its store cannot be written again, and another process would lock a new file and
    open the same folder. A set in memory is never lost."""
    if current.folder is None:
        return False
    try:
        held = os.fstat(current.lock)
        there = os.stat(current.folder.parent / f"{current.folder.name}.lock")
    except (AttributeError, OSError):
        return True
    return (held.st_dev, held.st_ino) != (there.st_dev, there.st_ino) or not current.folder.is_dir()


def _close(current: HeardSet) -> None:
    current.close()
    fd = getattr(current, "lock", None)
    if fd is not None:
        os.close(fd)


def _forget_least_used(folder: Path) -> None:
    """Remove the kept sets past KEPT, the least recently used first, but none another process has open."""
    locks = sorted(folder.glob("*.lock"), key=lambda p: p.stat().st_mtime, reverse=True)
    for lock in locks[KEPT:]:
        fd = os.open(lock, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(folder / lock.stem, ignore_errors=True)
            lock.unlink()
        except OSError:
            pass
        finally:
            os.close(fd)


def past_limit(timeout: float, kept: bool = False) -> Refused:
    return Refused(
        f"gathering what the audience may read took longer than the query's time limit of {timeout:g} s",
        hint=("what it gathered is kept: ask again to go on, or give" if kept else "give")
        + " it longer with --timeout (a running kg serve keeps what it gathered: ask again)",
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


def _made(transactions) -> set[str]:
    """The facts these transactions make (a row of theirs adds the fact's kg:Fact type)."""
    typed = f" <{vocab.RDF_TYPE.value}> <{vocab.FACT.value}> "
    return {
        nquads.subject_of(line)
        for tx in transactions
        for line in tx.adds
        if line.startswith("<") and line.startswith(typed, line.index(">") + 1)
    }


def _by_subject(quads) -> dict[str, list]:
    out: dict[str, list] = {}
    for quad in quads:
        out.setdefault(quad.subject.value, []).append(quad)
    return out


def _is_self(quads) -> bool:
    return any(q.predicate == vocab.SELF_ORGANIZATION for q in quads)
