"""Each fact's times, status, successor, sensitivity, last observation and confirmation and triple,
and each of its hearings' audience, kept beside the index: a derived cache of briefing-facts.rq and
briefing-hearings.rq, from which the Briefing and the Constellation (kgrdf.briefing) are summed up,
for the owner or for an audience (the facts it may hear, kgrdf.audience deciding on the hearings'
audiences as it does for every read), and kg lint's contradictions found, leaving out the facts
past retention as lint-retention.rq finds them.

The Briefing counts facts by capture day, by status, by the entities they vouch for and by the
week's changes, and the Constellation counts each entity's links: each a scan of the whole knowledge
base, seconds apiece at 100k facts. ``cache/measures.sqlite`` keeps one row a fact, so that they are
summed up by SQLite in milliseconds instead.

The cache is derived, never the truth: it records the journal position it was made for, and a
cache made for another is never read but made again from the index (briefing-facts.rq, by the
reader that finds it so: in a file of its own, then renamed over the old one; readers share the
lock, and no write runs beside them). Every write keeps it current as it commits
(:func:`after_write`): its quads are the change of each column they name, applied as they are, so
that a write costs what it changes (an import too), never a scan. An index rebuild deletes it
(:func:`drop`), and so does kg forget, with the whole of cache/. Deleted rows are overwritten
(secure_delete).
"""

import json
import os
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import NamedTuple

from kgrdf import files, nquads, queries, vocab

FORMAT = "8"  # the tables below: a cache of another format is made again
NAME = "measures.sqlite"
_INDEXES = {  # of the facts table, and of its copy an audience's read makes (Measures._hear)
    "facts_recorded": "(perspective, is_fact, recorded)",
    "facts_current": "(perspective, is_fact, status, retired, valid_from, valid_to)",
    "facts_retired": "(perspective, retired)",
    "facts_subject": "(subject, predicate)",
    "facts_predicate": "(predicate, recorded)",
}
_SCHEMA = """
CREATE TABLE facts (fact TEXT PRIMARY KEY, perspective TEXT, is_fact INTEGER, status TEXT, recorded REAL,
    retired REAL, valid_from REAL, valid_to REAL, successor TEXT, subject TEXT, predicate TEXT, object TEXT,
    datatype TEXT, revised REAL, sensitivity TEXT, observed REAL, heard_in TEXT, confirmed REAL);
CREATE TABLE heard (fact TEXT, hearing TEXT, audience TEXT, heard_at REAL, PRIMARY KEY (fact, hearing));
CREATE INDEX heard_audience ON heard (audience);
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT);
""" + "".join(f"CREATE INDEX {name} ON facts {columns};\n" for name, columns in _INDEXES.items())
_FACT = re.compile(r"^" + re.escape(vocab.KB) + r"[^/]+/fact/[^/]+\Z")  # a fact's IRI: its assertion graph
_COLUMNS = {  # a record about a fact -> the column that keeps its object
    vocab.kg("perspective").value: "perspective",
    vocab.kg("factStatus").value: "status",
    vocab.kg("recordedAt").value: "recorded",
    vocab.kg("retiredAt").value: "retired",
    vocab.kg("validFrom").value: "valid_from",
    vocab.kg("validTo").value: "valid_to",
    vocab.kg("supersededBy").value: "successor",
    vocab.kg("sensitivity").value: "sensitivity",
    vocab.kg("observedAt").value: "observed",
    vocab.kg("lastConfirmedAt").value: "confirmed",
}
_TIMES = {"recorded", "retired", "valid_from", "valid_to", "observed", "confirmed"}
_REPEATED = {"perspective", "status", "sensitivity", "recorded", "observed"}  # the same in most rows of a write
_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_FACT_CLASS = vocab.kg("Fact").value
_FIELD = vocab.kg("field").value
# the fields of a fact whose change revises what a read at a past time makes of it (see _LINKS)
_REVISING = tuple(vocab.kg(name).value for name in ("validTo", "validFrom", "factStatus", "retiredAt"))
_AUDIENCE, _HEARD_AT = vocab.kg("audience").value, vocab.kg("heardAt").value
_READ = {*_COLUMNS, _AUDIENCE, _HEARD_AT}  # the predicates of the records after_write reads (see _read)
_FACT_TYPE_OBJECT = f" <{_FACT_CLASS}> "
_REVISING_OBJECTS = tuple(f" <{field}> " for field in _REVISING)
_MINE = "is_fact = 1 AND perspective = :perspective"  # what {mine} stands for in a query of Measures
# The same, read through the index of a few predicates: the unary + keeps SQLite from reading every
# fact recorded since a time by perspective, when a week holds most of them.
_MINE_BY_PREDICATE = "is_fact = 1 AND +perspective = :perspective"
_KEPT = (
    "fact, perspective, is_fact, status, recorded, retired, valid_from, valid_to, successor, subject, predicate, "
    "object, datatype, revised, sensitivity, observed, confirmed, heard_in"
)
_CURRENT = "retired IS NULL AND (valid_from IS NULL OR valid_from <= :now) AND (valid_to IS NULL OR valid_to > :now)"
PERSONAL = vocab.kg("Personal").value
PROPOSED = vocab.kg("Proposed").value
CONFIRMED = vocab.kg("Confirmed").value


