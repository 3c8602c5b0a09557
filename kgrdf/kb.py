"""The knowledge base: one object holding the journal, the index and the schema (§5).

The CLI, the demo and the tests all go through :class:`KnowledgeBase`. Reads open the index
read-only under the shared lock and never parse the journal; writes take the exclusive lock,
finish whatever a write cut short left, compute their change against the index, append it to the
journal (flushed and fsynced), apply it to the index, record the position in ``view.json`` and
commit to the local git history. When the index's server does not answer, a write computes its
change against an index made in memory from the journal and leaves the server's index behind.
"""

import itertools
import os
import re
import secrets
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kgrdf import clock, errors, files, inputs, made, vcs, vocab
from kgrdf.errors import NO_ROOM, BadInput, Damaged, Foreign, NotFound, Unreachable, one_line
from kgrdf.files import write_json
from kgrdf.journal import FORMAT, Journal, Position, Transaction
from kgrdf.vcs import UNCOMMITTED

LARGE = 100_000  # journal lines: a write this large commits to git while the index is updated
# The position of an index that a large write is loading while the journal is written: no journal
# holds it, so an index left so by a cut is rebuilt from the journal.
LOADING = Position(seq=-1, digest="loading")
LATE_JOURNAL_ROWS = 200  # rows a fact above which a large write's journal is written beside its compaction
DEFAULT_PERSPECTIVE = "main"
OLD_INDEX = "index.old"  # the index a rebuild replaces, until it is removed
OPEN_ELSEWHERE_WAIT = 3.0  # seconds a command waits for another process to let the index go (open_index_alone)
INDEX_WAY_OUT = "remove the index/ folder (rm -r index); the next command rebuilds it from the journal"


def _settings_signature(path: Path) -> tuple | None:
    """What format.json, replica.json and a migration's marker are now (inode, size, times; None for
    one not there), which every change to them alters: kgrdf writes each whole under a new name
    (files.write_json). None when the folder cannot be looked into."""
    from kgrdf import migrate

    try:
        return tuple(files.signature(path / name) for name in ("format.json", "replica.json", migrate.MARKER))
    except OSError:
        return None


def default_home() -> Path:
    """``--kb``, else KGRDF_HOME, else the platform's user data folder."""
    if os.environ.get("KGRDF_HOME"):
        return Path(os.path.expanduser(os.environ["KGRDF_HOME"]))  # (~/kb, as a shell would read it)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "kgrdf"


def _folder(path: Path) -> Path:
    """``path`` as the folder it names, wherever it was said from (links followed)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # (a loop of links: as said)
        return path.absolute()


_NO_REPLICA = "kg init made it; restore it from git (git checkout replica.json)"
_INIT_LEFT = {"format.json", "replica.json", "format.json.tmp", "replica.json.tmp", "journal"}


def _init_cut_short(path: Path) -> bool:
    """Whether the folder ``path`` holds what a kg init killed before it was whole left, and nothing
    else: no format.json or no replica.json, each there as kg init writes it (no one's own file of
    that name), and an empty journal folder."""
    import json

    try:
        names = {entry.name for entry in os.scandir(path)}
        if not names or not names <= _INIT_LEFT or ({"format.json", "replica.json"} <= names):
            return False
        if "journal" in names and any(os.scandir(path / "journal")):
            return False
        made = {"format.json": ("format", "perspective", "index"), "replica.json": ("replica",)}
        for name in names - {"journal"}:
            keys = made[name.removesuffix(".tmp")]
            text = (path / name).read_text(encoding="utf-8")
            if name.endswith(".tmp") and not text:
                continue  # (one killed before it was written)
            held = json.loads(text)
            if not isinstance(held, dict) or not held.keys() <= set(keys) or keys[0] not in held:
                return False
        return True
    except (OSError, ValueError):
        return False


def _holds_a_journal(path: Path) -> bool:
    """Whether ``path`` holds what kg init makes beside format.json: its replica.json, or a journal
    folder of a replica's (local, or r-...); a folder of other files named journal is not one."""
    if (path / "replica.json").is_file():
        return True
    try:
        return any(
            entry.is_dir() and (entry.name == "local" or vocab.REPLICA_PATTERN.match(entry.name))
            for entry in (path / "journal").iterdir()
        )
    except OSError:
        return False


def _unparsed(tx, exc: SyntaxError) -> Damaged:
    """A journal transaction holding a line that is not N-Quads, as damage (exit 3), said in one line."""
    from kgrdf import journal as journal_mod

    return Damaged(
        f"the journal's transaction {tx.seq} ({tx.command}, {tx.time}) holds a line that is not N-Quads: "
        f"{one_line(exc)}",
        hint=journal_mod.WAY_OUT,
    )


class HistoryDamaged(Damaged):
    """The git history does not read, while the journal, the truth, is whole: the history can start
    again from it. Moving the journal aside, the way out of a damaged journal, would not mend it."""


