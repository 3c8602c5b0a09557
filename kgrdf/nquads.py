"""The journal's rows as text: the N-Quads of one quad each, without the closing " .".

A large write keeps its new facts' rows as text alone (a parsed quad takes twice a row's memory),
and once checked, each fact's rows packed as one compressed block (:class:`Rows`), so what reads
them picks the rows it needs by their predicate or graph, which a row shows as text, and has
Oxigraph parse only those, many at a time. Pure: no I/O.
"""

import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import lz4.block
from pyoxigraph import Literal, NamedNode, Quad, RdfFormat, parse

PARSED_AT_ONCE = 20_000  # rows given to Oxigraph's parser in one go

# A character that N-Quads writes escaped in a string: a control character, a quote or a backslash.
_ESCAPED = re.compile(r'[\x00-\x1f\x7f"\\]')


def string(text: str) -> str:
    """A plain string literal as a row writes it: what ``str(Literal(text))`` gives, without making
    the literal when the text is ASCII with nothing to escape (most of them)."""
    if text.isascii() and _ESCAPED.search(text) is None:
        return f'"{text}"'
    return str(Literal(text))


@lru_cache(maxsize=4096)
def iri(value: str) -> str:
    """An IRI as a row writes it, checked as Oxigraph checks it (ValueError when it is no IRI)."""
    return str(NamedNode(value))


def row(subject: str, predicate: str, obj: str, graph: str) -> str:
    """One row from its terms, each as a row writes it."""
    return f"{subject} {predicate} {obj} {graph}"


def predicate_of(line: str) -> str:
    """The predicate's IRI of a row (a subject, IRI or blank node, holds no space)."""
    start = line.index(" ") + 2
    return line[start : line.index(">", start)]


def subject_of(line: str) -> str:
    """The subject's IRI of a row ('' for a blank node)."""
    return line[1 : line.index(">")] if line.startswith("<") else ""


def graph_of(line: str) -> str:
    """The graph's IRI of a row in a named graph (every row of the journal is)."""
    return line[line.rindex(" <") + 2 : -1]


def quads(lines: Iterable[str], keep: Callable[[str], bool] | None = None) -> Iterator[Quad]:
    """The quads of ``lines`` (those ``keep`` keeps, all without it), parsed PARSED_AT_ONCE at a
    time: the memory of a few thousand quads, whatever the number of rows."""
    batch: list[str] = []
    for line in lines:
        if keep is None or keep(line):
            batch.append(line)
            if len(batch) == PARSED_AT_ONCE:
                yield from _parsed(batch)
                batch = []
    if batch:
        yield from _parsed(batch)


_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def fields(lines: Iterable[str], keep: Callable[[str], bool] | None = None) -> Iterator[tuple]:
    """(subject, predicate, object, object's datatype, graph) of each of ``lines`` (those ``keep``
    keeps), in their order, as the parsed quad's values: a term's value, the datatype's IRI (None
    for an IRI or a blank node). Read from the text where the row is as a row writes it (IRIs, and a
    literal with nothing escaped and no language), by Oxigraph's parser otherwise, many at a time:
    parsed, an import's 650k rows read by the measures cache took 2.6 s, as text 0.6 s."""
    kept = lines if keep is None else (line for line in lines if keep(line))
    for batch in batches(kept, PARSED_AT_ONCE):
        out = [_fields(line) for line in batch]
        unread = [line for line, terms in zip(batch, out, strict=True) if terms is None]
        if unread:
            parsed_terms = iter(_parsed_fields(unread))
            out = [terms if terms is not None else next(parsed_terms) for terms in out]
        yield from out


def _fields(line: str) -> tuple | None:
    """A row's fields from its text, or None when the parser must read it."""
    if not line.startswith("<") or "\\" in line:
        return None  # a blank node, or something escaped
    subject_end = line.find("> <")
    predicate_end = line.find("> ", subject_end + 3)
    graph_start = line.rfind(" <")
    if subject_end < 0 or predicate_end < 0 or graph_start <= predicate_end or not line.endswith(">"):
        return None
    obj = line[predicate_end + 2 : graph_start]
    if obj.startswith("<") and obj.endswith(">"):
        value, datatype = obj[1:-1], None
    elif obj.startswith('"') and obj.endswith('"') and len(obj) > 1:
        value, datatype = obj[1:-1], _XSD_STRING
    elif obj.startswith('"') and obj.endswith(">") and '"^^<' in obj:
        value, _, datatype = obj[1:-1].rpartition('"^^<')
    else:
        return None  # a language tag, a blank node
    if '"' in value:
        return None
    return line[1:subject_end], line[subject_end + 3 : predicate_end], value, datatype, line[graph_start + 2 : -1]


