"""What is private, and how it is forgotten (§5, §8).

Routing: a journal line goes to the private journal when it describes a person or an actor (their
entity's type, names and aliases), when it is another entity's name, alias or summary that names
one, or when it belongs to a fact that names one (sensitivity personal: its subject, object, value,
sources, span, message or claim names them), that one said, that the user stated (a source of the
user kind with their quote), or whose change this write brings a text naming one. A fact's records
go there from the write that makes it private on; a line of a fact this write deletes goes there too.
What names a person is decided by one matcher, :class:`People`, for routing and for ``kg forget``.
"""

import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import unicodedata
from pathlib import Path

from pyoxigraph import Literal, NamedNode

from kgrdf import clock, files, vocab
from kgrdf.errors import Refused
from kgrdf.nquads import graph_of  # noqa: F401 (the graph IRI of a journal line, as forget, purge and sync read it)

PERSON_TYPES = frozenset({"person", "actor"})  # the types the People whitelist protects
PROVENANCE = "/provenance"
_WORD = re.compile(r"\w+")


def fact_of(graph: str) -> str:
    """The fact a graph belongs to: its assertion graph, or the fact of its provenance graph."""
    return graph[: -len(PROVENANCE)] if graph.endswith(PROVENANCE) else graph


def is_entities_graph(graph: str) -> bool:
    """Whether a graph is a perspective's entity graph (``https://kgrdf.org/kb/<perspective>/entities``)."""
    return graph.startswith(vocab.KB) and graph.endswith("/entities") and graph.count("/", len(vocab.KB)) == 1


# The rows of an entity that hold text (its names, aliases, their match keys, its summary and the
# aliases it went by before a merge): one of another entity that names a person is private, and a
# forget drops it (a name is replaced, below).
NAME_PROPERTIES = frozenset({vocab.PREF_LABEL.value, vocab.kg("nameKey").value})
TEXT_PROPERTIES = NAME_PROPERTIES | frozenset(
    p.value
    for p in (
        vocab.ALT_LABEL,
        vocab.WEAK_ALIAS,
        vocab.SUMMARY,
        vocab.kg("aliasKey"),
        vocab.kg("weakAliasKey"),
        vocab.kg("mergedName"),
    )
)


class Router:
    """Decides, line by line, which journal a change goes to. ``fact_is_private(fact_iri)`` says
    it for a fact's lines (None when the fact is not known: then the line is kept private);
    ``row_names_a_person(line)``, when given, says whether an entity row holds text naming one."""

    def __init__(self, fact_is_private, row_names_a_person=None):
        self.fact_is_private = fact_is_private
        self.row_names_a_person = row_names_a_person
        self._facts: dict[str, bool] = {}  # a fact's graph -> what fact_is_private said of it

    def __call__(self, line: str) -> bool:
        graph = line[line.rindex(" <") + 2 : -1]  # graph_of, written out: asked of every row of a write
        known = self._facts.get(graph)
        if known is not None:  # (a fact heard 100k times has 100k rows: it is asked once)
            return known
        if is_entities_graph(graph):
            subject = line[1 : line.index(">")]
            if subject[len(graph) - len("entities") :].split("/", 1)[0] in PERSON_TYPES:
                return True
            return bool(self.row_names_a_person is not None and self.row_names_a_person(line))
        private = self.fact_is_private(fact_of(graph))
        if private is None:
            return True
        self._facts[graph] = private
        return private

    def split_lines(self, lines: list[str]) -> tuple[list[str], list[str]]:
        """(the lines that go to the private journal, the others): as asking of each line, with a
        fact's decision looked up in the loop, not in a call a line (1.1M rows for 100k copies of one
        fact: a second of a write's commit)."""
        private: list[str] = []
        shared: list[str] = []
        known = self._facts
        for line in lines:
            decided = known.get(line[line.rindex(" <") + 2 : -1])
            if decided is None:
                decided = self(line)
            (private if decided else shared).append(line)
        return private, shared


def fact_is_private(fact) -> bool:
    """A fact that names a person, that a person or an actor said (its speaker is on it), that the
    user stated in their own words, or that was heard in a private conversation (its audience names
    the people in it)."""
    return (
        fact.sensitivity == "personal"
        or fact.said_by is not None
        or any(s.kind == "user" and s.quote for s in fact.sources)
        or any((h.audience or "").startswith("dm:") for h in fact.hearings)
    )


