"""Output: one JSON document for programs (--json), or plain text for a person, in colour on a terminal."""

import codecs
import functools
import json as jsonlib
import re
import sys

from kgrdf import clock
from kgrdf.inputs import CONTROLS

_COLOURS = {
    "confirmed": "green",
    "proposed": "yellow",
    "rejected": "red",
    "expired": "bright_black",
    "error": "red",
    "dim": "bright_black",
    "title": "cyan",
}


def _tty() -> bool:
    return sys.stdout.isatty()


def paint(text: str, colour: str) -> str:
    if not _tty():
        return text
    import typer

    return typer.style(text, fg=_COLOURS.get(colour, colour))


# The control characters a terminal obeys (C0 but tab and newline, DEL, C1): a carriage return or an
# escape sequence in a stored text would rewrite the line a reader sees. kgrdf refuses them in the
# free text it keeps (inputs.prose), and shows any a text still holds (written before, or by another replica)
# escaped, as \x1b.
# (json escapes C0 itself; DEL and C1 it writes as they are)
_JSON_CONTROLS = {code: f"\\u{code:04x}" for code in range(0x7F, 0xA0)}
_JSON_CONTROL = re.compile(r"[\x7f-\x9f]")  # looked for first: translate() walks every character (0.13 s a MB)


def visible(text: str) -> str:
    """``text`` with each control character a terminal would obey (inputs.CONTROLS) escaped, as ``\\x1b``."""
    return CONTROLS.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def _visible(value):
    """A document with every text in it :func:`visible`; anything but text, lists and objects as is."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {_visible(key): _visible(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_visible(item) for item in value]
    return value


def _on_screen(render):
    """A renderer ``render(as_json, ...)`` whose text shows every control character of its data
    escaped (:func:`visible`); its JSON is left to emit."""

    @functools.wraps(render)
    def shown(as_json: bool, *args, **options):
        if not as_json:
            args, options = _visible(args), _visible(options)
        return render(as_json, *args, **options)

    return shown


def takes_all_text(stream) -> bool:
    """Whether a stream's encoding writes every character (a UTF): a locale's narrower one
    (ISO-8859-1, ASCII) cannot write a Greek or CJK name, nor an emoji."""
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name.startswith("utf")
    except LookupError:
        return False


def emit(document) -> None:
    # (JSON escapes what the output's encoding cannot write: the same document, whatever the locale)
    text = jsonlib.dumps(document, indent=2, ensure_ascii=not takes_all_text(sys.stdout), default=str)
    if _JSON_CONTROL.search(text):
        text = text.translate(_JSON_CONTROLS)
    sys.stdout.write(text + "\n")


@_on_screen
def out(as_json: bool, document, text: str) -> None:
    if as_json:
        emit(document)
    elif text:
        print(text)


# Every character str.splitlines() breaks a line at: an error stays one line, whatever it quotes.
_BREAKS = {ord(c): c.encode("unicode_escape").decode("ascii") for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


def error(exc, as_json: bool) -> None:
    line = f"kg: {exc.message}"
    if exc.hint:
        line += f" ({exc.hint})"
    print(visible(line.translate(_BREAKS)), file=sys.stderr)
    if as_json:
        emit(exc.as_json())


SOURCES_SHOWN = 10  # on a fact's line; --json gives them all


def counted(number: int, noun: str, nouns: str | None = None) -> str:
    """ "1 fact", "2 facts": a number and its noun, plural (``nouns``, else noun + s) but for one."""
    return f"{number} {noun if number == 1 else nouns or noun + 's'}"


def _sources(fact: dict) -> str:
    """A fact's sources on its line: the first few, and how many more (a fact heard in 5,000
    messages is one line, not 5,000 references)."""
    sources = fact.get("sources", [])
    shown = ", ".join(f"{s['kind']}:{s['ref']}" for s in sources[:SOURCES_SHOWN]) or "no source"
    more = len(sources) - SOURCES_SHOWN
    return shown + (f" and {more} more (--json lists them)" if more > 0 else "")


def fact_line(fact: dict, indent: str = "  ") -> str:
    status = paint(f"[{fact['status']}]", fact["status"])
    when = []
    if fact.get("valid_from"):
        when.append(f"from {clock.shown(fact['valid_from'])}")
    if fact.get("valid_to"):
        when.append(f"to {clock.shown(fact['valid_to'])}")
    if fact.get("superseded_by"):
        when.append(f"superseded by {fact['superseded_by']}")
    if fact.get("conflicting"):
        when.append(f"conflicts with {', '.join(fact['conflicting'])}")
    extra = f" ({'; '.join(when)})" if when else ""
    rework = " !" if fact.get("prevents_rework") else ""
    line = (
        f"{indent}{fact['id']} {status}{rework} {fact['sentence']}{extra}\n"
        f"{indent}    {paint(fact['authority'] + ' · ' + _sources(fact), 'dim')}"
    )
    heard = _heard(fact)
    return line + (f"\n{indent}    {paint(heard, 'dim')}" if heard else "")


def speaker(fact: dict) -> str:
    """Who said a fact, with their organization when they said it: "Jo Park (Texture)"."""
    who = fact.get("said_by_name") or fact["said_by"]
    if fact.get("speaker_affiliation"):
        who += f" ({fact.get('speaker_affiliation_name') or fact['speaker_affiliation']})"
    return who


def _heard(fact: dict) -> str:
    """Where a fact was heard, when there is more to say than the owner's own."""
    parts = []
    heard_in = [a for a in fact.get("audiences", []) if a != "owner"]
    if heard_in:
        parts.append("heard in " + ", ".join(fact["audiences"]))
    if fact.get("said_by"):
        parts.append(f"said by {speaker(fact)}" + (f" in {fact['message']}" if fact.get("message") else ""))
    elif fact.get("message"):
        parts.append(f"in {fact['message']}")
    if fact.get("extracted"):
        parts.append(
            "extracted"
            + (f" ({fact['confidence']:.2f})" if fact.get("confidence") is not None else "")
            + (f" from {fact['span']!r}" if fact.get("span") else "")
        )
    if fact.get("claimed_role") is not None or fact.get("verified") is False:
        parts.append("unverified claim" if not fact.get("verified") else "verified claim")
    if fact.get("promoted_to"):
        parts.append(f"promoted to {fact['promoted_to']}")
    if fact.get("merged_from"):
        parts.append(f"carried over from {fact['merged_from']} in a merge")
    return " · ".join(parts)


