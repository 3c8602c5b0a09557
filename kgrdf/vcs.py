"""The knowledge base's local git history: one commit per write (§5).

Commit messages name the command and the journal sequence number, never a person.
"""

import os
import sys
import time
from pathlib import Path

UNCOMMITTED = "uncommitted"  # from a write's journal append to its git commit (never tracked)
TRACKED = ["journal", "view.json", "format.json", "replica.json", "schema.json", "forgotten.jsonl", ".gitignore"]
IGNORED = [
    "index/",
    "lock",
    "secret.key",
    "secret.key.aside-*",
    "*.torn-*",
    "*.tmp",
    "batch.json",
    "identifiers.jsonl",
    UNCOMMITTED,
    "purging.json",
    "journal.aside*",
    "cache/",
]
STALE_LOCK_SECONDS = 30
_GIT_LOCKS = ["index.lock", "HEAD.lock", "config.lock"]


class Busy(Exception):
    """git could not commit now: a lock held by a git command that runs, or was cut short less than
    30 s ago. The journal holds the change; the next command commits it."""


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
    """Commit what changed among the tracked files. Returns False when there was nothing to commit."""
    if not (path / ".git").exists():
        return False
    remove_stale_locks(path)
    import subprocess

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


def changed(path: Path, name: str) -> bool:
    """Whether the tracked file or folder ``name`` differs from the last commit."""
    if not (path / ".git").exists():
        return False
    return _git(path, "diff", "--quiet", "HEAD", "--", name, check=False).returncode == 1
