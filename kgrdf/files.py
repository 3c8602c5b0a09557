"""The knowledge base's own files: owner-only, written whole or appended, never through a link.

Private parts (§5, §8) are readable by the owner alone: the private journal, the git history that
holds it, the index, the name cache, the identifiers, the key, the forget records and markers, the
batch and journals set aside. While kgrdf writes in the folder it works under a umask of 077, so
what it makes is 0600 (folders 0700), and :func:`tighten` brings the modes of a knowledge base made
before down on its next write.

A file is never written through a symbolic link: a temporary file is made new (O_EXCL, O_NOFOLLOW)
after whatever stood at its name (a leftover, a planted link) is removed, then renamed over its
target, which replaces a link instead of following it; a file appended to in place (a journal
segment, forgotten.jsonl, the lock) is opened with O_NOFOLLOW, and a link there is refused.

JSON-lines files are read by "\\n", as they are written: ``str.splitlines`` would also split at
U+2028, U+0085 and other separators a JSON string may hold unescaped.
"""

import contextlib
import errno
import glob
import json
import os
import shlex
import stat
from contextlib import contextmanager
from pathlib import Path

from kgrdf.errors import BadInput, Damaged

UMASK = 0o077
PURGING = "purging.json"  # present while a deletion runs (kgrdf.purge); never tracked
REPLICAS = "replicas"  # the other replicas' journals, as kg sync pulls them from the hubs
BATCHES = ["batch.json", "batch-*.json"]  # each perspective's saved batch (kgrdf.batch.path)
PRIVATE = [
    "journal/local",
    ".git",
    "index",
    "cache",
    "identifiers.jsonl",
    "secret.key",
    PURGING,
    *BATCHES,
    "forgotten.jsonl",
    "journal.aside*",
    "secret.key.aside-*",
]
LINKS_REFUSED = ["journal/local", "index", "cache"]  # folders kgrdf writes in
DERIVED = ("index", "cache")  # of those, the ones made again from the journal when missing
READ_ONLY_WAY = "writes need to write in its folders (mind their permissions and the disk's mount); reads go on"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


# The fields of the knowledge base's settings files that every command reads, and what each holds:
# one edited to another shape is said damaged, naming the field, not met as "a bug" where it is read.
_SHAPES = {
    "format.json": {"format": (int, "a number"), "perspective": (str, "a name"), "index": ((str, type(None)), "a URL")},
    "replica.json": {"replica": (str, "a name"), "from_index_at": ((list, type(None)), "a list")},
}
_REMOTES = "remotes"  # format.json's: {name: URL}


def read_json(path: Path) -> dict:
    """A JSON file of the knowledge base's own (view.json, format.json, ...): {} when it is not there.
    Raises Damaged when it does not parse, and when format.json or replica.json is no JSON object
    or holds a field of another kind than kgrdf writes."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (ValueError, OSError) as exc:
        raise Damaged(f"{path.name} does not parse: {exc}") from None
    shape = _SHAPES.get(path.name)
    if shape is None:
        return data
    if not isinstance(data, dict):
        raise settings_damaged(path.name, f"{path.name} is not a JSON object, as kgrdf writes it")
    for name, (kinds, what) in shape.items():
        if name in data and (not isinstance(data[name], kinds) or isinstance(data[name], bool)):
            raise settings_damaged(path.name, f"{path.name}'s {name!r} is not {what}: {json.dumps(data[name])[:60]}")
    remotes = data.get(_REMOTES) if path.name == "format.json" else None
    if remotes is not None and not (
        isinstance(remotes, dict) and all(isinstance(url, str) for url in remotes.values())
    ):
        raise settings_damaged(path.name, f"{path.name}'s {_REMOTES!r} is not a set of names and URLs")
    return data


def read_marker(path: Path, keys: tuple[str, ...], what: str, parse=lambda data: data):
    """``parse`` of the JSON object of a marker kgrdf writes before a step it finishes from wherever a
    cut left it (purging.json, migrating.json): Damaged, with the way out, when it does not parse,
    lacks one of ``keys`` or holds what ``parse`` refuses. What a command must finish is never "a bug
    in kgrdf"."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and all(key in data for key in keys):
            return parse(data)
        problem = f"it lacks what kgrdf writes in it ({', '.join(keys)})"
    except (ValueError, OSError) as exc:
        problem = f"it does not parse: {exc}"
    except (TypeError, KeyError, AttributeError):
        problem = "it holds what kgrdf does not write in it"
    raise Damaged(
        f"{path.name} holds {what} cut short, which every command finishes first, and {problem}",
        hint=f"restore {path.name} from a backup of the folder",
    )


