"""The embedded Oxigraph backend: a persistent store on disk, or an in-memory one.

pyoxigraph has no transaction object: each ``update()`` is atomic on its own, so a transaction
and the position it moves the index to go into one update. A very large transaction (an import)
is loaded in bulk and its position set after; replaying it is harmless since applying a
transaction twice leaves the same quads.
"""

import itertools
import os
import re
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyoxigraph as ox

from kgrdf import nquads, vocab
from kgrdf.errors import NO_ROOM, BadInput, Damaged, one_line
from kgrdf.journal import Position, Transaction
from kgrdf.queries import Query, bind
from kgrdf.store.base import Backend, user_dataset

BULK_THRESHOLD = 20_000
# A store takes about twice the bytes of its rows' text: a bulk load whose text, times this, is at
# least the bytes the store held (it as much as doubles the store) is followed by a compaction.
COMPACT_AFTER = 2
ROW_BYTES = 200  # about the text of a journal row (a fact's rows are 150-250 bytes), to tell that in advance
LOAD_LINES = 25_000  # journal lines to a bulk load (about 5 MB of text; larger loads hold tens of MB more
# each in the store's bulk loader, and were no faster on two threads: 3.6 s for 1.1M rows at 50k)
# Bulk loads run side by side: each writes files of its own, named at random, which the store takes in
# whole, and the store's loader works without the interpreter's lock. Two loading 1.1M rows on two
# cores took 3.3-3.9 s against 5.5 s for one, the same quads after; at 25k lines a load, two held no
# more memory than one at 50k (about 95 MB above the rows).
LOAD_THREADS = min(2, os.cpu_count() or 1)
# Fewer, larger pieces for a load the store does not compact after (one a thread) were tried: a scan of
# every quad right after is twice as fast (a 100k base made in eleven writes: kg export 21-23 s against
# 46-49 s), but the store then leaves the merging of those files to a later write, whichever comes: the
# eighth small write after took 4.3 s (here the second, 1.4 s), and one on a base of 1M took 16 s.
KEPT_LOGS = 3  # the store's logs of its last opens kept by a write (LOG.old.<time>; see _prune_logs)
_KG_SEQ = vocab.kg("journalSeq")
_KG_DIGEST = vocab.kg("journalDigest")
_KG_SCHEMA = vocab.kg("schemaDigest")


DAMAGED = "kgrdf-damaged"  # in the index's folder: a command met a table failing its checksum


def mark_damaged(path: Path, exc: Exception) -> None:
    """Mark the index at ``path`` as damaged (``exc``, the store's word, kept in the mark): it no
    longer opens, and the next command makes it again from the journal (KnowledgeBase)."""
    try:
        (path / DAMAGED).write_text(str(exc).splitlines()[0][:300] + "\n")
    except OSError:
        pass  # (the command is told of the damage all the same)


def _marked(path: Path) -> str:
    """What the damage mark of the index at ``path`` says (": ..."), or nothing when it does not read."""
    try:
        with open(path / DAMAGED, "rb") as marked:
            said = marked.read(400).decode("utf-8", errors="replace").strip()
    except OSError:
        return ""
    return f": {said}" if said else ""


# Memory one read of a store on disk may take beyond what the process held when it began (the peak
# the whole-base commands are held to at a million facts): past it, the read is a runaway.
RUNAWAY_BYTES = 4 << 30
WATCH_EVERY = 0.05  # seconds between two looks at the process's memory while a read runs


