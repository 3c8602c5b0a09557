"""Bringing a knowledge base of an older format up to this one, on open, under the write lock.

Format 1 kept each journal as segment files of several transactions one after another, and a
transaction with rows for both journals as two blocks with the same id, each ``H prev`` naming the
transaction before it whichever journal that was in (so the shared journal named private ones) and
each naming the journals it spanned (``H streams "local r-..."``). Format 2 (see
:mod:`kgrdf.journal`) keeps each journal an RDF Patch log of its own, one patch a file.

The migration reads the format 1 journals as format 1 did (a torn tail, or a private block whose
shared block was never written, is set aside), writes the same transactions, in the same order and
with the same sequence numbers, times, commands and rows, as format 2 patches into ``journal.v2/``,
and fsyncs it. A shared block keeps its id; a private block of a transaction that also has a shared
one gets an id of its own. Then, in order:

1. ``migrating.json`` is written: the position ``view.json`` will take. From here on the migration
   is carried forward by whatever opens the knowledge base next; before it, a migration cut short
   is started again from the untouched format 1 files (``journal.v2/`` is made anew);
2. ``journal/`` is renamed ``journal.v1/`` and ``journal.v2/`` becomes ``journal/``;
3. ``view.json`` takes the new position (the index, whose digest no longer matches, is rebuilt by
   the next command), ``format.json`` the new format;
4. ``journal.v1/`` and ``migrating.json`` are removed and the change is committed to git.

So a migration killed at any point leaves the old files whole or the new ones, never a mix.

Format 3 gzips each patch file (``.rdfp.gz``). A format 2 folder is brought to it by ``format.json``
alone (steps 1, 3 and 4, with no journal built): its plain ``.rdfp`` files are read as they are, the
digests chained over them stay, and the patches written from then on are gzipped. A format 1 folder
is built straight into gzipped files.
"""

import json
import os
import re
import shutil
import sys
from pathlib import Path

from kgrdf import files, journal, vcs
from kgrdf.errors import Damaged
from kgrdf.journal import LOCAL, Patch, Position, Stream, chain, fsync_dir, new_id

MARKER = "migrating.json"
BUILDING = "journal.v2"
OLD = "journal.v1"
_V1_SEGMENT = re.compile(r"^([0-9]{10})\.rdfp\Z")
_V1_HEADER = re.compile(r'^H (\w+) (?:<([^>]*)>|"((?:[^"\\]|\\.)*)") \.\Z')


def under_way(path: Path) -> bool:
    """Whether a migration passed its commit point and was cut short before it finished."""
    return (path / MARKER).exists()


def migrate(kb) -> None:
    """Bring the knowledge base ``kb`` to the current format (see the module's description)."""
    from kgrdf import lock

    with lock.held(kb.path / "lock", exclusive=True):
        settings = files.read_json(kb.path / "format.json")
        if not under_way(kb.path):
            if settings.get("format", journal.FORMAT) >= journal.FORMAT:
                return  # another process migrated it while this one waited for the lock
            view = build(kb) if settings.get("format") == 1 else None  # format 2's files stay as they are
            files.write_json(kb.path / MARKER, {"format": journal.FORMAT, "view": view and view.as_dict()})
            fsync_dir(kb.path)
        carry_forward(kb, settings)


def _as_written(marker: dict) -> dict:
    """The marker as step 1 writes it (the format this kgrdf migrates to, and a journal position or
    none), else TypeError: one holding another number would be written into format.json."""
    view = marker["view"]
    if isinstance(marker["format"], bool) or marker["format"] != journal.FORMAT:
        raise TypeError("not the format this kgrdf migrates to")
    if view is not None and not (
        isinstance(view, dict)
        and set(view) == set(Position.__dataclass_fields__)
        and isinstance(view["seq"], int)
        and not isinstance(view["seq"], bool)
        and isinstance(view["digest"], str)
    ):
        raise TypeError("not a journal position")
    return marker


