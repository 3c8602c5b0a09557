"""The named SPARQL queries in ``queries/``: every read kgrdf makes is one of these files.

A file starts with a header the CLI help, the tests and the console read::

    # title: Current facts about an entity
    # param: entity - the entity IRI
    # scope: entities - (optional) it reads no fact

A query that reads facts projects ``?fact`` (or takes ``$fact``), so that a read for an audience can
keep the rows of the facts that audience may hear (see Session.hear_as).

A parameter is written ``$name`` in the query and projected by its SELECT. It is bound by writing its
value, an IRI or a literal serialized by pyoxigraph (escaped as N-Triples), where it stands (:func:`bind`),
never text pasted from a user.
"""

import re
from dataclasses import dataclass, field
from functools import cache, lru_cache

from kgrdf.errors import BadInput
from kgrdf.resources import data_dir


@dataclass(frozen=True)
class Query:
    name: str
    title: str
    text: str
    params: dict[str, str] = field(default_factory=dict)
    scope: str = "facts"  # "entities": it reads no fact


def _parse(name: str, text: str) -> Query:
    title, params, scope = "", {}, "facts"
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        body = line.lstrip("#").strip()
        if body.startswith("title:"):
            title = body.removeprefix("title:").strip()
        elif body.startswith("param:"):
            pname, _, desc = body.removeprefix("param:").strip().partition(" - ")
            params[pname.strip()] = desc.strip()
        elif body.startswith("scope:"):
            scope = body.removeprefix("scope:").strip().split()[0]
    return Query(name=name, title=title, text=text, params=params, scope=scope)


@cache
def load(name: str) -> Query:
    """The query ``queries/<name>.rq``. Raises FileNotFoundError for an unknown name."""
    path = data_dir("queries") / f"{name}.rq"
    return _parse(name, path.read_text(encoding="utf-8"))


def names() -> list[str]:
    return sorted(p.stem for p in data_dir("queries").glob("*.rq"))


def value(term):
    """A result term as a plain Python value: IRIs and strings as str, numbers and booleans typed."""
    if term is None:
        return None
    datatype = getattr(term, "datatype", None)
    if datatype is None:
        return term.value
    dt = datatype.value.rsplit("#", 1)[-1]
    if dt in ("integer", "int", "long", "nonNegativeInteger"):
        return int(term.value)
    if dt == "boolean":
        return term.value in ("true", "1")
    if dt in ("decimal", "double", "float"):
        return float(term.value)
    return term.value


def term(value) -> str:
    """A pyoxigraph IRI or literal as SPARQL text. Raises BadInput for anything else."""
    import pyoxigraph as ox

    if isinstance(value, (ox.NamedNode, ox.Literal)):
        return str(value)
    raise BadInput(f"a query parameter must be an IRI or a literal, not {value!r}")


# The pieces of a query that matter to binding: what cannot hold a variable (comments, strings,
# IRIs) is passed over whole, variables and the keywords that change how one is written are found.
# A variable's letters past ASCII are written as "not below U+00C0": a class that spells out the
# range up to U+FFFF takes Python 5 ms to compile, in every process that reads.
_TOKEN = re.compile(
    r"""(?P<skip>\#[^\n]*|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''"""
    r"""|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|<[^<>"{}|^`\\\x00-\x20]*>)"""
    r"""|(?P<var>[?$](?:[A-Za-z0-9_\u00b7]|[^\x00-\xbf])+)"""
    r"""|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"""
    r"""|(?P<punct>[(){}])""",
    re.DOTALL,
)

# How a bound parameter is written where it stands (see bind)
_FORMS = {
    "term": lambda value, name: value,
    "projected": lambda value, name: f"({value} AS ?{name})",
    "unprojected": lambda value, name: "",
    "filler": lambda value, name: f"(true AS ?bound_{name}) ",
    "bound": lambda value, name: "true",
    "expression": lambda value, name: f"({value})",
}


def bind(text: str, bindings: dict | None) -> str:
    """The query ``text`` with each bound parameter's value in place of its variable; a parameter
    given a list of values stays a variable, given them by a VALUES block at the head of the
    query's WHERE (one query for many facts: the engine reads each from its own value, as it reads
    one bound in place).

    In the query's projection a bound ``?x`` becomes ``(TERM AS ?x)``, and a subquery no longer
    projects it (the term is everywhere it was: a projection of it there would clash with the
    outer one), but projects ``(true AS ?bound_x)`` when it projected nothing else; after GROUP BY
    or ORDER BY, ``(TERM)``; ``BOUND(?x)`` becomes ``true``; anywhere else, the term. An
    unbound parameter stays a variable. Raises ValueError for a variable the query assigns (``AS
    ?x``, a VALUES block): it is no parameter.

    Both indexes bind so: an engine's planner sees the value as the constant it is. Oxigraph's own
    ``substitutions`` join the values to the query's answer, which it then computes whole when an
    aggregate stands between (briefing-revisions.rq for one fact at 40k closings: 90 ms, against
    0.2 ms with the term in place).
    """
    bindings = {name: v for name, v in (bindings or {}).items() if v is not None}
    many = {name: [term(one) for one in v] for name, v in bindings.items() if isinstance(v, (list, tuple))}
    values = {name: term(v) for name, v in bindings.items() if name not in many}
    if many:
        _slots(text, frozenset(many))  # refuses a variable the query assigns
    if values:
        pieces, slots = _slots(text, frozenset(values))
        out = [pieces[0]]
        for (name, form), piece in zip(slots, pieces[1:], strict=True):
            out.append(_FORMS[form](values[name], name))
            out.append(piece)
        text = "".join(out)
    if many:
        at = _where_opens(text)
        block = "".join(f" VALUES ?{name} {{ {' '.join(terms)} }}" for name, terms in many.items())
        text = f"{text[:at]}{block}\n{text[at:]}"
    return text