def fact_texts(fact) -> list[str]:
    """Every text a fact holds that may name someone: its value, its sources' refs and quotes, the
    words it was extracted from, the message it was said in and the audience that heard it (each
    hearing's: a channel may be named after a person, as forget reads it), a claim's role and its
    changes' reasons. Each once: a fact heard a thousand times in one channel reads its name once."""
    value = None if fact.is_entity_target else fact.target.value
    texts = (
        value,
        *(s.ref for s in fact.sources),
        *(s.quote for s in fact.sources),
        *(text for h in fact.hearings for text in (h.span, h.message, h.audience)),
        fact.claimed_role,
        *(u.reason for u in fact.updates),
    )
    return [t for t in dict.fromkeys(texts) if t]


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
            lead = name.strip().casefold()[: name.strip().casefold().index(words[0])]
            self._by_first.setdefault(words[0], []).append((words, lead, value))

    def __bool__(self) -> bool:
        return bool(self._by_first)

    def dump(self) -> dict:
        return {
            word: [[list(name), lead, value] for name, lead, value in entries]
            for word, entries in self._by_first.items()
        }

    @classmethod
    def load(cls, data: dict) -> "NameIndex":
        index = cls()
        index._by_first = {
            word: [
                (tuple(name), lead, tuple(value) if isinstance(value, list) else value) for name, lead, value in entries
            ]
            for word, entries in data.items()
        }
        return index

    def find(self, text: str) -> list[tuple[int, int, object]]:
        """Every (start, end, value) of a known name in ``text`` (character offsets), at every word."""
        spans = [(m.start(), m.end(), m.group().casefold()) for m in _WORD.finditer(text)]
        words = [w for _, _, w in spans]
        found = []
        for at, word in enumerate(words):
            for name, lead, value in self._by_first.get(word, ()):
                start = spans[at][0] - len(lead)
                if tuple(words[at : at + len(name)]) == name and (
                    not lead or start >= 0 and text[start : spans[at][0]].casefold() == lead
                ):
                    found.append((start, spans[at + len(name) - 1][1], value))
        return found


# --- what names a person ---------------------------------------------------------------------------

_PIECE = re.compile(r"[^\W_]+")  # a word: letters and digits; anything else separates words
# Inside a token these join pieces: person/sam is not a token of person/sam.lee, nor the login sam
# of jo.sam. A slash is not one: it parts a path's segments, each a token (the chat id U024BE7LH in
# https://chat.example/team/U024BE7LH, the login of github.com/analima).
_JOINER = "-.@+_"


def whole_tokens(tokens, flags: int = 0) -> re.Pattern:
    """A pattern of ``tokens`` each standing whole: not inside a word, nor joined by ``-.@+_`` to
    more letters or digits (``person/sam`` is not in ``person/sam.lee``), though it may be a
    segment of a path; the longest first."""
    joiner = re.escape(_JOINER)
    alternatives = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?<![^\W_][{joiner}])(?:{alternatives})(?![^\W_])(?![{joiner}][^\W_])", flags)


