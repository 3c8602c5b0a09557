"""SHACL validation of what a write touches, before anything reaches the journal (§6, §4), and of
the whole knowledge base (kg validate).

The shapes check a *validation view*: one plain graph holding the ontology, each fact's provenance
triples and its one triple said about it (``kg:assertedSubject``, ``kg:assertedPredicate``,
``kg:assertedObject``), and the entities' descriptions. ``queries/validation-view.rq`` builds it
from the dataset: from the index here, from kg export's TriG with any other engine. A write's view holds the
facts it touches, the entities they name and, as context only, the other facts with the same subject
and predicate (for the single-valued warning), so the cost follows the size of the change; kg
validate's holds everything. kgrdf.shacl checks it against ``shapes/facts.ttl``.
"""

import re

from kgrdf import files, vcs, vocab
from kgrdf.errors import Refused
from kgrdf.shacl import Finding, readable, shapes_graph  # noqa: F401 (callers find them here too)

ASSERTED = {"s": vocab.kg("assertedSubject"), "p": vocab.kg("assertedPredicate"), "o": vocab.kg("assertedObject")}


def view_of(dataset):
    """The validation view of the dataset held in the pyoxigraph store ``dataset`` (the schema in the
    graph https://kgrdf.org/ns, each fact and its provenance in graphs of their own, the entities
    in theirs), built by queries/validation-view.rq, as a new in-memory store. Oxigraph writes the
    view out and reads it back in one go: no term passes through Python."""
    from pyoxigraph import RdfFormat, Store

    from kgrdf import queries

    constructed = dataset.query(queries.load("validation-view").text)
    store = Store()
    store.bulk_load(input=constructed.serialize(format=RdfFormat.N_TRIPLES), format=RdfFormat.N_TRIPLES)
    return store


def _add_view(dataset) -> None:
    """The view of an in-memory dataset of our own, added to its default graph, which is all the
    shapes read: validation-view.rq's CONSTRUCT run as an INSERT (half the time of writing the view
    out and reading it into another store)."""
    from kgrdf import queries

    text = queries.load("validation-view").text
    dataset.update(re.sub(r"^CONSTRUCT\s*\{", "INSERT {", text, count=1, flags=re.M))


def view(fact_quads, entity_quads, ontology=None):
    """The validation view of some facts' quads (assertion and provenance graphs), entities' quads
    and the ontology (the schema's, by default) in the default graph of an in-memory Oxigraph store.
    A quad in the default graph is taken as already in the view's form (the examples under
    tests/shapes are written so)."""
    from pyoxigraph import NamedNode, Quad, Store

    from kgrdf import schema

    ontology = schema.quads() if ontology is None else ontology
    schema_graph = NamedNode(schema.SCHEMA_GRAPH)
    store = Store()
    store.extend(Quad(q.subject, q.predicate, q.object, schema_graph) for q in ontology)
    store.extend([*fact_quads, *entity_quads])
    _add_view(store)
    return store


def view_from_lines(fact_lines, entity_lines, ontology):
    """The same view as :func:`view`, from the journal's N-Quads lines, parsed by Oxigraph in one go:
    what a large write's checker builds for each chunk of it. validation-view.rq's rule, made on the
    lines themselves, which the checker knows to be a fact's triple or its provenance: twice as fast
    as loading them and running the query, a second and a half of an import of 10k facts (a test
    checks that both give the same view)."""
    from pyoxigraph import Store

    rows = _view_rows(fact_lines, entity_lines)
    # The ontology in the same text, into the default graph as the shapes read it: one load, rather
    # than a quad at a time through the interpreter (each of which waits on its lock while a write
    # stages its next chunk beside this check).
    rows += [f"{q.subject} {q.predicate} {q.object}" for q in ontology]
    store = Store()
    _load_rows(store, rows)
    return store


def _view_rows(fact_lines, entity_lines) -> list[str]:
    """The view's rows (N-Triples, without the closing " .") of facts' and entities' lines."""
    asserted = {k: f"<{v.value}>" for k, v in ASSERTED.items()}
    out = []
    for line in fact_lines:
        triple, _, graph = line.rpartition(" ")
        if graph.endswith("/provenance>"):
            out.append(triple)
        else:
            s, p, o = triple.split(" ", 2)
            out += [f"{graph} {asserted['s']} {s}", f"{graph} {asserted['p']} {p}", f"{graph} {asserted['o']} {o}"]
    out += [line.rpartition(" ")[0] for line in entity_lines]
    return out


