"""The journal: the knowledge base's source of truth, append-only, as two RDF Patch logs.

One transaction per command. Its change is written as RDF Patch (https://jena.apache.org/documentation/rdf-patch/):
a header, then ``TX``, the quads it deletes (``D``) and adds (``A``) as N-Quads, then ``TC``::

    H id <urn:uuid:...> .
    H prev <urn:uuid:...> .
    H time "2026-03-01T09:30:00Z" .
    H command "propose" .
    TX .
    D <s> <p> <o> <g> .
    A <s> <p> <o> <g> .
    TC .

There are two journals (§5, §8): ``journal/local/``, private, never leaves the machine, for every
change that names a person or holds the user's own words; and ``journal/<replica>/``, this
replica's, which may be shared. Each is an RDF Patch log of its own, as RDF Delta keeps one: one
patch per file, the files of a journal numbered 1, 2, 3 ... in the order they were appended
(``0000000/0000000012.rdfp.gz``, a thousand to a folder, so that a write touches one small new file
whatever the size of the knowledge base and no folder grows without end), each patch's ``H prev``
naming the patch before it in the same journal (the first has none). An RDF Patch has one header,
at its start, so a file never holds two. Each file is gzipped (a twentieth of the bytes: the rows
repeat the same IRIs); knowledge bases of format 2 hold plain ``.rdfp`` files, read as they are, and
their next patches are gzipped. What is chained, sent to a hub and checked is always the patch's own
bytes, so gzipping a journal changes no digest.

A transaction with rows for both journals is a patch in each, the private one first. The shared
journal says nothing of the private one: its patches carry no sequence number, no count and no id
of a private patch, so that what it reveals is its own changes and their times. The private journal
holds the order of the whole: each private patch carries the transaction's sequence number
(``H seq "12"``, one number running across both journals, from which fact ids are minted) and, when
the transaction has a shared part, that patch's id (``H shared <urn:uuid:...>``); the first
transaction always has a private patch (empty if it has no private rows), which says where the
sequence starts. Folding both journals in one order: transaction n is the private patch with
``seq`` n (with the shared patch it names), else the next shared patch not yet taken.

Every patch is written to a new file (O_EXCL), flushed and fsynced, its folder fsynced, before it is
applied to the index. A file left short by a write cut short (the last of its journal, with no
``TC``, or a gzip stream that stops before its end) is a torn tail: it is set aside as
``<file>.torn-<time>``, and so is a private patch whose shared patch was never written. Positions
are chained by a digest (sha256 over the previous digest and each patch's bytes, the private patch
first), which ``view.json`` and the index record.

A forgotten person's rows in the private journal are dropped; a patch left with no rows is kept as a
placeholder (its id, prev, sequence number and time, and ``H placeholder "forgotten"``), so that the
chain stays whole and the sequence never goes back.
"""

import gzip
import hashlib
import json
import os
import re
import uuid
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from itertools import repeat
from pathlib import Path

from kgrdf import nquads
from kgrdf.errors import Damaged

FORMAT = 3  # of the knowledge base folder: 3, each journal an RDF Patch log of its own, one gzipped patch a file
# (2: the same, the files plain; 1: segments of several transactions; kgrdf.migrate brings either to 3)
LOCAL = "local"  # the private journal's folder
PER_FOLDER = 1000  # patch files to a folder
_FILE = re.compile(r"^([0-9]{10})\.rdfp(?:\.gz)?\Z")  # format 2's files are plain, format 3's gzipped
SUFFIX = ".rdfp.gz"  # of a patch file written now
ROWS_AT_ONCE = 20_000  # rows a write encodes, gzips and hashes at a time (about 4 MB)
DECODED_AT_ONCE = 4 << 20  # bytes of a patch read back that are decoded at a time
_LEVEL = 3  # gzip's: about 500 MB/s and 1/19 of a journal's bytes (level 6: a third of the speed, 10% smaller)
_FOLDER = re.compile(r"^[0-9]{7}\Z")
_HEADER = re.compile(r'^H (\w+) (?:<([^>]*)>|"((?:[^"\\]|\\.)*)") \.\Z')
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

WAY_OUT = (
    "move journal/ aside (mv journal journal.aside); the next write starts a new journal "
    "from the current data as a new replica"
)


