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
from dataclasses import dataclass
from pathlib import Path

from kgrdf.errors import BadInput

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


@dataclass(frozen=True)
class Caller:
    """Who is asking: a token's name, perspective, audience (canonical) and right to write."""

    name: str
    perspective: str
    audience: str
    write: bool = False

    @classmethod
    def of(cls, token) -> "Caller":
        return cls(token.name, token.perspective, token.audience, token.write)


def page(items: list, limit: int | None, cursor: str | None, question: str) -> tuple[list, str | None]:
    """``limit`` items from the place ``cursor`` names, and the cursor of the rest (None: no more).
    A cursor carries its question's digest: one from another question is refused, not misread."""
    limit = DEFAULT_LIMIT if limit is None else limit
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise BadInput(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    asked = hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]
    start = 0
    if cursor:
        try:
            held = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii") + b"=="))
            start, of = int(held["at"]), held["of"]
        except (ValueError, KeyError, TypeError, UnicodeEncodeError):
            raise BadInput("the cursor is not one this server gave out") from None
        if of != asked or start < 0:
            raise BadInput("the cursor belongs to another question: ask again without it")
    rest = start + limit
    after = None
    if rest < len(items):
        after = base64.urlsafe_b64encode(json.dumps({"at": rest, "of": asked}).encode()).decode().rstrip("=")
    return items[start:rest], after


def _paged(doc: dict, key: str, limit, cursor, question: str) -> dict:
    """The document with its list ``key`` cut to one page, its total and the next cursor."""
    items = doc.get(key) or []
    shown, after = page(items, limit, cursor, question)
    return {**doc, key: shown, "total": {**doc.get("total", {}), key: len(items)}, "next_cursor": after}


class Service:
    """The knowledge base at ``path``, served: one method a question."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def _kb(self, caller: Caller):
        from kgrdf.kb import KnowledgeBase

        return KnowledgeBase.open(self.path, perspective=caller.perspective)

    @contextmanager
    def reading(self, caller: Caller):
        """A read of the caller's perspective, for the caller's audience."""
        with self._kb(caller).reading() as session:
            session.hear_as(caller.audience)
            yield session

    # --- reads ---------------------------------------------------------------------------------------

    def lookup(self, caller: Caller, entity: str, limit=None, cursor=None) -> dict:
        with self.reading(caller) as session:
            doc = session.lookup(entity)
        return _paged(doc, "facts", limit, cursor, f"lookup {entity} {caller}")

    def search(self, caller: Caller, text: str, limit=None, cursor=None) -> dict:
        with self.reading(caller) as session:
            hits = session.search(text)
        return _paged({"text": text, "results": hits}, "results", limit, cursor, f"search {text} {caller}")

    def identify(self, caller: Caller, name: str) -> dict:
        with self.reading(caller) as session:
            return session.identify(name)

    def facts(
        self, caller: Caller, subject: str, predicate=None, as_of=None, known_at=None, limit=None, cursor=None
    ) -> dict:
        from kgrdf import clock

        when = clock.parse_optional(as_of, "as_of")
        known = clock.parse_optional(known_at, "known_at")
        with self.reading(caller) as session:
            doc = session.facts(subject, predicate=predicate, as_of=when, known_at=known)
        question = f"facts {subject} {predicate} {as_of} {known_at} {caller}"
        return _paged(doc, "facts", limit, cursor, question)

    def neighbors(self, caller: Caller, entity: str, hops: int = 1, limit=None, cursor=None) -> dict:
        with self.reading(caller) as session:
            doc = session.neighbors(entity, hops)
        return _paged(doc, "nodes", limit, cursor, f"neighbors {entity} {hops} {caller}")

    def history(self, caller: Caller, fact: str) -> dict:
        with self.reading(caller) as session:
            return session.history(fact)

    def mentions(self, caller: Caller, text: str, limit=None, cursor=None) -> dict:
        with self.reading(caller) as session:
            found = session.mentions(text)
        return _paged({"text": text, "mentions": found}, "mentions", limit, cursor, f"mentions {text} {caller}")

    def context(self, caller: Caller, entity: str | None = None, message: str | None = None, budget=None) -> dict:
        from kgrdf import context, settings

        if (entity is None) == (message is None):
            raise BadInput("give one of entity and message")
        budget = budget if budget is not None else settings.get("KGRDF_CONTEXT_BUDGET")
        with self.reading(caller) as session:
            if message is not None:
                return context.pack_for_message(session, message, budget)
            return context.pack(session, entity, budget)

    def sparql(self, caller: Caller, text: str, timeout: float | None = None):
        """A SPARQL query over what the caller may read, and nothing else (the answer as pyoxigraph
        gives it). An update does not parse as a query: the knowledge base changes by its verbs only."""
        from kgrdf import sandbox

        limit = sandbox.time_limit(timeout)
        with self.reading(caller) as session:
            return session.sparql(text, limit)