def _entity_head(entity: dict) -> str:
    head = paint(f"{entity['name']}", "title") + f"  {entity['id']} ({entity['type']})"
    if entity.get("aliases"):
        head += f"\n  also: {', '.join(entity['aliases'])}"
    if entity.get("weak_aliases"):
        head += f"\n  related: {', '.join(entity['weak_aliases'])}"
    if entity.get("summary"):
        head += f"\n  {entity['summary']}"
    return head


@_on_screen
def lookup(as_json: bool, result: dict) -> None:
    if as_json:
        return emit(result)
    print(_entity_head(result["entity"]))
    print(f"facts ({len(result['facts'])}):")
    for fact in result["facts"]:
        print(fact_line(fact))
    if not result["facts"]:
        print("  none current")
    if result["backlinks"]:
        print(f"pointing here ({len(result['backlinks'])}):")
        for fact in result["backlinks"]:
            print(fact_line(fact))


@_on_screen
def facts(as_json: bool, result: dict) -> None:
    if as_json:
        return emit(result)
    scope = []
    if result.get("as_of"):
        scope.append(f"true at {result['as_of']}")
    if result.get("known_at"):
        scope.append(f"as known at {result['known_at']}")
    print(_entity_head(result["entity"]) + (f"\n  ({', '.join(scope)})" if scope else ""))
    for fact in result["facts"]:
        print(fact_line(fact))
    if not result["facts"]:
        print("  no facts")


