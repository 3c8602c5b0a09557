"""``kg import``: records of entities and facts (JSON or JSON lines) through the write path (§6).

A record is ``{"type": "entity", "id", "name", "aliases", "weak_aliases", "summary"}`` or
``{"type": "fact", "subject", "predicate", "object" | "value", "sources", "authority", "status",
"valid_from", "valid_to", "order", "prevents_rework", "reason", "audience", "said_by", "message",
"extracted", "confidence", "span"}``, ``sources`` being ``KIND:REF`` strings or ``{"kind", "ref"}``
objects.

Each field is read strictly, never guessed at: text is a JSON string; a list is a JSON array (a
string where a list goes is refused, whatever the field, rather than read letter by letter or split);
true or false is a JSON boolean or the string "true" or "false"; a whole number is a JSON integer or
a string of digits; a number a JSON number or a decimal string; null is "not given". A field the
record kind does not have, a key given twice, a source object with other keys than "kind" and "ref",
is refused with the record's line and why. A fact record may name an entity that a later record
of the file makes: a fact naming one not known where it stands is staged again after every other. "status" may only say "proposed", or "confirmed", which
is imported as a proposal (an import confirms nothing by itself) and said so in the report.

An import is one transaction: every record goes through the writer as ``kg add-entity`` and
``kg propose`` would take it, a refused record is counted by its reason and left out, and the
records that pass are validated together against the SHACL shapes, each constraint one set-based
query over the whole import (pySHACL one node at a time would take minutes at 100k facts). It is a
dry run unless applied; every fact is a proposal unless the auto-confirm rules are asked for.
"""

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kgrdf import batch, clock, privacy, review, vocab
from kgrdf.errors import BadInput, KgError, NotFound

# Where a refusal comes from, in the words of §6.
WHITELIST_SHAPES = {vocab.kg("PeopleWhitelistShape").value, vocab.kg("PersonShape").value}
LISTED_REFUSALS = 20  # refusals shown one by one; the rest are counted
CHUNK = 10_000  # records staged between two checks against the shapes
# Stagings of an import at most: an entity record the shapes refuse is taken out and the rest staged
# again (facts about it may no longer resolve), and so is the first record of a fact the shapes refuse
# that later records observed (PEELED): proposed one by one, the first is refused and the next makes
# the fact anew, which may pass (a person's stated preference heard first as observed, then from the
# stakeholder). What still fails on the last staging is refused whole, every record of it.
ATTEMPTS = 3


class _Made(NamedTuple):
    """A record that made or observed a fact in an import: its line, what it did (created,
    observed, ...), the auto-confirm rule that confirmed it, and its number among the records."""

    line: int
    action: str
    rule: str | None
    number: int


@dataclass
class Record:
    line: int  # the line of the file it is on (a JSON array's item: the line it starts on)
    data: dict | None
    problem: str | None = None  # why it is no record at all (refused as malformed)


@dataclass
class Report:
    """What an import did, or would do."""

    records: int = 0
    entities: dict = field(default_factory=dict)  # outcome -> count
    facts: dict = field(default_factory=dict)  # outcome -> count
    auto_confirmed: dict = field(default_factory=dict)  # rule -> count
    proposals: int = 0  # facts the import leaves waiting for review
    refused: dict = field(default_factory=dict)  # reason -> count
    refusals: list = field(default_factory=list)  # the first few: {line, reason, message}
    batches: int = 0
    applied: bool = False
    fact_ids: dict = field(default_factory=dict)  # record line -> the id of the fact it made or observed
    asked_confirmed: int = 0  # fact records that said "status": "confirmed" (imported as proposals)

    def count(self, action: str, rule: str | None, by: int = 1) -> None:
        self.facts[action] = self.facts.get(action, 0) + by
        if rule:
            self.auto_confirmed[rule] = self.auto_confirmed.get(rule, 0) + by
        for counts in (self.facts, self.auto_confirmed):
            for key in [k for k, n in counts.items() if n == 0]:
                del counts[key]

    def refuse(self, line: int, reason: str, message: str) -> None:
        """Count the record at ``line`` as refused for ``reason``."""
        self.refused[reason] = self.refused.get(reason, 0) + 1
        # The first by line are listed, whenever each was refused (the shapes' refusals come last).
        if len(self.refusals) < LISTED_REFUSALS or line < self.refusals[-1]["line"]:
            self.refusals.append({"line": line, "reason": reason, "message": _as_fields(message)})
            self.refusals.sort(key=lambda refusal: refusal["line"])
            del self.refusals[LISTED_REFUSALS:]

    def notes(self) -> list[str]:
        """What the import did otherwise than a record said, though not refused."""
        if not self.asked_confirmed:
            return []
        n = self.asked_confirmed
        return [
            f'{n} fact record{"s" if n != 1 else ""} said "status": "confirmed": an import confirms nothing by '
            f"itself, so {'each is' if n != 1 else 'it is'} imported as a proposal for review (kg batch), unless "
            f"--auto-confirm's rules confirm {'them' if n != 1 else 'it'}"
        ]

    def as_json(self) -> dict:
        return {
            "records": self.records,
            "applied": self.applied,
            "entities": self.entities,
            "facts": self.facts,
            "auto_confirmed": self.auto_confirmed,
            "proposals": self.proposals,
            "daily_batches": self.batches,
            "refused": self.refused,
            "refused_total": sum(self.refused.values()),
            "refusals": self.refusals,
            "notes": self.notes(),
        }


