"""What is private, and how it is forgotten (§5, §8).

Routing: a journal line goes to the private journal when it describes a person or an actor (their
entity's type, names and aliases), when it is another entity's name, alias or summary that names
one, or when it belongs to a fact that names one (sensitivity personal: its subject, object, value,
sources, span, message or claim names them), that one said, that the user stated (a source of the
user kind with their quote), or whose change this write brings a text naming one. A fact's records
go there from the write that makes it private on; a line of a fact this write deletes goes there too.
What names a person is decided by one matcher, :class:`People`, for routing and for ``kg forget``.
"""

import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pyoxigraph import Literal, NamedNode

from kgrdf import clock, files, vocab
from kgrdf.errors import Refused
from kgrdf.nquads import graph_of  # noqa: F401 (the graph IRI of a journal line, as forget, purge and sync read it)

PERSON_TYPES = frozenset({"person", "actor"})  # the types the People whitelist protects
PROVENANCE = "/provenance"


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


def audience_place(audience: str | None) -> str | None:
    """The name of the place an audience is (a channel's, a workspace's) as a text that may name a
    person; None for a private conversation (its people are who it is, not a text) and the rest."""
    kind, _, name = (audience or "").partition(":")
    return name if kind in ("channel", "workspace") else None


def fact_texts(fact, places: bool = False) -> list[str]:
    """Every text a fact holds that may name someone: its value, its sources' refs and quotes, the
    words it was extracted from, the message it was said in and the audience that heard it (each
    hearing's: a channel may be named after a person, as forget reads it; with ``places``, the name
    of a channel or a workspace alone, as a proposal's are read for its sensitivity), a claim's
    role and its changes' reasons. Each once: a fact heard a thousand times in one channel reads
    its name once."""
    value = None if fact.is_entity_target else fact.target.value
    texts = (
        value,
        *(s.ref for s in fact.sources),
        *(s.quote for s in fact.sources),
        *(
            text
            for h in fact.hearings
            for text in (h.span, h.message, audience_place(h.audience) if places else h.audience)
        ),
        fact.claimed_role,
        *(u.reason for u in fact.updates),
    )
    return [t for t in dict.fromkeys(texts) if t]


class _WordTrie:
    """Names as paths of words: the names that begin at a word of a text are found in one walk along
    its next words, however many names share their first words ("the api", "the web app" and a
    thousand more names starting with "the": keyed by the first word alone, each "the" of a text was
    compared with all of them). Nested dicts with text keys, so that a cache keeps it as JSON."""

    _END = ""  # the key of what ends at a node (a word is never empty)

    def __init__(self, root: dict | None = None):
        self.root: dict = {} if root is None else root

    def add(self, words: tuple[str, ...], value) -> None:
        node = self.root
        for word in words:
            node = node.setdefault(word, {})
        node.setdefault(self._END, []).append(value)

    def at(self, words: list[str], at: int) -> Iterator[tuple[int, object]]:
        """(length in words, value) of each name that begins at ``words[at]``, shortest first."""
        node = self.root
        for i in range(at, len(words)):
            node = node.get(words[i])
            if node is None:
                return
            for value in node.get(self._END, ()):
                yield i - at + 1, value

    def exactly(self, words: tuple[str, ...]) -> list:
        """The values of the name of exactly ``words``."""
        node = self.root
        for word in words:
            node = node.get(word)
            if node is None:
                return []
        return node.get(self._END, [])


