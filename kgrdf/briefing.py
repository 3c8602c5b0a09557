"""The Briefing (the console's Knowledge home) and the Constellation: what the knowledge base holds
and how it moved, measured with whole-knowledge-base queries (each one scan, grouped in the engine).

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
- degree: how many distinct entities an entity shares a current link with;
- contradictions: kg lint's; proposals about to expire: those kg expire takes within a week.
"""

from datetime import timedelta

from kgrdf import clock, lint, settings, vocab

DAYS = 30
WEEK = 7
CARDS = {  # card -> the entity types it counts
    "People": ("person", "team"),
    "Process": ("process", "step", "gate", "channel"),
    "Product": ("repo", "feature", "decision", "principle", "lesson"),
    "Systems": ("system", "service", "environment"),
}
SHOWN = 10  # facts, changes, entities and proposals listed in each section
MAX_STARS = 500  # the Constellation draws at most this many entities; the rest are folded


def _time(moment) -> object:
    return vocab.datetime_literal(clock.iso(moment))


def captured(session, now) -> dict:
    """Facts captured per day over the last DAYS days, and the running total at the end of each."""
    start = (now - timedelta(days=DAYS - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    counts = {row["day"]: row["facts"] for row in session.values("briefing-captured", since=_time(start))}
    total = counts.pop("before", 0)
    days = []
    for n in range(DAYS):
        day = clock.iso(start + timedelta(days=n))[:10]
        total += counts.get(day, 0)
        days.append({"day": day, "captured": counts.get(day, 0), "total": total})
    return {"days": days, "captured": sum(d["captured"] for d in days), "total": total}


def confirmed_share(session, now) -> dict:
    by_status = {row["status"]: row["facts"] for row in session.values("briefing-status", now=_time(now))}
    current = sum(by_status.values())
    confirmed = by_status.get("confirmed", 0)
    return {"confirmed": confirmed, "current": current, "share": confirmed / current if current else None}


def coverage(session, now, entities_by_type: dict[str, int]) -> list[dict]:
    covered: dict[str, int] = {}
    for row in session.values("briefing-coverage", now=_time(now)):
        kind = vocab.id_of(row["entity"]).split("/", 1)[0]
        covered[kind] = covered.get(kind, 0) + 1
    out = []
    for card, types in CARDS.items():
        held = sum(entities_by_type.get(t, 0) for t in types)
        vouched = sum(covered.get(t, 0) for t in types)
        out.append({"card": card, "entities": held, "covered": vouched, "share": vouched / held if held else None})
    return out


def links(session, valid_at, known_at) -> list[tuple[str, str, str]]:
    """(subject IRI, predicate key, object IRI) of every current link, as true at ``valid_at`` and held at ``known_at``."""
    rows = session.rows("briefing-links", validAt=_time(valid_at), knownAt=_time(known_at))
    keys = {}
    out = []
    for row in rows:
        predicate = row["predicate"].value
        if predicate not in keys:
            found = session.schema.predicate_by_iri(predicate)
            keys[predicate] = found.key if found else vocab.id_of(predicate)
        out.append((row["subject"].value, keys[predicate], row["object"].value))
    return out


def degrees(found: list[tuple[str, str, str]]) -> dict[str, int]:
    """Entity IRI -> how many distinct entities it shares a link with."""
    peers: dict[str, set] = {}
    for subject, _predicate, target in found:
        peers.setdefault(subject, set()).add(target)
        peers.setdefault(target, set()).add(subject)
    return {entity: len(others) for entity, others in peers.items()}


def most_connected(session, valid_at, known_at, limit: int, found=None) -> list[dict]:
    """The ``limit`` entities with the highest degree, most first (then by id), with names and types."""
    from pyoxigraph import NamedNode

    counted = degrees(found if found is not None else links(session, valid_at, known_at))
    top = sorted(counted.items(), key=lambda item: (-item[1], item[0]))[:limit]
    out = []
    for iri, degree in top:
        entity = session.entity(NamedNode(iri))
        if entity is not None:
            out.append({"id": entity.id, "name": entity.name, "type": entity.type, "degree": degree, "iri": iri})
    return out


def this_week(session, now) -> dict:
    """The last WEEK days: current facts recorded then, and facts closed by a replacement then
    (before -> after), the SHOWN newest of each described."""
    since = _time(now - timedelta(days=WEEK))
    counts = {row["change"]: row["facts"] for row in session.values("briefing-change-counts", since=since)}
    new, changes = [], []
    for row in session.values("briefing-changes", since=since, limit=2 * SHOWN):
        fact = session.describe(session.fact(vocab.id_of(row["fact"]), history=False))
        if row["change"] == "new" and len(new) < SHOWN:
            new.append(_brief(fact))
        elif row["change"] == "replaced" and len(changes) < SHOWN:
            after = session.describe(session.fact(vocab.id_of(row["successor"]), history=False))
            changes.append({"at": row["at"], "before": _brief(fact), "after": _brief(after)})
    return {"new": counts.get("new", 0), "new_facts": new, "replaced": counts.get("replaced", 0), "changes": changes}


def expiring(session, now) -> dict:
    """Proposals kg expire takes within a week: not observed again for KGRDF_PROPOSAL_DAYS less WEEK days."""
    days = settings.get("KGRDF_PROPOSAL_DAYS")
    rows = session.values("proposals-due", before=_time(now - timedelta(days=max(days - WEEK, 0))))
    shown = [_brief(session.describe(session.fact(row["id"], history=False))) for row in rows[:SHOWN]]
    return {"count": len(rows), "facts": shown, "days": days}


def _brief(fact: dict) -> dict:
    keep = ("id", "sentence", "status", "subject", "subject_name", "object", "object_name", "recorded_at")
    return {k: fact[k] for k in keep if k in fact} | {"observed_at": fact.get("observed_at")}


def briefing(session, now=None) -> dict:
    """The Briefing's measures (the review card stack is kgrdf.batch's, the counts kg stats's)."""
    now = now or clock.now()
    stats = session.stats()
    return {
        "now": clock.iso(now),
        "captured": captured(session, now),
        "confirmed_share": confirmed_share(session, now),
        "coverage": coverage(session, now, stats["entities"]),
        "this_week": this_week(session, now),
        "most_connected": [
            {k: v for k, v in node.items() if k != "iri"} for node in most_connected(session, now, now, SHOWN)
        ],
        "contradictions": lint.contradictions(session, now),
        "expiring": expiring(session, now),
        "stats": stats,
    }


def constellation(session, stars: int = 150, valid_at=None, known_at=None) -> dict:
    """The graph of current links: the ``stars`` most connected entities and the links among them;
    the rest folded into counts by type. Read as of ``valid_at`` and as held at ``known_at``."""
    now = clock.now()
    valid_at, known_at = valid_at or known_at or now, known_at or now
    if not 1 <= stars <= MAX_STARS:
        from kgrdf.errors import BadInput

        raise BadInput(f"stars is a number from 1 to {MAX_STARS}")
    found = links(session, valid_at, known_at)
    top = most_connected(session, valid_at, known_at, stars, found)
    kept = {node.pop("iri"): node["id"] for node in top}
    edges, seen = [], set()
    for subject, predicate, target in found:
        if subject in kept and target in kept and (subject, predicate, target) not in seen:
            seen.add((subject, predicate, target))
            edges.append({"from": kept[subject], "to": kept[target], "predicate": predicate})
    stats = session.stats()
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