def _load_rows(store, rows: list[str]) -> None:
    from pyoxigraph import RdfFormat

    if rows:
        store.load(input=(" .\n".join(rows) + " .\n").encode("utf-8"), format=RdfFormat.N_TRIPLES)


class StandingView:
    """The view of the facts a large write changes again and again (a fact heard 100k times has a
    million rows), kept from one chunk of the write's check to the next: each chunk brings it the
    rows staged for them since (less their update records, which a fact's view leaves out, as
    model.fact_lines does), so that the last check finds their view made, rather than building it
    whole once the staging is done.

    The write notes what it stages (start, note, take) in its own thread; the checker applies each
    chunk's share (apply, check) in its thread, one chunk after another."""

    def __init__(self, ontology):
        self.facts: set[str] = set()
        self._ontology = ontology
        self._deletes: dict[str, None] = {}  # staged since the last take, a row deleted then added cancelling out
        self._adds: dict[str, None] = {}
        self._store = None
        self._entities: frozenset[str] = frozenset()  # the entities' lines the store holds
        self._failed: BaseException | None = None  # what an apply raised, raised again by the next

    def start(self, iri: str, lines: list[str]) -> None:
        """Keep the fact ``iri`` in the view from now on, from all its rows as they stand."""
        self.facts.add(iri)
        self.note(iri, [], lines)

    def note(self, iri: str, deletes, adds) -> None:
        """Rows staged for the fact ``iri`` (nothing unless it is kept here)."""
        if iri not in self.facts:
            return
        records = f"<{iri}/update/"
        for rows, kept, undone in ((deletes, self._deletes, self._adds), (adds, self._adds, self._deletes)):
            for key in rows:
                if key.startswith(records):
                    continue
                if key in undone:
                    del undone[key]  # added then deleted (or the reverse) since the last take: nothing
                else:
                    kept[key] = None

    def take(self) -> tuple[list[str], list[str]]:
        """The rows deleted and added since the last take, for the checker to apply."""
        taken = list(self._deletes), list(self._adds)
        self._deletes, self._adds = {}, {}
        return taken

    def apply(self, deletes: list[str], adds: list[str], entity_lines: frozenset[str]):
        """Bring the view to the rows taken and to the entities' lines as they now stand; returns its
        store (in the checker's thread)."""
        if self._failed is not None:
            raise self._failed  # an apply of an earlier chunk failed: its rows are not all in the view
        try:
            return self._apply(deletes, adds, entity_lines)
        except BaseException as exc:
            self._failed = exc
            raise

    def _apply(self, deletes: list[str], adds: list[str], entity_lines: frozenset[str]):
        from pyoxigraph import DefaultGraph, Quad, RdfFormat, Store, parse

        if self._store is None:
            self._store = Store()
            _load_rows(self._store, [f"{q.subject} {q.predicate} {q.object}" for q in self._ontology])
        gone = _view_rows(deletes, self._entities - entity_lines)
        if gone:
            text = (" .\n".join(gone) + " .\n").encode("utf-8")
            for triple in parse(text, format=RdfFormat.N_TRIPLES):
                self._store.remove(Quad(triple.subject, triple.predicate, triple.object, DefaultGraph()))
        _load_rows(self._store, _view_rows(adds, entity_lines - self._entities))
        self._entities = entity_lines
        return self._store

    def with_facts(self, deletes: list[str], adds: list[str], entity_lines: frozenset[str], fact_lines):
        """The view brought up to date (:meth:`apply`) with other facts' lines added: the whole view
        of a small write's last check, after which the standing view is done with."""
        store = self.apply(deletes, adds, entity_lines)
        _load_rows(store, _view_rows(fact_lines, []))
        return store

    def check(self, deletes: list[str], adds: list[str], entity_lines: frozenset[str]) -> list[Finding]:
        """The violations in the view brought up to date (:meth:`apply`): the last chunk's."""
        return _violations(self.apply(deletes, adds, entity_lines))


def check_lines(fact_lines, entity_lines, ontology) -> list[Finding]:
    """The violations in a view made of N-Quads lines and the ontology's quads: what a large write's
    worker runs on each chunk of it. (One query at a time while the write stages the next chunk was
    tried: as fast, and the chunks waiting for it held a tenth more memory.)"""
    return _violations(view_from_lines(fact_lines, entity_lines, ontology))


