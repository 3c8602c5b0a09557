"""The knowledge base as a served program sees it: one call a question, for one caller.

A :class:`Caller` is fixed before any call: its perspective, its audience and whether it may write
come from its token (or from ``kg mcp``'s command line), never from the arguments of a call. Each
call opens the knowledge base on the caller's perspective, reads for the caller's audience (so what
the audience may not hear is dropped before anything ranks, pages or packs it) and returns the
document ``kg ... --json`` prints for the same command. Lists are paged: ``limit`` items from
``cursor`` on, and ``next_cursor`` while more are left; a cursor is good for the question it came
from only.
"""

import base64
import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from kgrdf.errors import BadInput, KgError, NotFound, Refused, Unreachable

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
TOKEN_AUTHORITIES = ("stakeholder", "observed", "inferred")  # a token's own: "user" is the user's verified words
_NAMES_KEPT = "the names of an organization known already are changed by the owner alone: none added"
# (an entity is known to an audience by the facts it may hear that name it: one made bare is not yet)
_KNOWN_ONCE_HEARD = (
    "this token's audience knows the organization once a fact it may hear names it: give it one "
    "(org_set with the organization's id, a key, a value and the sources), then lookup and search find it"
)


@dataclass(frozen=True)
class Caller:
    """Who is asking: a token's name, perspective, audience (canonical) and right to write."""

    name: str
    perspective: str
    audience: str
    write: bool = False
    speaker: str | None = None  # who the facts it proposes are said by (an actor or a person id)
    stdio: bool = False  # fixed by kg mcp's command line, not by a token
    digest: str | None = field(default=None, repr=False)  # its token's, asked again once a call holds the folder
    people: frozenset[str] = field(default=frozenset(), repr=False)  # kg mcp's: whom its audience and speaker name
    forgets: frozenset[str] = field(default=frozenset(), repr=False)  # kg mcp's: the forget records before it

    @property
    def reviewer(self) -> str:
        """Who a decision it makes is recorded as made by (reviewed_by): the token, by its name."""
        return f"token:{self.name}"

    @classmethod
    def of(cls, token) -> "Caller":
        return cls(token.name, token.perspective, token.audience, token.write, token.speaker, digest=token.digest)


def _by_the_owner(caller: Caller, exc: KgError) -> KgError:
    """A write's refusal whose way out is the owner's, as a caller is told it: a claim asked of a
    caller with no speaker (_speakerless), an organization whose id would spell a person's name
    (only kg org add --id gives another)."""
    if exc.details.get("needs_speaker"):
        return _speakerless(caller)
    if exc.details.get("id_names_person"):
        return type(exc)(
            exc.message,
            hint="its owner adds it with an id of its own (kg org add NAME --id ID); its name may still be theirs",
            **exc.details,
        )
    return exc


def _speakerless(caller: Caller) -> BadInput:
    """A claim asked of a caller with no speaker: who says what a caller proposes is fixed when it
    starts (a token's --speaker, kg mcp's), never given by a call."""
    if caller.stdio:
        return BadInput(
            "a claim records who said it, and this kg mcp has no speaker",
            hint="its owner starts kg mcp with --speaker ACTOR",
            needs_speaker=True,
        )
    return BadInput(
        f"a claim records who said it, and the token {caller.name} has no speaker",
        hint="its owner makes a token with kg tokens add --speaker ACTOR for the program that hears claims",
        needs_speaker=True,
    )


class Revoked(Refused):
    """The caller's token was revoked while its call waited (a forget, finished first, revoked it):
    answered as a request with no known token is."""

    kind = "unauthorized"


