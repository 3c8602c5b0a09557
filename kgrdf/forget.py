"""Forgetting: a person on request (``kg forget``) and person facts past retention (``kg expire``), §8.

A deletion here removes records from the history, not just from the current data. What names the
person is decided on each journal row's decoded terms by :class:`kgrdf.privacy.People`, the matcher
that routed it to the private journal, which is rewritten: every record of a fact that names them,
the rows of their entity, and another entity's alias, weak alias or summary naming them are
dropped; another entity's name that names them is replaced by its id (an entity keeps a name). How
the plan is recorded and carried out, so that a deletion cut short is finished by the next command,
is :mod:`kgrdf.purge`.

Then a forget checks every file of the folder with the same matcher (while the index is rebuilt,
the folder otherwise as it is left), and fails (exit 3, naming the files) rather than say it is done
while one still names the person.
"""

import json
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kgrdf import clock, identifiers, made, model, pasted, privacy, sync, tokens, vocab
from kgrdf.errors import Damaged, Refused
from kgrdf.journal import unpacked
from kgrdf.purge import (
    MARKER,
    Plan,
    digest,
    held_rows,
    journal_pieces,
    refuse_if_shared,
    refuse_where_it_cannot_finish,
    rows_in,
    shared_rows,
    start,
)


@dataclass
class Target:
    """The person a forget is for, and how a row is judged to name them: ``own`` (their matcher
    alone) gives the words that find the rows that may, and ``everyone`` (the matcher of every
    person of the perspective) decides, so that a longer name of another person that holds one of
    theirs ("Sam Lee" and the alias "Sam") names the other person, as it does when a write routes."""

    iri: str
    own: privacy.People
    everyone: privacy.People
    chosen: tuple | None = field(default=None, repr=False)  # the words, once chosen
    names: tuple[str, ...] = ()  # their name and former names, which another entity's id may spell (privacy.id_spells)

    def words(self, sample: str) -> list[str] | None:
        """The words that find every row that may name them (``own.candidate_words``), chosen on the
        first ``sample`` and kept: any choice finds them all (a name holds each of its words), and
        choosing counts each word over the sample, which a search of a journal of GBs, piece by
        piece, would do for every piece."""
        if self.chosen is None:
            self.chosen = (self.own.candidate_words(sample=sample),)
        return self.chosen[0]

    def in_row(self, quad) -> bool:
        """Whether a row names the person. Another person's own names are theirs, even a name the
        two share: a row of their entity's description never names this person."""
        subject = quad.subject.value
        entities = privacy.is_entities_graph(quad.graph_name.value)
        if subject != self.iri and subject in self.everyone.iris and entities:
            return False
        if entities and subject != self.iri and quad.predicate.value == vocab.IDENTIFIER.value:
            # Another entity's id that spells their name (organization/sam-reyes): the id is in every
            # record of it, so a forget that finds it in the shared journal is refused.
            return any(privacy.id_spells(quad.object.value, name) for name in self.names)
        return self.iri in self.everyone.in_row(quad)

    def in_text(self, text: str) -> bool:
        return self.iri in self.everyone.in_text(text)


def target(entity, values: list[str], label_rows=(), entries=(), base: str = "", former=()) -> Target:
    """What names a person: their IRI, id, name, aliases, weak aliases and identifiers' values, and
    the ``former`` names and aliases they went by (:func:`former_names`: (text, whether it was their
    name)) that nobody else goes by now, judged beside the names of everyone else (``label_rows`` of
    person-labels.rq, identifier ``entries``)."""
    everyone = privacy.people_of(label_rows, entries, base)
    names = [entity.name, *entity.aliases, *entity.weak_aliases]
    names += [name for name, _was_name in former if not everyone.holders(name) - {entity.iri}]
    own = privacy.People()
    own.add_person(entity.iri, entity.id, names, values)
    everyone.add_person(entity.iri, entity.id, names, values)
    return Target(entity.iri, own, everyone, names=(entity.name, *(name for name, was_name in former if was_name)))


_NAMES_OF_ENTITY = frozenset({vocab.PREF_LABEL.value, vocab.ALT_LABEL.value, vocab.WEAK_ALIAS.value})


