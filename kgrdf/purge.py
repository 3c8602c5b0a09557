"""A deletion from the history (SPEC §8): the plan of what goes, and the steps that carry it out.

:mod:`kgrdf.forget` decides what a forget or a retention deletion drops; this module records that
plan in ``purging.json`` and carries it out, so that the knowledge base can finish a deletion cut
short before anything else runs, without knowing how people are matched. A patch left with no rows
becomes a placeholder that keeps its id, prev, sequence number and time, so the private journal stays
a whole patch log and the sequence and the ids minted from it never go back. The shared journal is
never rewritten (it may have been copied to other replicas): a deletion that would need it is
refused before anything is touched.

The steps, in order. The first writes ``purging.json`` (what to drop: fact IRIs, digests of other
rows, the rows replacing names, keyed hashes; never a name), and any command that finds it finishes
the rest, so a deletion cut short at any step is completed by the next command:

1. leftovers are deleted, whatever they hold: torn tails, ``*.tmp`` files, every perspective's saved
   batch (``batch.json``, ``batch-<perspective>.json``), journals moved aside (``journal.aside*``),
   the derived ``cache/``, an old index (``index.old/``);
2. the private journal is rewritten into ``journal/local.new/`` (a patch it leaves as it was is a
   hard link to the same file), fsynced, then swapped in;
3. the forgotten person's identifiers are removed from ``identifiers.jsonl``, and the tokens named
   after them, speaking as them or reading for a conversation of theirs from ``tokens.json``;
4. the record (a keyed hash of the id and the counts) is appended to ``forgotten.jsonl``;
5. ``view.json`` takes the journal's new position, and the old index is moved to ``index.old/``;
6. the index is rebuilt in a new folder: deleting quads in place would not do, since Oxigraph keeps
   every string it has held (its id2str table is never cleaned, compaction or not); while the store
   loads, ``index.old/`` is removed and the git history is restarted (old commits would still hold
   the records);
7. ``purging.json`` is removed.
"""

import hashlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from kgrdf import files, identifiers, model, privacy, tokenfile, vcs, vocab
from kgrdf.errors import Damaged, Refused
from kgrdf.journal import LOCAL, Patch, Stream, fsync_dir, packed

MARKER = files.PURGING