def way_out(folder: Path) -> str:
    """The way out of a journal ``folder`` behind view.json: moved aside already (journal.aside), it
    is what an index that does not hold the data needs, and goes back."""
    if (folder.parent / "journal.aside").exists():
        return (
            "journal.aside holds the journal, and the index does not hold what it did: move it back "
            "(mv journal.aside journal, once no journal/ is there)"
        )
    return WAY_OUT


def new_id() -> str:
    return f"urn:uuid:{uuid.uuid4()}"


@dataclass
class Transaction:
    """One command's change: the quads it deletes, then the quads it adds (N-Quads lines: a list, or
    a write's :class:`kgrdf.nquads.Rows`, read in parts with nquads.batches)."""

    seq: int
    command: str
    time: str
    deletes: list[str] = field(default_factory=list)
    adds: list[str] = field(default_factory=list)


@dataclass
class Patch:
    """One journal's part of a transaction, as one RDF Patch. ``seq`` and ``shared`` are the private
    journal's alone (the transaction's sequence number; the id of its shared patch, if any)."""

    id: str
    time: str
    command: str = ""
    deletes: list[str] = field(default_factory=list)
    adds: list[str] = field(default_factory=list)
    prev: str | None = None
    seq: int | None = None
    shared: str | None = None
    placeholder: bool = False  # what is left of a private patch whose rows were all forgotten

    def encode(self) -> bytes:
        return b"".join(self.pieces())

    def pieces(self) -> Iterator[bytes]:
        """The patch's bytes in pieces of up to ROWS_AT_ONCE rows: an import's patch is hundreds of
        MB, which a write then never holds whole (as text, as bytes and gzipped at once)."""
        rows = [f"H id <{self.id}> ."]
        if self.prev:
            rows.append(f"H prev <{self.prev}> .")
        if self.seq is not None:
            rows.append(f'H seq "{self.seq}" .')
        if self.shared:
            rows.append(f"H shared <{self.shared}> .")
        rows.append(f'H time "{self.time}" .')
        if self.placeholder:
            rows.append('H placeholder "forgotten" .')
        else:
            rows.append(f"H command {json.dumps(self.command)} .")
        rows.append("TX .")
        yield ("\n".join(rows) + "\n").encode("utf-8")
        for op, lines in (("D", self.deletes), ("A", self.adds)):
            for rows in nquads.batches(lines, ROWS_AT_ONCE):
                yield (f"{op} " + f" .\n{op} ".join(rows) + " .\n").encode("utf-8")
        yield b"TC .\n"


def parse_patch(data: bytes, where: str) -> Patch | None:
    """The one patch a file holds; None when it stops before its ``TC`` (a torn tail). Raises
    Damaged for a row that is not one of ours, a header after ``TX``, or anything after ``TC``."""
    return parse_lines(_split(data), where)


def parse_lines(lines: list[str], where: str) -> Patch | None:
    """parse_patch of the patch's text split at its newlines (``lines`` is taken, not copied).

    The rows are split and sorted by list operations, not one row at a time: a rebuild reads every
    patch, millions of rows at 100k facts. An import's patch is hundreds of MB: its rows are made
    ROWS_AT_ONCE at a time, never held twice over."""
    complete = len(lines) - 1  # what follows the last newline is not a whole row
    headers: dict[str, str] = {}
    at = 0
    while True:
        if at >= complete:
            return None  # no TX yet: cut short
        line = lines[at]
        at += 1
        if line == "TX .":
            break
        _header_row(headers, line, where)
    ends = [i for i in (_find(lines, "TC .", at, complete), _find(lines, "TA .", at, complete)) if i is not None]
    end = min(ends) if ends else complete
    body = lines[at:end]
    only_adds = all(map(str.endswith, body, repeat(" ."))) and all(map(str.startswith, body, repeat("A ")))
    if not only_adds:
        adds = [line[2:-2] for line in body if line.startswith("A ") and line.endswith(" .")]
        deletes = [line[2:-2] for line in body if line.startswith("D ") and line.endswith(" .")]
        if len(adds) + len(deletes) != len(body):
            raise _unexpected(next(line for line in body if not _is_row(line)), where)
    if not ends:
        return None  # no TC yet: cut short
    if "\n".join(lines[end + 1 :]).strip():
        raise Damaged(f"{where}: rows after the patch's TC (a file holds one patch)", hint=WAY_OUT)
    if lines[end] == "TA .":
        deletes, adds = [], []
    elif only_adds:  # most patches only add: one pass in C, a part at a time, each row's text let go
        del body, lines[end:], lines[:at]
        for start in range(0, len(lines), ROWS_AT_ONCE):
            lines[start : start + ROWS_AT_ONCE] = [line[2:-2] for line in lines[start : start + ROWS_AT_ONCE]]
        adds, deletes = lines, []
    return _patch(headers, where, deletes, adds)


