"""The daily batch and the one-line decision that answers it (§8). Pure: values in, values out.

Grouping. A proposal goes to its anchor's group: a step to its process, a decision or lesson to
what it is about, a feature to what it is part of or lives in (the ontology marks those predicates
kg:AnchorPredicate and kg:ContainerPredicate), and a fact of reviews, owns or approves
(kg:AreaPredicate) to the area it names; anything else to its subject. Groups of fewer than
KGRDF_FOLD_UNDER (5) facts fold into one group per axis ("Process: other facts"). A group is split
into parts of at most KGRDF_GROUP_FACTS (8) facts, each part a numbered group of the batch, its
facts lettered a, b, c...

Order. Groups go by priority: one holding a fact that prevented rework first, then the most
observed, the largest, the oldest. A batch takes them in that order until KGRDF_BATCH_GROUPS (10)
groups or KGRDF_BATCH_FACTS (40) facts; the rest wait for the next day's batch.

Decisions. ``confirm all except 2b, reject 3a``: clauses separated by commas, semicolons or "and";
each starts with a verb and names targets (``all``, a group ``2``, a fact ``2b``):

- ``confirm`` and ``reject`` decide their targets;
- ``skip`` and ``except`` defer theirs: they stay proposed for a later batch;
- a later clause wins over an earlier one for the same fact;
- a fact no clause names stays proposed. Only an explicit reject rejects.
"""

import re
from dataclasses import dataclass, field

from kgrdf.errors import BadInput

LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Item:
    """A proposal as the batch sees it."""

    id: str
    subject: str  # entity id
    anchor: str  # entity id of the thing it is reviewed under
    anchor_name: str
    axis: str  # the anchor's axis: People, Process, Product, Organizations
    sentence: str  # the fact in plain words
    prevents_rework: bool = False
    observations: int = 1
    recorded_at: str = ""
    order: int | None = None


@dataclass
class Group:
    number: int
    title: str
    anchor: str | None  # None for a folded group ("Process: other facts")
    items: list[Item] = field(default_factory=list)

    def label(self, index: int) -> str:
        return f"{self.number}{LETTERS[index]}"

    def as_json(self) -> dict:
        return {
            "number": self.number,
            "title": self.title,
            "anchor": self.anchor,
            "facts": [
                {
                    "label": self.label(i),
                    "id": item.id,
                    "sentence": item.sentence,
                    "prevents_rework": item.prevents_rework,
                    "observations": item.observations,
                }
                for i, item in enumerate(self.items)
            ],
        }


@dataclass(frozen=True)
class Caps:
    groups: int = 10
    group_facts: int = 8
    batch_facts: int = 40
    fold_under: int = 5


def rank(item: Item) -> tuple:
    """What orders the facts of a group: what prevented rework, the most observed, the first order,
    the oldest, then the id."""
    return (
        not item.prevents_rework,
        -item.observations,
        item.order if item.order is not None else 1 << 30,
        item.recorded_at,
        item.id,
    )


@dataclass(frozen=True)
class Pile:
    """The proposals reviewed under one anchor, summed up: all that ranks and sizes their group."""

    anchor: str  # entity id
    anchor_name: str
    axis: str
    facts: int
    prevents_rework: bool = False
    observations: int = 1  # the most observed of them
    recorded_at: str = ""  # the oldest of them


@dataclass(frozen=True)
class Slot:
    """A numbered group of a batch before its facts are read: the piles its group is made of, and
    which of the group's facts it shows (``start`` to ``stop``, in the order the facts rank)."""

    number: int
    title: str
    anchor: str | None  # None for a folded group
    piles: tuple[str, ...]  # the anchors whose proposals the group holds
    start: int
    stop: int


