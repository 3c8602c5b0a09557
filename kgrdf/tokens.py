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

import hashlib
import re
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from kgrdf import audience as audience_mod
from kgrdf import clock, files, lock, vocab
from kgrdf.errors import BadInput, Damaged, NotFound, Refused

FILE = "tokens.json"
PREFIX = "kgt_"  # a secret's first letters, so that a leaked one is recognized by scanners and people
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
_SECRET = re.compile(r"^kgt_[A-Za-z0-9_-]{43}\Z")


@dataclass(frozen=True)
class Token:
    name: str
    perspective: str
    audience: str
    write: bool
    created: str
    digest: str  # sha256 of the secret, hex
    speaker: str | None = None  # the actor or person the facts it proposes are said by (an id)

    def as_json(self) -> dict:
        """What kg tokens list shows: everything but the digest."""
        out = asdict(self)
        del out["digest"]
        return out


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


_READ: dict[Path, tuple[tuple, list[Token]]] = {}  # a long-lived server's tokens, by the file's signature


def _read(kb_path: Path) -> list[Token]:
    """Every token in tokens.json. A server asks on every request: the file is parsed again only
    when it changed (kgrdf writes it whole under a new name, so its inode and times move), so a
    revoked token opens nothing from the next request on."""
    path = kb_path / FILE
    try:
        signature = files.signature(path)
    except OSError:
        signature = None
    held = _READ.get(path)
    if signature is not None and held is not None and held[0] == signature:
        return list(held[1])
    tokens = _parse(kb_path)
    if signature is not None:
        _READ[path] = (signature, tokens)
    return list(tokens)


def _parse(kb_path: Path) -> list[Token]:
    data = files.read_json(kb_path / FILE)
    try:
        return [Token(**entry) for entry in data.get("tokens", [])]
    except TypeError:
        raise Damaged(f"{FILE} holds an entry that is not a token", hint=f"remove it from {kb_path / FILE}") from None


def _write(kb_path: Path, tokens: list[Token]) -> None:
    files.write_json(kb_path / FILE, {"tokens": [asdict(t) for t in sorted(tokens, key=lambda t: t.name)]})


def listed(kb_path: Path) -> list[Token]:
    """Every token, by name."""
    return sorted(_read(kb_path), key=lambda t: t.name)


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
    if not vocab.PERSPECTIVE_PATTERN.match(perspective or ""):
        raise BadInput(f"perspective {perspective!r} must be lower-case letters, digits, - or _")
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
            raise BadInput(f"there is a token named {name!r} already", hint=f"kg tokens revoke {name} first")
        secret = PREFIX + secrets.token_urlsafe(32)
        token = Token(name, perspective, heard_by, bool(write), clock.iso(clock.now()), digest(secret), speaker)
        _write(kb.path, [*tokens, token])
    return token, secret


def speaker_of(kb_path: Path, perspective: str, text: str) -> str:
    """The id of the actor or person ``text`` names in ``perspective``: who says what a program
    proposes. Raises NotFound or Refused, saying why."""
    from kgrdf import privacy
    from kgrdf.kb import KnowledgeBase

    with KnowledgeBase.open(kb_path, perspective=perspective).reading() as session:
        said_by = session.resolve(text, role="speaker")
    if said_by.type not in privacy.PERSON_TYPES:
        raise Refused(f"{said_by.id} is a {said_by.type}: --speaker names an actor or a person")
    return said_by.id


def revoke(kb_path: Path, name: str) -> Token:
    """Remove the token ``name``: from now on its secret opens nothing."""
    with lock.held(kb_path / "lock", exclusive=True):
        tokens = _read(kb_path)
        gone = next((t for t in tokens if t.name == name), None)
        if gone is None:
            raise NotFound(f"there is no token named {name!r}", hint="kg tokens list shows them")
        _write(kb_path, [t for t in tokens if t is not gone])
    return gone


def drop(kb_path: Path, digests) -> int:
    """Remove the tokens whose digests are ``digests`` (the caller holds the lock): kg forget's, for
    a token named after a forgotten person, or that speaks as them or reads for a conversation of
    theirs, which would keep their name and open nothing it should. Returns how many went."""
    tokens = _read(kb_path)
    kept = [t for t in tokens if t.digest not in set(digests)]
    if len(kept) != len(tokens):
        _write(kb_path, kept)
    return len(tokens) - len(kept)


def resolve(kb_path: Path, secret: str) -> Token | None:
    """The token whose secret this is, or None (a malformed secret, a revoked or unknown one)."""
    if not _SECRET.match(secret or ""):
        return None
    wanted = digest(secret)
    found = None
    for token in _read(kb_path):
        if secrets.compare_digest(token.digest, wanted):
            found = token
    return found
