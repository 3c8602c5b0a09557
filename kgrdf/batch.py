"""``kg batch`` and ``kg batch apply``: today's review batch from the knowledge base, saved for its
perspective (``batch.json``, ``batch-<perspective>.json``: :func:`path`) so that the one-line answer
decides exactly what was printed (§8).

The rules (grouping, caps, priority, the decision grammar) are kgrdf.review's, pure; this module
reads the proposals, saves and loads the batch, and applies a decision through the writer.
"""

import json
import shlex
from contextlib import contextmanager
from pathlib import Path

from pyoxigraph import Literal, NamedNode

from kgrdf import clock, files, made, review, settings, vocab
from kgrdf.errors import BadInput, NotFound, Refused

KNOWN_SHOWN = 3  # confirmed facts shown beside a group, as what is already known


def caps() -> review.Caps:
    """The batch's caps as set (BadInput for a setting out of its range). A group's parts are cut
    to the batch's cap when it is the smaller: a batch takes a part whole, and must not pass it."""
    batch_facts = settings.get("KGRDF_BATCH_FACTS")
    return review.Caps(
        groups=settings.get("KGRDF_BATCH_GROUPS"),
        group_facts=min(settings.get("KGRDF_GROUP_FACTS"), batch_facts),
        batch_facts=batch_facts,
        fold_under=settings.get("KGRDF_FOLD_UNDER"),
    )


def _anchor_of(rows) -> dict[str, str]:
    """Thing IRI -> the anchor IRI it is reviewed under (anchors.rq's rows); of several anchors, the
    first in IRI order, so that a thing anchored twice goes to the same group on every read."""
    anchors: dict[str, str] = {}
    for thing, anchor in rows:
        if thing not in anchors or anchor < anchors[thing]:
            anchors[thing] = anchor
    return anchors


class _Index:
    """What waits, read from the index: each read a query over the whole knowledge base."""

    def __init__(self, session):
        self.session = session

    def anchors(self) -> list[tuple[str, str]]:
        return [(row["thing"].value, row["anchor"].value) for row in self.session.rows("anchors")]

    def names(self) -> dict[str, str]:
        rows = self.session.values("lint-names", entities=self.session.entities_graph)
        return {row["entity"]: row["name"] for row in rows}

    def piles(self) -> list[dict]:
        return self.session.values("batch-piles")

    def facts(self, key: str, area: bool, limit: int) -> list[dict]:
        return self.session.values("batch-facts", limit=limit, key=NamedNode(key), area=Literal(area))


class _Waiting:
    """What waits for review, read as batch-piles.rq sums it up: a row per key (a subject, or an
    area), never one per proposal. The facts themselves are read only for the groups shown.
    ``source`` gives the rows: the index's queries (_Index), or the cache that keeps them
    (kgrdf.waiting), which gives the same rows."""

    def __init__(self, session, source):
        self.source = source
        self.schema = session.schema
        anchors = _anchor_of(source.anchors())
        self.names = source.names()
        self.keys: dict[str, list[tuple]] = {}  # anchor id -> (the best its facts can rank, key IRI, area)
        sums: dict[str, list] = {}  # anchor IRI -> [facts, prevents rework, most observed, oldest]
        for row in source.piles():
            key, area = row["key"], bool(row["area"])
            anchor = key if area else anchors.get(key, key)
            best = (not row["preventsRework"], -row["observations"], -(1 << 62), row["recordedAt"], "")
            self.keys.setdefault(vocab.id_of(anchor), []).append((best, key, area))
            pile = sums.setdefault(anchor, [0, False, 1, row["recordedAt"]])
            pile[0] += row["facts"]
            pile[1] = pile[1] or row["preventsRework"]
            pile[2] = max(pile[2], row["observations"])
            pile[3] = min(pile[3], row["recordedAt"])
        self.piles = sorted(
            (review.Pile(*self.describe(anchor), *pile) for anchor, pile in sums.items()),
            key=lambda pile: pile.anchor,
        )

    def describe(self, iri: str) -> tuple[str, str, str]:
        """(id, name, axis) of an entity: its id and type are in its IRI."""
        entity_id = vocab.id_of(iri)
        entity_type = self.schema.types.get(entity_id.split("/", 1)[0])
        return entity_id, self.names.get(iri, entity_id), entity_type.axis if entity_type else "Other"

    def items_of(self, anchors: tuple[str, ...], n: int) -> list[review.Item]:
        """The first ``n`` facts of the group made of the piles of ``anchors``, best first: its keys
        are read best first, each no further than ``n`` facts, until no key left can rank among them."""
        found: list[review.Item] = []
        for best, key, area in sorted(k for anchor in anchors for k in self.keys[anchor]):
            if len(found) >= n and review.rank(found[n - 1]) < best:
                break
            rows = self.source.facts(key, area, n)
            found = review.best_first(found + [self.item(anchors, row) for row in rows])[:n]
        return found

    def item(self, anchors: tuple[str, ...], row: dict) -> review.Item:
        predicate = self.schema.predicate_by_iri(row["predicate"])
        target = self.names.get(row["object"]) or (
            vocab.id_of(row["object"]) if predicate.takes_entity else row["object"]
        )
        subject_id, subject_name, _ = self.describe(row["subject"])
        return review.Item(
            id=row["id"],
            subject=subject_id,
            anchor=anchors[0] if len(anchors) == 1 else "",
            anchor_name="",
            axis="",
            sentence=predicate.reads(subject_name, target),
            prevents_rework=bool(row.get("preventsRework")),
            observations=row.get("observations") or 1,
            recorded_at=row.get("recordedAt") or "",
            order=row.get("order"),
        )


