"""The Briefing (the console's Knowledge home) and the Constellation: what the knowledge base holds
and how it moved, summed up from kgrdf.measures (one row a fact, kept current by every write) and
kg stats's, kg lint's and kg batch's own reads.

The measures, as the design note defines them:

- captured: a fact's capture day is the UTC day of its ``recorded_at`` (``observed_at`` moves with
  each re-observation); facts captured per day over the last 30 days whatever their status now, and
  the running total;
- confirmed share: confirmed facts among the current ones (proposed or confirmed, not closed);
- coverage of a card (People, Process, Product, Systems): the share of its entities in at least one
  current confirmed fact, as subject or object; Systems are the system, service and environment
  types, kept apart from Process and Product;
- this week (the last 7 days): current facts recorded then, and facts a replacement closed then,
  shown before -> after;
- degree: how many distinct entities an entity shares a current link with; a link read at another
  valid or transaction time is read as kg facts --as-of --known-at reads facts (facts.rq);
- contradictions: kg lint's (how many, and the first SHOWN); proposals about to expire: those kg
  expire takes within a week.

Read for an audience (Session.hear_as), every measure is of the facts it may hear and the entities
that exist for it (kgrdf.audience): what an agent speaking there could be told, summed up.
"""

from datetime import timedelta

from kgrdf import clock, lint, measures, settings, vocab

DAYS = 30
WEEK = 7
CARDS = {  # card -> the entity types it counts
    "People": ("person", "team"),
    "Process": ("process", "step", "gate", "channel"),
    "Product": ("repo", "feature", "decision", "principle", "lesson"),
    "Systems": ("system", "service", "environment"),
}
SHOWN = 10  # facts, changes, entities and proposals listed in each section
DECISION_LINKS = {  # the links between decisions a week's changes show, and which side is the newer
    vocab.kg("supersedes").value: "newer first",
    vocab.kg("partiallyReversedBy").value: "older first",
}
MAX_STARS = 500  # the Constellation draws at most this many entities; the rest are folded


def counts(session, held) -> dict:
    """kg stats's counts, entities by type and facts by status, for the read's audience: kg stats's
    own for the owner; for an audience, of the facts it may hear (``held``, kgrdf.measures) and the
    entities that exist for it (:func:`_existing`), each of the type its id begins with."""
    if session.hearer is None:
        return session.stats()
    entities = by_type(_existing(session, held))
    facts: dict[str, int] = {}
    for status, count in held.by_status().items():
        key = session.schema.notation(status)
        facts[key] = facts.get(key, 0) + count
    return {
        "entities": entities,
        "facts": facts,
        "entity_count": sum(entities.values()),
        "fact_count": sum(facts.values()),
    }


def existing(session) -> set[str] | None:
    """The entities (IRIs) that exist for the read's audience (:func:`_existing`); None for the
    owner's read, for whom every entity does."""
    if session.hearer is None:
        return None
    held = measures.of(session)
    try:
        return _existing(session, held)
    finally:
        held.close()


def by_type(entities: set[str]) -> dict[str, int]:
    """How many of ``entities`` (IRIs) are of each type: the one their id begins with."""
    out: dict[str, int] = {}
    for iri in entities:
        kind = vocab.id_of(iri).split("/", 1)[0]
        out[kind] = out.get(kind, 0) + 1
    return out


def _existing(session, held) -> set[str]:
    """The entities (IRIs) that exist for the read's audience: those a fact it may hear names, and
    the perspective's own organization (kgrdf.audience's rule, which Session.may_see asks of one
    entity at a time), read from the measures' facts at once."""
    base = vocab.perspective_base(session.perspective)
    types = session.schema.types
    named = {iri for iri in held.named() if iri.startswith(base) and vocab.id_of(iri).split("/", 1)[0] in types}
    own = session.own_organization()
    if own is not None:
        named.add(own.iri)
    return named


def _time(moment) -> object:
    return vocab.datetime_literal(clock.iso(moment))


def captured(held, now) -> dict:
    """Facts captured per day over the last DAYS days, and the running total at the end of each."""
    start = clock.days_before(now, DAYS - 1).replace(hour=0, minute=0, second=0, microsecond=0)
    counts = held.captured(start, DAYS)
    total = counts.pop("before", 0)
    days = []
    for n in range(DAYS):
        day = clock.iso(start + timedelta(days=n))[:10]
        total += counts.get(day, 0)
        days.append({"day": day, "captured": counts.get(day, 0), "total": total})
    return {"days": days, "captured": sum(d["captured"] for d in days), "total": total}


