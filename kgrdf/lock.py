"""The knowledge base's lock: readers share it, a writer holds it alone (§5).

A writer waits for the readers and writers before it, then goes; it never interleaves with them.
Oxigraph's own lock lets only one process open the store for writing, so ours is taken first.
"""

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

from kgrdf.errors import Damaged


def _timeout() -> float:
    return float(os.environ.get("KGRDF_LOCK_TIMEOUT", "120"))


@contextmanager
def held(path: Path, exclusive: bool):
    """Hold the lock file ``path``, shared or exclusive, waiting up to KGRDF_LOCK_TIMEOUT seconds."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        deadline = time.monotonic() + _timeout()
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Damaged(f"the knowledge base is locked by another kg command ({path})",
                                  hint="wait for it to finish, or raise KGRDF_LOCK_TIMEOUT") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        yield
    finally:
        os.close(fd)
