"""What waits for the daily batch, kept beside the index: a derived cache of kg batch's reads.

kg batch ranks its groups from every proposal's key and rank (batch-piles.rq), puts each key under
its anchor (anchors.rq), titles groups with names (lint-names.rq) and asks whether a proposal is due
to expire (proposals-due.rq): each a scan of the whole knowledge base, seconds at 100k proposals.
``cache/batch-<perspective>.sqlite`` keeps their rows, one per fact (batch-waiting.rq, anchors.rq,
proposals-observed.rq) and one per name, so that a batch reads them summed up by SQLite instead.

The cache is derived, never the truth: it records the journal position and the schema digest it was
made for, and a cache made for another is never read but made again from the index (by the reader
that finds it so: in a file of its own, then renamed over the old one; readers share the lock, and
no write runs beside them). Every write keeps it current as it commits (:func:`after_write`): the
rows of each fact its quads name are read again from the index, with the fact bound, and the names
its label quads change are changed; a write that changes many facts (an import) or the schema
deletes it instead, for the next batch to make again. An index rebuild deletes it (:func:`drop`),
and so does kg forget, with the whole of cache/. Deleted rows are overwritten (secure_delete).
"""

import itertools
import os
import sqlite3
from datetime import datetime
from pathlib import Path

from pyoxigraph import Literal, NamedNode

from kgrdf import files, nquads, queries, vocab

FORMAT = "1"  # the tables below: a cache of another format is made again
MANY = 100  # facts changed by one write beyond which the cache is made again rather than kept (~10 ms each)
_SCHEMA = """
CREATE TABLE waiting (fact TEXT, id TEXT, subject TEXT, predicate TEXT, object TEXT, datatype TEXT,
    key TEXT, area INTEGER, rework INTEGER, seen INTEGER, recorded TEXT, ord INTEGER);
CREATE INDEX waiting_fact ON waiting (fact);
CREATE INDEX waiting_key ON waiting (key, area);
CREATE TABLE anchors (fact TEXT, thing TEXT, anchor TEXT);
CREATE INDEX anchors_fact ON anchors (fact);
CREATE TABLE proposed (fact TEXT, observed REAL);
CREATE INDEX proposed_fact ON proposed (fact);
CREATE TABLE names (entity TEXT, name TEXT, PRIMARY KEY (entity, name)) WITHOUT ROWID;
CREATE TABLE piles (key TEXT, area INTEGER, facts INTEGER, rework INTEGER, seen INTEGER, recorded TEXT,
    PRIMARY KEY (key, area)) WITHOUT ROWID;
"""
_SUMS = "SELECT key, area, COUNT(*), MAX(rework), MAX(seen), MIN(recorded) FROM waiting"
_UNSET = 1 << 30  # the rank of a fact without an order (batch-facts.rq's)


def cache_path(kb_path: Path, perspective: str) -> Path:
    return kb_path / files.CACHE / f"batch-{perspective}.sqlite"


def _stamp(backend) -> tuple[str, str]:
    at = backend.position()
    return (f"{at[0]}:{at[1]}" if at else "", backend.schema_digest() or "")


def _connect(path: Path):
    with files.private():
        db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA secure_delete = ON")
    return db


def _meta(db) -> dict:
    return dict(db.execute("SELECT name, value FROM meta").fetchall())


def epoch(term) -> float | None:
    """An xsd:dateTime with its time zone as seconds, else None (then a proposal may be due)."""
    if term is None or getattr(term, "datatype", None) != vocab.XSD_DATETIME:
        return None
    return epoch_of(term.value, vocab.XSD_DATETIME.value)


def epoch_of(value: str, datatype: str | None) -> float | None:
    """:func:`epoch` of a literal's value and its datatype's IRI."""
    if datatype != vocab.XSD_DATETIME.value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.timestamp() if moment.tzinfo is not None else None


def _term(term) -> tuple[str, str | None]:
    """A term as (value, datatype IRI or None for an IRI)."""
    datatype = getattr(term, "datatype", None)
    return term.value, datatype.value if datatype is not None else None


def _rows(backend, perspective: str, fact: NamedNode | None):
    """The cache's rows from the index: of every fact, or of ``fact`` alone."""
    bindings = {"perspective": vocab.perspective_iri(perspective)}
    if fact is not None:
        bindings["fact"] = fact
    waiting = []
    for row in backend.select(queries.load("batch-waiting"), bindings):
        order = row.get("order")
        waiting.append(
            (
                row["fact"].value,
                queries.value(row.get("id")),
                row["subject"].value,
                row["predicate"].value,
                *_term(row["object"]),
                row["key"].value,
                int(queries.value(row["area"])),
                int(queries.value(row["rework"])),
                queries.value(row["seen"]),
                queries.value(row["recorded"]),
                _rank(queries.value(order)) if order is not None else None,
            )
        )
    anchors = [
        (row["fact"].value, row["thing"].value, row["anchor"].value)
        for row in backend.select(queries.load("anchors"), bindings)
    ]
    proposed = [
        (row["fact"].value, epoch(row.get("observedAt")))
        for row in backend.select(queries.load("proposals-observed"), bindings)
    ]
    return waiting, anchors, proposed