class NameIndex:
    """Finds known names in a text, word for word (the words of :func:`words`, as the People
    matcher reads them): names are paths of words (_WordTrie), so a text is read once whatever the
    number of names (a multi-pattern match)."""

    # of what dump gives: 2, words take in marks; 3, ı is i and all that shows as nothing goes; 4, a
    # trie (made again from the names by each process that read one, 30 ms for 20k names: kept so)
    FORMAT = "4"

    def __init__(self):
        self._trie = _WordTrie()
        self._added = 0  # each name's place in the order names were added, kept beside it

    def add(self, name: str, value) -> None:
        """Index ``name``. A name's signs before its first word (#deploys, @dana) and after its
        last (C++, C#) are part of it; a full stop, comma or other mark ending a sentence after
        it is not ("Yahoo!" is in "yahoo is down")."""
        folded = fold(name).strip()
        found = list(_pieces_at(folded))
        if not found:
            return
        lead, trail = folded[: found[0][0]], folded[found[-1][1] :].rstrip(_SENTENCE_ENDS)
        words = [word for _start, _end, word in found]
        self._trie.add(tuple(words), [self._added, len(words), lead, trail, value])
        self._added += 1

    def __bool__(self) -> bool:
        return bool(self._trie.root)

    def dump(self) -> dict:
        return {"added": self._added, "trie": self._trie.root}

    @classmethod
    def load(cls, data: dict) -> "NameIndex":
        if not (isinstance(data.get("trie"), dict) and isinstance(data.get("added"), int)):
            raise ValueError("not a NameIndex's dump")
        index = cls()
        index._trie, index._added = _WordTrie(data["trie"]), data["added"]
        return index

    def find(self, text: str) -> list[tuple[int, int, object]]:
        """Every (start, end, value) of a known name in ``text`` (character offsets), at every word,
        in the order the names were added. The text is read in its own characters: each run of them
        that makes words is folded where it stands, so offsets are the text's whatever folding does
        to its length (İ, ß, ligatures). A value kept as a JSON list is given as a tuple."""
        spans = [
            (m.start(), m.end(), word)
            for m in (_PIECE if text.isascii() else _raw_piece()).finditer(text)
            for _start, _end, word in _pieces_at(fold(m.group()))
        ]
        words = [w for _, _, w in spans]
        found = []
        for at in range(len(words)):
            for _order, length, lead, trail, value in sorted(entry for _n, entry in self._trie.at(words, at)):
                start, end = spans[at][0] - len(lead), spans[at + length - 1][1]
                if lead and (start < 0 or fold(text[start : spans[at][0]]) != lead):
                    continue
                if trail and fold(text[end : end + len(trail)]) != trail:
                    continue
                found.append((start, end + len(trail), tuple(value) if isinstance(value, list) else value))
        return found


# --- what names a person ---------------------------------------------------------------------------

_PIECE = re.compile(r"[^\W_]+")  # a word of ASCII text: letters and digits; anything else separates words
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


# Characters that show as nothing, so "Quix<U+00AD>ley" reads as Quixley and is compared as it
# reads: the format characters (Unicode Cf: the soft hyphen, zero-width spaces and joiners,
# direction marks), 21 ranges, and the rest of Unicode's default ignorable code points, marks and
# letters that are not Cf (the combining grapheme joiner U+034F, the Khmer inherent vowels, the
# Mongolian variation selectors, the Hangul fillers, the variation selectors and the tags' plane),
# and those not assigned yet (U+2065, U+FFF0-FFF8).
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u2065\u3164\ufe00-\ufe0f\uffa0\ufff0-\ufff8"
    "\U000e0000-\U000e0fff]"
)