def of(session) -> "Measures":
    """The measures of the perspective a session reads, current with the index it reads, of the
    facts the read's audience may hear (Session.hear_as; all for the owner's read). Close them."""
    kb = session.kb
    hears = None if session.hearer is None else session.may_hear_in
    path = kb.path if kb.backend_kind != "memory" else None
    return open_cache(path, session.backend, session.perspective, hears, note=kb.note)


def cache_path(kb_path: Path) -> Path:
    return kb_path / files.CACHE / NAME


def _epoch(term) -> float | None:
    from kgrdf import waiting

    return waiting.epoch(term)


def _connect(path) -> sqlite3.Connection:
    with files.private():
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA secure_delete = ON")
    db.execute("PRAGMA temp_store = MEMORY")  # an audience's copy of its facts (Measures._hear) never reaches a disk
    return db


def _stamp(backend) -> str:
    at = backend.position()
    return f"{at[0]}:{at[1]}" if at else ""


# A write revising more facts reads every revision at once. One fact's read takes well under a
# millisecond (its IRI written in place), every revision's grows with the knowledge base: a day's
# batch of confirmations is read fact by fact, a merge or an expiry of thousands at once.
REVISIONS_ONE_BY_ONE = 1000


def _revisions(backend, fact: str | None = None) -> dict[str, float | None]:
    """Fact IRI -> when its status or valid time was last revised (briefing-revisions.rq): of every fact,
    or of ``fact`` alone."""
    from pyoxigraph import NamedNode

    bindings = {"fact": NamedNode(fact)} if fact is not None else {}
    return {
        row["fact"].value: _epoch(row.get("revisedAt"))
        for row in backend.select(queries.load("briefing-revisions"), bindings)
        if row.get("fact") is not None and row.get("revisedAt") is not None
    }


def _heard_in(graph: str, node: str) -> str | None:
    """The fact a record of an audience in ``graph`` about ``node`` says a hearing of: one said in the
    fact's provenance graph of one of its hearings (kgrdf.model.hearing_iri), or of the fact itself
    (written before hearings existed), as fact-audience.rq reads them; None for another (a
    disclosure's audience is who was told, not who heard)."""
    fact = graph.removesuffix("/provenance")
    if fact == graph or not _FACT.match(fact):
        return None
    return fact if node == fact or node.startswith(fact + "/hearing/") else None


def _hearings(backend) -> list[tuple[str, str, str, float | None]]:
    """(fact, hearing, audience, when it was heard) of every hearing of every fact
    (briefing-hearings.rq); the hearing is the fact itself for one written before hearings existed,
    and its time then the fact's own (None here)."""
    said, times = [], {}
    for row in backend.select(queries.load("briefing-hearings"), {}):
        graph, node = getattr(row.get("graph"), "value", ""), getattr(row.get("node"), "value", "")
        fact = _heard_in(graph, node)
        if fact is None:
            continue
        if row.get("audience") is not None:
            said.append((fact, node, row["audience"].value))
        elif row.get("heardAt") is not None:
            times[node] = _epoch(row["heardAt"])
    return [(fact, node, audience, times.get(node)) for fact, node, audience in said]


def _rows(backend) -> list[tuple]:
    """The cache's rows from the index (briefing-facts.rq, briefing-revisions.rq): one a fact of
    every perspective."""
    revisions = _revisions(backend)
    out = []
    for row in backend.select(queries.load("briefing-facts"), {}):
        target = row.get("object")
        datatype = getattr(target, "datatype", None)
        predicate, successor, status = row.get("predicate"), row.get("successor"), row.get("status")
        sensitivity = row.get("sensitivity")
        out.append(
            (
                row["fact"].value,
                row["perspective"].value,
                1,
                status.value if status is not None else None,
                _epoch(row.get("recordedAt")),
                _epoch(row.get("retiredAt")),
                _epoch(row.get("validFrom")),
                _epoch(row.get("validTo")),
                successor.value if successor is not None else None,
                row["subject"].value if row.get("subject") is not None else None,
                predicate.value if predicate is not None else None,
                target.value if target is not None else None,
                datatype.value if datatype is not None else None,
                revisions.get(row["fact"].value),
                sensitivity.value if sensitivity is not None else None,
                _epoch(row.get("observedAt")),
                _epoch(row.get("lastConfirmedAt")),
            )
        )
    return out


def _heard_key(fact: str, heard: list[tuple[str, str]]) -> str:
    """The audiences the fact ``fact`` was heard in, from its (hearing, audience) records, as the
    JSON list of them in order that the facts table keeps (heard_in): those of its hearings; of a
    fact written before hearings existed, the audience said on itself; none (the owner's) for a fact
    with neither. kgrdf.audience decides on each of them as fact-audience.rq's rows are read."""
    hearings = [audience for hearing, audience in heard if hearing != fact]
    return json.dumps(sorted(set(hearings or [audience for _hearing, audience in heard])))


