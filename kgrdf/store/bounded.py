"""A user's query run to a time limit: in a forked child process, killed when the limit passes.

pyoxigraph has no way to stop a query once started (no timeout, no cancel): it evaluates in Rust
with the GIL released, so a thread cannot interrupt it, and an alarm's Python handler only runs once
the call returns. A cartesian product under ORDER BY is computed inside ``query()`` itself and can
run for minutes while its memory grows. So the query runs in a child process forked from the reader
(it reads through the reader's open store and under the reader's shared lock), sends its answer
serialized through a pipe, and is killed with SIGKILL at the limit: its work and its memory end
with it, and the reader goes on to release the lock. A fork and the round trip of a small answer
cost about 3 ms.

The child also dies by itself: its CPU time is limited (RLIMIT_CPU), and it is killed when the
reader dies (PR_SET_PDEATHSIG), so a query never outlives the command that ran it. Its memory is
bounded too (RLIMIT_AS: what the reader had when it forked, and ``memory`` more): a cartesian
product under ORDER BY grows by hundreds of MB a second, and would exhaust the machine well before
its time limit. A crash of the engine (a stack overflow on a query too deep or too long, an
allocation past the bound) ends the child, not the command.

A long-lived reader (kg serve) keeps such a child between queries (:class:`Spare`): forked once,
it answers query after query for as long as the store it was forked from has not changed, each
under its own limits. The fork, whose cost grows with the server's memory (10 ms at 100k facts),
is then paid once a write rather than once a query; a query past a limit still takes the child
with it, and the next one forks another.
"""

import os
import pickle
import select
import signal
import struct
import threading
import time
from contextvars import ContextVar

import pyoxigraph as ox

from kgrdf.errors import BadInput, Refused

MAX_ANSWER_BYTES = 256 * 1024 * 1024
# What says that whoever asked for the query running in this thread is gone (kg serve's client
# hung up): an Event, checked as the answer is awaited (ABANDON_CHECK), when the child is killed
# at once, as at its limit, and the read that holds writes back ends. None: no one can go.
ABANDONED: ContextVar[threading.Event | None] = ContextVar("abandoned", default=None)
ABANDON_CHECK = 0.25  # seconds