def outcome_doc(result, shown: dict, warnings=()) -> dict:
    """The document of a write that changed a fact: the fact as it is now, what happened to it, why,
    the facts it closed and any warning (what kg --json prints, and kg serve answers)."""
    doc = {**shown, "outcome": result.action}
    if result.note:
        doc["note"] = result.note
    closed = [{"id": f.id, "superseded_by": result.fact.id} for f in (result.closed or [])]
    if closed:
        doc["closed"] = closed
    if warnings:
        doc["warnings"] = [w.as_json() for w in warnings]
    return doc


WARNINGS_SHOWN = 5  # a write's warnings on standard error (a value beside a history of a thousand)


@_on_screen
def outcome(as_json: bool, result, shown: dict, warnings=()) -> None:
    for warning in warnings[:WARNINGS_SHOWN]:
        print(f"kg: warning: {visible(warning.message)}", file=sys.stderr)
    if len(warnings) > WARNINGS_SHOWN:
        more = len(warnings) - WARNINGS_SHOWN
        print(f"kg: warning: and {more} more (--json and kg validate list every one)", file=sys.stderr)
    doc = outcome_doc(result, shown, warnings)
    if as_json:
        return emit(doc)
    print(f"{result.action} {fact_line(shown, indent='').lstrip()}")
    if result.note:
        print(paint(visible(result.note), "dim"))
    for item in doc.get("closed", []):
        print(f"closed {item['id']} (superseded by {item['superseded_by']})")


@_on_screen
def identify(as_json: bool, found: dict) -> None:
    if as_json:
        return emit(found)
    for match in found["matches"]:
        print(f"{match['id']}  {match['name']}  ({match['matched']} {match['label']!r})")
    if len(found["matches"]) > 1:
        print(
            paint(f"ambiguous: {len(found['matches'])} entities are called {found['text']!r}", "error"), file=sys.stderr
        )
    for suggestion in found["suggestions"]:
        print(f"maybe {suggestion['id']}  {suggestion['name']}  (weak alias {suggestion['label']!r})")
    if not found["matches"]:
        print(f"kg: no entity is called {found['text']!r}", file=sys.stderr)


@_on_screen
def search(as_json: bool, text: str, hits: list) -> None:
    if as_json:
        return emit({"text": text, "results": hits})
    for hit in hits:
        labels = ", ".join(f"{m['how']} {m['label']!r}" for m in hit["matched"])
        print(f"{hit['id']}  {hit['name']}  ({labels})")
    if not hits:
        print(f"nothing matches {text!r}")


@_on_screen
def mentions(as_json: bool, text: str, found: list) -> None:
    if as_json:
        return emit({"text": text, "mentions": found})
    for mention in found:
        where = f"{mention['text']!r} at {mention['start']}-{mention['end']}"
        if len(mention["entities"]) == 1:
            entity = mention["entities"][0]
            print(f"{where}  {entity['id']}  {entity['name']}  ({entity['matched']})")
        else:
            print(f"{where}  ambiguous: " + ", ".join(f"{e['id']} ({e['name']})" for e in mention["entities"]))
    if not found:
        print("no known name or alias is mentioned")


@_on_screen
def neighbors(as_json: bool, result: dict) -> None:
    if as_json:
        return emit(result)
    by_distance: dict[int, list] = {}
    for node in result["nodes"][1:]:
        by_distance.setdefault(node["distance"], []).append(node)
    print(_entity_head(result["entity"]))
    for distance, nodes in sorted(by_distance.items()):
        print(f"{distance} hop{'s' if distance > 1 else ''}:")
        for node in nodes:
            print(f"  {node['id']}  {node['name']}")
    print("links:")
    for edge in result["edges"]:
        print(f"  {edge['from']} --{edge['predicate']}--> {edge['to']}  {paint(edge['fact'], 'dim')}")