class KnowledgeBase:
    """A knowledge base folder. Open one with :meth:`open`, make one with :meth:`create`."""

    def __init__(self, path: Path, backend: str = "oxigraph", perspective: str | None = None):
        self.path = Path(path)
        self.backend_kind = backend
        settings = files.read_json(self.path / "format.json")
        self.format = settings.get("format", FORMAT)
        self.default_perspective = settings.get("perspective", DEFAULT_PERSPECTIVE)
        if self.format < 1:
            raise files.settings_damaged(
                "format.json", f"format.json's 'format' is no format of kgrdf's: {self.format}"
            )
        if not vocab.PERSPECTIVE_PATTERN.match(self.default_perspective):  # (its IRIs are made from it)
            raise files.settings_damaged(
                "format.json", f"format.json's 'perspective' is no perspective's name: {self.default_perspective!r}"
            )
        self.perspective = self.default_perspective if perspective is None else inputs.perspective(perspective)
        self.index_url = settings.get("index")  # a SPARQL server that holds the index, when not on disk here
        if backend == "oxigraph" and self.index_url:
            self.backend_kind = "sparql"
        replica = files.read_json(self.path / "replica.json")
        self.replica = replica.get("replica")
        made_here = replica or (self.path / "replica.json").is_file()
        if made_here and not vocab.REPLICA_PATTERN.match(
            self.replica or ""
        ):  # (a folder of the journal is named by it)
            raise files.settings_damaged(
                "replica.json", f"replica.json's 'replica' is no replica's id: {self.replica!r}"
            )
        self._memory = None  # the in-memory backend keeps its index for the object's life
        self._standby = None  # a write's index made from the journal while the server is down, and its note
        self.resident = None  # a long-lived process's hold on the index (kgrdf.resident), if any
        # Told a line before each step of a long piece of work (an index rebuilt, a person forgotten),
        # so that a person at a terminal sees it is under way: set by a face that has one to tell.
        self.notice: Callable[[str], None] | None = None
        # Whether a read of a perspective that is none (a typo in --perspective) is refused, naming the
        # known ones, rather than answered empty: set by a face where the perspective was asked for.
        self.perspective_asked = False

    def command_words(self) -> list[str]:
        """What a command line printed for the user to paste adds to name this knowledge base and
        perspective: --kb and the folder, but where it is the one a line without it reaches
        (KGRDF_HOME, else the user data folder); --perspective and its name, but for the default
        one where KGRDF_PERSPECTIVE is not set (a line without the flag is read in the perspective
        the environment names)."""
        words = []
        if _folder(self.path) != _folder(default_home()):
            words += ["--kb", str(self.path.absolute())]
        if self.perspective != self.default_perspective or os.environ.get("KGRDF_PERSPECTIVE"):
            words += ["--perspective", self.perspective]
        return words

    # --- making and opening ----------------------------------------------------------------------

    @classmethod
    def create(
        cls, path: Path, perspective: str = DEFAULT_PERSPECTIVE, backend: str = "oxigraph", index: str | None = None
    ) -> "KnowledgeBase":
        """Make a new, empty knowledge base at ``path``, its index on the SPARQL server at ``index``
        when given (else on disk in the folder). Raises Refused if one is there already, or if the
        server holds another knowledge base's index; Unreachable if the server does not answer."""
        from kgrdf.errors import Refused

        path = Path(path)
        if "\x00" in str(path):
            raise BadInput(f"--kb {str(path)!r} holds a NUL character, which no path can")
        inputs.perspective(perspective)
        if index is not None:
            _check_index_server(index)
        try:
            if (path / "format.json").exists() and not _init_cut_short(path):
                raise Refused(f"{path} is a knowledge base already", hint="use it with --kb, or pick another folder")
            if path.exists() and not path.is_dir():
                raise BadInput(f"{path} is a file, not a folder", hint="kg init needs an empty or new folder")
            if path.exists() and any(path.iterdir()) and not _init_cut_short(path):
                raise Refused(f"{path} is not empty", hint="kg init needs an empty or new folder")
        except OSError as exc:
            raise BadInput(f"cannot make a knowledge base at {path}: {exc.strerror}") from None
        new_folder = not path.exists()
        try:
            path.mkdir(parents=True, exist_ok=True)
            _undo_create(path, made=False)  # what a kg init cut short there left
            settings = {"format": FORMAT, "perspective": perspective}
            # format.json last: it makes the folder a knowledge base, whole from then on (a kill
            # before it leaves what the next kg init takes away; one after, what the next write
            # commits to git)
            write_json(path / "replica.json", {"replica": "r-" + secrets.token_hex(4)})
            (path / "journal").mkdir(exist_ok=True)
            write_json(path / "format.json", settings if index is None else {**settings, "index": index})
            if vcs.available():
                vcs.init(path)
                vcs.commit(path, "kg init")
            files.tighten(path)
        except OSError as exc:
            _undo_create(path, new_folder)
            raise BadInput(
                f"cannot make a knowledge base at {path}: {exc.strerror}", hint="kg init needs a folder it can write in"
            ) from None
        except BaseException:
            _undo_create(path, new_folder)
            raise
        made.note(f"the knowledge base at {path} was made")
        return cls(path, backend)

    @classmethod
    def open(
        cls, path: Path, backend: str = "oxigraph", perspective: str | None = None, resident=None
    ) -> "KnowledgeBase":
        """Open the knowledge base at ``path``. Raises NotFound when there is none (a file, a
        folder without format.json, a place that cannot be looked into). ``resident`` is a
        long-lived process's hold on the index (kgrdf.resident.Resident): its reads and writes use
        the index it keeps open, and its git commits follow its answers."""
        path = Path(path)
        if "\x00" in str(path):
            raise BadInput(f"--kb {str(path)!r} holds a NUL character, which no path can")
        if resident is not None:  # the one it opened before, while the files it read are the same
            settings = _settings_signature(path)
            if settings is not None:
                key = ("knowledge base", str(path), backend, perspective, settings)
                return resident.remember(key, lambda: cls._open(path, backend, perspective, resident))
        return cls._open(path, backend, perspective, resident)

    @classmethod
    def _open(cls, path: Path, backend: str, perspective: str | None, resident) -> "KnowledgeBase":
        try:
            found = (path / "format.json").is_file()
        except OSError:
            found = False
        if _init_cut_short(path):
            said = shlex.quote(str(path))
            raise NotFound(
                f"no knowledge base at {path}: a kg init was cut short there", hint=f"kg init --kb {said} makes it"
            )
        if not found:
            if path.is_file():
                raise NotFound(
                    f"{path} is a file, not a knowledge base folder", hint="--kb names the folder kg init made"
                )
            said = shlex.quote(str(path))
            if _holds_a_journal(path):
                restore = f"git -C {said} checkout -- format.json" if (path / ".git").is_dir() else "restore it"
                raise Damaged(
                    f"{path} holds a knowledge base's journal but no format.json", hint=f"{restore} (kg init made it)"
                )
            if path.exists() and not (path.is_dir() and not any(path.iterdir())):
                hint = "kg init --kb makes one in a new or empty folder"  # (it refuses one that holds other files)
            else:
                hint = f"kg init --kb {said} makes one (or set KGRDF_HOME)"
            raise NotFound(f"no knowledge base at {path}", hint=hint)
        kb = cls(path, backend, perspective)
        if kb.replica is None:
            raise Damaged("replica.json is missing", hint=_NO_REPLICA)
        if kb.format > FORMAT:
            raise Damaged(f"{path} has format {kb.format}; this kgrdf reads format {FORMAT}", hint="upgrade kgrdf")
        from kgrdf import migrate

        if kb.format < FORMAT or migrate.under_way(path):
            migrate.migrate(kb)
            kb = cls(path, backend, perspective)
        kb.resident = resident
        return kb

    # --- files -----------------------------------------------------------------------------------

    @property
    def journal(self) -> Journal:
        return Journal(self.path / "journal", self.replica)

    @property
    def index_path(self) -> Path:
        return self.path / "index"

    def view(self) -> Position:
        """The journal position the knowledge base's files reflect (``view.json``)."""
        return Position.from_dict(files.read_json(self.path / "view.json"))

    def _write_view(self, position: Position) -> None:
        write_json(self.path / "view.json", {"replica": self.replica, **position.as_dict()})

    # --- checking ------------------------------------------------------------------------------------

    def validate(self, progress=None, compacting=None) -> dict:
        """The whole knowledge base against the shapes, and the store's own checks (§7 validate),
        on an index compacted first (compact_index, which tells ``compacting``).

        Returns {"damage": [...], "findings": [...], "compacted": compact_index's answer}; the shapes
        run only on an undamaged index.
        """
        from kgrdf import lock, migrate, validation

        # What stops a step cut short being finished (a marker that does not read, a folder at
        # view.json.tmp): the checks below see its effect, not its cause and its way out.
        unfinished, marked = None, (self.path / files.PURGING).exists() or migrate.under_way(self.path)
        try:
            with self.reading():
                pass  # like any command, finish a write cut short first: that is no damage
        except Damaged as exc:
            unfinished = {"check": "step cut short", "message": exc.message + (f" ({exc.hint})" if exc.hint else "")}
        try:
            compacted = self.compact_index(compacting)
        except Damaged:
            compacted = None  # the checks below say what is wrong
        with lock.held(self.path / "lock", exclusive=False):
            report = validation.validate_kb(self, progress)
        said = {problem["message"] for problem in report["damage"]}
        if unfinished is not None and (marked or report["damage"]) and unfinished["message"] not in said:
            report = {**report, "damage": [unfinished, *report["damage"]], "findings": []}
        if not report["damage"]:
            return {**report, "compacted": compacted}
        # (how an index that differs is made again: a folder's by deleting it, a server's by a move onto it)
        remade_by = f"kg index move {self.index_url}" if self.index_url else "deleting index/"
        return {**report, "compacted": compacted, "index_remade_by": remade_by}

    def compact_index(self, compacting=None) -> dict | None:
        """Merge the index's files into as few as they can be (kg index compact; kg validate does it
        first, as its scan of every quad reads through every file). A large write that is small
        beside the index leaves its bulk load's files as they are (see OxigraphBackend.compact):
        a 100k-fact base grown by eleven of them was in 73 files, which a scan read in 65 s against
        15 s once compacted, and compacting it took 3.4 s. An index already compact takes
        milliseconds. The index's content and position are unchanged; ``compacting(files)`` is told
        before the work starts.

        Returns {"files_before", "files_after", "seconds"}, or None where there is nothing here to
        compact: an index on a server or in memory, or no index yet. Raises Damaged, with the way
        out, when the store does not open or fails to read its own files."""
        from kgrdf import lock
        from kgrdf.store import oxigraph

        if self.backend_kind != "oxigraph" or not self.index_path.exists():
            return None
        with lock.held(self.path / "lock", exclusive=True):
            backend = self.open_index(read_only=False)
            try:
                before = backend.table_files()
                if compacting is not None:
                    compacting(before)
                started = time.monotonic()
                try:
                    backend.compact()
                except (OSError, RuntimeError) as exc:  # the store's word for a file it cannot read
                    raise Damaged(f"the index could not be compacted: {exc}", hint=INDEX_WAY_OUT) from None
                seconds = round(time.monotonic() - started, 3)
            finally:
                self.close_index(backend)
            # counted closed: the store deletes the files a compaction replaced in its background,
            # and by the time it is closed
            after = oxigraph.table_files(self.index_path)
        return {"files_before": before, "files_after": after, "seconds": seconds}

    # --- the index -------------------------------------------------------------------------------

    def open_index(self, read_only: bool):
        """The index, opened. Raises Damaged (with the way out) when the store does not open."""
        from kgrdf.store import open_backend

        if self.backend_kind == "memory":
            if self._memory is None:
                self._memory = open_backend("memory")
            return self._memory
        if self.backend_kind == "sparql":
            return open_backend("sparql", url=self.index_url)
        if read_only and not self.index_path.exists():
            return None
        if self.resident is not None:
            held = self.resident.index(lambda: self.open_index_alone(read_only=False))
            if held is not None:
                return held
        return self.open_index_alone(read_only)

    def open_index_alone(self, read_only: bool):
        """The index, opened for this one command (not the index a resident process holds)."""
        from kgrdf.store import open_backend

        if self.backend_kind == "sparql":
            return open_backend("sparql", url=self.index_url)
        # Under the index's claim (kgrdf.lock) no other kg process has it open. One that does is a
        # process of kg serve whose index.held was removed, which lets go within a second, or not kg's.
        waited_until = time.monotonic() + OPEN_ELSEWHERE_WAIT
        while True:
            try:
                return open_backend("oxigraph", self.index_path, read_only=read_only)
            except RuntimeError as exc:  # the store's own word for a corrupt folder
                raise Damaged(f"cannot open the index at {self.index_path}: {exc}", hint=INDEX_WAY_OUT) from None
            except Damaged as exc:
                if "lock file" not in exc.message.lower():
                    raise
                if time.monotonic() > waited_until:
                    raise Damaged(
                        f"the index at {self.index_path} is open in another process ({one_line(exc)})",
                        hint="stop the process that has it open (not a kg command: kg serve, kg mcp and kg console "
                        "give it up when asked); the index is whole, do not remove it",
                    ) from None
                time.sleep(0.1)

    def _open_for_writing(self):
        """The index, opened for writing by the holder of the exclusive lock. An index that does not
        open (a rebuild cut short, a damaged folder) is derived: it is made again from the journal,
        with a note on stderr. One that another process holds open is not touched."""
        try:
            return self.open_index(read_only=False)
        except Damaged as exc:
            # (another process holding it: "While lock file: index/LOCK"; not "block checksum mismatch";
            # nor an index whole on a disk that is full, or a file size limit: kept, not made again)
            if self.backend_kind in ("memory", "sparql") or re.search(r"\block\b|" + NO_ROOM, exc.message.lower()):
                raise
        import shutil

        shutil.rmtree(self.index_path, ignore_errors=True)
        print("kg: the index did not open; rebuilding it from the journal", file=sys.stderr)
        return self.open_index(read_only=False)

    def close_index(self, backend) -> None:
        if self.resident is not None and self.resident.owns(backend):
            return  # kept open for the next request
        if backend is not None and backend is not self._memory:
            backend.close()

    def _is_fresh(self, backend, view: Position) -> bool:
        """A stat and one lookup: the journal ends where view.json says and the index is there."""
        from kgrdf import schema

        if backend is None:
            return False
        if not self.journal.ends_at(view):
            return False
        return backend.position() == (view.seq, view.digest) and backend.schema_digest() == schema.digest(self.path)

    def session_on(self, backend):
        """A read's session; a perspective asked for that is none is refused (once a process)."""
        from kgrdf.session import Session

        session = Session(self, backend)
        if self.perspective_asked and self.perspective != self.default_perspective:
            if not session.perspective_exists():
                raise session.unknown_perspective()
            self.perspective_asked = False  # (it exists: a process asks once)
        return session

    @contextmanager
    def reading(self):
        """A read-only :class:`Session` on an index that reflects the whole journal."""
        with self._damage_marked(), self._reading() as session:
            yield session

    @contextmanager
    def _damage_marked(self):
        """An index file that fails its checksum when a command reads it (the store opened, the
        damage is in a table it reads later) is marked so, and the command told: the next command
        makes the index again from the journal, as it does an index that does not open."""
        try:
            yield
        except (RuntimeError, OSError) as exc:
            if not self.mark_index_damaged(exc):
                raise
            raise errors.of(exc) from None

    def mark_index_damaged(self, exc: Exception) -> bool:
        """Whether ``exc`` is the index's word for a file of it that fails its checksum
        (errors.index_damage); if so, the index on disk is marked so, and the next command makes
        it again from the journal."""
        if self.backend_kind != "oxigraph" or not errors.index_damage(exc):
            return False
        from kgrdf.store.oxigraph import mark_damaged

        # The store the damaged table is of, as the message names it: the index, or one kept
        # beside it in cache/ (an audience's dataset, made again as the index is when it is marked)
        index = Path(os.path.abspath(self.index_path))
        table = re.search(r" in (\S+)/[^/\s]+\.sst\b", str(exc))
        folder = Path(os.path.abspath(table.group(1))) if table else index
        if folder != index and not folder.is_relative_to(os.path.abspath(self.path / files.CACHE)):
            folder = index
        mark_damaged(folder, exc)
        if self.resident is not None and folder == index:
            self.resident.drop_held()  # a server's next request opens it again, and so makes it again
        return True

    @contextmanager
    def _made_up_to_date(self, lock_path: Path):
        """The exclusive lock a read takes to bring the index up to date with the journal (or to
        finish a write or a deletion cut short); where it cannot be taken, a read-only folder, the
        read is refused saying what it needed."""
        from kgrdf import lock

        try:
            with lock.held(lock_path, exclusive=True):
                yield
        except lock.ReadOnly as exc:
            raise Damaged(
                "the index is missing or behind the journal (or a write was cut short), and this read cannot "
                f"bring it up to date: {exc.message.removeprefix(f'the knowledge base at {self.path} ')}",
                hint="run any kg command once where the folder can be written; then reads go on read-only",
            ) from None

    @contextmanager
    def _reading(self):
        from kgrdf import lock

        lock_path = self.path / "lock"
        for attempt in range(2):
            with lock.held(lock_path, exclusive=False):
                try:
                    backend = self.open_index(read_only=True)
                except Damaged:
                    backend = None  # an index that does not open: brought up to date below
                try:
                    view = self.view()
                    if self.backend_kind == "memory" and self.journal.ends_at(view):
                        if not self._is_fresh(backend, view):
                            self._rebuild(backend, view)  # a private index: the shared lock suffices
                    # A write cut short before its git commit is committed first (once: when git
                    # is busy, the read goes on and a later command commits it).
                    owed = (self.path / files.PURGING).exists() or (
                        (self.path / UNCOMMITTED).exists() and not (self.resident and self.resident.owes_commits())
                    )
                    if self._is_fresh(backend, view) and (attempt or not owed):
                        yield self.session_on(backend)
                        return
                finally:
                    self.close_index(backend)
            if attempt == 0:
                with self._made_up_to_date(lock_path):
                    self._finish_purge()
                    backend = self._open_for_writing()
                    try:
                        self._recover(backend)
                    except Damaged as exc:
                        damage = exc  # reads go on from an index that matches view.json
                        break
                    finally:
                        self.close_index(backend)
        else:
            raise Damaged(
                "the index could not be brought up to date with the journal",
                hint="remove the index/ folder and run the command again",
            )
        with lock.held(lock_path, exclusive=False):
            backend = self.open_index(read_only=True)
            try:
                view = self.view()
                if backend is None or backend.position() != (view.seq, view.digest):
                    raise damage
                if not self.journal.empty():
                    then = f"writes refuse until you {damage.hint}"
                else:
                    then = "the next write starts a new journal from it as a new replica"
                told = (
                    damage.message
                    if isinstance(damage, HistoryDamaged) or damage.details.get("status") is not None
                    else f"the journal is damaged ({damage.message})"  # (not the server's refusal to take it)
                )
                print(f"kg: {told}; reading the index as of transaction {view.seq}; {then}", file=sys.stderr)
                yield self.session_on(backend)
            finally:
                self.close_index(backend)

    @contextmanager
    def writing(self, command: str, dry_run: bool = False):
        """A :class:`Writer` whose changes become one journal transaction and one commit.

        With ``dry_run`` the change is computed and validated exactly as for real, then dropped.
        """
        with self._damage_marked(), self._writing(command, dry_run) as writer:
            yield writer

    @contextmanager
    def _writing(self, command: str, dry_run: bool):
        from kgrdf import lock

        if self.replica is None:
            raise Damaged("replica.json is missing", hint=_NO_REPLICA)
        with lock.held(self.path / "lock", exclusive=True):
            self._finish_purge()
            self._standby = None
            backend = self._open_for_writing()
            down = None  # the index server's silence, when the write is checked against the journal
            try:
                try:
                    self._start_new_journal_if_gone(backend)
                    position = self._recover(backend)
                except Unreachable as exc:
                    self.close_index(backend)
                    backend = None
                    backend, position = self._index_from_journal(exc)
                    down = exc
                else:
                    backend = self._with_stand_in(backend, position)
                self._check_since_commit()
                from kgrdf import privacy
                from kgrdf.writer import Writer

                # (a clock behind the journal is refused, a dry run's too, in words of its own: clock.for_write)
                now = clock.iso(clock.for_write(self.journal, dry_run=dry_run))
                writer = Writer(self, backend, seq=position.seq + 1, now=now)
                writer.key = privacy.key(self)
                try:
                    yield writer
                    if writer.has_change:
                        writer.validate()
                        if not dry_run:
                            self._commit(backend, writer, position, command, down or getattr(backend, "down", None))
                            made.note(f"transaction {writer.seq} is in the journal")
                finally:
                    writer.close()
            finally:
                self.close_index(backend)
        if vcs.housekeeping_due(self.path):
            vcs.start_housekeeping(self.path)  # once the lock is released: no write waits for it

    def _with_stand_in(self, backend, position: Position):
        """A write's index on a server, read through :class:`Standby`: should the server stop
        answering while the write is made or validated, the rest of its reads are answered by an
        index made from the journal, which stands at the same ``position``."""
        if self.backend_kind != "sparql":
            return backend
        from kgrdf.store.standby import Standby

        def stand_in(exc):
            standing, at = self._index_from_journal(exc)
            if (at.seq, at.digest) != (position.seq, position.digest):
                standing.close()
                raise exc
            return standing

        return Standby(backend, stand_in)

    def _index_from_journal(self, down) -> tuple:
        """For a write whose index server does not answer: an index made from the journal (the
        truth, whole on this machine), and the journal's end. The write is checked against it as
        strictly as against the server, then journaled and left for the server to catch up with:
        view.json stays where the server was last brought. Raises ``down`` when the journal cannot
        stand in for the server (a new journal is to start from the data only the server holds).

        That index is kept on disk in ``cache/standby/`` (derived, as all of cache/, and deleted
        with it by kg forget), so that the next write of an outage, or of the next one, brings it
        up to the journal's end by the transactions written since, instead of making it again.
        Nothing reads it but a write whose server is down."""
        from kgrdf.store import open_backend

        if self.backend_kind != "sparql" or (self.journal.empty() and self.view().seq):
            raise down
        cache = self.path / files.CACHE
        if cache.is_symlink() or (cache.exists() and not cache.is_dir()):  # nowhere to keep it: in memory
            backend, end, noted = open_backend("memory"), None, None
        else:
            backend, end, noted = self._open_standby(cache)
        if end is None:
            end, deleted = self._check_journal()
            self._rebuild(backend, end, deleted)
        if noted is not None:
            self._standby = (backend, noted)
            write_json(noted, end.as_dict())
        return backend, end

    def _open_standby(self, cache: Path) -> tuple:
        """The index kept in ``cache/standby/``, brought up to the journal's end from where its note
        says it stands, with that end (None when it must be made again) and the note's path."""
        import shutil

        from kgrdf.store import open_backend

        folder, noted = cache / "standby", cache / "standby.json"
        at = Position.from_dict(files.read_json(noted)) if noted.exists() else None
        noted.unlink(missing_ok=True)  # until it is noted again, what the folder holds is unknown
        cache.mkdir(exist_ok=True)
        try:
            backend = open_backend("oxigraph", folder)
        except (RuntimeError, Damaged):  # a folder cut short or damaged: it is derived
            shutil.rmtree(folder, ignore_errors=True)
            backend = open_backend("oxigraph", folder)
        if at is None or backend.position() != (at.seq, at.digest):
            return backend, None, noted
        end = at
        try:
            for tx, after in self.journal.transactions(at):
                backend.apply(tx, after)
                end = after
        except Damaged:
            return backend, None, noted  # the journal no longer holds that position
        return backend, end, noted

    def _commit(self, backend, writer, position: Position, command: str, down=None) -> None:
        tx = Transaction(
            seq=writer.seq,
            command=command,
            time=clock.iso(clock.now()),
            deletes=writer.delete_lines(),
            adds=writer.add_lines(),
        )
        (self.path / UNCOMMITTED).touch()
        message = f"kg {command} (transaction {tx.seq})"
        if down is None and self.backend_kind == "oxigraph" and len(tx.adds) + len(tx.deletes) >= LARGE:
            return self._commit_beside_index(backend, writer, tx, position, message)
        after = self.journal.append(tx, position, private=writer.is_private)
        if down is not None:
            print(
                f"kg: {down.message}; transaction {tx.seq} was validated against the journal and is in it, and "
                f"the index catches up with it when the server answers again (kg status)",
                file=sys.stderr,
            )
            self._keep_standby(tx, after)
            self._git_commit_for(message)  # view.json stays behind: the next command applies it
            return
        if len(tx.adds) + len(tx.deletes) < LARGE:
            if not self._apply_or_leave_behind(backend, tx, after):
                self._git_commit_for(message)  # view.json stays behind: the next command applies it
                return
            if self._view_or_leave_behind(tx, after):
                self._after_write(backend, position, after, writer)
            self._git_commit_for(message)
            return
        # A large write (an import) on an index server or in memory: the git commit runs beside the
        # index update. view.json goes first; an index found behind it is rebuilt from the journal,
        # so a cut here loses nothing.
        viewed = self._view_or_leave_behind(tx, after)
        with self._git_commit_beside(message):
            if self._apply_or_leave_behind(backend, tx, after) and viewed:
                self._after_write(backend, position, after, writer)

    def _commit_beside_index(self, backend, writer, tx: Transaction, position: Position, message: str) -> None:
        """A large write (an import) on the index on disk: Oxigraph loads it into the index while
        the journal is written and the measures cache reads what it changes (Oxigraph loads without
        the interpreter's lock), then the git commit runs beside the caches' update.

        The index is marked as loading first, a position no journal holds, and given the write's
        position once both are done: a cut anywhere between leaves an index that the next command
        rebuilds from the journal, which holds the write whole or sets its torn tail aside. So the
        index never holds, as the journal's, a write the journal does not."""
        from concurrent.futures import ThreadPoolExecutor

        from kgrdf import measures

        backend.set_position(LOADING)
        compact = backend.compacts_after(tx)
        # The journal and the caches go beside the load, which runs on both cores, or beside the
        # compaction after it, which runs on one: the caches go beside the compaction when there is
        # one, and so does the journal when the write is the rows of a few facts heard again and
        # again (more than LATE_JOURNAL_ROWS a fact). Its journal is then shorter than its compaction
        # (100k copies of one fact: 1.5 s against 2.2 s), where a write of new facts spends longer on
        # its journal and caches than on the compaction (100k facts: 9.7 s against 3.6 s).
        rows = len(tx.adds) + len(tx.deletes)
        late = compact and rows > LATE_JOURNAL_ROWS * max(1, len(writer.pending_facts()))
        with ThreadPoolExecutor(max_workers=1) as index:
            loaded = index.submit(backend.load, tx, compact=False)
            if not late:
                after = self.journal.append(tx, position, private=writer.is_private)  # a failure waits for the load
            deletes, adds = writer.delete_lines(), writer.add_lines()
            read = measures.read_ahead(self.path, position, deletes, adds, ready=writer.prepared())
            # The caches kept from the rows alone are kept before the index has its position, unless
            # the write revises a fact's status or valid time (the measures then read when from the
            # index): cut before then, they stand at the journal's end, where the rebuilt index will.
            early = read is not None and not read.revised
            if early and not compact:
                self._keep_row_caches(backend, position, after, writer, read)
            loaded.result()
            compacting = index.submit(backend.compact) if compact else None
            if late:
                after = self.journal.append(tx, position, private=writer.is_private)
            if early and compact:
                self._keep_row_caches(backend, position, after, writer, read)
            if compacting is not None:
                compacting.result()
        backend.set_position(after)
        viewed = self._view_or_leave_behind(tx, after)
        with self._git_commit_beside(message):
            if viewed:
                self._after_write(backend, position, after, writer, read, rows_kept=early)

    @contextmanager
    def _git_commit_beside(self, message: str):
        """The git commit of a large write, in a thread beside the work of the block."""
        import threading

        git = threading.Thread(target=self._git_commit_for, args=(message,))
        git.start()
        try:
            yield
        finally:
            git.join()

    def _keep_standby(self, tx: Transaction, after: Position) -> None:
        """Bring the index that stood in for the server to the write it checked, and note where it
        stands: the next write of the outage starts from there."""
        if self._standby is None:
            return
        backend, noted = self._standby
        try:
            backend.apply(tx, after)
            write_json(noted, after.as_dict())
        except Exception:  # a derived index never fails a write the journal holds already
            noted.unlink(missing_ok=True)  # the next outage's first write makes it again

    def _after_write(
        self, backend, position: Position, after: Position, writer, read=None, rows_kept: bool = False
    ) -> None:
        """Keep the caches derived from the index current with an applied write (those kept from
        its rows too, unless ``rows_kept``). The batch cache reads the index again: a server that
        stopped answering by then costs the cache, made again by the next batch, never the write."""
        from kgrdf import waiting

        if not rows_kept:
            self._keep_row_caches(backend, position, after, writer, read)
        try:
            waiting.after_write(self.path, backend, position, after, writer.delete_lines(), writer.add_lines())
        except Unreachable:
            waiting.drop(self.path)

    def _keep_row_caches(self, backend, position: Position, after: Position, writer, read=None) -> None:
        """Keep the caches made from a write's rows current with it: the people's, and the measures
        (which read the index only for the facts whose status or valid time it revised). ``read``: what
        measures.read_ahead read of the write."""
        from kgrdf import measures, people

        deletes, adds = writer.delete_lines(), writer.add_lines()  # (the rows: a large write keeps no quads)
        people.after_write(self.path, position, after, deletes, adds)
        if self.backend_kind != "memory":
            measures.after_write(self.path, backend, position, after, deletes, adds, read)

    def _view_or_leave_behind(self, tx: Transaction, after: Position) -> bool:
        """Write view.json once a transaction is journaled; False when the folder refuses it (a folder
        standing at view.json.tmp, a file made immutable, no room): the write is acknowledged all the
        same, with one line that says so, for the journal holds it and a retry would make it twice.
        The next command that can write view.json brings it to the journal's end."""
        try:
            self._write_view(after)
            return True
        except (Damaged, OSError) as exc:
            said = exc.message if isinstance(exc, Damaged) else one_line(exc)  # (its hint: to run it again)
            print(
                f"kg: {said}; transaction {tx.seq} is in the journal all the same (do not make it again): once "
                "the folder takes view.json, the next command records it there",
                file=sys.stderr,
            )
            return False

    def _apply_or_leave_behind(self, backend, tx: Transaction, after: Position) -> bool:
        """Apply a journaled transaction to the index; False when the index's server stopped
        answering. The write is acknowledged all the same: the journal holds it, flushed to disk,
        and the index, left behind the journal, is brought up to it by the next command that
        reaches the server."""
        try:
            backend.apply(tx, after)
            return True
        except Unreachable as exc:
            print(
                f"kg: {exc.message}; transaction {tx.seq} is in the journal, and the index catches up with "
                f"it when the server answers again (kg status)",
                file=sys.stderr,
            )
            return False
        except Damaged as exc:
            if exc.details.get("status") is None:  # (an index on disk that fails its checksum is marked so)
                raise
            # The server refused the update (a proxy's limit on a request's size, a server out of room):
            # the journal holds the write all the same, and a retry would make it twice.
            print(
                f"kg: {exc.message}; transaction {tx.seq} is in the journal, and the index catches up with "
                f"it once the server takes it ({exc.hint}; kg status)",
                file=sys.stderr,
            )
            return False
        except OSError as exc:  # the disk full, a file size limit: the journal holds the write already
            print(
                f"kg: the index could not take transaction {tx.seq} ({one_line(exc)}); it is in "
                "the journal, and the next command brings the index up to it once the disk has room (kg status)",
                file=sys.stderr,
            )
            return False

    def move_index(self, url: str | None) -> dict:
        """Keep the index on the SPARQL server at ``url`` from now on (None: on disk in the folder),
        built there from the journal at once; the index it leaves is removed (a folder) or left to
        the server's owner (a server). Raises Refused when the server holds another knowledge base's
        index, Unreachable when it does not answer; format.json changes only once the new index is
        whole, so a move cut short leaves the knowledge base on its old index."""
        import shutil

        from kgrdf import lock

        if url is not None:
            from kgrdf.store.sparql import endpoints

            endpoints(url)  # BadInput for a URL that is no http(s) address
        with lock.held(self.path / "lock", exclusive=True):
            self._finish_purge()
            self.clear_indexes_left()  # (one of them may be where it moves to)
            try:
                old = self._open_for_writing()
                try:
                    target = self._recover(old)
                finally:
                    self.close_index(old)
                left_at = (target.seq, target.digest)  # where the index it leaves stands
            except (Unreachable, Foreign) as exc:
                if self.backend_kind != "sparql":
                    raise
                # Off a server that is gone, or holds another's index: the journal alone makes the new one.
                where = "on disk" if url is None else f"on {url}"
                print(f"kg: {exc.message}; the index {where} is made from the journal alone", file=sys.stderr)
                last = self.view()  # (where the server was last brought: a write while it is down leaves it so)
                left_at = (last.seq, last.digest)
                target, _deleted = self._check_journal()
                self._write_view(target)
            moved = KnowledgeBase(self.path, "oxigraph", self.perspective)
            moved.index_url = url
            moved.backend_kind = "sparql" if url else "oxigraph"
            if url is not None:
                _check_index_server(url, ours=self.holds_position)
            else:
                shutil.rmtree(self.index_path, ignore_errors=True)
            if url is not None:  # a move cut short leaves part of the index there: a deletion removes it
                self._note_left(url, (target.seq, target.digest), f"kg index: moving the index to {url}")
            backend = moved.open_index(read_only=False)
            tag = secrets.token_hex(8)
            try:
                moved._rebuild(backend, target)
                if url is not None:
                    backend.tag(tag)
            except Unreachable as exc:
                raise Unreachable(
                    exc.message,
                    hint=f"the index stays where it was; kg index move {url} again once the server answers "
                    "(kg forget and kg expire remove what the move left there)",
                ) from None
            finally:
                moved.close_index(backend)
            settings = files.read_json(self.path / "format.json")
            settings.pop("index", None)
            if url is not None:  # (the index now: no longer one left)
                left = settings.pop("index_left", [])
                if isinstance(left, list):
                    left = [e for e in left if not (isinstance(e, dict) and e.get("url") == url)]
                settings = {**settings, "index": url, **({"index_left": left} if left else {})}
            with self.committing(f"kg index: the index on {url or 'disk'}"):
                write_json(self.path / "format.json", settings)
                if url is not None:
                    shutil.rmtree(self.index_path, ignore_errors=True)
            if self.backend_kind == "sparql" and not _leave_server(self.index_url, self._left_by(left_at), tag):
                self._note_left(self.index_url, left_at)
        self.index_url, self.backend_kind = url, moved.backend_kind
        return {"index": url, "backend": self.backend_kind, "transaction": target.seq}

    def status(self) -> dict:
        """Where the journal ends and where the index stands: its kind, its server, the transaction
        it reflects and how many it is behind; a server that does not answer is reported, not raised,
        with the transactions written since it was last brought up to date. A deletion cut short
        (kg forget, kg expire) is finished first, as by every command: until then the journal it was
        rewriting does not match view.json, and would be reported as damaged. An index that does not
        open is made again from the journal, as by every read."""
        from kgrdf import lock

        self.finish_deletion()
        found = self._status()
        if found["index"].pop("opens", True):
            return found
        with lock.held(self.path / "lock", exclusive=True):  # an index that does not open is made again
            backend = self._open_for_writing()
            try:
                self._recover(backend)
            finally:
                self.close_index(backend)
        found = self._status()
        if not found["index"].pop("opens", True):
            raise Damaged(f"cannot open the index at {self.index_path}", hint=INDEX_WAY_OUT)
        return found

    def _status(self) -> dict:
        from kgrdf import lock, schema

        with lock.held(self.path / "lock", exclusive=False):
            end = viewed = self.view()
            # (moved aside, the way out of a damaged one: reads go on from the index, and the next
            # write starts a new journal from it)
            gone = viewed.seq > 0 and self.journal.empty()
            for _tx, after in () if gone else self.journal.transactions(end, adds=False):
                end = after
            index = {"backend": self.backend_kind, "url": self.index_url, "reachable": True}
            backend = None
            try:
                backend = self.open_index(read_only=True)
                at = backend.position() if backend is not None else None
                if at is not None and at[0] == LOADING.seq:  # a large write's load cut short: made again
                    index["opens"] = False
                    at = None
                index["transaction"] = at[0] if at else None
                on_chain = at is not None and at[0] <= end.seq and self.holds_position(at)
                index["behind"] = end.seq - at[0] if on_chain else end.seq
                gone_back = at is not None and at[0] > end.seq and not gone and self._gone_back(at, end)
                if gone_back:  # (every command refuses it: made again, it would lose what it holds)
                    index.update(gone_back=True, behind=None, problem=f"{gone_back.message} ({gone_back.hint})")
                elif at is not None and not on_chain and self.backend_kind == "oxigraph" and not gone:
                    index["stale"] = True  # (of the journal before a migration, or before one started again)
                if at is not None and at[0] > 0 and not on_chain and self.backend_kind == "sparql" and not gone_back:
                    foreign = _foreign(self.index_url, at)  # (every command refuses it; nothing catches up)
                    index.update(foreign=True, behind=None, problem=f"{foreign.message} ({foreign.hint})")
                index["schema_current"] = backend is not None and backend.schema_digest() == schema.digest(self.path)
                if gone:  # what reads go on from: an index where view.json says, or nothing
                    index["holds_the_data"] = at == (viewed.seq, viewed.digest)
            except Unreachable as exc:
                # view.json holds where the index was last brought: the journal past it is what it owes.
                index.update(reachable=False, transaction=None, behind=end.seq - viewed.seq, problem=exc.message)
            except Damaged:
                if self.backend_kind != "oxigraph":
                    raise
                index["opens"] = False  # made again from the journal (status), as a read would
            finally:
                self.close_index(backend)
        return {
            "kb": str(self.path),
            "perspective": self.perspective,
            "replica": self.replica,
            "journal": {"transactions": end.seq, **({"gone": True} if gone else {})},
            "index": index,
            "indexes_left": self.indexes_left(),
        }

    def indexes_left(self) -> list[str]:
        """The servers this knowledge base's index moved off while they did not answer, each still
        holding a copy of it (format.json's "index_left"), as kg index move wrote them."""
        left = files.read_json(self.path / "format.json").get("index_left")
        if not isinstance(left, list):
            return []
        return [entry["url"] for entry in left if _left_entry(entry)]

    def _git_commit_for(self, message: str) -> None:
        """A write's commit: now, or by the resident process a moment after its answer."""
        if self.resident is not None:
            self.resident.commit_later(message)
        else:
            self.git_commit(message)

    @contextmanager
    def committing(self, message: str):
        """Write settings files (format.json, sync.json) in the body, then commit them to git with
        ``message``; the caller holds the exclusive lock. From before the first is written,
        ``uncommitted`` says a commit is owed, so that one cut short (a kill, git busy) is made by
        the next command, as a write's is, and no one takes kgrdf's own file for an edit by hand."""
        (self.path / UNCOMMITTED).touch()
        yield
        self.git_commit(message)

    def git_commit(self, message: str) -> None:
        """Commit to the git history. When git cannot commit now, say so and go on: the journal
        holds the change, and the next command commits it."""
        try:
            vcs.commit(self.path, message)
        except vcs.Busy as exc:
            print(
                f"kg: git did not commit ({exc}); the change is made, and the next command commits it",
                file=sys.stderr,
            )
            return
        (self.path / UNCOMMITTED).unlink(missing_ok=True)

    def _start_new_journal_if_gone(self, backend) -> None:
        """The way out of a damaged journal: once it has been moved aside (or emptied), the next
        write starts a new journal from the current data, as a new replica, so that no fact id
        minted from (replica, sequence) repeats. The sequence goes on from where it was.

        Order, so that a write cut short at any step is finished by the next: a new replica.json,
        which says which index position it starts from; view.json without the old position; the
        genesis transaction (every quad of the index) appended to the new journal; the index's
        position; view.json; the commit. Until the journal holds the genesis transaction, the index
        holds the data and this runs again.

        An empty journal whose view.json was never past transaction 0, beside a server's index that
        holds data, is no journal moved aside: the index is another knowledge base's (two pointed at
        one server), and nothing of it is taken.
        """
        if not self.journal.empty():
            return
        at = backend.position()
        if at is None or at[0] == 0:
            return  # a new knowledge base: nothing to start from
        view = self.view()
        if view.seq and (view.seq, view.digest) != at:
            raise Damaged(
                "the journal is gone and the index does not match view.json: there is nothing "
                "whole to start a new journal from",
                hint="restore journal/ (mv journal.aside journal)",
            )
        # A server may be given to two knowledge bases; index/ is this folder's own (and, with the
        # journal moved aside, the one copy of the data: never to be called another's).
        started = files.read_json(self.path / "replica.json").get("from_index_at")
        if self.backend_kind == "sparql" and not view.seq and started != [at[0], at[1]]:
            raise Foreign(
                f"the server at {self.index_url} holds data (at transaction {at[0]}) that this knowledge "
                "base's journal never had: another knowledge base's index",
                hint="give each knowledge base its own server or dataset (kg index move URL); "
                "nothing of the other's was taken",
            )
        from kgrdf import identifiers, privacy
        from kgrdf.schema import SCHEMA_GRAPH
        from kgrdf.session import Session

        data = [q for q in backend.quads() if q.graph_name.value != SCHEMA_GRAPH]
        quads = sorted(str(q) for q in data)
        session = Session(self, backend)
        private = {row["fact"].value for row in session.rows("private-facts")}
        named = privacy.rows_naming_people(
            data, lambda graph: session.rows("person-labels", entities=graph), identifiers.read(self)
        )
        route = privacy.Router(private.__contains__, named.__contains__)
        (self.path / UNCOMMITTED).touch()
        old_replica = self.replica
        self.replica = "r-" + secrets.token_hex(4)
        write_json(self.path / "replica.json", {"replica": self.replica, "from_index_at": [at[0], at[1]]})
        self._write_view(Position())
        tx = Transaction(seq=at[0] + 1, command="new journal", time=clock.iso(clock.now()), adds=quads)
        after = self.journal.append(tx, Position(), private=route)
        backend.set_position(after)
        self._write_view(after)
        print(
            f"kg: started a new journal from the current data as replica {self.replica} "
            f"(was {old_replica}): {len(quads)} quads, transaction {tx.seq}",
            file=sys.stderr,
        )
        self.git_commit(f"kg: a new journal from the current data (replica {self.replica})")

    def _recover(self, backend) -> Position:
        """Bring the view and the index up to the journal's end; return that position.

        Complete transactions past view.json were flushed by a write cut short: they are applied.
        A torn tail is set aside as ``<file>.torn-<time>``. An index that is missing, behind or
        on another ontology is rebuilt from the journal.
        """
        from kgrdf import schema

        view = self.view()
        journal = self.journal
        if not view.seq and journal.empty():
            at = backend.position()
            if at is not None and at[0] > 0:
                # A new journal was being started from the index and was cut short before its first
                # transaction: the index holds the data. Start it again; never rebuild from nothing.
                self._start_new_journal_if_gone(backend)
                view, journal = self.view(), self.journal
        # The transactions past view.json are read twice: once to check them and learn where they
        # end, once to apply them (when the index is not rebuilt): never held all at once.
        target, known = view, {view.seq: view.digest}
        if not journal.ends_at(view):
            torn: list = []
            for _tx, after in journal.transactions(view, torn, adds=False):
                target, known[after.seq] = after, after.digest
            for piece in torn:
                aside = journal.set_aside(piece, clock.iso(clock.now()).replace(":", ""))
                print(
                    f"kg: set aside a torn journal tail of {piece.size} bytes as {aside.relative_to(journal.folder)}",
                    file=sys.stderr,
                )
        index_at = backend.position()
        if index_at is not None and index_at[0] > target.seq and (gone_back := self._gone_back(index_at, target)):
            raise gone_back
        if (
            self.backend_kind == "sparql"
            and index_at is not None
            and index_at[0] > 0
            and known.get(index_at[0]) != index_at[1]
            and not self.holds_position(index_at)
        ):
            raise _foreign(self.index_url, index_at)  # (a rebuild would replace it: nothing of it is taken)
        if (
            index_at is None
            or known.get(index_at[0]) != index_at[1]
            or backend.schema_digest() != schema.digest(self.path)
        ):
            self._rebuild(backend, target)
        elif target != view:
            for tx, after in journal.transactions(view):
                if tx.seq > index_at[0]:
                    try:
                        backend.apply(tx, after)
                    except SyntaxError as exc:  # (the store's word for a line that is not N-Quads)
                        raise _unparsed(tx, exc) from None
        if target != view:
            self._write_view(target)
        owed_here = self.resident is not None and self.resident.owes_commits()  # committed behind its answers
        if target != view or ((self.path / UNCOMMITTED).exists() and not owed_here):
            self._check_since_commit()
            self.git_commit(f"kg: finish a write cut short (transaction {target.seq})")
        return target

    def _gone_back(self, index_at: tuple, end: Position) -> Damaged | None:
        """For an index past the journal's end: the folder went back (git checkout or reset, an
        older journal copied in) while the index kept the newer transactions. Made again from the
        journal, it would drop them without a word, and the next write would mint their fact ids
        again for other facts: every command refuses it (Damaged), naming the commit that holds
        them when the history has one. None for a server's index past the journal that the history
        never held: another's (the caller's check for that says so)."""
        commit = vcs.commit_changing(self.path, index_at[1], "view.json")
        if self.backend_kind == "sparql" and commit is None:
            return None
        return Damaged(
            f"the index holds transaction {index_at[0]}, past where the journal ends ({end.seq}): the journal "
            "lost its newest transactions (the folder went back: a git checkout or reset, or an older journal "
            "copied in); made again from it, the index would lose them, and new facts would take their ids",
            hint=(
                f"git -C {shlex.quote(str(self.path))} reset --hard {commit} brings them back"
                if commit
                else "bring back the journal and view.json the index was written with (from where they were copied)"
            ),
        )

    def _note_left(self, url: str, at: tuple, message: str | None = None) -> None:
        settings = files.read_json(self.path / "format.json")
        left = settings.get("index_left")
        left = [e for e in left if not (isinstance(e, dict) and e.get("url") == url)] if isinstance(left, list) else []
        with self.committing(message or f"kg index: the index left on {url}, which did not answer"):
            write_json(self.path / "format.json", {**settings, "index_left": [*left, {"url": url, "at": list(at)}]})

    def remove_indexes_left(self) -> None:
        """clear_indexes_left under the exclusive lock, when format.json names any (kg expire, which
        deletes nothing on most days)."""
        from kgrdf import lock

        if files.read_json(self.path / "format.json").get("index_left"):
            with lock.held(self.path / "lock", exclusive=True):
                self.clear_indexes_left()

    def clear_indexes_left(self, say: bool = True) -> list[str]:
        """Remove this knowledge base's indexes left on servers it moved off while they did not
        answer (format.json's "index_left": each server and the position it was left at) from those
        that answer now: kg index move and every deletion (kg forget, kg expire) call it, so that no
        copy keeps what they delete. A server that holds another position now holds another's index,
        left alone. Returns the servers that still do not answer, each said on stderr if ``say``
        (kg forget says them in its own refusal). The caller holds the exclusive lock."""
        settings = files.read_json(self.path / "format.json")
        left = settings.get("index_left") or []
        if not left:
            return []
        if not isinstance(left, list) or not all(map(_left_entry, left)):
            print(  # (said, never in the way: a deletion stopped by it would stop every command after it)
                "kg: format.json's index_left is not a list of servers and positions, as kg index move "
                'writes it ({"url": URL, "at": [TRANSACTION, DIGEST]}): no index left on a server was removed',
                file=sys.stderr,
            )
            return []
        kept = [entry for entry in left if not _leave_server(entry["url"], self._left_by(tuple(entry["at"])), say=say)]
        if kept != left:
            with self.committing("kg index: the indexes left on servers that answer now are removed"):
                write_json(
                    self.path / "format.json",
                    {**settings, "index_left": kept}
                    if kept
                    else {k: v for k, v in settings.items() if k != "index_left"},
                )
        return [entry["url"] for entry in kept]

    def _left_by(self, left_at: tuple):
        """Whether an index server's position is of the index this knowledge base left there at
        ``left_at``, or of its journal's chain (:meth:`holds_position`)."""
        return lambda at: at == left_at or self.holds_position(at)

    def holds_position(self, at: tuple) -> bool:
        """Whether ``at``, an index's recorded position, is one this knowledge base's journal has
        passed: its own index, however far behind, not another's (one server given to two). The
        journal is read from its start only for an index behind view.json."""
        if at[0] <= 0:
            return at[0] == 0  # (an empty index is anyone's; one whose load was cut short, no one's)
        view = self.view()
        if (view.seq, view.digest) == tuple(at):
            return True
        if files.read_json(self.path / "replica.json").get("from_index_at") == [at[0], at[1]]:
            return True  # (the index this journal was started from)
        for _tx, after in self.journal.transactions(Position(), adds=False):
            if after.seq >= at[0]:
                return (after.seq, after.digest) == tuple(at)
        return False

    def _check_since_commit(self) -> None:
        """Raise Damaged when a journal patch was damaged since the last commit, before a write
        appends to the journal or a write cut short is committed: the commit would keep the damage
        in the history, and each write after it would stand on a journal no index can be rebuilt
        from. The journal is append-only, so a patch git holds never changes; a patch written since
        (by a write whose commit was cut short) is read, as it is not in git to compare with. Only
        those files are read, as git lists them from its record of each file's size and time; when
        git cannot list them (no history, or one that git fails to read), every patch is read."""
        from kgrdf import journal as journal_mod

        try:
            changes = vcs.changed_files(self.path, "journal", "replica.json", files.REPLICAS)
        except vcs.Unreadable as exc:
            self._check_journal()  # (damage of the journal is said first: its way out differs)
            if ".git/index" in str(exc):  # git's list of staged files alone: the history itself is whole
                hint = f"make git's index again from the last commit (rm {self.path / '.git' / 'index'} && git -C {self.path} reset -q)"
            else:
                hint = f"move the history aside (mv {self.path / '.git'} {self.path / '.git.aside'}): the next write starts it again from the knowledge base as it is"
            raise HistoryDamaged(
                f"the git history in .git does not read (git: {exc}); the journal is whole", hint=hint
            ) from None
        if changes is None:
            self._check_journal()
            return
        journal = self.journal
        streams = {f"journal/{self.replica}/": journal.shared, f"journal/{journal_mod.LOCAL}/": journal.local}
        # A new journal started since the last commit (the old one moved aside) replaces the files git holds.
        started = any(name == "replica.json" for _status, name in changes)
        for status, name in changes:
            if name.startswith(f"{files.REPLICAS}/") and {"M", "T"} & set(status):
                # another replica's patch, as pulled, changed: the write's commit would keep it damaged
                # in the history, where kg validate no longer sees it and every kg sync stops on it
                # (one removed, or the last one cut short, is pulled again by the next kg sync)
                replica = name.split("/")[1]
                pulled = journal_mod.Stream(self.path / files.REPLICAS / replica)
                if self.path / name == pulled.last() and pulled.read(self.path / name)[0] is None:
                    continue
                raise Damaged(
                    f"another replica's journal, as kg sync pulled it, was changed outside kgrdf since the last commit: {name}",
                    hint=f"restore it from git (git -C {shlex.quote(str(self.path))} checkout HEAD -- {files.REPLICAS}/), "
                    f"or remove {files.REPLICAS}/{replica}/: the next kg sync pulls it again",
                )
            prefix = next((prefix for prefix in streams if name.startswith(prefix)), None)
            if prefix is None or not journal_mod.is_patch_name(name[len(prefix) :]):
                continue
            stream, path = streams[prefix], self.path / name
            if status[0] not in "?A":
                if started:
                    continue
                raise Damaged(
                    f"the journal was changed outside kgrdf since the last commit: {name}",
                    hint=f"restore it from git (git -C {self.path} checkout HEAD -- journal/), or {journal_mod.WAY_OUT}",
                )
            if path.is_file() and path != stream.last() and stream.read(path)[0] is None:
                raise Damaged(f"{name} is not a whole patch and others follow it", hint=journal_mod.WAY_OUT)

    def finish_deletion(self) -> None:
        """Finish a deletion cut short (kg forget, kg expire), as every command does before it reads
        or writes: for a command that reads a file of the folder alone (kg tokens list)."""
        from kgrdf import lock

        if (self.path / files.PURGING).exists():
            with lock.held(self.path / "lock", exclusive=True):
                self._finish_purge()

    def _finish_purge(self) -> None:
        """A deletion cut short (``purging.json`` is there) is finished before anything else runs.
        The caller holds the exclusive lock and no open index."""
        if (self.path / files.PURGING).exists():
            from kgrdf import purge  # (its rules and theirs are no read's: a read imports none of them)

            counts = purge.finish(self)
            print(
                f"kg: finished a deletion cut short ({counts['records']} journal records dropped); the git "
                f"history was restarted",
                file=sys.stderr,
            )

    @contextmanager
    def up_to_date(self):
        """The index opened for writing, with any deletion or write cut short finished first and the
        index brought up to the journal's end; for a caller that holds the exclusive lock and writes
        outside a transaction (kg forget, retention)."""
        with self._damage_marked(), self._up_to_date() as backend:
            yield backend

    @contextmanager
    def _up_to_date(self):
        self._finish_purge()
        backend = self._open_for_writing()
        try:
            self._start_new_journal_if_gone(backend)
            self._recover(backend)
            yield backend
        finally:
            self.close_index(backend)

    def note(self, text: str) -> None:
        """Tell ``text``, the step a long piece of work starts now, to whoever is told (notice)."""
        if self.notice is not None:
            self.notice(text)

    def rebuild_index(self, beside=None, compacting=None) -> None:
        """Make the index again from the journal, in a new folder (a store keeps deleted bytes in its
        files until compaction, and never deletes a string it once held), with view.json at the
        journal's end. ``beside()`` runs while the store loads (it waits on other processes or the
        disk, the load on the processor), once the old folder, moved aside to ``index.old`` first,
        is removed; ``compacting()`` runs after it, once every row is handed to the store: its work
        on the processor then shares it with the store's compaction, on one core, not with the load,
        on both. Each may read the folder as the rebuild leaves it. The caller holds the exclusive
        lock and no open index, and has recorded what it is doing (a rebuild cut short is done
        again, and index.old is a leftover then)."""
        import shutil
        import threading
        from concurrent.futures import ThreadPoolExecutor

        old = self.path / OLD_INDEX
        if self.resident is not None:  # (kg serve finishing a forget cut short: it holds the index replaced)
            self.resident.drop_held()
        if self.index_path.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(self.index_path, old)
        target, deleted = self._check_journal()
        self._write_view(target)
        backend = self.open_index(read_only=False)
        handed = threading.Event()
        try:
            with ThreadPoolExecutor(max_workers=1) as pool:
                loading = pool.submit(self._rebuild, backend, target, deleted, handed.set)
                loading.add_done_callback(lambda _done: handed.set())  # (a load that fails hands no more)
                try:
                    shutil.rmtree(old, ignore_errors=True)
                    if beside is not None:
                        beside()
                    handed.wait()
                    if compacting is not None and not (loading.done() and loading.exception()):
                        compacting()
                finally:
                    loading.result()
        finally:
            self.close_index(backend)

    def _check_journal(self, target: Position | None = None) -> tuple[Position, dict[str, int]]:
        """The first of a rebuild's two passes over the journal: every patch checked (a damaged
        journal raises Damaged before the index is touched); the position after ``target``'s
        transaction (the journal's end when None) and the lines deleted up to it, each with the
        sequence number of its last deletion. Raises Damaged when ``target`` is not on the chain."""
        from kgrdf import journal as journal_mod

        end, deleted = Position(), {}
        for tx, after in self.journal.transactions(Position(), adds=False):
            if target is None or tx.seq <= target.seq:
                end = after
                deleted.update(zip(tx.deletes, itertools.repeat(tx.seq)))
        if target is not None and (end.seq, end.digest) != (target.seq, target.digest):
            raise Damaged(
                "the journal does not match view.json: it was edited outside kgrdf or lost records",
                hint=journal_mod.WAY_OUT,
            )
        return end, deleted

    def _folded(self, target: Position, deleted: dict[str, int]):
        """The second pass: the journal read again up to ``target``, one transaction at a time, and
        the lines it leaves. Raises Damaged when it no longer reads as the first pass did."""
        from kgrdf import journal as journal_mod

        end = Position()
        for tx, after in self.journal.transactions(Position()):
            if tx.seq > target.seq:
                break
            end = after
            yield from journal_mod.folded([tx], deleted)
        if (end.seq, end.digest) != (target.seq, target.digest):
            raise Damaged("the journal changed while the index was rebuilt from it", hint="run the command again")

    def _rebuild(self, backend, target: Position, deleted: dict[str, int] | None = None, handed=None) -> None:
        """Replace the index with the journal's rebuild and the schema graph, in two passes over the
        journal (:meth:`_check_journal`, then the load as it is read again): its memory follows
        the deleted lines and one load's worth of text, not the journal. ``handed()`` is called once
        the store has taken the last row to load."""
        from kgrdf import measures, model, schema, waiting

        waiting.drop(self.path)  # derived from the index: made again by the next batch
        measures.drop(self.path)  # and by the next Briefing

        if deleted is None:
            _end, deleted = self._check_journal(target)
        schema_quads, ext = schema.effective_quads(self.path)
        if ext is not None and not ext.accepted:
            print(
                f"kg: schema.json is refused ({'; '.join(ext.problems)}); working on the core schema", file=sys.stderr
            )

        def loaded() -> None:
            if self.backend_kind == "oxigraph":  # (a server's index is not compacted by kgrdf)
                self.note("compacting the index ...")
            if handed is not None:
                handed()

        self.note(f"rebuilding the index from the journal ({target.seq} transactions) ...")
        quads = itertools.chain(
            self._folded(target, deleted),
            model.lines(schema_quads),
            model.lines(_schema_digest_quads(schema.digest(self.path))),
            _calling(loaded),
        )
        try:
            backend.replace_all(quads, target)
        except SyntaxError as exc:  # (the store's word for a line that is not N-Quads)
            raise Damaged(
                f"the journal holds a line that is not N-Quads, so no index can be made from it: {one_line(exc)}",
                hint=f"git -C {self.path} status shows journal files changed outside kgrdf: restore them "
                "(git checkout -- journal/) or move a file kgrdf did not write aside; moving journal/ aside "
                "would start again from an empty index",
            ) from None