def settings_damaged(name: str, message: str) -> Damaged:
    """The error for a settings file of the knowledge base's own (format.json, replica.json) that
    holds what kgrdf never writes: no command runs on it, so none commits it, and the history holds
    the file as it was."""
    return Damaged(message, hint=f"restore it from the knowledge base's history: git checkout {name}, in its folder")


def signature(path: Path) -> tuple | None:
    """What the file at ``path`` is now (inode, size, modification and change times), which every
    change to it alters, whether it is rewritten in place or written whole under a new name (as
    write_json does); None when it is not there. Raises OSError when it cannot be looked at."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@contextmanager
def private():
    """Work under a umask of 077: every file kgrdf makes meanwhile is its owner's alone."""
    previous = os.umask(UMASK)
    try:
        yield
    finally:
        os.umask(previous)


def tighten(root: Path) -> None:
    """Make the private parts of the knowledge base at ``root`` owner-only (a folder's contents are
    walked only while its own mode is loose). Raises Damaged when a folder kgrdf writes in is a link."""
    for name in LINKS_REFUSED:
        if (root / name).is_symlink():
            target = os.readlink(root / name)
            raise Damaged(
                f"{name} is a symbolic link: kgrdf never writes through one",
                hint=f"remove the link ({root / name}); the next command makes the folder again"
                if name in DERIVED
                else f"move the folder it points to back in its place (rm {shlex.quote(str(root / name))} && "
                f"mv {shlex.quote(target)} {shlex.quote(str(root / name))}): what it holds is made from nothing else",
            )
    for folder in _written_folders(root):
        if not os.access(folder, os.W_OK | os.X_OK):
            raise Damaged(
                f"the knowledge base at {root} cannot be written here: "
                f"{'its folder' if folder == root else folder.relative_to(root).as_posix() + '/'} is read-only to kg",
                hint=READ_ONLY_WAY,
            )
    for pattern in PRIVATE:
        for path in root.glob(pattern):
            _tighten(path)


def _written_folders(root: Path) -> list[Path]:
    """The folders a write writes in, those there: the knowledge base's, its index's, and each
    journal's with the folder of its newest patches."""
    found = [root, *(root / name for name in ("index", "journal") if (root / name).is_dir())]
    journals = root / "journal"
    for stream in sorted(journals.iterdir()) if journals.is_dir() else ():
        if stream.is_dir():
            chunks = sorted(c for c in stream.iterdir() if c.is_dir())
            found += [stream, *chunks[-1:]]
    return found


def _tighten(path: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or not info.st_mode & 0o077:
        return
    if stat.S_ISDIR(info.st_mode):
        for folder, _dirs, names in os.walk(path):
            os.chmod(folder, stat.S_IMODE(os.lstat(folder).st_mode) & 0o700)
            for name in names:
                child = os.path.join(folder, name)
                mode = os.lstat(child).st_mode
                if not stat.S_ISLNK(mode):
                    os.chmod(child, stat.S_IMODE(mode) & 0o700)
    else:
        os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)