def _violations(data) -> list[Finding]:
    """The violations in a large write's view, two queries at a time."""
    from kgrdf import shacl

    return shacl.check(data, shapes_graph(), severities=("violation",), threads=2)


def check(data, focus: list[str], kb_path=None, threads: int = 1) -> list[Finding]:
    """Validate the view ``data`` on the ``focus`` nodes (and the sources of the facts among them);
    every finding, violations and warnings. The same set-based evaluator as kg validate's
    (kgrdf.shacl): on a write's small view it takes milliseconds, and a write, an import and kg
    validate cannot disagree. With ``kb_path``, the compiled shapes are kept in its cache/; with
    ``threads``, that many queries run at a time (a view of a fact heard 100k times)."""
    from kgrdf import shacl

    if not focus:
        return []
    # A fact's sources are checked with it.
    derived = vocab.term("prov:wasDerivedFrom")
    nodes = set(focus) | {
        q.object.value
        for f in focus
        if "/fact/" in f
        for q in data.quads_for_pattern(vocab.NamedNode(f), derived, None)
    }
    return shacl.check(data, shacl.compiled(kb_path=kb_path), threads=threads, focus=nodes)


def refuse_violations(findings: list[Finding]) -> list[Finding]:
    """Raise Refused with the first violation's message; return the warnings."""
    violations = [f for f in findings if f.severity == "violation"]
    if violations:
        first = violations[0]
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        # A refused fact's id was never given out: name only an entity.
        where = "" if "/fact/" in first.focus else f"{vocab.id_of(first.focus)}: "
        raise Refused(f"{where}{first.message}{more}", findings=[f.as_json() for f in violations])
    return [f for f in findings if f.severity == "warning"]


# --- the whole knowledge base ---------------------------------------------------------------------


# Facts checked together in one view: a view of 100k facts held at once takes about 1 GB in Oxigraph;
# of 5k, with the 100k facts' lines held for them, kg validate peaks under 1 GB (10k: 1.07 GB).
FACTS_PER_CHUNK = 5_000


def validate_all(session, progress=None, facts_per_chunk: int = FACTS_PER_CHUNK) -> list[Finding]:
    """Every fact and entity against the shapes (see :func:`shapes_on_lines`), on the journal's
    lines: what :func:`check_store` finds the index to hold."""
    return shapes_on_lines(_journal_lines(session.kb), session.backend.schema_quads(), progress, facts_per_chunk)


def shapes_on_lines(lines, ontology, progress=None, facts_per_chunk: int = FACTS_PER_CHUNK) -> list[Finding]:
    """Every fact and entity of ``lines`` (the journal's rebuild, N-Quads lines) against the shapes,
    each constraint one set-based query (see kgrdf.shacl), on the validation view of every
    perspective, a chunk of facts at a time (see :class:`_Chunks`), the chunks held in memory."""
    chunks, entity_lines, facts = _chunks(lines, facts_per_chunk)
    if progress:
        progress(facts)
    return _shapes_on_chunks(chunks, entity_lines, ontology)


def _shapes_on_chunks(chunks, entity_lines, ontology, read=lambda chunk: chunk) -> list[Finding]:
    """The findings of the shapes on each chunk's view (``read(chunk)``: its lines), one at a time.

    Of several chunks, the entities are checked once, in a view of their own, and each chunk's view
    holds only the entities its lines name (:class:`_Entities`), as a write's view does: every entity
    in every chunk's view made the work grow as the facts times the entities (at 100k facts, 70k
    entity lines loaded and checked 21 times over)."""
    from kgrdf import shacl

    compiled = shacl.compiled()
    findings: set[Finding] = set()
    if len(chunks) == 1:
        findings.update(shacl.check(view_from_lines(read(chunks[0]), entity_lines, ontology), compiled))
        return sorted(findings, key=lambda f: (f.severity, f.focus, f.message))
    from concurrent.futures import ThreadPoolExecutor

    entities = _Entities(entity_lines)

    def view_of(chunk):  # None: the entities' own view
        if chunk is None:
            return view_from_lines([], entity_lines, ontology)
        lines = read(chunk)
        # A chunk with no lines has the entities' own view, checked already.
        return view_from_lines(lines, entities.named_in(lines), ontology) if lines else None

    # The next view is made while the shapes run on this one: two views held, at most.
    with ThreadPoolExecutor(max_workers=1) as maker:
        coming = maker.submit(view_of, None)
        for chunk in [*chunks, None]:
            data = coming.result()
            if chunk is not None:
                coming = maker.submit(view_of, chunk)
            if data is not None:
                findings.update(shacl.check(data, compiled))
            del data
    return sorted(findings, key=lambda f: (f.severity, f.focus, f.message))