# Combining marks (Unicode M*): part of the word they are in, as a vowel sign is of अमिताभ, which
# Python's \w leaves out (so that अमित was found in it). Unicode 14's 299 ranges; a test checks
# them against the running Python's.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u05bf\u05c1-\u05c2\u05c4-\u05c5\u05c7\u0610-\u061a"
    "\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7-\u06e8\u06ea-\u06ed\u0711\u0730-\u074a"
    "\u07a6-\u07b0\u07eb-\u07f3\u07fd\u0816-\u0819\u081b-\u0823\u0825-\u0827\u0829-\u082d\u0859-\u085b"
    "\u0898-\u089f\u08ca-\u08e1\u08e3-\u0903\u093a-\u093c\u093e-\u094f\u0951-\u0957\u0962-\u0963"
    "\u0981-\u0983\u09bc\u09be-\u09c4\u09c7-\u09c8\u09cb-\u09cd\u09d7\u09e2-\u09e3\u09fe\u0a01-\u0a03"
    "\u0a3c\u0a3e-\u0a42\u0a47-\u0a48\u0a4b-\u0a4d\u0a51\u0a70-\u0a71\u0a75\u0a81-\u0a83\u0abc"
    "\u0abe-\u0ac5\u0ac7-\u0ac9\u0acb-\u0acd\u0ae2-\u0ae3\u0afa-\u0aff\u0b01-\u0b03\u0b3c\u0b3e-\u0b44"
    "\u0b47-\u0b48\u0b4b-\u0b4d\u0b55-\u0b57\u0b62-\u0b63\u0b82\u0bbe-\u0bc2\u0bc6-\u0bc8\u0bca-\u0bcd"
    "\u0bd7\u0c00-\u0c04\u0c3c\u0c3e-\u0c44\u0c46-\u0c48\u0c4a-\u0c4d\u0c55-\u0c56\u0c62-\u0c63"
    "\u0c81-\u0c83\u0cbc\u0cbe-\u0cc4\u0cc6-\u0cc8\u0cca-\u0ccd\u0cd5-\u0cd6\u0ce2-\u0ce3\u0d00-\u0d03"
    "\u0d3b-\u0d3c\u0d3e-\u0d44\u0d46-\u0d48\u0d4a-\u0d4d\u0d57\u0d62-\u0d63\u0d81-\u0d83\u0dca"
    "\u0dcf-\u0dd4\u0dd6\u0dd8-\u0ddf\u0df2-\u0df3\u0e31\u0e34-\u0e3a\u0e47-\u0e4e\u0eb1\u0eb4-\u0ebc"
    "\u0ec8-\u0ecd\u0f18-\u0f19\u0f35\u0f37\u0f39\u0f3e-\u0f3f\u0f71-\u0f84\u0f86-\u0f87\u0f8d-\u0f97"
    "\u0f99-\u0fbc\u0fc6\u102b-\u103e\u1056-\u1059\u105e-\u1060\u1062-\u1064\u1067-\u106d\u1071-\u1074"
    "\u1082-\u108d\u108f\u109a-\u109d\u135d-\u135f\u1712-\u1715\u1732-\u1734\u1752-\u1753\u1772-\u1773"
    "\u17b4-\u17d3\u17dd\u180b-\u180d\u180f\u1885-\u1886\u18a9\u1920-\u192b\u1930-\u193b\u1a17-\u1a1b"
    "\u1a55-\u1a5e\u1a60-\u1a7c\u1a7f\u1ab0-\u1ace\u1b00-\u1b04\u1b34-\u1b44\u1b6b-\u1b73\u1b80-\u1b82"
    "\u1ba1-\u1bad\u1be6-\u1bf3\u1c24-\u1c37\u1cd0-\u1cd2\u1cd4-\u1ce8\u1ced\u1cf4\u1cf7-\u1cf9"
    "\u1dc0-\u1dff\u20d0-\u20f0\u2cef-\u2cf1\u2d7f\u2de0-\u2dff\u302a-\u302f\u3099-\u309a\ua66f-\ua672"
    "\ua674-\ua67d\ua69e-\ua69f\ua6f0-\ua6f1\ua802\ua806\ua80b\ua823-\ua827\ua82c\ua880-\ua881"
    "\ua8b4-\ua8c5\ua8e0-\ua8f1\ua8ff\ua926-\ua92d\ua947-\ua953\ua980-\ua983\ua9b3-\ua9c0\ua9e5"
    "\uaa29-\uaa36\uaa43\uaa4c-\uaa4d\uaa7b-\uaa7d\uaab0\uaab2-\uaab4\uaab7-\uaab8\uaabe-\uaabf\uaac1"
    "\uaaeb-\uaaef\uaaf5-\uaaf6\uabe3-\uabea\uabec-\uabed\ufb1e\ufe00-\ufe0f\ufe20-\ufe2f\U000101fd"
    "\U000102e0\U00010376-\U0001037a\U00010a01-\U00010a03\U00010a05-\U00010a06\U00010a0c-\U00010a0f"
    "\U00010a38-\U00010a3a\U00010a3f\U00010ae5-\U00010ae6\U00010d24-\U00010d27\U00010eab-\U00010eac"
    "\U00010f46-\U00010f50\U00010f82-\U00010f85\U00011000-\U00011002\U00011038-\U00011046\U00011070"
    "\U00011073-\U00011074\U0001107f-\U00011082\U000110b0-\U000110ba\U000110c2\U00011100-\U00011102"
    "\U00011127-\U00011134\U00011145-\U00011146\U00011173\U00011180-\U00011182\U000111b3-\U000111c0"
    "\U000111c9-\U000111cc\U000111ce-\U000111cf\U0001122c-\U00011237\U0001123e\U000112df-\U000112ea"
    "\U00011300-\U00011303\U0001133b-\U0001133c\U0001133e-\U00011344\U00011347-\U00011348"
    "\U0001134b-\U0001134d\U00011357\U00011362-\U00011363\U00011366-\U0001136c\U00011370-\U00011374"
    "\U00011435-\U00011446\U0001145e\U000114b0-\U000114c3\U000115af-\U000115b5\U000115b8-\U000115c0"
    "\U000115dc-\U000115dd\U00011630-\U00011640\U000116ab-\U000116b7\U0001171d-\U0001172b"
    "\U0001182c-\U0001183a\U00011930-\U00011935\U00011937-\U00011938\U0001193b-\U0001193e\U00011940"
    "\U00011942-\U00011943\U000119d1-\U000119d7\U000119da-\U000119e0\U000119e4\U00011a01-\U00011a0a"
    "\U00011a33-\U00011a39\U00011a3b-\U00011a3e\U00011a47\U00011a51-\U00011a5b\U00011a8a-\U00011a99"
    "\U00011c2f-\U00011c36\U00011c38-\U00011c3f\U00011c92-\U00011ca7\U00011ca9-\U00011cb6"
    "\U00011d31-\U00011d36\U00011d3a\U00011d3c-\U00011d3d\U00011d3f-\U00011d45\U00011d47"
    "\U00011d8a-\U00011d8e\U00011d90-\U00011d91\U00011d93-\U00011d97\U00011ef3-\U00011ef6"
    "\U00016af0-\U00016af4\U00016b30-\U00016b36\U00016f4f\U00016f51-\U00016f87\U00016f8f-\U00016f92"
    "\U00016fe4\U00016ff0-\U00016ff1\U0001bc9d-\U0001bc9e\U0001cf00-\U0001cf2d\U0001cf30-\U0001cf46"
    "\U0001d165-\U0001d169\U0001d16d-\U0001d172\U0001d17b-\U0001d182\U0001d185-\U0001d18b"
    "\U0001d1aa-\U0001d1ad\U0001d242-\U0001d244\U0001da00-\U0001da36\U0001da3b-\U0001da6c\U0001da75"
    "\U0001da84\U0001da9b-\U0001da9f\U0001daa1-\U0001daaf\U0001e000-\U0001e006\U0001e008-\U0001e018"
    "\U0001e01b-\U0001e021\U0001e023-\U0001e024\U0001e026-\U0001e02a\U0001e130-\U0001e136\U0001e2ae"
    "\U0001e2ec-\U0001e2ef\U0001e8d0-\U0001e8d6\U0001e944-\U0001e94a\U000e0100-\U000e01ef"
)


