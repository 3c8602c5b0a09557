"""The people a write's texts may name, found by their words: a derived cache of person-labels.rq.

A write routes to the private journal whatever names a person (kgrdf.privacy). Matching its texts
against every person of the knowledge base would cost the more, the more people it holds; instead
``cache/people-<perspective>.sqlite`` keeps, for each person and actor, their match keys and the
words a text must hold to name them (the first word of each name and alias, the last word of their
id), so that a write reads only the people its texts' words lead to and matches those exactly as
:class:`kgrdf.privacy.People` does: the same people are found as with everyone loaded (whoever is
named holds one of those words, and one person's name is judged beside every other name found).

The cache is derived: made from the index (person-labels.rq) when it is missing, damaged or made
for another position of the journal, and kept current by every write as it commits (the rows of
its change that add or delete a person's key); kg forget deletes cache/ with everything else that
may hold a name. Deleted rows are overwritten (secure_delete).
"""

import sqlite3
from pathlib import Path

from kgrdf import files, nquads, privacy, queries, vocab

KEYS = frozenset(vocab.kg(name).value for name in ("nameKey", "aliasKey", "weakAliasKey"))
# Of the words kept (privacy.words): 2, words take in their combining marks and İ folds to i; 3, ı
# folds to i, and all that shows as nothing goes.
FORMAT = "3"
_CHUNK = 500  # words asked at once: far under any SQLite's limit of bound values
_MATCHERS = 4096  # matchers a held index keeps (see Index.hold)


def cache_path(kb_path: Path, perspective: str) -> Path:
    return kb_path / files.CACHE / f"people-{perspective}.sqlite"


def _words_of(person: str, key: str | None, base: str) -> set[str]:
    """The words a text naming ``person`` holds: a key's first word, or the last word of their id."""
    if key is not None:
        found = privacy.words(key)
        return {found[0]} if found else set()
    found = privacy.words(person[len(base) :])
    return {found[-1]} if found else set()


def _is_person(iri: str, base: str) -> bool:
    return iri.startswith(base) and iri[len(base) :].split("/", 1)[0] in privacy.PERSON_TYPES


def _position(at) -> str:
    """A journal position (sequence number, digest) as the cache records it."""
    return f"{at[0]}:{at[1]}" if at else ""


class Index:
    """The people of one perspective, looked up by the words of texts. ``backend`` is the index
    (opened for writing by the holder of the exclusive lock); ``kb_path`` None keeps no cache (the
    in-memory backend): then everyone is read from the index once, as before there was one."""

    def __init__(self, kb_path: Path | None, backend, perspective: str, entries: list[dict]):
        self.backend = backend
        self.graph = vocab.entities_graph(perspective)
        self.base = vocab.perspective_base(perspective)
        self.entries = entries  # identifiers.jsonl: a token of theirs names a person too
        self.path = cache_path(kb_path, perspective) if kb_path is not None else None
        self._db = None
        self._everyone: privacy.People | None = None
        self._held = None  # (word -> people, person -> label rows, matchers) once hold() read them

    def named_in(self, texts) -> privacy.People:
        """A matcher of every person the ``texts`` may name (and of no one they cannot)."""
        db = self._open()
        if db is None:
            if self._everyone is None:
                rows = queries_rows(self.backend, self.graph)
                self._everyone = privacy.people_from(rows, self.entries, self.base)
            return self._everyone
        words = sorted({w for text in texts if text for w in privacy.words(text)})
        if self._held is not None:
            return self._held_named_in(words)
        people: set[str] = set()
        for at in range(0, len(words), _CHUNK):
            chunk = words[at : at + _CHUNK]
            marks = ",".join("?" * len(chunk))
            people.update(p for (p,) in db.execute(f"SELECT DISTINCT person FROM words WHERE word IN ({marks})", chunk))
        rows = []
        ordered = sorted(people)
        for at in range(0, len(ordered), _CHUNK):
            chunk = ordered[at : at + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows += db.execute(f"SELECT person, key FROM labels WHERE person IN ({marks})", chunk).fetchall()
        held = set(words)
        entries = [entry for entry, word in self._entry_words() if word is None or word in held]
        return privacy.people_from(rows, entries, self.base)

    def hold(self) -> None:
        """Read the cache's words and labels into memory for the rest of this write: a large write
        (an import) asks about the texts of every record, and a query for each costs more than
        reading the cache once, whose size follows the people, not the facts. Matchers are kept
        by the people they match, so records that lead to the same people share one."""
        db = self._open()
        if db is None or self._held is not None:
            return
        by_word: dict[str, list[str]] = {}
        for word, person in db.execute("SELECT word, person FROM words"):
            by_word.setdefault(word, []).append(person)
        labels: dict[str, list[tuple[str, str]]] = {}
        for person, key in db.execute("SELECT person, key FROM labels"):
            labels.setdefault(person, []).append((person, key))
        self._held = (by_word, labels, {})

    def _held_named_in(self, words: list[str]) -> privacy.People:
        by_word, labels, matchers = self._held
        people = sorted({p for word in words for p in by_word.get(word, ())})
        held = set(words)
        entries = tuple(n for n, (_, word) in enumerate(self._entry_words()) if word is None or word in held)
        key = (tuple(people), entries)
        if key not in matchers:
            if len(matchers) >= _MATCHERS:
                matchers.clear()
            rows = [row for person in people for row in labels.get(person, ())]
            matchers[key] = privacy.people_from(rows, [self._entry_words()[n][0] for n in entries], self.base)
        return matchers[key]

    def _entry_words(self) -> list[tuple[dict, str | None]]:
        """Each identifier with the word a text naming it holds (its longest), None for one without
        a word (always looked at)."""
        if not hasattr(self, "_entries_by_word"):
            self._entries_by_word = [
                (entry, max(privacy.words(entry["value"]), key=len, default=None)) for entry in self.entries
            ]
        return self._entries_by_word

    def _open(self):
        """The cache, made again from the index when it is not for the index's position."""
        if self.path is None:
            return None
        if self._db is not None:
            return self._db
        at = _position(self.backend.position())
        try:
            if self.path.parent.is_symlink():
                return None  # never where a link points (a write refuses it)
            self.path.parent.mkdir(mode=0o700, exist_ok=True)
            db = _connect(self.path)
            meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
            if meta.get("format") != FORMAT or meta.get("at") != at or meta.get("graph") != self.graph.value:
                db.close()
                db = _make(self.path, self.backend, self.graph, self.base, at)
        except (sqlite3.Error, OSError):
            try:
                db = _make(self.path, self.backend, self.graph, self.base, at)
            except (sqlite3.Error, OSError):
                return None  # a folder that cannot be written in: everyone from the index
        self._db = db
        return db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def queries_rows(backend, graph) -> list[tuple[str, str]]:
    """(person, key) of every person and actor of the entity graph ``graph`` (person-labels.rq)."""
    rows = backend.select(queries.load("person-labels"), {"entities": graph})
    return [(row["entity"].value, row["key"].value) for row in rows]


def _connect(path: Path):
    with files.private():
        db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA secure_delete = ON")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")  # a cut loses the last change, never the file's sense
    db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
    return db


