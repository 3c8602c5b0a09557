"""Where the data folders are: the ontology, the shapes and the queries.

In an installed wheel they sit inside the package (``kgrdf/_data/``); in a checkout they are the
top-level folders beside the package. This is the one module that knows.
"""

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """The folder ``name`` (ontology, shapes, queries). Raises FileNotFoundError if it is missing."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"kgrdf's {name}/ folder is missing from this installation")


def example_path(name: str) -> Path:
    """A file of the example organization shipped with the package."""
    return _PACKAGE / "examples" / name