def _make(path: Path | None, backend) -> sqlite3.Connection:
    """The cache made anew from the index: in a file of its own renamed over ``path``, or in memory
    when ``path`` is None."""
    temporary = path.with_name(path.name + files.own_suffix()) if path is not None else None
    if temporary is not None:
        files.drop_temporaries_left(path)  # (a reader killed while making it left its file)
        temporary.unlink(missing_ok=True)
    db = _connect(temporary if temporary is not None else ":memory:")
    try:
        db.executescript(_SCHEMA)
        db.execute("BEGIN")
        hearings = _hearings(backend)
        heard: dict[str, list[tuple[str, str]]] = {}
        for fact, hearing, audience, _when in hearings:
            heard.setdefault(fact, []).append((hearing, audience))
        rows = [(*row, _heard_key(row[0], heard.get(row[0], []))) for row in _rows(backend)]
        db.executemany(f"INSERT INTO facts ({_KEPT}) VALUES ({', '.join('?' * 18)})", rows)
        db.executemany("INSERT OR REPLACE INTO heard VALUES (?, ?, ?, ?)", hearings)
        db.executemany("INSERT INTO meta VALUES (?, ?)", [("format", FORMAT), ("at", _stamp(backend))])
        db.execute("COMMIT")
        if temporary is None:
            return db
        db.close()
        # opened on this file before it takes its name: the name, read again after the rename, may
        # be another process's cache by then, made for another state (see waiting._make)
        db = _connect(temporary)
        db.execute("SELECT count(*) FROM meta").fetchall()
        path.with_name(path.name + "-journal").unlink(missing_ok=True)
        os.replace(temporary, path)
    except BaseException:
        db.close()
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        raise
    return db


def open_cache(kb_path: Path | None, backend, perspective: str, hears=None, note=None) -> "Measures":
    """The measures of ``perspective`` from the cache current with the index ``backend`` is at, made
    again when it was made for another state; made in memory when there is no folder to keep it in
    (the in-memory backend, a folder that cannot be written in, cache/ a link). With ``hears`` (an
    audience -> whether the read's audience may hear what was heard there), of the facts it may
    hear alone. ``note`` (KnowledgeBase.note) is told when the cache is made again: seconds at 100k
    facts."""
    db = None
    if kb_path is not None:
        path = cache_path(kb_path)
        try:
            if not path.parent.is_symlink():
                path.parent.mkdir(mode=0o700, exist_ok=True)
                if path.exists():
                    db = _connect(path)
                    meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
                    if meta.get("format") != FORMAT or meta.get("at") != _stamp(backend):
                        db.close()
                        db = None
                if db is None:
                    if note is not None:
                        note(f"summing up every fact, kept for the next reads in {files.CACHE}/{NAME} ...")
                    db = _make(path, backend)
        except (sqlite3.Error, OSError):
            db = None
    if db is None:
        db = _make(None, backend)
    return Measures(db, vocab.perspective_base(perspective), hears)