def piles(items: list[Item]) -> list[Pile]:
    """The items summed up by anchor, in the order their anchors first appear."""
    by_anchor: dict[str, list[Item]] = {}
    for item in items:
        by_anchor.setdefault(item.anchor, []).append(item)
    return [
        Pile(
            anchor,
            members[0].anchor_name,
            members[0].axis,
            len(members),
            any(m.prevents_rework for m in members),
            max(m.observations for m in members),
            min(m.recorded_at for m in members),
        )
        for anchor, members in by_anchor.items()
    ]


def _groups(piles: list[Pile], caps: Caps) -> list[tuple[str, str | None, list[Pile]]]:
    """(title, anchor, piles) for every group before splitting, in priority order."""
    groups, folded = [], {}
    for pile in piles:
        if pile.facts < caps.fold_under:
            folded.setdefault(pile.axis, []).append(pile)
        else:
            groups.append((pile.anchor_name, pile.anchor, [pile]))
    groups += [(f"{axis}: other facts", None, members) for axis, members in folded.items()]

    def priority(group):
        title, _, members = group
        return (
            not any(m.prevents_rework for m in members),
            -max(m.observations for m in members),
            -sum(m.facts for m in members),
            min(m.recorded_at for m in members),
            title,
        )

    return sorted(groups, key=priority)


def layout(piles: list[Pile], caps: Caps = Caps()) -> list[list[Slot]]:
    """Every group's place, day after day, from the piles alone: the batches, each a list of
    numbered slots. A group is split into parts of at most ``caps.group_facts``; a batch takes parts
    in priority order until ``caps.groups`` groups or ``caps.batch_facts`` facts."""
    batches: list[list[Slot]] = []
    current: list[Slot] = []
    facts = 0
    for title, anchor, members in _groups(piles, caps):
        size = sum(m.facts for m in members)
        bounds = [(i, min(i + caps.group_facts, size)) for i in range(0, size, caps.group_facts)]
        anchors = tuple(m.anchor for m in members)  # once: a folded group has thousands of parts
        for n, (start, stop) in enumerate(bounds, start=1):
            if current and (len(current) >= caps.groups or facts + stop - start > caps.batch_facts):
                batches.append(current)
                current, facts = [], 0
            shown = f"{title} ({n}/{len(bounds)})" if len(bounds) > 1 else title
            current.append(Slot(len(current) + 1, shown, anchor, anchors, start, stop))
            facts += stop - start
    if current:
        batches.append(current)
    return batches


def best_first(items) -> list[Item]:
    """Items in the order a group shows them."""
    return sorted(items, key=rank)


def fill(slots: list[Slot], items_of) -> list[Group]:
    """The groups of ``slots``, each holding its part of its group's facts; ``items_of(piles, n)``
    gives the first ``n`` facts of the group made of those piles, best first."""
    needed: dict[tuple[str, ...], int] = {}
    for slot in slots:
        needed[slot.piles] = max(needed.get(slot.piles, 0), slot.stop)
    found = {key: items_of(key, n) for key, n in needed.items()}
    return [Group(s.number, s.title, s.anchor, found[s.piles][s.start : s.stop]) for s in slots]


def plan(items: list[Item], caps: Caps = Caps()) -> list[list[Group]]:
    """Every proposal's place: the batches they take, day after day, each a list of numbered groups."""
    by_anchor: dict[str, list[Item]] = {}
    for item in items:
        by_anchor.setdefault(item.anchor, []).append(item)

    ranked: dict[tuple[str, ...], list[Item]] = {}

    def items_of(anchors, n):
        if anchors not in ranked:
            ranked[anchors] = best_first(item for anchor in anchors for item in by_anchor[anchor])
        return ranked[anchors][:n]

    return [fill(batch, items_of) for batch in layout(piles(items), caps)]


def today(items: list[Item], caps: Caps = Caps()) -> list[Group]:
    """Today's batch: the first of the plan (empty when nothing waits)."""
    batches = plan(items, caps)
    return batches[0] if batches else []


# --- decisions -------------------------------------------------------------------------------------