def former_names(kb, iri: str) -> list[tuple[str, bool]]:
    """The names, aliases and weak aliases the person ``iri`` went by and was renamed from, each
    with whether it was their name: a rename deletes the old name's row, and the private journal,
    where a person's description is kept, holds that deletion. A fact written while they went by the
    old name may name them by it, and an entity's id made then may spell it."""
    entities_graph = vocab.entities_graph(kb.perspective).value
    needle = f"D <{iri}> "
    found = needle.encode("utf-8")
    names: dict[str, bool] = {}
    stream = kb.journal.local
    for path in stream.files():
        data = stream.patch_bytes(path)
        if found not in data:  # most patches: searched as bytes, never decoded
            continue
        text, start = data.decode("utf-8", errors="replace"), 0
        while (start := text.find(needle, start)) >= 0:
            end = text.find("\n", start)
            row = text[start : end if end >= 0 else len(text)]
            at_line_start = start == 0 or text[start - 1] == "\n"
            start += len(needle)
            if at_line_start and row.endswith(" ."):
                quad = _quad(row[2:-2])
                if (
                    quad is not None
                    and quad.predicate.value in _NAMES_OF_ENTITY
                    and quad.graph_name.value == entities_graph
                ):
                    was_name = quad.predicate.value == vocab.PREF_LABEL.value
                    names[quad.object.value] = names.get(quad.object.value, False) or was_name
    return list(names.items())


def _quad(row: str):
    """A journal row (N-Quads without the final dot) as its decoded terms; None if it is not one."""
    from pyoxigraph import RdfFormat, parse

    try:
        return next(iter(parse(input=(row + " .\n").encode("utf-8"), format=RdfFormat.N_QUADS)), None)
    except (SyntaxError, ValueError):
        return None


SAMPLE = 1 << 24  # characters of a journal's text that tell which word of a name is rarest


def named_rows(text: str, person: Target, rows: list[str] | None = None):
    """(row, quad) of every A and D row of a journal's text that names ``person``, decided on the
    row's decoded terms (a newline in a literal is a backslash and an n in the row's text). A search
    for each of the person's words over the folded text finds the rows that may (one literal at a
    time: the regular expression engine finds a literal fast, and an alternation slowly); only those
    are parsed. ``rows`` is the text split at newlines, when the caller has it."""
    if rows is None:
        rows = text.split("\n")
    folded = privacy.fold(text)  # folding keeps every newline where it is, so rows line up
    words = person.words(folded[:SAMPLE])
    if words is None:
        numbers = range(len(rows))
    else:
        found = sorted({m.start() for word in words for m in re.finditer(re.escape(word), folded)})
        numbers, at, line = [], 0, 0
        for start in found:
            line += folded.count("\n", at, start)
            at = start
            if not numbers or numbers[-1] != line:
                numbers.append(line)
    for number in numbers:
        row = rows[number]
        if row.startswith(("A ", "D ")) and row.endswith(" ."):
            quad = _quad(row[2:-2])
            if quad is not None and person.in_row(quad):
                yield row[2:-2], quad


@dataclass
class Search:
    """What the search of the shared journal found besides the plan: how many of its rows name the
    person, and each of its files' size and modification time as read."""

    named: int = 0
    stats: dict[str, tuple[int, int]] = field(default_factory=dict)
    elsewhere: set[str] = field(default_factory=set)  # the other perspectives whose rows name them
    rows: list[str] = field(default_factory=list)  # its rows the plan may drop (purge.shared_rows)
    others: set[str] = field(default_factory=set)  # other entities whose name, alias or summary names them
    held_by: set[str] = field(default_factory=set)  # the perspectives of elsewhere where the person is an entity
    shared_elsewhere: set[str] = field(default_factory=set)  # those of elsewhere whose shared journal names them
    labels: set[tuple[str, str]] = field(default_factory=set)  # (entity IRI, text) of other entities' names going


