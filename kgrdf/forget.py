"""Forgetting: a person on request (``kg forget``) and person facts past retention (``kg expire``), §8.

A deletion here removes records from the history, not just from the current data. What names the
person is decided on each journal row's decoded terms by :class:`kgrdf.privacy.People`, the matcher
that routed it to the private journal, which is rewritten: every record of a fact that names them,
the rows of their entity, and another entity's alias, weak alias or summary naming them are
dropped; another entity's name that names them is replaced by its id (an entity keeps a name); a
patch left with no rows becomes a placeholder that keeps its id, prev, sequence number and time, so
the private journal stays a whole patch log and the sequence and the ids minted from it never go
back. The shared journal is never rewritten (it may have been copied to other replicas): a deletion
that would need it is refused before anything is touched.

The steps, in order. The first writes ``purging.json`` (what to drop: fact IRIs, digests of other
rows, the rows replacing names, keyed hashes; never a name), and any command that finds it finishes
the rest, so a deletion cut short at any step is completed by the next command:

1. leftovers are deleted, whatever they hold: torn tails, ``*.tmp`` files, ``batch.json``, journals
   moved aside (``journal.aside*``), the derived ``cache/``;
2. the private journal is rewritten into ``journal/local.new/`` (a patch it leaves as it was is a
   hard link to the same file), fsynced, then swapped in;
3. the forgotten person's identifiers are removed from ``identifiers.jsonl``;
4. the record (a keyed hash of the id and the counts) is appended to ``forgotten.jsonl``;
5. the index is rebuilt in a new folder (a store keeps deleted bytes in its files until compaction);
6. ``view.json`` takes the journal's new position;
7. the git history is restarted (old commits would still hold the records);
8. ``purging.json`` is removed.

Then a forget checks every file of the folder with the same matcher, and fails (exit 3, naming the
files) rather than say it is done while one still names the person.
"""

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kgrdf import clock, files, identifiers, privacy, vcs, vocab
from kgrdf.errors import Damaged, Refused
from kgrdf.journal import LOCAL, Patch, Stream, fsync_dir, parse_patch

from kgrdf.kb import PURGING as MARKER