def _parsed_fields(lines: list[str]) -> Iterator[tuple]:
    for quad in _parsed(lines):
        obj, graph = quad.object, quad.graph_name
        datatype = getattr(obj, "datatype", None)
        yield (
            quad.subject.value,
            quad.predicate.value,
            obj.value,
            datatype.value if datatype is not None else None,
            getattr(graph, "value", ""),
        )


def subjects_and_objects(lines: Iterable[str], graph: str, predicates) -> list[tuple[str, str]]:
    """(subject, object) values of the rows in ``graph`` whose predicate is one of ``predicates``
    (IRIs): told from the text, so only those rows are read (:func:`fields`)."""
    tail = f" <{graph}>"

    def keep(line: str) -> bool:
        return line.endswith(tail) and predicate_of(line) in predicates

    if isinstance(lines, Rows):
        lines = lines.in_graph(graph)  # the blocks of other graphs stay packed

    return [(subject, obj) for subject, _predicate, obj, _datatype, _graph in fields(lines, keep=keep)]


def parsed(lines: list[str]) -> list[Quad]:
    """The quads of a few rows, as a list."""
    return _parsed(lines) if lines else []


def _parsed(lines: list[str]) -> list[Quad]:
    data = " .\n".join(lines) + " .\n"
    return list(parse(data.encode("utf-8"), format=RdfFormat.N_QUADS))


def batches(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    """``lines`` in lists of at most ``size``, read as they are asked for (a list, or :class:`Rows`)."""
    rest = iter(lines)
    return iter(lambda: list(itertools.islice(rest, size)), [])


@dataclass(frozen=True)
class Block:
    """The rows of one new fact, packed: LZ4 makes an import's 3.5 KB of text a fact about 750 bytes.
    (zlib at its fastest packs it to 560, at 25 times the time: 4 s of a 100k import's staging,
    against 0.2 s, and unpacks it at half the speed.) ``first`` is its first row, which says the
    journal all of them go to: a fact's rows are all in its own two graphs (kgrdf.privacy.Router
    decides by the fact)."""

    data: bytes
    count: int
    first: str

    @classmethod
    def pack(cls, lines: list[str]) -> "Block":
        return cls(lz4.block.compress("\n".join(lines).encode("utf-8")), len(lines), lines[0])

    def lines(self) -> list[str]:
        return lz4.block.decompress(self.data).decode("utf-8").split("\n")

    def holds_graph(self, graph: str) -> bool:
        """Whether a row of the block may be in ``graph``: one of the fact's two graphs."""
        fact = graph_of(self.first).removesuffix("/provenance")
        return graph in (fact, fact + "/provenance")


class Rows:
    """A write's rows, some of them as blocks: iterated, a block is unpacked as it is reached, so
    that the whole text of an import's hundred thousand facts is never held at once. It has a
    length and can be read again, but not indexed: read it in parts with :func:`batches`."""

    def __init__(self, lines: list[str], blocks: Iterable[Block] = ()):
        self._lines, self._blocks = lines, list(blocks)

    def __len__(self) -> int:
        return len(self._lines) + sum(block.count for block in self._blocks)

    def __bool__(self) -> bool:
        return bool(self._lines or self._blocks)

    def __iter__(self) -> Iterator[str]:
        yield from self._lines
        for block in self._blocks:
            yield from block.lines()

    def in_graph(self, graph: str) -> Iterator[str]:
        """The rows, but for the blocks that hold none in ``graph`` (Block.holds_graph), left packed:
        a cache of the entities graph reads an import's loose rows, not its hundred thousand facts."""
        yield from self._lines
        for block in self._blocks:
            if block.holds_graph(graph):
                yield from block.lines()

    def split(self, goes_left: Callable[[str], bool]) -> tuple["Rows", "Rows"]:
        """(the rows ``goes_left`` takes, the others): a block goes whole where its first row goes.
        One that splits many lines at once (``goes_left.split_lines``: privacy.Router) splits the loose rows."""
        split_lines = getattr(goes_left, "split_lines", None)
        lines: tuple[list[str], list[str]] = ([], [])
        blocks: tuple[list[Block], list[Block]] = ([], [])
        if split_lines is not None:
            lines = split_lines(self._lines)
        else:
            for line in self._lines:
                lines[0 if goes_left(line) else 1].append(line)
        for block in self._blocks:
            blocks[0 if goes_left(block.first) else 1].append(block)
        return Rows(lines[0], blocks[0]), Rows(lines[1], blocks[1])