def naming(kb, person: Target, search: Search | None = None) -> Plan:
    """Every record that names a person (see :class:`kgrdf.privacy.People`): every row of a fact
    whose subject, object, speaker or any text names them, their entity's rows, and the rows of
    other entities whose aliases or summary name them. Another entity's name that names them is
    replaced by its id, so that the entity keeps a name and nothing else of it changes. A
    disclosure that names them (told to a conversation of theirs, in a message naming them) goes
    whole, every row of it, and the fact it told stays unless something else of it names them. Each
    journal is searched a piece at a time; ``search`` takes what the shared journal's showed."""
    from pyoxigraph import Literal, Quad

    entities_graph = vocab.entities_graph(kb.perspective).value
    base = vocab.perspective_base(kb.perspective)  # another perspective's records are its own
    search = search if search is not None else Search()
    plan = Plan()
    naming_rows: dict[str, list] = {}  # fact IRI -> its rows that name the person
    told: dict[str, set[str]] = {}  # fact IRI -> its disclosures that name the person
    known: set[str] = set()  # the facts the private journal named, as the shared one is read
    held: list[str] = []  # the shared journal's rows of those facts, and its entity rows that go
    journal = kb.journal  # (a new Journal each time it is asked for)
    successors: dict[str, set[str]] = {}  # fact IRI -> the facts it replaced, as the journals end
    renamed: dict[tuple[str, str], dict[str, Quad]] = {}  # (entity, graph) -> its name rows that name them
    for stream in (journal.local, journal.shared):
        shared = stream is journal.shared
        if shared:
            known = plan.graphs | set(told)
        for piece in journal_pieces(stream):
            if shared:
                search.stats.update(piece.stats)
            for change, replaced, successor in successions(piece.text):
                if change == "A":
                    successors.setdefault(successor, set()).add(replaced)
                else:
                    successors.get(successor, set()).discard(replaced)
            for row, quad in named_rows(piece.text, person, piece.lines):
                graph = quad.graph_name.value
                if not graph.startswith(base):  # another perspective's records are its own to forget
                    other = vocab.perspective_of(graph)
                    search.elsewhere.add(other)
                    if shared:
                        search.shared_elsewhere.add(other)  # (its records there no forget rewrites)
                    continue
                if shared:
                    search.named += 1
                if graph != entities_graph and model.is_disclosure(quad.subject.value):
                    told.setdefault(privacy.fact_of(graph), set()).add(quad.subject.value)
                elif graph != entities_graph:
                    plan.graphs.add(privacy.fact_of(graph))
                    naming_rows.setdefault(privacy.fact_of(graph), []).append((row, quad))
                else:  # an entity's row: theirs goes; another's name naming them becomes its id, the rest goes
                    other = quad.subject.value != person.iri
                    if other:
                        search.others.add(vocab.id_of(quad.subject.value))
                        if isinstance(quad.object, Literal):
                            search.labels.add((quad.subject.value, quad.object.value))
                    if other and quad.predicate.value in privacy.NAME_PROPERTIES:
                        renamed.setdefault((quad.subject.value, graph), {})[digest(row)] = quad
                        if shared:  # a name the shared journal holds: the plan changes it, so it is refused
                            held.append(row)
                    else:
                        plan.lines.add(digest(row))
            if shared:
                held += held_rows(piece.lines, known, plan)
    _rename_to_ids(plan, journal, renamed)
    # The rows of every fact the plan may yet drop or change, in the shared journal, for what
    # follows and for refuse_if_shared. When the shared journal named none of its own (a forget
    # that goes ahead: a shared row naming them is refused), they were found as it was read; else
    # it is read once more for them.
    found = held if plan.graphs | set(told) == known else shared_rows(journal.shared, plan, plan.graphs | set(told))
    _redact_shared_facts(plan, naming_rows, found, person)
    # A fact that replaced one that stays is kept as a shared one is (the one it replaced points at
    # it), and so is, in turn, the fact that replaced it.
    while replacing := {fact for fact in plan.graphs if successors.get(fact, set()) - plan.graphs}:
        going = len(plan.graphs)
        _redact_shared_facts(plan, naming_rows, (), person, also=replacing)
        if len(plan.graphs) == going:
            break  # each names them by its own triple: it goes whole
    _drop_disclosures(plan, {fact: nodes for fact, nodes in told.items() if fact not in plan.graphs}, journal)
    search.rows = found  # (each fact the plan now drops or changes was among those read)
    return plan