class _Entities:
    """The entity lines by the node they describe, to give a chunk of facts the entities it names:
    all that a fact's constraints reach beyond its own graphs, the facts of its subject and the
    ontology (its subject's and object's types). An entity comes with every line about it, and with
    the entities (or blank nodes) those lines lead to, so a constraint on it finds there what it
    finds in the view of every entity; one that compares entities with each other (one self
    organization a perspective) finds them all in the entities' own view."""

    def __init__(self, lines):
        self.about: dict[str, list[str]] = {}
        for line in lines:
            self.about.setdefault(line.partition(" ")[0], []).append(line)

    def named_in(self, lines) -> list[str]:
        """The lines of the entities that are the subject or the object of one of ``lines``, and of
        those they lead to. A literal's first word is taken for a node too: it only brings more
        context."""
        about = self.about
        named = {node for line in lines for node in line.split(" ", 3)[:3:2]} & about.keys()
        todo, out = list(named), []
        while todo:
            for line in about[todo.pop()]:
                out.append(line)
                node = line.split(" ", 3)[2]
                if node in about and node not in named:
                    named.add(node)
                    todo.append(node)
        return out


def _journal_lines(kb):
    """The journal's rebuild, line by line (a line added twice may come twice)."""
    from kgrdf import journal as journal_mod

    entries, _torn = kb.journal.read_after(journal_mod.Position())
    return journal_mod.folded([tx for tx, _ in entries])


