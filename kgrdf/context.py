"""Context packs (§7): the few current, confirmed facts an agent needs about one thing, cited,
ranked, and cut to a token budget.

A pack is meant for a task brief. General context costs more than it helps, so a pack holds only
the thing itself and its close neighbourhood: the facts where it is the subject or the object, and
the facts of the entities anchored to it (the steps of a process, the decisions and lessons about
it, the features that are part of it or live in it). Nothing else reaches a pack: no summary, no
alias, no identifier; only facts in their reviewer sentences, each with its fact id and a source.

Ranking: facts that prevent rework first, then the facts of the thing itself (a process's steps in
their order, then what it says, then what points to it), then the facts of the entities anchored
to it. The budget cuts whole facts from the bottom of that ranking, and the pack says how many.

:func:`pack` reads the knowledge base; everything else here takes values and returns values.
"""

import math
import re
from collections.abc import Iterable, Iterator

from kgrdf import model, schema
from kgrdf.errors import BadInput, NotFound

TOPIC_ENTITIES = 3  # a topic packs at most this many of the entities that match it
MAX_ANCHORED = 30  # entities anchored to one packed entity whose facts are read (cost stays bounded)
SOURCE_WIDTH = 40  # a source reference longer than this is shortened in the middle

TOKEN_METHOD = (
    "kgrdf-approx-2: a run of ASCII letters counts ceil(length/4) tokens (at least 1); a run with a "
    "non-ASCII letter, and any other non-ASCII character (a space past ASCII too), counts its UTF-8 "
    "bytes; each digit, punctuation mark, newline and other ASCII control character counts 1; a run "
    "of 2 or more spaces and tabs ceil(length/4), a single one 0. It over-counts the BPE tokenizers "
    "of current models (cl100k, o200k) on English text, by about 1.5x."
)

_PIECE = re.compile(r"[^\W\d_]+|[ \t]+|.", re.DOTALL)
_ASCII_WORD = re.compile(r"[A-Za-z]+")
# Any other ASCII character but a space or tab: 1 each. Spelled as ASCII ranges: the negated class
# with \x80-\U0010ffff in it says the same and took 10 ms to compile in every process.
_ASCII_MARK = re.compile(r"[\x00-\x08\n-\x1f!-@\[-`{-\x7f]")
_SPACE_RUN = re.compile(r"[ \t]{2,}")
_WIDE = re.compile(r"[^\x00-\x7f]")  # a character past ASCII: its UTF-8 bytes, unless in a word
_WIDE_WORD = re.compile(r"[^\W\x00-\x7f]")  # a letter or digit past ASCII, which makes its run count bytes