VERBS = {"confirm": "confirm", "reject": "reject", "skip": "defer", "except": "defer"}
# A word, or a group's number with perhaps a fact's letter, each ending where a letter or digit does
# not follow ("1a2" is no target); ASCII digits alone, at most four of them.
_TOKEN = re.compile(r"\s*(?:(?P<sep>[,;])|(?P<word>[A-Za-z]+|[0-9]{1,4}[A-Za-z]?)(?![A-Za-z0-9]))")


def _tokens(text: str):
    """(kind, value, position) for each word, number-letter target and separator."""
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            return
        match = _TOKEN.match(text, position)
        if not match:
            raise BadInput(_where(text, position, "a word, a group number like 2, or a fact like 2b"))
        if match.group("sep"):
            yield ("sep", match.group("sep"), match.start("sep"))
        else:
            yield ("word", match.group("word").lower(), match.start("word"))
        position = match.end()


def _where(text: str, position: int, expected: str) -> str:
    shown = text[position : position + 12].strip() or "the end"
    return f"the decision goes wrong at {shown!r} (character {position + 1}): expected {expected}"


def parse(text: str, groups: list[Group]) -> dict[str, str]:
    """The decision ``text`` for ``groups`` as {fact id: "confirm" | "reject" | "defer"}, for the
    facts it names (the others stay proposed). Raises BadInput saying where it went wrong; a
    decision that parses always means exactly this mapping."""
    if not text or not text.strip():
        raise BadInput('the decision is empty: say for example "confirm all" or "confirm all except 2b"')
    by_number = {g.number: g for g in groups}
    decided: dict[str, str] = {}
    verb, verb_word = None, ""
    targets_in_clause = 0
    last_kind = None
    for kind, value, position in _tokens(text):
        if kind == "sep" or value == "and":  # ("and" separates as a comma does: "and and" is ",,")
            if verb is None:
                raise BadInput(_where(text, position, "confirm, reject, skip or except first"))
            if last_kind == "and" or (last_kind == "sep" and value != "and"):  # (", and" is one, as in English)
                raise BadInput(_where(text, position, "a verb or a target between two separators"))
            last_kind = "and" if value == "and" else "sep"
            continue
        if value in VERBS:
            if verb is not None and targets_in_clause == 0:
                raise BadInput(_where(text, position, f"what to {verb_word}: all, a group like 2, or a fact like 2b"))
            verb, verb_word, targets_in_clause = VERBS[value], value, 0
        elif verb is None:
            raise BadInput(_where(text, position, "confirm, reject, skip or except"))
        elif value == "all":
            for group in groups:
                for item in group.items:
                    decided[item.id] = verb
            targets_in_clause += 1
        elif value[0].isdigit():
            digits = value.rstrip(LETTERS)
            group = by_number.get(int(digits))
            if group is None and not groups:
                raise BadInput(
                    f"this batch has no group {digits}: nothing waited for review when it was made",
                    hint="kg batch shows what waits now",
                )
            if group is None:
                raise BadInput(_where(text, position, f"a group of this batch (1 to {len(groups)})"))
            letter, number = value[len(digits) :], group.number
            if letter:
                index = LETTERS.index(letter)
                if index >= len(group.items):
                    last = group.label(len(group.items) - 1)
                    raise BadInput(_where(text, position, f"a fact of group {number} ({number}a to {last})"))
                decided[group.items[index].id] = verb
            else:
                for item in group.items:
                    decided[item.id] = verb
            targets_in_clause += 1
        else:
            raise BadInput(
                _where(text, position, "confirm, reject, skip, except, all, a group like 2 or a fact like 2b")
            )
        last_kind = "word"
    if verb is None:
        raise BadInput(_where(text, 0, "confirm, reject, skip or except"))
    if targets_in_clause == 0:
        raise BadInput(_where(text, len(text), f"what to {verb_word}: all, a group like 2, or a fact like 2b"))
    return decided