def carry_forward(kb, settings: dict) -> None:
    """Steps 2 to 4: each done again or skipped as the files show, so a cut anywhere is finished."""
    marker = files.read_marker(kb.path / MARKER, ("format", "view"), "a migration to a newer layout", _as_written)
    (kb.path / vcs.UNCOMMITTED).touch()
    building, current, old = kb.path / BUILDING, kb.path / "journal", kb.path / OLD
    if building.exists() and marker["view"] is None:
        shutil.rmtree(building)  # nothing was built: the journal stays as it is (gone)
    elif building.exists():
        if current.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(current, old)
        os.replace(building, current)
        fsync_dir(kb.path)
    if marker["view"] is not None:
        files.write_json(kb.path / "view.json", {"replica": kb.replica, **marker["view"]})
    files.write_json(kb.path / "format.json", {**settings, "format": marker["format"]})
    shutil.rmtree(old, ignore_errors=True)
    (kb.path / MARKER).unlink()
    fsync_dir(kb.path)
    print(
        f"kg: the knowledge base is now in format {marker['format']}: each journal an RDF Patch log of its "
        f"own, one gzipped patch a file",
        file=sys.stderr,
    )
    kb.git_commit(f"kg: the journal in format {marker['format']} (each journal an RDF Patch log of its own)")


# --- format 1 -> format 2 ------------------------------------------------------------------------


def build(kb) -> Position | None:
    """Write the format 1 journals' transactions as format 2 into journal.v2/ (fsynced); return the
    position view.json takes: the same transaction as before, with the new files and digest."""
    folder = kb.path / "journal"
    building = kb.path / BUILDING
    shutil.rmtree(building, ignore_errors=True)
    view = files.read_json(kb.path / "view.json")
    transactions, torn = read_v1(folder, kb.replica)
    building.mkdir(mode=0o700)
    if not transactions and not torn:
        return None  # no journal (moved aside): view.json stays, and the next write starts a new one
    shared, local = Stream(building / kb.replica), Stream(building / LOCAL)
    position, at_view = Position(), Position()
    for seq, parts in transactions:
        position = replace_position(position, seq)
        private_block, shared_block = parts.get(LOCAL), parts.get("shared")
        shared_patch = None
        if shared_block is not None:
            shared_patch = Patch(
                shared_block["id"],
                shared_block["time"],
                shared_block["command"],
                shared_block["deletes"],
                shared_block["adds"],
                prev=position.shared_id,
            )
        if private_block is None and position.local is None:
            private_block = {**shared_block, "deletes": [], "adds": [], "placeholder": False}  # where it starts
        if private_block is not None:
            own_id = private_block["id"] if shared_patch is None else new_id()
            patch = Patch(
                own_id,
                private_block["time"],
                private_block["command"],
                private_block["deletes"],
                private_block["adds"],
                prev=position.local_id,
                seq=seq,
                shared=shared_patch.id if shared_patch else None,
                placeholder=private_block["placeholder"],
            )
            position.local, position.local_size, data = _write(local, journal.number_of(position.local) + 1, patch)
            position.local_id = patch.id
            position.digest = chain(position.digest, data)
        if shared_patch is not None:
            position.shared, position.shared_size, data = _write(
                shared, journal.number_of(position.shared) + 1, shared_patch
            )
            position.shared_id = shared_patch.id
            position.digest = chain(position.digest, data)
        if seq == view.get("seq"):
            at_view = replace_position(position, seq)
    for stream_name, name, data in torn:
        target = building / stream_name / name
        target.parent.mkdir(mode=0o700, exist_ok=True)
        with files.create(target) as out:
            out.write(data)
        if not (folder / stream_name / name).exists():  # not one set aside before
            print(f"kg: set aside a torn journal tail of {len(data)} bytes as {stream_name}/{name}", file=sys.stderr)
    os.sync()  # every file written above, at once
    if view.get("seq") and at_view.seq != view["seq"]:
        shutil.rmtree(building)
        raise Damaged(
            f"view.json is at transaction {view['seq']}, which the journal does not hold", hint=journal.WAY_OUT
        )
    return at_view


def _write(stream: Stream, number: int, patch: Patch):
    """A patch file without its own fsync (build syncs them all at once, where Stream.write syncs
    each): its name, size and patch bytes."""
    data = patch.encode()
    name = journal.name_of(number)
    raw = journal.packed(name, data)
    path = stream.dir / name
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with files.create(path) as out:
        out.write(raw)
    return name, len(raw), data


def replace_position(position: Position, seq: int) -> Position:
    return Position(**{**position.as_dict(), "seq": seq})