# The two patterns of a word past ASCII are compiled when first used: each takes 2 ms, and most
# commands that import this module match no text past ASCII.
@functools.cache
def _word_piece() -> re.Pattern:
    """A word: letters, digits and their marks."""
    return re.compile(rf"[^\W_]+(?:[{_MARKS}]+[^\W_]*)*")


@functools.cache
def _raw_piece() -> re.Pattern:
    """A word before folding: the characters that show as nothing may stand inside it too."""
    return re.compile(rf"[^\W_]+(?:[{_MARKS}{_INVISIBLE.pattern[1:-1]}]+[^\W_]*)*")


_SENTENCE_ENDS = " \t.,;:!?…'\"’”»)]}"


def _pieces_at(folded: str):
    """(start, end, word) of each word of folded text."""
    for match in (_PIECE if folded.isascii() else _word_piece()).finditer(folded):
        yield match.start(), match.end(), match.group()


def fold(text: str) -> str:
    """Text as it is compared: Unicode compatibility forms folded (fullwidth, ligatures, composed
    or decomposed accents), then case folded, and without the characters that show as nothing
    (newlines stay where they are). Text all ASCII, as a journal mostly is, holds none of them."""
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    # İ (a capital I with its dot) folds to i and a combining dot, which I and ı do not have: as read,
    # İlker is Ilker and ilker. The dotless ı stays ı, and I folds to i: YILDIZ is Yıldız
    return _INVISIBLE.sub("", folded.replace("i\u0307", "i").replace("ı", "i"))


def mask_tokens(pattern: re.Pattern, text: str, shown: str) -> str:
    """``text`` with each token of ``pattern`` (whole_tokens of folded tokens) that stands in it,
    as the People matcher reads it (folded: in another case or Unicode form, a character that shows
    as nothing inside it), replaced by ``shown``."""
    if text.isascii():
        folded, at = text.lower(), range(len(text) + 1)
    else:  # folded a character at a time, each folded character knowing the one it came from
        pieces, places = [], []
        for index, char in enumerate(text):
            piece = fold(char)
            pieces.append(piece)
            places += [index] * len(piece)
        folded, at = "".join(pieces), [*places, len(text)]
    out, done = [], 0
    for match in pattern.finditer(folded):
        start = at[match.start()]
        end = at[match.end() - 1] + 1 if match.end() > match.start() else start
        out += [text[done:start], shown]
        done = end
    return "".join(out) + text[done:] if out else text


def words(text: str) -> tuple[str, ...]:
    """The words of a text, folded: runs of letters and digits, whatever separates them."""
    return tuple(word for _start, _end, word in _pieces_at(fold(text)))


