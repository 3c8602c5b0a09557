"""The knowledge base's lock: readers share it, a writer holds it alone (§5).

A writer waits for the readers and writers before it, then goes; it never interleaves with them.
Oxigraph's own lock lets only one process open the store for writing, so ours is taken first.
"""

import errno
import fcntl
import os
import signal
import threading
import time
from collections import deque
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
    A record lock is the process's, shared by its threads, so within one process (kg serve's
    requests) the threads pass an in-process turnstile first, one at a time and in the order they
    came (:class:`_Turnstile`); a thread that holds the lock already takes it shared again without
    queueing, as it would otherwise wait for a writer that waits for it.
    """
    from kgrdf import files

    timeout = wait_seconds()
    queued, _HOLDING.queued = getattr(_HOLDING, "queued", None), None  # (Turn: the wait began there)
    fd = _opened(path, exclusive)
    umask = files.private()
    umask.__enter__()
    counted = None
    try:
        deadline = time.monotonic() + timeout if queued is None else queued
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino)
        mine = _mine()
        if not exclusive and mine.get(key):
            _take(lambda flags: fcntl.flock(fd, mode | flags), deadline, path)
        else:
            with _turnstile(key).passing(deadline, path):
                _take(lambda flags: fcntl.lockf(fd, mode | flags, 1, 1), deadline, path)
                try:
                    _take(lambda flags: _through_turnstile(fd, mode, flags), deadline, path)
                finally:
                    fcntl.lockf(fd, fcntl.LOCK_UN, 1, 1)
        mine[key] = mine.get(key, 0) + 1
        counted = key
        if exclusive:
            files.tighten(path.parent)  # every write, a forget included, starts here
        with _CLAIMS.get(path.parent, claim_index)(path.parent, deadline):
            yield
    finally:
        if counted is not None:
            mine[counted] -= 1
        umask.__exit__(None, None, None)
        os.close(fd)


# what opening a file to write in a folder this process may only read gives: refused, or a read-only mount
READ_ONLY_ERRNOS = (errno.EACCES, errno.EPERM, errno.EROFS)


class ReadOnly(Damaged):
    """The lock file cannot be opened as it must be: the folder is read-only to this process."""


def _opened(path: Path, exclusive: bool) -> int:
    """The lock file, open to be locked: read and write, made if missing; for a reader in a folder
    it may not write (a read-only copy, a read-only mount), read-only, as a shared lock needs no
    more. Damaged, saying why, when it cannot be."""
    import stat

    from kgrdf import files

    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o600)
    except OSError as exc:
        failed = exc
    try:
        plain = stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        plain = False
    if failed.errno in READ_ONLY_ERRNOS:  # (a link or a folder there fails otherwise)
        if not exclusive and plain:
            try:
                return os.open(path, os.O_RDONLY | flags)
            except OSError as exc:
                failed = exc
        raise ReadOnly(
            f"the knowledge base at {path.parent} cannot be {'written' if exclusive else 'read'} here: "
            f"its lock file {path.name}: {failed.strerror}",
            hint=files.READ_ONLY_WAY
            if exclusive
            else "reads need its lock file: a read-only copy is read once it holds one (an empty file named lock)",
        ) from None
    raise Damaged(
        f"the lock file {path} cannot be opened: {failed.strerror}",
        hint="it must be a plain file kgrdf can write (remove a link or folder standing there)",
    ) from None


class _Turnstile:
    """This process's threads on their way through one lock file's turnstile: one at a time, first
    come first served. The record lock on byte 1 cannot order them: it is the process's, so a
    reader thread passes it while a writer thread of the same process holds it (and unlocks it for
    the whole process on its way out)."""

    def __init__(self):
        self._cv = threading.Condition(threading.Lock())
        self._queue: deque = deque()  # the thread passing first, then those waiting in order

    @contextmanager
    def passing(self, deadline: float, path: Path):
        """Pass, waiting for the threads that came before until ``deadline``. Raises Damaged then."""
        me = object()
        with self._cv:
            self._queue.append(me)
            try:
                while self._queue[0] is not me:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise _locked(path)
                    self._cv.wait(left)
            except BaseException:
                self._queue.remove(me)
                self._cv.notify_all()
                raise
        try:
            yield
        finally:
            with self._cv:
                self._queue.popleft()
                self._cv.notify_all()


class Turn:
    """A process's own queue of writers for the lock file ``path`` (kg serve's writes and commits):
    one at a time, first come first served. A writer's KGRDF_LOCK_TIMEOUT counts from when it joins
    the queue, and the lock it takes next (:func:`held`) waits only what is left of it: a write
    queued behind others is refused as locked once that time is up, not after each writer before it
    has waited its own."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._turnstile = _Turnstile()

    @contextmanager
    def taken(self):
        deadline = time.monotonic() + wait_seconds()
        with self._turnstile.passing(deadline, self.path):
            _HOLDING.queued = deadline
            try:
                yield
            finally:
                _HOLDING.queued = None


_TURNSTILES: dict = {}  # (device, inode) of a lock file -> its _Turnstile
_TURNSTILES_MADE = threading.Lock()
_HOLDING = threading.local()  # .files: (device, inode) -> how many times this thread holds it; .queued: Turn's deadline


def _turnstile(key: tuple) -> _Turnstile:
    with _TURNSTILES_MADE:
        return _TURNSTILES.setdefault(key, _Turnstile())


def _mine() -> dict:
    if not hasattr(_HOLDING, "files"):
        _HOLDING.files = {}
    return _HOLDING.files


def _through_turnstile(fd: int, mode: int, flags: int) -> None:
    """The lock itself (the flock) for one holding the turnstile, which takes byte 1 again first in
    case it slipped away meanwhile: closing any descriptor of the file lets go of the process's
    record locks on it, as a thread of this process does when its read ends."""
    try:
        fcntl.lockf(fd, mode | fcntl.LOCK_NB, 1, 1)
    except OSError:
        pass  # another process is passing the turnstile this moment: taken again at the next try
    fcntl.flock(fd, mode | flags)


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
    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        try:
            fd = os.open(folder / HELD, os.O_RDWR | os.O_CREAT | flags, 0o600)
        except OSError as exc:  # a folder this process may read alone: a shared flock needs no more
            if exc.errno not in READ_ONLY_ERRNOS:
                raise
            fd = os.open(folder / HELD, os.O_RDONLY | flags)
    except (FileNotFoundError, NotADirectoryError):
        yield  # no knowledge base there (yet), or none that ever held its index: nothing holds it
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
