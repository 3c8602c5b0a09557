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
"""

import os
import select
import signal
import time

import pyoxigraph as ox

from kgrdf.errors import BadInput, Refused

MAX_ANSWER_BYTES = 256 * 1024 * 1024


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


def _child(store, text: str, timeout: float, memory: int | None, options: dict, out: int, err: int) -> None:
    code = 0
    try:
        _confine(timeout, memory, err)
        try:
            answer = store.query(text, **options)
            if isinstance(answer, (ox.QueryBoolean, ox.QuerySolutions)):
                payload = _RESULTS + answer.serialize(format=ox.QueryResultsFormat.JSON)
            else:
                payload = _TRIPLES + ox.serialize(answer, format=ox.RdfFormat.N_TRIPLES)
        except SyntaxError as exc:
            payload = _SYNTAX + str(exc).encode("utf-8", errors="replace")
        except MemoryError:
            payload = _MEMORY
        except Exception as exc:  # the engine's error, reported by the parent as one line
            payload = _FAILED + f"{type(exc).__name__}: {exc}".encode("utf-8", errors="replace")
        view = memoryview(payload)
        while view:
            view = view[os.write(out, view) :]
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _confine(timeout: float, memory: int | None, err: int) -> None:
    """Make the child end on its own: a CPU limit past the time limit, a bound on its memory, death
    with its parent, the default response to Ctrl-C, and no words on the terminal (the parent
    speaks; what the engine says on stderr goes to the parent, which reads the cause of a crash)."""
    import faulthandler
    import resource

    faulthandler.disable()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(err, 2)
    seconds = int(timeout) + 2
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    except (ValueError, OSError):
        pass
    if memory is not None:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (_address_space() + memory,) * 2)
        except (ValueError, OSError):
            pass
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


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


def _collect(fd: int, err: int, pid: int, timeout: float, memory: int | None) -> bytes:
    """Read the child's answer until it closes the pipe; kill it when the limit passes or the
    answer grows too large."""
    deadline = time.monotonic() + timeout
    chunks, size = [], 0
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Refused(
                    f"the query ran past its time limit of {timeout:g} s and was stopped",
                    hint="narrow it with a LIMIT or fewer joins, or give it longer with --timeout",
                )
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise Refused(
                    f"the answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MB and was stopped",
                    hint="ask for fewer rows (a LIMIT) or fewer columns",
                )
    except BaseException:
        _kill(pid)
        raise
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if not data or os.WIFSIGNALED(status):
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
            raise Refused(
                f"the query ran past its time limit of {timeout:g} s and was stopped",
                hint="narrow it with a LIMIT or fewer joins, or give it longer with --timeout",
            )
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
        hint="narrow it (an ORDER BY holds every row, whatever the LIMIT) or raise KGRDF_QUERY_MEMORY",
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
    if tag == _SYNTAX:
        raise BadInput(f"the query does not parse: {message}")
    raise BadInput(f"the query failed: {message}")


def materialize(answer):
    """Without fork: the answer read whole, as the child would send it."""
    if isinstance(answer, (ox.QueryBoolean, ox.QuerySolutions)):
        return answer
    return list(answer)
