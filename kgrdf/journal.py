"""The journal: the knowledge base's source of truth, append-only, in RDF Patch form.

One transaction per command. Each is a block of header rows, then ``TX``, the quads it deletes
(``D``) and adds (``A``) as N-Quads, then ``TC``::

    H id <urn:uuid:...> .
    H prev <urn:uuid:...> .
    H seq "12" .
    H time "2026-03-01T09:30:00Z" .
    H command "propose" .
    TX .
    D <s> <p> <o> <g> .
    A <s> <p> <o> <g> .
    TC .

(RDF Patch: https://jena.apache.org/documentation/rdf-patch/.) A replica writes under
``journal/<replica>/`` in segment files named by the sequence number of their first transaction,
so that a write touches one small file whatever the size of the knowledge base. A block is written,
flushed and fsynced before it is applied to the index. Positions are chained by a digest
(sha256 over the previous digest and the block's bytes), which ``view.json`` and the index record.
"""

import hashlib
import json
import os
import re
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kgrdf.errors import Damaged

SEGMENT_BYTES = 4 * 1024 * 1024
_SEGMENT = re.compile(r"^(\d{10})\.rdfp$")
_HEADER = re.compile(r'^H (\w+) (?:<([^>]*)>|"((?:[^"\\]|\\.)*)") \.$')


@dataclass
class Transaction:
    """One command's change: the quads it deletes, then the quads it adds (N-Quads lines)."""

    seq: int
    command: str
    time: str
    deletes: list[str] = field(default_factory=list)
    adds: list[str] = field(default_factory=list)
    tx_id: str = field(default_factory=lambda: f"urn:uuid:{uuid.uuid4()}")
    prev: str | None = None

    def encode(self) -> bytes:
        rows = [f"H id <{self.tx_id}> ."]
        if self.prev:
            rows.append(f"H prev <{self.prev}> .")
        rows += [
            f'H seq "{self.seq}" .',
            f'H time "{self.time}" .',
            f"H command {json.dumps(self.command)} .",
            "TX .",
        ]
        rows += [f"D {line} ." for line in self.deletes]
        rows += [f"A {line} ." for line in self.adds]
        rows.append("TC .")
        return ("\n".join(rows) + "\n").encode("utf-8")


@dataclass
class Position:
    """Where the journal ends: the last transaction, its segment and byte offset, the chained digest."""

    seq: int = 0
    segment: str | None = None
    offset: int = 0
    tx_id: str | None = None
    digest: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Position":
        return cls(**{k: data.get(k) for k in ("seq", "segment", "offset", "tx_id", "digest")
                      if k in data})


def chain(digest: str, block: bytes) -> str:
    return hashlib.sha256(digest.encode("ascii") + block).hexdigest()


@dataclass
class Torn:
    """Bytes at the end of a segment that do not form a whole transaction."""

    segment: Path
    offset: int
    size: int