class Measures:
    """The facts of one perspective, summed up: all of them, or those an audience may hear (``hears``:
    an audience -> whether it may hear what was heard there). Times are datetimes (UTC)."""

    def __init__(self, db: sqlite3.Connection, perspective: str, hears=None):
        self.db = db
        self.perspective = perspective
        if hears is not None:
            self._hear(hears)

    def _hear(self, hears) -> None:
        """Read, from now on, only the facts the audience ``hears`` decides on may be told: those
        heard in an audience it may hear (:func:`_heard_key`: their hearings', or the one said on a
        fact written before hearings existed); of a fact with none, the owner's (kgrdf.audience, as
        fact-audience.rq's rows are read). Each distinct set of audiences is decided on once, and
        the facts of those it may hear are copied, with the index of subjects, to a table of this
        connection named facts, which every query of it reads instead of the cache's (SQLite looks
        a name up in temp first): testing each row of the cache against a set of the audible facts
        costs a second at 100k facts, the copy a tenth of it."""
        keys = [key for (key,) in self.db.execute("SELECT DISTINCT heard_in FROM main.facts")]
        allowed = [key for key in keys if key is not None and any(hears(a) for a in json.loads(key) or [None])]
        self.db.execute("CREATE TEMP TABLE facts AS SELECT * FROM main.facts WHERE 0")
        self.db.execute(
            "INSERT INTO temp.facts SELECT * FROM main.facts WHERE perspective = ? "
            "AND heard_in IN (SELECT value FROM json_each(?))",
            (self.perspective, json.dumps(allowed)),
        )
        # A fact exists for the audience from the first hearing it may hear, not from when it was
        # recorded: heard first in a private conversation, it was not known in public until then, and
        # the Briefing's days and the Constellation's known-at read it from then on.
        audiences = [a for (a,) in self.db.execute("SELECT DISTINCT audience FROM main.heard") if hears(a)]
        self.db.execute(
            "UPDATE temp.facts SET recorded = COALESCE((SELECT MIN(COALESCE(h.heard_at, facts.recorded)) "
            "FROM main.heard h WHERE h.fact = facts.fact AND h.audience IN (SELECT value FROM json_each(?))), recorded) "
            "WHERE EXISTS (SELECT 1 FROM main.heard h WHERE h.fact = facts.fact AND h.heard_at > facts.recorded)",
            (json.dumps(audiences),),
        )
        self.db.execute(f"CREATE INDEX temp.facts_subject ON facts {_INDEXES['facts_subject']}")

    def close(self) -> None:
        self.db.close()

    def _select(self, sql: str, **params) -> list[tuple]:
        return self.db.execute(sql.replace("{mine}", _MINE), {"perspective": self.perspective, **params}).fetchall()

    def captured(self, since, days: int) -> dict[str, int]:
        """Facts recorded on each of ``days`` UTC days from ``since`` (a midnight) on, whatever their
        status now, by day; "before": how many were recorded earlier (one pass, a UTC day being
        86,400 seconds)."""
        from datetime import timedelta

        rows = self._select(
            "SELECT CASE WHEN recorded < :start THEN -1 ELSE CAST((recorded - :start) / 86400 AS INTEGER) END AS day, "
            "COUNT(*) FROM facts WHERE {mine} AND recorded < :end GROUP BY day",
            start=since.timestamp(),
            end=since.timestamp() + days * 86400,  # (as seconds: the day after 9999-12-31 is no date)
        )
        out = {"before": 0}
        for day, count in rows:
            out["before" if day < 0 else (since + timedelta(days=day)).date().isoformat()] = count
        return out

    def current_by_status(self, now) -> dict[str, int]:
        """Current facts (proposed or confirmed, not retired, true ``now``) by status."""
        rows = self._select(
            f"SELECT status, COUNT(*) FROM facts WHERE {{mine}} AND status IN (:proposed, :confirmed) AND {_CURRENT} "
            "GROUP BY status",
            now=now.timestamp(),
            proposed=PROPOSED,
            confirmed=CONFIRMED,
        )
        names = {PROPOSED: "proposed", CONFIRMED: "confirmed"}
        return {names[status]: count for status, count in rows}

    def vouched(self, now) -> list[str]:
        """The entities (IRIs) that take part in a current confirmed fact, as subject or object."""
        confirmed = f"{{mine}} AND status = :confirmed AND {_CURRENT}"
        rows = self._select(
            f"SELECT subject FROM facts WHERE {confirmed} AND subject IS NOT NULL "
            f"UNION SELECT object FROM facts WHERE {confirmed} AND datatype IS NULL AND object IS NOT NULL",
            now=now.timestamp(),
            confirmed=CONFIRMED,
        )
        return [entity for (entity,) in rows]

    def changes(self, since, limit: int) -> list[tuple[str, str, object, str | None]]:
        """(change, fact IRI, when, successor IRI) from ``since`` on, the ``limit`` newest of each
        change, newest first: "new" for a fact recorded then and never retired, "replaced" for one a
        replacement retired then."""
        cut = since.timestamp()
        new = self._select(
            "SELECT 'new', fact, recorded, NULL FROM facts WHERE {mine} AND recorded >= :since AND retired IS NULL "
            "ORDER BY recorded DESC, fact LIMIT :limit",
            since=cut,
            limit=limit,
        )
        replaced = self._select(
            "SELECT 'replaced', fact, retired, successor FROM facts WHERE {mine} AND retired >= :since "
            "AND successor IS NOT NULL ORDER BY retired DESC, fact LIMIT :limit",
            since=cut,
            limit=limit,
        )
        rows = sorted(new + replaced, key=lambda row: (-row[2], row[1]))
        return [(change, fact, _moment(at), successor) for change, fact, at, successor in rows]

    def linked_since(self, predicates: set[str], since, limit: int) -> tuple[int, list[tuple]]:
        """How many facts of one of ``predicates`` between two entities were recorded from ``since``
        on and are not retired, and the ``limit`` newest as (fact, subject, predicate, object, when)."""
        params = {"since": since.timestamp(), "predicates": json.dumps(sorted(predicates))}
        where = (
            f"{_MINE_BY_PREDICATE} AND recorded >= :since AND retired IS NULL AND datatype IS NULL AND object IS NOT NULL "
            "AND predicate IN (SELECT value FROM json_each(:predicates))"
        )
        (count,) = self._select(f"SELECT COUNT(*) FROM facts WHERE {where}", **params)[0]
        rows = self._select(
            f"SELECT fact, subject, predicate, object, recorded FROM facts WHERE {where} "
            "ORDER BY recorded DESC, fact LIMIT :limit",
            limit=limit,
            **params,
        )
        return count, [(fact, subject, predicate, target, _moment(at)) for fact, subject, predicate, target, at in rows]

    def value_of(self, subject: str, predicate: str, now) -> str | None:
        """The newest current value (proposed or confirmed) of ``predicate`` about ``subject``."""
        rows = self._select(
            f"SELECT object FROM facts WHERE {{mine}} AND subject = :subject AND predicate = :predicate "
            f"AND status IN (:proposed, :confirmed) AND {_CURRENT} ORDER BY status = :confirmed DESC, recorded DESC "
            "LIMIT 1",
            subject=subject,
            predicate=predicate,
            now=now.timestamp(),
            proposed=PROPOSED,
            confirmed=CONFIRMED,
        )
        return rows[0][0] if rows else None

    def change_counts(self, since) -> dict[str, int]:
        rows = self._select(
            "SELECT 'new', COUNT(*) FROM facts WHERE {mine} AND recorded >= :since AND retired IS NULL "
            "UNION ALL SELECT 'replaced', COUNT(*) FROM facts WHERE {mine} AND retired >= :since "
            "AND successor IS NOT NULL",
            since=since.timestamp(),
        )
        return {change: count for change, count in rows if count}

    # A link as kg facts --as-of --known-at reads facts (facts.rq): a fact of one of the object
    # properties between two entities, held at :known (recorded by then, and not rejected or expired
    # by then) and true at :valid by what was known then. A fact whose status or valid time was
    # revised after :known (a review, an expiry, a closing, a corrected start or end) may have been
    # held otherwise then, whatever it says now: it is read as held then (``unsure``, see most_linked).
    _LINKS = (
        "SELECT fact, subject, predicate, object, COALESCE(revised > :known, 0) AS unsure FROM facts "
        "WHERE {mine} AND datatype IS NULL AND object IS NOT NULL "
        "AND predicate IN (SELECT value FROM json_each(:predicates)) AND subject != object AND recorded <= :known "
        "AND (revised > :known OR ((retired IS NULL OR retired > :known OR status IN (:proposed, :confirmed)) "
        "AND (valid_from IS NULL OR valid_from <= :valid) AND (valid_to IS NULL OR valid_to > :valid)))"
    )

    def _links(self, sql: str, predicates: set[str], valid_at, known_at, held_then, **params) -> list[tuple]:
        """(subject, predicate, object) of each link ``sql`` reads; of those revised after
        ``known_at``, those ``held_then`` keeps (it is given their fact IRIs)."""
        rows = self._select(
            sql,
            known=known_at.timestamp(),
            valid=valid_at.timestamp(),
            proposed=PROPOSED,
            confirmed=CONFIRMED,
            predicates=json.dumps(sorted(predicates)),
            **params,
        )
        unsure = [fact for fact, *_link, doubt in rows if doubt]
        kept = held_then(unsure) if unsure else set()
        return [
            (subject, predicate, target)
            for fact, subject, predicate, target, doubt in rows
            if not doubt or fact in kept
        ]

    def most_linked(self, predicates: set[str], valid_at, known_at, limit: int, held_then) -> list[tuple[str, int]]:
        """The ``limit`` entities (IRIs) that share a link with the most distinct entities, and how
        many, most first, then by IRI; links of ``predicates`` (the object properties) as
        :meth:`links` reads them."""
        import heapq

        peers: dict[str, set] = {}
        for subject, _predicate, target in self._links(self._LINKS, predicates, valid_at, known_at, held_then):
            peers.setdefault(subject, set()).add(target)
            peers.setdefault(target, set()).add(subject)
        return heapq.nsmallest(limit, ((entity, len(others)) for entity, others in peers.items()), key=_most)

    def links(
        self, predicates: set[str], valid_at, known_at, among: list[str], held_then
    ) -> list[tuple[str, str, str]]:
        """(subject, predicate, object) IRIs of each link between two of the entities ``among``:
        a fact of one of ``predicates`` (the object properties), held at ``known_at`` (recorded by
        then, and not rejected or expired by then) and true at ``valid_at`` by what was known then,
        as kg facts --as-of --known-at reads facts: one whose status or valid time was revised after
        ``known_at`` is kept when ``held_then`` (given the IRIs of such facts, returns those that as
        held then were current and true at ``valid_at``) keeps it."""
        return self._links(
            f"{self._LINKS} AND subject IN (SELECT value FROM json_each(:among)) "
            "AND object IN (SELECT value FROM json_each(:among))",
            predicates,
            valid_at,
            known_at,
            held_then,
            among=json.dumps(among),
        )

    # A fact past retention, as lint-retention.rq reads it: of sensitivity personal, and neither
    # observed nor confirmed again since :retained (never: not since). IS, not =: a fact that says
    # no sensitivity is not past retention, and NOT of it holds.
    _PAST_RETENTION = (
        "sensitivity IS :personal AND (observed IS NULL OR observed < :retained) "
        "AND (confirmed IS NULL OR confirmed < :retained)"
    )

    def past_retention(self, retained) -> list[str]:
        """The facts (IRIs) past retention at ``retained`` (the cut-off: a person fact neither observed
        nor confirmed since), whatever their status, in order: kg lint's retention findings' facts."""
        return [
            fact
            for (fact,) in self._select(
                f"SELECT fact FROM facts WHERE {{mine}} AND subject IS NOT NULL AND {self._PAST_RETENTION} "
                "ORDER BY fact",
                personal=PERSONAL,
                retained=retained.timestamp(),
            )
        ]

    def _contradicting(self, now, retained) -> str:
        """The current confirmed facts of one of the single-valued :predicates, those past retention
        at ``retained`` left out when it is given: the facts a contradiction is found among."""
        past = f" AND NOT ({self._PAST_RETENTION})" if retained is not None else ""
        return (
            f"{{mine}} AND status = :confirmed AND {_CURRENT} "
            f"AND predicate IN (SELECT value FROM json_each(:predicates)){past}"
        )

    def _contradicting_params(self, predicates: set[str], now, retained) -> dict:
        return {
            "now": now.timestamp(),
            "confirmed": CONFIRMED,
            "predicates": json.dumps(sorted(predicates)),
            "personal": PERSONAL,
            "retained": retained.timestamp() if retained is not None else None,
        }

    def contradicting_keys(self, predicates: set[str], now, retained=None) -> list[tuple[str, str]]:
        """(subject, predicate) of each contradiction :meth:`contradicting` finds, its facts unread."""
        return self._select(
            f"SELECT subject, predicate FROM facts WHERE {self._contradicting(now, retained)} "
            "GROUP BY subject, predicate HAVING COUNT(*) > 1",
            **self._contradicting_params(predicates, now, retained),
        )

    def contradicting(self, predicates: set[str], now, retained=None, among: list[str] | None = None) -> list[dict]:
        """The facts of each subject that has two or more current confirmed facts of one of the
        single-valued ``predicates``: kg lint's contradictions, as rows of fact, subject, predicate,
        object (as queries.value gives it) and recorded (seconds). With ``retained`` (a cut-off), the
        facts past retention then (:meth:`past_retention`) are left out first, as kg lint leaves
        them out; with ``among`` (IRIs), of those subjects alone."""
        from kgrdf import waiting

        params = self._contradicting_params(predicates, now, retained)
        held = self._contradicting(now, retained)
        if among is not None:
            held += " AND subject IN (SELECT value FROM json_each(:among))"
            params["among"] = json.dumps(among)
        rows = self._select(
            f"WITH held AS (SELECT fact, subject, predicate, object, datatype, recorded FROM facts WHERE {held}) "
            "SELECT * FROM held WHERE (subject, predicate) IN "
            "(SELECT subject, predicate FROM held GROUP BY subject, predicate HAVING COUNT(*) > 1)",
            **params,
        )
        return [
            {
                "fact": fact,
                "subject": subject,
                "predicate": predicate,
                "object": waiting.kept_value(target, datatype),
                "recorded": recorded,
            }
            for fact, subject, predicate, target, datatype, recorded in rows
        ]

    def named(self) -> set[str]:
        """The entities (IRIs) a fact names, as subject or object, whatever its status."""
        rows = self._select(
            "SELECT subject FROM facts WHERE {mine} AND subject IS NOT NULL "
            "UNION SELECT object FROM facts WHERE {mine} AND datatype IS NULL AND object IS NOT NULL"
        )
        return {entity for (entity,) in rows}

    def by_status(self) -> dict[str, int]:
        """How many facts hold each status (its concept's IRI), whatever their times."""
        return dict(
            self._select("SELECT status, COUNT(*) FROM facts WHERE {mine} AND status IS NOT NULL GROUP BY status")
        )

    def rows(self) -> list[tuple]:
        """Every row of the perspective, in fact order (what the tests compare)."""
        return self._select(f"SELECT {_KEPT} FROM facts WHERE {{mine}} ORDER BY fact")

    def hearings(self) -> list[tuple]:
        """(fact, hearing, audience, heard_at) of every hearing of the perspective's facts, in order
        (what the tests compare)."""
        return self._select(
            "SELECT fact, hearing, audience, heard_at FROM heard WHERE fact IN (SELECT fact FROM facts WHERE {mine}) "
            "ORDER BY fact, hearing"
        )