def _header_row(headers: dict[str, str], line: str, where: str) -> None:
    """Take one row of a patch's header into ``headers``; raises Damaged for a row that is not one."""
    match = _HEADER.match(line) if line.startswith("H ") else None
    if line.startswith("H ") and not match:
        raise Damaged(f"{where}: unreadable header row: {line[:60]!r}", hint=WAY_OUT)
    if not match:
        raise Damaged(f"{where}: unexpected row in the header: {line[:60]!r}", hint=WAY_OUT)
    name = match.group(1)
    if name in headers:
        raise Damaged(f"{where}: two {name} headers", hint=WAY_OUT)
    headers[name] = match.group(2) if match.group(2) is not None else match.group(3)


def _is_row(line: str) -> bool:
    """Whether a line of a patch's body is one of its rows (the ``TC`` aside)."""
    return line.startswith(("A ", "D ")) and line.endswith(" .")


def _unexpected(line: str, where: str) -> Damaged:
    return Damaged(f"{where}: unexpected row in the patch: {line[:60]!r}", hint=WAY_OUT)


def _patch(headers: dict[str, str], where: str, deletes: list[str], adds: list[str]) -> Patch:
    try:
        return Patch(
            id=headers["id"],
            time=headers.get("time", ""),
            command=json.loads(f'"{headers.get("command", "")}"'),
            deletes=deletes,
            adds=adds,
            prev=headers.get("prev"),
            seq=int(headers["seq"]) if "seq" in headers else None,
            shared=headers.get("shared"),
            placeholder="placeholder" in headers,
        )
    except (KeyError, ValueError):
        raise Damaged(f"{where}: the patch lacks its id or has an unreadable sequence number", hint=WAY_OUT) from None


class _Scan:
    """:func:`parse_lines` of a patch's bytes fed a piece at a time, for a pass over the journal that
    needs each patch's headers and the rows it deletes, not the rows it adds (a rebuild's check, a
    status): the patch it gives has no ``adds``. Most of a journal is rows that add, and these are
    checked on the bytes, never decoded: a row has no newline in it (N-Quads writes one as a
    backslash and an n), so a part whose newlines all sit between a row's " ." and the next's "A " or
    "D " is rows of ours, one count each. A part where the counts do not add up (a ``TC``, a row
    that is not ours) is read a row at a time as parse_lines reads it, to the same Damaged. A
    Damaged is raised by :meth:`result`, after every piece: a file that is not whole is torn, not
    damaged, as the caller then decides."""

    def __init__(self, where: str):
        self.where = where
        self.headers: dict[str, str] = {}  # the header's rows read so far
        self.body = False  # whether TX is read
        self.carry = b""  # the bytes after the last newline
        self.deletes: list[str] = []
        self.end: str | None = None  # TC or TA, once read
        self.trailer = bytearray()  # whatever follows it
        self.error: Damaged | None = None

    def feed(self, piece: bytes) -> None:
        if self.error is not None:
            return
        try:
            self._feed(piece)
        except Damaged as exc:
            self.error = exc

    def _feed(self, piece: bytes) -> None:
        if self.end is not None:
            self.trailer += piece
            return
        data = self.carry + piece if self.carry else piece
        cut = data.rfind(b"\n") + 1
        self.carry, data = data[cut:], data[:cut]
        if not self.body:
            data = self._header(data)
        if data:
            self._rows(data)

    def _header(self, data: bytes) -> bytes:
        """Read the header's rows among ``data`` (whole rows); what follows ``TX`` is returned."""
        at = 0
        while at < len(data):
            stop = data.index(b"\n", at)
            line = data[at:stop].decode("utf-8", errors="replace")
            at = stop + 1
            if line == "TX .":
                self.body = True
                return data[at:]
            _header_row(self.headers, line, self.where)
        return b""

    def _rows(self, data: bytes) -> None:
        if data.startswith((b"A ", b"D ")) and data.endswith(b" .\n"):
            between = data.count(b"\n") - 1  # newlines between two rows
            adding = data.count(b" .\nA ")
            deleting = 0 if adding == between else data.count(b" .\nD ")
            if adding + deleting == between:
                if deleting or data.startswith(b"D "):
                    text = data.decode("utf-8", errors="replace")
                    self.deletes += [line[2:-2] for line in text.split("\n") if line.startswith("D ")]
                return
        lines = data.decode("utf-8", errors="replace").split("\n")
        for at, line in enumerate(lines[:-1]):
            if line in ("TC .", "TA ."):
                self.end = line
                self.trailer += "\n".join(lines[at + 1 :]).encode("utf-8")
                return
            if not _is_row(line):
                raise _unexpected(line, self.where)
            if line.startswith("D "):
                self.deletes.append(line[2:-2])

    def result(self) -> "Patch | None":
        """The patch, None when it stops before its ``TC``; raises Damaged as parse_lines does."""
        if self.error is not None:
            raise self.error
        if self.end is None:
            return None
        self.trailer += self.carry
        if self.trailer.decode("utf-8", errors="replace").strip():
            raise Damaged(f"{self.where}: rows after the patch's TC (a file holds one patch)", hint=WAY_OUT)
        return _patch(self.headers, self.where, [] if self.end == "TA ." else self.deletes, [])