class Records:
    """The records of an import file, made anew at each pass over them (an import that stages again
    without a refused entity makes another): between passes it holds the file's bytes, and during
    one the record being staged, not a hundred thousand parsed records beside the write's own."""

    def __init__(self, data: bytes | None = None, items: list | None = None):
        from kgrdf import inputs, settings

        self._data, self._items = data, items
        self._line_limit = settings.get("KGRDF_MAX_LINE")
        self._count = len(items) if items is not None else sum(1 for _, line in inputs.lines(data) if line.strip())

    def __len__(self) -> int:
        return self._count

    def __iter__(self):
        if self._items is not None:
            # (an item that did not parse alone is its refusal already: _items_alone)
            yield from (item if isinstance(item, Record) else _record(line, item) for line, item in self._items)
            return
        from kgrdf import inputs

        limit = self._line_limit
        for number, line in inputs.lines(self._data):
            if not line.strip():
                continue
            if len(line) > limit:
                yield Record(number, None, f"the line is {len(line)} bytes long; the most is {limit} (KGRDF_MAX_LINE)")
                continue
            try:
                yield _record(number, inputs.parse_json(line.decode("utf-8"), unique_keys=True))
            except UnicodeDecodeError:
                yield Record(number, None, "the line is not UTF-8 text")
            except ValueError as exc:
                yield Record(number, None, f"not JSON: {exc}")


def read_records(path: Path) -> Records:
    """Records from a JSON array or a JSON-lines file of at most KGRDF_MAX_IMPORT bytes. Raises
    BadInput when the file cannot be read, is too large or (an array) does not parse; a line or an
    item that is not a record becomes a record refused as malformed, never the whole import."""
    from kgrdf import inputs, settings

    data = inputs.read(path, "KGRDF_MAX_IMPORT", "the import file")
    if _RDF.match(data):  # (each line refused as no JSON, and exit 0, told nothing of why)
        raise BadInput(
            f"{path} is RDF (as kg export writes it), not records: kg import reads JSON records, "
            "one object a line or a JSON array of them (kg import --help)"
        )
    if data.lstrip().startswith(b"["):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput(f"{path} is not UTF-8 text") from None
        items = _items_alone(text, settings.get("KGRDF_MAX_LINE"))
        if items is None and not _first_line_parses(data):  # else JSON lines whose first record is a list
            try:
                inputs.parse_json(text, unique_keys=True)
            except ValueError as exc:
                raise BadInput(f"{path}: not JSON: {exc}") from None
            raise BadInput(f"{path}: not JSON: not an array of records")
        if items is not None:
            return Records(items=items)
    return Records(data=data)