def _most(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def _moment(seconds: float | None):
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC) if seconds is not None else None


def _read(line: str) -> bool:
    """Whether after_write reads a write's row: a fact's own triple, a record of one of the columns,
    of its type, of a hearing's audience, or of a change that revises its status or valid time. Told from the
    row's text, so that of an import's twenty rows a fact only these are parsed. (Asked of every
    row: nquads.predicate_of and graph_of written out, and a provenance row, most of them, told by
    its end.)"""
    start = line.index(" ") + 2
    predicate = line[start : line.index(">", start)]
    if (
        predicate in _READ
        or (predicate == _TYPE and _FACT_TYPE_OBJECT in line)
        or (predicate == _FIELD and any(field in line for field in _REVISING_OBJECTS))
    ):
        return True
    return not line.endswith("/provenance>") and _FACT.match(line[line.rindex(" <") + 2 : -1]) is not None


def _changes(delete_lines, add_lines) -> tuple[dict, dict, set]:
    """What a write's rows change, in one pass over them, deletes first:
    - fact IRI -> column -> its new value (None: deleted);
    - (fact, hearing) -> (the audience it was heard in now, when) (None: deleted), from the records
      of a hearing's audience and time (:func:`_heard_in`);
    - the facts whose update records change the end of their valid time.

    Whether an IRI is a fact's is asked once an IRI, not once a quad: an import's quads name each
    fact about twenty times. The values that rows repeat (a subject, a predicate, a status, a time,
    an audience) are kept as one object each, not one a row: the read of an import of
    100k facts is held while the index loads it, and holds 35 MB less."""
    from kgrdf import waiting

    shared: dict = {}

    def one(value):
        return shared.setdefault(value, value)

    changed: dict[str, dict[str, object]] = {}
    heard: dict[tuple[str, str], str | None] = {}
    heard_at: dict[tuple[str, str], float] = {}
    revised: set[str] = set()
    is_fact: dict[str, bool] = {}
    for lines, gone in ((delete_lines, True), (add_lines, False)):
        for subject, predicate, value, datatype, graph_iri in nquads.fields(lines, keep=_read):
            if predicate == _FIELD and value in _REVISING:
                fact = graph_iri.removesuffix("/provenance")
                if fact != graph_iri and _FACT.match(fact):
                    revised.add(fact)
            fact_graph = is_fact.get(graph_iri)
            if fact_graph is None:
                fact_graph = is_fact[graph_iri] = _FACT.match(graph_iri) is not None
            if fact_graph:
                # the fact's own triple, in its assertion graph
                values = {
                    "subject": one(subject),
                    "predicate": one(predicate),
                    "object": value,
                    "datatype": one(datatype),
                }
                row = changed.setdefault(graph_iri, {})
                row.update(dict.fromkeys(values) if gone else values)
                continue
            if predicate == _AUDIENCE:
                fact = _heard_in(graph_iri, subject)
                if fact is not None:
                    heard[(fact, subject)] = None if gone else one(value)
                continue
            if predicate == _HEARD_AT:
                fact = _heard_in(graph_iri, subject)
                if fact is not None and not gone:
                    heard_at[(fact, subject)] = waiting.epoch_of(value, datatype)
                continue
            column = _COLUMNS.get(predicate)
            if column is None and predicate != _TYPE:
                continue
            fact = subject
            about_fact = is_fact.get(fact)
            if about_fact is None:
                about_fact = is_fact[fact] = _FACT.match(fact) is not None
            if not about_fact:
                continue
            if column is None:
                if value == _FACT_CLASS:
                    changed.setdefault(fact, {})["is_fact"] = None if gone else 1
                continue
            if gone:
                value = None
            elif column in _TIMES:
                value = waiting.epoch_of(value, datatype)
            if column in _REPEATED:
                value = one(value)
            changed.setdefault(fact, {})[column] = value
    heard = {key: None if audience is None else (audience, heard_at.get(key)) for key, audience in heard.items()}
    return changed, heard, revised