def _prctl():
    """libc's prctl, found once in the parent: loading ctypes in each child cost it 10 ms."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl() if hasattr(os, "fork") else None
_RESULTS, _TRIPLES, _SYNTAX, _FAILED, _MEMORY = b"R", b"T", b"E", b"F", b"M"


def query(store, text: str, timeout: float, memory: int | None = None, forked=None, **options):
    """Run ``store.query(text, **options)`` for at most ``timeout`` seconds and ``memory`` more
    bytes; return its answer read whole (QuerySolutions, QueryBoolean, or a list of triples).
    ``forked()``, if given, is called once the child has its own copy of the store (an in-memory
    store may change from then on).

    Raises Refused when a limit is reached or the answer is larger than MAX_ANSWER_BYTES, and
    BadInput when the query does not parse or the engine fails on it.
    """
    if not hasattr(os, "fork"):
        return materialize(store.query(text, **options))
    read_end, write_end = os.pipe()
    err_read, err_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        os.close(err_read)
        _child(store, text, timeout, memory, options, write_end, err_write)
    os.close(write_end)
    os.close(err_write)
    if forked is not None:
        forked()
    try:
        data = _collect(read_end, err_read, pid, timeout, memory)
    finally:
        os.close(read_end)
        os.close(err_read)
    return _decode(data, memory)


class Spare:
    """A child forked from ``store`` and kept: it answers one query after another, sent through a
    pipe, each under its own limits (the time limit is the parent's to keep: it kills the child).
    It is good only while the store it was forked from has not changed; its owner stops it then
    (:meth:`stop`), and it is stopped when dropped too. One query at a time: :meth:`ask` returns
    None when another thread is asking, or when the child is gone before the query was sent (its
    forking thread ended), and the caller forks for the query alone.

    The child keeps only the files of the store under ``home`` (the store's folder) and its own
    pipes: it would otherwise hold, for as long as it lives, what its parent held when it forked
    (the knowledge base's lock taken for the read that forked it, a server's sockets)."""

    _HEADER = struct.Struct("!Q")

    def __init__(self, store, home):
        import weakref

        ask_read, self._ask = os.pipe()
        self._answers, answer_write = os.pipe()
        self._err, err_write = os.pipe()
        self._turn = threading.Lock()
        self._retiring = False
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            code = 0
            try:
                _keep_only(home, {ask_read, answer_write, err_write})
                _confine(err_write)
                self._serve(store, ask_read, answer_write)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        for fd in (ask_read, answer_write, err_write):
            os.close(fd)
        self._reaped: list[int] = []  # the child's status, once waited for
        self._stopped = weakref.finalize(self, _end, self.pid, (self._ask, self._answers, self._err), self._reaped)

    @classmethod
    def _serve(cls, store, asked: int, out: int) -> None:
        while True:
            header = os.read(asked, cls._HEADER.size)
            if len(header) < cls._HEADER.size:
                return  # the parent is gone, or stopped this child
            (size,) = cls._HEADER.unpack(header)
            text, options, timeout, memory = pickle.loads(_read_exactly(asked, size))
            _limit(timeout, memory)
            payload = _answer(store, text, options)
            _write_all(out, cls._HEADER.pack(len(payload)) + payload)

    @property
    def alive(self) -> bool:
        return self._stopped.alive

    def stop(self) -> None:
        self._stopped()

    def retire(self) -> None:
        """Stop the child once the query it may be answering is answered (that answer is of the
        store as it was when asked)."""
        self._retiring = True
        if self._turn.acquire(blocking=False):
            try:
                self.stop()
            finally:
                self._turn.release()

    def ask(self, text: str, timeout: float, memory: int | None, options: dict, sent=None):
        """The answer (as :func:`query` returns it), or None when this child cannot take the query.
        ``sent()``, if given, is called once the query is sent (the child has its own copy of the
        store since it was forked), as :func:`query` calls its ``forked``."""
        if not self._turn.acquire(blocking=False):
            return None
        try:
            if not self.alive or self._reap(os.WNOHANG) is not None:
                self.stop()
                return None
            request = pickle.dumps((text, options, timeout, memory))
            try:
                _write_all(self._ask, self._HEADER.pack(len(request)) + request)
            except OSError:
                self.stop()
                return None
            if sent is not None:
                sent()
            deadline = time.monotonic() + timeout
            try:
                header = _read(self._answers, deadline, timeout, self._HEADER.size)
                data = b""
                if len(header) == self._HEADER.size:
                    data = _read(self._answers, deadline, timeout, self._HEADER.unpack(header)[0])
            except BaseException:
                self.stop()
                raise
            if not data:  # it died on this query: the reason is its way of ending
                status = self._reap(0)
                try:
                    return _decode(_checked(b"", status, self._err, timeout, memory), memory)
                finally:
                    self.stop()
            if data[:1] in (_MEMORY, _FAILED):
                self.stop()  # an engine that failed, or ran out of memory, is not trusted again
            return _decode(data, memory)
        finally:
            if self._retiring:
                self.stop()
            self._turn.release()

    def _reap(self, options: int) -> int | None:
        """The child's status if it has ended (waited for once: its pid is not ours after)."""
        pid, status = os.waitpid(self.pid, options)
        if pid:
            self._reaped.append(status)
            return status
        return None


def _end(pid: int, fds: tuple, reaped: list) -> None:
    """Stop a kept child, unless it was already waited for, and close its pipes."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    if not reaped:
        reaped.append(None)
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ChildProcessError, ProcessLookupError):
            pass


def _keep_only(home, fds: set[int]) -> None:
    """Close every file descriptor but 0-2, ``fds`` and the files under the folder ``home``."""
    inside = os.path.realpath(home) + os.sep
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2 or fd in fds:
            continue
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, closed since
        if not target.startswith(inside):
            try:
                os.close(fd)
            except OSError:
                pass


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _answer(store, text: str, options: dict) -> bytes:
    """The engine's answer to one query, serialized and tagged, or its failure tagged."""
    try:
        answer = store.query(text, **options)
        if isinstance(answer, (ox.QueryBoolean, ox.QuerySolutions)):
            return _RESULTS + answer.serialize(format=ox.QueryResultsFormat.JSON)
        return _TRIPLES + ox.serialize(answer, format=ox.RdfFormat.N_TRIPLES)
    except SyntaxError as exc:
        return _SYNTAX + str(exc).encode("utf-8", errors="replace")
    except MemoryError:
        return _MEMORY
    except Exception as exc:  # the engine's error, reported by the parent as one line
        return _FAILED + f"{type(exc).__name__}: {exc}".encode("utf-8", errors="replace")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _child(store, text: str, timeout: float, memory: int | None, options: dict, out: int, err: int) -> None:
    code = 0
    try:
        _confine(err)
        _limit(timeout, memory)
        _write_all(out, _answer(store, text, options))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _confine(err: int) -> None:
    """Make the child end on its own and keep quiet: death with its parent, the default response to
    Ctrl-C, and no words on the terminal (the parent speaks; what the engine says on stderr goes to
    the parent, which reads the cause of a crash)."""
    import faulthandler

    faulthandler.disable()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(err, 2)
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _limit(timeout: float, memory: int | None) -> None:
    """Bound the query about to run: a CPU limit past its time limit (counted from the CPU time the
    child has used so far) and its memory (the address space it holds now, and ``memory`` more).
    Only the soft limits move, so that a kept child can set them again for its next query."""
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    _soft_limit(resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime + timeout) + 2)
    if memory is not None:
        _soft_limit(resource.RLIMIT_AS, _address_space() + memory)


def _soft_limit(kind: int, value: int) -> None:
    """Set the soft limit ``kind`` to ``value`` (at most the hard limit, which stays as it is)."""
    import resource

    hard = resource.getrlimit(kind)[1]
    try:
        resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))
    except (ValueError, OSError, OverflowError):
        pass  # (no limit is set: the query runs unbounded, as the setting asked)


