"""The index kept open by a long-lived process (kg serve), and the git commits it makes behind its
answers: its warm path (SPEC §11: a validated write through the server in 0.1 s at 100k facts).

A command opens the index and closes it again: at 10k facts, 40 ms to open it for writing and 55 ms
to close it (a flush). A server that did both for every request could never answer a write in 0.1 s,
so it keeps the index open while it may, and gives it up whenever another process needs it:

- it holds an exclusive flock on ``index.held`` (with its pid in it) while the index is open; every
  other process takes a shared one under the knowledge base's lock before it touches the index
  (:func:`kgrdf.lock.claim_index`), and when it cannot, sends the holder SIGUSR1 and waits;
- asked, the holder closes the index as soon as none of its own requests uses it, lets go, and
  does not hold it again for a moment, so that the asking process gets its turn; meanwhile its
  requests open the index as a command does.

So the two doors of SPEC §9b share one index and one lock, and no two processes ever have the index
open while one of them writes.

A write's git commit is owed from its journal append on (``uncommitted``, :mod:`kgrdf.vcs`): the
journal, fsynced before the answer, holds the change, and whatever opens the knowledge base next
commits what is owed. The server commits in a thread of its own, a moment after the answer, one
commit for the writes that came in meanwhile: a write is acknowledged without waiting for git.
"""

import fcntl
import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from kgrdf import lock

COOL_DOWN = 1.0  # seconds after letting the index go before holding it again
COMMIT_AFTER = 0.2  # seconds a commit waits for more writes to group


def _folder(backend) -> tuple | None:
    """Which folder a store on disk is, by device and inode (None: gone, or no folder)."""
    try:
        found = os.stat(backend.path)
    except (OSError, TypeError):
        return None
    return found.st_dev, found.st_ino


HELD_LOOK_EVERY = 1.0  # seconds between two looks that index.held is still this process's