def _heard_keys(db: sqlite3.Connection, facts: set[str]) -> dict[str, str]:
    """Fact -> heard_in, for each of ``facts`` (see :func:`_heard_key`), from the heard table as it
    stands: read in one query over a temporary table of them, not one query a fact."""
    db.execute("CREATE TEMP TABLE IF NOT EXISTS touched (fact TEXT PRIMARY KEY)")
    db.execute("DELETE FROM touched")
    db.executemany("INSERT OR IGNORE INTO touched VALUES (?)", [(fact,) for fact in facts])
    found: dict[str, list[tuple[str, str]]] = {fact: [] for fact in facts}
    # CROSS JOIN keeps SQLite's order: each fact looked up in heard's key, where a plain join, with
    # no statistics on the temporary table, scanned every hearing (72 ms of a write at 1M facts).
    for fact, hearing, audience in db.execute(
        "SELECT heard.fact, hearing, audience FROM touched CROSS JOIN heard ON heard.fact = touched.fact"
    ):
        found[fact].append((hearing, audience))
    db.execute("DELETE FROM touched")
    return {fact: _heard_key(fact, heard) for fact, heard in found.items()}


def read_ahead(kb_path: Path, before, delete_lines, add_lines, ready: "Changes | None" = None) -> "Changes | None":
    """What a write's rows change in the cache kept for ``before``, read from the rows alone: a
    large write reads them while the index loads them (Oxigraph lets go of the interpreter's lock
    as it loads), then hands them to :func:`after_write`; ``ready`` is what :func:`changes_of` read
    of the same rows earlier (while the write's last check ran). None when no cache is kept for
    ``before`` (nor is to be started by the write), or the rows could not be read (a derived cache
    never fails a write: after_write reads them again, and drops the cache if they fail it too)."""
    try:
        if files.cache_files(kb_path, NAME):
            with closing(_connect(cache_path(kb_path))) as db:
                if not _kept_for(db, before):
                    return None
        elif before.seq != 0:  # none is kept (after_write starts one on a new knowledge base's first write)
            return None
    except Exception:
        return None
    return ready if ready is not None else changes_of(delete_lines, add_lines)