def _rename_to_ids(plan: Plan, journal, renamed: dict) -> None:
    """Each other entity's name that names the person becomes its id (``renamed``: (entity IRI, its
    entities graph) -> those name rows by digest). An alias may not repeat the name (the entity
    shapes): an alias or weak alias that is just the id goes with the name, where the private
    journal holds it; the shared journal is never rewritten, so where it holds one the name becomes
    the id and "[forgotten]"."""
    from pyoxigraph import Literal, NamedNode, Quad

    if not renamed:
        return
    as_ids = {
        str(Quad(NamedNode(iri), kind, Literal(vocab.id_of(iri)), NamedNode(graph))): iri
        for iri, graph in renamed
        for kind in (vocab.ALT_LABEL, vocab.WEAK_ALIAS)
    }
    held: dict[str, bool] = {}  # a shared journal's alias row -> whether it holds it as the journal ends
    for stream in (journal.local, journal.shared):
        for piece in journal_pieces(stream):
            for line in piece.lines:
                row = line[2:-2]
                if row in as_ids:
                    if stream is journal.shared:
                        held[row] = line.startswith("A ")
                    else:
                        plan.lines.add(digest(row))
    shared_alias = {as_ids[row] for row, holds in held.items() if holds}
    for (iri, _graph), rows in renamed.items():
        name = vocab.id_of(iri) + (f" {FORGOTTEN_TEXT}" if iri in shared_alias else "")
        for key, quad in rows.items():
            text = name if quad.predicate.value == vocab.PREF_LABEL.value else model.match_key(name)
            plan.renames[key] = str(Quad(quad.subject, quad.predicate, Literal(text), quad.graph_name))


def _drop_disclosures(plan: Plan, told: dict[str, set[str]], journal) -> None:
    """Every row of each disclosure in ``told`` (fact IRI -> its disclosures naming the person), in
    either journal, goes; the facts they told stay, with their other records. A disclosure whose rows
    are in the shared journal makes refuse_if_shared refuse, as any shared record naming them does."""
    if not told:
        return
    nodes = {node for found in told.values() for node in found}
    plan.redacted |= set(told)
    for stream in (journal.local, journal.shared):
        for piece in journal_pieces(stream):
            for row in rows_in(piece.lines, set(told)):
                if row[1 : row.index(">")] in nodes:
                    plan.lines.add(digest(row))


FORGOTTEN_TEXT = "[forgotten]"
_REASON = vocab.kg("reason")
_CLOSING = re.compile(r"replaced by f-[a-z0-9]{6}: ")  # how a closing record's reason begins (Writer._close)
_AUDIENCE = vocab.kg("audience")


_SUCCEEDED = f" <{vocab.kg('supersededBy').value}> <"


def successions(text: str):
    """(A or D, the fact replaced, the fact replacing it) of each row of a journal's text that says
    which fact replaced which. Found by the predicate's text (str.find: 0.2 s over the 376 MB of a
    base of 100k facts, where a regular expression anchored at each row took 2.2 s)."""
    at = text.find(_SUCCEEDED)
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = text.find(">", at + len(_SUCCEEDED))
        replaced = text[start + 3 : at - 1]
        if text[start : start + 3] in ("A <", "D <") and not any(c in replaced for c in ' "<>'):
            yield text[start], replaced, text[at + len(_SUCCEEDED) : end]
        at = text.find(_SUCCEEDED, at + 1)


def _redact_shared_facts(plan: Plan, naming_rows: dict[str, list], shared, person: Target, also=()) -> None:
    """A fact first heard where it may be shared, and named the person only later (a hearing of
    theirs, a reason, a source), keeps its shared records: the rows that name them, which went to
    the private journal, are taken out instead of the fact: a row naming them by IRI (a speaker)
    goes, a private conversation they were in becomes the same conversation without them (the
    owner's when no one else is left, and a channel or workspace named after them becomes the
    owner's: an audience narrower than it was), and another text naming them becomes "[forgotten]".
    A fact whose naming rows are shared is
    left whole in the plan, and refuse_if_shared refuses it. ``shared`` are the shared journal's
    rows of the plan's facts (and perhaps of others); ``also`` are facts kept so too, wherever their
    rows are (a replacement of a fact that stays)."""
    from pyoxigraph import Literal, Quad

    held_in_shared = {privacy.fact_of(privacy.graph_of(row)) for row in shared} | set(also)
    for fact in sorted(held_in_shared & plan.graphs):
        held = naming_rows[fact]
        if any(quad.graph_name.value == fact for _row, quad in held):
            continue  # the fact's own triple names them: it goes whole, or is refused
        plan.graphs.discard(fact)
        plan.redacted.add(fact)
        for row, quad in held:
            if isinstance(quad.object, Literal) and quad.subject.value not in plan.graphs:
                text = FORGOTTEN_TEXT
                kept = _CLOSING.match(quad.object.value) if quad.predicate == _REASON else None
                if kept and not person.in_text(kept.group(0)):
                    text = kept.group(0) + FORGOTTEN_TEXT  # the successor it names stays named
                if quad.predicate == _AUDIENCE:  # (still an audience, and never a wider one)
                    others = [m for m in quad.object.value[3:].split(",") if not person.in_text("dm:" + m)]
                    dm = quad.object.value.startswith("dm:") and others
                    text = "dm:" + ",".join(others) if dm else "owner"
                plan.renames[digest(row)] = str(Quad(quad.subject, quad.predicate, Literal(text), quad.graph_name))
            else:
                plan.lines.add(digest(row))