_SPACE = re.compile(r"[ \t\n\r]*")  # what JSON allows between its tokens
# RDF where records were asked for: Turtle, TriG, N-Triples or N-Quads by their first statement
# after any comment lines (a directive and its IRI, an IRI or a blank node and what follows it: a
# line that starts "Base camp" or "<!DOCTYPE" is no RDF, only a line that is not JSON), JSON-LD by
# its first key
_RDF = re.compile(
    rb"\A(?:\xef\xbb\xbf)?(?:\s*#[^\n]*\n)*\s*(?:"
    rb"(?i:@?prefix)\s+[^\s:<>]*:\s*<|(?i:@?base)\s+<"  # a directive
    rb"|(?:<[^\s<>\"{}|^`\\]*>|_:[^\s<>]+)\s+(?:<|_:|\{|a\s|[A-Za-z][\w.-]*:|\[)"  # a statement or a graph
    rb"|[\[{]\s*\{?\s*\"@(?:context|graph|id)\")"  # JSON-LD
)


def _items_alone(text: str, limit: int) -> list | None:
    """(line, item) of each item of the JSON array ``text``, parsed on its own, so that one that is no
    JSON record (it gives a key twice, it nests too deep, it is longer than ``limit`` bytes, as a
    line of JSON lines may not be) is a Record refused as malformed; an item's line is the one it
    starts on, as a refusal names it. None when ``text`` is no JSON array at all."""
    import json

    from kgrdf import inputs

    # Only to find where an item ends: it takes what the item's own parse refuses (a key given
    # twice, a control character in a string, a number of more than 4,300 digits)
    bounds = json.JSONDecoder(strict=False, parse_int=str, parse_float=str, parse_constant=str)
    items = []
    line, counted = 1, 0  # the line of the text up to counted
    at = _SPACE.match(text).end()
    if text[at : at + 1] != "[":
        return None
    at = _SPACE.match(text, at + 1).end()
    if text[at : at + 1] == "]":  # an empty array: no record
        return [] if _SPACE.match(text, at + 1).end() == len(text) else None
    while True:
        try:
            _, end = bounds.raw_decode(text, at)
        except RecursionError:  # (json's decoder recurses a level at a time: found without it)
            end = _nested_end(text, at)
            if end is None:
                return None
        except ValueError:
            return None
        line = line + text.count("\n", counted, at)
        counted = at
        size = len(text[at:end].encode("utf-8"))
        if size > limit:
            items.append(
                (line, Record(line, None, f"the record is {size} bytes long; the most is {limit} (KGRDF_MAX_LINE)"))
            )
        else:
            try:
                items.append((line, inputs.parse_json(text[at:end], unique_keys=True)))
            except ValueError as exc:
                items.append((line, Record(line, None, f"not JSON: {exc}")))
        at = _SPACE.match(text, end).end()
        if text[at : at + 1] == "]":
            return items if _SPACE.match(text, at + 1).end() == len(text) else None
        if text[at : at + 1] != ",":
            return None
        at = _SPACE.match(text, at + 1).end()


def _nested_end(text: str, at: int) -> int | None:
    """Where the array or object that starts at ``at`` ends (past its closing bracket), read a
    character at a time, strings skipped; None when it does not end."""
    depth, i, n = 0, at, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _first_line_parses(data: bytes) -> bool:
    from kgrdf import inputs

    first = data.lstrip().split(b"\n", 1)[0]
    try:
        inputs.parse_json(first.decode("utf-8"))
    except ValueError:
        return False
    return True


def _record(number: int, data) -> Record:
    if not isinstance(data, dict) or data.get("type") not in ("entity", "fact"):
        return Record(number, None, 'a record is an object with "type": "entity" or "fact"')
    return Record(number, data)


# The fields of each kind of record and what they hold: text, free text kept and shown to people (no
# control character but tabs and newlines), a list of texts, a whole number, true or false, a number,
# or sources. A field that is absent or null is not given.
_FIELDS = {
    "entity": {
        "type": "text",
        "id": "text",
        "name": "text",
        "aliases": "texts",
        "weak_aliases": "texts",
        "summary": "prose",
    },
    "fact": {
        "type": "text",
        "subject": "text",
        "predicate": "text",
        "object": "text",
        "value": "prose",
        "sources": "sources",
        "authority": "text",
        "status": "text",
        "valid_from": "text",
        "valid_to": "text",
        "order": "whole",
        "prevents_rework": "flag",
        "reason": "prose",
        "audience": "text",
        "said_by": "text",
        "message": "text",
        "extracted": "flag",
        "confidence": "number",
        "span": "prose",
    },
}
_REQUIRED = {"entity": ("id",), "fact": ("subject", "predicate")}
_WHOLE = re.compile(r"[0-9]+\Z")
_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?\Z")