def _chunks(lines, facts_per_chunk: int) -> tuple[list[list[str]], list[str], int]:
    """(the fact lines in chunks, the entity lines, the number of facts), held in memory."""
    lines = list(lines)
    chunks = _Chunks().learn(lines)
    chunks.lay_out(max(1, -(-len(chunks.subject) // facts_per_chunk)), lambda _n: [])
    chunks.take(lines)
    return chunks.sinks, chunks.entity_lines, len(chunks.subject)


class _Chunks:
    """The journal's rebuild laid out for the shapes, a chunk of facts at a time: a fact's lines (its
    triple and its provenance) go to the chunk of its subject, so that the facts of one subject
    meet; each chunk's view holds them with the entities they name and the ontology, which is all
    the context a constraint reaches from a fact (the single-valued warning compares the facts of
    one subject), and the entities are checked in a view of their own (:func:`_shapes_on_chunks`).
    :meth:`learn` reads each fact's subject first (a pass over the lines as they were added), so a
    provenance line finds its fact's chunk whenever it comes. ``sink(n)`` makes chunk n's holder:
    a list, or a file that keeps memory bounded whatever the size of the journal."""

    def __init__(self):
        from kgrdf.schema import SCHEMA_GRAPH

        self.count = 0
        self.sinks: list = []
        self.subject: dict[str, str] = {}  # a fact's graph -> its subject, as written
        self.entity_lines: list[str] = []
        self._schema = f"<{SCHEMA_GRAPH}>"

    def lay_out(self, count: int, sink) -> None:
        """Make ``count`` chunks, each held by ``sink(n)``."""
        self.count = count
        self.sinks = [sink(n) for n in range(count)]

    def learn(self, lines) -> "_Chunks":
        """Note the subject of each fact triple among ``lines``."""
        from kgrdf.privacy import is_entities_graph

        subject, schema = self.subject, self._schema
        for line in lines:
            graph = line.rpartition(" ")[2]
            if graph not in subject and not graph.endswith("/provenance>") and graph != schema:
                if not is_entities_graph(graph[1:-1]):
                    subject[graph] = line.partition(" ")[0]
        return self

    def take(self, lines) -> None:
        """Route each of ``lines`` (the rebuild's) to its chunk, or keep it as an entity line."""
        from kgrdf.privacy import is_entities_graph

        subject, schema, count = self.subject, self._schema, self.count
        parts: list[list[str]] = [[] for _ in range(count)]  # written a part at a time, not a line
        for line in lines:
            graph = line.rpartition(" ")[2]
            if graph.endswith("/provenance>"):
                fact = graph[: -len("/provenance>")] + ">"
            elif graph == schema:
                continue
            elif graph not in subject and is_entities_graph(graph[1:-1]):
                self.entity_lines.append(line)
                continue
            else:
                fact = graph
            parts[hash(subject.get(fact, fact)) % count].append(line)
        for sink, part in zip(self.sinks, parts, strict=True):
            if part:
                sink.extend(part)


# A schema change's findings shown (kg validate lists every one once it is in place).
BREAKS_SHOWN = 5


def check_schema(raw: bytes, label: str, path=None, kb=None):
    """kg schema check: a schema file's bytes checked (kgrdf.extension.check); with ``kb``, as its
    next schema.json, which must also leave its data valid: what the data uses kept, and no fact or
    entity that conforms now made to break a shape (a site predicate's domain or range narrowed, a
    site type moved under another parent), the shapes run on every perspective's data under the new
    schema (and under the present one, for what breaks already, when the new one finds anything)."""
    from kgrdf import extension, schema

    ext = extension.check(raw, label, path, kb=kb)
    if kb is None or not ext.accepted:
        return ext
    with kb.reading() as session:
        if session.backend.schema_digest() == schema.digest_of(raw):
            return ext  # the schema.json it has: what breaks, breaks already
        now = session.backend.schema_quads()
        kb.note("checking every fact and entity under the new schema ...")
        lines = list(_journal_lines(kb))
        after = _violated(shapes_on_lines(lines, schema.quads() + ext.quads))
        broken = sorted(after - _violated(shapes_on_lines(lines, now)) if after else ())
    ext.problems += [f"{vocab.id_of(focus)} would break a shape: {message}" for focus, message in broken[:BREAKS_SHOWN]]
    if len(broken) > BREAKS_SHOWN:
        ext.problems.append(f"and {len(broken) - BREAKS_SHOWN} more that kg validate would list once it is in place")
    return ext


def _violated(findings) -> set[tuple[str, str]]:
    return {(f.focus, f.message) for f in findings if f.severity == "violation"}


def check_store(kb) -> list[dict]:
    """The store's own checks: each finding is {"check", "message"}; any of them means damage."""
    return validate_kb(kb, shapes=False)["damage"]


def validate_kb(kb, progress=None, shapes: bool = True) -> dict:
    """kg validate, under the shared lock: the store's own checks ("damage": each {"check",
    "message"}) and, on an undamaged store, every fact and entity against the shapes ("findings").
    A table of the index that fails its checksum as it is read is damage, and is marked so: the
    next command makes the index again from the journal."""
    from kgrdf import errors

    try:
        return _validated(kb, progress, shapes)
    except (RuntimeError, OSError) as exc:
        if not kb.mark_index_damaged(exc):
            raise
        return {"damage": [{"check": "index reads", "message": errors.of(exc).message}], "findings": []}


def _validated(kb, progress, shapes: bool) -> dict:
    """(validate_kb)

    The journal is read twice, never held: a first pass checks every patch and notes what was
    deleted and each fact's subject; the second folds it a transaction at a time into its rebuild,
    which is both what the index must equal (each line's hash kept, 8 bytes a line) and what the
    shapes check, laid out in chunk files under cache/ (:class:`_Chunks`, removed at the end). The
    index is written out and hashed on one core (:class:`_IndexHashes`, 13 s at 100k facts) while
    this runs on the other; a store found damaged drops the shapes' findings. Its memory follows the
    entities and one chunk, not the journal."""
    import itertools

    from kgrdf import journal as journal_mod
    from kgrdf.errors import Damaged

    problems = []
    view_position = kb.view()
    torn: list = []
    last, deleted, adds = journal_mod.Position(), {}, 0
    chunks = _Chunks()
    try:
        for tx, after in kb.journal.transactions(journal_mod.Position(), torn):
            last = after
            deleted.update(zip(tx.deletes, itertools.repeat(tx.seq)))
            adds += len(tx.adds)
            chunks.learn(tx.adds)
        tx = None  # (an import's transaction is hundreds of MB: not held through the next pass)
    except Damaged as exc:
        return {"damage": [{"check": "journal parses", "message": exc.message}], "findings": []}
    for piece in torn:
        problems.append(
            {
                "check": "torn tail",
                "message": f"{piece.segment.parent.name}/{piece.segment.name} ends with {piece.size} bytes that are "
                f"not a whole transaction",
            }
        )
    if (last.seq, last.digest) != (view_position.seq, view_position.digest):
        problems.append(
            {
                "check": "journal position",
                "message": f"view.json is at transaction {view_position.seq}, the journal ends at {last.seq}"
                + ("" if last.seq != view_position.seq else " with another digest (edited outside kgrdf?)"),
            }
        )
    findings: list[Finding] = []
    backend = kb.open_index(read_only=True)
    spool = _Spool(kb.path)
    try:
        if backend is None:
            problems.append({"check": "index", "message": "there is no index (the next command rebuilds it)"})
        else:
            at = backend.position()
            if at != (view_position.seq, view_position.digest):
                problems.append(
                    {
                        "check": "index position",
                        "message": f"the index reflects transaction {at[0] if at else 'none'}, view.json {view_position.seq}",
                    }
                )
            hashing = _index_hashes(backend, keep=False)
            chunks.lay_out(max(1, -(-len(chunks.subject) // FACTS_PER_CHUNK)), spool.chunk)
            expected = _LineHashes()
            end = journal_mod.Position()
            for tx, after in kb.journal.transactions(journal_mod.Position()):
                if tx.seq > last.seq:
                    break
                end = after
                rebuilt = list(journal_mod.folded([tx], deleted))
                expected.add(rebuilt)
                chunks.take(rebuilt)
                tx = rebuilt = None  # let go before the next is read, and before the shapes run
            if (end.seq, end.digest) != (last.seq, last.digest):
                raise Damaged("the journal changed while it was validated", hint="run kg validate again")
            spool.close()
            if shapes and not problems:
                if progress:
                    progress(len(chunks.subject))
                findings = _shapes_on_chunks(chunks.sinks, chunks.entity_lines, backend.schema_quads(), spool.read)
            more = fewer = 0
            if hashing.result() != expected.digest():  # then, and only then, which lines differ
                found = _index_hashes(backend, keep=True).result()
                held = expected.as_set()
                more, fewer = len(found - held), len(held - found)
            if more or fewer:
                problems.append(
                    {
                        "check": "index equals a rebuild",
                        "message": f"the index differs from the journal's rebuild: {more} quads more, {fewer} fewer",
                    }
                )
    finally:
        spool.remove()
        kb.close_index(backend)
    problems += _files_checks(kb)
    return {"damage": problems, "findings": [] if problems else [f.as_json() for f in findings]}


class _LineHashes:
    """The hashes of a rebuild's lines, 8 bytes each in 256 arrays by their low byte: a line that
    comes twice (added twice) counts once in :meth:`digest`, found one array at a time."""

    def __init__(self):
        from array import array

        self.buckets = [array("q") for _ in range(256)]

    def add(self, lines) -> None:
        buckets = self.buckets
        for h in map(hash, lines):
            buckets[h & 255].append(h)

    def digest(self) -> tuple[int, int, int]:
        mask = (1 << 64) - 1
        count = total = squares = 0
        for bucket in self.buckets:
            unique = set(bucket)
            part = _digest(unique)
            count, total, squares = count + part[0], (total + part[1]) & mask, (squares + part[2]) & mask
        return count, total, squares

    def as_set(self) -> set[int]:
        return set().union(*map(set, self.buckets))


class _Spool:
    """Chunk files in ``cache/validate-<pid>/`` of a knowledge base (0700, each file 0600): what kg
    validate lays its rebuild out in, removed when it ends, and by the next one if it was killed (a
    folder whose process is gone). Where cache/ cannot be written in (or is a link), chunks are held
    in memory instead."""

    def __init__(self, kb_path):
        import os
        import shutil

        cache = kb_path / files.CACHE
        self.folder = None
        self._open: list = []
        try:
            if cache.is_symlink():
                return
            cache.mkdir(mode=0o700, exist_ok=True)
            for old in cache.glob("validate-*"):
                pid = old.name.partition("-")[2]
                if pid.isdigit() and not files.alive(int(pid)):
                    shutil.rmtree(old, ignore_errors=True)
            self.folder = cache / f"validate-{os.getpid()}"
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder.mkdir(mode=0o700)
        except OSError:
            self.folder = None

    def chunk(self, n: int):
        if self.folder is None:
            return []
        import os

        path = self.folder / f"chunk-{n:05d}.nq"
        out = open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8")
        self._open.append(out)
        return _ChunkFile(path, out)

    def close(self) -> None:
        for out in self._open:
            out.close()
        self._open = []

    def read(self, chunk) -> list[str]:
        if isinstance(chunk, list):
            return chunk
        # (at newlines alone: a literal may hold U+2028, or any other character splitlines breaks at)
        return chunk.path.read_text(encoding="utf-8").split("\n")[:-1]

    def remove(self) -> None:
        import shutil

        self.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


class _ChunkFile:
    """One chunk's lines, written to its file as they come."""

    def __init__(self, path, out):
        self.path = path
        self.extend = lambda lines: out.write("\n".join(lines) + "\n")


def _files_checks(kb) -> list[dict]:
    """Files edited outside kgrdf since the last commit, a git history that git fails to read, and
    kgrdf's own JSON files that do not parse."""
    import subprocess

    from kgrdf.errors import Damaged

    problems = []
    if (kb.path / ".git").exists():
        done = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=kb.path, capture_output=True, text=True
        )
        if done.returncode != 0:  # a history git fails to read: writes refuse until it is moved aside
            said = (done.stderr.strip().splitlines() or [f"git status exited {done.returncode}"])[0]
            problems.append({"check": "git history", "message": f"the git history in .git does not read (git: {said})"})
        edited = [line[3:] for line in done.stdout.split("\n") if line.strip()]
        if (kb.path / vcs.UNCOMMITTED).exists():  # a write whose commit git refused (busy): the next one makes it
            owed = ("view.json", "format.json", "replica.json", "sync.json")  # (and kb.committing's settings)
            edited = [name for name in edited if name not in owed and not name.startswith("journal/")]
        edited = [name for name in edited if name != "schema.json"]  # the site's own, copied in by hand (README)
        if edited:
            problems.append(
                {"check": "edited outside kgrdf", "message": "changed since the last commit: " + ", ".join(edited[:5])}
            )
    for name in ("view.json", "format.json", "replica.json"):
        try:
            files.read_json(kb.path / name)
        except Damaged as exc:
            problems.append({"check": "files parse", "message": exc.message})
    return problems


def _digest(hashes) -> tuple[int, int, int]:
    """A set of line hashes summed up: their count, their sum and the sum of their squares, each
    modulo 2**64. Two sets that differ give another digest but by a chance of about 2**-64 (the
    hashes are keyed by the process's own random seed, so no edit can be made to collide)."""
    mask = (1 << 64) - 1
    total = squares = 0
    for h in hashes:
        total = (total + h) & mask
        squares = (squares + h * h) & mask
    return len(hashes), total, squares


def _dump_to_pipe(store, pipe: str) -> None:
    """The store written out as N-Quads to the named pipe ``pipe``, which Oxigraph opens and writes
    without the interpreter's lock: written to a Python file, it takes that lock for every few
    kilobytes, which held the rest of kg validate to one core while the index was written out (15 s
    at 100k facts). Oxigraph then syncs the file it wrote, which a pipe refuses (EINVAL) once
    everything is written; an error before that cuts the lines short, so the digest differs from the
    rebuild's, and any other error leaves it unknown: either way the exact comparison, through a
    Python file, decides."""
    import errno

    from pyoxigraph import RdfFormat

    try:
        store.dump(output=pipe, format=RdfFormat.N_QUADS)
    except OSError as exc:  # Oxigraph gives its own errors without errno
        if exc.errno != errno.EINVAL and f"(os error {errno.EINVAL})" not in str(exc):
            raise


def _widen(pipe) -> None:
    """A pipe that holds 1 MB rather than 64 KB, where the system lets it: each read of the dump
    waits for the interpreter's lock, which the caller's own work holds up to 5 ms at a time."""
    import fcntl

    try:
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
    except (AttributeError, OSError):  # not Linux, or a limit lower than 1 MB: reads come smaller
        pass


def _index_hashes(backend, keep: bool):
    """The hashes of the index's data lines: dumped beside the caller's work from a store on this
    machine, read through the backend's own quads from a server."""
    return _IndexHashes(backend.store, keep) if backend.local else _QuadHashes(backend, keep)


class _QuadHashes:
    """What :class:`_IndexHashes` gives, from a backend's quads (a SPARQL server's: no store to dump)."""

    def __init__(self, backend, keep: bool):
        from kgrdf.schema import SCHEMA_GRAPH

        found = {hash(str(quad)) for quad in backend.quads() if quad.graph_name.value != SCHEMA_GRAPH}
        self.found = found if keep else _digest(found)

    def result(self):
        return self.found


class _IndexHashes:
    """The hash of each line of the index's data (its named graphs but the schema, which comes from
    ontology/, not the journal), as kgrdf writes a quad, computed beside the caller's own work:
    Oxigraph writes the index out as N-Quads in a thread of its own, which lets go of Python while it
    reads, and a second thread hashes what comes through a pipe (a named one for the digest, see
    :func:`_dump_to_pipe`), so neither the lines nor the dump are ever held whole. :meth:`result` waits for it: the set of hashes with ``keep``, else only
    their :func:`_digest` (a set of 2M hashes would take 150 MB more while the shapes run)."""

    def __init__(self, store, keep: bool):
        import threading

        self.store = store
        self.keep = keep
        self.failed: list[BaseException] = []
        self.found = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.found = self._hashes()
        except BaseException as exc:  # given to the caller by result()
            self.failed.append(exc)

    def result(self):
        self.thread.join()
        if self.failed:
            raise self.failed[0]
        return self.found

    def _hashes(self) -> set[int]:
        import os
        import shutil
        import tempfile

        from pyoxigraph import DefaultGraph, RdfFormat

        from kgrdf.schema import SCHEMA_GRAPH

        store = self.store
        bookkeeping = {
            hash(line[:-2])
            for line in store.dump(format=RdfFormat.N_TRIPLES, from_graph=DefaultGraph()).decode("utf-8").split("\n")
            if line
        }
        schema = f" <{SCHEMA_GRAPH}>"
        folder = None
        if not self.keep and hasattr(os, "mkfifo"):
            folder = tempfile.mkdtemp(prefix="kgrdf-validate-")
            pipe = os.path.join(folder, "index.nq")
            try:
                os.mkfifo(pipe, 0o600)
            except OSError:
                shutil.rmtree(folder, ignore_errors=True)
                folder = None
        if folder is None:  # the exact way, which any error stops
            read, write = os.pipe()

            def dump():
                with open(write, "wb") as out:
                    store.dump(output=out, format=RdfFormat.N_QUADS)

            return self._read(dump, read, bookkeeping, schema)
        try:
            return self._read(lambda: _dump_to_pipe(store, pipe), pipe, bookkeeping, schema)
        except Exception:  # the digest unknown: the exact way, which reports the error, decides
            return None
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _read(self, dump, source, bookkeeping: set[int], schema: str):
        """The hashes of what ``dump()``, run in a thread of its own, writes to ``source`` (a pipe's
        end, or a named pipe's path)."""
        import os
        import threading

        failed: list[BaseException] = []
        finished = threading.Event()

        def run():
            try:
                dump()
            except BaseException as exc:  # given to the reading thread
                failed.append(exc)
            finally:
                # A reader of a named pipe waits for a writer: one that never came is stood in for.
                while isinstance(source, str) and not finished.is_set():
                    try:
                        os.close(os.open(source, os.O_WRONLY | os.O_NONBLOCK))
                        break
                    except OSError:  # no reader yet
                        finished.wait(0.01)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        found: set[int] = set()
        mask = (1 << 64) - 1
        count = total = squares = 0
        rest = b""
        with open(source, "rb") as incoming:
            _widen(incoming)
            for block in iter(lambda: incoming.read(1 << 20), b""):
                whole = (rest + block).rpartition(b"\n")  # cut at a newline: no character split in two
                rest = whole[2]
                lines = (whole[0] + whole[1]).decode("utf-8").split(" .\n")
                for h in (hash(line) for line in lines if line and not line.endswith(schema)):
                    if h in bookkeeping:
                        continue
                    if self.keep:
                        found.add(h)
                    else:  # the index holds each quad once: its lines' hashes are a set already
                        count, total, squares = count + 1, (total + h) & mask, (squares + h * h) & mask
        finished.set()
        thread.join()
        if failed:
            raise failed[0]
        return found if self.keep else (count, total, squares)