def digest(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


@dataclass
class Plan:
    """What a deletion drops, as ``purging.json`` holds it."""

    graphs: set[str] = field(default_factory=set)  # facts (IRIs) whose every record goes
    lines: set[str] = field(default_factory=set)  # digests of other rows that go (a person's entity rows)
    identifiers: list[str] = field(
        default_factory=list
    )  # keyed hashes of the owners (identifiers.owner) whose identifiers go
    record: dict | None = None  # what forgotten.jsonl keeps of a forget
    renames: dict[str, str] = field(default_factory=dict)  # digest of a row -> the row that replaces it
    redacted: set[str] = field(default_factory=set)  # facts (IRIs) whose naming rows alone go or change
    tokens: list[str] = field(default_factory=list)  # digests of the tokens that go (kgrdf.tokenfile.drop)

    def rewrite(self, quad: str) -> str | None:
        """The row as it stays: itself, its replacement, or None when it goes."""
        graph = privacy.graph_of(quad)
        fact = None if privacy.is_entities_graph(graph) else privacy.fact_of(graph)
        if fact is None or fact in self.redacted:
            key = digest(quad)
            return None if key in self.lines else self.renames.get(key, quad)
        return None if fact in self.graphs else quad

    def drops(self, quad: str) -> bool:
        return self.rewrite(quad) != quad

    def endings(self) -> tuple[str, ...] | None:
        """The ends of the rows (N-Quads without the final dot) the plan may drop or change (see
        :func:`endings`): a row with none of them stays as it is."""
        return endings(self.graphs | self.redacted)

    def as_json(self) -> dict:
        return {
            "graphs": sorted(self.graphs),
            "lines": sorted(self.lines),
            "identifiers": self.identifiers,
            "record": self.record,
            "renames": self.renames,
            "redacted": sorted(self.redacted),
            "tokens": self.tokens,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Plan":
        """The plan as purging.json holds it; TypeError for one that holds what as_json never writes."""

        def texts(value) -> bool:
            return isinstance(value, list) and all(isinstance(item, str) for item in value)

        written = (
            all(texts(data[key]) for key in ("graphs", "lines", "identifiers"))
            and all(texts(data.get(key) or []) for key in ("redacted", "tokens"))
            and isinstance(data.get("record") or {}, dict)
            and isinstance(data.get("renames") or {}, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in (data.get("renames") or {}).items())
        )
        if not written:
            raise TypeError("not as kg forget writes it")
        return cls(
            set(data["graphs"]),
            set(data["lines"]),
            list(data["identifiers"]),
            data.get("record"),
            dict(data.get("renames") or {}),
            set(data.get("redacted") or ()),
            list(data.get("tokens") or ()),
        )


PIECE_CHARS = 1 << 24  # characters of journal text searched at a time (whole patch files)


@dataclass
class JournalText:
    """Some whole patches of a journal, read for the searches of a deletion: their text, its lines,
    each file's size and modification time as read (what a later check compares to tell that a file
    has not changed since), and how many rows of it name the person (set by the search for them)."""

    text: str
    lines: list[str]
    stats: dict[str, tuple[int, int]]
    named: int = 0


def journal_pieces(stream: Stream, chars: int | None = None) -> Iterator[JournalText]:
    """A journal's patches read in pieces of about ``chars`` (PIECE_CHARS) characters of whole
    files, one piece at a time: a deletion searches a journal of GBs without holding it."""
    chars = chars or PIECE_CHARS
    stats, parts, size = {}, [], 0
    for path in stream.files():
        info = path.stat()
        stats[str(path)] = (info.st_size, info.st_mtime_ns)
        parts.append(stream.patch_bytes(path).decode("utf-8", errors="replace"))
        size += len(parts[-1])
        if size >= chars:
            yield _piece(parts, stats)
            stats, parts, size = {}, [], 0
    if parts:
        yield _piece(parts, stats)


def _piece(parts: list[str], stats: dict) -> JournalText:
    text = "".join(parts)
    return JournalText(text, text.split("\n"), stats)


def endings(facts: set[str], tail: str = "") -> tuple[str, ...] | None:
    """The ends (then ``tail``) of the rows a plan over these facts may drop or change: those of an
    entity graph, and of each fact's assertion and provenance graphs. A row ends with its graph, so
    for a few facts a test of each row's end (one C call a row) finds them; None for many, whose
    rows' graphs are then looked up."""
    if len(facts) > 64:
        return None
    return (
        f"/entities>{tail}",
        *(f" <{g}>{tail}" for g in facts),
        *(f" <{g}{privacy.PROVENANCE}>{tail}" for g in facts),
    )


def rows_in(lines: list[str], graphs: set[str]) -> list[str]:
    """The A and D rows (as N-Quads, without their letter and final dot) among ``lines`` that a plan
    over these facts may drop or change: the rows of their assertion and provenance graphs, and the
    rows of an entity graph (:func:`endings`)."""
    ends = endings(graphs, " .")
    if ends is not None:
        return [line[2:-2] for line in lines if line.endswith(ends) and line.startswith(("A ", "D "))]
    return [
        line[2:-2]
        for line in lines
        if line.startswith(("A ", "D "))
        and line.endswith(" .")
        and (line.endswith("/entities> .") or privacy.fact_of(privacy.graph_of(line[2:-2])) in graphs)
    ]


def held_rows(lines: list[str], facts: set[str], plan: Plan) -> list[str]:
    """The rows among ``lines`` of these facts, and the entity rows the plan drops (see :func:`rows_in`)."""
    return [
        row for row in rows_in(lines, facts) if not privacy.is_entities_graph(privacy.graph_of(row)) or plan.drops(row)
    ]


def shared_rows(stream: Stream, plan: Plan, facts: set[str] | None = None) -> list[str]:
    """The rows of a journal that a deletion over the plan's facts (or over ``facts``) may drop or
    change: every row of those facts, and the entity rows the plan drops; read a piece at a time."""
    facts = plan.graphs | plan.redacted if facts is None else facts
    return [row for piece in journal_pieces(stream) for row in held_rows(piece.lines, facts, plan)]


def refuse_if_shared(kb, plan: Plan, what: str, rows: list[str] | None = None) -> None:
    """A deletion that would need the shared journal rewritten is refused, naming what holds it.
    ``rows`` are the shared journal's rows the plan may drop (:func:`shared_rows`), if found already."""
    if rows is None:
        rows = shared_rows(kb.journal.shared, plan)
    facts, told, entities, dropped = set(), set(), set(), 0
    for quad in rows:
        if plan.drops(quad):
            dropped += 1
            graph = privacy.graph_of(quad)
            if privacy.is_entities_graph(graph):
                entities.add(quad[1 : quad.index(">")])
            elif model.is_disclosure(quad[1 : quad.index(">")]):  # a record of telling the fact, not the fact
                told.add(vocab.id_of(privacy.fact_of(graph)))
            else:
                facts.add(vocab.id_of(privacy.fact_of(graph)))
    if dropped:
        held = ", ".join(sorted(facts)[:8]) + (" ..." if len(facts) > 8 else "")
        names = f"{len(facts)} fact{'s' if len(facts) != 1 else ''} ({held})" if facts else ""
        if told:
            names += (" and " if names else "") + (
                f"disclosures of {', '.join(sorted(told)[:8])}{' ...' if len(told) > 8 else ''} (kg disclosures "
                "shows them: a message, audience or teller naming them)"
            )
        if entities:
            ids = sorted(vocab.id_of(iri) for iri in entities)
            names += (" and " if names else "") + f"the names of {', '.join(ids[:8])}{' ...' if len(ids) > 8 else ''}"
        raise Refused(
            f"{what} is refused: the shared journal (journal/{kb.replica}) holds {dropped} record"
            f"{'s' if dropped != 1 else ''} of it: {names}; the shared journal is never rewritten",
            hint="it may have been copied to other replicas; nothing was changed",
        )


def refuse_where_it_cannot_finish(kb) -> None:
    """Refuse a deletion, before anything is written, that a step of it would refuse halfway: the
    git history kept out of the folder, or a link at the record it appends to (forgotten.jsonl)."""
    _refuse_history_elsewhere(kb)
    record = kb.path / privacy.FORGOTTEN
    if record.is_symlink():
        raise Damaged(
            f"{record.name} is a symbolic link: kgrdf never writes through one, and a deletion appends to it",
            hint=f"remove the link ({record}) and restore the file it replaced; nothing was changed",
        )


def start(kb, plan: Plan, beside=None, say: bool = True) -> dict:
    """Record the plan and carry it out (the caller holds the exclusive lock, no index open);
    ``beside()`` runs at the end, while the rebuilt index compacts, every other file as it is left.
    Refused, before anything is written, when the git history is kept out of the folder."""
    refuse_where_it_cannot_finish(kb)
    files.write_json(kb.path / MARKER, plan.as_json())
    return finish(kb, beside, say)


def finish(kb, beside=None, say: bool = True) -> dict:
    """Carry out the plan in ``purging.json`` from wherever it stands; return the counts, with
    "index_left" the servers that did not answer, which keep an old index holding what went (said
    on stderr unless not ``say``: kg forget says them in its own refusal). ``beside()``: as
    :func:`start` says."""
    plan = files.read_marker(kb.path / MARKER, ("graphs", "lines", "identifiers"), "a forget", Plan.from_json)
    leftovers = _delete_leftovers(kb)
    kb.note("rewriting the private journal without what goes ...")
    counts = _rewrite_private_journal(kb, plan)
    counts["leftovers"] = leftovers
    counts["identifiers"] = _drop_identifiers(kb, plan)
    if plan.tokens:
        counts["tokens"] = tokenfile.drop(kb.path, plan.tokens)
    if plan.record is not None and not any(r.get("id") == plan.record["id"] for r in privacy.forgotten(kb)):
        privacy.append_forgotten(kb, {**plan.record, **{k: counts[k] for k in ("records", "placeholders")}})
    kb.rebuild_index(beside=lambda: _restart_history(kb), compacting=beside)  # git waits on the disk
    counts["index_left"] = kb.clear_indexes_left(say)
    (kb.path / MARKER).unlink()
    fsync_dir(kb.path)
    return counts


def _rewrite_private_journal(kb, plan: Plan) -> dict:
    """Rewrite journal/local/ without the plan's rows, into local.new/, then swap it in. A patch the
    plan leaves as it was is a hard link to its file; one left with no rows becomes a placeholder.
    Each patch is read, rewritten and written before the next is read."""
    folder = kb.path / "journal"
    local, new, old = folder / LOCAL, folder / (LOCAL + ".new"), folder / (LOCAL + ".old")
    if new.exists() and not local.exists():
        os.replace(new, local)  # cut short between the two renames
    shutil.rmtree(new, ignore_errors=True)  # an unfinished copy
    shutil.rmtree(old, ignore_errors=True)
    counts = {"records": 0, "placeholders": 0}
    files.new_folder(new)
    folders = set()
    stream = Stream(local)
    ends = plan.endings()
    for path in stream.files():
        patch, _data, _size = stream.read(path)
        if patch is None:
            continue  # a torn tail: a leftover, dropped with the rest
        target = new / path.parent.name / path.name
        if path.parent.name not in folders:
            target.parent.mkdir(mode=0o700)
            folders.add(path.parent.name)
        rewritten = _without(patch, plan, counts, ends)
        if rewritten is not None:
            _write_file(target, packed(path.name, rewritten.encode()))
            continue
        try:
            os.link(path, target)  # the same bytes, already on disk
        except OSError:
            _write_file(target, path.read_bytes())
    if not counts["records"]:
        shutil.rmtree(new)
        return counts  # nothing of it named them (a rewrite finished before a cut)
    for name in folders:
        fsync_dir(new / name)
    fsync_dir(new)
    os.replace(local, old)
    os.replace(new, local)
    fsync_dir(folder)
    shutil.rmtree(old)
    return counts


def _without(patch: Patch, plan: Plan, counts: dict, ends: tuple[str, ...] | None) -> Patch | None:
    """The patch without the plan's rows (a placeholder when none is left), None when it keeps them
    all; ``counts`` takes the rows dropped or changed and the placeholders made. Only the rows with
    one of the ``ends`` (:meth:`Plan.endings`; every row, for None) are asked of the plan."""
    deletes, dropped = _rewritten(patch.deletes, plan, ends)
    adds, dropped_adds = _rewritten(patch.adds, plan, ends)
    if not dropped + dropped_adds:
        return None
    counts["records"] += dropped + dropped_adds
    if not deletes and not adds:
        counts["placeholders"] += 1
        return Patch(patch.id, patch.time, "", [], [], patch.prev, patch.seq, patch.shared, placeholder=True)
    return replace(patch, deletes=deletes, adds=adds)


def _rewritten(rows: list[str], plan: Plan, ends: tuple[str, ...] | None) -> tuple[list[str], int]:
    """The rows as the plan leaves them, and how many it dropped or changed (see :func:`_without`)."""
    kept, changed = [], 0
    for row in rows:
        if ends is None or row.endswith(ends):
            after = plan.rewrite(row)
            changed += after != row
            if after is None:
                continue
            row = after
        kept.append(row)
    return kept, changed


def _write_file(target: Path, data: bytes) -> None:
    with files.create(target) as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def _delete_leftovers(kb) -> int:
    """What writes cut short and earlier ways out left, whatever it holds."""
    found = [p for p in (kb.path / "journal").rglob("*.torn-*")]
    found += [p for p in kb.path.glob("*.tmp")]
    found += [p for p in (kb.path / "journal").glob("*.tmp")]
    found += [p for pattern in files.BATCHES for p in kb.path.glob(pattern)]  # every perspective's
    found += [p for p in kb.path.glob("journal.aside*")]
    found += [p for p in kb.path.glob(".git.aside*")]  # a history moved aside holds every record
    found += [kb.path / "cache"] if (kb.path / "cache").exists() else []  # derived: names for kg mentions
    found += [kb.path / "index.old"] if (kb.path / "index.old").exists() else []  # a rebuild cut short
    for path in found:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    return len(found)


def _drop_identifiers(kb, plan: Plan) -> int:
    if not plan.identifiers:
        return 0
    key = privacy.key(kb, make=False)
    entries = identifiers.read(kb)
    going = set(plan.identifiers)  # each a person's (their owner) or one entry's (naming them: entry_key)
    kept = [
        e
        for e in entries
        if key.digest(identifiers.owner(e)) not in going and key.digest(identifiers.entry_key(e)) not in going
    ]
    if len(kept) != len(entries):
        identifiers.write(kb, kept)
    return len(entries) - len(kept)


def _refuse_history_elsewhere(kb) -> None:
    """A ``.git`` that is a link (or a file pointing to a git folder elsewhere) holds the history out
    of the folder, where a deletion would leave the old commits, and every record they hold, as they
    are."""
    git = kb.path / ".git"
    if not git.is_symlink() and (git.is_dir() or not git.exists()):
        return
    if git.is_symlink():
        where, hint = f"a link to {os.readlink(git)}", f"rm {git} && mv {os.readlink(git)} {git}"
    else:
        where, hint = "a file naming a git folder elsewhere", f"git -C {kb.path} rev-parse --git-dir shows it"
    raise Refused(
        f"the git history, {git}, is {where}: a deletion starts the history again in the folder, and "
        "could not delete the old one kept out of it",
        hint=f"move the history into the folder first ({hint}), and run this again",
    )


def _restart_history(kb) -> None:
    """Old commits hold the dropped records: the history starts again from the files as they are
    (made again where a deletion cut short had removed it). Without git, the old history goes all
    the same, and the next commit, with git, starts the new one."""
    if (kb.path / ".git").exists():
        vcs.stop_housekeeping(kb.path)
        shutil.rmtree(kb.path / ".git")
    if not vcs.available():
        return
    vcs.init(kb.path)
    vcs.commit(kb.path, "kg: the history starts again here (records were deleted on request or past retention)")
    (kb.path / "uncommitted").unlink(missing_ok=True)