@_on_screen
def history(as_json: bool, result: dict) -> None:
    if as_json:
        return emit(result)
    fact = result["fact"]
    print(fact_line(fact, indent=""))
    for event in result["history"]:
        line = f"  {event['at']}  {event['action']}"
        if event.get("reason"):
            line += f"  ({event['reason']})"
        print(line)
        for name, change in event.get("changes", {}).items():
            if "added" in change:  # the sources: the ones it added, and any it took away
                gone = change.get("removed")
                print(paint(f"      {name}: + {', '.join(change['added']) or '-'}", "dim"))
                if gone:
                    print(paint(f"      {name}: - {', '.join(gone)}", "dim"))
                continue
            before = ", ".join(map(str, change["before"])) or "-"
            after = ", ".join(map(str, change["after"])) or "-"
            print(paint(f"      {name}: {before} -> {after}", "dim"))


@_on_screen
def stats(as_json: bool, result: dict) -> None:
    if as_json:
        return emit(result)
    print(
        f"{counted(result['entity_count'], 'entity', 'entities')}, {counted(result['fact_count'], 'fact')} "
        f"({result['journal']['transactions']} journal transactions, {result['backend']} index)"
    )
    for kind in ("entities", "facts"):
        print(f"{kind}: " + ", ".join(f"{k} {v}" for k, v in result[kind].items()))


@_on_screen
def status(as_json: bool, result: dict) -> None:
    if as_json:
        return emit(result)
    index = result["index"]
    print(f"{result['kb']} (perspective {result['perspective']}, replica {result['replica']})")
    if result["journal"].get("gone") and index.get("holds_the_data") is False:
        print(paint("journal: none here (moved aside?)", "error"))
    elif result["journal"].get("gone"):
        print(
            paint(
                f"journal: none here (moved aside?): reads go on from the index, as of transaction "
                f"{result['journal']['transactions']}; the next write starts a new journal from it",
                "warn",
            )
        )
    else:
        print(f"journal: {result['journal']['transactions']} transactions")
    for url in result.get("indexes_left", []):
        print(
            paint(
                f"old index: on {url}, which did not answer when the index moved off it: the next kg index move, "
                "kg forget or kg expire that finds it answering removes it",
                "warn",
            )
        )
    where = f"on {index['url']}" if index["url"] else f"{index['backend']}, on disk"
    if not index["reachable"]:
        print(paint(f"index: {index['problem']}", "error"))
        if index["behind"]:
            print(f"index: {index['behind']} behind the journal: the next command that reaches the server catches up")
        _sync_state(result.get("sync"))
        return
    if index.get("foreign") or index.get("gone_back"):
        print(paint(f"index: {index['problem']}", "error"))
        _sync_state(result.get("sync"))
        return
    if index.get("holds_the_data") is False:  # the journal moved aside, and no index holds what it held
        print(
            paint(
                f"index: {where}: does not hold transaction {result['journal']['transactions']}, nor does any "
                "journal here: nothing to read from; move the journal back (mv journal.aside journal, once no "
                "journal/ is there)",
                "error",
            )
        )
        _sync_state(result.get("sync"))
        return
    if index["transaction"] is None:
        state = "empty: the next command builds it from the journal"
    elif index.get("stale"):
        state = "of another journal (before a migration, or before a new one): the next read or write makes it again"
    elif index["behind"]:
        state = (
            f"at transaction {index['transaction']}, {index['behind']} behind the journal: the next command catches up"
        )
    else:
        state = f"at transaction {index['transaction']}, up to date"
    print(f"index: {where}: {state}")
    _sync_state(result.get("sync"))


