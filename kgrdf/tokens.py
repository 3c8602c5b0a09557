"""Bearer tokens: who is asking when a program reaches the knowledge base over HTTP (§7, §9).

A token binds a name to a perspective (whose knowledge it reads and writes), an audience (who will
be shown what it reads: a token for ``channel:sales`` never sees a fact heard in a DM) and whether
it may write. Every request's perspective, audience and right to write come from its token alone,
never from a parameter the caller could widen.

The secret is shown once, when the token is made, and kept only as its SHA-256 digest in
``tokens.json`` beside the journal (mode 0600, never in the index, the journal or git). A secret is
32 random bytes: nobody can guess one, so a plain digest needs neither salt nor a slow hash, and a
stolen ``tokens.json`` opens nothing. A secret is looked up by its digest, so its comparison takes
the same time whichever token it matches or misses.
"""

import re
import secrets
from pathlib import Path

from kgrdf import audience as audience_mod
from kgrdf import clock, inputs, lock, made, pasted
from kgrdf.errors import BadInput, NotFound, Refused
from kgrdf.tokenfile import FILE, PREFIX, Token, digest, drop, listed, resolve
from kgrdf.tokenfile import read as _read
from kgrdf.tokenfile import write as _write

__all__ = ["FILE", "Token", "add", "digest", "drop", "listed", "resolve", "revoke", "speaker_of"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


def add(
    kb, name: str, perspective: str, audience: str, write: bool = False, speaker: str | None = None
) -> tuple[Token, str]:
    """Make a token on the knowledge base ``kb``; return it and its secret, which is shown this once.
    Its perspective must be one the knowledge base holds: a token for another would see nothing,
    which is more likely a typing error than a wish. ``speaker`` (an actor or a person of that
    perspective: id, name or alias) is who says every fact the token proposes: a program has no
    way to name another."""
    if not _NAME.match(name or ""):
        raise BadInput(f"token name {name!r} must be letters, digits, '.', '_' or '-', at most 64")
    inputs.perspective(perspective)
    with kb.reading() as session:
        known = [p["perspective"] for p in session.perspectives()]
    if perspective not in known:
        raise Refused(
            f"no perspective {perspective!r}; known: {', '.join(known)}",
            hint=f"kg org init NAME --perspective {perspective} provisions it with its self organization",
        )
    if speaker is not None:
        speaker = speaker_of(kb.path, perspective, speaker)
    heard_by = audience_mod.parse(audience)
    with lock.held(kb.path / "lock", exclusive=True):
        tokens = _read(kb.path)
        if any(t.name == name for t in tokens):
            raise Refused(
                f"there is a token named {name!r} already", hint=f"{pasted.kg('tokens', 'revoke', name)} first"
            )
        secret = PREFIX + secrets.token_urlsafe(32)
        token = Token(name, perspective, heard_by, bool(write), clock.iso(clock.now()), digest(secret), speaker)
        _write(kb.path, [*tokens, token])
    made.note(
        f"the token {name} was made, but its secret, shown once, is lost: {pasted.kg('tokens', 'revoke', name)}, "
        "then add it again"
    )
    return token, secret


def speaker_of(kb_path: Path, perspective: str, text: str) -> str:
    """The id of the actor or person ``text`` names in ``perspective``: who says what a program
    proposes. Raises NotFound or Refused, saying why."""
    from kgrdf import privacy
    from kgrdf.kb import KnowledgeBase

    with KnowledgeBase.open(kb_path, perspective=perspective).reading() as session:
        said_by = session.resolve(text, role="speaker")
    if said_by.type not in privacy.PERSON_TYPES:
        raise Refused(f"{said_by.id} is {said_by.a_type}: --speaker names an actor or a person")
    return said_by.id


def people_named(kb_path: Path, perspective: str, texts) -> frozenset[str]:
    """The ids of the people and actors of ``perspective`` that ``texts`` (an audience, a speaker)
    name, as kg forget reads them: what a kg mcp started for them reads and writes for, which it
    stops doing once one of them is forgotten (:func:`any_forgotten`), as their token would be
    revoked."""
    from kgrdf import identifiers, privacy, vocab
    from kgrdf.kb import KnowledgeBase

    base = KnowledgeBase.open(kb_path, perspective=perspective)
    with base.reading() as session:
        rows = session.rows("person-labels", entities=vocab.entities_graph(perspective))
    everyone = privacy.people_of(rows, identifiers.read(base), vocab.perspective_base(perspective))
    return frozenset(vocab.id_of(iri) for text in texts if text for iri in everyone.in_text(text))


def forgets(kb_path: Path) -> frozenset[str]:
    """The ids of the records kg forget kept so far (forgotten.jsonl): what a kg mcp started now
    leaves behind it (a person forgotten before, perhaps added again since, is no reason to stop)."""
    from kgrdf import privacy
    from kgrdf.kb import KnowledgeBase

    return frozenset(str(r.get("id")) for r in privacy.forgotten(KnowledgeBase.open(kb_path)))


def forgotten_since(kb_path: Path, before: frozenset[str], named, audience: str, perspective: str, session) -> bool:
    """Whether a forget since the records ``before`` forgot, in ``perspective``, a person that a kg
    mcp reads and writes for: one its audience and speaker ``named`` when it started, or one a
    conversation of its audience lists by handle (they may have been added since). A person added
    again since (``session`` holds them; None: no index at hand) is not forgotten."""
    from kgrdf import privacy, vocab
    from kgrdf.kb import KnowledgeBase

    base = KnowledgeBase.open(kb_path)
    new = [r for r in privacy.forgotten(base) if str(r.get("id")) not in before]
    if not new:
        return False
    handles = audience[3:].split(",") if audience.startswith("dm:") else []
    candidates = set(named) | {f"{kind}/{handle}" for handle in handles for kind in privacy.PERSON_TYPES}
    key = privacy.key(base, make=False)
    hit = [c for c in candidates if key.is_forgotten(c, new)]
    if session is None:
        return bool(hit)
    return any(session.named_entity(vocab.entity_iri(perspective, c)) is None for c in hit)


def revoke(kb_path: Path, name: str) -> Token:
    """Remove the token ``name``: from now on its secret opens nothing."""
    with lock.held(kb_path / "lock", exclusive=True):
        tokens = _read(kb_path)
        gone = next((t for t in tokens if t.name == name), None)
        if gone is None:
            raise NotFound(f"there is no token named {name!r}", hint="kg tokens list shows them")
        _write(kb_path, [t for t in tokens if t is not gone])
    made.note(f"the token {name} was revoked")
    return gone