def _split(data: bytes) -> list[str]:
    """``data.decode("utf-8", errors="replace").split("\n")``, decoded a part at a time: the whole
    text of a large patch is never held beside its bytes and its rows."""
    size = DECODED_AT_ONCE
    return _lines_of(data[start : start + size] for start in range(0, len(data), size))


def _lines_of(pieces: Iterable[bytes]) -> list[str]:
    """The text of the bytes ``pieces`` make, one after another, split at its newlines: each piece
    decoded as far as its last newline (UTF-8 has no newline byte within a character, so the text is
    that of the whole decoded at once), the rest carried to the next."""
    lines: list[str] = []
    carry = b""
    for piece in pieces:
        data = carry + piece if carry else piece
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        lines += data[:cut].decode("utf-8", errors="replace").split("\n")
        carry = data[cut + 1 :]
    lines += carry.decode("utf-8", errors="replace").split("\n")
    return lines


def _find(lines: list[str], row: str, start: int, stop: int) -> int | None:
    try:
        return lines.index(row, start, stop)
    except ValueError:
        return None


@dataclass
class Position:
    """Where the journals end: the last transaction's sequence number, the chained digest, and each
    journal's last patch (its file, as ``folder/name``, the file's size, and the patch's id)."""

    seq: int = 0
    digest: str = ""
    shared: str | None = None
    shared_size: int = 0
    shared_id: str | None = None
    local: str | None = None
    local_size: int = 0
    local_id: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Position":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def ends(self) -> tuple:
        """Comparable with :meth:`Journal.end_offset`."""
        return (self.shared, self.shared_size), (self.local, self.local_size)


def chain(digest: str, block: bytes | Iterable[bytes]) -> str:
    """``digest`` chained with a patch's bytes (or its bytes in pieces, one after another)."""
    chained = hashlib.sha256(digest.encode("ascii"))
    for piece in [block] if isinstance(block, bytes) else block:
        chained.update(piece)  # (not joined to the digest: an import's patch is hundreds of MB)
    return chained.hexdigest()


@dataclass
class Torn:
    """A patch file that is not a whole patch (a write cut short), or a private patch whose shared
    patch was never written: set aside whole."""

    segment: Path
    offset: int
    size: int


@dataclass
class Entry:
    """One patch read back: the patch, its file's bytes (gzipped: an import's patch is hundreds of
    MB unzipped), its file (``folder/name``) and the file's size."""

    patch: Patch
    raw: bytes
    name: str
    size: int

    def chained(self, digest: str) -> str:
        """``digest`` chained with the patch's bytes (:func:`chain`), unzipped a piece at a time."""
        return chain(digest, _Unpacking(self.name, self.raw, self.name))


def is_patch_name(name: str) -> bool:
    """Whether ``name`` (``folder/0000000012.rdfp.gz``) is where a journal keeps a patch."""
    folder, _, file = name.partition("/")
    return bool(_FOLDER.match(folder) and _FILE.match(file))


def number_of(name: str | None) -> int:
    """The number of a patch file named ``folder/0000000012.rdfp.gz`` (0 for none)."""
    return int(name.rsplit("/", 1)[-1][:10]) if name else 0


def name_of(number: int) -> str:
    """The name patch ``number`` is written under (``folder/0000000012.rdfp.gz``)."""
    return f"{number // PER_FOLDER:07d}/{number:010d}{SUFFIX}"


