"""Identifiers: the chat member ids, tracker accounts and code-host logins of people (§8).

They are needed to route mentions and requests, and they are personal data, so they live apart from
the facts: in ``identifiers.jsonl`` (one ``{"entity", "perspective", "kind", "value", "added_at"}``
a line, mode 0600, never in the git history), never in the index, so no context pack, export,
search, SPARQL query or console page can show them. Only ``kg identifiers list`` does.

An identifier is of one perspective's person, as the person is (§9): listed, matched and forgotten
there alone. One written before identifiers had a perspective is taken as every perspective's
person of that id: routing then errs to the private journal, and a forget in any of them takes it.
"""

import unicodedata
from pathlib import Path

from kgrdf import clock, files, inputs, made, model, privacy, vocab
from kgrdf.errors import BadInput, Refused

FILE = "identifiers.jsonl"
KINDS = {"chat": "a chat member id", "tracker": "an issue tracker account", "code-host": "a code-host login"}
HOLDERS = {"person", "actor"}
_FIELDS = {"entity": True, "kind": True, "value": True, "perspective": False}  # a line's texts (required?)


def path(kb) -> Path:
    return kb.path / FILE


def read(kb) -> list[dict]:
    """Every identifier. Raises Damaged naming the line that does not parse."""
    return files.read_jsonl(path(kb), hint=f"fix or remove that line of {path(kb)}", text_fields=_FIELDS)


def owner(entry: dict) -> str:
    """What a forget's plan hashes to name the entry's person: their id, qualified by the perspective."""
    return f"{entry['perspective']} {entry['entity']}" if "perspective" in entry else entry["entity"]


def entry_key(entry: dict) -> str:
    """What a forget's plan hashes to name one entry (another person's identifier that names the one
    forgotten): its owner, kind and value."""
    return f"{owner(entry)} {entry['kind']} {entry['value']}"


def write(kb, entries: list[dict]) -> None:
    """Write the file whole, readable by its owner only (0600), never through a link."""
    files.write_jsonl(path(kb), entries)


def add(kb, session, entity_text: str, kind: str, value: str) -> tuple[dict, str]:
    """Record that ``entity_text`` (a person or actor) is known as ``value`` in ``kind``.
    Returns (the entry, "added" | "unchanged"). Raises BadInput for a value that is no text of at
    most KGRDF_MAX_TEXT visible characters. The caller holds the write lock."""
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise BadInput(f"unknown identifier kind {kind!r}; use one of {', '.join(KINDS)}")
    value = model.refuse_unprintable(inputs.text(value, "the identifier").strip(), "the identifier")
    if not value:
        raise BadInput("the identifier's value is empty")
    entity = session.resolve(entity_text)
    if entity.type not in HOLDERS:
        raise Refused(f"{entity.id} is {entity.a_type}: identifiers are kept for people and actors only")
    _refuse_another_persons_name(session, entity, kind, value)
    entries = read(kb)
    here = [entry for entry in entries if privacy.identifier_is_of(entry, session.perspective)]
    for entry in here:
        if (entry["entity"], entry["kind"], entry["value"]) == (entity.id, kind, value):
            return entry, "unchanged"
    for entry in here:
        if (entry["kind"], entry["value"]) == (kind, value):
            raise Refused(
                f"the {kind} identifier {value!r} belongs to {entry['entity']} already",
                hint="one identifier names one person",
            )
    _refuse_what_names_another(session, entity, kind, value)
    entry = {
        "entity": entity.id,
        "perspective": session.perspective,
        "kind": kind,
        "value": value,
        "added_at": clock.iso(clock.now()),
    }
    write(kb, entries + [entry])
    made.note(f"the {kind} identifier of {entity.id} was added")
    return entry, "added"


def _refuse_another_persons_name(session, entity, kind: str, value: str) -> None:
    """Refuse an identifier that is another person's id, name or alias (weak ones too), or another
    entity's: a person's identifiers are among what kg forget looks for, so forgetting this one would
    take facts that name the other, and forgetting the other would find it left here, in this one's
    identifiers; and every later fact naming the other entity ("calls the api") would be taken for
    one naming this person, kept in the private journal alone."""
    found = session.identify(value)
    others = [m for m in found["matches"] + found["suggestions"] if m["type"] in HOLDERS and m["id"] != entity.id]
    others += [m for m in found["matches"] if m["type"] not in HOLDERS]
    compatible = unicodedata.normalize("NFKC", value)
    if compatible != value:  # (ＡＰＩ is API, as the matcher reads it)
        others += [m for m in session.identify(compatible)["matches"] if m["type"] not in HOLDERS]
    if others:
        other = others[0]
        whose = (
            "a person's identifiers are theirs alone"
            if other["type"] in HOLDERS
            else f"every fact naming {other['id']} would be taken for one naming {entity.id}"
        )
        raise Refused(
            f"the {kind} identifier {value!r} of {entity.id} is the {other['matched']} of {other['id']} "
            f"({other['name']!r}): {whose}",
            hint="give the identifier as the chat, tracker or code host shows it",
        )


def _refuse_what_names_another(writer, entity, kind: str, value: str) -> None:
    """Refuse an identifier that names another person as kg forget reads text: their name or alias
    in another case or Unicode form (ＰＥＰＥ for Pepe), their identifier so (u024be7lh for U024BE7LH),
    or standing whole inside it. Forgetting that person would find it here, where it is not theirs."""
    others = sorted(writer.people_named_in(value) - {entity.iri})
    if others:
        other = vocab.id_of(others[0])
        raise Refused(
            f"the {kind} identifier {value!r} of {entity.id} names {other} as kg forget reads names "
            "(in any case or Unicode form): a person's identifiers are theirs alone",
            hint="one identifier names one person; give it as the chat, tracker or code host shows it",
        )


def listed(kb, session, entity_text: str | None = None) -> list[dict]:
    entries = [entry for entry in read(kb) if privacy.identifier_is_of(entry, session.perspective)]
    if entity_text:
        entity = session.resolve(entity_text)
        entries = [e for e in entries if e["entity"] == entity.id]
    return sorted(entries, key=lambda e: (e["entity"], e["kind"], e["value"]))
