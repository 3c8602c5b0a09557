"""The knowledge base's lock: readers share it, a writer holds it alone (§5).

A writer waits for the readers and writers before it, then goes; it never interleaves with them.
Oxigraph's own lock lets only one process open the store for writing, so ours is taken first.
"""

import fcntl
import os
import signal
import time
from contextlib import contextmanager
from pathlib import Path

from kgrdf.errors import BadInput, Damaged

DEFAULT_WAIT = 120.0
MOST_WAIT = 365 * 86_400.0  # a year: the alarm that ends a wait cannot be set beyond the system's time


def wait_seconds() -> float:
    """How long a command waits for the lock: KGRDF_LOCK_TIMEOUT seconds, else 120. Raises BadInput
    for a value that is not a positive number."""
    text = os.environ.get("KGRDF_LOCK_TIMEOUT", "").strip()
    if not text:
        return DEFAULT_WAIT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= MOST_WAIT:
        raise BadInput(f"KGRDF_LOCK_TIMEOUT={text!r} must be a positive number of seconds, at most {MOST_WAIT:.0f}")
    return value


@contextmanager
def held(path: Path, exclusive: bool):
    """Hold the lock file ``path``, shared or exclusive, waiting up to KGRDF_LOCK_TIMEOUT seconds.
    While it is held, what kgrdf makes in the folder is its owner's alone (a umask of 077), and a
    writer first brings the private parts of the folder (the lock's own) down to owner-only, or
    refuses a link where kgrdf writes (see :func:`kgrdf.files.tighten`).

    A writer first takes a turnstile (a record lock on byte 1 of the same file) and keeps it while it
    waits for the readers before it; a reader passes the turnstile on its way in. So readers arriving
    after a waiting writer queue behind it, and a stream of overlapping reads never keeps the lock
    shared for ever: a write waits for the reads already running, each bounded by its time limit.
    """
    from kgrdf import files

    timeout = wait_seconds()
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        raise Damaged(
            f"the lock file {path} cannot be opened: {exc.strerror}",
            hint="it must be a plain file kgrdf can write (remove a link or folder standing there)",
        ) from None
    umask = files.private()
    umask.__enter__()
    try:
        deadline = time.monotonic() + timeout
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        _take(lambda flags: fcntl.lockf(fd, mode | flags, 1, 1), deadline, path)
        try:
            _take(lambda flags: fcntl.flock(fd, mode | flags), deadline, path)
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, 1)
        if exclusive:
            files.tighten(path.parent)  # every write, a forget included, starts here
        with _CLAIMS.get(path.parent, claim_index)(path.parent, deadline):
            yield
    finally:
        umask.__exit__(None, None, None)
        os.close(fd)


# --- the index, which a long-lived process may hold open ------------------------------------------

HELD = "index.held"  # beside index/: its holder's exclusive flock, and its pid
WAKE = signal.SIGUSR1  # what a process that needs the index sends its holder
_CLAIMS: dict = {}  # knowledge base folder -> this process's own claim (kgrdf.resident)


def claim_by(folder: Path, claim) -> None:
    """From now on, this process claims the index of the knowledge base in ``folder`` with
    ``claim(folder, deadline)`` (a context manager), instead of :func:`claim_index`."""
    _CLAIMS[Path(folder)] = claim


@contextmanager
def claim_index(folder: Path, deadline: float):
    """Hold the index's claim while the knowledge base's lock is held: a shared flock on
    ``index.held``. A process that keeps the index open between commands (kg serve, see
    kgrdf.resident) holds it exclusively; asked with a signal, it lets go as soon as none of its own
    requests uses the index, and waits a moment before it holds it again. So no two processes ever
    have the index open when one of them writes, as Oxigraph requires, and a command never meets an
    index another process keeps changing."""
    import errno

    try:
        fd = os.open(
            folder / HELD, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600
        )
    except (FileNotFoundError, NotADirectoryError):
        yield  # no knowledge base there (yet): nothing holds its index
        return
    try:
        asked, delay = 0.0, 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
            now = time.monotonic()
            if now > deadline:
                raise _locked(folder / HELD)
            if now - asked > 0.5:
                _wake_holder(fd)
                asked = now
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        yield
    finally:
        os.close(fd)


def _wake_holder(fd: int) -> None:
    """Ask the process whose pid ``index.held`` holds to let the index go."""
    try:
        pid = int(os.pread(fd, 32, 0).decode("ascii").strip() or 0)
    except (ValueError, OSError):
        return
    if pid > 0 and pid != os.getpid():
        try:
            os.kill(pid, WAKE)
        except (ProcessLookupError, PermissionError):
            pass  # gone: its flock went with it


def _take(lock, deadline: float, path: Path) -> None:
    """Call ``lock(flags)`` without blocking, else wait in the kernel's queue (a blocking call), so
    that the holder cannot take the lock back before the waiters get a turn; polling would starve
    them. An alarm ends the wait at ``deadline``."""
    import errno
    import signal
    import threading

    try:
        return lock(fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
    if threading.current_thread() is not threading.main_thread():
        delay = 0.005
        while True:  # no alarm outside the main thread: poll
            try:
                return lock(fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() > deadline:
                    raise _locked(path) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    def expired(signum, frame):
        raise TimeoutError

    left = deadline - time.monotonic()
    if left <= 0:
        raise _locked(path)
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, left)
    try:
        lock(0)
    except TimeoutError:
        raise _locked(path) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _locked(path: Path) -> Damaged:
    return Damaged(
        f"the knowledge base is locked by another kg command ({path})",
        hint="wait for it to finish, or raise KGRDF_LOCK_TIMEOUT",
    )