def _calling(call) -> Iterator[str]:
    """No rows: ``call()`` once it is asked for the first."""
    call()
    yield from ()


def _undo_create(path: Path, made: bool) -> None:
    """Take away what a kg init cut short made, so that a refused init leaves nothing behind."""
    import shutil

    if made:
        shutil.rmtree(path, ignore_errors=True)
    else:
        for name in ("format.json", "replica.json", "format.json.tmp", "replica.json.tmp"):
            (path / name).unlink(missing_ok=True)
        for name in ("journal", ".git"):
            shutil.rmtree(path / name, ignore_errors=True)


def _check_index_server(url: str, ours=None) -> None:
    """An index server answers and holds no other knowledge base's index (one server, or one dataset
    of it, serves one knowledge base: a rebuild replaces all of kgrdf's it holds); ``ours(at)`` says
    whether a position is one of this knowledge base's own journal, which the server may hold already."""
    from kgrdf.errors import Refused
    from kgrdf.store import open_backend
    from kgrdf.store.hub import Hub

    backend = open_backend("sparql", url=url)
    try:
        at = backend.position()
        # (a new knowledge base takes none: one made a moment ago is at transaction 0, and as much another's)
        if at is not None and (ours is None or at[0] > 0) and not (ours is not None and ours(at)):
            raise Refused(
                f"the server at {url} holds the index of another knowledge base (at transaction {at[0]})",
                hint="give each knowledge base its own server or dataset",
            )
    finally:
        backend.close()
    hub = Hub(url)
    try:
        if hub.heads():
            raise Refused(
                f"the server at {url} is a team's hub (kg sync pushes to it), not an index",
                hint="give the index a server or dataset of its own",
            )
    finally:
        hub.close()


