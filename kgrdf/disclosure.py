"""Disclosures: which facts were told to which audience in which message, and the questions about
them (SPEC §9b; the org seed's "provenance flows through").

A reply that used some facts is recorded as one disclosure of each: the audience it went to, the
message it was (a permalink or an id), when, and who recorded it (the owner, or a token's name). A
fact may be told only to an audience that may hear one of its hearings (kgrdf.audience decides, as it
does for every read); otherwise the whole record is refused and nothing is written.

Where a disclosure lives: in the provenance graph of the fact it told (``<fact>/provenance``), beside
the fact's hearings, as a ``kg:Disclosure`` node that changes none of the fact's fields. So reading a
fact's disclosures is scoped like the rest of its provenance (a read for an audience is shown the
disclosures told to an audience it may hear, as it is shown hearings), exporting a fact carries its
disclosures, validation and kg validate check them with the fact (its provenance graph is already in
the validation view), and forgetting or expiring a fact takes its disclosures with it. Its records go
to the private journal when the fact's do, when it was told in a private conversation (a ``dm:``
audience), or when its audience or message names a person; ``kg forget`` then removes every
disclosure naming the person, and keeps the fact when nothing else of it names them.
"""

from pyoxigraph import Literal, NamedNode

from kgrdf import audience as audiences
from kgrdf import clock, inputs, model, nquads, vocab
from kgrdf.errors import BadInput, Refused
from kgrdf.session import no_fact

OWNER = audiences.OWNER
EVER = "0001-01-01T00:00:00Z"  # the start of told.rq's window when no --since is given


def _text(value: str | None, what: str) -> str:
    """A one-line reference (a message, a caller's name): Unicode text of a bounded size, visible."""
    text = inputs.text(value or "", what).strip()
    if not text:
        raise BadInput(f"{what} is empty")
    return model.refuse_unprintable(text, what)


def record(writer, message: str, audience: str, facts, by: str = OWNER, reader: str | None = None) -> dict:
    """Record that the facts ``facts`` (ids) were told to ``audience`` in ``message``, by ``by``,
    in the write ``writer``. Raises BadInput for a malformed audience, message, name or fact id or
    for no fact at all, NotFound for a fact that is not known, and Refused, naming the fact and the
    audience, for a fact that audience may not hear (then nothing of the record is written). Given
    ``reader``, the audience the one recording reads for (a token's), a fact it may not hear is not
    known to it: NotFound, as for a fact that is not there, so a refusal never tells that it exists.

    A fact that message told that audience already is not recorded again: it is listed with
    ``recorded_before``.

    Example: ``record(writer, "slack:p9", "channel:sales", ["f-3k9x2a"])["facts"][0]["id"]``."""
    told_to = audiences.parse(audience)
    message = _text(message, "the message")
    by = _text(by, "the name of who told it")
    ids = list(dict.fromkeys(fact_id.strip() for fact_id in facts or ()))
    if not ids:
        raise BadInput("name at least one fact that was told (its id, e.g. f-3k9x2a)")
    held = [writer.fact(fact_id) for fact_id in ids]
    for fact in held:
        heard_in = [hearing.audience for hearing in fact.hearings]
        if reader is not None and not audiences.may_hear_any(heard_in, reader):
            raise no_fact(fact.id)
        if not audiences.may_hear_any(heard_in, told_to):
            raise Refused(
                f"{fact.id} may not be told to {told_to}: none of its hearings may be heard there, so nothing was recorded",
                hint=(  # (to the owner: a token is not told where else a fact was heard)
                    "it was heard in " + ", ".join(sorted({a or "owner" for a in heard_in})) if reader is None else None
                ),
            )
    shown = []
    for fact in held:
        added = _add(writer, fact, {"audience": told_to, "message": message, "at": writer.now, "by": by})
        # One message told it to that audience once: recording it again (a reply recorded twice,
        # kg context --record run again) changes nothing.
        shown.append(
            {"id": fact.id, "sentence": writer.describe(fact).get("sentence")}
            | ({} if added else {"recorded_before": True})
        )
    return {"message": message, "audience": told_to, "by": by, "at": writer.now, "facts": shown}


_SAID = ("audience", "message", "at", "by")  # a disclosure's fields, in the order of _TOLD's
_TOLD = (model.TOLD_TO, model.TOLD_IN, model.TOLD_AT, model.TOLD_BY)


