"""What a backend of the index must do.

The index is derived: it holds the quads the journal leaves and the journal position it reflects,
and it answers the named queries. Backends declare what they can do, as rdflib's ``Store`` does,
so that the knowledge base and the tests can ask instead of guessing:

- ``persistent``: the index survives the process (else it is rebuilt from the journal each open);
- ``local``: it lives on this machine and takes the knowledge base's file lock;
- ``dataset_scoping``: a query can be restricted to a list of graphs.
"""

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator

from kgrdf.journal import Position, Transaction
from kgrdf.queries import Query


def user_dataset(text: str, graphs: list | None) -> tuple[list, list | None]:
    """The default graph and the named graphs a user's query (kg sparql, /sparql) runs on: the
    schema graph and ``graphs`` (None: every named graph the store holds, none but the knowledge
    base's); each may be empty, a list naming one graph that holds nothing ([vocab.NO_GRAPH]).
    The dataset is the reader's to fix, and a dataset given to an engine replaces the query's own
    FROM and FROM NAMED, which it would then ignore without a word. So a query that names graphs
    reads those of them it may read and no other (its FROM NAMED alone leaves it no default graph,
    its FROM alone no named ones: SPARQL 1.1, 13.2)."""
    import pyoxigraph as ox

    from kgrdf import sandbox, vocab

    schema = ox.NamedNode(vocab.SCHEMA_GRAPH)
    asked = sandbox.dataset(text)
    if asked is None:
        return ([schema] if graphs is None or schema in graphs else [vocab.NO_GRAPH]), graphs
    may = None if graphs is None else {g.value for g in graphs}

    def readable(iris: list[str]) -> list:
        kept = []
        for iri in dict.fromkeys(iris):
            if may is None or iri in may:
                try:
                    kept.append(ox.NamedNode(iri))
                except ValueError:  # no IRI (a relative one without a base): the query does not parse
                    continue
        return kept

    froms, named = asked
    return readable(froms) or [vocab.NO_GRAPH], readable(named) or [vocab.NO_GRAPH]


class Backend(ABC):
    name: str = "backend"
    persistent: bool = False
    local: bool = True
    dataset_scoping: bool = True

    @abstractmethod
    def select(
        self, query: Query, bindings: dict | None = None, graphs: list | None = None, limit: int | None = None
    ) -> list[dict]:
        """Rows of a named SELECT query as dicts of variable name to term (None when unbound).
        With ``graphs``, the query sees only those named graphs (an audience's dataset); with
        ``limit``, only the first rows are read."""

    def select_iter(self, query: Query, bindings: dict | None = None, graphs: list | None = None) -> Iterator[dict]:
        """The rows of select(), one at a time, for a reader of every row that keeps none (an
        export): read as the engine gives them where it can, else read whole first."""
        return iter(self.select(query, bindings, graphs))

    @abstractmethod
    def ask(self, query: Query, bindings: dict | None = None, graphs: list | None = None) -> bool:
        """The answer of a named ASK query."""

    @abstractmethod
    def sparql(self, text: str, graphs: list | None = None, timeout: float | None = None, memory: int | None = None):
        """Run any SPARQL query over the data graphs (never the index's own bookkeeping) and return
        its answer read whole. With ``timeout`` (seconds) and ``memory`` (bytes), the query is
        stopped at those limits (Refused); a query that does not parse or that the engine fails on
        is BadInput."""

    @abstractmethod
    def apply(self, tx: Transaction, after: Position) -> None:
        """Apply one journal transaction and record ``after`` as the index's position.

        Applying the last transaction twice must leave the same state (recovery replays it).
        """

    @abstractmethod
    def set_position(self, position: Position) -> None:
        """Record that the index reflects the journal up to ``position`` (its data unchanged)."""

    @abstractmethod
    def replace_all(self, nquads: Iterable[str], position: Position) -> None:
        """Replace everything with these quads (a rebuild from the journal)."""

    @abstractmethod
    def position(self) -> tuple[int, str] | None:
        """The journal sequence number and digest the index reflects, or None for an empty index."""

    @abstractmethod
    def schema_quads(self) -> list:
        """The quads of the schema graph: the ontology and an accepted site extension."""

    @abstractmethod
    def schema_digest(self) -> str | None:
        """The digest of the ontology whose schema graph the index holds."""

    @abstractmethod
    def quads(self) -> Iterator:
        """Every data quad (the index's bookkeeping excluded)."""

    @abstractmethod
    def quads_in(self, graph, subject=None) -> Iterator:
        """Every quad of one named graph (a dump, like export: the entities graph for validation),
        or only those about ``subject``."""

    @abstractmethod
    def graphs(self) -> list:
        """The names of the data graphs."""

    def close(self) -> None:  # noqa: B027 (a backend with nothing to release keeps this one)
        """Release the backend's resources."""