def _checked(data: dict, limit: int | None = None) -> dict:
    """The record's fields, each of the kind it must be (see the module's note), texts of at most
    ``limit`` characters (KGRDF_MAX_TEXT, read once an import). Raises BadInput naming the field and
    what it holds."""
    from kgrdf import inputs

    kind = data["type"]
    unknown = sorted(set(data) - set(_FIELDS[kind]))
    if unknown:
        names = ", ".join(json.dumps(name) for name in unknown[:5])  # (escaped: a newline, a lone surrogate)
        raise BadInput(
            f"a{'n' if kind == 'entity' else ''} {kind} record has no field {names}; its fields are "
            + ", ".join(f'"{name}"' for name in _FIELDS[kind] if name != "type")
        )
    for name in _REQUIRED[kind]:
        if data.get(name) is None:
            raise BadInput(f'a{"n" if kind == "entity" else ""} {kind} record needs "{name}"')
    out = {}
    for name, holds in _FIELDS[kind].items():
        value = data.get(name)
        if value is None:
            continue
        if holds == "text":
            out[name] = inputs.text(value, name, limit)
        elif holds == "prose":
            out[name] = inputs.prose(value, name, limit)
        elif holds == "texts":
            out[name] = _texts(value, name, limit)
        elif holds == "sources":
            out[name] = _sources(value, limit)
        elif holds == "whole":
            out[name] = _whole(value, name)
        elif holds == "flag":
            out[name] = _flag(value, name)
        elif holds == "number":
            out[name] = _number(value, name)
    for name in ("valid_from", "valid_to"):
        if name in out:
            clock.parse_time(out[name], name)  # refused here, by its own name, when it is no date
    if kind == "fact" and out.get("status") not in (None, "proposed", "confirmed"):
        raise BadInput(
            f'status {out["status"]!r} is not imported: an import records proposals ("proposed"; '
            f'"confirmed" goes in as a proposal for review)'
        )
    return out


def _texts(value, name: str, limit: int | None = None) -> list[str]:
    """A list of texts. A string is refused, not taken as its letters nor split at commas."""
    from kgrdf import inputs

    if isinstance(value, str):
        raise BadInput(
            f"{name} must be a list of texts, not text ({value[:40]!r}): write "
            f"[{inputs.json.dumps(value[:40])}] for one"
        )
    return inputs.texts(value, name, limit)


def _flag(value, name: str) -> bool:
    """true or false: a JSON boolean, or exactly the string "true" or "false"."""
    from kgrdf import inputs

    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    shown = f"text ({value[:40]!r})" if isinstance(value, str) else inputs.shown(value)
    raise BadInput(f"{name} must be true or false, not {shown}")


def _whole(value, name: str) -> int:
    """A whole number: a JSON integer, or a string of digits."""
    from kgrdf import inputs

    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _WHOLE.match(value.strip()):
        digits = value.strip().lstrip("0") or "0"
        if len(digits) > 18:  # (int() refuses past 4,300 digits, and no count or order comes near)
            raise BadInput(f"{name} must be a whole number of at most 18 digits, not one of {len(digits):,}")
        return int(digits)
    shown = f"text ({value[:40]!r})" if isinstance(value, str) else inputs.shown(value)
    raise BadInput(f"{name} must be a whole number, not {shown}")


def _number(value, name: str) -> float:
    """A number: a JSON number, or a decimal string like "0.8"."""
    from kgrdf import inputs

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _DECIMAL.match(value.strip()):
        return float(value.strip())
    shown = f"text ({value[:40]!r})" if isinstance(value, str) else inputs.shown(value)
    raise BadInput(f"{name} must be a number, not {shown}")


