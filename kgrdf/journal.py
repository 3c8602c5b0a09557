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

(RDF Patch: https://jena.apache.org/documentation/rdf-patch/.) There are two journals (§5, §8):
``journal/local/``, private, never leaves the machine, for every change that names a person or holds
the user's own words; and ``journal/<replica>/``, this replica's, which may be shared. A transaction
with lines for both is written as two blocks with the same id and sequence number, the private one
first; each names the journals it spans (``H streams "local r-1a2b3c4d"``). One sequence number runs
across both, so ids minted from (replica, sequence) never repeat. A journal is a folder of segment
files named by the sequence number of their first transaction, so that a write touches one small
file whatever the size of the knowledge base. Every block is written, flushed and fsynced before it
is applied to the index. Positions are chained by a digest (sha256 over the previous digest and each
block's bytes, the private block first), which ``view.json`` and the index record.

A forgotten person's changes in the private journal are dropped; a block left with no rows is kept
as a placeholder (its id, sequence number and time, and ``H placeholder "forgotten"``), so the
sequence never goes back.
"""

import hashlib
import json
import os
import re
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kgrdf import files
from kgrdf.errors import Damaged

SEGMENT_BYTES = 4 * 1024 * 1024
LOCAL = "local"  # the private journal's folder
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
    streams: tuple[str, ...] = ()  # the journals holding a part of it, the private one first
    placeholder: bool = False  # what is left of a block whose rows were all forgotten

    def encode(self) -> bytes:
        rows = [f"H id <{self.tx_id}> ."]
        if self.prev:
            rows.append(f"H prev <{self.prev}> .")
        rows += [f'H seq "{self.seq}" .', f'H time "{self.time}" .']
        if self.streams:
            rows.append(f'H streams "{" ".join(self.streams)}" .')
        if self.placeholder:
            rows.append('H placeholder "forgotten" .')
        else:
            rows.append(f"H command {json.dumps(self.command)} .")
        rows.append("TX .")
        rows += [f"D {line} ." for line in self.deletes]
        rows += [f"A {line} ." for line in self.adds]
        rows.append("TC .")
        return ("\n".join(rows) + "\n").encode("utf-8")

    def part(self, deletes: list[str], adds: list[str], streams: tuple[str, ...]) -> "Transaction":
        """This transaction's block for one journal: the same id, sequence number and time."""
        return Transaction(self.seq, self.command, self.time, deletes, adds, self.tx_id, self.prev, streams)


@dataclass
class Position:
    """Where the journals end: the last transaction, each journal's segment and byte offset (the
    replica's, then the private one's), and the chained digest."""

    seq: int = 0
    segment: str | None = None
    offset: int = 0
    tx_id: str | None = None
    digest: str = ""
    local_segment: str | None = None
    local_offset: int = 0

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Position":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def ends(self) -> tuple:
        """Comparable with :meth:`Journal.end_offset`."""
        return (self.segment, self.offset), (self.local_segment, self.local_offset)


def chain(digest: str, block: bytes) -> str:
    return hashlib.sha256(digest.encode("ascii") + block).hexdigest()


@dataclass
class Torn:
    """Bytes at the end of a segment that do not form a whole transaction (or a private block
    whose shared block was never written)."""

    segment: Path
    offset: int
    size: int


@dataclass
class Block:
    tx: Transaction
    data: bytes
    segment: str
    start: int
    end: int


class Stream:
    """The segment files of one journal folder: append blocks, read them back from an offset."""

    def __init__(self, folder: Path):
        self.dir = folder

    def segments(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return sorted(p for p in self.dir.iterdir() if _SEGMENT.match(p.name))

    def end_offset(self) -> tuple[str | None, int]:
        """The last segment's name and size: a stat, no parsing."""
        segments = self.segments()
        if not segments:
            return None, 0
        return segments[-1].name, segments[-1].stat().st_size

    def append(self, tx: Transaction) -> tuple[str, int, bytes]:
        """Write the block, flush and fsync it; return its segment, the offset after it, its bytes."""
        block = tx.encode()
        segments = self.segments()
        path = segments[-1] if segments else None
        new = path is None or (path.stat().st_size + len(block) > SEGMENT_BYTES and path.stat().st_size > 0)
        if new:
            path = self.dir / f"{tx.seq:010d}.rdfp"
        self.dir.mkdir(parents=True, exist_ok=True)
        with files.appending(path) as out:
            start = out.seek(0, os.SEEK_END)
            out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if new:
            fsync_dir(self.dir)
        return path.name, start + len(block), block

    def blocks_after(self, segment: str | None, offset: int) -> tuple[list[Block], Torn | None]:
        """Every whole block after (segment, offset), and a torn tail. Raises Damaged when the
        folder does not hold that place."""
        segments = self.segments()
        names = [p.name for p in segments]
        if segment is None:
            start_index, offset = 0, 0
        elif segment not in names:
            raise Damaged(f"journal segment {self.dir.name}/{segment} is missing: the journal is behind view.json",
                          hint=WAY_OUT)
        else:
            start_index = names.index(segment)
        out, torn = [], None
        for index in range(start_index, len(segments)):
            data = segments[index].read_bytes()
            begin = offset if index == start_index else 0
            if len(data) < begin:
                raise Damaged(f"journal segment {self.dir.name}/{segments[index].name} is shorter than "
                              f"view.json says", hint=WAY_OUT)
            for tx, start, end in parse_blocks(data, begin, segments[index]):
                if tx is None:
                    torn = Torn(segments[index], start, len(data) - start)
                    break
                out.append(Block(tx, data[start:end], segments[index].name, start, end))
        return out, torn


class Journal:
    """This replica's journal and the private one, read and written as one sequence."""

    def __init__(self, folder: Path, replica: str):
        self.folder = folder
        self.replica = replica
        self.shared = Stream(folder / replica)
        self.local = Stream(folder / LOCAL)

    def segments(self) -> list[Path]:
        return self.local.segments() + self.shared.segments()

    def end_offset(self) -> tuple:
        """Where each journal's files end (comparable with :meth:`Position.ends`)."""
        return self.shared.end_offset(), self.local.end_offset()

    def append(self, tx: Transaction, position: Position, private=None) -> Position:
        """Write the transaction, its private lines (``private(line)`` is true) to the private
        journal first, each block flushed and fsynced; return the position after it."""
        parts = ([], []), ([], [])
        for index, lines in enumerate((tx.deletes, tx.adds)):
            for line in lines:
                parts[0 if private is not None and private(line) else 1][index].append(line)
        streams = tuple(name for name, (deletes, adds) in zip((LOCAL, self.replica), parts) if deletes or adds)
        streams = streams or (self.replica,)
        after = Position(seq=tx.seq, tx_id=tx.tx_id, digest=position.digest,
                         segment=position.segment, offset=position.offset,
                         local_segment=position.local_segment, local_offset=position.local_offset)
        if LOCAL in streams:
            after.local_segment, after.local_offset, block = self.local.append(tx.part(*parts[0], streams))
            after.digest = chain(after.digest, block)
        if self.replica in streams:
            after.segment, after.offset, block = self.shared.append(tx.part(*parts[1], streams))
            after.digest = chain(after.digest, block)
        return after

    def read_after(self, position: Position) -> tuple[list[tuple[Transaction, Position]], list[Torn]]:
        """Every whole transaction after ``position`` (its blocks in both journals merged), with the
        position after each, and what is torn: a tail that is not a whole block, or the private block
        of the last transaction whose shared block was never written.

        Raises Damaged when the journals do not hold ``position`` or a transaction lacks a part.
        """
        if position.seq and position.segment is None and position.local_segment is None:
            raise Damaged("the journal has no record of where the knowledge base is", hint=WAY_OUT)
        local, local_torn = self.local.blocks_after(position.local_segment, position.local_offset)
        shared, shared_torn = self.shared.blocks_after(position.segment, position.offset)
        torn = [t for t in (local_torn, shared_torn) if t is not None]
        by_seq: dict[int, dict[str, Block]] = {}
        for name, blocks in ((LOCAL, local), (self.replica, shared)):
            for block in blocks:
                by_seq.setdefault(block.tx.seq, {})[name] = block
        out, after = [], position
        seqs = sorted(by_seq)
        for seq in seqs:
            parts = by_seq[seq]
            streams = next(iter(parts.values())).tx.streams or tuple(parts)
            missing = [name for name in streams if name not in parts and name in (LOCAL, self.replica)]
            if missing:
                if missing == [self.replica] and seq == seqs[-1]:
                    block = parts[LOCAL]  # cut short between its two blocks: it never happened
                    torn = [t for t in torn if t is not local_torn]
                    torn.insert(0, Torn(self.local.dir / block.segment, block.start,
                                        (self.local.dir / block.segment).stat().st_size - block.start))
                    break
                raise Damaged(f"transaction {seq} lacks its block in journal/{missing[0]}", hint=WAY_OUT)
            after = Position(seq=seq, tx_id=None, digest=after.digest, segment=after.segment, offset=after.offset,
                             local_segment=after.local_segment, local_offset=after.local_offset)
            deletes, adds, first = [], [], None
            for name in (LOCAL, self.replica):
                block = parts.get(name)
                if block is None:
                    continue
                first = first or block.tx
                deletes += block.tx.deletes
                adds += block.tx.adds
                after.digest = chain(after.digest, block.data)
                if name == LOCAL:
                    after.local_segment, after.local_offset = block.segment, block.end
                else:
                    after.segment, after.offset = block.segment, block.end
            after.tx_id = first.tx_id
            command = next((b.tx.command for b in parts.values() if b.tx.command), "")
            out.append((Transaction(seq, command, first.time, deletes, adds, first.tx_id, first.prev,
                                    first.streams), after))
        return out, torn

    @staticmethod
    def set_aside(torn: Torn, stamp: str) -> Path:
        """Move a torn tail to ``<segment>.torn-<time>`` and cut it from the segment (a segment
        left empty is removed)."""
        aside = torn.segment.with_name(f"{torn.segment.name}.torn-{stamp}")
        with open(torn.segment, "rb") as src, files.create(aside) as out:
            src.seek(torn.offset)
            out.write(src.read())
        if torn.offset == 0:
            torn.segment.unlink()
            fsync_dir(torn.segment.parent)
            return aside
        with open(torn.segment, "r+b") as seg:
            seg.truncate(torn.offset)
            seg.flush()
            os.fsync(seg.fileno())
        return aside


WAY_OUT = ("move journal/ aside (mv journal journal.aside); the next write starts a new journal "
            "from the current data as a new replica")


def parse_blocks(data: bytes, begin: int, path: Path):
    """Yield (transaction, start offset, end offset) from ``begin``; (None, start, size) for a torn tail."""
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
                yield None, start, size
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
                             tx_id=headers["id"], prev=headers.get("prev"),
                             streams=tuple(headers.get("streams", "").split()),
                             placeholder="placeholder" in headers)
        except (KeyError, ValueError):
            raise Damaged(f"{path.name}: transaction at byte {start} lacks its id or sequence number",
                          hint=WAY_OUT) from None
        yield tx, start, pos


def fsync_dir(path: Path) -> None:
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