def confirmed_share(held, now) -> dict:
    by_status = held.current_by_status(now)
    current = sum(by_status.values())
    confirmed = by_status.get("confirmed", 0)
    return {"confirmed": confirmed, "current": current, "share": confirmed / current if current else None}


def coverage(held, now, entities_by_type: dict[str, int]) -> list[dict]:
    covered: dict[str, int] = {}
    for entity in held.vouched(now):
        kind = vocab.id_of(entity).split("/", 1)[0]
        covered[kind] = covered.get(kind, 0) + 1
    out = []
    for card, types in CARDS.items():
        held_count = sum(entities_by_type.get(t, 0) for t in types)
        vouched = sum(covered.get(t, 0) for t in types)
        out.append(
            {
                "card": card,
                "entities": held_count,
                "covered": vouched,
                "share": vouched / held_count if held_count else None,
            }
        )
    return out


def _link_keys(session) -> dict[str, str]:
    """The predicates that take an entity, IRI -> key: a fact of one is a link."""
    return {p.iri: p.key for p in session.schema.predicates.values() if p.takes_entity}


def most_connected(session, held, valid_at, known_at, limit: int, true_then=None) -> list[dict]:
    """The ``limit`` entities with the highest degree (how many distinct entities each shares a link
    with, as true at ``valid_at`` and held at ``known_at``), most first (then by id), with names and
    types."""
    out = []
    true_then = true_then or _true_as_held(session, valid_at, known_at)
    for iri, degree in held.most_linked(set(_link_keys(session)), valid_at, known_at, limit, true_then):
        entity = _linked_entity(session, iri)
        if entity is not None:
            out.append({"id": entity.id, "name": entity.name, "type": entity.type, "degree": degree, "iri": iri})
    return out


def _true_as_held(session, valid_at, known_at):
    """Of the IRIs of facts given it, those that as held at ``known_at`` were current and true at
    ``valid_at`` (a link revised since, read as kg facts --known-at reads it); each fact's history
    read once, however often it is asked of."""
    decided: dict[str, bool] = {}

    def true_then(iris: list[str]) -> set[str]:
        ids = {vocab.id_of(iri): iri for iri in iris if iri not in decided}
        if ids:
            kept = session.true_as_held(list(ids), clock.iso(known_at), clock.iso(valid_at))
            decided.update({iri: fact_id in kept for fact_id, iri in ids.items()})
        return {iri for iri in iris if decided[iri]}

    return true_then


def _linked_entity(session, iri: str):
    """The entity a link the read's audience may hear names (a model.Entity), or None. The link names
    it, so it exists for that audience (kgrdf.audience): its description is read as it is
    (Session.named_entity), without Session.entity's query of the audiences of every fact naming
    it, a query an entity of the 150 the Constellation draws."""
    from pyoxigraph import NamedNode

    return session.named_entity(NamedNode(iri))


def this_week(session, held, now) -> dict:
    """The last WEEK days: current facts recorded then; and its changes, shown before -> after: facts
    closed by a replacement then, and the supersedes and partially_reversed_by links between
    decisions recorded then (the older decision's stated value -> the newer one's). The SHOWN newest
    of each are described."""
    since = clock.days_before(now, WEEK)
    counts = held.change_counts(since)
    new, changes = [], []
    for change, fact_iri, at, successor in held.changes(since, limit=SHOWN):
        fact = session.describe(session.fact(vocab.id_of(fact_iri), history=False))
        if change == "new":
            new.append(_brief(fact))
        else:
            after = _replacement(session, successor)
            changes.append({"kind": "replaced", "at": clock.iso(at), "before": _brief(fact), "after": after})
    decided, links = held.linked_since(set(DECISION_LINKS), since, SHOWN)
    for fact_iri, subject, predicate, target, at in links:
        older, newer = (target, subject) if DECISION_LINKS[predicate] == "newer first" else (subject, target)
        changes.append(
            {
                "kind": "decision",
                "at": clock.iso(at),
                "fact": vocab.id_of(fact_iri),
                "before": _decision(session, held, older, now),
                "after": _decision(session, held, newer, now),
            }
        )
    return {
        "new": counts.get("new", 0),
        "new_facts": new,
        "replaced": counts.get("replaced", 0),
        "decisions": decided,
        "changes": changes,
    }