def create(path: Path):
    """A new, empty binary file at ``path``, 0600, opened for writing. Whatever stood there (a file
    left by a cut, a link) is removed first, never followed."""
    for _attempt in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
            return os.fdopen(fd, "wb")
        except FileExistsError:
            try:
                os.unlink(path)
            except IsADirectoryError:
                break
            except FileNotFoundError:
                pass
    raise Damaged(
        f"{path.name} cannot be made: something else keeps standing at {path}",
        hint="remove it and run the command again",
    )


def replace(path: Path, data: bytes, suffix: str = ".tmp") -> None:
    """Write ``path`` whole: a new temporary file beside it (``path`` and ``suffix``), fsynced,
    renamed over it (a link at ``path`` is replaced, not followed). Writers that do not hold the
    lock alone give a suffix of their own, so that one never removes another's temporary file."""
    tmp = path.with_name(path.name + suffix)
    try:
        with create(tmp) as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # (a folder where the file is to be: nothing left beside it)
            tmp.unlink()
        raise


class Counted:
    """A binary file that counts the bytes written to it (``written``)."""

    def __init__(self, file):
        self.file = file
        self.written = 0

    def write(self, data: bytes) -> int:
        self.written += len(data)
        return self.file.write(data)

    def flush(self) -> None:
        self.file.flush()