def _add(writer, fact, told: dict, whole: bool = False) -> bool:
    """Add one disclosure ({audience, message, at, by}) of ``fact`` in the write ``writer``, unless
    that message told it to that audience already (False then); ``whole``: unless one says all four
    the same (a fold keeps each replica's record, so that every replica ends with the same ones,
    whichever it heard first). Its records go where the fact's provenance goes, or to the private
    journal when told in a private conversation."""
    fields = _SAID if whole else _SAID[:2]
    told_before = {
        tuple(row[name].value for name in fields) for row in writer.rows("fact-disclosures", fact=NamedNode(fact.iri))
    }
    # (and those this write staged: a sync may fold one record from two replicas). Only this fact's
    # disclosures of this write are parsed, each named after both (model.disclosure_iri).
    mine = "<" + model.disclosure_iri(fact.iri, writer.seq, 0)[:-1]
    graph = vocab.provenance_graph(NamedNode(fact.iri)).value
    staged = list(nquads.quads(writer.add_lines().in_graph(graph), keep=lambda line: line.startswith(mine)))
    taken = {q.subject.value for q in staged}
    of_fact = {q.subject.value for q in staged if q.predicate == model.DISCLOSED}
    said = {(q.subject.value, q.predicate): q.object.value for q in staged}
    told_before |= {tuple(said.get((node, term)) for term in _TOLD[: len(fields)]) for node in of_fact}
    if tuple(told[name] for name in fields) in told_before:
        return False
    step = 1
    while model.disclosure_iri(fact.iri, writer.seq, step) in taken:
        step += 1
    node = model.disclosure_iri(fact.iri, writer.seq, step)
    quads = model.disclosure_quads(fact.iri, node, told["audience"], told["message"], told["at"], told["by"])
    texts = [told["audience"], told["message"], told["by"]]
    writer.add_to_provenance(fact, quads, texts=texts, private=told["audience"].startswith("dm:"))
    return True


def fold(writer, fact, there, theirs_iri: str) -> tuple[int, list[str]]:
    """Fold another replica's disclosures of a fact (kg sync) into ``fact``, this knowledge base's
    fact that says what it says: each with its audience, message, time and teller, unless recorded
    here already. ``there`` is a read of that replica's journal. Returns how many were added, and
    the audiences of those not folded because ``fact`` is heard in none that may hear them here (the
    caller sets them aside)."""
    heard_in = [hearing.audience for hearing in fact.hearings]
    added, unheard = 0, []
    for told in there.values("fact-disclosures", fact=NamedNode(theirs_iri)):
        if not audiences.may_hear_any(heard_in, told["audience"]):
            unheard.append(told["audience"])
            continue
        added += _add(writer, fact, told, whole=True)
    return added, unheard


def told_to(audience: str | None) -> str:
    """The audience a disclosure is told to, canonical (None: the owner). Raises BadInput for one
    that does not parse: a read fails closed on it, but a record of what was told must not."""
    return audiences.parse(audience or OWNER)


def record_pack(kb, pack: dict, message: str, audience: str | None, by: str = OWNER) -> dict:
    """Record the facts of a context pack (kgrdf.context) as told to ``audience`` (None: the owner)
    in ``message``: one write, nothing when the pack holds no fact."""
    ids = [fact["id"] for fact in pack.get("facts", [])]
    if not ids:
        return {
            "message": _text(message, "the message"),
            "audience": told_to(audience),
            "by": by,
            "at": None,
            "facts": [],
        }
    with kb.writing("context --record") as writer:
        return record(writer, message, audience or OWNER, ids, by)


# --- reading ------------------------------------------------------------------------------------------


def _disclosure(row: dict) -> dict:
    return {
        "audience": row["audience"],
        "message": row["message"],
        "at": row["at"],
        "by": row["by"],
    }


def of_fact(session, fact_id: str) -> dict:
    """Who was told the fact ``fact_id``, when and in which message, oldest first, as the read's
    audience is shown it: the fact only when it may hear it, and the disclosures told to an audience
    it may hear. Raises NotFound (and BadInput for what is no fact id)."""
    fact = session.fact(fact_id, history=False)
    rows = session.values("fact-disclosures", fact=session.fact_iri(fact_id))
    told = [_disclosure(row) for row in rows if session.may_hear_in(row["audience"])]
    return {"fact": session.describe(fact), "disclosures": told}


def told(session, audience: str, since: str | None = None) -> dict:
    """What ``audience`` was told (since ``since``, a date or time), newest first: each disclosure with
    its fact, message, time and who recorded it. Exactly that audience: what a wider one was told is
    asked of it. A read for another audience keeps what it may hear. Raises BadInput for a malformed
    audience or time."""
    told_to = audiences.parse(audience)
    start = clock.parse_optional(since, "--since")
    bindings = {"audience": Literal(told_to), "since": vocab.datetime_literal(clock.iso(start) if start else EVER)}
    out, described = [], {}
    if session.may_hear_in(told_to):
        for row in session.values("told", **bindings):
            if row["id"] not in described:
                described[row["id"]] = session.describe(session.fact(row["id"], history=False)).get("sentence")
            out.append(
                {"fact": row["id"], "sentence": described[row["id"]], **_disclosure({**row, "audience": told_to})}
            )
    return {"audience": told_to, "since": clock.iso(start) if start else None, "disclosures": out}