# --- the two deletions ---------------------------------------------------------------------------


def forget(kb, text: str, dry_run: bool = False) -> dict:
    """Forget a person or an actor: see the module's description. Returns the counts."""
    from kgrdf import lock

    with lock.held(kb.path / "lock", exclusive=True):
        with kb.up_to_date() as backend:
            session = kb.session_on(backend)  # (a perspective asked for that is none is refused)
            entity = session.resolve(text)
            label_rows = session.rows("person-labels", entities=vocab.entities_graph(kb.perspective))
        if entity.type not in privacy.PERSON_TYPES:
            raise Refused(
                f"{entity.id} is {entity.a_type}: kg forget is for people and actors",
                hint="retract a fact with kg reject or kg supersede",
            )
        key = privacy.key(kb)
        hashed = key.digest(entity.id)  # refuses when keyed records need a key that is not there
        entries = identifiers.read(kb)
        theirs = [e for e in entries if e["entity"] == entity.id and privacy.identifier_is_of(e, kb.perspective)]
        values = [e["value"] for e in theirs]
        former = former_names(kb, entity.iri)
        person = target(entity, values, label_rows, entries, vocab.perspective_base(kb.perspective), former)
        search = Search()
        kb.note(f"finding every record that names {entity.id} ...")
        plan = naming(kb, person, search)
        if search.elsewhere:  # which of the other perspectives that name them hold them as a person
            with kb.up_to_date() as backend:
                session = kb.session_on(backend)
                search.held_by = {
                    other
                    for other in search.elsewhere
                    if session.rows("entity", entity=vocab.entity_iri(other, entity.id), limit=1)
                }
        # another person's identifier that names them, as the matcher reads it (a login holding a
        # one-word name of theirs), goes too: no file is to name them (kept, forget would exit 3)
        others_naming = [
            e
            for e in entries
            if e not in theirs and privacy.identifier_is_of(e, kb.perspective) and person.in_text(e["value"])
        ]
        plan.identifiers = sorted(
            {key.digest(identifiers.owner(e)) for e in theirs}
            | {key.digest(identifiers.entry_key(e)) for e in others_naming}
        )
        naming_them = _tokens_naming(kb, person)
        plan.tokens = [t.digest for t in naming_them]
        refused = None
        try:
            refuse_if_shared(kb, plan, f"forgetting {entity.id}", search.rows)
        except Refused as exc:
            if not dry_run:
                raise
            refused = {"message": exc.message, "hint": exc.hint}  # (a dry run lists what it would delete all the same)
        plan.record = {
            "id": str(uuid.uuid4()),
            "hash": hashed,
            "hash_kind": privacy.HMAC,
            "forgotten_at": clock.iso(clock.now())[:10],
            "facts": len(plan.graphs),
            "identifiers": len(values) + len(others_naming),
        }
        result = {
            "entity": entity.id,
            "facts": len(plan.graphs),
            "redacted": len(plan.redacted),
            "identifiers": len(values) + len(others_naming),
            "tokens": len(plan.tokens),
            "elsewhere": sorted(search.elsewhere),
            "elsewhere_in_text_only": sorted(search.elsewhere - search.held_by),
            "elsewhere_shared": sorted(search.shared_elsewhere),
            "others": sorted(search.others),  # their names, aliases or summary that name them go
            "dry_run": dry_run,
        }
        if dry_run:  # what the owner would see go: each fact, and whether it is about them or only names them
            going = _going(kb, person, sorted(plan.graphs))
            return {**result, "token_names": [t.name for t in naming_them], "going": going, "refused": refused}
        plan.record["said"], plan.record["said_with"] = _said(kb, key, plan.graphs, person, plan.redacted)
        labels = search.labels | _labels_of_replicas(kb, person)
        plan.record["labels"] = sorted({key.digest(privacy.label_key(iri, text)) for iri, text in labels})
        refuse_where_it_cannot_finish(kb)  # (before anything is written)
        sync.forget_in_state(kb, person.in_text)  # (before the plan: the history it restarts has none)
        # The shared journal is never rewritten: when the search found no row of it naming them,
        # its files, unchanged since (the lock is held), need not be read again.
        unchanged = search.stats if not search.named and not search.elsewhere else {}
        checked: list[list[str]] = []  # every file is checked while the index is rebuilt, beside it
        counts = start(kb, plan, beside=lambda: checked.append(remaining(kb, person, unchanged)), say=False)
        made.note(f"{entity.id} was forgotten")
        left = checked[0]
        if counts["index_left"]:  # (an old index there holds them: this forget cannot remove it now)
            servers = ", ".join(counts["index_left"])
            raise Damaged(
                f"{entity.id} was forgotten from what kgrdf keeps, but the old index this knowledge base left "
                f"on {servers} still holds them: it did not answer"
                + (
                    f"; and {len(left)} file{'s' if len(left) != 1 else ''} still name them: {', '.join(left[:5])}"
                    if left
                    else ""
                ),
                hint="when it answers, kg expire (or kg index move) removes that index; "
                "or delete this knowledge base's graphs on it yourself",
            )
        if left:
            plural = len(left) != 1
            raise Damaged(
                f"{entity.id} was forgotten from what kgrdf keeps, but {len(left)} file"
                f"{'s' if plural else ''} of the knowledge base still name{'' if plural else 's'} them: "
                f"{', '.join(left[:5])}{' ...' if len(left) > 5 else ''}",
                hint=_way_out(left, entity.id, search),
            )
        counts["remaining"] = left
    return {**result, **counts}