def pending_items(writer, iris) -> list[review.Item]:
    """The pending proposals among the facts ``iris`` of a write (an import's) as batch items,
    anchored by the index's anchoring facts and the write's own. A fact the write left as it was
    (a record of a rejected fact: it stays rejected) is none."""
    schema = writer.schema
    pending = writer.pending_facts()
    facts = [pending[iri] for iri in iris if iri in pending]
    # the index's anchors of these facts' subjects alone, a few hundred a query (every anchor of the
    # knowledge base took 0.7 s at 100k facts, for an import of any size)
    things = [NamedNode(iri) for iri in sorted({fact.subject for fact in facts})]
    pairs = [(row["thing"].value, row["anchor"].value) for row in writer.rows_for_each("anchors-of", "thing", things)]
    for fact in pending.values():
        predicate = schema.predicate_by_iri(fact.predicate)
        if fact.current and predicate is not None and predicate.grouping in ("anchor", "container"):
            pairs.append(
                (fact.subject, fact.target.value)
                if predicate.grouping == "anchor"
                else (fact.target.value, fact.subject)
            )
    anchors = _anchor_of(pairs)
    out = []
    for fact in facts:
        predicate = schema.predicate_by_iri(fact.predicate)
        if fact.status != "proposed" or predicate is None:
            continue
        anchor_iri = (
            fact.target.value
            if predicate.grouping == "area" and fact.is_entity_target
            else (anchors.get(fact.subject, fact.subject))
        )
        anchor = writer.entity(NamedNode(anchor_iri))
        out.append(
            review.Item(
                id=fact.id,
                subject=vocab.id_of(fact.subject),
                anchor=anchor.id if anchor else anchor_iri,
                anchor_name=anchor.name if anchor else anchor_iri,
                axis=schema.types[anchor.type].axis if anchor and anchor.type in schema.types else "Other",
                sentence="",
                prevents_rework=fact.prevents_rework,
                observations=fact.observations,
                recorded_at=fact.recorded_at or "",
                order=fact.order,
            )
        )
    return out