def id_spells(entity_id: str, name: str) -> bool:
    """Whether an entity's id (``organization/sam-reyes``) spells a person's name ("Sam Reyes") as
    its words, in order and whole, read as the text's words or as the name's slug (model.slug, which
    kg org add makes an id of: "José Núñez" is jose-nunez): such an id is in every record of its
    entity, where no forget can take it. An alias, or a word the name shares with the id, is none."""
    from kgrdf import model

    said = words(entity_id.split("/", 1)[-1])
    for of in {words(name), tuple(w for w in model.slug(name).split("-") if w)}:
        if of and any(said[n : n + len(of)] == of for n in range(len(said) - len(of) + 1)):
            return True
    return False


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
        self._name_trie = _WordTrie()  # names and aliases as paths of words -> people
        self._tokens: dict[str, set[str]] = {}  # folded token -> people
        self._token_pattern = None
        self._keys: set[str] | None = set()  # a word each token holds (None: no cheap test)
        self._name_words: set[tuple[str, ...]] = set()  # the words of each name: any one finds it
        self._handles: dict[str, set[str]] = {}  # the last part of an id (dana of person/dana) -> people

    def __bool__(self) -> bool:
        return bool(self.iris or self._name_words or self._tokens)

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
        self._name_trie.add(found, person)
        self._name_words.add(found)

    def holders(self, name: str) -> set[str]:
        """The people who go by ``name`` (a name or alias of exactly its words)."""
        found = words(name)
        return set(self._name_trie.exactly(found)) if found else set()

    def add_token(self, token: str, person: str, key: str | None = None) -> None:
        folded = fold(token).strip()
        if not folded:
            return
        self._tokens.setdefault(folded, set()).add(person)
        self._token_pattern = None
        pieces = [word for _start, _end, word in _pieces_at(folded)]
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
        if self._name_words:
            seen = [word for _start, _end, word in _pieces_at(folded)]
            spans = [
                (at, at + length, person) for at in range(len(seen)) for length, person in self._name_trie.at(seen, at)
            ]
            # A span lies inside a longer one only if that one begins at most the longest name before
            # its end: those alone are looked at (all of them were, for each: a text naming a person
            # 16,000 times took 38 s to forget).
            ends_at: dict[int, list[int]] = {}
            for start, end, _person in spans:
                ends_at.setdefault(start, []).append(end)
            longest = max((end - start for start, end, _person in spans), default=0)
            for start, end, person in spans:
                if person in found:
                    continue
                if not any(
                    e >= end and e - s > end - start
                    for s in range(max(0, end - longest), start + 1)
                    for e in ends_at.get(s, ())
                ):
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


def said_key(fact, subject: str | None = None, value: str | None = None) -> str:
    """What a fact says (subject, predicate, object or value, as proposing it again finds it): its
    keyed digest is how forgotten.jsonl remembers a fact forget deleted, never the fact. ``subject``
    and ``value`` ask for the same said of another subject or object (one merged into it since)."""
    return f"{subject or fact.subject} {fact.predicate} {value or fact.value_key()}"


def said_with_key(fact, text: str, subject: str | None = None, value: str | None = None) -> str:
    """What a fact says beside one text of it (its speaker, a source, a message: naming_texts): the
    keyed digest of each that named a person forget deleted the fact for, so that kg sync folds back
    no copy of that fact that still names them, and folds the same triple heard without them."""
    return f"{said_key(fact, subject, value)} with {text}"


def naming_texts(fact) -> list[str]:
    """The texts of a fact that may name a person beside its triple (fact_texts, less its value),
    and each hearing's speaker (an id)."""
    value = None if fact.is_entity_target else fact.target.value
    return [t for t in dict.fromkeys([*fact_texts(fact), *(h.said_by for h in fact.hearings)]) if t and t != value]


def label_key(iri: str, text: str) -> str:
    """A name, alias, weak alias or summary of the entity ``iri``: forgotten.jsonl keeps the keyed
    digest of each that forget took from another entity (it named the person), never the text."""
    return f"{iri} named {text}"


