"""An organization's digest (§9): markdown for a person or an agent to read, a view of the
knowledge base and never a source of truth. It is built from one lookup, so a digest for an
audience holds only what that audience may hear."""

from kgrdf.errors import Refused
from kgrdf.render import speaker

RELATIONS = ("customer_of", "vendor_of", "parent_of")


def of(session, text: str, audience: str | None) -> dict:
    """The digest of the organization ``text`` names, as the session's audience may hear it.
    Raises Refused for an entity that is not an organization."""
    result = session.lookup(text)
    if result["entity"]["type"] != "organization":
        raise Refused(
            f"{result['entity']['id']} is a {result['entity']['type']}, not an organization",
            hint="kg lookup shows any entity",
        )
    return {"organization": result["entity"]["id"], "audience": audience, "markdown": markdown(result, audience)}


def _cite(fact: dict) -> str:
    source = fact["sources"][0] if fact.get("sources") else None
    cited = f"{fact['id']}" + (f" · {source['kind']}:{source['ref']}" if source else "")
    said = f"; said by {speaker(fact)}" if fact.get("said_by") else ""
    return f"[{cited}{said}]"


def sections(result: dict) -> dict:
    """The digest's parts of ``result`` (Session.lookup of an organization): confirmed attributes
    (conflicts marked), relations, people, anything else confirmed, unverified claims, and the
    proposals waiting. The markdown and the console's organization page show these same lists."""
    confirmed = [f for f in result["facts"] if f["status"] == "confirmed"]
    backlinks = [f for f in result["backlinks"] if f["status"] == "confirmed"]
    attributes = [f for f in confirmed if "value" in f and f["predicate"] != "claimed_member"]
    relations = [f for f in confirmed + backlinks if f["predicate"] in RELATIONS]
    people = [f for f in backlinks if f["predicate"] == "affiliated_with"]
    claims = [
        f for f in result["facts"] if f["predicate"] == "claimed_member" and f["status"] in ("proposed", "confirmed")
    ]
    other = [f for f in confirmed + backlinks if f not in attributes + relations + people + claims]
    proposed = [f for f in result["facts"] + result["backlinks"] if f["status"] == "proposed"]
    return {
        "attributes": attributes,
        "relations": relations,
        "people": people,
        "other": other,
        "claims": claims,
        "proposed": proposed,
    }


def markdown(result: dict, audience: str | None) -> str:
    """The digest of ``result`` (Session.lookup of an organization)."""
    entity = result["entity"]
    lines = [f"# {entity['name']} ({entity['id']})"]
    if entity.get("self"):
        lines.append("Our own organization.")
    if entity.get("aliases"):
        lines.append(f"Also known as: {', '.join(entity['aliases'])}.")
    lines.append(f"_A digest for {audience or 'the owner'}: a view of the knowledge base, not a source of truth._")
    parts = sections(result)
    attributes, relations, people = parts["attributes"], parts["relations"], parts["people"]
    other, claims, proposed = parts["other"], parts["claims"], parts["proposed"]
    for title, facts in [("Attributes", attributes), ("Relations", relations), ("People", people), ("Also", other)]:
        if not facts:
            continue
        lines += ["", f"## {title}"]
        for fact in facts:
            conflict = f" (conflicts with {', '.join(fact['conflicting'])})" if fact.get("conflicting") else ""
            lines.append(f"- {fact['sentence']}{conflict} {_cite(fact)}")
    if claims:
        lines += ["", "## Claims (unverified: someone said so)"]
        for fact in claims:
            role = f", {fact['claimed_role']}" if fact.get("claimed_role") else ""
            promoted = f"; promoted to {fact['promoted_to']}" if fact.get("promoted_to") else ""
            lines.append(f"- {fact['value']}{role} {_cite(fact)}{promoted}")
    if proposed:
        lines += [
            "",
            f"_{len(proposed)} more proposed fact{'s' if len(proposed) != 1 else ''} wait for review (kg batch)._",
        ]
    if not (attributes or relations or people or other or claims or proposed):
        lines += ["", "Nothing is known about it yet."]
    return "\n".join(lines)