def make(session, source=None) -> dict:
    """Today's batch as a document: its groups, each with what is already known about its entity,
    and how many proposals wait beyond it. What waits is read from ``source``: the cache kept
    beside the index (kgrdf.waiting), else the index itself (the same batch, read in seconds at
    100k proposals where the cache takes a fraction of one)."""
    waiting = _Waiting(session, source or _Index(session))
    layout = review.layout(waiting.piles, caps())
    groups = review.fill(layout[0], waiting.items_of) if layout else []
    document = {
        "made_at": clock.iso(clock.now()),
        "groups": [],
        "waiting": sum(pile.facts for pile in waiting.piles),
        "in_batch": sum(len(g.items) for g in groups),
        "batches": len(layout),
        "answered_at": None,
    }
    known: dict[str, list[str]] = {}  # anchor -> what is known of it, read once a batch
    for group in groups:
        shown = group.as_json()
        if group.anchor and group.anchor not in known:
            known[group.anchor] = _known(session, group.anchor)
        shown["known"] = known[group.anchor] if group.anchor else []
        document["groups"].append(shown)
    _say_valid_times(session, document["groups"])
    return document


def _say_valid_times(session, groups: list[dict]) -> None:
    """Give each fact of the batch (as shown: Group.as_json) that has a valid time that time, and
    say it in its sentence as a listing does: "Staging is being built" alone reads as what holds
    now, and confirming a past value must be seen to be that."""
    shown = [fact for group in groups for fact in group["facts"]]
    if not shown:
        return
    rows = session.rows_for_each("batch-times", "fact", [session.fact_iri(fact["id"]) for fact in shown])
    times = {vocab.id_of(row["fact"].value): row for row in rows}
    for fact in shown:
        row = times.get(fact["id"], {})
        start, end = (row[key].value if row.get(key) else None for key in ("validFrom", "validTo"))
        fact["valid_from"], fact["valid_to"] = start, end
        when = [f"{word} {clock.shown(at)}" for word, at in (("from", start), ("to", end)) if at]
        if when:
            fact["sentence"] += f" ({'; '.join(when)})"


def today(kb) -> dict:
    """Expire the proposals not observed again for KGRDF_PROPOSAL_DAYS, then make today's batch and
    save it. The expiry writes only when a proposal is due: most days the batch is a read."""

    days = settings.get("KGRDF_PROPOSAL_DAYS")
    caps()  # a setting out of its range is refused before anything expires
    cutoff = clock.days_before(clock.now(), days)
    before = vocab.datetime_literal(clock.iso(cutoff))
    expired, document = 0, None
    with kb.reading() as session, _cache(session) as cache:
        due = cache is None or cache.may_be_due(cutoff)
        if not (due and session.rows("proposals-due", limit=1, before=before)):
            document = make(session, cache)
    if document is None:
        with kb.writing("expire") as writer:
            expired = len(writer.expire_proposals(days))
        with kb.reading() as session, _cache(session) as cache:
            document = make(session, cache)
    document["expired"] = expired
    document["expired_after_days"] = days  # (KGRDF_PROPOSAL_DAYS: what the expiry counted)
    document["perspective"] = kb.perspective  # (kg batch apply answers it in this perspective alone)
    save(kb, document)
    if document.get("groups"):  # (said only if the answer is lost: kg batch apply would answer a batch unseen)
        made.note("the batch was saved for kg batch apply, which would answer it unseen: kg batch prints it again")
    document["answer_with"] = shlex.join(["kg", "batch", "apply", *kb.command_words()])  # (what to paste)
    return document


def figures(session) -> dict:
    """How many proposals wait for review now, and in how many daily batches: the figures kg batch
    prints above its groups, read without making a batch (the Briefing shows them beside a batch
    made earlier in the day, which writes since may have made stale)."""
    with _cache(session) as cache:
        waiting = _Waiting(session, cache or _Index(session))
        return {
            "waiting": sum(pile.facts for pile in waiting.piles),
            "batches": len(review.layout(waiting.piles, caps())),
        }


def peek(kb) -> dict:
    """Today's batch as kg batch would make it, read only: nothing expires and nothing is saved
    (what an agent may look at; a person answers it)."""
    with kb.reading() as session, _cache(session) as cache:
        return make(session, cache)


@contextmanager
def _cache(session):
    """The cache of what waits (kgrdf.waiting) current with the session's index, None without one.
    Every batch is made through it: a perspective that does not exist (a typo in --perspective or
    in the console's address) is refused here, before a cache is made or a saved batch replaced."""
    from kgrdf import waiting

    _refuse_unknown(session)
    cache = waiting.of(session)
    try:
        yield cache
    finally:
        if cache is not None:
            cache.close()