def _sources(value, limit: int | None = None) -> list[str]:
    from kgrdf import inputs

    if isinstance(value, str):
        raise BadInput(
            f"sources must be a list, not text ({value[:40]!r}): write [{inputs.json.dumps(value[:40])}] for one"
        )
    if not isinstance(value, list):
        raise BadInput(f"sources must be a list, not {inputs.shown(value)}")
    out = []
    for source in value:
        if isinstance(source, dict):
            extra = sorted(set(source) - {"kind", "ref"})
            if extra or "kind" not in source or "ref" not in source:
                raise BadInput(
                    'a source object is {"kind": ..., "ref": ...}'
                    + (f", without {', '.join(repr(k) for k in extra[:3])}" if extra else "")
                )
            kind = inputs.text(source["kind"], "a source kind", limit)
            if ":" in kind:  # (joined to its ref, the colon would move into the ref: doc: and x read as doc and :x)
                raise BadInput(f"a source kind holds no ':' (as in doc or slack), not {kind!r}")
            out.append(f"{kind}:{inputs.text(source['ref'], 'a source ref', limit)}")
        elif isinstance(source, str):
            out.append(inputs.text(source, "a source", limit))
        else:
            raise BadInput(f'a source is KIND:REF or {{"kind", "ref"}}, not {inputs.shown(source)}')
    return out


# The options kg add-entity and kg propose take, as a record names them: the writer's refusals
# name the options ("an entity needs a --name"), which an import file has none of.
_AS_FIELDS = {
    "--source KIND:REF": '"sources"',
    "--source": '"sources"',
    "--name": '"name"',
    "--object": '"object"',
    "--value": '"value"',
    "--valid-from": '"valid_from"',
    "--valid-to": '"valid_to"',
    "--order": '"order"',
    "--confidence": '"confidence"',
    "--span": '"span"',
    "--extracted": '"extracted"',
    "--audience": '"audience"',
    "--message": '"message"',
    "--said-by": '"said_by"',
}
_OPTION = re.compile("|".join(re.escape(option) + r"(?![\w-])" for option in _AS_FIELDS))


def _as_fields(message: str) -> str:
    """A refusal as a record's fields say it; one that gives a kg command to run keeps its options."""
    if "kg " in message:
        return message
    return _OPTION.sub(lambda found: _AS_FIELDS[found.group(0)], message)


def _said(exc: KgError) -> str:
    """A record's refusal as the report lists it: the writer's words. Its way out is a command-line
    one ("kg add-entity makes it"), which an import's record does not take, but a forgotten person's:
    kg import takes --allow-forgotten too."""
    if _reason(exc) == "forgotten" and exc.hint:
        return f"{exc.message} ({exc.hint})"
    return exc.message


def _reason(exc: KgError) -> str:
    if exc.details.get("conflict"):
        return "conflict"  # with what the knowledge base holds: a known fact's times, a name in use
    if exc.details.get("whitelist"):
        return "whitelist"  # (as the People whitelist's shapes are, when the writer refuses first)
    if isinstance(exc, NotFound) or "ambiguous" in exc.message:
        return "unresolved"
    if isinstance(exc, BadInput):
        return "malformed"
    if "was forgotten" in exc.message:
        return "forgotten"
    return "schema"


def _stage(writer, record: Record, auto_confirm: bool, report: Report, limit: int | None = None):
    """Put one record through the writer; returns (fact IRI, action, auto-confirm rule) for a fact
    record, None for an entity. Raises KgError when the record is refused, before anything of it is
    staged."""
    data = _checked(record.data, limit)
    if data["type"] == "entity":
        _, outcome = writer.add_entity(
            data["id"],
            data.get("name") or "",
            data.get("aliases") or [],
            data.get("weak_aliases") or [],
            data.get("summary"),
        )
        report.entities[outcome] = report.entities.get(outcome, 0) + 1
        return None
    result = writer.propose(
        data["subject"],
        data["predicate"],
        object=data.get("object"),
        value=data.get("value"),
        sources=data.get("sources") or [],
        authority=data.get("authority") or "observed",
        valid_from=data.get("valid_from"),
        valid_to=data.get("valid_to"),
        order=data.get("order"),
        prevents_rework=bool(data.get("prevents_rework")),
        reason=data.get("reason"),
        auto_confirm=auto_confirm,
        heard=_heard(data),
    )
    report.count(result.action, result.rule)
    if data.get("status") == "confirmed":
        report.asked_confirmed += 1
    return result.fact.iri, result.action, result.rule