class Journal:
    """The segment files of one replica: append, and read back from a position."""

    def __init__(self, folder: Path, replica: str):
        self.folder = folder
        self.replica = replica
        self.dir = folder / replica

    def segments(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return sorted(p for p in self.dir.iterdir() if _SEGMENT.match(p.name))

    def append(self, tx: Transaction, position: Position) -> Position:
        """Write the block, flush and fsync it, and return the position after it."""
        block = tx.encode()
        segments = self.segments()
        path = segments[-1] if segments else None
        if path is None or path.stat().st_size + len(block) > SEGMENT_BYTES and path.stat().st_size:
            path = self.dir / f"{tx.seq:010d}.rdfp"
            new = True
        else:
            new = False
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as out:
            start = out.tell()
            out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if new:
            _fsync_dir(self.dir)
        return Position(seq=tx.seq, segment=path.name, offset=start + len(block), tx_id=tx.tx_id,
                        digest=chain(position.digest, block))

    def end_offset(self) -> tuple[str | None, int]:
        """The last segment's name and size: a stat, no parsing."""
        segments = self.segments()
        if not segments:
            return None, 0
        return segments[-1].name, segments[-1].stat().st_size

    def read_after(self, position: Position) -> tuple[list[tuple[Transaction, Position]], Torn | None]:
        """Every whole transaction after ``position``, with the position after each, and a torn tail.

        Raises Damaged when the journal does not hold ``position`` (a segment lost or cut short).
        """
        segments = self.segments()
        names = [p.name for p in segments]
        if position.segment is None:
            if position.seq:
                raise Damaged("the journal has no record of where the knowledge base is",
                              hint=WAY_OUT)
            start_index, offset = 0, 0
        else:
            if position.segment not in names:
                raise Damaged(f"journal segment {position.segment} is missing: the journal is behind view.json",
                              hint=WAY_OUT)
            start_index, offset = names.index(position.segment), position.offset
        out, digest, torn = [], position.digest, None
        for index in range(start_index, len(segments)):
            data = segments[index].read_bytes()
            begin = offset if index == start_index else 0
            if len(data) < begin:
                raise Damaged(f"journal segment {segments[index].name} is shorter than view.json says",
                              hint=WAY_OUT)
            for tx, block, end in _parse(data, begin, segments[index]):
                if tx is None:
                    torn = Torn(segments[index], end, len(data) - end)
                    break
                digest = chain(digest, block)
                out.append((tx, Position(tx.seq, segments[index].name, end, tx.tx_id, digest)))
        return out, torn

    def set_aside(self, torn: Torn, stamp: str) -> Path:
        """Move a torn tail to ``<segment>.torn-<time>`` and cut it from the segment."""
        aside = torn.segment.with_name(f"{torn.segment.name}.torn-{stamp}")
        with open(torn.segment, "rb") as src:
            src.seek(torn.offset)
            aside.write_bytes(src.read())
        with open(torn.segment, "r+b") as seg:
            seg.truncate(torn.offset)
            seg.flush()
            os.fsync(seg.fileno())
        return aside


WAY_OUT = ("move journal/ aside (mv journal journal.aside); the next write starts a new journal "
            "from the current data as a new replica")


def _parse(data: bytes, begin: int, path: Path):
    """Yield (transaction, its bytes, end offset) from ``begin``; (None, b"", start) for a torn tail."""
    pos = begin
    size = len(data)
    while pos < size:
        start = pos
        headers: dict[str, str] = {}
        deletes: list[str] = []
        adds: list[str] = []
        state = "header"
        while True:
            newline = data.find(b"\n", pos)
            if newline < 0:
                yield None, b"", start
                return
            line = data[pos:newline].decode("utf-8", errors="replace")
            pos = newline + 1
            if state == "header":
                if line.startswith("H "):
                    match = _HEADER.match(line)
                    if not match:
                        raise Damaged(f"{path.name}: unreadable header row at byte {start}: {line[:60]!r}",
                                      hint=WAY_OUT)
                    headers[match.group(1)] = match.group(2) if match.group(2) is not None else match.group(3)
                elif line == "TX .":
                    state = "body"
                elif line == "":
                    continue
                else:
                    raise Damaged(f"{path.name}: unexpected row at byte {start}: {line[:60]!r}",
                                  hint=WAY_OUT)
            else:
                if line.startswith("A "):
                    adds.append(line[2:-2])
                elif line.startswith("D "):
                    deletes.append(line[2:-2])
                elif line == "TC .":
                    break
                elif line == "TA .":
                    deletes, adds = [], []
                    break
                else:
                    raise Damaged(f"{path.name}: unexpected row in transaction at byte {start}: {line[:60]!r}",
                                  hint=WAY_OUT)
        try:
            tx = Transaction(seq=int(headers["seq"]), command=json.loads(f'"{headers.get("command", "")}"'),
                             time=headers.get("time", ""), deletes=deletes, adds=adds,
                             tx_id=headers["id"], prev=headers.get("prev"))
        except (KeyError, ValueError):
            raise Damaged(f"{path.name}: transaction at byte {start} lacks its id or sequence number",
                          hint=WAY_OUT) from None
        yield tx, data[start:pos], pos


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fold(transactions) -> set[str]:
    """The quads a sequence of transactions leaves, applied in order (the journal's rebuild)."""
    quads: set[str] = set()
    for tx in transactions:
        quads.difference_update(tx.deletes)
        quads.update(tx.adds)
    return quads