def digest(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


@dataclass
class Plan:
    """What a deletion drops, as ``purging.json`` holds it."""

    graphs: set[str] = field(default_factory=set)  # facts (IRIs) whose every record goes
    lines: set[str] = field(default_factory=set)  # digests of other rows that go (a person's entity rows)
    identifiers: list[str] = field(default_factory=list)  # keyed hashes of entity ids whose identifiers go
    record: dict | None = None  # what forgotten.jsonl keeps of a forget
    renames: dict[str, str] = field(default_factory=dict)  # digest of a row -> the row that replaces it
    redacted: set[str] = field(default_factory=set)  # facts (IRIs) whose naming rows alone go or change

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

    def as_json(self) -> dict:
        return {"graphs": sorted(self.graphs), "lines": sorted(self.lines), "identifiers": self.identifiers,
                "record": self.record, "renames": self.renames, "redacted": sorted(self.redacted)}

    @classmethod
    def from_json(cls, data: dict) -> "Plan":
        return cls(set(data["graphs"]), set(data["lines"]), list(data["identifiers"]), data.get("record"),
                   dict(data.get("renames") or {}), set(data.get("redacted") or ()))


def _rows(stream: Stream):
    """(file, row text) of every A and D row of a journal folder."""
    for path in stream.files():
        for row in path.read_text(encoding="utf-8", errors="replace").split("\n"):
            if row.startswith(("A ", "D ")) and row.endswith(" ."):
                yield path, row[2:-2]


@dataclass
class Target:
    """The person a forget is for, and how a row is judged to name them: ``pattern`` finds the rows
    that may (a word of each of their names and tokens), and ``everyone`` (the matcher of every
    person of the perspective) decides, so that a longer name of another person that holds one of
    theirs ("Sam Lee" and the alias "Sam") names the other person, as it does when a write routes."""

    iri: str
    pattern: object
    everyone: privacy.People

    def in_row(self, quad) -> bool:
        """Whether a row names the person. Another person's own names are theirs, even a name the
        two share: a row of their entity's description never names this person."""
        subject = quad.subject.value
        if subject != self.iri and subject in self.everyone.iris and privacy.is_entities_graph(quad.graph_name.value):
            return False
        return self.iri in self.everyone.in_row(quad)

    def in_text(self, text: str) -> bool:
        return self.iri in self.everyone.in_text(text)


def target(entity, values: list[str], label_rows=(), entries=(), base: str = "") -> Target:
    """What names a person: their IRI, id, name, aliases, weak aliases and identifiers' values,
    judged beside the names of everyone else (``label_rows`` of person-labels.rq, identifier
    ``entries``)."""
    names = [entity.name, *entity.aliases, *entity.weak_aliases]
    own = privacy.People()
    own.add_person(entity.iri, entity.id, names, values)
    everyone = privacy.people_of(label_rows, entries, base)
    everyone.add_person(entity.iri, entity.id, names, values)
    return Target(entity.iri, own.candidates(), everyone)


def _quad(row: str):
    """A journal row (N-Quads without the final dot) as its decoded terms; None if it is not one."""
    from pyoxigraph import RdfFormat, parse

    try:
        return next(iter(parse(input=(row + " .\n").encode("utf-8"), format=RdfFormat.N_QUADS)), None)
    except (SyntaxError, ValueError):
        return None


def named_rows(text: str, person: Target):
    """(row, quad) of every A and D row of a journal's text that names ``person``, decided on the
    row's decoded terms (a newline in a literal is a backslash and an n in the row's text). A cheap
    pattern over the folded text finds the rows that may; only those are parsed."""
    rows = text.split("\n")
    pattern = person.pattern
    if pattern is None:
        numbers = range(len(rows))
    else:
        folded = privacy.fold(text)  # folding keeps every newline where it is, so rows line up
        numbers, at, line = [], 0, 0
        for match in pattern.finditer(folded):
            line += folded.count("\n", at, match.start())
            at = match.start()
            if not numbers or numbers[-1] != line:
                numbers.append(line)
    for number in numbers:
        row = rows[number]
        if row.startswith(("A ", "D ")) and row.endswith(" ."):
            quad = _quad(row[2:-2])
            if quad is not None and person.in_row(quad):
                yield row[2:-2], quad


def naming(kb, person: Target) -> Plan:
    """Every record that names a person (see :class:`kgrdf.privacy.People`): every row of a fact
    whose subject, object, speaker or any text names them, their entity's rows, and the rows of
    other entities whose aliases or summary name them. Another entity's name that names them is
    replaced by its id, so that the entity keeps a name and nothing else of it changes."""
    from pyoxigraph import Literal, Quad

    entities_graph = vocab.entities_graph(kb.perspective).value
    base = vocab.perspective_base(kb.perspective)  # another perspective's records are its own
    plan = Plan()
    naming_rows: dict[str, list] = {}  # fact IRI -> its rows that name the person
    for stream in (kb.journal.local, kb.journal.shared):  # one search over each journal's rows
        for row, quad in named_rows(stream.text(), person):
            graph = quad.graph_name.value
            if not graph.startswith(base):
                continue
            if graph != entities_graph:
                plan.graphs.add(privacy.fact_of(graph))
                naming_rows.setdefault(privacy.fact_of(graph), []).append((row, quad))
            elif quad.subject.value != person.iri and quad.predicate.value in privacy.NAME_PROPERTIES:
                plan.renames[digest(row)] = str(Quad(quad.subject, quad.predicate,
                                                     Literal(vocab.id_of(quad.subject.value)), quad.graph_name))
            else:
                plan.lines.add(digest(row))
    _redact_shared_facts(kb, plan, naming_rows)
    return plan


FORGOTTEN_TEXT = "[forgotten]"


def _redact_shared_facts(kb, plan: Plan, naming_rows: dict[str, list]) -> None:
    """A fact first heard where it may be shared, and named the person only later (a hearing of
    theirs, a reason, a source), keeps its shared records: the rows that name them, which went to
    the private journal, are taken out instead of the fact: a row naming them by IRI (a speaker)
    goes, and a text naming them becomes "[forgotten]". A fact whose naming rows are shared is
    left whole in the plan, and refuse_if_shared refuses it."""
    from pyoxigraph import Literal, Quad

    shared = set()
    for _path, quad in _rows(kb.journal.shared):
        graph = privacy.graph_of(quad)
        if not privacy.is_entities_graph(graph) and privacy.fact_of(graph) in plan.graphs:
            shared.add(privacy.fact_of(graph))
    for fact in shared:
        rows = naming_rows[fact]
        if any(quad.graph_name.value == fact for _row, quad in rows):
            continue  # the fact's own triple names them: it goes whole, or is refused
        plan.graphs.discard(fact)
        plan.redacted.add(fact)
        for row, quad in rows:
            if isinstance(quad.object, Literal) and quad.subject.value not in plan.graphs:
                plan.renames[digest(row)] = str(Quad(quad.subject, quad.predicate, Literal(FORGOTTEN_TEXT),
                                                     quad.graph_name))
            else:
                plan.lines.add(digest(row))


def refuse_if_shared(kb, plan: Plan, what: str) -> None:
    """A deletion that would need the shared journal rewritten is refused, naming what holds it."""
    facts, entities, rows = set(), set(), 0
    for _path, quad in _rows(kb.journal.shared):
        if plan.drops(quad):
            rows += 1
            graph = privacy.graph_of(quad)
            if privacy.is_entities_graph(graph):
                entities.add(quad[1:quad.index(">")])
            else:
                facts.add(vocab.id_of(privacy.fact_of(graph)))
    if rows:
        held = ", ".join(sorted(facts)[:8]) + (" ..." if len(facts) > 8 else "")
        names = f"{len(facts)} fact{'s' if len(facts) != 1 else ''} ({held})" if facts else ""
        if entities:
            names += (" and " if names else "") + f"the names of {len(entities)} entit{'ies' if len(entities) != 1 else 'y'}"
        raise Refused(f"{what} is refused: the shared journal (journal/{kb.replica}) holds {rows} record"
                      f"{'s' if rows != 1 else ''} of it: {names}; the shared journal is never rewritten",
                      hint="it may have been copied to other replicas; nothing was changed")


def start(kb, plan: Plan) -> dict:
    """Record the plan and carry it out (the caller holds the exclusive lock, no index open)."""
    files.write_json(kb.path / MARKER, plan.as_json())
    return finish(kb)


def finish(kb) -> dict:
    """Carry out the plan in ``purging.json`` from wherever it stands; return the counts."""
    plan = Plan.from_json(json.loads((kb.path / MARKER).read_text(encoding="utf-8")))
    leftovers = _delete_leftovers(kb)
    counts = _rewrite_private_journal(kb, plan)
    counts["leftovers"] = leftovers
    counts["identifiers"] = _drop_identifiers(kb, plan)
    if plan.record is not None and not any(r.get("id") == plan.record["id"] for r in privacy.forgotten(kb)):
        privacy.append_forgotten(kb, {**plan.record, **{k: counts[k] for k in ("records", "placeholders")}})
    kb.rebuild_index()
    _restart_history(kb)
    (kb.path / MARKER).unlink()
    fsync_dir(kb.path)
    return counts


def _rewrite_private_journal(kb, plan: Plan) -> dict:
    """Rewrite journal/local/ without the plan's rows, into local.new/, then swap it in. A patch the
    plan leaves as it was is a hard link to its file; one left with no rows becomes a placeholder."""
    folder = kb.path / "journal"
    local, new, old = folder / LOCAL, folder / (LOCAL + ".new"), folder / (LOCAL + ".old")
    if new.exists() and not local.exists():
        os.replace(new, local)  # cut short between the two renames
    shutil.rmtree(new, ignore_errors=True)  # an unfinished copy
    shutil.rmtree(old, ignore_errors=True)
    counts = {"records": 0, "placeholders": 0}
    stream = Stream(local)
    rewritten: dict[Path, bytes] = {}
    kept: list[Path] = []
    for path in stream.files():
        data = path.read_bytes()
        patch = parse_patch(data, f"journal/{LOCAL}/{path.parent.name}/{path.name}")
        if patch is None:
            continue  # a torn tail: a leftover, dropped with the rest
        kept.append(path)
        dropped = sum(1 for q in (*patch.deletes, *patch.adds) if plan.drops(q))
        if not dropped:
            continue
        counts["records"] += dropped
        deletes = [row for row in map(plan.rewrite, patch.deletes) if row is not None]
        adds = [row for row in map(plan.rewrite, patch.adds) if row is not None]
        if not deletes and not adds:
            counts["placeholders"] += 1
            patch = Patch(patch.id, patch.time, "", [], [], patch.prev, patch.seq, patch.shared, placeholder=True)
        else:
            patch = Patch(patch.id, patch.time, patch.command, deletes, adds, patch.prev, patch.seq, patch.shared,
                          patch.placeholder)
        rewritten[path] = patch.encode()
    if not counts["records"]:
        return counts  # nothing of it named them (a rewrite finished before a cut)
    files.new_folder(new)
    folders = set()
    for path in kept:
        target = new / path.parent.name / path.name
        if path.parent.name not in folders:
            target.parent.mkdir(mode=0o700)
            folders.add(path.parent.name)
        if path in rewritten:
            with files.create(target) as out:
                out.write(rewritten[path])
                out.flush()
                os.fsync(out.fileno())
        else:
            try:
                os.link(path, target)  # the same bytes, already on disk
            except OSError:
                with files.create(target) as out:
                    out.write(path.read_bytes())
                    out.flush()
                    os.fsync(out.fileno())
    for name in folders:
        fsync_dir(new / name)
    fsync_dir(new)
    os.replace(local, old)
    os.replace(new, local)
    fsync_dir(folder)
    shutil.rmtree(old)
    return counts


def _delete_leftovers(kb) -> int:
    """What writes cut short and earlier ways out left, whatever it holds."""
    found = [p for p in (kb.path / "journal").rglob("*.torn-*")]
    found += [p for p in kb.path.glob("*.tmp")]
    found += [p for p in (kb.path / "journal").glob("*.tmp")]
    found += [kb.path / name for name in ("batch.json",) if (kb.path / name).exists()]
    found += [p for p in kb.path.glob("journal.aside*")]
    found += [kb.path / "cache"] if (kb.path / "cache").exists() else []  # derived: names for kg mentions
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
    kept = [e for e in entries if key.digest(e["entity"]) not in plan.identifiers]
    if len(kept) != len(entries):
        identifiers.write(kb, kept)
    return len(entries) - len(kept)


def _restart_history(kb) -> None:
    """Old commits hold the dropped records: the history starts again from the files as they are."""
    if not (kb.path / ".git").exists() or not vcs.available():
        return
    shutil.rmtree(kb.path / ".git")
    vcs.init(kb.path)
    vcs.commit(kb.path, "kg: the history starts again here (records were deleted on request or past retention)")
    (kb.path / "uncommitted").unlink(missing_ok=True)


# --- the two deletions ---------------------------------------------------------------------------

def forget(kb, text: str, dry_run: bool = False) -> dict:
    """Forget a person or an actor: see the module's description. Returns the counts."""
    from kgrdf import lock
    from kgrdf.session import Session

    with lock.held(kb.path / "lock", exclusive=True):
        with kb.up_to_date() as backend:
            session = Session(kb, backend)
            entity = session.resolve(text)
            label_rows = session.rows("person-labels", entities=vocab.entities_graph(kb.perspective))
        if entity.type not in privacy.PERSON_TYPES:
            raise Refused(f"{entity.id} is a {entity.type}: kg forget is for people and actors",
                          hint="retract a fact with kg reject or kg supersede")
        key = privacy.key(kb)
        hashed = key.digest(entity.id)  # refuses when keyed records need a key that is not there
        entries = identifiers.read(kb)
        values = [e["value"] for e in entries if e["entity"] == entity.id]
        person = target(entity, values, label_rows, entries, vocab.perspective_base(kb.perspective))
        plan = naming(kb, person)
        plan.identifiers = [hashed] if values else []
        refuse_if_shared(kb, plan, f"forgetting {entity.id}")
        plan.record = {"id": str(uuid.uuid4()), "hash": hashed, "hash_kind": privacy.HMAC,
                       "forgotten_at": clock.iso(clock.now())[:10], "facts": len(plan.graphs),
                       "identifiers": len(values)}
        result = {"entity": entity.id, "facts": len(plan.graphs), "redacted": len(plan.redacted),
                  "identifiers": len(values), "dry_run": dry_run}
        if dry_run:
            return result
        counts = start(kb, plan)
        left = remaining(kb, person)
        if left:
            plural = len(left) != 1
            raise Damaged(f"{entity.id} was forgotten from what kgrdf keeps, but {len(left)} file"
                          f"{'s' if plural else ''} of the knowledge base still name{'' if plural else 's'} them: "
                          f"{', '.join(left[:5])}{' ...' if len(left) > 5 else ''}",
                          hint="kgrdf did not write them that way: take the name out of them or remove them")
        counts["remaining"] = left
    return {**result, **counts}


def purge_facts(kb, graphs: list[str], what: str) -> dict:
    """Delete these facts from the data, the private journal and the history (kg expire's
    retention). The caller holds no lock."""
    from kgrdf import lock

    with lock.held(kb.path / "lock", exclusive=True):
        with kb.up_to_date():
            pass  # a deletion or a write cut short is finished first
        plan = Plan(graphs=set(graphs))
        refuse_if_shared(kb, plan, what)
        return start(kb, plan)


def remaining(kb, person: Target) -> list[str]:
    """The files of the knowledge base folder that still name ``person``, by the matcher
    that chose what to drop: journal rows of this perspective by their decoded terms, JSON files by
    their strings, any other file by its text. The index and git are rebuilt from these files."""
    base = vocab.perspective_base(kb.perspective)
    found = []
    for root, dirs, files in os.walk(kb.path):
        dirs[:] = sorted(d for d in dirs if not (root == str(kb.path) and d in (".git", "index")))
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                text = open(path, "rb").read().decode("utf-8", errors="replace")
            except OSError:
                continue
            if name.endswith(".rdfp"):
                named = any(quad.graph_name.value.startswith(base) for _row, quad in named_rows(text, person))
            else:
                named = any(person.in_text(piece) for piece in _texts(text))
            if named:
                found.append(os.path.relpath(path, kb.path))
    return found


def _texts(text: str):
    """The strings of a JSON document or of JSON lines, else the text itself."""
    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for key, item in value.items():
                yield key
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)

    try:
        yield from strings(json.loads(text))
        return
    except ValueError:
        pass
    try:
        values = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        yield text
        return
    for value in values:
        yield from strings(value)
