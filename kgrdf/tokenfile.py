"""tokens.json: the bearer tokens kgrdf keeps, each as its secret's digest (kgrdf.tokens makes and
revokes them). Read and written here alone, below the layers that use it: a server resolving a
secret on every request, and a forget, finished by whichever command comes next, dropping the tokens
that name the person forgotten."""

import hashlib
import re
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from kgrdf import files
from kgrdf.errors import Damaged

FILE = "tokens.json"
PREFIX = "kgt_"  # a secret's first letters, so that a leaked one is recognized by scanners and people
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


def read(kb_path: Path) -> list[Token]:
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


_TEXTS = ("name", "perspective", "audience", "created", "digest")


def _parse(kb_path: Path) -> list[Token]:
    data = files.read_json(kb_path / FILE)
    hint = f"remove it from {kb_path / FILE}"
    entries = data.get("tokens", []) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise Damaged(f"{FILE} is not a list of tokens", hint=f"restore or remove {kb_path / FILE}")
    out = []
    for number, entry in enumerate(entries, start=1):
        try:
            token = Token(**entry)
        except TypeError:
            raise Damaged(f"{FILE} holds an entry that is not a token (the {_nth(number)})", hint=hint) from None
        if not (
            all(isinstance(getattr(token, name), str) for name in _TEXTS)
            and isinstance(token.write, bool)
            and isinstance(token.speaker, str | None)
        ):
            raise Damaged(
                f"{FILE} holds a token whose fields are not what kgrdf writes (the {_nth(number)})", hint=hint
            )
        out.append(token)
    return out


def _nth(number: int) -> str:
    return f"{number}{'th' if 10 <= number % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(number % 10, 'th')}"


def write(kb_path: Path, tokens: list[Token]) -> None:
    files.write_json(kb_path / FILE, {"tokens": [asdict(t) for t in sorted(tokens, key=lambda t: t.name)]})


def listed(kb_path: Path) -> list[Token]:
    """Every token, by name."""
    return sorted(read(kb_path), key=lambda t: t.name)


def drop(kb_path: Path, digests) -> int:
    """Remove the tokens whose digests are ``digests`` (the caller holds the lock): kg forget's, for
    a token named after a forgotten person, or that speaks as them or reads for a conversation of
    theirs, which would keep their name and open nothing it should. Returns how many went."""
    tokens = read(kb_path)
    kept = [t for t in tokens if t.digest not in set(digests)]
    if len(kept) != len(tokens):
        write(kb_path, kept)
    return len(tokens) - len(kept)


def resolve(kb_path: Path, secret: str) -> Token | None:
    """The token whose secret this is, or None (a malformed secret, a revoked or unknown one)."""
    if not _SECRET.match(secret or ""):
        return None
    wanted = digest(secret)
    found = None
    for token in read(kb_path):
        if secrets.compare_digest(token.digest, wanted):
            found = token
    return found