def _known(session, anchor_id: str) -> list[str]:
    """A few confirmed facts about a group's anchor: their sentences alone, so read without their
    sources (a query a fact: an anchor with 20k facts took 15 s a group)."""
    try:
        found = session.lookup(anchor_id, sources=False)
    except Refused:
        return []
    return [f["sentence"] for f in found["facts"] if f["status"] == "confirmed"][:KNOWN_SHOWN]


def path(kb) -> Path:
    """Where the perspective's saved batch is: ``batch.json`` for the default perspective (as
    before there was one a perspective), ``batch-<perspective>.json`` for any other, so that
    printing or showing one perspective's batch never replaces another's."""
    if kb.perspective == kb.default_perspective:
        return kb.path / "batch.json"
    return kb.path / f"batch-{kb.perspective}.json"


def save(kb, document: dict, suffix: str = ".tmp") -> None:
    """Write the perspective's saved batch whole (never half a batch), through a temporary file
    named by ``suffix``: one of its own for a writer that does not hold the lock (kgrdf.files.replace)."""
    from kgrdf.files import write_json

    write_json(path(kb), document, suffix)


def load(kb, answered: bool = False) -> dict:
    """The perspective's saved batch, still open (or answered too, with ``answered``). Raises
    Refused when there is none or it was answered, BadInput when the file holds something else."""
    name = path(kb).name
    try:
        document = json.loads(path(kb).read_text(encoding="utf-8"))
    except FileNotFoundError:
        if kb.perspective != kb.default_perspective:
            _refuse_unknown_perspective(kb)  # a typo in --perspective is named as such, not as "no batch"
            _refuse_left_in_batch_json(kb)
        raise Refused("there is no batch to answer", hint="kg batch prints today's batch and saves it") from None
    except (ValueError, RecursionError):
        raise BadInput(f"{name} does not parse", hint="kg batch prints and saves a new one") from None
    except OSError as exc:
        raise BadInput(f"cannot read {name}: {exc.strerror}", hint="kg batch prints and saves a new one") from None
    if (
        not isinstance(document, dict)
        or not isinstance(document.get("groups"), list)
        or not all(isinstance(document.get(key, ""), str) for key in ("made_at", "perspective"))
    ):
        raise BadInput(f"{name} is not a batch kg batch saved", hint="kg batch prints and saves a new one")
    if document.get("answered_at") and not answered:
        raise Refused(f"the saved batch was answered at {document['answered_at']}", hint="kg batch prints the next one")
    return document