def read_v1(folder: Path, replica: str):
    """The format 1 journals' whole transactions as (seq, {"local": block, "shared": block}) in order,
    and what is torn or set aside there as (journal folder, file name, bytes). Raises Damaged when they
    do not parse."""
    local_dir = folder / LOCAL
    if not local_dir.exists() and (folder / (LOCAL + ".new")).exists():
        local_dir = folder / (LOCAL + ".new")  # a forget cut short between its two renames
    torn = []
    by_seq: dict[int, dict] = {}
    last_torn: dict[str, tuple] = {}
    for key, name, path in ((LOCAL, LOCAL, local_dir), ("shared", replica, folder / replica)):
        if not path.is_dir():
            continue
        for aside in sorted(path.glob("*.torn-*")):
            torn.append((name, aside.name, aside.read_bytes()))
        for segment in sorted(p for p in path.iterdir() if _V1_SEGMENT.match(p.name)):
            data = segment.read_bytes()
            for block, start in _v1_blocks(data, segment):
                if block is None:
                    last_torn[key] = (name, segment.name, data[start:])
                    break
                by_seq.setdefault(block["seq"], {})[key] = block
    seqs = sorted(by_seq)
    out = []
    for seq in seqs:
        parts = by_seq[seq]
        streams = next(iter(parts.values()))["streams"] or ()
        wanted = {LOCAL if s == LOCAL else "shared" for s in streams} or set(parts)
        missing = wanted - set(parts)
        if missing:
            if missing == {"shared"} and seq == seqs[-1]:
                block = parts[LOCAL]  # cut short between its two blocks: it never happened
                torn.append((LOCAL, f"v1-{seq:010d}.rdfp", block["bytes"]))
                break
            raise Damaged(f"transaction {seq} lacks its block in journal/{sorted(missing)[0]}", hint=journal.WAY_OUT)
        out.append((seq, parts))
    for name, segment, data in last_torn.values():
        torn.append((name, segment, data))
    stamp = _stamp()
    return out, [(name, file if ".torn-" in file else f"{file}.torn-{stamp}", data) for name, file, data in torn]


def _stamp() -> str:
    from kgrdf import clock

    return clock.iso(clock.now()).replace(":", "")


def _v1_blocks(data: bytes, path: Path):
    """(block, start) of each format 1 block; (None, start) for a torn tail."""
    pos, size = 0, len(data)
    while pos < size:
        start = pos
        headers: dict[str, str] = {}
        deletes: list[str] = []
        adds: list[str] = []
        body = False
        while True:
            newline = data.find(b"\n", pos)
            if newline < 0:
                yield None, start
                return
            line = data[pos:newline].decode("utf-8", errors="replace")
            pos = newline + 1
            if not body:
                if line.startswith("H "):
                    match = _V1_HEADER.match(line)
                    if not match:
                        raise Damaged(
                            f"{path.name}: unreadable header row at byte {start}: {line[:60]!r}", hint=journal.WAY_OUT
                        )
                    headers[match.group(1)] = match.group(2) if match.group(2) is not None else match.group(3)
                elif line == "TX .":
                    body = True
                elif line == "":
                    continue
                else:
                    raise Damaged(f"{path.name}: unexpected row at byte {start}: {line[:60]!r}", hint=journal.WAY_OUT)
            elif line.startswith("A "):
                adds.append(line[2:-2])
            elif line.startswith("D "):
                deletes.append(line[2:-2])
            elif line == "TC .":
                break
            elif line == "TA .":
                deletes, adds = [], []
                break
            else:
                raise Damaged(
                    f"{path.name}: unexpected row in transaction at byte {start}: {line[:60]!r}", hint=journal.WAY_OUT
                )
        try:
            block = {
                "seq": int(headers["seq"]),
                "id": headers["id"],
                "time": headers.get("time", ""),
                "command": json.loads(f'"{headers.get("command", "")}"'),
                "deletes": deletes,
                "adds": adds,
                "streams": tuple(headers.get("streams", "").split()),
                "placeholder": "placeholder" in headers,
                "bytes": data[start:pos],
            }
        except (KeyError, ValueError):
            raise Damaged(
                f"{path.name}: transaction at byte {start} lacks its id or sequence number", hint=journal.WAY_OUT
            ) from None
        yield block, start