def _sync_state(sync: dict | None) -> None:
    for remote in (sync or {}).get("remotes", []):
        when = f"last synced {remote['synced_at']}" if remote.get("synced_at") else "never synced"
        print(f"remote {remote['name']}: {remote['url']}: {when}")
    aside = (sync or {}).get("set_aside", [])
    if aside:
        print(paint(f"set aside by kg sync: {len(aside)} (kg remote list shows them)", "warn"))
    for item in (sync or {}).get("held_back", []):
        print(paint(f"held back at the last sync: replica {item['replica']}: {item['reason']}", "warn"))


@_on_screen
def remotes(as_json: bool, result: dict) -> None:
    if as_json:
        return emit(result)
    if not result["remotes"]:
        print("no remotes: kg remote add NAME URL adds a hub")
    for remote in result["remotes"]:
        when = f"last synced {remote['synced_at']}" if remote.get("synced_at") else "never synced"
        print(f"{remote['name']}  {remote['url']}  {when}")
    for item in result["set_aside"]:
        print(f"  set aside: {item['id']} of replica {item['replica']} (patch {item['patch']}): {item['reason']}")
    for item in result.get("held_back", []):
        print(f"  held back: replica {item['replica']}: {item['reason']}")


@_on_screen
def synced(as_json: bool, result: dict) -> None:
    if as_json:
        return emit(result)
    for remote in result["remotes"]:
        if "error" in remote:
            print(paint(f"{remote['name']}: passed over: {remote['error']}", "warn"))
        else:
            print(f"{remote['name']}: pushed {remote['pushed']} patches, pulled {remote['pulled']}")
    counts = result["folded"]
    changed = ", ".join(
        f"{counts[k]} {k}"
        for k in ("created", "observed", "confirmed", "rejected", "closed", "retimed")
        if counts.get(k)
    )
    entities = f"{counted(counts['entities'], 'entity', 'entities')}, " if counts["entities"] else ""
    if counts.get("merged"):
        entities += f"{counts['merged']} organization{'s' if counts['merged'] != 1 else ''} merged, "
    if result["transaction"] is None:
        print("nothing new to fold in")
    else:
        told = f"; {counted(counts['told'], 'disclosure', 'disclosures')}" if counts.get("told") else ""
        print(f"folded in: {entities}facts {changed or 'none'}{told} (transaction {result['transaction']})")
    for item in result["set_aside"]:
        print(paint(f"set aside: {item['id']} of replica {item['replica']}: {item['reason']}", "warn"))
    for item in result.get("held_back", []):
        print(paint(f"held back: replica {item['replica']}: {item['reason']}", "warn"))
    if result.get("unmatched_forgets"):
        print(
            paint(
                f"forgotten.jsonl holds {counted(result['unmatched_forgets'], 'forget')} made before kgrdf kept "
                "what each deleted fact said: a fact one deleted that another replica still holds is folded "
                "back as new; forget the person on every replica",
                "warn",
            )
        )


def sparql(as_json: bool, result) -> None:
    import pyoxigraph as ox

    if isinstance(result, ox.QueryBoolean):
        return out(as_json, {"boolean": bool(result)}, "true" if result else "false")
    if isinstance(result, ox.QuerySolutions):
        if as_json:
            sys.stdout.buffer.write(result.serialize(format=ox.QueryResultsFormat.JSON))
            sys.stdout.write("\n")
            return
        names = [v.value for v in result.variables]
        print("\t".join(names))
        for row in result:
            print("\t".join("" if row[n] is None else visible(str(row[n])) for n in names))
        return
    data = ox.serialize(result, format=ox.RdfFormat.N_TRIPLES)
    if as_json:
        return emit({"triples": data.decode("utf-8")})
    sys.stdout.buffer.write(data)