def _refuse_left_in_batch_json(kb) -> None:
    """Refuse to answer a perspective's batch that a kgrdf of before saved in ``batch.json`` (one
    file for every perspective then): it is answered from its own file, which kg batch makes."""
    try:
        legacy = json.loads((kb.path / "batch.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return
    if isinstance(legacy, dict) and legacy.get("perspective") == kb.perspective and not legacy.get("answered_at"):
        raise Refused(
            f"perspective {kb.perspective!r}'s saved batch is in batch.json, where an older kgrdf saved it: "
            "it is not answered from there",
            hint=f"kg batch --perspective {kb.perspective} prints and saves it again",
        )


def _refuse_unknown(session) -> None:
    """Refuse the session's perspective when it does not exist (a typo in --perspective or in the
    console's address)."""
    if not session.perspective_exists():
        raise session.unknown_perspective()


def _refuse_unknown_perspective(kb) -> None:
    """Refuse a perspective that does not exist: answering the saved batch of another perspective
    is refused with a way out (kg batch --perspective P) that would itself be refused for a typo."""
    with kb.reading() as session:
        _refuse_unknown(session)


def groups_of(document: dict, name: str = "batch.json") -> list[review.Group]:
    """The saved batch's groups, exactly as printed. Raises BadInput when the file it was read from
    (``name``) holds anything kg batch does not save (edited by hand): a group that is not an
    object, numbered out of turn or holding no fact or more than a batch letters, a fact without
    an id or one that is twice in the batch, a valid time that is not a time's text."""
    groups, seen = [], set()
    for number, group in enumerate(document["groups"], start=1):
        facts = group.get("facts") if isinstance(group, dict) else None
        if (
            not isinstance(facts, list)
            or not 1 <= len(facts) <= len(review.LETTERS)
            or type(group.get("number")) is not int
            or group["number"] != number
            or not isinstance(group.get("title"), str)
            or not isinstance(group.get("anchor"), str | None)
            or not all(_printed_fact(fact) for fact in facts)
            or seen.intersection(fact["id"] for fact in facts)
            or len({fact["id"] for fact in facts}) != len(facts)
        ):
            raise BadInput(f"{name} is not a batch kg batch saved", hint="kg batch prints and saves a new one")
        seen.update(fact["id"] for fact in facts)
        items = [
            review.Item(id=f["id"], subject="", anchor="", anchor_name="", axis="", sentence=f["sentence"])
            for f in facts
        ]
        groups.append(review.Group(number, group["title"], group.get("anchor"), items))
    return groups


def _printed_fact(fact) -> bool:
    """Whether ``fact`` is a fact as a saved batch holds it: an id, its sentence, and its valid time
    as printed (text or null; a batch an older kgrdf saved has none)."""
    return (
        isinstance(fact, dict)
        and isinstance(fact.get("id"), str)
        and fact["id"] != ""
        and isinstance(fact.get("sentence"), str)
        and all(isinstance(fact.get(key), str | None) for key in ("valid_from", "valid_to"))
    )


def _printed(document: dict) -> dict[str, dict]:
    """Each fact of a saved batch (checked by :func:`groups_of`) as it was printed, by its id."""
    return {fact["id"]: fact for group in document["groups"] for fact in group["facts"]}


def apply(kb, text: str) -> dict:
    """Answer the saved batch with the decision ``text``. A decision that does not parse changes
    nothing; one that does is applied whole, in one transaction, and the batch is marked answered.
    A decision that decides nothing (it only skips: "skip all") writes nothing and leaves the batch
    open: deferring is not answering, and the day's batch is still there to answer."""
    document = load(kb)
    if not _of_perspective(kb, document):
        _refuse_unknown_perspective(kb)
        raise Refused(
            f"the saved batch is of perspective {document.get('perspective', kb.default_perspective)!r}, "
            f"not {kb.perspective!r}",
            hint=f"kg batch --perspective {kb.perspective} prints and saves this perspective's batch",
        )
    if document.get("printed") is False:
        raise Refused(
            "the saved batch is not the one kg batch printed: the console made a new one at "
            + str(document.get("made_at") or "an unknown time"),
            hint="kg batch prints it; answer that, or answer in the console",
        )
    groups = groups_of(document, path(kb).name)
    printed = _printed(document)
    decided = review.parse(text, groups)
    labels = {item.id: group.label(i) for group in groups for i, item in enumerate(group.items)}
    if not any(decision != "defer" for decision in decided.values()):
        with kb.reading() as session:
            open_ = _to_decide(session, labels, printed)
        return {
            "decision": text,
            "confirmed": 0,
            "rejected": 0,
            "left_proposed": len(open_),
            "changed_since_printed": [item_id for item_id in labels if item_id not in open_],
            "answered": False,
            "note": "nothing was decided: the batch stays open for kg batch apply",
        }
    counts = {"confirm": 0, "reject": 0, "defer": 0}
    with kb.writing("batch apply") as writer:
        # what changed since the batch was printed is read before this answer writes anything: a
        # value this answer closes (a past value confirmed beside the current one) changed here
        open_ = _to_decide(writer, labels, printed)
        changed = [item_id for item_id in labels if item_id not in open_]  # decided or closed elsewhere
        confirmed = [item_id for item_id in open_ if decided.get(item_id) == "confirm"]
        _refuse_rivals(writer, confirmed, labels, printed)
        rest = [item_id for item_id in open_ if decided.get(item_id) != "confirm"]
        for item_id in writer.in_confirming_order(confirmed) + rest:
            decision = decided.get(item_id, "defer")
            if decision != "defer" and not _undecided(writer.fact(item_id)):
                continue  # closed by this answer's own confirmations
            if decision == "confirm":
                writer.confirm(item_id, reviewed_by="batch", reason="confirmed in the daily batch")
            elif decision == "reject":
                writer.reject(item_id, reviewed_by="batch", reason="rejected in the daily batch")
            counts[decision] += 1
    document["answered_at"] = clock.iso(clock.now())
    document["decision"] = text
    save(kb, document)
    return {
        "decision": text,
        "confirmed": counts["confirm"],
        "rejected": counts["reject"],
        "left_proposed": counts["defer"],
        "changed_since_printed": changed,
        "answered": True,
    }


def _to_decide(reader, fact_ids, printed: dict[str, dict]) -> list[str]:
    """Those of ``fact_ids`` still to decide (_undecided) as ``printed`` shows them, in their order,
    as ``reader`` (a session or a write's writer) reads them now; one gone since (forgotten) is not."""
    found = []
    for fact_id in fact_ids:
        try:
            if _undecided(reader.fact(fact_id, history=False), printed.get(fact_id)):
                found.append(fact_id)
        except NotFound:
            pass
    return found


def _refuse_rivals(writer, fact_ids: list[str], labels: dict[str, str], printed: dict[str, dict]) -> None:
    """Refuse a decision that confirms two values of a subject where it takes one at a time (each
    would close the other, and the order of the letters would choose), naming them by ``labels``.
    Those decided elsewhere or changed since the batch was printed (``printed``) are left out:
    they are not confirmed."""
    undecided = [fact_id for fact_id in fact_ids if _undecided(writer.fact(fact_id), printed.get(fact_id))]
    for facts in writer.confirmed_together(undecided):
        named = [labels[f.id] for f in facts]
        predicate = writer.schema.predicate_by_iri(facts[0].predicate)
        both, other = ("both", "the other") if len(named) == 2 else ("all", "the others")
        raise Refused(
            f"{', '.join(named[:-1])} and {named[-1]} would {both} hold {predicate.key} of "
            f"{vocab.id_of(facts[0].subject)} at once, and it takes one value: nothing was decided",
            hint=f'confirm one, and skip or reject {other}: e.g. "confirm all except {", ".join(named[1:])}"',
            conflict=True,
        )


DECISIONS = ("confirm", "reject", "defer")


def for_review(kb) -> dict:
    """The batch a person answers fact by fact (the console's review queue): the one saved today
    for the perspective while it still has a fact to decide, else the one kg batch would print now,
    saved as kg batch saves it (nothing expires and nothing is journaled: a look is not a write).
    Each fact carries its status now, so one decided elsewhere since shows as such ("closed": a
    proposal replaced since, by kg supersede or kg org merge, which is no longer to decide;
    "changed": one whose valid time was corrected since it was shown)."""
    try:
        document = load(kb)
        groups_of(document, path(kb).name)
        if document.get("made_at", "")[:10] != clock.iso(clock.now())[:10] or not _of_perspective(kb, document):
            document = None
    except (Refused, BadInput):
        document = None
    statuses = _statuses(kb, document) if document is not None else {}
    if "proposed" not in statuses.values():  # nothing left to decide: what waits now may have grown since
        document = {**peek(kb), "perspective": kb.perspective, "printed": False}  # (kg batch apply answers none)
        save(kb, document, files.own_suffix())  # (the console holds no lock: each thread its own)
        statuses = _statuses(kb, document)
    for group in document["groups"]:
        for item in group["facts"]:
            item["status"] = statuses[item["id"]]
    return document


def _statuses(kb, document: dict) -> dict[str, str]:
    """Each fact of a batch by its status now: "proposed" while it is to decide, "closed" for a
    proposal closed since, "changed" for one whose valid time was corrected since it was shown (the
    next batch shows it as it is now), "gone" for one forgotten since."""
    statuses = {}
    with kb.reading() as session:
        for group in document["groups"]:
            for item in group["facts"]:
                try:
                    fact = session.fact(item["id"], history=False)
                    if fact.status != "proposed" or _undecided(fact, item):
                        statuses[item["id"]] = fact.status
                    else:
                        statuses[item["id"]] = "changed" if _undecided(fact) else "closed"
                except NotFound:
                    statuses[item["id"]] = "gone"  # forgotten or expired away since the batch was made
    return statuses


def _undecided(fact, printed: dict | None = None) -> bool:
    """Whether a fact of a saved batch is still to decide: proposed, and not closed since the batch
    was printed (kg supersede and kg org merge close a proposal they replace; it stays proposed).
    With ``printed`` (the fact as the batch saved it), its valid time must also be the one printed:
    a proposal retimed since (kg supersede F --valid-from) is not what the answer was given for.
    (A value never changes in place: a new one is a new fact, and closes this one.)"""
    if fact.status != "proposed" or fact.superseded_by:
        return False
    return printed is None or all(
        key not in printed or printed[key] == getattr(fact, key) for key in ("valid_from", "valid_to")
    )


def _of_perspective(kb, document: dict) -> bool:
    """Whether a saved batch is of the knowledge base's perspective (one kg batch saved names none:
    it is taken to be the default perspective's)."""
    return document.get("perspective", kb.default_perspective) == kb.perspective


def decide(kb, fact_ids: list[str], decision: str, reviewer: str = "console") -> dict:
    """One decision of a person on facts of the saved batch: confirm or reject them in one write
    (one commit), each recording who reviewed it; defer writes nothing. A fact not in the saved
    batch is refused before anything is written; one decided elsewhere since is left as it is and
    named. When no fact of the batch is left proposed, the batch is marked answered, as kg batch
    apply marks it. A batch kg batch apply answered meanwhile is still decided fact by fact: a page
    shows it until it is loaded again, and each fact's state, not the batch's, says what is left."""
    if decision not in DECISIONS:
        raise BadInput(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
    if not isinstance(fact_ids, list) or not fact_ids or not all(isinstance(f, str) for f in fact_ids):
        raise BadInput('facts is a list of fact ids of the batch, e.g. ["f-3k9x2a"]')
    fact_ids = list(dict.fromkeys(fact_ids))  # a fact named twice is decided once, and said once
    document = load(kb, answered=True)
    if not _of_perspective(kb, document):
        _refuse_unknown_perspective(kb)
        raise Refused("the saved batch is another perspective's", hint="reload the review queue")
    in_batch = [item.id for group in groups_of(document, path(kb).name) for item in group.items]
    printed = _printed(document)
    outside = [f for f in fact_ids if f not in in_batch]
    if outside:  # (named as no more than a fact id's length, and as text that prints: it may be anything)
        raise Refused(f"{outside[0][:40]!r} is not in the batch being answered", hint="reload the review queue")
    done = {"decision": decision, "facts": list(fact_ids), "decided": [], "changed_since_printed": []}
    if decision == "defer":  # writes nothing: a fact decided elsewhere since is named, as by the others
        with kb.reading() as session:
            still = set(_to_decide(session, fact_ids, printed))
        done["changed_since_printed"] = [fact_id for fact_id in fact_ids if fact_id not in still]
        return {**done, "answered": False}
    verb = "confirmed" if decision == "confirm" else "rejected"
    with kb.writing(f"review {decision}") as writer:
        if decision == "confirm":
            _refuse_rivals(writer, fact_ids, {fact_id: fact_id for fact_id in fact_ids}, printed)
            fact_ids = writer.in_confirming_order(list(fact_ids))
        for fact_id in fact_ids:
            if not _undecided(writer.fact(fact_id), printed[fact_id]):
                done["changed_since_printed"].append(fact_id)
                continue
            change = writer.confirm if decision == "confirm" else writer.reject
            change(fact_id, reviewed_by=reviewer, reason=f"{verb} in the {reviewer}'s review queue")
            done["decided"].append(fact_id)
    with kb.reading() as session:
        open_ = _to_decide(session, in_batch, printed)
    if not open_ and not document.get("answered_at"):
        document["answered_at"] = clock.iso(clock.now())
        document["decision"] = f"answered in the {reviewer}"
        save(kb, document, files.own_suffix())  # (the console holds no lock: each thread its own)
    return {**done, "answered": not open_}