def _still_held(kb_path: Path, caller: Caller, session=None) -> None:
    """Refuse a call whose token is no longer in tokens.json. The token was looked up when the
    request came in; a call then waits for the folder behind a forget (or finishes a forget cut
    short) that revokes it, and would write or read as the person forgotten once it was done. A
    kg mcp, which has no token, is refused as its token would be revoked: once a person its
    audience or speaker names is forgotten."""
    from kgrdf import tokenfile

    if caller.digest is not None and not any(t.digest == caller.digest for t in tokenfile.read(kb_path)):
        raise Revoked("the token is not known, or was revoked")
    if caller.stdio:
        from kgrdf import tokens

        if tokens.forgotten_since(kb_path, caller.forgets, caller.people, caller.audience, caller.perspective, session):
            raise Revoked(
                "a person this kg mcp reads and writes for (its --audience or --speaker) was forgotten: it "
                "answers nothing more",
                hint="its owner starts kg mcp again, for an audience and speaker that name no one forgotten",
            )


def window(count: int, limit: int | None, cursor: str | None, question: str) -> tuple[int, int, str | None]:
    """Of a list of ``count`` items, the ``limit`` from the place ``cursor`` names (start, stop), and
    the cursor of the rest (None: no more). A cursor carries its question's digest: one from another
    question is refused, not misread."""
    limit = DEFAULT_LIMIT if limit is None else limit
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise BadInput(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    asked = hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]
    start = 0
    if cursor:
        try:
            held = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii") + b"=="))
            start, of = held["at"], held["of"]
            if not isinstance(start, int) or isinstance(start, bool):  # (a cursor given out holds a whole number)
                raise TypeError(start)
        except (ValueError, KeyError, TypeError, UnicodeEncodeError, RecursionError):
            raise BadInput("the cursor is not one this server gave out") from None
        if of != asked or start < 0:
            raise BadInput("the cursor belongs to another question: ask again without it")
    rest = start + limit
    after = None
    if rest < count:
        after = base64.urlsafe_b64encode(json.dumps({"at": rest, "of": asked}).encode()).decode().rstrip("=")
    return start, rest, after


def _hears(session, fact_id: str) -> bool:
    """Whether the session's audience may hear the fact ``fact_id`` (it may read it)."""
    try:
        session.fact(fact_id, history=False)
    except NotFound:
        return False
    return True


def _bounded(text, what: str) -> str:
    """A read's text argument, of at most KGRDF_MAX_TEXT characters, as the CLI bounds every
    argument: BadInput past it (a name a few megabytes long is no name, and a search sends it back)."""
    from kgrdf import inputs

    return inputs.text(text, what)


def _not_the_users(sources) -> list:
    """The sources a token gives, none of kind user: the user's own words are a source the knowledge
    base writes when it has verified them in the session's transcript (propose_from_user), never
    one a program names. (A user source also marks the hearing an organization's promotion made,
    which decides who is shown it.)"""
    given = list(sources or [])
    for source in given:
        if isinstance(source, str) and source.partition(":")[0].strip().lower() == "user":
            raise Refused(
                f"a token does not give the user's words as a source ({source!r}): the knowledge base records "
                "them when it finds them in the session's transcript",
                hint="propose_from_user with the quote and the transcript",
            )
    return given


def _paged(doc: dict, keys: str | tuple[str, ...], limit, cursor, question: str) -> dict:
    """The document with its list ``keys`` cut to one page, their totals and the next cursor. Lists
    paged together (a lookup's facts and backlinks) show the same places: the next cursor is there
    while any of them has more."""
    keys = (keys,) if isinstance(keys, str) else keys
    lists = {key: doc.get(key) or [] for key in keys}
    start, stop, after = window(max(len(items) for items in lists.values()), limit, cursor, question)
    total = {**doc.get("total", {}), **{key: len(items) for key, items in lists.items()}}
    return {**doc, **{key: items[start:stop] for key, items in lists.items()}, "total": total, "next_cursor": after}