def _replacement(session, successor: str) -> dict | None:
    """The fact that replaced another, briefly; None when the read's audience may not hear it (a
    successor it may not hear is not named)."""
    from kgrdf.errors import NotFound

    try:
        return _brief(session.describe(session.fact(vocab.id_of(successor), history=False)))
    except NotFound:
        return None


def _decision(session, held, iri: str, now) -> dict:
    """A decision as a change shows it: its name and what it states now (kg lookup's states fact).
    A link the read's audience may hear names it, so it exists for that audience."""
    entity = _linked_entity(session, iri)
    stated = held.value_of(iri, vocab.kg("states").value, now)
    name = entity.name if entity is not None else vocab.id_of(iri)
    return {"entity": entity.id if entity is not None else vocab.id_of(iri), "name": name, "states": stated}


def expiring(session, now) -> dict:
    """Proposals kg expire takes within a week: not observed again for KGRDF_PROPOSAL_DAYS less WEEK
    days (proposals-due.rq, asked only when the cache of what waits says one may be, as kg batch asks)."""
    from kgrdf import waiting

    days = settings.get("KGRDF_PROPOSAL_DAYS")
    cutoff = clock.days_before(now, max(days - WEEK, 0))
    cache = waiting.of(session)
    try:
        due = cache is None or cache.may_be_due(cutoff)
    finally:
        if cache is not None:
            cache.close()
    rows = session.values("proposals-due", before=_time(cutoff)) if due else []
    shown = [_brief(session.describe(session.fact(row["id"], history=False))) for row in rows[:SHOWN]]
    return {"count": len(rows), "facts": shown, "days": days}


def _brief(fact: dict) -> dict:
    keep = ("id", "sentence", "status", "subject", "subject_name", "object", "object_name", "recorded_at")
    return {k: fact[k] for k in keep if k in fact} | {"observed_at": fact.get("observed_at")}


def briefing(session, now=None) -> dict:
    """The Briefing's measures (the review card stack is kgrdf.batch's, the counts kg stats's), of
    what the read's audience may hear."""
    now = now or clock.now()
    held = measures.of(session)
    try:
        stats = counts(session, held)
        return {
            "now": clock.iso(now),
            "captured": captured(held, now),
            "confirmed_share": confirmed_share(held, now),
            "coverage": coverage(held, now, stats["entities"]),
            "this_week": this_week(session, held, now),
            "most_connected": [
                {k: v for k, v in node.items() if k != "iri"} for node in most_connected(session, held, now, now, SHOWN)
            ],
            "contradictions": lint.contradictions(session, now, SHOWN, held),
            "expiring": expiring(session, now),
            "stats": stats,
        }
    finally:
        held.close()


def constellation(session, stars: int = 150, valid_at=None, known_at=None) -> dict:
    """The graph of current links: the ``stars`` most connected entities and the links among them;
    the rest folded into counts by type. Read as of ``valid_at`` and as held at ``known_at``."""
    now = clock.now()
    valid_at, known_at = valid_at or known_at or now, known_at or now
    if not 1 <= stars <= MAX_STARS:
        from kgrdf.errors import BadInput

        raise BadInput(f"stars is a number from 1 to {MAX_STARS}")
    keys = _link_keys(session)
    held = measures.of(session)
    try:
        true_then = _true_as_held(session, valid_at, known_at)  # (the links of the top read again)
        top = most_connected(session, held, valid_at, known_at, stars, true_then)
        kept = {node.pop("iri"): node["id"] for node in top}
        found = held.links(set(keys), valid_at, known_at, sorted(kept), true_then)
        stats = counts(session, held)
    finally:
        held.close()
    edges, seen = [], set()
    for subject, predicate, target in found:
        if (subject, predicate, target) not in seen:
            seen.add((subject, predicate, target))
            edges.append({"from": kept[subject], "to": kept[target], "predicate": keys[predicate]})
    shown_types: dict[str, int] = {}
    for node in top:
        shown_types[node["type"]] = shown_types.get(node["type"], 0) + 1
    folded = {t: n - shown_types.get(t, 0) for t, n in stats["entities"].items() if n - shown_types.get(t, 0) > 0}
    return {
        "nodes": top,
        "edges": edges,
        "folded": folded,
        "entities": stats["entity_count"],
        "valid_at": clock.iso(valid_at),
        "known_at": clock.iso(known_at),
    }