def _heard(data: dict):
    """Where a fact record was heard: "audience", "said_by", "message", and "extracted" with
    "confidence" and "span", as kg propose takes them."""
    from kgrdf.writer import Heard

    return Heard(
        data.get("audience", "owner"),
        data.get("said_by"),
        data.get("message"),
        bool(data.get("extracted")),
        data.get("confidence"),
        data.get("span"),
    )


def _pinned(writer, record: Record) -> Record:
    """A fact record that waits for a later entity, each name it gives that means an entity at its
    line (its subject, object and speaker) given as that entity's id: staged after the file's later records, it means what it meant
    where it is (a later record may rename that entity, or give its name to another)."""
    pinned = dict(record.data)
    for role in ("subject", "object", "said_by"):
        name = pinned.get(role)
        if isinstance(name, str):
            try:
                pinned[role] = writer.resolve(name, role=role).id
            except KgError:
                pass  # (not an entity yet: resolved when it is staged, after every other record)
    return Record(record.line, pinned, record.problem)


def _people_ahead(records) -> list[tuple[str, list[str]]]:
    """(id, names) of every person or actor the import's entity records add or name, wherever they
    stand in the file (Staging.expect_people): the names given as texts, a record that is not one
    being refused when it is staged."""
    people = []
    for record in records:
        data = record.data
        if not isinstance(data, dict) or data.get("type") != "entity" or not isinstance(data.get("id"), str):
            continue
        entity_id = data["id"].strip()
        if entity_id.split("/", 1)[0] not in privacy.PERSON_TYPES:
            continue
        given = [data.get("name")] + [
            name for key in ("aliases", "weak_aliases") if isinstance(data.get(key), list) for name in data[key]
        ]
        names = [name for name in given if isinstance(name, str) and name.strip()]
        if names:
            people.append((entity_id, names))
    return people


def _aliases_ahead(writer, records, at_once: int = 500):
    """The records, the aliases of each block of ``at_once`` of them given to the writer before
    any is staged (expect_aliases): the aliases of an import's entities are looked up in the
    index a block at a time, and the records are still read one block at a time."""
    read = iter(records)
    while block := list(itertools.islice(read, at_once)):
        aliases = [
            alias
            for r in block
            if isinstance(r.data, dict) and r.data.get("type") == "entity" and isinstance(r.data.get("aliases"), list)
            for alias in r.data["aliases"]
        ]
        if aliases:
            writer.expect_aliases(aliases)
        yield from block