def changes_of(delete_lines, add_lines) -> "Changes | None":
    """What rows change in the cache, whichever position it is kept for (:func:`_changes`); None
    when they could not be read."""
    try:
        return Changes(*_changes(delete_lines, add_lines))
    except Exception:
        return None


class Changes(NamedTuple):
    """What a write changes in the cache (:func:`_changes`)."""

    changed: dict
    heard: dict
    revised: set


def _kept_for(db: sqlite3.Connection, before) -> bool:
    """Whether the cache ``db`` is of this format and made for the journal position ``before``."""
    meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
    return meta.get("format") == FORMAT and meta.get("at") == f"{before.seq}:{before.digest}"


def after_write(kb_path: Path, backend, before, after, delete_lines, add_lines, read: Changes | None = None) -> None:
    """Keep the cache made for ``before`` (a journal Position) current with a write that moved the
    index ``backend`` to ``after``: each column its rows (``delete_lines`` and ``add_lines``) name, set, and
    the time each fact whose status or valid time it changed was last revised read again from the index. A
    cache made for another position is left: the next read makes it again. ``read`` is what
    :func:`read_ahead` read of those rows already."""
    path = cache_path(kb_path)
    if not files.cache_files(kb_path, NAME):
        if before.seq == 0:
            _start(path, f"{before.seq}:{before.digest}")  # a new knowledge base: kept from its first write on
        if not files.cache_files(kb_path, NAME):
            return
    try:
        db = _connect(path)
    except (sqlite3.Error, OSError):
        return
    try:
        if not _kept_for(db, before):
            return
        changed, heard, revised = read if read is not None else _changes(delete_lines, add_lines)
        # One fact's revision is read by itself; many at once, every revision in one read
        # (REVISIONS_ONE_BY_ONE).
        every = _revisions(backend) if len(revised) > REVISIONS_ONE_BY_ONE else None
        for fact in revised:
            revisions = every if every is not None else _revisions(backend, fact)
            changed.setdefault(fact, {})["revised"] = revisions.get(fact)
        db.execute("BEGIN")
        db.executemany(
            "DELETE FROM heard WHERE fact = ? AND hearing = ?", [key for key, to in heard.items() if to is None]
        )
        db.executemany(  # (a hearing's time is written with its audience, and never changes)
            "INSERT INTO heard VALUES (?, ?, ?, ?) ON CONFLICT (fact, hearing) DO UPDATE SET "
            "audience = excluded.audience, heard_at = COALESCE(excluded.heard_at, heard.heard_at)",
            [(*key, *to) for key, to in heard.items() if to is not None],
        )
        heard_in = _heard_keys(db, set(changed) | {fact for fact, _hearing in heard})
        # each fact's row written once, with its audiences: one statement for each set of columns
        # changed (an import's new facts share one)
        upserts: dict[tuple[str, ...], list] = {}
        for fact, columns in changed.items():
            columns = {**columns, "heard_in": heard_in.pop(fact)}
            upserts.setdefault(tuple(columns), []).append([fact, *columns.values()])
        for columns, rows in upserts.items():
            db.executemany(
                f"INSERT INTO facts (fact, {', '.join(columns)}) VALUES (?{', ?' * len(columns)}) "
                f"ON CONFLICT (fact) DO UPDATE SET {', '.join(f'{column} = excluded.{column}' for column in columns)}",
                rows,
            )
        db.executemany("UPDATE facts SET heard_in = ? WHERE fact = ?", [(key, fact) for fact, key in heard_in.items()])
        db.executemany(
            "DELETE FROM facts WHERE fact = ? AND COALESCE(perspective, is_fact, status, recorded, retired, "
            "valid_from, valid_to, successor, subject, revised, sensitivity, observed, confirmed) IS NULL",
            [(fact,) for fact in changed],
        )
        db.execute("UPDATE meta SET value = ? WHERE name = 'at'", (f"{after.seq}:{after.digest}",))
        db.execute("COMMIT")
    except Exception:  # a derived cache never fails a write that the journal holds already
        db.close()
        files.remove_sqlite(path)  # made again by the next read
    finally:
        db.close()


def drop(kb_path: Path) -> None:
    """Delete the cache (an index made again: the next read makes it again)."""
    if files.cache_files(kb_path, NAME):
        files.remove_sqlite(cache_path(kb_path))


def _start(path: Path, at: str) -> None:
    """An empty cache at ``at``: a new knowledge base's, kept by its writes from the first on, so
    that it is never made from a whole index."""
    try:
        if path.parent.is_symlink():
            return
        path.parent.mkdir(mode=0o700, exist_ok=True)
        db = _connect(path)
        try:
            db.executescript(_SCHEMA)
            db.executemany("INSERT INTO meta VALUES (?, ?)", [("format", FORMAT), ("at", at)])
        finally:
            db.close()
    except (sqlite3.Error, OSError):
        files.remove_sqlite(path)
