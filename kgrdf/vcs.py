"""The knowledge base's local git history: one commit per write (§5).

Commit messages name the command and the journal sequence number, never a person.

git's housekeeping (packing loose objects) never runs inside a write: every git command kg runs has
it switched off (``gc.auto=0``, ``maintenance.auto=false``), and so has the repository's own
configuration. On a large history it takes a minute, and an automatic one started by ``git commit``
would hold the write until it ended. A write that leaves the history due for it starts it in a
process of its own once the write is done and its lock released (:func:`start_housekeeping`); a
deletion that restarts the history stops it first (:func:`stop_housekeeping`).
"""

import os
import sys
import time
from pathlib import Path

UNCOMMITTED = "uncommitted"  # from a write's journal append to its git commit (never tracked)
TRACKED = [
    "journal",
    "replicas",
    "view.json",
    "format.json",
    "replica.json",
    "sync.json",
    "schema.json",
    "forgotten.jsonl",
    ".gitignore",
]
IGNORED = [
    "index/",
    "index.old/",
    "lock",
    "secret.key",
    "secret.key.aside-*",
    "*.torn-*",
    "*.tmp",
    "batch.json",
    "batch-*.json",
    "identifiers.jsonl",
    "tokens.json",
    "index.held",
    UNCOMMITTED,
    "purging.json",
    "journal.aside*",
    ".git.aside*",
    "cache/",
]
STALE_LOCK_SECONDS = 30
NO_HOUSEKEEPING = {"gc.auto": "0", "maintenance.auto": "false"}
LOOSE_OBJECTS = 6700  # git's own default for gc --auto: more loose objects than this, and it packs them
HOUSEKEEPING_PID = "kg-housekeeping.pid"  # in .git: the process of start_housekeeping, while it runs
_GIT_LOCKS = ["index.lock", "HEAD.lock", "config.lock"]


class Busy(Exception):
    """git could not commit now: a lock held by a git command that runs, or was cut short less than
    30 s ago. The journal holds the change; the next command commits it."""


class Unreadable(Exception):
    """git fails to read the history in .git (a damaged HEAD or index): git's own word for it."""


def _git(path: Path, *args: str, check: bool = True):
    import subprocess

    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(
        [
            "git",
            "-c",
            "user.name=kgrdf",
            "-c",
            "user.email=kgrdf@localhost",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
            *(arg for name, value in NO_HOUSEKEEPING.items() for arg in ("-c", f"{name}={value}")),
            *args,
        ],
        cwd=path,
        env=env,
        capture_output=True,
        text=True,
        check=check,
    )


def available() -> bool:
    import subprocess

    try:
        subprocess.run(["git", "--version"], capture_output=True, check=True)
        return True
    except (OSError, subprocess.CalledProcessError):
        return False


def init(path: Path) -> None:
    (path / ".gitignore").write_text("\n".join(IGNORED) + "\n", encoding="utf-8")
    if not (path / ".git").exists():
        _git(path, "init", "-q", "-b", "main")
    for name, value in NO_HOUSEKEEPING.items():  # for git commands run in the folder by hand too
        _git(path, "config", name, value)


def ignore_all(path: Path) -> None:
    """Add to ``.gitignore`` the names it lacks (one made by an older kgrdf does not know tokens.json
    or index.held): a ``git add .`` by hand never takes a file that must stay out of the history."""
    ignore = path / ".gitignore"
    try:
        held = ignore.read_text(encoding="utf-8") if ignore.is_file() and not ignore.is_symlink() else None
    except (OSError, UnicodeDecodeError):
        return
    if held is None:
        return
    missing = [name for name in IGNORED if name not in held.splitlines()]
    if missing:
        try:
            text = held + ("\n" if held and not held.endswith("\n") else "") + "\n".join(missing) + "\n"
            ignore.write_text(text, encoding="utf-8")
        except OSError:
            pass  # a .gitignore that cannot be written keeps what it had; the commit names its files anyway


def remove_stale_locks(path: Path) -> None:
    """A git lock older than 30 s was left by a git command cut short: remove it, with a note."""
    git_dir = path / ".git"
    candidates = [git_dir / name for name in _GIT_LOCKS]
    refs = git_dir / "refs" / "heads"
    if refs.is_dir():
        candidates += list(refs.glob("*.lock"))
    for lock in candidates:
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            continue
        if age > STALE_LOCK_SECONDS:
            lock.unlink(missing_ok=True)
            print(f"kg: removed a stale git lock {lock.relative_to(path)} ({age:.0f} s old)", file=sys.stderr)


