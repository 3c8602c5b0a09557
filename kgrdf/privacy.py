"""What is private, and how it is forgotten (§5, §8).

Routing: a journal line goes to the private journal when it describes a person or an actor (their
entity's type, names and aliases), or belongs to a fact that names one (sensitivity personal) or
that the user stated (a source of the user kind with their quote). A fact's records go there from
the write that makes it private on; a line of a fact this write deletes goes there too.
"""

import hashlib
import hmac
import json
import os
import re
import secrets
import sys
from pathlib import Path

from kgrdf import clock, files, vocab
from kgrdf.errors import Refused

PERSON_TYPES = frozenset({"person", "actor"})  # the types the People whitelist protects
PROVENANCE = "/provenance"
_WORD = re.compile(r"\w+")


def graph_of(line: str) -> str:
    """The graph IRI of a journal line (canonical N-Quads with a named graph)."""
    return line[line.rindex(" <") + 2:-1]


def fact_of(graph: str) -> str:
    """The fact a graph belongs to: its assertion graph, or the fact of its provenance graph."""
    return graph[:-len(PROVENANCE)] if graph.endswith(PROVENANCE) else graph


def is_entities_graph(graph: str) -> bool:
    """Whether a graph is a perspective's entity graph (``https://kgrdf.org/kb/<perspective>/entities``)."""
    return graph.startswith(vocab.KB) and graph.endswith("/entities") and graph.count("/", len(vocab.KB)) == 1


class Router:
    """Decides, line by line, which journal a change goes to. ``fact_is_private(fact_iri)`` says
    it for a fact's lines (None when the fact is not known: then the line is kept private)."""

    def __init__(self, fact_is_private):
        self.fact_is_private = fact_is_private

    def __call__(self, line: str) -> bool:
        graph = graph_of(line)
        if is_entities_graph(graph):
            subject = line[1:line.index(">")]
            return subject[len(graph) - len("entities"):].split("/", 1)[0] in PERSON_TYPES
        private = self.fact_is_private(fact_of(graph))
        return True if private is None else private


def fact_is_private(fact) -> bool:
    """A fact that names a person, that a person or an actor said (its speaker is on it), or that
    the user stated in their own words."""
    return (fact.sensitivity == "personal" or fact.said_by is not None
            or any(s.kind == "user" and s.quote for s in fact.sources))


class NameIndex:
    """Finds known names in a text, word for word: names are keyed by their first word, so a text
    is read once whatever the number of names (a multi-pattern match)."""

    def __init__(self):
        self._by_first: dict[str, list[tuple[tuple[str, ...], str, object]]] = {}

    @staticmethod
    def words(text: str) -> list[str]:
        return _WORD.findall(text.casefold())

    def add(self, name: str, value) -> None:
        """Index ``name``; a name that starts with a sign (#deploys, @dana) matches only with it."""
        words = tuple(self.words(name))
        if words:
            lead = name.strip().casefold()[:name.strip().casefold().index(words[0])]
            self._by_first.setdefault(words[0], []).append((words, lead, value))

    def __bool__(self) -> bool:
        return bool(self._by_first)

    def dump(self) -> dict:
        return {word: [[list(name), lead, value] for name, lead, value in entries]
                for word, entries in self._by_first.items()}

    @classmethod
    def load(cls, data: dict) -> "NameIndex":
        index = cls()
        index._by_first = {word: [(tuple(name), lead, tuple(value) if isinstance(value, list) else value)
                                  for name, lead, value in entries] for word, entries in data.items()}
        return index

    def find(self, text: str) -> list[tuple[int, int, object]]:
        """Every (start, end, value) of a known name in ``text`` (character offsets), at every word."""
        spans = [(m.start(), m.end(), m.group().casefold()) for m in _WORD.finditer(text)]
        words = [w for _, _, w in spans]
        found = []
        for at, word in enumerate(words):
            for name, lead, value in self._by_first.get(word, ()):
                start = spans[at][0] - len(lead)
                if tuple(words[at:at + len(name)]) == name and (
                        not lead or start >= 0 and text[start:spans[at][0]].casefold() == lead):
                    found.append((start, spans[at + len(name) - 1][1], value))
        return found


# --- the secret key and the forgotten ------------------------------------------------------------

KEY = "secret.key"
KEY_BYTES = 32
FORGOTTEN = "forgotten.jsonl"
HMAC = "hmac-sha256"


def forgotten(kb) -> list[dict]:
    """The records of forget: a hash of each forgotten id and counts, never the id."""
    from kgrdf.kb import read_jsonl

    return read_jsonl(kb.path / FORGOTTEN, hint="restore it from git (git checkout forgotten.jsonl)")


def append_forgotten(kb, record: dict) -> None:
    with files.appending(kb.path / FORGOTTEN) as out:
        out.write((json.dumps(record, sort_keys=True) + "\n").encode("utf-8"))
        out.flush()
        os.fsync(out.fileno())


class Key:
    """The secret key of the keyed hashes, as a write finds it: ``value`` is None when there are
    keyed records and no readable key (then ``problem`` says why, and what needs the key refuses)."""

    def __init__(self, value: bytes | None, problem: str | None = None, path: Path | None = None):
        self.value, self.problem, self.path = value, problem, path

    def digest(self, entity_id: str) -> str:
        return hmac.new(self._need(), entity_id.encode("utf-8"), hashlib.sha256).hexdigest()

    def _need(self) -> bytes:
        if self.value is None:
            raise Refused(f"{self.path} is {self.problem}, and {FORGOTTEN} holds keyed records: a new key would "
                          f"make them unmatchable, so this is refused",
                          hint=f"restore {KEY} from where you keep it; if it is lost for good, move {FORGOTTEN} "
                               f"and journal/ aside together (with {KEY}) and the next write makes a new key")
        return self.value

    def is_forgotten(self, entity_id: str, records: list[dict]) -> bool:
        keyed = [r["hash"] for r in records if r.get("hash_kind") == HMAC]
        plain = [r["hash"] for r in records if r.get("hash_kind") != HMAC]
        if plain and hashlib.sha256(entity_id.encode("utf-8")).hexdigest() in plain:
            return True
        return bool(keyed) and self.digest(entity_id) in keyed


def key(kb, make: bool = True) -> Key:
    """The secret key, made on the first write (32 random bytes, 0600, ignored by git; written
    whole and fsynced before it takes its name). A key that is not one (empty, the wrong length,
    unreadable) is set aside as ``secret.key.aside-<time>`` and made again, with a line on stderr,
    unless keyed records need it: then nothing is made and what needs the key refuses."""
    path = kb.path / KEY
    try:
        data = path.read_bytes()
        problem = None if len(data) == KEY_BYTES else f"{len(data)} bytes, not a key of {KEY_BYTES}"
    except FileNotFoundError:
        data, problem = None, "missing"
    except OSError as exc:
        data, problem = b"", f"unreadable ({exc.strerror})"
    if problem is None:
        return Key(data, path=path)
    if any(r.get("hash_kind") == HMAC for r in forgotten(kb)):
        return Key(None, problem, path)
    if not make:
        return Key(None, problem, path)
    if data is not None:
        aside = path.with_name(f"{KEY}.aside-{clock.iso(clock.now()).replace(':', '')}")
        os.replace(path, aside)
        print(f"kg: {KEY} was {problem}; set it aside as {aside.name} and made a new one", file=sys.stderr)
    value = secrets.token_bytes(KEY_BYTES)
    files.replace(path, value)
    return Key(value, path=path)