def _resident_bytes() -> int:
    """The process's resident memory (0 where /proc does not say it)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class _Runaways:
    """Ends the process when a read of a store on disk takes more than RUNAWAY_BYTES of memory.

    A table that fails its checksum makes a read raise, and the command marks the index damaged
    (KnowledgeBase). But a query that sorts (ORDER BY) or groups what it reads collects the store's
    error again and again without end: 1 GB, then 2, 4, 8 ... until the machine has none left (a
    served process grew to 24 GB before the kernel killed it). The store works without the
    interpreter's lock, so a thread of this class watches while reads run; the read itself cannot be
    stopped, so the process marks the store damaged, says so in one line and exits 3. The next
    command makes the index again from the journal."""

    def __init__(self):
        self._turn = threading.Lock()
        # each read running -> [its store, the memory the watcher first saw it with]: read by the
        # watcher, not by the read (a read a record of an import: 6 us each, 3 s of 100k records)
        self._reads: dict[int, list] = {}
        self._count = itertools.count()
        self._watcher: threading.Thread | None = None

    @contextmanager
    def watched(self, path: Path):
        key = next(self._count)
        with self._turn:
            self._reads[key] = [path, None]
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="kgrdf-runaway-reads", daemon=True)
                self._watcher.start()
        try:
            yield
        finally:
            with self._turn:
                self._reads.pop(key, None)

    def _watch(self) -> None:
        while True:
            time.sleep(WATCH_EVERY)
            with self._turn:
                reads = list(self._reads.values())
            if not reads:
                continue
            now = _resident_bytes()
            for read in reads:
                if read[1] is None:
                    read[1] = now  # (a read a look old at most: what it took before is not counted)
                elif now - read[1] > RUNAWAY_BYTES:
                    self._stop(read[0])

    @staticmethod
    def _stop(path: Path) -> None:
        why = f"a read of it took more than {RUNAWAY_BYTES >> 20:,} MB of memory (a table read without end)"
        mark_damaged(path, Exception(why))
        print(
            f"kg: {why}: the index at {path} is likely damaged, and the read was stopped; the next "
            "command makes the index again from the journal",
            file=sys.stderr,
            flush=True,
        )
        os._exit(3)  # (exit code of Damaged: the running read cannot be stopped otherwise)


_runaways = _Runaways()


def table_files(path) -> int:
    """How many table files a store on disk at ``path`` is in (see OxigraphBackend.table_files)."""
    return sum(1 for entry in os.scandir(path) if entry.name.endswith(".sst"))


class OxigraphBackend(Backend):
    name = "oxigraph"
    dataset_scoping = True

    def __init__(self, path: Path | None, read_only: bool = False):
        self.path = path
        self.read_only = read_only
        self.persistent = path is not None
        self._changes = 0  # writes through this backend: a kept query child forked before one is stale
        self._spare = None  # (what the store was when it forked, bounded.Spare)
        self._spare_turn = threading.Lock()
        self.name = "oxigraph" if path is not None else "memory"
        if path is not None and os.path.lexists(path / DAMAGED):  # (made again where it is opened to write)
            raise Damaged(
                f"cannot open the index at {path}: a table of it failed its checksum when read{_marked(path)}",
                hint="remove the index/ folder; the next command rebuilds it from the journal",
            )
        try:
            if path is None:
                self.store = ox.Store()
            elif read_only:
                self.store = ox.Store.read_only(str(path))
            else:
                self.store = ox.Store(str(path))
        except OSError as exc:
            if re.search(NO_ROOM, str(exc).lower()):  # whole, on a disk with no room to open it
                raise Damaged(
                    f"cannot open the index at {path}: {one_line(exc)}",
                    hint="the disk has no room (or a file size limit is set): free some, and the next command "
                    "goes on; the index is whole as it is",
                ) from None
            raise Damaged(
                f"cannot open the index at {path}: {exc}",
                hint="remove the index/ folder; the next command rebuilds it from the journal",
            ) from None

    # --- reads ---------------------------------------------------------------------------------

    def _run(self, query: Query, bindings: dict | None, graphs: list | None = None):
        text = bind(query.text, bindings)
        if graphs is None:
            return self.store.query(text)
        return self.store.query(text, default_graph=[vocab.NO_GRAPH], named_graphs=graphs)

    def select(
        self, query: Query, bindings: dict | None = None, graphs: list | None = None, limit: int | None = None
    ) -> list[dict]:
        return list(itertools.islice(self.select_iter(query, bindings, graphs), limit))

    def select_iter(self, query: Query, bindings: dict | None = None, graphs: list | None = None) -> Iterator[dict]:
        if self.path is not None:
            return self._watched(query, bindings, graphs)
        return self._rows(self._run(query, bindings, graphs))

    @staticmethod
    def _rows(solutions) -> Iterator[dict]:
        names = [v.value for v in solutions.variables]
        # a row zipped with the names costs half what reading each by name does
        return (dict(zip(names, row, strict=True)) for row in solutions)

    def _watched(self, query: Query, bindings: dict | None, graphs: list | None) -> Iterator[dict]:
        with _runaways.watched(self.path):  # (a query that sorts reads all it sorts before it answers)
            yield from self._rows(self._run(query, bindings, graphs))

    def ask(self, query: Query, bindings: dict | None = None, graphs: list | None = None) -> bool:
        if self.path is None:
            return bool(self._run(query, bindings, graphs))
        with _runaways.watched(self.path):
            return bool(self._run(query, bindings, graphs))

    def sparql(
        self,
        text: str,
        graphs: list | None = None,
        timeout: float | None = None,
        memory: int | None = None,
        forked=None,
    ):
        from kgrdf.store import bounded

        # The default graph is the schema's (the index's own bookkeeping, in the store's default
        # graph, is never seen); every fact and the entities are named graphs. Without ``graphs``,
        # every named graph: a list of 20k graphs costs Oxigraph 0.2 s a query.
        default, named = user_dataset(text, graphs)
        options = {"default_graph": default} if named is None else {"default_graph": default, "named_graphs": named}
        if timeout is None:
            try:
                if self.path is None:
                    return bounded.materialize(self.store.query(text, **options))
                with _runaways.watched(self.path):
                    return bounded.materialize(self.store.query(text, **options))
            except SyntaxError as exc:
                raise BadInput(f"the query does not parse: {exc}") from None
        for _ in range(2):  # a kept child found gone is forked again once
            spare = self._kept_spare()
            answer = spare.ask(text, timeout, memory, options, sent=forked) if spare is not None else None
            if answer is not None:
                return answer
            if spare is None or spare.alive:
                break  # none is kept here, or it is answering another thread: a child for this query alone
        return bounded.query(self.store, text, timeout, memory, forked=forked, **options)

    def _kept_spare(self):
        """The query child kept for this store as it is now (kgrdf.store.bounded.Spare), forked when
        there is none or the store has changed since; None where none is kept: an in-memory store
        (changed without this backend knowing) or a store opened for writing whose position does not
        say when it changed. A store open for writing has RocksDB's background work (a compaction)
        running, whose locks a child forked from it may hold for ever: the child is forked from the
        same folder opened read-only for the purpose, which runs none."""
        from kgrdf.store import bounded

        if not self.persistent or not hasattr(os, "fork") or not os.path.isdir("/proc/self/fd"):
            return None
        state = "read only" if self.read_only else (self._changes, self.position())
        if state != "read only" and state[1] is None:
            return None
        with self._spare_turn:
            kept = self._spare
            if kept is not None and kept[0] == state and kept[1].alive:
                return kept[1]
            self._stop_spare()
            view = self.store if self.read_only else self._read_only_view()
            if view is None:
                return None
            self._spare = (state, bounded.Spare(view, self.path))
            del view  # the parent's copy: the child has its own
            return self._spare[1]

    def _read_only_view(self):
        """This store's folder opened read-only, or None. An open reads the list of files and then
        opens each of them (holding them from then on), and a compaction running meanwhile may
        delete one of them: the open is tried again on the new list."""
        import time

        for attempt in range(10):
            try:
                return ox.Store.read_only(str(self.path))
            except (OSError, RuntimeError):
                time.sleep(0.01 * (attempt + 1))
        return None

    def _stop_spare(self) -> None:
        kept, self._spare = self._spare, None
        if kept is not None:
            kept[1].retire()

    def graphs(self) -> list:
        return list(self.store.named_graphs())

    def quads(self):
        for quad in self.store.quads_for_pattern(None, None, None, None):
            if not isinstance(quad.graph_name, ox.DefaultGraph):
                yield quad

    def quads_in(self, graph, subject=None):
        return self.store.quads_for_pattern(subject, None, None, graph)

    def position(self) -> tuple[int, str] | None:
        seq = digest = None
        for quad in self.store.quads_for_pattern(vocab.INDEX_NODE, None, None, vocab.DEFAULT_GRAPH):
            if quad.predicate == _KG_SEQ:
                seq = int(quad.object.value)
            elif quad.predicate == _KG_DIGEST:
                digest = quad.object.value
        return None if seq is None else (seq, digest or "")

    def schema_quads(self) -> list:
        """The effective schema the index holds (the ontology and an accepted site extension)."""
        return list(self.store.quads_for_pattern(None, None, None, ox.NamedNode(vocab.SCHEMA_GRAPH)))

    def schema_digest(self) -> str | None:
        for quad in self.store.quads_for_pattern(vocab.INDEX_NODE, _KG_SCHEMA, None, vocab.DEFAULT_GRAPH):
            return quad.object.value
        return None

    # --- writes --------------------------------------------------------------------------------

    @staticmethod
    def _position_update(after: Position) -> str:
        node = vocab.INDEX_NODE.value
        return (
            f"DELETE WHERE {{ <{node}> <{_KG_SEQ.value}> ?s }} ;\n"
            f"DELETE WHERE {{ <{node}> <{_KG_DIGEST.value}> ?d }} ;\n"
            f"INSERT DATA {{ <{vocab.INDEX_NODE.value}> <{_KG_SEQ.value}> {after.seq} ; "
            f'<{_KG_DIGEST.value}> "{after.digest}" }}'
        )

    def apply(self, tx: Transaction, after: Position) -> None:
        if len(tx.adds) + len(tx.deletes) > BULK_THRESHOLD:
            self.load(tx)
            self.store.update(self._position_update(after))
            return
        self._changes += 1
        parts = []
        if tx.deletes:
            parts.append(_data_block("DELETE DATA", tx.deletes))
        if tx.adds:
            parts.append(_data_block("INSERT DATA", tx.adds))
        parts.append(self._position_update(after))
        self.store.update(" ;\n".join(parts))

    def load(self, tx: Transaction, compact: bool | None = None) -> None:
        """Write a large transaction's changes, in bulk, and leave the position as it was: apply()
        records it after them; a large write loading while the journal is written marks the index
        as loading first (see KnowledgeBase._commit_beside_index). Followed by a compaction when
        ``compact``, by default when the load is large beside the store (compacts_after).

        A bounded number of lines to a load: the text of 100k facts' quads is about a GB as one
        piece. A cut between loads leaves the index behind the journal's position, and the next
        command applies the transaction again. The lines were written from parsed quads, as a
        rebuild's are: not checked again."""
        self._changes += 1
        compact = self.compacts_after(tx) if compact is None else compact
        if tx.deletes:
            self.store.update(_data_block("DELETE DATA", tx.deletes))
        self._bulk_load(tx.adds)
        if compact:
            self.compact()

    def compacts_after(self, tx: Transaction) -> bool:
        """Whether a bulk load of ``tx`` is large beside what the store holds, and so is to be
        followed by a compaction: its rows' text (about ROW_BYTES a row), times COMPACT_AFTER, at
        least the bytes of the store's files. Told before the load, so that a write can plan the
        work it does beside each."""
        return self.persistent and len(tx.adds) * ROW_BYTES * COMPACT_AFTER >= self._bytes_on_disk()

    def _bulk_load(self, lines: Iterable[str]) -> None:
        """Load N-Quads ``lines`` in bulk, LOAD_LINES at a time (the text of a million facts' quads
        is GBs), on LOAD_THREADS threads that each take the next lines as they finish theirs; a
        failure in either stops both. The lines are the journal's, each written from a parsed quad:
        the store does not check their IRIs again (that cost a sixth of a load)."""
        from concurrent.futures import ThreadPoolExecutor

        rest = nquads.batches(lines, LOAD_LINES)
        taking = threading.Lock()  # the lines come from one iterator (a journal read as it goes)
        failed = threading.Event()

        def loader() -> None:
            try:
                while not failed.is_set():
                    with taking:
                        batch = next(rest, None)  # (a rebuild's journal, read as it goes, may raise Damaged)
                    if batch is None:
                        break
                    data = (" .\n".join(batch) + " .\n").encode("utf-8")
                    del batch
                    self.store.bulk_load(input=data, format=ox.RdfFormat.N_QUADS, lenient=True)
            except BaseException:
                failed.set()  # the other loader stops at its next lines
                raise

        threads = LOAD_THREADS if self.persistent else 1  # a store in memory loads under one lock
        if threads == 1:
            loader()
            return
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for running in [pool.submit(loader) for _ in range(threads)]:
                running.result()

    def _bytes_on_disk(self) -> int:
        """The size of the store's files (0 in memory); a file the store's own merging removes while
        they are counted counts for nothing."""
        if not self.persistent:
            return 0
        total = 0
        for entry in os.scandir(self.path):
            try:
                total += entry.stat().st_size if entry.is_file() else 0
            except FileNotFoundError:
                continue
        return total

    def table_files(self) -> int:
        """How many table files the store is in (0 in memory): each bulk load adds its own, each
        spanning every key, and a scan of every quad reads through all of them (see compact)."""
        return table_files(self.path) if self.persistent else 0

    def compact(self) -> None:
        """Compact the store after a bulk load as large as what it held (a first import, a rebuild).

        Each bulk load adds files of its own, each spanning every key, which the store merges in
        the background of a write, but a command ends first: a 100k import left a hundred of them,
        and a scan of every quad took 36-44 s instead of 8 s (kg validate, kg export) until a long
        write merged them (a store opened to read cannot merge them; one opened to write does so as
        it reads). Compacting takes about 4 s there, on one core; after a load small beside the
        store, the whole store would be rewritten for it, and is not."""
        if self.persistent:
            self.store.optimize()

    def set_position(self, position: Position) -> None:
        self._changes += 1
        self.store.update(self._position_update(position))

    def replace_all(self, nquads: Iterable[str], position: Position) -> None:
        self._changes += 1
        self.store.clear()
        self._bulk_load(nquads)
        self.compact()
        self.store.update(self._position_update(position))
        if self.persistent:
            self.store.flush()

    def close(self) -> None:
        self._stop_spare()
        if self.persistent and not self.read_only:
            try:
                self.store.flush()
            except (OSError, RuntimeError):  # (RuntimeError: a table failing its checksum, told by what met it)
                pass
            self._prune_logs()
        self.store = None

    def _prune_logs(self) -> None:
        """Delete the store's own logs of its older opens but the last KEPT_LOGS. Each open to
        write sets the log aside and starts another (of 130-230 KB: the store's options), and the
        store keeps a thousand: over a hundred MB beside a small index. Nothing reads them."""
        try:
            aside = sorted(entry.name for entry in os.scandir(self.path) if entry.name.startswith("LOG.old."))
        except OSError:
            return
        for name in aside[:-KEPT_LOGS] if KEPT_LOGS else aside:
            try:
                os.unlink(self.path / name)
            except OSError:
                continue  # (another write's pruning took it first)


def _data_block(keyword: str, lines: list[str]) -> str:
    """``INSERT DATA { GRAPH <g> { s p o . } ... }`` from N-Quads lines (each names its graph last)."""
    by_graph: dict[str, list[str]] = {}
    for line in lines:
        triple, _, graph = line.rpartition(" ")
        by_graph.setdefault(graph, []).append(triple)
    body = "\n".join(f"GRAPH {g} {{ {' . '.join(ts)} }}" for g, ts in by_graph.items())
    return f"{keyword} {{\n{body}\n}}"
