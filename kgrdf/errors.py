"""The errors a user can meet, each with its exit code (§7): 1 refused, 2 bad input, 3 damaged."""

# What the system says, lower-cased, when a disk has no room for a write (ENOSPC, EFBIG, EDQUOT): the
# folder is whole, and a command goes on once there is room; nothing is to be made again.
NO_ROOM = "no space left on device|file too large|disk quota exceeded"


class KgError(Exception):
    """An expected error: a one-line reason and, where there is one, the way out."""

    exit_code = 1
    kind = "refused"

    def __init__(self, message: str, hint: str | None = None, **details):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details

    def as_json(self) -> dict:
        out = {"error": self.kind, "message": self.message, "hint": self.hint or None}  # (always there: null for none)
        out.update(self.details)
        return out


class Refused(KgError):
    """The knowledge base refuses the change: validation, privacy or conflict (exit 1)."""


class NotFound(Refused):
    """An entity or fact that is not known (exit 1)."""

    kind = "not_found"


class BadInput(KgError):
    """Malformed input: a date, a source, a query, a file (exit 2)."""

    exit_code = 2
    kind = "bad_input"


class Unanswered(BadInput):
    """The answer could not be written to standard output (a full disk, a device that takes nothing,
    a reader that went away): exit 2, as for a file to write that cannot be (kg export --output),
    since the knowledge base is not at fault. Said on stderr alone, never on the output that failed,
    and, when the command's write was made all the same, so that a program does not make it again."""

    @classmethod
    def of(cls, exc: OSError, made: list[str] = ()) -> "Unanswered":
        """The error for ``exc``, the failed write to standard output; ``made``: what the command
        made all the same (kgrdf.made), each in a few words."""
        why = f"cannot write the answer to standard output: {exc.strerror or exc}"
        if not made:
            return cls(why, hint="send standard output where it can be written")
        # (a thing made that gives its own way on, a token whose secret is lost, is not to be left as it is)
        hint = None if any("kg " in what for what in made) else "do not make it again"
        return cls(f"{why}; the command's write was made all the same: {'; '.join(made)}", hint=hint)


class Damaged(KgError):
    """The knowledge base is damaged, missing or locked out (exit 3)."""

    exit_code = 3
    kind = "damaged"


class Unreachable(Damaged):
    """The index's server does not answer (exit 3): the journal holds every acknowledged write, and
    the index catches up when the server is back."""


class Foreign(Damaged):
    """The index's server holds another knowledge base's index (exit 3): nothing of it is taken."""


class Bug(KgError):
    """An error kgrdf did not expect: a bug, reported in one line (exit 3); KGRDF_DEBUG=1 shows the
    traceback."""

    exit_code = 3
    kind = "bug"

    @classmethod
    def of(cls, exc: BaseException) -> "Bug":
        what = f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if str(exc) else type(exc).__name__
        return cls(
            f"an unexpected error ({what}); this is a bug in kgrdf, please report it with the command that gave it",
            hint="KGRDF_DEBUG=1 prints the traceback",
        )


def one_line(exc: BaseException) -> str:
    """An exception's message on one line: a store's errors can span several."""
    return " ".join(str(exc).split())


def of(exc: Exception) -> KgError:
    """Any exception as the error a user is told: a KgError as it is, the index's own word for a
    file of it that fails its checksum as damage (exit 3), the file system's as :func:`from_os`
    (exit 3, naming the file), anything else a Bug."""
    if isinstance(exc, KgError):
        return exc
    if index_damage(exc):
        return Damaged(
            f"the index failed to read its own files ({str(exc).splitlines()[0][:300]}): the next command "
            "makes it again from the journal",
            hint="run the command again",
        )
    return from_os(exc) if isinstance(exc, OSError) else Bug.of(exc)


def index_damage(exc: Exception) -> bool:
    """Whether ``exc`` is the embedded store's word for a file of it that fails its checksum or
    does not read as written (RocksDB's "Corruption: ...")."""
    return isinstance(exc, RuntimeError | OSError) and str(exc).startswith("Corruption")


def from_os(exc: OSError) -> KgError:
    """An error of the file system (a folder that refuses new files, a disk that is full) as one line
    naming the file (exit 3): the knowledge base cannot be used as it stands."""
    where = f" {exc.filename}" if exc.filename else ""
    return Damaged(
        f"cannot use{where}: {exc.strerror or exc}", hint="kg needs to read and write the knowledge base's folder"
    )