def _foreign(url: str, at: tuple) -> Foreign:
    return Foreign(
        f"the server at {url} holds an index (at transaction {at[0]}) that this knowledge base's "
        "journal never had: another knowledge base's index",
        hint="give each knowledge base its own server or dataset (kg index move URL, or kg index move disk); "
        "nothing of the other's was taken",
    )


def _left_entry(entry) -> bool:
    """Whether a format.json "index_left" entry is one kg index move writes: a server's address and
    the position of the index left there."""
    from kgrdf.store.sparql import endpoints

    at = entry.get("at") if isinstance(entry, dict) else None
    url = entry.get("url") if isinstance(entry, dict) else None
    if not (isinstance(url, str) and isinstance(at, list) and len(at) == 2):
        return False
    try:
        endpoints(url)  # (an http(s) address without a user or password, as kg index move took it)
    except BadInput:
        return False
    return isinstance(at[0], int) and not isinstance(at[0], bool) and isinstance(at[1], str)


def _leave_server(url: str, ours, tag: str | None = None, say: bool = True) -> bool:
    """Remove this knowledge base's index from the server at ``url``, as a folder's is removed: a
    copy left there would keep what kg forget deletes. Not when the server holds ``tag`` (the one it
    moved to, under another address), nor when it holds a position not ``ours(at)`` (where it left
    it, or one of its journal's: another's index since, left alone, and said). False when the
    server does not answer: the index is still there."""
    from kgrdf.store import open_backend

    try:
        backend = open_backend("sparql", url=url)
        try:
            if tag is not None and backend.tagged(tag):
                return True  # the server moved to, under another address
            at = backend.position()
            if at is not None and not ours(at):
                print(f"kg: the server at {url} holds another index now: nothing of it was removed", file=sys.stderr)
                return True
            backend.drop_all()
        finally:
            backend.close()
    except Unreachable as exc:
        if say:
            print(
                f"kg: {exc.message}: this knowledge base's old index is still on it; the next kg index move, "
                "kg forget or kg expire that finds it answering removes it",
                file=sys.stderr,
            )
        return False
    return True


def _schema_digest_quads(digest: str):
    from pyoxigraph import Literal, Quad

    return [Quad(vocab.INDEX_NODE, vocab.kg("schemaDigest"), Literal(digest), vocab.DEFAULT_GRAPH)]