@contextmanager
def written_whole(path: Path, outside: Path | None = None):
    """A file of the user's (an export) written whole or not at all, as a Counted file: a new file
    beside ``path``, renamed over it when the block ends and removed when the block raises, so that
    a write cut short leaves what stood at ``path`` as it was. A link at ``path`` is written
    through: the file it names is replaced, and keeps its permissions. A device or a pipe there
    (/dev/null, /dev/stdout) is written to as it is, never replaced. Not fsynced: the file is the
    user's, not the knowledge base's. A path in the folder ``outside`` (a knowledge base's: its
    journal, format.json) is refused with BadInput before anything is written, through links too."""
    if outside is not None:
        folder = os.path.realpath(outside)
        if os.path.commonpath([folder, os.path.realpath(path)]) == folder:
            raise BadInput(
                f"{path} is in the knowledge base's folder, whose files are kgrdf's own: nothing was written",
                hint="write the export outside it",
            )
    try:
        info = os.stat(path)  # (through links: /dev/stdout names a pipe by a link no path reaches)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if info is not None and not stat.S_ISREG(info.st_mode):
        with open(path, "wb") as out:
            yield Counted(out)
        return
    target = Path(os.path.realpath(path))
    _drop_parts_left(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    out = open(tmp, "xb")  # (a file left at that name is never written through)
    try:
        with out:
            if info is not None:
                os.fchmod(out.fileno(), stat.S_IMODE(info.st_mode))  # a file replaced keeps its permissions
            yield Counted(out)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _drop_parts_left(target: Path) -> None:
    """Remove what a write of ``target`` killed before its end left beside it (``.NAME.PID.part``):
    the part of a process that no longer runs. One that runs is writing it still."""
    for part in target.parent.glob(f".{glob.escape(target.name)}.*.part"):
        pid = part.name[len(target.name) + 2 : -len(".part")]
        if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            part.unlink(missing_ok=True)


def alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (another user's process counts as running; a number too
    large to be a process's, as a file's name may hold, runs nowhere)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:
        return True
    return True


@contextmanager
def appending(path: Path):
    """``path`` opened to append bytes (made 0600 when new). Raises Damaged when it is a link."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
    except OSError:
        if path.is_symlink():
            raise Damaged(
                f"{path.name} is a symbolic link: kgrdf never writes through one",
                hint=f"remove the link ({path}) and restore the file it replaced",
            ) from None
        raise
    with os.fdopen(fd, "ab") as out:
        yield out


def write_json(path: Path, data: dict, suffix: str = ".tmp") -> None:
    """Write a small JSON file whole (see :func:`replace`, and its ``suffix``)."""
    replace(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"), suffix)


def write_jsonl(path: Path, records: list[dict]) -> None:
    """Write a JSON-lines file whole, one record a line (see :func:`replace`)."""
    replace(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records).encode("utf-8"))


def read_jsonl(path: Path, hint: str, text_fields: dict[str, bool] | None = None) -> list[dict]:
    """The records of a JSON-lines file (none when it is missing), split at "\\n" only, each a JSON
    object whose ``text_fields`` (name -> whether it must be there) are strings. Raises Damaged
    naming the line that does not parse or is no such record, with ``hint`` as the way out."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise Damaged(f"{path.name} cannot be read: {exc}", hint=hint) from None
    out = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                record = json.loads(line)
            except ValueError:
                raise Damaged(f"{path.name}:{number} does not parse", hint=hint) from None
            if not isinstance(record, dict):
                raise Damaged(f"{path.name}:{number} is not a JSON object", hint=hint)
            for name, required in (text_fields or {}).items():
                if (required or name in record) and not isinstance(record.get(name), str):
                    raise Damaged(f"{path.name}:{number} has no text {name!r}", hint=hint)
            out.append(record)
    return out


def new_folder(path: Path) -> None:
    """An empty folder at ``path`` (0700); a link or a folder left there is removed first, never followed."""
    import shutil

    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
    path.mkdir(mode=0o700)


CACHE = "cache"  # derived files: made again when missing or made for another state; never in git; deleted by forget


def cache_files(kb_path: Path, pattern: str) -> list[Path]:
    """The files of cache/ that match ``pattern``, in name order; none when cache/ is missing, not a
    folder, or a link (never read or written where a link points)."""
    folder = kb_path / CACHE
    try:
        if folder.is_symlink() or not folder.is_dir():
            return []
        return sorted(folder.glob(pattern))
    except OSError:
        return []


def read_cache(kb_path: Path, name: str, key: str):
    """The data of ``cache/<name>.json`` when it was made for ``key``; else None (missing, made for
    another key, unreadable, or cache/ is a link: never read from where a link points)."""
    path = kb_path / CACHE / f"{name}.json"
    try:
        if path.parent.is_symlink():
            return None
        cached = json.loads(path.read_text(encoding="utf-8"))
        return cached["data"] if cached.get("key") == key else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write_cache(kb_path: Path, name: str, key: str, data) -> None:
    """Keep ``data`` in ``cache/<name>.json`` for ``key``; readers that share the lock may write it at
    once, each through a temporary file of its own. A folder that cannot be written in is left as
    it is: the next command makes the data again."""
    folder = kb_path / CACHE
    try:
        if folder.is_symlink():
            return
        folder.mkdir(mode=0o700, exist_ok=True)
        replace(
            folder / f"{name}.json",
            json.dumps({"key": key, "data": data}, ensure_ascii=False).encode("utf-8"),
            suffix=own_suffix(),
        )
    except (OSError, Damaged):
        pass


def drop_temporaries_left(path: Path) -> None:
    """Remove what a making of ``path`` killed before its end left beside it: its file of
    :func:`own_suffix` (``NAME.PID.THREAD.tmp``, megabytes for a cache) and the rollback journal
    SQLite keeps beside one, of a process that no longer runs. One that runs is making it still."""
    for left in path.parent.glob(f"{glob.escape(path.name)}.*.*.tmp*"):
        pid = left.name[len(path.name) + 1 :].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            left.unlink(missing_ok=True)


def own_suffix() -> str:
    """A temporary file's suffix of this process and thread: a server's threads (kg serve, the
    console) make the same cache at once, each through a file of its own, where a suffix of the
    process alone had one thread rename another's half-made file into place."""
    import threading

    return f".{os.getpid()}.{threading.get_ident()}.tmp"


def remove_sqlite(path: Path) -> None:
    """Delete a cache kept in SQLite and its rollback journal, if a write cut short left one."""
    try:
        path.with_name(path.name + "-journal").unlink(missing_ok=True)
        path.unlink(missing_ok=True)
    except OSError:
        pass  # a folder that cannot be written in: the position it records is never the index's again