def _where_opens(text: str) -> int:
    """Where the group of the query's own WHERE opens (just past its ``{``). Raises ValueError for a
    query with no WHERE of its own."""
    braces, after_where = 0, False
    for match in _TOKEN.finditer(text):
        kind, token = match.lastgroup, match.group()
        if kind == "word" and token.upper() == "WHERE" and braces == 0:
            after_where = True
        elif kind == "punct" and token == "{":
            if after_where:
                return match.end()
            braces += 1
        elif kind == "punct" and token == "}":
            braces -= 1
    raise ValueError("a parameter given many values needs the query's WHERE {...} to put them in")


@lru_cache(maxsize=1024)
def _slots(text: str, names: frozenset[str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """``text`` cut where a variable of ``names`` is to be bound: the pieces between, and each cut's
    variable and form (_FORMS). A query's text is read once for each set of parameters it is given."""
    pieces: list[str] = []
    slots: list[tuple[str, str]] = []
    at = 0
    mode, depth, previous = "", 0, ""
    braces = nested = 0  # how deep in { } the scan is; whether the SELECT being read is a subquery
    dropped, projects = None, False  # a subquery's: the bound variable it no longer projects; any other

    def projection_ends(where: int) -> None:
        """A subquery's projection ends at ``where``: one that projects nothing now projects a filler."""
        nonlocal at
        if nested and dropped is not None and not projects:
            pieces.append(text[at:where])
            slots.append((dropped, "filler"))
            at = where

    tokens = [match for match in _TOKEN.finditer(text) if match.lastgroup != "skip"]
    for index, match in enumerate(tokens):
        kind, token = match.lastgroup, match.group()
        if kind == "word":
            word = token.upper()
            if word == "SELECT":
                mode, depth, nested = "select", 0, braces > 0
                dropped, projects = None, False
            elif word in ("WHERE", "FROM") and mode == "select":
                projection_ends(match.start())
                mode = ""
            elif word == "BY" and previous in ("GROUP", "ORDER"):
                mode, depth = "modifiers", 0
            elif word in ("LIMIT", "OFFSET", "HAVING") and mode == "modifiers":
                mode = ""
            elif word == "VALUES":
                mode, depth = "values", 0
            previous = word
            continue
        if kind == "punct":
            if token == "(":
                projects = projects or (mode == "select" and depth == 0)
                depth += 1
            elif token == ")":
                depth -= 1
            elif token == "{":
                braces += 1
                if mode == "values":
                    depth += 1
                elif mode == "select":
                    projection_ends(match.start())
                    mode = ""
                elif mode == "modifiers":
                    mode = ""
            elif token == "}":
                braces -= 1
                if mode == "values":
                    depth -= 1
                    if depth <= 0:
                        mode = ""
                elif mode == "modifiers":
                    mode = ""
            previous = token
            continue
        name = token[1:]
        if mode == "select" and depth == 0 and not (name in names and nested):
            projects = True
        if name in names and (previous == "AS" or mode == "values"):
            raise ValueError(f"?{name} is assigned by the query (AS or VALUES): it cannot be bound")
        if name in names and _in_bound(tokens, index):
            # BOUND(?x) of a bound ?x: true, in place of the whole call (BOUND takes a variable alone)
            pieces.append(text[at : tokens[index - 2].start()])
            slots.append((name, "bound"))
            at = tokens[index + 1].end()  # the ")" is read next, as any
            previous = token
            continue
        if name in names and mode != "values":
            form = "term"
            if mode == "select" and depth == 0:
                form = "unprojected" if nested else "projected"
                dropped = name if nested else dropped
            elif mode == "modifiers" and depth == 0:
                form = "expression"
            pieces.append(text[at : match.start()])
            slots.append((name, form))
            at = match.end()
        previous = token
    pieces.append(text[at:])
    return tuple(pieces), tuple(slots)


def _in_bound(tokens: list, index: int) -> bool:
    """Whether the variable at ``tokens[index]`` is all that a BOUND( ) holds."""
    return (
        2 <= index < len(tokens) - 1
        and tokens[index - 2].group().upper() == "BOUND"
        and tokens[index - 1].group() == "("
        and tokens[index + 1].group() == ")"
    )