# Format characters (Unicode Cf: the soft hyphen, zero-width spaces and joiners, direction marks):
# they show as nothing, so "Quix<U+00AD>ley" reads as Quixley and is compared as it reads. 21 ranges.
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def fold(text: str) -> str:
    """Text as it is compared: Unicode compatibility forms folded (fullwidth, ligatures, composed
    or decomposed accents), then case folded, and without the characters that show as nothing
    (newlines stay where they are). Text all ASCII, as a journal mostly is, holds none of them."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return folded if folded.isascii() else _INVISIBLE.sub("", folded)


def words(text: str) -> tuple[str, ...]:
    """The words of a text, folded: runs of letters and digits, whatever separates them."""
    return tuple(_PIECE.findall(fold(text)))


class People:
    """The one matcher of what names a person, for routing a write and for forgetting.

    A person is named by their entity's IRI as a term (exactly: never as a prefix of another); in a
    text, by a name or alias as whole words in any case, Unicode form and separators ("Samantha
    Quixley" is in ``SAMANTHA-QUIXLEY`` and across a line break; "Sam" is not in "Samuel"); and by
    a token (their id, their IRI, an identifier's value) standing whole, not joined by ``-.@+_`` to
    more letters or digits (``person/sam`` is not in ``person/sam.lee``), a path's segment included.
    """

    def __init__(self):
        self.iris: dict[str, str] = {}  # entity IRI -> the person
        self._names: dict[str, list[tuple[tuple[str, ...], str]]] = {}  # first word -> (words, person)
        self._tokens: dict[str, set[str]] = {}  # folded token -> people
        self._token_pattern = None
        self._keys: set[str] | None = set()  # a word each token holds (None: no cheap test)
        self._name_words: set[tuple[str, ...]] = set()  # the words of each name: any one finds it
        self._handles: dict[str, set[str]] = {}  # the last part of an id (dana of person/dana) -> people

    def __bool__(self) -> bool:
        return bool(self.iris or self._names or self._tokens)

    def add_person(self, iri: str, entity_id: str, names=(), tokens=()) -> None:
        """``iri`` names the person as a term; ``names`` (names, aliases) as words; their id, IRI and
        ``tokens`` (identifier values) as whole tokens."""
        self.iris[iri] = iri
        for name in names:
            self.add_name(name, iri)
        self.add_token(entity_id, iri, key=(words(entity_id) or ("",))[-1])
        self.add_token(iri, iri, key=(words(entity_id) or ("",))[-1])
        handle = fold(entity_id.rpartition("/")[2]).strip()
        if handle:  # a private conversation lists its people by such a handle: dm:jo,dana
            self._handles.setdefault(handle, set()).add(iri)
        for token in tokens:
            self.add_token(token, iri)

    def add_name(self, name: str, person: str) -> None:
        found = words(name)
        if not found:
            return
        self._names.setdefault(found[0], []).append((found, person))
        self._name_words.add(found)

    def holders(self, name: str) -> set[str]:
        """The people who go by ``name`` (a name or alias of exactly its words)."""
        found = words(name)
        return {person for held, person in self._names.get(found[0], ()) if held == found} if found else set()

    def add_token(self, token: str, person: str, key: str | None = None) -> None:
        folded = fold(token).strip()
        if not folded:
            return
        self._tokens.setdefault(folded, set()).add(person)
        self._token_pattern = None
        pieces = _PIECE.findall(folded)
        if key is None and pieces:
            key = max(pieces, key=len)
        if not key:
            self._keys = None
        elif self._keys is not None:
            self._keys.add(key)

    def in_text(self, text: str | None) -> set[str]:
        """The people ``text`` names. Where one person's name lies inside another's longer one, the
        longer wins: "Sam Lee" names Sam Lee, not a person whose alias is "Sam" (as kg mentions
        reads it); the same words as two people's names name both."""
        if not text:
            return set()
        folded = fold(text)
        found: set[str] = set()
        if self._names:
            seen = _PIECE.findall(folded)
            spans = [
                (at, at + len(name), person)
                for at, word in enumerate(seen)
                for name, person in self._names.get(word, ())
                if tuple(seen[at : at + len(name)]) == name
            ]
            for start, end, person in spans:
                if not any(s <= start and end <= e and e - s > end - start for s, e, _ in spans):
                    found.add(person)
        if self._tokens:
            if self._token_pattern is None:
                self._token_pattern = whole_tokens(self._tokens)
            for match in self._token_pattern.finditer(folded):
                found |= self._tokens[match.group()]
        if self._handles and folded.startswith("dm:"):  # an audience: its people by name, or by handle
            for member in folded[3:].split(","):
                found |= self._handles.get(member.strip(), set())
        return found

    def in_term(self, term) -> set[str]:
        """The people an RDF term names: an IRI exactly, a literal by its text."""
        if isinstance(term, NamedNode):
            person = self.iris.get(term.value)
            return {person} if person else set()
        if isinstance(term, Literal):
            return self.in_text(term.value)
        return set()

    def in_row(self, quad) -> set[str]:
        """The people a journal row names: as its subject, object or graph, or in its text. An id
        (``dcterms:identifier``) is not text: it is the IRI's, and the IRI is compared exactly."""
        found = self.in_term(quad.subject) | self.in_term(quad.graph_name)
        if quad.predicate.value == vocab.IDENTIFIER.value or (
            isinstance(quad.object, Literal) and quad.object.value == vocab.id_of(quad.subject.value)
        ):
            return found  # an id, or a name that is just the id (what forget leaves of a name)
        return found | self.in_term(quad.object)

    def candidate_words(self, sample: str = "") -> list[str] | None:
        """Words that find every journal row (N-Quads text, folded with :func:`fold`) that may name
        someone: each name and token leaves one of them in a row's text, whatever N-Quads escapes
        around it (a letter or a digit is never escaped). A name holds all its words, so any one of
        them finds it: the rarest in ``sample`` (some of the text searched), then the longest, so
        that a word every person's IRI holds ("person") is not the one. None when there is no such
        shortcut (every row must be read)."""
        if self._keys is None:
            return None
        chosen = set(self._keys)
        for found in self._name_words:
            chosen.add(min(found, key=lambda word: (sample.count(word), -len(word))))
        return sorted(chosen)


def people_of(rows, entries, base: str) -> People:
    """The matcher of the people of a perspective: ``rows`` of person-labels.rq (entity, key) and
    the identifiers ``entries`` (identifiers.jsonl) of ``base``'s entities."""
    return people_from([(row["entity"].value, row["key"].value) for row in rows], entries, base)


def identifier_is_of(entry: dict, perspective: str) -> bool:
    """Whether the identifier ``entry`` (a line of identifiers.jsonl) is of ``perspective``'s person:
    one written before identifiers had a perspective is of every perspective's person of its id."""
    return entry.get("perspective", perspective) == perspective


def people_from(pairs, entries, base: str) -> People:
    """The matcher of the people of ``pairs`` (entity IRI, match key) and of the identifiers
    ``entries`` of ``base``'s entities (those of its perspective)."""
    perspective = vocab.perspective_of(base)
    people = People()
    named: dict[str, list[str]] = {}
    for entity, key in pairs:
        named.setdefault(entity, []).append(key)
    values: dict[str, list[str]] = {}
    for entry in entries:
        if identifier_is_of(entry, perspective):
            values.setdefault(base + entry["entity"], []).append(entry["value"])
    for iri in set(named) | set(values):
        if iri.startswith(base):
            people.add_person(iri, iri[len(base) :], named.get(iri, ()), values.get(iri, ()))
    return people


def rows_naming_people(quads, labels, entries) -> set[str]:
    """The entity rows among ``quads`` (as journal lines) whose name, alias or summary names a person
    of their perspective: ``labels(entities_graph)`` gives that graph's person-labels.rq rows and
    ``entries`` are the identifiers (a new journal started from the index routes by it, as writes do)."""
    people: dict[str, People] = {}
    found = set()
    for quad in quads:
        graph = quad.graph_name.value
        if (
            quad.predicate.value not in TEXT_PROPERTIES
            or not isinstance(quad.object, Literal)
            or not is_entities_graph(graph)
        ):
            continue
        if graph not in people:
            people[graph] = people_of(labels(quad.graph_name), entries, graph[: -len("entities")])
        if people[graph].in_text(quad.object.value):
            found.add(str(quad))
    return found


# --- the secret key and the forgotten ------------------------------------------------------------

KEY = "secret.key"
KEY_BYTES = 32
FORGOTTEN = "forgotten.jsonl"
HMAC = "hmac-sha256"


def forgotten(kb) -> list[dict]:
    """The records of forget: a hash of each forgotten id and counts, never the id."""
    return files.read_jsonl(kb.path / FORGOTTEN, hint="restore it from git (git checkout forgotten.jsonl)")


def said_key(fact) -> str:
    """What a fact says (subject, predicate, object or value, as proposing it again finds it): its
    keyed digest is how forgotten.jsonl remembers a fact forget deleted, never the fact."""
    return f"{fact.subject} {fact.predicate} {fact.value_key()}"


def forgotten_facts(kb) -> "tuple[Key, set[str]] | None":
    """The key and the digests of what the facts forget deleted say (kg sync does not fold such a
    fact back from a replica that holds it), or None when no forget kept any."""
    said = {digest for record in forgotten(kb) for digest in record.get("said", [])}
    return (key(kb, make=False), said) if said else None


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
            raise Refused(
                f"{self.path} is {self.problem}, and {FORGOTTEN} holds keyed records: a new key would "
                f"make them unmatchable, so this is refused",
                hint=f"restore {KEY} from where you keep it; if it is lost for good, move {FORGOTTEN} "
                f"and journal/ aside together (with {KEY}) and the next write makes a new key",
            )
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