def count_tokens(text: str) -> int:
    """Tokens in ``text`` by the stated approximation (TOKEN_METHOD): never fewer than a BPE
    tokenizer counts on English text. Additive over lines: a joining newline counts 1. No run of
    characters counts nothing but a single space or tab: a pack of spaces past ASCII (U+00A0,
    U+3000) or of one long run of spaces is counted, not taken as empty.

    >>> count_tokens("Sam reviews web-app [f-3k9x2a]")
    16
    """
    if not _WIDE_WORD.search(text):  # the usual case (words in ASCII), counted by kind, not piece by piece
        return (
            sum((len(word) + 3) // 4 for word in _ASCII_WORD.findall(text))
            + len(_ASCII_MARK.findall(text))
            + sum((len(run) + 3) // 4 for run in _SPACE_RUN.findall(text))
            + sum(len(c.encode("utf-8", "surrogatepass")) for c in _WIDE.findall(text))
        )
    return count_pieces(text)


def count_pieces(text: str) -> int:
    """count_tokens, piece by piece: for any text."""
    total = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        if piece[0] in " \t":
            total += 0 if len(piece) == 1 else math.ceil(len(piece) / 4)
        elif piece[0].isalpha():
            total += (
                max(1, math.ceil(len(piece) / 4)) if piece.isascii() else len(piece.encode("utf-8", "surrogatepass"))
            )
        else:
            total += 1 if piece.isascii() else len(piece.encode("utf-8", "surrogatepass"))
    return total


# --- ranking ---------------------------------------------------------------------------------------

# The kinds of fact in a pack, most specific first: a process's steps, the facts the thing says
# (it is the subject), the facts that point to it (it is the object), the facts of the entities
# anchored to it.
KINDS = ("self", "steps", "about", "links", "around")
SELF_FACTS = 5  # the perspective's own organization: at most this many of its facts open every pack
REWORK = "prevents rework"


def rank_key(fact: dict) -> tuple:
    """Where a fact goes in a pack: prevents rework first, then the thing's own facts before its
    neighbourhood's, then by packed entity, kind, step order, predicate and id."""
    anchor_order = fact.get("anchor_order")
    order = fact.get("order")
    return (
        0 if fact["kind"] == "self" else 1,
        0 if fact.get("prevents_rework") else 1,
        0 if fact["kind"] != "around" else 1,
        fact.get("entity_index", 0),
        KINDS.index(fact["kind"]),
        anchor_order is None,
        anchor_order or 0,
        fact.get("anchor") or "",
        order is None,
        order or 0,
        fact.get("predicate") or "",
        fact["sentence"],
        fact["id"],
    )


def rank(facts: list[dict], mark_conflicts=None) -> list[list[dict]]:
    """The facts in pack order (see :func:`rank_key`), each with its ``section``, in units the
    budget keeps or cuts whole: a fact alone, or the values that conflict (``mark_conflicts``:
    FactReads'), marked, newest first, where the first of them is ranked and in its section. An agent
    is shown both until a person resolves them (§9), never the older alone."""
    ranked = sorted(facts, key=rank_key)
    for fact in ranked:
        fact["section"] = REWORK if fact.get("prevents_rework") and fact["kind"] != "self" else fact["kind"]
    if mark_conflicts is not None:
        ranked = mark_conflicts(ranked)
    return _units(ranked)


def _units(facts: list[dict]) -> list[list[dict]]:
    """``facts`` (marked, each group of conflicting values together) as units: a fact alone, or a
    group, in the section of its first fact. (Every fact of a pack is true now, so the values of a
    group each conflict with every other: the group is the run of facts that names one another.)"""
    units: list[list[dict]] = []
    for fact in facts:
        conflicting = set(fact.get("conflicting") or ())
        if units and conflicting & {other["id"] for other in units[-1]}:
            if "section" in units[-1][0]:
                fact["section"] = units[-1][0]["section"]
            units[-1].append(fact)
        else:
            units.append([fact])
    return units


# --- rendering -------------------------------------------------------------------------------------


def short_source(sources: list[dict]) -> str:
    """The first source as ``kind:ref``, a long reference shortened in the middle, and how many
    more there are. ``[{"kind": "slack", "ref": "https://chat.example/p1"}]`` -> ``slack:chat.example/p1``."""
    if not sources:
        return "no source"
    ref = re.sub(r"^[a-z][a-z0-9+.-]*://(www\.)?", "", str(sources[0]["ref"]))
    if len(ref) > SOURCE_WIDTH:
        half = (SOURCE_WIDTH - 3) // 2
        ref = ref[:half] + "..." + ref[-half:]
    more = f" +{len(sources) - 1}" if len(sources) > 1 else ""
    return f"{sources[0]['kind']}:{ref}{more}"


def _title(pack: dict) -> list[str]:
    entities = pack["entities"]
    if "message" in pack:
        named = "; ".join(f"{e['name']} ({e['type']}, {e['id']})" for e in entities) or (
            "no entity named once" if pack.get("ambiguous") else "no known name"
        )
        lines = [f"# Context for a message that mentions: {named}"]
        if pack.get("ambiguous"):
            more = f" and {pack['more_ambiguous']} more" if pack.get("more_ambiguous") else ""
            lines.append(f"Left out, as more than one entity has the name: {', '.join(pack['ambiguous'])}{more}.")
        if pack.get("more_matches"):
            lines.append(f"{pack['more_matches']} more mentioned entities left out (kg mentions lists them).")
    elif "topic" not in pack:
        entity = entities[0]
        lines = [f"# Context: {entity['name']} ({entity['type']}, {entity['id']})"]
    else:
        named = "; ".join(f"{e['name']} ({e['type']}, {e['id']})" for e in entities)
        lines = [f'# Context for "{pack["topic"]}": {named}']
        if pack.get("more_matches"):
            lines.append(f"{pack['more_matches']} more entities match (kg search lists them).")
    if pack.get("self"):
        lines.append(f"We are {pack['self']['name']} ({pack['self']['id']}).")
    lines.append("Confirmed facts, most useful first, each with [fact id · source].")
    return lines


def _section_key(fact: dict) -> tuple:
    """Facts that share a heading: one "Prevents rework" section, then a section per kind and entity."""
    return (fact["section"], None if fact["section"] in (REWORK, "self") else fact.get("entity_index", 0))


def _heading(pack: dict, fact: dict) -> str:
    if fact["section"] == REWORK:
        return "## Prevents rework"
    if fact["section"] == "self":
        return f"## Our organization: {pack['self']['name']}"
    name = pack["entities"][fact.get("entity_index", 0)]["name"]
    return {
        "steps": f"## {name}: steps, in order",
        "about": f"## About {name}",
        "links": f"## Linked to {name}",
        "around": f"## Around {name}",
    }[fact["section"]]


def _bullet(fact: dict) -> str:
    order, mark = fact.get("order"), "-"
    if order is not None and fact["section"] == "steps":
        mark = f"{order}."
    elif order is not None and fact["section"] == REWORK:  # (listed first: its place among the steps with it)
        mark = f"- step {order}:"
    conflict = f" (conflicts with {', '.join(fact['conflicting'])})" if fact.get("conflicting") else ""
    return f"{mark} {fact['sentence']}{conflict} [{fact['id']} · {fact['source']}]"


def _footer(pack: dict, shown: int, omitted: int) -> list[str]:
    lines = []
    if shown == 0 and omitted == 0 and "message" in pack and not pack["entities"] and pack.get("ambiguous"):
        lines.append(  # (it named known entities: more than one of each name, and which one is not told)
            "Each name the message gives is more than one entity's: nothing to pack (kg mentions lists them; "
            "kg context --for ID packs one)."
        )
    elif shown == 0 and omitted == 0 and "message" in pack and not pack["entities"]:
        lines.append("The message mentions no known name or alias: nothing to pack.")
    elif shown == 0 and omitted == 0:
        lines.append("No confirmed facts hold now (kg lookup shows proposed ones, kg facts --all past ones).")
    if omitted:
        lines.append(f"_{omitted} more fact{'s' if omitted != 1 else ''} left out to fit {pack['budget']} tokens._")
    if pack.get("unread_entities"):
        lines.append(f"_The facts of {pack['unread_entities']} more anchored entities were not read._")
    return lines


def _lines(pack: dict, facts: list[dict], omitted: int) -> list[str]:
    lines = _title(pack)
    section = None
    for fact in facts:
        key = _section_key(fact)
        if key != section:
            lines += ["", _heading(pack, fact)]
            section = key
        lines.append(_bullet(fact))
    footer = _footer(pack, len(facts), omitted)
    return lines + ([""] + footer if footer else [])


def markdown(pack: dict) -> str:
    """The pack as markdown: a title line, then one section per kind with one bullet per fact,
    then what was left out."""
    return "\n".join(_lines(pack, pack["facts"], pack["omitted"]))


def _cost(lines: list[str]) -> int:
    """count_tokens of the lines joined by newlines, by its additivity."""
    return sum(count_tokens(line) for line in lines) + max(0, len(lines) - 1)


def fit(pack: dict, ranked: Iterable[list[dict]], total: int) -> dict:
    """``pack`` with ``facts`` (the facts of the longest prefix of the units ``ranked`` whose
    markdown fits ``pack["budget"]``: values that conflict are kept or left out together),
    ``omitted``, ``tokens`` and ``markdown``.

    ``ranked`` is consumed only as far as needed (each fact needs its ``source`` once it is
    taken), and holds ``total`` facts. Raises BadInput when the budget cannot hold even the title
    and the note of what was left out.
    """
    budget = pack["budget"]
    head = _title(pack)
    used = _cost(head)
    units: list[list[dict]] = []
    taken = 0
    section = None
    for unit in ranked:
        added = []
        for fact in unit:
            key = _section_key(fact)
            added += ([""] + [_heading(pack, fact)] if key != section else []) + [_bullet(fact)]
            section = key
        cost = _cost(added) + 1
        footer = _footer(pack, taken + len(unit), total - taken - len(unit))
        if used + cost + (_cost(footer) + 2 if footer else 0) > budget:
            break
        units.append(unit)
        taken += len(unit)
        used += cost
    # The footer's count can gain a digit as facts leave: check the whole text and drop more if need be.
    while True:
        kept = [fact for unit in units for fact in unit]
        omitted = total - len(kept)
        text = "\n".join(_lines(pack, kept, omitted))
        tokens = count_tokens(text)
        if tokens <= budget:
            break
        if not kept:
            minimum = tokens
            while (needed := count_tokens("\n".join(_lines({**pack, "budget": minimum}, [], total)))) > minimum:
                minimum = needed  # the note names the budget: a longer number, a longer note
            raise BadInput(
                f"a budget of {budget} tokens cannot hold even the pack's title and note, which take {minimum}",
                hint=f"give --budget {minimum} or more",
            )
        units.pop()
    public = [
        {
            k: fact[k]
            for k in (
                "id",
                "sentence",
                "source",
                "section",
                "entity",
                "anchor",
                "predicate",
                "order",
                "prevents_rework",
                "conflicting",
            )
            if fact.get(k) is not None
        }
        for fact in kept
    ]
    return {**pack, "facts": public, "omitted": omitted, "tokens": tokens, "markdown": text}


# --- reading the knowledge base ----------------------------------------------------------------------


def _entities(session, text: str) -> tuple[list, dict]:
    """The entity ``text`` names (id, name or strong alias), else the few entities a topic matches:
    exact matches first. Raises NotFound when nothing matches."""
    entity = session.entity_by_id(text.strip())
    if entity is not None:
        return [session.survivor(entity)], {}  # (a merged organization's id leads to the one kept)
    found = session.identify(text)
    if len(found["matches"]) == 1:
        return [session.survivor(session.entity_by_id(found["matches"][0]["id"]))], {}
    hits = session.search(text)
    if not hits:
        raise NotFound(
            f"nothing is called {text!r} or has it in its name",
            hint="kg search finds names; kg add-entity makes an entity",
        )
    chosen = [session.entity_by_id(hit["id"]) for hit in hits[:TOPIC_ENTITIES]]
    topic = {"topic": text.strip()}
    if len(hits) > TOPIC_ENTITIES:
        topic["more_matches"] = len(hits) - TOPIC_ENTITIES
    return chosen, topic


def candidate(row: dict, entity, kind: str, index: int, packed, anchor: dict | None = None) -> dict:
    """A fact row of context-facts.rq about ``entity`` as a candidate for the pack about ``packed``
    (the same entity, or the one ``entity`` is anchored to), in plain words."""
    peer = row.get("peerName") or row.get("peerId") or str(row["peer"])
    subject, target = (peer, entity.name) if row["direction"] == "in" else (entity.name, peer)
    fact = {
        "id": row["id"],
        "iri": row["fact"],
        "kind": kind,
        "entity_index": index,
        "entity": packed.id,
        "predicate": row.get("predicateKey") or schema.key_of(row["predicate"]),
        "sentence": schema.read_out(row.get("sentence"), str(subject), str(target), row["predicate"]),
        "prevents_rework": bool(row.get("preventsRework")),
        # what tells values that conflict (FactReads.mark_conflicts): every fact here is confirmed
        "status": "confirmed",
        "subject": entity.iri if row["direction"] == "out" else row["peer"],
        "value": row["peer"],
        "valid_from": row.get("validFrom"),
        "valid_to": row.get("validTo"),
        "recorded_at": row.get("recordedAt"),
    }
    if row.get("order") is not None:
        fact["order"] = row["order"]
    if anchor is not None:
        fact["anchor"] = anchor["id"]
        fact["anchor_order"] = anchor.get("order")
    return fact


IDENTIFIER_SHOWN = "[an identifier]"


def _identifiers_masked(session):
    """A function that masks in a text every person's identifier (kg identifiers: a chat id, a
    login) standing whole, as the matcher of people reads one: a pack holds no identifier, even one
    a person typed into a fact's value or a source."""
    from kgrdf import identifiers, privacy

    values = {entry.get("value") for entry in identifiers.read(session.kb) if isinstance(entry, dict)}
    values = {privacy.fold(v).strip() for v in values if isinstance(v, str) and v.strip()}
    if not values:
        return lambda text: text
    whole = privacy.whole_tokens(values)
    return lambda text: privacy.mask_tokens(whole, text, IDENTIFIER_SHOWN) if text else text


def _is_anchored(row: dict) -> bool:
    """Whether the other end of a fact belongs to the entity (its step; a lesson about it; a part)."""
    return (row.get("anchoring") == "container" and row["direction"] == "out") or (
        row.get("anchoring") == "anchor" and row["direction"] == "in"
    )


def gather(session, entities: list, now) -> tuple[list[dict], int]:
    """The candidate facts of a pack about ``entities``, and how many anchored entities were not read."""
    from pyoxigraph import NamedNode

    from kgrdf import model

    packed_iris = {e.iri for e in entities}
    seen: set[str] = set()
    facts: list[dict] = []
    unread = 0
    for index, entity in enumerate(entities):
        anchored: dict[str, dict] = {}
        for row in session.values("context-facts", entity=NamedNode(entity.iri), now=now):
            if row["id"] in seen:
                continue
            seen.add(row["id"])
            kind = (
                "steps"
                if row.get("anchoring") == "container" and row["direction"] == "out"
                else ("about" if row["direction"] == "out" else "links")
            )
            facts.append(candidate(row, entity, kind, index, entity))
            if _is_anchored(row) and row.get("peerId") and row["peer"] not in packed_iris:
                anchor = anchored.setdefault(
                    row["peer"], {"id": row["peerId"], "name": row.get("peerName") or row["peerId"]}
                )
                if kind == "steps" and row.get("order") is not None:
                    anchor["order"] = row["order"]
        by_rank = sorted(
            anchored.items(), key=lambda item: (item[1].get("order") is None, item[1].get("order") or 0, item[1]["id"])
        )
        unread += max(0, len(by_rank) - MAX_ANCHORED)
        for iri, anchor in by_rank[:MAX_ANCHORED]:
            node = model.Entity(anchor["id"], iri, "?", anchor["name"])
            for row in session.values("context-facts", entity=NamedNode(iri), now=now):
                if row["direction"] != "out" or row["id"] in seen:
                    continue
                seen.add(row["id"])
                facts.append(candidate(row, node, "around", index, entity, anchor))
    return facts, unread


def own_facts(session, ours, now, seen: set[str]) -> list[dict]:
    """The first facts the self organization says about itself: they open every pack."""
    from pyoxigraph import NamedNode

    rows = [
        r
        for r in session.values("context-facts", entity=NamedNode(ours.iri), now=now)
        if r["direction"] == "out" and r["id"] not in seen
    ]
    rows.sort(key=lambda r: (r.get("predicateKey") or "", r["id"]))
    # The first SELF_FACTS, but never one of two values that conflict without the other (marked
    # before the cut: the pack would give the older alone).
    facts = session.mark_conflicts([candidate(row, ours, "self", 0, ours) for row in rows])
    kept: list[dict] = []
    for unit in _units(facts):
        if len(kept) >= SELF_FACTS:
            break
        kept += unit
    return kept


MESSAGE_ENTITIES = 5  # a message's pack is about at most this many of the entities it mentions


def pack_for_message(session, message: str, budget: int) -> dict:
    """A pack about the entities a message mentions (kg mentions: whole names and strong aliases,
    in the order of the message; a name two entities share is left out), the self organization
    first. With nothing mentioned, the pack holds the self organization alone."""
    chosen, ambiguous = [], []
    for mention in session.mentions(message):
        if len(mention["entities"]) > 1:
            if model.match_key(mention["text"]) not in map(model.match_key, ambiguous):  # (each name once)
                ambiguous.append(mention["text"])
            continue
        entity = session.survivor(session.entity_by_id(mention["entities"][0]["id"]))
        if entity.iri not in {e.iri for e in chosen}:
            chosen.append(entity)
    head = {"message": message, "mentioned": len(chosen)}
    if ambiguous:
        head["ambiguous"] = ambiguous[:MESSAGE_ENTITIES]  # (the title names a few: a message may repeat many)
        if len(ambiguous) > MESSAGE_ENTITIES:
            head["more_ambiguous"] = len(ambiguous) - MESSAGE_ENTITIES
    if len(chosen) > MESSAGE_ENTITIES:
        head["more_matches"] = len(chosen) - MESSAGE_ENTITIES
    return _packed(session, chosen[:MESSAGE_ENTITIES], head, budget)


def pack(session, text: str, budget: int) -> dict:
    """A context pack about the entity ``text`` names, or about a topic: the entities whose names
    match it. Raises NotFound when nothing matches and BadInput for a budget too small for the
    pack's title.

    Example: ``pack(session, "release", 1500)["facts"][0]["sentence"]`` is "Release process is
    announced in #deploys" in the example organization (it prevents rework).
    """
    if budget < 1:
        raise BadInput(f"--budget must be a positive number of tokens, not {budget}")
    entities, topic = _entities(session, text)
    return _packed(session, entities, {"for": text, **topic}, budget)


def _packed(session, entities: list, head: dict, budget: int) -> dict:
    """The pack about ``entities``: gathered, ranked (the self organization first), cited, fitted."""
    from kgrdf import clock, vocab

    if budget < 1:
        raise BadInput(f"--budget must be a positive number of tokens, not {budget}")
    now = vocab.datetime_literal(clock.iso(clock.now()))
    facts, unread = gather(session, entities, now)
    ours = session.own_organization()
    if ours is not None and ours.iri not in {e.iri for e in entities}:
        facts = own_facts(session, ours, now, {f["id"] for f in facts}) + facts
    facts = session.rework_as_heard(facts)  # (before they rank: a flag puts a fact first)
    ranked = rank(facts, session.mark_conflicts)

    masked = _identifiers_masked(session)

    def cited(units: list[list[dict]]) -> Iterator[list[dict]]:
        for unit in units:  # a source is read only for a fact the budget may keep
            yield [
                {
                    **fact,
                    "sentence": masked(fact["sentence"]),
                    "source": masked(short_source(session.sources_heard(fact["iri"]))),
                }
                for fact in unit
            ]

    if head.get("ambiguous"):  # (names the message gave, shown in the title)
        head = {**head, "ambiguous": [masked(name) for name in head["ambiguous"]]}
    head = {
        **head,
        "entities": [{"id": e.id, "type": e.type, "name": masked(e.name)} for e in entities],
        "budget": budget,
        "token_method": TOKEN_METHOD,
    }
    if ours is not None:
        head["self"] = {"id": ours.id, "name": masked(ours.name)}
    if unread:
        head["unread_entities"] = unread
    return fit(head, cited(ranked), len(facts))