class Service:
    """The knowledge base at ``path``, served: one method a question."""

    def __init__(self, path: Path, resident=None, transcripts: tuple[Path, ...] | None = None):
        from kgrdf import lock

        self.path = Path(path)
        self.resident = resident  # the index held open between calls (kgrdf.resident), if any
        # The folders whose files a caller may name as its transcript (kg serve --transcripts); None:
        # any file, for the one local agent of kg mcp, which runs as the user does.
        self.transcripts = None if transcripts is None else tuple(Path(t).resolve() for t in transcripts)
        # Writes of this process queue here, in order, rather than each polling the lock file.
        self._turn = resident.turn if resident is not None else lock.Turn(self.path / "lock")

    def _kb(self, caller: Caller):
        from kgrdf.kb import KnowledgeBase

        return KnowledgeBase.open(self.path, perspective=caller.perspective, resident=self.resident)

    @contextmanager
    def reading(self, caller: Caller):
        """A read of the caller's perspective, for the caller's audience."""
        with self._kb(caller).reading() as session:
            _still_held(self.path, caller, session)
            session.hear_as(caller.audience)
            yield session

    # --- reads ---------------------------------------------------------------------------------------

    def lookup(self, caller: Caller, entity: str, limit=None, cursor=None) -> dict:
        entity = _bounded(entity, "the entity")
        with self.reading(caller) as session:
            # each fact's sources are read for the page alone (an entity of 20k facts: 40 pages)
            doc = session.lookup(entity, sources=False)
            doc = _paged(doc, ("facts", "backlinks"), limit, cursor, f"lookup {entity} {caller}")
            session.with_sources(doc["facts"] + doc["backlinks"])
        return doc

    def search(self, caller: Caller, text: str, limit=None, cursor=None) -> dict:
        text = _bounded(text, "the search text")  # (sent back in the answer, and read through every name)
        with self.reading(caller) as session:
            hits = session.search(text)
        return _paged({"text": text, "results": hits}, "results", limit, cursor, f"search {text} {caller}")

    def identify(self, caller: Caller, name: str) -> dict:
        name = _bounded(name, "the name")
        with self.reading(caller) as session:
            return session.identify(name)

    def facts(
        self, caller: Caller, subject: str, predicate=None, as_of=None, known_at=None, limit=None, cursor=None
    ) -> dict:
        from kgrdf import clock

        when = clock.parse_optional(as_of, "as_of")
        known = clock.parse_optional(known_at, "known_at")
        subject = _bounded(subject, "the subject")
        question = f"facts {subject} {predicate} {as_of} {known_at} {caller}"
        with self.reading(caller) as session:
            doc = session.facts(subject, predicate=predicate, as_of=when, known_at=known, sources=False)
            doc = _paged(doc, "facts", limit, cursor, question)
            if known is None:  # (held at a time, they were read with the sources held then)
                session.with_sources(doc["facts"])
        return doc

    def neighbors(self, caller: Caller, entity: str, hops: int = 1, limit=None, cursor=None) -> dict:
        entity = _bounded(entity, "the entity")
        with self.reading(caller) as session:
            doc = session.neighbors(entity, hops)
        return _paged(doc, "nodes", limit, cursor, f"neighbors {entity} {hops} {caller}")

    def history(self, caller: Caller, fact: str) -> dict:
        with self.reading(caller) as session:
            return session.history(fact)

    def mentions(self, caller: Caller, text: str, limit=None, cursor=None) -> dict:
        from kgrdf import inputs

        text = inputs.text(text, "the message")  # as kg mentions - bounds it: the cost grows with it
        with self.reading(caller) as session:
            found = session.mentions(text)
        return _paged({"text": text, "mentions": found}, "mentions", limit, cursor, f"mentions {text} {caller}")

    def context(self, caller: Caller, entity: str | None = None, message: str | None = None, budget=None) -> dict:
        from kgrdf import context, settings

        if (entity is None) == (message is None):
            raise BadInput("give one of entity and message")
        if message is not None:
            from kgrdf import inputs

            message = inputs.text(message, "the message")  # as kg context --message - bounds it
        budget = budget if budget is not None else settings.get("KGRDF_CONTEXT_BUDGET")
        with self.reading(caller) as session:
            if message is not None:
                return context.pack_for_message(session, message, budget)
            return context.pack(session, entity, budget)

    def disclosures(self, caller: Caller, fact: str) -> dict:
        """Who was told a fact (kg disclosures), as the caller's audience is shown it."""
        from kgrdf import disclosure

        with self.reading(caller) as session:
            return disclosure.of_fact(session, fact)

    def told(self, caller: Caller, audience: str, since=None, limit=None, cursor=None) -> dict:
        """What an audience was told (kg told), of what the caller's audience may hear."""
        from kgrdf import disclosure

        with self.reading(caller) as session:
            doc = disclosure.told(session, audience, since)
        return _paged(doc, "disclosures", limit, cursor, f"told {audience} {since} {caller}")

    def sparql(self, caller: Caller, text: str, timeout: float | None = None):
        """A SPARQL query over what the caller may read, and nothing else (the answer as pyoxigraph
        gives it). An update is refused (the sandbox): the knowledge base changes by its verbs only."""
        from kgrdf import sandbox
        from kgrdf.store import bounded

        limit = sandbox.time_limit(timeout)
        with self.reading(caller) as session:
            try:
                return session.sparql(text, limit)
            except bounded.PastLimit as exc:  # (a client has no --timeout: the server's owner sets it)
                raise Refused(
                    exc.message,
                    hint="narrow it with a LIMIT or fewer joins; the server gives a query KGRDF_QUERY_TIMEOUT "
                    "seconds, which its owner sets",
                ) from None

    def batch(self, caller: Caller, limit=None, cursor=None) -> dict:
        """Today's review batch, read only. It is the owner's: an audience's token is refused."""
        from kgrdf import batch

        if caller.audience != "owner":
            raise Refused("the review batch is the owner's: this token reads for " + caller.audience)
        doc = batch.peek(self._kb(caller))
        _still_held(self.path, caller)  # (revoked while the batch was read: nothing of it is told)
        return _paged(doc, "groups", limit, cursor, f"batch {doc['made_at'][:10]} {caller}")

    # --- writes: each one transaction, for a token that may write ------------------------------------

    @contextmanager
    def _writing(self, caller: Caller, command: str):
        """One write of the caller's perspective, for a token that may write."""
        if not caller.write:
            if caller.stdio:
                raise Refused("this kg mcp reads only", hint="its owner starts kg mcp --write for one that writes")
            raise Refused(
                f"the token {caller.name} reads only", hint="kg tokens add NAME ... --write makes one that writes"
            )
        with self._turn.taken(), self._kb(caller).writing(command) as writer:
            _still_held(self.path, caller, writer)
            yield writer

    def _write(self, caller: Caller, command: str, change) -> dict:
        """Run one fact-changing library call in a write; the document kg --json prints for it."""
        from kgrdf import render

        try:
            with self._writing(caller, command) as writer:
                outcome = change(writer)
                shown = writer.describe(outcome.fact)
        except KgError as exc:  # a refusal's reason may name a fact its audience may not hear
            raise self._told(caller, _by_the_owner(caller, exc)) from None
        if caller.audience == "owner":
            return render.outcome_doc(outcome, shown, writer.warnings)
        try:
            return self._as_heard(caller, outcome, writer.warnings)
        except NotFound:  # nothing written: the fact it says is one this audience does not hear (rejected)
            raise _settled_unheard(command) from None
        except Unreachable as exc:  # journaled already: the answer says so, and what it can without a read
            return _unread(caller, command, outcome, exc)

    def _told(self, caller: Caller, exc: KgError) -> KgError:
        """A write's refusal as the caller's audience is told it: as it is, unless its reason names a
        fact that audience may not hear (a successor, a fact saying the same with another valid
        time) or an entity it does not know (one whose name or alias the call gave too), when it
        says only that, with nothing of that fact or entity (its id, its times, its names)."""
        from kgrdf import model, vocab

        # (what the refusal carries beside its reason, the SHACL findings on the fact refused, is told too)
        said = f"{exc.message} {exc.hint or ''} {json.dumps(exc.details, default=str, ensure_ascii=False)}"
        facts = set(model.FACT_IDS_IN_TEXT.findall(said))
        entities = model.entity_ids_in(said)
        if caller.audience == "owner" or not (facts or entities) or isinstance(exc, NotFound):
            return exc  # (a NotFound names what it was given)
        try:
            with self._kb(caller).reading() as session:
                held = {e for e in entities if session.entity(vocab.entity_iri(session.perspective, e))}
                session.hear_as(caller.audience)
                hidden = [i for i in sorted(facts) if not _hears(session, i)]
                unknown = [e for e in sorted(held) if session.entity(vocab.entity_iri(session.perspective, e)) is None]
        except Unreachable:  # what the audience may hear is not known: nothing named is told
            return type(exc)(
                "refused: the reason names a fact or an entity, and what this token's audience may hear "
                "cannot be read while the index server does not answer; nothing was written"
            )
        if not hidden and not unknown:
            return exc
        what = (
            "a fact this token's audience does not hear" if hidden else "an entity this token's audience does not know"
        )
        return type(exc)(f"refused: the reason names {what}, so it is not told; nothing was written")

    def _as_heard(self, caller: Caller, outcome, warnings) -> dict:
        """A write's document as the caller's audience is shown it: the fact with the hearings it may
        hear alone (not another audience's sources, speakers or count), no note when the fact holds
        hearings it may not hear (the note counts them), and no closed fact or warning naming a fact
        it may not hear."""
        from kgrdf import model, render

        with self.reading(caller) as session:
            fact = session.fact(outcome.fact.id)
            shown = session.describe(fact)

            kept = [w for w in warnings if all(_hears(session, i) for i in model.FACT_IDS_IN_TEXT.findall(w.message))]
            doc = render.outcome_doc(outcome, shown, kept)
            if not all(_hears(session, i) for i in model.FACT_IDS_IN_TEXT.findall(doc.get("note") or "")):
                doc.pop("note")  # (it names a fact this audience does not hear: another value it ended, say)
            if "closed" in doc:
                doc["closed"] = [c for c in doc["closed"] if _hears(session, c["id"])] or None
        if doc.get("closed") is None:
            doc.pop("closed", None)
        if len(fact.hearings) < len(outcome.fact.hearings):
            doc.pop("note", None)
            if len(fact.hearings) == 1 and outcome.action in ("observed", "revived"):
                doc["outcome"] = "created"  # its first hearing here: that others heard it before is not told
        return doc

    def _heard(self, caller: Caller, message=None, extracted=False, confidence=None, span=None):
        """Where the caller heard what it proposes: its token's audience and speaker, never its own say."""
        from kgrdf.writer import Heard

        return Heard(caller.audience, caller.speaker, message, extracted, confidence, span)

    def propose(
        self,
        caller: Caller,
        subject: str,
        predicate: str,
        object=None,
        value=None,
        sources=(),
        authority: str = "observed",
        valid_from=None,
        valid_to=None,
        order=None,
        prevents_rework: bool = False,
        reason=None,
        message=None,
        extracted: bool = False,
        confidence=None,
        span=None,
    ) -> dict:
        """Propose a fact (kg propose), heard in the caller's audience and said by its speaker. The
        authority "user" is the user's verified words alone (propose_from_user): a program that says
        so is refused."""
        if isinstance(authority, str) and authority.strip().casefold() == "user":
            raise Refused(
                "a token does not say the user said it: the user's words are verified in the session's transcript",
                hint="propose_from_user with the quote and the transcript; else stakeholder, observed or inferred",
            )
        if authority not in TOKEN_AUTHORITIES:  # (the writer's list names user, which a token may not give)
            raise BadInput(f"unknown authority {authority!r}; a token gives one of {', '.join(TOKEN_AUTHORITIES)}")
        fact = dict(
            object=object,
            value=value,
            sources=_not_the_users(sources),
            authority=authority,
            valid_from=valid_from,
            valid_to=valid_to,
            order=order,
            prevents_rework=prevents_rework,
            reason=reason,
        )
        return self._propose(
            caller, subject, predicate, fact, self._heard(caller, message, extracted, confidence, span)
        )

    def _propose(self, caller: Caller, subject: str, predicate: str, fact: dict, heard, user_words=None) -> dict:
        subject_of = self._named(caller, subject, "subject")
        object_of = self._named(caller, fact.get("object"), "object")

        def change(writer):
            named = {**fact, "object": object_of(writer)} if fact.get("object") is not None else fact
            return writer.propose(subject_of(writer), predicate, **named, user_words=user_words, heard=heard)

        return self._write(caller, "propose", change)

    def _named(self, caller: Caller, text, role: str = "entity"):
        """What a name a token gives means, as its audience knows the entities: a function of the
        write's writer that gives the entity's id. One the audience has heard of comes first (another
        of the same name stays out of it), else one it has not, which it may write about now that it
        names it by its id, name or alias (not by a former id, nor by a name it took from a duplicate
        merged into it: the answer would tell the token of a merge it may not hear). A name of one it knows that it may not hear (a duplicate's, merged
        into it) is as unknown as a name nobody goes by. A refusal (a name no entity goes by, or several it knows) is its audience's: its
        hints and candidates name no entity the audience has not heard of. The owner's token
        resolves as kg does. (Read before the write: a read takes the lock a write holds.)"""
        if caller.audience == "owner" or not isinstance(text, str):
            return lambda writer: text
        try:
            with self.reading(caller) as session:
                try:
                    known = session.resolve(text, role=role).id
                    return lambda writer: known
                except NotFound as exc:
                    unheard = exc
        except Unreachable:  # the index server is down: the write resolves on the index that stands in,
            # and a refusal names nothing (what the audience has heard of cannot be read meanwhile)
            unheard = NotFound(f"{role} {text.strip()!r} is not known")

        def unknown_to_it(writer):
            try:
                entity = writer.resolve(text, role=role)
            except (NotFound, Refused):
                raise unheard from None
            if (
                not (text.strip() == entity.id or entity.known_as(text))
                or writer.seen_by(caller.audience, entity.iri)
                or writer.took_in_merge(entity.iri, text)
            ):
                # by a former id, a name of one it knows that it may not hear, or a name the entity
                # took from a duplicate merged into it (the answer would tell of the merge): not its to learn
                raise unheard
            return entity.id

        return unknown_to_it

    def propose_from_user(
        self,
        caller: Caller,
        subject: str,
        predicate: str,
        quote: str,
        transcript: str,
        object=None,
        value=None,
        sources=(),
        reason=None,
    ) -> dict:
        """A fact in the user's own words: confirmed when the quote is in a genuine user prompt of
        the transcript (kg propose --from-user), else a proposal that says why."""
        from kgrdf import transcript as transcript_module

        words = transcript_module.user_words(quote, self._transcript(transcript))
        fact = dict(object=object, value=value, sources=_not_the_users(sources), reason=reason)
        return self._propose(caller, subject, predicate, fact, self._heard(caller), user_words=words)

    def _verified(self, quote: str, transcript: str, verb: str) -> None:
        """A session confirms or rejects only with the user's words, found in its transcript."""
        from kgrdf import transcript as transcript_module

        _source, verdict = transcript_module.user_words(quote, self._transcript(transcript))
        if not verdict.verified:
            raise Refused(f"not {verb}: {verdict.reason}", hint="quote the user's own words from the session")

    def _transcript(self, named):
        """The transcript a caller names, when this server may read it: in a folder kg serve was
        given (--transcripts), the file itself, not a link out of it. Refused alike whether or not
        the file exists, so that no caller learns what lies outside those folders, or opens a file
        of the machine a quote would then read out one guess at a time."""
        if self.transcripts is None or not isinstance(named, str) or not named:
            return named
        try:
            real = Path(named).resolve()
        except (OSError, RuntimeError, ValueError):
            real = None
        if real is None or not any(real.is_relative_to(folder) and real != folder for folder in self.transcripts):
            where = ", ".join(str(folder) for folder in self.transcripts) or "none: kg serve was given no --transcripts"
            raise Refused(
                "this server reads a transcript only in the folders it was given (" + where + ")",
                hint="name a session file in one of them; the owner starts kg serve --transcripts DIR",
            )
        return str(real)

    def confirm(self, caller: Caller, fact: str, quote: str, transcript: str) -> dict:
        if caller.write:
            self._verified(quote, transcript, "confirmed")
        why = _in_their_words(quote)
        return self._decide(
            caller,
            "confirm",
            fact,
            why,
            lambda writer, why: writer.confirm(fact, reviewed_by=caller.reviewer, reason=why),
        )

    def reject(self, caller: Caller, fact: str, quote: str, transcript: str) -> dict:
        if caller.write:
            self._verified(quote, transcript, "rejected")
        why = _in_their_words(quote)
        return self._decide(
            caller,
            "reject",
            fact,
            why,
            lambda writer, why: writer.reject(fact, reviewed_by=caller.reviewer, reason=why),
        )

    def _decide(self, caller: Caller, command: str, fact: str, why: str | None, decision) -> dict:
        """A token decides only on a fact its audience may hear: another is no fact to it (NotFound,
        as for one that is not there), so neither the answer nor the refusal shows what it holds.
        Checked in the write, on its index: with the index server down, on the one that stands in.
        The user's words (``why``) are kept as the decision's reason only where every audience that
        hears the fact may hear words said in the caller's (kg history shows each of them the
        reason): else the reason says that the user said so, without the words."""
        from kgrdf import audience

        def change(writer):
            if caller.audience != "owner":
                writer.heard_by(caller.audience, fact)
            hearers = [h.audience for h in writer.fact(fact).hearings] or ["owner"]
            told = all(audience.may_hear(caller.audience, hearer or "owner") for hearer in hearers)
            return decision(writer, why if told or why is None else _UNQUOTED)

        return self._write(caller, command, change)

    def org_add(self, caller: Caller, name: str, aliases=()) -> dict:
        """Add an organization (kg org add). To a token of an audience, one it has not heard of is
        shown with the names the call gave alone."""
        from kgrdf import model

        try:
            entity, outcome, note = self._org_added(caller, name, aliases)
        except KgError as exc:  # a name or alias given may be one an entity it does not know goes by
            raise self._told(caller, _by_the_owner(caller, exc)) from None
        if caller.audience != "owner":
            with self.reading(caller) as session:
                heard = session.entity(ox.NamedNode(entity.iri))  # (with the names its audience may hear)
            if heard is None and outcome == "created":  # made by this call: its names are the ones it gave
                return {**entity.as_json(), "outcome": outcome, "note": _KNOWN_ONCE_HEARD}
            if not entity.known_as(name):  # another's id: as kg org add refuses it, naming it only if heard of
                from kgrdf.writer.organizations import id_taken

                error = id_taken(name, entity.id, heard.name if heard is not None else None)
                raise Refused(error.message)  # (a token is told no way out that names the owner's commands)
            if heard is not None and not heard.known_as(name):
                heard = None  # known to it, but not by this name: which one goes by it is not its to learn
            if heard is None and entity.id != model.organization_id(name):  # (its id would tell its name)
                raise Refused(f"{name!r} is a name of an organization already, one this token's audience does not know")
            if heard is None:  # the name the call gave, and nothing the knowledge base holds: not even
                # which of the names given are its own (a token could otherwise try guesses at them)
                return {
                    "id": entity.id,
                    "type": entity.type,
                    "name": model.clean_label(name),
                    "aliases": [],
                    "weak_aliases": [],
                    "outcome": outcome,
                    "note": _NAMES_KEPT,
                }
            entity = heard
        return {**entity.as_json(), "outcome": outcome} | ({"note": note} if note else {})

    def _org_added(self, caller: Caller, name: str, aliases) -> tuple:
        """The write of org_add: (the organization, the outcome, a note or None)."""
        from kgrdf import model

        note = None
        with self._writing(caller, "org add") as writer:
            # the one the name means already (by an alias, texturehq.com of Texture, too), which a
            # token of an audience does not change (a second would make the name ambiguous)
            held = writer.organization_named(name) if caller.audience != "owner" else None
            if held is None or caller.audience == "owner":
                # (an audience's token is not told which organization a name it gives is already one's)
                entity, outcome = writer.add_organization(
                    name, list(aliases or []), join_named=caller.audience == "owner"
                )
            else:  # its names are shown to every audience that knows it: a token of one does not change them
                entity, outcome = held, "unchanged"
                given = {model.clean_label(a) for a in [name, *(aliases or [])] if isinstance(a, str)}
                if given - {held.name, *held.aliases}:  # (another spelling too: it would rename it)
                    note = _NAMES_KEPT
        return entity, outcome, note

    def org_set(self, caller: Caller, org: str, key: str, value: str, sources=(), message=None) -> dict:
        sources = _not_the_users(sources)
        heard, named = self._heard(caller, message), self._named(caller, org, "organization")
        return self._write(
            caller,
            "org set",
            lambda writer: writer.set_attribute(named(writer), key, value, sources=sources, heard=heard),
        )

    def org_affiliate(self, caller: Caller, org: str, claimed_name: str, role=None, sources=(), message=None) -> dict:
        sources = _not_the_users(sources)
        heard, named = self._heard(caller, message), self._named(caller, org, "organization")
        return self._write(
            caller,
            "org affiliate",
            lambda writer: writer.claim_member(
                named(writer),
                claimed_name,
                role,
                sources=sources,
                heard=heard,
            ),
        )

    def record_disclosure(self, caller: Caller, message: str, audience: str, facts) -> dict:
        """Record that a reply told these facts to an audience (kg disclose), by the token's name. A
        token records what it told its own audience; the owner's may record any audience's."""
        from kgrdf import audience as audiences
        from kgrdf import disclosure

        told_to = audiences.parse(audience)
        if caller.audience != audiences.OWNER and told_to != caller.audience:
            raise Refused(
                f"this kg mcp records what it told {caller.audience}, not {told_to}"
                if caller.stdio
                else f"the token {caller.name} records what it told {caller.audience}, not {told_to}",
                hint=f"its owner starts kg mcp with --audience {told_to}"
                if caller.stdio
                else "record it with a token made for that audience",
            )
        if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
            raise BadInput('facts is a list of fact ids, e.g. ["f-3k9x2a"]')
        with self._writing(caller, "disclose") as writer:
            return disclosure.record(writer, message, told_to, facts, caller.name, reader=caller.audience)