_LARGEST = (1 << 63) - 1  # SQLite's integers are 64-bit


def _rank(order) -> int | None:
    """A fact's order as the cache keeps it: one beyond SQLite's integers (written before an order was
    bounded, model.MAX_ORDER) at their edge, where it ranks as it would; one that is no number, none."""
    return max(-_LARGEST, min(order, _LARGEST)) if isinstance(order, int) else None


def _insert(db, waiting, anchors, proposed) -> None:
    db.executemany("INSERT INTO waiting VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", waiting)
    db.executemany("INSERT INTO anchors VALUES (?, ?, ?)", anchors)
    db.executemany("INSERT INTO proposed VALUES (?, ?)", proposed)


def _make(path: Path, backend, perspective: str):
    """The cache made anew from the index, in a file of its own renamed over ``path``."""
    temporary = path.with_name(path.name + files.own_suffix())
    files.drop_temporaries_left(path)  # (a reader killed while making it left its file)
    temporary.unlink(missing_ok=True)
    db = _connect(temporary)
    try:
        db.executescript(_SCHEMA + "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT);")
        db.execute("BEGIN")
        _insert(db, *_rows(backend, perspective, None))
        db.execute(f"INSERT INTO piles {_SUMS} GROUP BY key, area")
        names = backend.select(queries.load("lint-names"), {"entities": vocab.entities_graph(perspective)})
        db.executemany(
            "INSERT OR IGNORE INTO names VALUES (?, ?)", [(row["entity"].value, row["name"].value) for row in names]
        )
        at, schema = _stamp(backend)
        db.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("format", FORMAT), ("at", at), ("schema", schema), ("perspective", perspective)],
        )
        db.execute("COMMIT")
        db.close()
        # opened on this file before it takes its name: the name, read again after the rename, may
        # be another thread's by then, or no file at all (an empty one made there: "no such table")
        db = _connect(temporary)
        db.execute("SELECT count(*) FROM meta").fetchall()
        # a rollback journal left by a write cut short belongs to the file replaced, not to this one
        path.with_name(path.name + "-journal").unlink(missing_ok=True)
        os.replace(temporary, path)
    except BaseException:
        db.close()
        temporary.unlink(missing_ok=True)
        raise
    return db


def kept_value(value: str, datatype: str | None):
    """A kept term as queries.value gives it: IRIs and strings as str, numbers and booleans typed."""
    if datatype is None or datatype.endswith("#langString"):
        return value
    return queries.value(Literal(value, datatype=NamedNode(datatype)))