def _going(kb, person: Target, graphs: list[str]) -> list[dict]:
    """The facts a forget would delete, as the index holds them: each one's id, sentence and status,
    and whether it is ``about`` the person (its subject or object) or only ``names`` them (in its
    value, a source, a speaker or a message: a one-word name is found in other words too, such as
    "mark the ticket done" for Mark), so that a dry run shows what goes beside them."""
    from kgrdf.errors import NotFound
    from kgrdf.session import Session

    out = []
    ids = [vocab.id_of(graph) for graph in graphs]
    with kb.up_to_date() as backend:
        session = Session(kb, backend)
        try:
            found = session.facts_heard(ids)  # many a query
        except NotFound:  # one the index does not hold (a record it folds away): each on its own
            found = {}
            for fact_id in ids:
                try:
                    found[fact_id] = session.fact(fact_id, history=False)
                except NotFound:
                    pass
        for fact_id in ids:
            fact = found.get(fact_id)
            if fact is None:
                out.append({"id": fact_id, "sentence": None, "status": None, "why": "names"})
                continue
            about = person.iri in (fact.subject, fact.target.value if fact.is_entity_target else None)
            sentence = session.describe(fact)["sentence"]
            out.append(
                {"id": fact_id, "sentence": sentence, "status": fact.status, "why": "about" if about else "names"}
            )
    return sorted(out, key=lambda one: (one["why"] != "about", one["id"]))


def _labels_of_replicas(kb, person: Target) -> set[tuple[str, str]]:
    """(entity IRI, text) of each name, alias, weak alias or summary that another replica's journal
    pulled here gives an entity of this perspective, other than the person's own, and names them:
    kg sync folds none of them back (forgotten.jsonl keeps their keyed digests), whether this
    knowledge base held them (what forget takes away) or not yet (what sync set aside)."""
    from pyoxigraph import Literal

    from kgrdf.journal import Stream

    base = kb.path / sync.REPLICAS
    entities_graph = vocab.entities_graph(kb.perspective).value
    found = set()
    for folder in sorted(base.iterdir()) if base.is_dir() else []:
        if not sync.REPLICA.match(folder.name):
            continue
        for piece in journal_pieces(Stream(folder)):
            for _row, quad in named_rows(piece.text, person, piece.lines):
                if (
                    quad.graph_name.value == entities_graph
                    and quad.subject.value != person.iri
                    and isinstance(quad.object, Literal)
                ):
                    found.add((quad.subject.value, quad.object.value))
    return found