def stage_all(writer, records: Records, auto_confirm: bool, progress=None) -> Report:
    """Stage every record that the writer accepts, then validate them together with the shapes and
    take out the facts that fail (an entity that fails means staging again without it; so does a
    fact that one record made and others observed: see PEELED)."""
    from kgrdf import settings

    writer.check_perspective()  # the whole import is refused in a perspective that does not exist
    limit = settings.get("KGRDF_MAX_TEXT")
    people = _people_ahead(records)
    skip: dict[int, tuple[str, str]] = {}  # records refused by the shapes, by number: (reason, message)
    for attempt in range(ATTEMPTS):
        report = Report(records=len(records))
        made: dict[str, list[_Made]] = {}  # fact IRI -> the records that made or observed it
        entities: dict[str, int] = {}  # entity IRI -> the number of the record that made it
        fresh = writer.fork()
        fresh.expect_people(people)
        total = len(records)
        ahead: list[tuple[int, Record]] = []  # facts naming an entity that a later record may make
        for n, record in enumerate(_aliases_ahead(fresh, records)):
            if progress and n % 1000 == 0:
                progress(n, total)
            if n and n % CHUNK == 0 and total > fresh.BULK:
                fresh.check_chunk()  # checked beside the staging of the next chunk
            if n in skip:
                report.refuse(record.line, *skip[n])
                continue
            if record.problem:
                report.refuse(record.line, "malformed", record.problem)
                continue
            if ahead and record.data.get("type") == "fact":
                # Once a fact waits for a later entity, every fact after it waits too: the facts are
                # staged in the file's order, so that a fact's first record is the one that makes it
                # (its valid time, order and reason), as when the entity comes first.
                ahead.append((n, _pinned(fresh, record)))
                continue
            try:
                staged = _stage(fresh, record, auto_confirm, report, limit)
            except NotFound as exc:
                if record.data.get("type") == "fact" and not exc.details.get("conflict"):
                    ahead.append((n, _pinned(fresh, record)))  # staged again after every other record
                else:
                    report.refuse(record.line, _reason(exc), _said(exc))
                continue
            except KgError as exc:
                report.refuse(record.line, _reason(exc), _said(exc))
                continue
            if staged is None:
                entities[vocab.entity_iri(writer.perspective, record.data["id"].strip()).value] = n
            else:
                made.setdefault(staged[0], []).append(_Made(record.line, staged[1], staged[2], n))
        for done, (n, record) in enumerate(ahead):
            if done and done % CHUNK == 0 and len(ahead) > fresh.BULK:
                fresh.check_chunk()
            try:
                staged = _stage(fresh, record, auto_confirm, report, limit)
            except KgError as exc:
                report.refuse(record.line, _reason(exc), _said(exc))
                continue
            made.setdefault(staged[0], []).append(_Made(record.line, staged[1], staged[2], n))
        if progress:
            progress(total, total)
            progress.note("checking the shapes ...")
        failing_facts, failing_entities = {}, {}
        findings = fresh.findings(meanwhile=fresh.prepare_commit)
        for finding in findings:
            if finding.severity != "violation":
                continue
            reason = "whitelist" if finding.shape in WHITELIST_SHAPES else "schema"
            focus = finding.focus.split("/source/")[0].split("/update/")[0]
            if focus in made:
                failing_facts.setdefault(focus, (reason, finding.message))
            elif focus in entities:
                failing_entities.setdefault(focus, (reason, finding.message))
        if failing_entities:
            for iri, refusal in failing_entities.items():
                skip[entities[iri]] = refusal
            continue  # facts about a refused entity may no longer resolve: stage again without it
        peeled = {
            made_by[0].number: failing_facts[iri]
            for iri, made_by in made.items()
            if iri in failing_facts and len(made_by) > 1 and made_by[0].action == "created"
        }
        if peeled and attempt < ATTEMPTS - 1:
            skip.update(peeled)  # PEELED: the records after the first make the fact anew, or fail alone
            continue
        for iri, (reason, message) in failing_facts.items():
            for by in made[iri]:
                report.refuse(by.line, reason, message)
                report.count(by.action, by.rule, by=-1)
        fresh.drop_facts(failing_facts)
        report.refusals.sort(key=lambda refusal: refusal["line"])
        report.fact_ids = {
            line: vocab.id_of(iri) for iri, made_by in made.items() if iri not in failing_facts for line, *_ in made_by
        }
        writer.adopt(fresh)
        writer.validated = True  # what is left passed the shapes just now
        writer.warnings = [
            f for f in findings if f.severity == "warning" and f.focus.split("/source/")[0] not in failing_facts
        ]
        waiting = batch.pending_items(writer, [iri for iri in made if iri not in failing_facts])
        report.proposals = len(waiting)
        report.batches = len(review.layout(review.piles(waiting), batch.caps()))
        return report
    raise BadInput("the import's entity records keep failing validation; check them with kg add-entity one by one")


def run(
    kb, path: Path, apply: bool = False, auto_confirm: bool = False, progress=None, allow_forgotten: bool = False
) -> Report:
    """Import the records of the file at ``path`` into ``kb``: a dry run unless ``apply``."""
    import gc

    records = read_records(path)
    # An import makes millions of small objects and frees them by reference counting; the cyclic
    # collector walking them all again and again costs a quarter of the time at 100k facts.
    gc.disable()
    try:
        with kb.writing("import", dry_run=not apply) as writer:
            writer.allow_forgotten = allow_forgotten
            report = stage_all(writer, records, auto_confirm, progress)
            del records  # staged: let them go before the commit holds the journal's text beside the writer's
            report.applied = apply and writer.has_change
            if progress and report.applied:
                progress.note("writing the journal, the index and the git commit ...")
    finally:
        gc.enable()
    return report