def _address_space() -> int:
    """The bytes of address space this process holds (VmSize), 0 where /proc does not say."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


class PastLimit(Refused):
    """A query that ran past its time limit and was stopped. Its hint is the command line's: a face
    that has no --timeout says its own."""


def _past_limit(timeout: float) -> Refused:
    return PastLimit(
        f"the query ran past its time limit of {timeout:g} s and was stopped",
        hint="narrow it with a LIMIT or fewer joins, or give it longer with --timeout",
    )


def _read(fd: int, deadline: float, timeout: float, wanted: int | None = None) -> bytes:
    """Bytes from the child: ``wanted`` of them, or (None) all until it closes the pipe, fewer when
    it closes it first. Raises Refused when the limit passes or the answer grows too large."""
    chunks, size = [], 0
    gone = ABANDONED.get()
    while wanted is None or size < wanted:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _past_limit(timeout)
        if gone is not None and gone.is_set():
            raise Refused("the query was stopped: whoever asked for it is gone")
        ready, _, _ = select.select([fd], [], [], left if gone is None else min(left, ABANDON_CHECK))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20 if wanted is None else min(1 << 20, wanted - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise Refused(
                f"the answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MB and was stopped",
                hint="ask for fewer rows (a LIMIT) or fewer columns",
            )
    return b"".join(chunks)


def _collect(fd: int, err: int, pid: int, timeout: float, memory: int | None) -> bytes:
    """Read the child's answer until it closes the pipe; kill it when the limit passes or the
    answer grows too large."""
    try:
        data = _read(fd, time.monotonic() + timeout, timeout)
    except BaseException:
        _kill(pid)
        raise
    _, status = os.waitpid(pid, 0)
    return _checked(data, status, err, timeout, memory)


def _checked(data: bytes, status: int, err: int, timeout: float, memory: int | None) -> bytes:
    """The child's answer, or the one-line reason it gave none (``status``: how it ended)."""
    if not data or os.WIFSIGNALED(status):
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
            raise _past_limit(timeout)
        said = _said(err)
        if memory is not None and b"memory allocation" in said:
            raise _out_of_memory(memory)
        why = (
            f"it stopped on {signal.Signals(os.WTERMSIG(status)).name}"
            if os.WIFSIGNALED(status)
            else "it gave no answer"
        )
        raise BadInput(
            f"the query engine failed on this query ({why}); a query nested or chained this "
            f"deep, or this long, cannot be run"
        )
    return data


def _said(err: int) -> bytes:
    """What the dead child wrote on its stderr (a few lines at most)."""
    os.set_blocking(err, False)
    try:
        return os.read(err, 1 << 16)
    except OSError:
        return b""


def _out_of_memory(memory: int) -> Refused:
    return Refused(
        f"the query needed more than its {memory // (1024 * 1024):,} MB of memory and was stopped",
        hint="narrow it (an ORDER BY holds every row, whatever the LIMIT) or raise KGRDF_QUERY_MEMORY; when a "
        "narrow query is stopped so too, the index may be damaged (kg validate checks its files)",
    )


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def _decode(data: bytes, memory: int | None = None):
    tag, body = data[:1], data[1:]
    if tag == _MEMORY:
        raise _out_of_memory(memory or 0)
    if tag == _RESULTS:
        return ox.parse_query_results(body, format=ox.QueryResultsFormat.JSON)
    if tag == _TRIPLES:
        return list(ox.parse(body, format=ox.RdfFormat.N_TRIPLES))
    message = body.decode("utf-8", errors="replace").replace("\n", " ")
    if "Corruption: " in message:  # the index's own files, not the query: damage, told as such by the read
        raise RuntimeError(message[message.index("Corruption: ") :])
    if tag == _SYNTAX:
        raise BadInput(f"the query does not parse: {message}")
    raise BadInput(f"the query failed: {message}")


def materialize(answer):
    """Without fork: the answer read whole, as the child would send it."""
    if isinstance(answer, (ox.QueryBoolean, ox.QuerySolutions)):
        return answer
    return list(answer)