def _said(kb, key, graphs, person: Target, kept=frozenset()) -> tuple[list[str], list[str]]:
    """The keyed digests kg sync reads not to fold back what this forget deletes, of the facts in
    ``graphs`` as the index holds them (the caller holds the lock; the index is at the journal's
    end): of what each fact whose triple names ``person`` says (its subject, object or value:
    privacy.said_key), and of what each other says beside each text of it that names them (its
    speaker, a source, a message: privacy.said_with_key), and the same of the texts taken out of
    the facts ``kept`` (a source a fact first heard where it may be shared was heard with later).
    The same triple heard on another replica without them is a fact of its own, and is folded."""
    from kgrdf.session import Session

    if not graphs and not kept:
        return [], []
    with kb.up_to_date() as backend:
        held = Session(kb, backend).facts_heard([vocab.id_of(graph) for graph in sorted({*graphs, *kept})])
    said, said_with = set(), set()
    for fact in held.values():
        if fact.iri not in kept and (
            person.iri in (fact.subject, fact.target.value)
            or (not fact.is_entity_target and person.in_text(fact.target.value))
        ):
            said.add(key.digest(privacy.said_key(fact)))
            continue
        for text in privacy.naming_texts(fact):
            if text == person.iri or person.in_text(text):
                said_with.add(key.digest(privacy.said_with_key(fact, text)))
    return sorted(said), sorted(said_with)


def purge_past_retention(kb, days: int) -> int:
    """Delete the facts naming a person not observed or confirmed again for ``days`` days (kg
    expire's retention) from the data, the private journal and the history, as they stand once this
    holds the folder: a fact a write observed again after the caller counted it stays. Returns how
    many were deleted. The caller holds no lock."""
    from kgrdf import lock

    with lock.held(kb.path / "lock", exclusive=True):
        with kb.up_to_date() as backend:  # (a deletion or a write cut short is finished first)
            session = kb.session_on(backend)
            due = set(session.past_retention(days, clock.iso(clock.now())))
            held = session.facts_heard([vocab.id_of(graph) for graph in sorted(due)]).values() if due else ()
        if due:
            plan = Plan(graphs=due)
            refuse_if_shared(kb, plan, f"deleting {len(due)} person fact{'s' if len(due) != 1 else ''} past retention")
            # what each said, keyed (never the fact), and when it was last observed or confirmed: kg
            # sync folds none back from a replica that holds it still, unless observed or confirmed
            # there later (privacy.Forgotten)
            key = privacy.key(kb)
            renewed: dict[str, str] = {}
            for fact in held:
                said = key.digest(privacy.said_key(fact))
                renewed[said] = max(renewed.get(said, ""), privacy.renewed_at(fact))
            plan.record = {
                "id": str(uuid.uuid4()),
                "hash_kind": privacy.HMAC,
                "deleted_at": clock.iso(clock.now()),
                "facts": len(due),
                "past_retention": renewed,
            }
            start(kb, plan)
    return len(due)


def elsewhere_note(entity_id: str, perspective: str, held: bool = True, shared: bool = False) -> str:
    """What to do about another perspective that names the person: a forget there forgets them there,
    when they are a person there; one that names them in text alone knows no one to forget, until
    they are added there. Records of it in the shared journal (``shared``) no forget rewrites."""
    if shared:
        how = "too" if held else f"in text alone, where it knows no {entity_id},"
        return (
            f"perspective {perspective} names them {how} in records of the shared journal, which kgrdf never "
            "rewrites (other replicas may hold copies of it)"
        )
    if not held:
        return (
            f"perspective {perspective} names them in text alone, where it knows no {entity_id}: to forget them "
            f"there too, add them there and forget them ("
            + pasted.kg("add-entity", entity_id, "--name", "NAME", "--perspective", perspective, "--allow-forgotten")
            + f", then {pasted.kg('forget', entity_id, '--perspective', perspective)})"
        )
    return (
        f"perspective {perspective} names them too, and keeps its records: forget them there as well "
        f"({pasted.kg('forget', entity_id, '--perspective', perspective)})"
    )


