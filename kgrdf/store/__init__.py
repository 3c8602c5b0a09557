"""The index behind one interface: an embedded Oxigraph store on disk (default) or in memory, or a
SPARQL 1.1 server.

Every backend runs the same files of ``queries/``; see :mod:`kgrdf.store.base` for what a backend
must do and the capability flags it declares.
"""

from kgrdf.store.base import Backend

__all__ = ["Backend", "open_backend"]


def open_backend(kind: str, path=None, read_only: bool = False, url: str | None = None) -> Backend:
    """Open the backend ``kind``: "oxigraph" (on disk at ``path``), "memory", or "sparql" (the
    SPARQL server at ``url``, contacted at the first request)."""
    if kind == "sparql":
        from kgrdf.store.sparql import SparqlBackend

        return SparqlBackend(url)
    from kgrdf.store.oxigraph import OxigraphBackend

    if kind == "oxigraph":
        return OxigraphBackend(path, read_only=read_only)
    if kind == "memory":
        return OxigraphBackend(None)
    raise ValueError(f"unknown backend {kind!r}")