@dataclass(frozen=True)
class Forgotten:
    """The keyed digests of what forget deleted that kg sync is not to fold back from a replica
    that still holds it: what each deleted fact said (said_key), and each name, alias or summary
    taken from another entity (label_key)."""

    key: "Key"
    said: frozenset[str]
    labels: frozenset[str]
    retired: dict = field(default_factory=dict)  # said digest -> when what kg expire deleted was last renewed
    said_with: frozenset[str] = frozenset()  # said_with_key digests: a fact deleted for a text beside its triple

    def fact(self, fact, merged=lambda iri: (iri,)) -> bool:
        """Whether forget deleted a fact that said what ``fact`` says, of its subject or object or
        of one ``merged(iri)`` gives for them (the organizations merged into it: a merge carries a
        fact over to the one kept): one whose triple named the person, or one that said it with a
        text ``fact`` holds too (its speaker, a source, a message that named them)."""
        if not self.said and not self.said_with:
            return False
        values = merged(fact.target.value) if fact.is_entity_target else (fact.value_key(),)
        pairs = [(subject, value) for subject in merged(fact.subject) for value in values]
        if any(self.key.digest(said_key(fact, subject, value)) in self.said for subject, value in pairs):
            return True
        return bool(self.said_with) and any(
            self.key.digest(said_with_key(fact, text, subject, value)) in self.said_with
            for text in naming_texts(fact)
            for subject, value in pairs
        )

    def said_with_text(self, fact, text: str, merged=lambda iri: (iri,)) -> bool:
        """Whether forget took ``text`` (a source's ref or quote, a speaker, a message) out of a fact
        that said what ``fact`` says, or deleted one for it (:meth:`fact` reads the subjects)."""
        if not self.said_with or not text:
            return False
        values = merged(fact.target.value) if fact.is_entity_target else (fact.value_key(),)
        return any(
            self.key.digest(said_with_key(fact, text, subject, value)) in self.said_with
            for subject in merged(fact.subject)
            for value in values
        )

    def label(self, iri: str, text: str | None) -> bool:
        return bool(text) and bool(self.labels) and self.key.digest(label_key(iri, text)) in self.labels

    def past_retention(self, fact, merged=lambda iri: (iri,)) -> bool:
        """Whether kg expire deleted past retention a fact that said what ``fact`` says (as
        :meth:`fact` reads it), and ``fact`` was last observed or confirmed no later than the fact
        deleted (:func:`renewed_at`): what another replica holds of it then is what was deleted
        here, not an observation or confirmation the deleted one did not have."""
        if not self.retired:
            return False
        values = merged(fact.target.value) if fact.is_entity_target else (fact.value_key(),)
        deleted = [
            self.retired[digest]
            for subject in merged(fact.subject)
            for value in values
            if (digest := self.key.digest(said_key(fact, subject, value))) in self.retired
        ]
        return bool(deleted) and renewed_at(fact) <= max(deleted)


def renewed_at(fact) -> str:
    """When a fact was last observed or confirmed (an ISO time of UTC; "" for never): what retention
    counts from."""
    return max(fact.observed_at or "", fact.last_confirmed_at or "")


def forgotten_facts(kb) -> "Forgotten | None":
    """What forget deleted that kg sync does not fold back (:class:`Forgotten`), or None when no
    forget kept any."""
    records = forgotten(kb)
    said = frozenset(digest for record in records for digest in _listed(record, "said"))
    said_with = frozenset(digest for record in records for digest in _listed(record, "said_with"))
    labels = frozenset(digest for record in records for digest in _listed(record, "labels"))
    retired: dict[str, str] = {}
    for record in records:  # (each time an ISO time of UTC, compared as text)
        kept = record.get("past_retention")
        for digest, renewed in kept.items() if isinstance(kept, dict) else ():
            retired[digest] = max(retired.get(digest, ""), str(renewed))
    if not (said or said_with or labels or retired):
        return None
    return Forgotten(key(kb, make=False), said, labels, retired, said_with)


def _listed(record: dict, name: str) -> list[str]:
    """The digests a forgotten.jsonl record lists under ``name`` (none for a field edited to another kind)."""
    found = record.get(name)
    return [item for item in found if isinstance(item, str)] if isinstance(found, list) else []


def unmatched_forgets(kb) -> int:
    """How many forgets forgotten.jsonl holds with no digest of what their facts said (made before
    kgrdf kept them): kg sync cannot tell a fact they deleted from a new one."""
    return sum(
        1
        for record in forgotten(kb)
        if "hash" in record and "said" not in record and "labels" not in record and record.get("facts") != 0
    )


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
        # (a record of deletions past retention names no one: it has no hash)
        keyed = [r["hash"] for r in records if r.get("hash_kind") == HMAC and "hash" in r]
        plain = [r["hash"] for r in records if r.get("hash_kind") != HMAC and "hash" in r]
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