@_on_screen
def validation(as_json: bool, report: dict) -> None:
    if as_json:
        return emit(report)
    for problem in report["damage"]:
        print(paint(f"damaged: {problem['check']}: {problem['message']}", "error"))
    violations = [f for f in report["findings"] if f["severity"] == "violation"]
    warnings = [f for f in report["findings"] if f["severity"] == "warning"]
    for finding in violations + warnings:
        colour = "error" if finding["severity"] == "violation" else "proposed"
        print(f"{paint(finding['severity'], colour)} {finding['focus']}: {finding['message']}")
    if report["damage"]:
        print(
            "the knowledge base is damaged (above): writes refuse while its journal or git history is; an "
            f"index that differs is made again from the journal by {report.get('index_remade_by', 'deleting index/')}"
        )
    elif not report["findings"]:
        print("clean: every fact and entity conforms, and the index matches the journal")
    else:
        print(f"{len(violations)} violations, {len(warnings)} warnings")


def schema(as_json: bool, schema, extension=None) -> None:
    types = [{"key": t.key, "axis": t.axis, "label": t.label} for t in schema.types.values()]
    predicates = [
        {
            "key": p.key,
            "axis": p.axis,
            "object": p.object_kind,
            "sentence": p.sentence,
            "single_valued": p.single_valued,
            "high_risk": p.high_risk,
            "person_ok": p.person_ok,
            "domain": sorted(p.domain),
            "range": sorted(p.range),
        }
        for p in schema.predicates.values()
    ]
    if as_json:
        return emit({"types": types, "predicates": predicates, "extension": extension})
    types, predicates, extension = _visible((types, predicates, extension))
    if extension is not None:
        if extension["accepted"]:
            print("schema.json: accepted")
        else:
            print(
                paint("schema.json is refused: ", "error")
                + "; ".join(extension["problems"])
                + " (the knowledge base works on the core schema)"
            )
    for axis in ("People", "Process", "Product", "Organizations"):
        print(paint(axis, "title") + ": " + ", ".join(t["key"] for t in types if t["axis"] == axis))
        for p in (p for p in predicates if p["axis"] == axis):
            marks = [
                m
                for m, on in (
                    ("single-valued", p["single_valued"]),
                    ("high-risk", p["high_risk"]),
                    ("people whitelist", p["person_ok"]),
                )
                if on
            ]
            print(
                f"  {p['key']:<22} {p['object']:<6} {p['sentence']}"
                + (paint(f"  [{', '.join(marks)}]", "dim") if marks else "")
            )