def packed(name: str, data: bytes) -> bytes:
    """A patch's bytes as its file ``name`` holds them: gzipped, or plain for a format 2 file."""
    return b"".join(_packing(name, [data]))


def _packing(name: str, pieces) -> Iterator[bytes]:
    """The pieces of a patch's bytes as its file ``name`` holds them, one piece at a time."""
    if not name.endswith(".gz"):
        yield from pieces
        return
    deflater = zlib.compressobj(_LEVEL, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
    for piece in pieces:
        yield deflater.compress(piece)
    yield deflater.flush()


def unpacked(name: str, raw: bytes, where: str) -> tuple[bytes, bool]:
    """The patch's bytes a file ``name`` holds, and whether the file is whole: a gzip stream cut
    short gives what it holds up to the cut, and is not whole. Raises Damaged for a file that is not
    gzip, or holds more than one stream."""
    unpacking = _Unpacking(name, raw, where)
    data = b"".join(unpacking)
    return data, unpacking.whole


class _Unpacking:
    """The patch's bytes a file ``name`` holds (``raw``), a piece at a time as they are iterated
    (gunzipped from about 256 KB of the file each); ``whole`` is then whether the file is whole, as
    :func:`unpacked` says."""

    def __init__(self, name: str, raw: bytes, where: str):
        self.name, self.raw, self.where = name, raw, where
        self.whole = False

    def __iter__(self) -> Iterator[bytes]:
        raw = self.raw
        if not self.name.endswith(".gz"):
            self.whole = True
            yield raw
            return
        inflater = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer, the CRC checked
        step = 256 * 1024
        try:
            for start in range(0, max(len(raw), 1), step):
                yield inflater.decompress(raw[start : start + step])
        except zlib.error as exc:
            raise Damaged(f"{self.where}: not a gzipped patch ({exc})", hint=WAY_OUT) from None
        if inflater.unused_data:
            raise Damaged(f"{self.where}: bytes after the gzipped patch (a file holds one patch)", hint=WAY_OUT)
        self.whole = inflater.eof


class Stream:
    """One journal folder: its patches, one a file, numbered from 1."""

    def __init__(self, folder: Path):
        self.dir = folder

    @property
    def label(self) -> str:
        """The folder as a message names it: ``journal/<replica>``, or ``replicas/<replica>`` for
        another replica's journal pulled from a hub."""
        return f"{self.dir.parent.name}/{self.dir.name}"

    def _folders(self) -> list[Path]:
        try:
            return sorted(p for p in self.dir.iterdir() if _FOLDER.match(p.name) and p.is_dir())
        except (FileNotFoundError, NotADirectoryError):
            return []

    @staticmethod
    def _files_in(folder: Path) -> list[Path]:
        try:
            return sorted(p for p in folder.iterdir() if _FILE.match(p.name))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def files(self) -> list[Path]:
        """Every patch file, in order."""
        return [path for folder in self._folders() for path in self._files_in(folder)]

    def path_of(self, number: int) -> Path | None:
        """Patch ``number``'s file, whichever form it was written in; None when there is none."""
        for path in (self.dir / name_of(number), (self.dir / name_of(number)).with_suffix("")):
            if path.exists():
                return path
        return None

    def last(self) -> Path | None:
        """The last patch file: a listing of the last folders, no parsing."""
        for folder in reversed(self._folders()):
            found = self._files_in(folder)
            if found:
                return found[-1]
        return None

    def any(self) -> bool:
        """Whether the journal holds a patch file (stops at the first)."""
        for folder in self._folders():
            with os.scandir(folder) as entries:
                if any(_FILE.match(entry.name) for entry in entries):
                    return True
        return False

    def end_offset(self) -> tuple[str | None, int]:
        """The last file's name and size: a stat, no parsing."""
        last = self.last()
        if last is None:
            return None, 0
        return f"{last.parent.name}/{last.name}", last.stat().st_size

    def text(self) -> str:
        """Every patch of the journal, one after another (for a search over its rows)."""
        return "".join(self.patch_bytes(p).decode("utf-8", errors="replace") for p in self.files())

    @staticmethod
    def open(path: Path):
        """A patch file opened to read its patch's bytes from the start (a header, without the rest)."""
        return gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")

    def patch_bytes(self, path: Path) -> bytes:
        """The patch's bytes file ``path`` holds (as far as they go, for a file cut short)."""
        return unpacked(path.name, path.read_bytes(), self._where(path))[0]

    def _where(self, path: Path) -> str:
        return f"{self.label}/{path.parent.name}/{path.name}"

    def write(self, number: int, patch: Patch, digest: str) -> tuple[str, int, str]:
        """Write the patch as file ``number`` (a new file, never one that is there), a piece at a
        time, flush and fsync it and its folder; return its name, the file's size, and ``digest``
        chained with the patch's bytes (:func:`chain`)."""
        chained = hashlib.sha256(digest.encode("ascii"))

        def hashed():
            for piece in patch.pieces():
                chained.update(piece)
                yield piece

        name, size = self._write_file(number, hashed())
        return name, size, chained.hexdigest()

    def write_bytes(self, number: int, data: bytes) -> tuple[str, int]:
        """Write a patch's bytes as file ``number`` (as :meth:`write`): a patch kept as its writer wrote
        it (another replica's, pulled from a hub). Returns its name and the file's size."""
        return self._write_file(number, [data])

    def _write_file(self, number: int, pieces) -> tuple[str, int]:
        name = name_of(number)
        path = self.dir / name
        made = not path.parent.is_dir()
        if made:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if path.with_suffix("").exists():
                raise FileExistsError  # the same patch, written plain by format 2
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
        except FileExistsError:
            raise Damaged(
                f"{self.label}/{name} is there already: the journal is ahead of view.json", hint=WAY_OUT
            ) from None
        size = 0
        with os.fdopen(fd, "wb") as out:
            for piece in _packing(name, pieces):
                size += out.write(piece)
            out.flush()
            os.fsync(out.fileno())
        fsync_dir(path.parent)
        if made:
            fsync_dir(self.dir)
            fsync_dir(self.dir.parent)
        return name, size

    def read(self, path: Path) -> tuple[Patch | None, bytes, int]:
        """The patch file ``path`` holds (None when it is not whole), its bytes, and the file's size."""
        raw = path.read_bytes()
        data, whole = unpacked(path.name, raw, self._where(path))
        patch = parse_patch(data, self._where(path)) if whole else None
        return patch, data, len(raw)

    def entries_after(
        self, name: str | None, size: int, last_id: str | None, torn: list, adds: bool = True
    ) -> Iterator[Entry]:
        """Every whole patch after file ``name`` (of ``size`` bytes, patch ``last_id``), read one file
        at a time as it is asked for, each checked to follow the one before it; a torn last file is
        added to ``torn`` once the last is read. Raises Damaged when the folder does not hold that
        place or the chain breaks. Without ``adds``, each patch's rows that add are checked but not
        kept (:class:`_Scan`).

        One file at a time: the journal of a large knowledge base is GBs, and a rebuild reads it all."""
        label = self.label
        if name is not None:
            at = self.dir / name
            try:
                found = at.stat().st_size
            except FileNotFoundError:
                raise Damaged(
                    f"{label}/{name} is missing: the journal is behind view.json", hint=way_out(self.dir.parent)
                ) from None
            if found != size:
                raise Damaged(
                    f"{label}/{name} has {found} bytes, view.json says {size}: it was changed after it was written",
                    hint=WAY_OUT,
                )
        start = number_of(name)
        paths = [
            p
            for folder in self._folders()
            if int(folder.name) >= start // PER_FOLDER
            for p in self._files_in(folder)
            if int(p.name[:10]) > start
        ]
        prev, expected = last_id, start + 1
        for index, path in enumerate(paths):
            here = f"{path.parent.name}/{path.name}"
            if int(path.name[:10]) != expected or path.parent.name != name_of(expected).split("/")[0]:
                raise Damaged(f"{label}: patch {expected} is missing (the next file is {here})", hint=WAY_OUT)
            raw = path.read_bytes()
            unpacking = _Unpacking(path.name, raw, self._where(path))
            if adds:
                lines = _lines_of(unpacking)  # (the patch's bytes are never held whole)
                patch = parse_lines(lines, self._where(path)) if unpacking.whole else None
                del lines
            else:
                scan = _Scan(self._where(path))
                for piece in unpacking:
                    scan.feed(piece)
                patch = scan.result() if unpacking.whole else None
            size = len(raw)
            if patch is None:
                if index != len(paths) - 1:
                    raise Damaged(f"{label}/{here} is not a whole patch and others follow it", hint=WAY_OUT)
                torn.append(Torn(path, 0, size))
                return
            if patch.prev != prev:
                raise Damaged(
                    f"{label}/{here}: its prev does not name the patch before it in this journal", hint=WAY_OUT
                )
            yield Entry(patch, raw, here, size)
            prev, expected = patch.id, expected + 1


class _Ahead:
    """An iterator with its next item read ahead (``head``, None at the end)."""

    def __init__(self, items: Iterator):
        self._items = items
        self.head = next(items, None)

    def take(self):
        item, self.head = self.head, next(self._items, None)
        return item


class Journal:
    """This replica's journal and the private one, read and written as one sequence."""

    def __init__(self, folder: Path, replica: str):
        self.folder = folder
        self.replica = replica
        self.shared = Stream(folder / replica)
        self.local = Stream(folder / LOCAL)

    def segments(self) -> list[Path]:
        """Every patch file of both journals."""
        return self.local.files() + self.shared.files()

    def empty(self) -> bool:
        return not self.local.any() and not self.shared.any()

    def end_offset(self) -> tuple:
        """Where each journal ends (comparable with :meth:`Position.ends`)."""
        return self.shared.end_offset(), self.local.end_offset()

    def ends_at(self, position: Position) -> bool:
        """Whether the journals end where ``position`` says: each last file there with its size, and
        no file after it (a few stats, no listing, no parsing)."""
        for stream, name, size in (
            (self.shared, position.shared, position.shared_size),
            (self.local, position.local, position.local_size),
        ):
            if name is None:
                if stream.last() is not None:
                    return False
                continue
            try:
                if (stream.dir / name).stat().st_size != size:
                    return False
            except FileNotFoundError:
                return False
            if stream.path_of(number_of(name) + 1) is not None:
                return False
        return True

    def append(self, tx: Transaction, position: Position, private=None) -> Position:
        """Write the transaction, its private rows (``private(line)`` is true) to the private
        journal first, each patch flushed and fsynced; return the position after it."""
        deletes, adds = (
            lines if isinstance(lines, nquads.Rows) else nquads.Rows(list(lines)) for lines in (tx.deletes, tx.adds)
        )
        if private is None:
            parts = (nquads.Rows([]), nquads.Rows([])), (deletes, adds)
        else:
            (local_deletes, shared_deletes), (local_adds, shared_adds) = deletes.split(private), adds.split(private)
            parts = (local_deletes, local_adds), (shared_deletes, shared_adds)
        # The first transaction of a journal always has a private patch: it says where the sequence
        # starts (as does one that does not follow the last, which no write makes).
        has_local = bool(parts[0][0] or parts[0][1]) or position.local is None or tx.seq != position.seq + 1
        has_shared = bool(parts[1][0] or parts[1][1]) or not has_local
        shared = Patch(new_id(), tx.time, tx.command, *parts[1], prev=position.shared_id) if has_shared else None
        after = replace(position, seq=tx.seq)
        if has_local:
            patch = Patch(
                new_id(),
                tx.time,
                tx.command,
                *parts[0],
                prev=position.local_id,
                seq=tx.seq,
                shared=shared.id if shared else None,
            )
            after.local, after.local_size, after.digest = self.local.write(
                number_of(position.local) + 1, patch, after.digest
            )
            after.local_id = patch.id
        if shared is not None:
            after.shared, after.shared_size, after.digest = self.shared.write(
                number_of(position.shared) + 1, shared, after.digest
            )
            after.shared_id = shared.id
        return after

    def read_after(self, position: Position) -> tuple[list[tuple[Transaction, Position]], list[Torn]]:
        """Every whole transaction after ``position`` with the position after each, and what is torn
        (see :meth:`transactions`), read into one list: for a few transactions, or a check that needs
        them all at once."""
        torn: list[Torn] = []
        return list(self.transactions(position, torn)), torn

    def transactions(
        self, position: Position, torn: list | None = None, adds: bool = True
    ) -> Iterator[tuple[Transaction, Position]]:
        """Every whole transaction after ``position`` (its patches in both journals merged), with the
        position after each, read as they are asked for; once the last is read, what is torn is added
        to ``torn``: a last file that is not a whole patch, or the private patch of the last
        transaction whose shared patch was never written. Without ``adds``, each transaction's rows
        that add are checked but left out: a pass that learns where the journal ends and what it
        deletes reads it in a third of the time.

        A few patch files are held at a time, never the journal: a transaction's bytes are dropped
        once the digest has taken them. Raises Damaged when the journals do not hold ``position``, a
        chain breaks, or a transaction lacks a part.
        """
        if position.seq and position.shared is None and position.local is None:
            raise Damaged("the journal has no record of where the knowledge base is", hint=WAY_OUT)
        local_torn: list[Torn] = []
        shared_torn: list[Torn] = []
        local = _Ahead(
            self.local.entries_after(position.local, position.local_size, position.local_id, local_torn, adds)
        )
        shared = _Ahead(
            self.shared.entries_after(position.shared, position.shared_size, position.shared_id, shared_torn, adds)
        )
        cut: list[Torn] = []
        after = position
        if position.local is None and not position.seq and local.head is not None and local.head.patch.seq:
            after = replace(position, seq=local.head.patch.seq - 1)  # a journal started from the index goes on
        while local.head is not None or shared.head is not None:
            parts = self._parts(after.seq + 1, local, shared, cut)
            if parts is None:
                break
            after = replace(after, seq=after.seq + 1)
            deletes, adds = [], []
            for name, entry in parts:
                deletes += entry.patch.deletes
                adds += entry.patch.adds
                after.digest = entry.chained(after.digest)
                if name == LOCAL:
                    after.local, after.local_size, after.local_id = entry.name, entry.size, entry.patch.id
                else:
                    after.shared, after.shared_size, after.shared_id = entry.name, entry.size, entry.patch.id
            first = parts[0][1].patch
            command = next((e.patch.command for _, e in parts if e.patch.command), "")
            del parts  # the patches' bytes go before the next are read
            yield Transaction(after.seq, command, first.time, deletes, adds), after
        if torn is not None:
            torn += cut + local_torn + shared_torn

    def _parts(self, seq: int, local: _Ahead, shared: _Ahead, cut: list) -> list[tuple[str, Entry]] | None:
        """The patches of transaction ``seq``, taken from the heads of the two journals; None when it
        is the last private patch whose shared patch was never written (it is added to ``cut``)."""
        mine = local.head
        if mine is not None and (mine.patch.seq is None or mine.patch.seq < seq):
            raise Damaged(
                f"journal/{LOCAL}/{mine.name} holds transaction {mine.patch.seq}, expected {seq} or later",
                hint=WAY_OUT,
            )
        if mine is not None and mine.patch.seq == seq:
            local.take()
            if not mine.patch.shared:
                return [(LOCAL, mine)]
            theirs = shared.head
            if theirs is None and local.head is None:
                # Cut short between its two patches: it never happened.
                cut.append(Torn(self.local.dir / mine.name, 0, mine.size))
                return None
            if theirs is None or theirs.patch.id != mine.patch.shared:
                raise Damaged(f"transaction {seq} lacks its patch in journal/{self.replica}", hint=WAY_OUT)
            return [(LOCAL, mine), (self.replica, shared.take())]
        if shared.head is not None:
            return [(self.replica, shared.take())]
        raise Damaged(
            f"transaction {seq} is in neither journal (journal/{LOCAL}/{mine.name} holds transaction {mine.patch.seq})",
            hint=WAY_OUT,
        )

    def set_aside(self, torn: Torn, stamp: str) -> Path:
        """Move a torn file to ``<file>.torn-<time>`` beside it."""
        aside = torn.segment.with_name(f"{torn.segment.name}.torn-{stamp}")
        os.replace(torn.segment, aside)
        fsync_dir(torn.segment.parent)
        return aside


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def last_deletions(transactions) -> dict[str, int]:
    """Each line the transactions delete, with the sequence number of the last that deletes it."""
    deleted: dict[str, int] = {}
    for tx in transactions:
        deleted.update(zip(tx.deletes, repeat(tx.seq)))
    return deleted


def folded(transactions, deleted: dict[str, int] | None = None) -> Iterator[str]:
    """The lines :func:`fold` leaves, one by one, in journal order (a line added twice may come
    twice): a line added after its last deletion, or in the same transaction. ``deleted`` is
    :func:`last_deletions` of the same transactions, taken in an earlier pass over them; given it,
    the transactions are read once more, one at a time, and only the deleted lines are held, so a
    rebuild's memory follows the deletions, not the journal."""
    if deleted is None:
        transactions = list(transactions)
        deleted = last_deletions(transactions)
    for tx in transactions:
        for line in tx.adds:
            if deleted.get(line, -1) <= tx.seq:
                yield line


def fold(transactions) -> set[str]:
    """The quads a sequence of transactions leaves, applied in order (the journal's rebuild)."""
    quads: set[str] = set()
    for tx in transactions:
        quads.difference_update(tx.deletes)
        quads.update(tx.adds)
    return quads
