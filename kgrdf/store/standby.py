"""A write's index on a SPARQL server, with a stand-in for when the server stops answering.

A write reads the index while it is made and validated. When the server stops answering during
those reads, the write need not be lost: the journal on this machine is the truth, and an index
made from it in memory answers the same queries at the same position. :class:`Standby` answers
from the server until it first fails to, then from the stand-in for the rest of the write; the
write then knows (``down``) to journal its transaction and leave the server to catch up.

Only reads switch over. Applying the transaction is the knowledge base's own step, which leaves
the index behind when the server does not answer.
"""

from collections.abc import Callable, Iterable, Iterator

from kgrdf.errors import Unreachable
from kgrdf.journal import Position, Transaction
from kgrdf.queries import Query
from kgrdf.store.base import Backend


class Standby(Backend):
    """The server's backend, and ``stand_in(exc)``, which makes the index from the journal (or
    raises ``exc`` when it cannot), called once, when the server first fails a read."""

    def __init__(self, server: Backend, stand_in: Callable[[Unreachable], Backend]):
        self.server = server
        self.current = server
        self.down: Unreachable | None = None
        self._stand_in = stand_in

    @property
    def name(self) -> str:
        return self.current.name

    @property
    def persistent(self) -> bool:
        return self.current.persistent

    @property
    def local(self) -> bool:
        return self.current.local

    @property
    def dataset_scoping(self) -> bool:
        return self.current.dataset_scoping

    def _read(self, read: Callable):
        if self.down is None:
            try:
                return read(self.current)
            except Unreachable as exc:
                self.current = self._stand_in(exc)
                self.down = exc
        return read(self.current)

    def select(self, query: Query, bindings=None, graphs=None, limit=None) -> list[dict]:
        return self._read(lambda b: b.select(query, bindings, graphs, limit))

    def ask(self, query: Query, bindings=None, graphs=None) -> bool:
        return self._read(lambda b: b.ask(query, bindings, graphs))

    def sparql(self, text: str, graphs=None, timeout=None, memory=None):
        return self._read(lambda b: b.sparql(text, graphs, timeout, memory))

    def position(self) -> tuple[int, str] | None:
        return self._read(lambda b: b.position())

    def schema_quads(self) -> list:
        return self._read(lambda b: b.schema_quads())

    def schema_digest(self) -> str | None:
        return self._read(lambda b: b.schema_digest())

    def graphs(self) -> list:
        return self._read(lambda b: b.graphs())

    def quads(self) -> Iterator:
        return iter(self._read(lambda b: list(b.quads())))  # read whole: a switch never repeats a quad

    def quads_in(self, graph, subject=None) -> Iterator:
        return iter(self._read(lambda b: list(b.quads_in(graph, subject))))

    def apply(self, tx: Transaction, after: Position) -> None:
        self.current.apply(tx, after)

    def set_position(self, position: Position) -> None:
        self.current.set_position(position)

    def replace_all(self, nquads: Iterable[str], position: Position) -> None:
        self.current.replace_all(nquads, position)

    def close(self) -> None:
        if self.current is not self.server:
            self.current.close()
        self.server.close()