def _way_out(left: list[str], entity_id: str, search: Search) -> str:
    """What to do about the files a forget left naming the person: another perspective's records
    are forgotten by a forget in it; another replica's patches, which kg sync pulled (replicas/),
    are that replica's words in its shared journal, kept as it wrote them; any other file is not
    one kgrdf wrote that way."""
    from kgrdf.sync import REPLICAS

    if search.elsewhere:
        return "; ".join(
            elsewhere_note(entity_id, other, other in search.held_by, other in search.shared_elsewhere)
            for other in sorted(search.elsewhere)
        )
    theirs = [name for name in left if Path(name).parts[:1] == (REPLICAS,)]
    if not theirs:
        return "kgrdf did not write them that way: take the name out of them or remove them"
    # (not "forget them there": a patch pulled is of a shared journal, which kg forget refuses to rewrite)
    said = (
        "another replica's patch that kg sync pulled names them: it is of that replica's shared journal, "
        "which is never rewritten (the hub and every replica hold it), so its words stay, there and here; "
        "retract the fact on that replica (kg reject or kg supersede there) so that no read shows it"
    )
    return said if len(theirs) == len(left) else said + "; the other files kgrdf did not write that way"


def remaining(kb, person: Target, unchanged: dict[str, tuple[int, int]] | None = None) -> list[str]:
    """The files of the knowledge base folder that still name ``person``, by the matcher
    that chose what to drop: journal rows by their decoded terms (another perspective's too: the
    folder is to hold no trace of them, SPEC 8), JSON files by their strings, any other file by its
    text. The index and git are rebuilt from these files.
    ``unchanged`` are files already read and found not to name them, with their size and
    modification time then: one that still has both is not read again."""
    unchanged = unchanged or {}
    found = []
    for root, dirs, files in os.walk(kb.path):
        dirs[:] = sorted(d for d in dirs if not (root == str(kb.path) and d in (".git", "index")))
        for name in sorted(files):
            if root == str(kb.path) and name == MARKER:
                continue  # the plan (it holds no name), deleted once the index is rebuilt
            path = os.path.join(root, name)
            try:
                if path in unchanged:
                    info = os.stat(path)
                    if unchanged[path] == (info.st_size, info.st_mtime_ns):
                        continue
                data = open(path, "rb").read()
                if name.endswith(".gz"):
                    data = unpacked(name, data, os.path.relpath(path, kb.path))[0]
                text = data.decode("utf-8", errors="replace")
            except OSError:
                continue
            except Damaged:
                found.append(os.path.relpath(path, kb.path))  # unreadable: not known to be free of them
                continue
            if name.endswith((".rdfp", ".rdfp.gz")):
                named = any(True for _found in named_rows(text, person))
            elif root == str(kb.path) and name == tokens.FILE:
                named = bool(_tokens_naming(kb, person))  # another perspective's tokens are its own, as its rows
            elif root == str(kb.path) and name == sync.STATE:  # ids are kept, as in the journals; reasons are not
                named = _state_names(text, person)
            elif root == str(kb.path) and name == identifiers.FILE:  # and so are its people's identifiers
                try:
                    here = [e for e in identifiers.read(kb) if privacy.identifier_is_of(e, kb.perspective)]
                except Damaged:
                    here = [text]  # unreadable as entries: read whole
                named = any(person.in_text(piece) for entry in here for piece in _texts(json.dumps(entry)))
            else:
                named = any(person.in_text(piece) for piece in _texts(text))
            if named:
                found.append(os.path.relpath(path, kb.path))
    return found


def _state_names(text: str, person: Target) -> bool:
    """Whether sync.json names the person, but for the ids of what it set aside (an entity's id
    that spells their name is that entity's key, here as in the journals)."""
    try:
        state = json.loads(text)
        items = state["set_aside"]
        rest = {k: v for k, v in state.items() if k != "set_aside"}
        texts = [
            *_texts(json.dumps(rest)),
            *(piece for item in items for k, v in item.items() if k != "id" for piece in _texts(json.dumps(v))),
        ]
    except (ValueError, TypeError, KeyError, AttributeError):
        texts = list(_texts(text))  # not as kg sync writes it: read whole
    return any(person.in_text(piece) for piece in texts)


def _tokens_naming(kb, person: Target) -> list:
    """The tokens of this perspective named after ``person``, speaking as them or reading for a
    conversation or channel that names them: what forget revokes, and what its last check looks for
    in tokens.json (another perspective's tokens are that perspective's, as its journal rows are)."""
    return [
        t
        for t in tokens.listed(kb.path)
        if t.perspective == kb.perspective and any(person.in_text(text) for text in (t.name, t.audience, t.speaker))
    ]


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