def commit(path: Path, message: str) -> bool:
    """Commit what changed among the tracked files. Returns False when there was nothing to commit.
    A history moved aside (the way out of one git fails to read) starts again here, from the files
    as they are: the caller has checked the journal whole."""
    if not (path / ".git").exists():
        if not available():
            return False
        init(path)
        print("kg: the git history starts again here, from the knowledge base as it is", file=sys.stderr)
    remove_stale_locks(path)
    import subprocess

    ignore_all(path)
    present = [name for name in TRACKED if (path / name).exists()]
    try:
        _git(path, "add", "-A", "--", *present)
        if len(present) < len(TRACKED):
            _git(path, "add", "-u")  # a tracked file removed (forgotten.jsonl moved aside with a lost key)
        if _git(path, "diff", "--cached", "--quiet", check=False).returncode == 0:
            return False
        _git(path, "commit", "-q", "--no-verify", "-m", message)
    except subprocess.CalledProcessError as exc:
        reason = (exc.stderr or "").strip().splitlines()
        raise Busy(reason[0] if reason else f"git exited {exc.returncode}") from None
    return True


def changed_files(path: Path, *names: str) -> list[tuple[str, str]] | None:
    """The files under ``names`` that differ from the last commit, each with git's two-letter status
    (``??`` for a file git has never held, ``A`` first for one added since the last commit); None when
    there is no history here to compare with. Raises Unreadable when git fails to read the history:
    that is damage of its own, not a change of the files."""
    if not (path / ".git").exists() or not available():
        return None
    found = _git(
        path, "status", "--porcelain", "-z", "--untracked-files=all", "--no-renames", "--", *names, check=False
    )
    if found.returncode != 0:
        reason = found.stderr.strip().splitlines()
        raise Unreadable(reason[0] if reason else f"git status exited {found.returncode}")
    return [(entry[:2], entry[3:]) for entry in found.stdout.split("\0") if entry]


def commit_changing(path: Path, text: str, name: str) -> str | None:
    """The newest commit, on any branch or in the reflog, whose change to the file ``name`` added
    or took away ``text`` (a short hash: the file holds it there, or what came after it); None when
    none did, or there is no history here to ask."""
    if not (path / ".git").exists() or not available():
        return None
    found = _git(path, "log", "--all", "--reflog", "-n", "1", "--format=%h", f"-S{text}", "--", name, check=False)
    return found.stdout.strip() or None if found.returncode == 0 else None


def housekeeping_due(path: Path) -> bool:
    """Whether the history holds more loose objects than git's gc --auto allows, estimated as git
    estimates it: from one of the 256 folders they are spread over."""
    try:
        return len(os.listdir(path / ".git" / "objects" / "17")) * 256 > LOOSE_OBJECTS
    except OSError:
        return False


def start_housekeeping(path: Path) -> None:
    """Pack the history's loose objects (``git gc --auto``) in a process of its own that outlives
    the command and holds no lock of kg's: a write that follows goes on beside it (git makes room
    for that). Its pid is kept in .git until it ends, so that :func:`stop_housekeeping` can end it."""
    import subprocess

    if housekeeping_running(path):
        return
    git_dir = path / ".git"
    process = subprocess.Popen(
        ["git", "-c", f"gc.auto={LOOSE_OBJECTS}", "-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"],
        cwd=path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not ended with the command, nor by a ^C meant for it
    )
    (git_dir / HOUSEKEEPING_PID).write_text(f"{process.pid}\n", encoding="utf-8")


def housekeeping_running(path: Path) -> int | None:
    """The pid of the housekeeping :func:`start_housekeeping` started, while it runs."""
    try:
        pid = int((path / ".git" / HOUSEKEEPING_PID).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return None  # it ended (or, where there is no /proc, it is taken for ended)
    except OSError:
        return None
    return pid if b"gc\0" in cmdline else None  # a pid used again by another process is not it


def stop_housekeeping(path: Path, wait: float = 10.0) -> None:
    """End the housekeeping that runs on the history (a deletion is about to restart it: the
    housekeeping would write packs of the old history into the new one) and wait until it has."""
    import signal

    pid = housekeeping_running(path)
    if pid is not None:
        try:
            os.killpg(pid, signal.SIGTERM)  # git gc and the repack it runs: a group of their own
        except OSError:
            pass
        deadline = time.monotonic() + wait
        while housekeeping_running(path) and time.monotonic() < deadline:
            time.sleep(0.05)
    (path / ".git" / HOUSEKEEPING_PID).unlink(missing_ok=True)
