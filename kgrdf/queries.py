"""The named SPARQL queries in ``queries/``: every read kgrdf makes is one of these files.

A file starts with a header the CLI help, the tests and the console read::

    # title: Current facts about an entity
    # param: entity - the entity IRI
    # scope: entities - (optional) it reads no fact

A query that reads facts projects ``?fact`` (or takes ``$fact``), so that a read for an audience can
keep the rows of the facts that audience may hear (see Session.hear_as).

Parameters are bound by the engine (pyoxigraph ``substitutions``, rdflib ``initBindings``), never
pasted into the text. A parameter is written ``$name`` in the query and must be projected by the
SELECT (Oxigraph binds only projected variables).
"""

from dataclasses import dataclass, field
from functools import cache

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