_UNQUOTED = (
    "the user said so, in words verified in the session's transcript and not kept here: "
    "an audience of this fact did not hear them"
)


def _in_their_words(quote) -> str | None:
    """The reason a token's decision keeps: the user's words it was verified with (kg history shows
    who decided, the token by its name, and why)."""
    return f"the user said: {quote.strip()}" if isinstance(quote, str) and quote.strip() else None


def _settled_unheard(command: str) -> Refused:
    return Refused(
        f"nothing of this {command} was recorded: the knowledge base holds what it says already, "
        "settled where this token's audience does not hear it"
    )


def _unread(caller: Caller, command: str, outcome, exc: Unreachable) -> dict:
    """A write's document for an audience's token while the index server does not answer: what the
    write itself knows of the fact, its hearings, tells what the token may be shown, as a read would
    (Service._as_heard): a fact it hears none of is refused as settled elsewhere, and one it hears
    once only, heard before elsewhere, was created as far as it is told."""
    from kgrdf import audience

    heard = [h for h in outcome.fact.hearings if audience.may_hear(h.audience, caller.audience)]
    if not heard:
        raise _settled_unheard(command)
    action = outcome.action
    if action in ("observed", "revived") and len(heard) == 1 < len(outcome.fact.hearings):
        action = "created"  # its first hearing here: that others heard it before is not told
    written = outcome.action not in ("rejected", "unchanged")
    return {
        "id": outcome.fact.id,
        "outcome": action,
        "note": f"{exc.message}; "
        + (
            "the write is in the journal, and the fact is shown as this token's audience reads it once the "
            "server answers again"
            if written
            else "nothing was written"
        ),
    }