class Cache:
    """The cache of one perspective, current with the index it was opened for."""

    def __init__(self, db):
        self.db = db

    def close(self) -> None:
        self.db.close()

    def anchors(self) -> list[tuple[str, str]]:
        return self.db.execute("SELECT thing, anchor FROM anchors").fetchall()

    def names(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT entity, name FROM names"))

    def piles(self) -> list[dict]:
        """batch-piles.rq's rows: what waits, summed up by key."""
        return [
            {
                "key": key,
                "area": bool(area),
                "facts": facts,
                "preventsRework": bool(rework),
                "observations": seen,
                "recordedAt": recorded,
            }
            for key, area, facts, rework, seen, recorded in self.db.execute("SELECT * FROM piles")
        ]

    def facts(self, key: str, area: bool, limit: int) -> list[dict]:
        """batch-facts.rq's rows: the first ``limit`` proposals of ``key``, best first."""
        rows = self.db.execute(
            "SELECT fact, id, subject, predicate, object, datatype, seen, rework, ord, recorded FROM waiting "
            "WHERE key = ? AND area = ? ORDER BY rework DESC, seen DESC, COALESCE(ord, ?), recorded, id LIMIT ?",
            (key, int(area), _UNSET, limit),
        )
        return [
            {
                "fact": fact,
                "id": fact_id,
                "subject": subject,
                "predicate": predicate,
                "object": kept_value(target, datatype),
                "observations": seen,
                "preventsRework": bool(rework),
                "order": order,
                "recordedAt": recorded,
            }
            for fact, fact_id, subject, predicate, target, datatype, seen, rework, order, recorded in rows
        ]

    def may_be_due(self, before: datetime) -> bool:
        """Whether a proposal may have been observed last before ``before`` (proposals-due.rq then
        says which): False only when every proposal was observed since."""
        found = self.db.execute(
            "SELECT 1 FROM proposed WHERE observed IS NULL OR observed < ? LIMIT 1", (before.timestamp(),)
        )
        return found.fetchone() is not None


def of(session) -> Cache | None:
    """The cache of the perspective a session reads, current with the index it reads (open_cache)."""
    kb = session.kb
    if kb.backend_kind == "memory":
        return None
    return open_cache(kb.path, session.backend, session.perspective, note=kb.note)


def open_cache(kb_path: Path | None, backend, perspective: str, note=None) -> Cache | None:
    """The cache for the index ``backend`` is at, made again when it was made for another state; None
    without one (the in-memory backend, a folder that cannot be written in, cache/ a link): the
    batch then reads the index. ``note`` (KnowledgeBase.note) is told when the cache is made again:
    seconds with 100k proposals waiting."""
    if kb_path is None:
        return None
    path = cache_path(kb_path, perspective)
    try:
        if path.parent.is_symlink():
            return None  # never where a link points (a write refuses it)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        db = None
        if path.exists():
            db = _connect(path)
            meta = _meta(db)
            at, schema = _stamp(backend)
            wanted = {"format": FORMAT, "at": at, "schema": schema, "perspective": perspective}
            if any(meta.get(name) != value for name, value in wanted.items()):
                db.close()
                db = None
        if db is None and note is not None:
            note(f"finding what waits for review, kept for the next batches in {files.CACHE}/{path.name} ...")
        return Cache(db if db is not None else _make(path, backend, perspective))
    except (sqlite3.Error, OSError):
        try:
            return Cache(_make(path, backend, perspective))
        except (sqlite3.Error, OSError):
            return None


def _facts_named(lines, base: str) -> set[str]:
    """The facts of the perspective at ``base`` whose graph or whose records the rows ``lines`` hold."""
    prefix = base + "fact/"
    found = set()
    for line in lines:
        for value in (nquads.graph_of(line), nquads.subject_of(line)):
            if value.startswith(prefix):
                found.add(prefix + value[len(prefix) :].split("/", 1)[0])
    return found


def after_write(kb_path: Path, backend, before, after, deletes, adds) -> None:
    """Keep every perspective's cache made for ``before`` (a journal Position) current with a write
    that moved the index ``backend`` to ``after``: the rows of the facts its rows (``deletes`` and
    ``adds``, kgrdf.nquads) name read again from the index, and the names it deletes and adds. A cache made for
    another position is left: the next batch makes it again."""
    for path in files.cache_files(kb_path, "batch-*.sqlite"):
        try:
            db = _connect(path)
        except (sqlite3.Error, OSError):
            continue
        try:
            meta = _meta(db)
            at, schema = f"{after.seq}:{after.digest}", backend.schema_digest() or ""
            perspective = meta["perspective"]
            base = vocab.perspective_base(perspective)
            if meta.get("format") != FORMAT or meta.get("at") != f"{before.seq}:{before.digest}":
                continue
            changed = _facts_named(itertools.chain(deletes, adds), base)
            if meta.get("schema") != schema or len(changed) > MANY:
                db.close()
                files.remove_sqlite(path)  # made again by the next batch
                continue
            graph, label = vocab.entities_graph(perspective).value, vocab.PREF_LABEL.value

            def labels(lines, graph=graph, label=label):
                return nquads.subjects_and_objects(lines, graph, {label})

            rows = [_rows(backend, perspective, NamedNode(fact)) for fact in sorted(changed)]
            db.execute("BEGIN")
            db.executemany("DELETE FROM names WHERE entity = ? AND name = ?", labels(deletes))
            db.executemany("INSERT OR IGNORE INTO names VALUES (?, ?)", labels(adds))
            marks = ",".join("?" * len(changed))
            keys = set(db.execute(f"SELECT key, area FROM waiting WHERE fact IN ({marks})", sorted(changed)))
            for table in ("waiting", "anchors", "proposed"):
                db.executemany(f"DELETE FROM {table} WHERE fact = ?", [(fact,) for fact in changed])
            for found in rows:
                _insert(db, *found)
                keys.update((row[6], row[7]) for row in found[0])
            # the sums of each key whose proposals changed, summed again from its rows
            db.executemany("DELETE FROM piles WHERE key = ? AND area = ?", sorted(keys))
            db.executemany(f"INSERT INTO piles {_SUMS} WHERE key = ? AND area = ? GROUP BY key, area", sorted(keys))
            db.execute("UPDATE meta SET value = ? WHERE name = 'at'", (at,))
            db.execute("COMMIT")
        except Exception:  # a derived cache never fails a write that the journal holds already
            db.close()
            files.remove_sqlite(path)  # made again by the next batch
        finally:
            db.close()


def drop(kb_path: Path) -> None:
    """Delete every perspective's cache (an index made again: the next batch makes it again)."""
    folder = kb_path / files.CACHE
    try:
        if folder.is_symlink() or not folder.is_dir():
            return
        for path in folder.glob("batch-*.sqlite*"):
            path.unlink(missing_ok=True)
    except OSError:
        pass