@_on_screen
def import_report(as_json: bool, report: dict, path: str, apply: bool = False) -> None:
    if as_json:
        return emit(report)
    head = "imported" if report["applied"] else "nothing to write from" if apply else "dry run of"
    print(f"{head} {path}: {report['records']} records")
    for what in ("entities", "facts"):
        counts = report[what]
        if counts:
            print(f"  {what}: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
    if report["auto_confirmed"]:
        print(
            "  confirmed automatically: " + ", ".join(f"{n} by {rule}" for rule, n in report["auto_confirmed"].items())
        )
    batches = report["daily_batches"]
    waiting = report["proposals"]
    print(
        f"  {waiting} proposal{'s' if waiting != 1 else ''} wait{'s' if waiting == 1 else ''} for review: "
        f"{batches} daily batch{'es' if batches != 1 else ''}"
    )
    if report["refused"]:
        print(
            paint(
                f"  refused {report['refused_total']}: "
                + ", ".join(f"{n} {reason}" for reason, n in sorted(report["refused"].items())),
                "error",
            )
        )
        for refusal in report["refusals"]:
            print(f"    line {refusal['line']}: {refusal['reason']}: {refusal['message']}")
        more = report["refused_total"] - len(report["refusals"])
        if more > 0:
            print(f"    ... and {more} more (--json lists the first {len(report['refusals'])})")
    for note in report.get("notes", []):
        print(f"  note: {note}")
    if not report["applied"]:
        print(
            paint(
                "nothing written: no record of it changes the knowledge base"
                if apply
                else "nothing written: run again with --apply to import",
                "dim",
            )
        )


@_on_screen
def batch(as_json: bool, document: dict) -> None:
    if as_json:
        return emit(document)
    if document.get("expired"):
        days = counted(document.get("expired_after_days", 30), "day")
        print(paint(f"{counted(document['expired'], 'proposal')} not observed again for {days} expired", "dim"))
    if not document["groups"]:
        print("Nothing waits for review.")
        return
    groups = document["groups"]
    print(
        paint(
            f"Today's batch: {len(groups)} group{'s' if len(groups) != 1 else ''}, "
            f"{document['in_batch']} fact{'s' if document['in_batch'] != 1 else ''}",
            "title",
        )
        + f" ({document['waiting']} proposal{'s wait' if document['waiting'] != 1 else ' waits'} in all: "
        f"{document['batches']} daily "
        f"batch{'es' if document['batches'] != 1 else ''})"
    )
    for group in groups:
        print(
            f"\n{group['number']}. {group['title']} ({len(group['facts'])} fact{'s' if len(group['facts']) != 1 else ''})"
        )
        if group.get("known"):
            print(paint("   known: " + "; ".join(group["known"]), "dim"))
        for fact in group["facts"]:
            rework = "! " if fact["prevents_rework"] else "  "
            print(f"   {fact['label']:<4}{rework}{fact['sentence']}  {paint(fact['id'], 'dim')}")
    print(
        f'\nAnswer in one line, e.g.  {document.get("answer_with", "kg batch apply")} "{_example_answer(groups)}"'
        "\n(except and skip leave a fact proposed for a later batch; only reject rejects)"
    )


def _example_answer(groups: list[dict]) -> str:
    """An answer to this batch, of its own labels (one naming a label it has not is refused):
    "confirm all except 1b, reject 2a" where it has them."""
    labels = [[fact["label"] for fact in group["facts"]] for group in groups]
    every = [label for group in labels for label in group]
    if len(every) == 1:
        return f"confirm {every[0]}"
    rejected = labels[1][0] if len(labels) > 1 else every[-1]
    kept = next((label for label in every[1:] if label != rejected), None)
    return f"confirm all except {kept}, reject {rejected}" if kept else f"confirm {every[0]}, reject {rejected}"


@_on_screen
def disclosed(as_json: bool, doc: dict) -> None:
    """What a disclosure recorded (kg disclose): the facts told, to whom, in which message."""
    lines = [f"recorded: told {doc['audience']} in {doc['message']} ({len(doc['facts'])} fact"]
    lines[0] += ("" if len(doc["facts"]) == 1 else "s") + f", by {doc['by']})"
    lines += [
        f"  {fact['id']}  {fact.get('sentence') or ''}".rstrip()
        + ("  (recorded before: unchanged)" if fact.get("recorded_before") else "")
        for fact in doc["facts"]
    ]
    out(as_json, doc, "\n".join(lines))


@_on_screen
def disclosures(as_json: bool, doc: dict) -> None:
    """Who was told a fact (kg disclosures): each audience, message, time and who recorded it."""
    fact = doc["fact"]
    lines = [f"{fact['id']}  {fact.get('sentence') or ''}".rstrip()]
    if not doc["disclosures"]:
        lines.append("  told to no one (no disclosure recorded)")
    for told in doc["disclosures"]:
        lines.append(f"  {told['at']}  {told['audience']}  in {told['message']}  by {told['by']}")
    out(as_json, doc, "\n".join(lines))


@_on_screen
def told(as_json: bool, doc: dict) -> None:
    """What an audience was told (kg told), newest first."""
    since = f" since {doc['since']}" if doc.get("since") else ""
    lines = [
        f"told to {doc['audience']}{since}: {len(doc['disclosures'])} disclosure"
        + ("" if len(doc["disclosures"]) == 1 else "s")
    ]
    for told in doc["disclosures"]:
        lines.append(f"  {told['at']}  {told['fact']}  in {told['message']}  by {told['by']}")
        if told.get("sentence"):
            lines.append(f"      {told['sentence']}")
    out(as_json, doc, "\n".join(lines))
