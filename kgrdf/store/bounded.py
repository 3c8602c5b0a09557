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
reader dies (PR_SET_PDEATHSIG), so a query never outlives the command that ran it. A crash of the
engine (a stack overflow on a query too deep or too long) ends the child, not the command.
"""

import os
import select
import signal
import time

import pyoxigraph as ox

from kgrdf.errors import BadInput, Refused

MAX_ANSWER_BYTES = 256 * 1024 * 1024
_RESULTS, _TRIPLES, _SYNTAX, _FAILED = b"R", b"T", b"E", b"F"


def query(store, text: str, timeout: float, **options):
    """Run ``store.query(text, **options)`` for at most ``timeout`` seconds; return its answer read
    whole (QuerySolutions, QueryBoolean, or a list of triples).

    Raises Refused when the limit passes or the answer is larger than MAX_ANSWER_BYTES, and
    BadInput when the query does not parse or the engine fails on it.
    """
    if not hasattr(os, "fork"):
        return materialize(store.query(text, **options))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(store, text, timeout, options, write_end)
    os.close(write_end)
    try:
        data = _collect(read_end, pid, timeout)
    finally:
        os.close(read_end)
    return _decode(data)


def _child(store, text: str, timeout: float, options: dict, out: int) -> None:
    code = 0
    try:
        _confine(timeout)
        try:
            answer = store.query(text, **options)
            if isinstance(answer, (ox.QueryBoolean, ox.QuerySolutions)):
                payload = _RESULTS + answer.serialize(format=ox.QueryResultsFormat.JSON)
            else:
                payload = _TRIPLES + ox.serialize(answer, format=ox.RdfFormat.N_TRIPLES)
        except SyntaxError as exc:
            payload = _SYNTAX + str(exc).encode("utf-8", errors="replace")
        except Exception as exc:  # the engine's error, reported by the parent as one line
            payload = _FAILED + f"{type(exc).__name__}: {exc}".encode("utf-8", errors="replace")
        view = memoryview(payload)
        while view:
            view = view[os.write(out, view):]
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _confine(timeout: float) -> None:
    """Make the child end on its own: a CPU limit past the time limit, death with its parent, no
    words on the terminal (the parent speaks), the default response to Ctrl-C."""
    import faulthandler
    import resource

    faulthandler.disable()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    seconds = int(timeout) + 2
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    except (ValueError, OSError):
        pass
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _collect(fd: int, pid: int, timeout: float) -> bytes:
    """Read the child's answer until it closes the pipe; kill it when the limit passes or the
    answer grows too large."""
    deadline = time.monotonic() + timeout
    chunks, size = [], 0
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Refused(f"the query ran past its time limit of {timeout:g} s and was stopped",
                              hint="narrow it with a LIMIT or fewer joins, or give it longer with --timeout")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise Refused(f"the answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MB and was stopped",
                              hint="ask for fewer rows (a LIMIT) or fewer columns")
    except BaseException:
        _kill(pid)
        raise
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if not data or os.WIFSIGNALED(status):
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
            raise Refused(f"the query ran past its time limit of {timeout:g} s and was stopped",
                          hint="narrow it with a LIMIT or fewer joins, or give it longer with --timeout")
        why = (f"it stopped on {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
               else "it gave no answer")
        raise BadInput(f"the query engine failed on this query ({why}); a query nested or chained this "
                       f"deep, or this long, cannot be run")
    return data


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def _decode(data: bytes):
    tag, body = data[:1], data[1:]
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