class Resident:
    """This process's hold on the index of the knowledge base at ``path``, and its git commits."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._cv = threading.Condition()
        self._fd: int | None = None  # the exclusive flock on index.held, while held
        self.backend = None  # the index, open for writing, while held
        self._opened = None  # the folder it was opened from (_folder), to tell one removed behind it
        self._users = 0  # this process's requests using the held index
        self._wanted = False  # another process asked for the index
        self._rested_until = 0.0
        self._local = threading.local()
        self._memo: dict = {}  # what remember() computed, by key
        self._kept: dict = {}  # what keep() holds, by key, the most recently asked last
        self._owed: list[str] = []  # the commit messages of the writes not yet committed
        self.turn = lock.Turn(self.path / "lock")  # this process's writes and commits, one at a time, in order
        self._stopping = False
        self._committer = threading.Thread(target=self._commit_loop, daemon=True, name="kgrdf-commits")
        self._committer.start()
        lock.claim_by(self.path, self.claim)

    # --- the index ---------------------------------------------------------------------------------

    def listen(self) -> None:
        """Let go of the index when another process asks (SIGUSR1). Call from the main thread."""
        read, write = os.pipe()
        os.set_blocking(write, False)

        def asked(signum, frame):
            try:
                os.write(write, b"!")  # no lock is taken in a signal handler: a thread does the rest
            except BlockingIOError:
                pass

        def watch():
            while os.read(read, 64):
                self.let_go()

        def look():
            while True:
                time.sleep(HELD_LOOK_EVERY)
                with self._cv:
                    if self._fd is not None and not self._still_held():
                        self._let_go()

        threading.Thread(target=watch, daemon=True, name="kgrdf-index-asked").start()
        threading.Thread(target=look, daemon=True, name="kgrdf-index-held").start()
        signal.signal(lock.WAKE, asked)

    def _still_held(self) -> bool:
        """Whether index.held is still the file this process holds (under _cv). One removed (it looks
        like a stale pid file) leaves no way for a command to ask for the index: it would make a new
        one, hold it, and find the index open here."""
        try:
            there, held = os.stat(self.path / lock.HELD), os.fstat(self._fd)
        except OSError:
            return False
        return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)

    @contextmanager
    def claim(self, folder: Path, deadline: float):
        """kgrdf.lock's claim of the index for this process: the held index while it may be held,
        else the shared flock any command takes."""
        with self._cv:
            use = self._hold()
            if use:
                self._users += 1
        self._local.using = use
        try:
            if use:
                yield
            else:
                with lock.claim_index(folder, deadline):
                    yield
        finally:
            self._local.using = False
            if use:
                with self._cv:
                    self._users -= 1
                    if self._wanted and self._users == 0:
                        self._close()

    def _hold(self) -> bool:
        """Hold the index's flock (under _cv); False when another process has it, was given it a
        moment ago, or asked for it."""
        if self._fd is not None:
            if not self._wanted and not self._still_held():
                self._let_go()  # (and held again, from a new index.held, once the index is let go)
            return not self._wanted and self._fd is not None
        if time.monotonic() < self._rested_until:
            return False
        try:
            fd = os.open(self.path / lock.HELD, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            if exc.errno not in lock.READ_ONLY_ERRNOS:
                raise
            # a knowledge base this process may read alone: nothing is held, and each request opens
            # the index as a command does (none can write it, so none waits for the hold to end)
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd
        return True

    def index(self, opener):
        """The held index, opened by ``opener()`` when it is not open yet; None when this request
        does not use the held index (then it opens its own, as a command does)."""
        if not getattr(self._local, "using", False):
            return None
        with self._cv:
            if self.backend is not None and _folder(self.backend) != self._opened:
                # index/ removed (or made anew) behind it, as kgrdf's way out for a damaged index says:
                # the held store is of files no longer there. Let go of it (a request reading it
                # closes it when done) and open index/ as it is, which the caller brings up to date.
                self.backend = None
            if self.backend is None:
                self.backend = opener()
                self._opened = _folder(self.backend)
            return self.backend

    def owns(self, backend) -> bool:
        return backend is not None and backend is self.backend

    def drop(self, backend) -> None:
        """Forget a held index that turned out damaged or was replaced (the next request opens it again)."""
        with self._cv:
            if backend is self.backend:
                self.backend.close()
                self.backend = None

    def drop_held(self) -> None:
        """Close the held index, which is about to be replaced (a rebuild in this process: a forget
        cut short, finished by a request); the next use opens the new one."""
        with self._cv:
            if self.backend is not None:
                self.backend.close()
                self.backend = None

    def let_go(self) -> None:
        """Another process asked for the index: close it once no request of ours uses it."""
        with self._cv:
            self._let_go()

    def _let_go(self) -> None:
        if self._fd is None:
            return
        self._wanted = True
        if self._users == 0:
            self._close()

    def _close(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = None
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
        self._wanted = False
        self._rested_until = time.monotonic() + COOL_DOWN

    def remember(self, key, compute):
        """``compute()``, once for ``key`` (which names the index position it depends on); the
        answers of earlier positions are forgotten."""
        with self._cv:
            if key in self._memo:
                return self._memo[key]
        value = compute()
        with self._cv:
            if len(self._memo) > 64:
                self._memo.clear()
            self._memo[key] = value
        return value

    def keep(self, key, bound: int) -> "Kept":
        """The place this process keeps a value for ``key`` between requests (its owner brings it
        up to date); at most ``bound`` of them, the least recently asked forgotten."""
        with self._cv:
            kept = self._kept.pop(key, None) or Kept()
            self._kept[key] = kept
            while len(self._kept) > bound:
                del self._kept[next(iter(self._kept))]
            return kept

    # --- git commits behind the answers ------------------------------------------------------------

    def commit_later(self, message: str) -> None:
        """A write's commit, owed (``uncommitted`` says so until it is made)."""
        with self._cv:
            self._owed.append(message)
            self._cv.notify_all()

    def owes_commits(self) -> bool:
        with self._cv:
            return bool(self._owed)

    def _commit_loop(self) -> None:
        while True:
            with self._cv:
                while not self._owed and not self._stopping:
                    self._cv.wait()
                if self._stopping and not self._owed:
                    return
            time.sleep(COMMIT_AFTER)  # the writes that come in meanwhile go in the same commit
            try:
                self.commit_owed()
            except Exception as exc:  # the journal holds the writes: the next command commits them
                print(f"kg: git did not commit ({exc}); the next command commits the writes", flush=True)
                time.sleep(1.0)

    def commit_owed(self) -> None:
        """Commit the writes owed, in one commit, under the knowledge base's lock."""
        from kgrdf import vcs

        with self._cv:
            if not self._owed:
                return  # (nothing to commit: no lock taken, as none can be in a folder only read)
        with self.turn.taken(), lock.held(self.path / "lock", exclusive=True):
            with self._cv:
                owed, self._owed = self._owed, []
            if not owed:
                return
            message = owed[0] if len(owed) == 1 else f"kg serve: {len(owed)} writes ({owed[0]} ... {owed[-1]})"
            vcs.commit(self.path, message)
            (self.path / vcs.UNCOMMITTED).unlink(missing_ok=True)

    def stop(self) -> None:
        """Commit what is owed and close the index (the server is shutting down)."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        self._committer.join(timeout=60)
        self.commit_owed()
        with self._cv:
            self._close()


class Kept:
    """A value a resident process keeps between requests, changed by one request at a time: the one
    that holds it (acquire) until it releases it."""

    def __init__(self):
        self.value = None
        self._lock = threading.Lock()
        self._held = False

    def acquire(self) -> None:
        self._lock.acquire()
        self._held = True

    def release(self) -> None:
        """Let the next request have it; a second release by the same holder does nothing."""
        if self._held:
            self._held = False
            self._lock.release()