def _make(path: Path, backend, graph, base: str, at: str):
    """The cache made anew from the index."""
    for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        leftover.unlink(missing_ok=True)
    db = _connect(path)
    db.execute("BEGIN")
    db.execute("CREATE TABLE labels (person TEXT, key TEXT, PRIMARY KEY (person, key)) WITHOUT ROWID")
    db.execute("CREATE TABLE words (word TEXT, person TEXT, PRIMARY KEY (word, person)) WITHOUT ROWID")
    rows = queries_rows(backend, graph)
    _add(db, rows, base)
    db.executemany(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)", [("format", FORMAT), ("graph", graph.value), ("at", at)]
    )
    db.execute("COMMIT")
    return db


def _add(db, rows, base: str) -> None:
    db.executemany("INSERT OR IGNORE INTO labels VALUES (?, ?)", rows)
    words = {(w, p) for p, key in rows for w in _words_of(p, key, base) | _words_of(p, None, base)}
    db.executemany("INSERT OR IGNORE INTO words VALUES (?, ?)", sorted(words))


def after_write(kb_path: Path, before, after, deletes, adds) -> None:
    """Keep every perspective's cache made for ``before`` (a journal Position) current with a write
    that moved the index to ``after``: its person keys deleted and added (``deletes`` and
    ``adds`` are the write's rows, kgrdf.nquads). A cache made for another position is left: the next write
    that needs it makes it again."""
    for path in files.cache_files(kb_path, "people-*.sqlite"):
        try:
            db = _connect(path)
        except (sqlite3.Error, OSError):
            continue
        try:
            meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
            if meta.get("format") != FORMAT or meta.get("at") != _position((before.seq, before.digest)):
                continue
            graph = meta["graph"]
            base = graph[: -len("entities")]

            def keys(lines, graph=graph, base=base):
                return [pair for pair in nquads.subjects_and_objects(lines, graph, KEYS) if _is_person(pair[0], base)]

            gone, made = keys(deletes), keys(adds)
            db.execute("BEGIN")
            if gone:
                db.executemany("DELETE FROM labels WHERE person = ? AND key = ?", gone)
                # a person's words are those of the keys they still have, and of their id
                for person in {p for p, _ in gone}:
                    db.execute("DELETE FROM words WHERE person = ?", (person,))
                    _add(db, db.execute("SELECT person, key FROM labels WHERE person = ?", (person,)).fetchall(), base)
            if made:
                _add(db, made, base)
            db.execute("UPDATE meta SET value = ? WHERE name = 'at'", (_position((after.seq, after.digest)),))
            db.execute("COMMIT")
        except (sqlite3.Error, OSError, KeyError):
            path.unlink(missing_ok=True)  # made again by the next write that needs it
        finally:
            db.close()
