"""The embedded Oxigraph backend: a persistent store on disk, or an in-memory one.

pyoxigraph has no transaction object: each ``update()`` is atomic on its own, so a transaction
and the position it moves the index to go into one update. A very large transaction (an import)
is loaded in bulk and its position set after; replaying it is harmless since applying a
transaction twice leaves the same quads.
"""

import itertools
from collections.abc import Iterable
from pathlib import Path

import pyoxigraph as ox

from kgrdf import vocab
from kgrdf.errors import BadInput, Damaged
from kgrdf.journal import Position, Transaction
from kgrdf.queries import Query
from kgrdf.store.base import Backend

BULK_THRESHOLD = 20_000
LOAD_LINES = 50_000  # journal lines to a bulk load of a rebuild (about 10 MB of text; larger loads hold
# hundreds of MB more in the store's bulk loader and were no faster)
_KG_SEQ = vocab.kg("journalSeq")
_KG_DIGEST = vocab.kg("journalDigest")
_KG_SCHEMA = vocab.kg("schemaDigest")


class OxigraphBackend(Backend):
    name = "oxigraph"
    dataset_scoping = True

    def __init__(self, path: Path | None, read_only: bool = False):
        self.path = path
        self.read_only = read_only
        self.persistent = path is not None
        self.name = "oxigraph" if path is not None else "memory"
        try:
            if path is None:
                self.store = ox.Store()
            elif read_only:
                self.store = ox.Store.read_only(str(path))
            else:
                self.store = ox.Store(str(path))
        except OSError as exc:
            raise Damaged(
                f"cannot open the index at {path}: {exc}",
                hint="remove the index/ folder; the next command rebuilds it from the journal",
            ) from None

    # --- reads ---------------------------------------------------------------------------------

    def _run(self, query: Query, bindings: dict | None, graphs: list | None = None):
        subs = {ox.Variable(k): v for k, v in (bindings or {}).items() if v is not None}
        if graphs is None:
            return self.store.query(query.text, substitutions=subs or None)
        return self.store.query(
            query.text, substitutions=subs or None, default_graph=[vocab.INDEX_NODE], named_graphs=graphs
        )

    def select(
        self, query: Query, bindings: dict | None = None, graphs: list | None = None, limit: int | None = None
    ) -> list[dict]:
        solutions = self._run(query, bindings, graphs)
        names = [v.value for v in solutions.variables]
        return [{n: row[n] for n in names} for row in itertools.islice(solutions, limit)]

    def ask(self, query: Query, bindings: dict | None = None, graphs: list | None = None) -> bool:
        return bool(self._run(query, bindings, graphs))

    def sparql(
        self,
        text: str,
        graphs: list | None = None,
        timeout: float | None = None,
        memory: int | None = None,
        forked=None,
    ):
        from kgrdf.store import bounded

        # The default graph is the schema's (the index's own bookkeeping, in the store's default
        # graph, is never seen); every fact and the entities are named graphs. Without ``graphs``,
        # every named graph: a list of 20k graphs costs Oxigraph 0.2 s a query.
        schema = ox.NamedNode(vocab.SCHEMA_GRAPH)
        if graphs is None:
            options = {"default_graph": [schema]}
        else:
            options = {
                "default_graph": [g for g in graphs if g == schema] or [vocab.INDEX_NODE],
                "named_graphs": graphs,
            }
        if timeout is None:
            try:
                return bounded.materialize(self.store.query(text, **options))
            except SyntaxError as exc:
                raise BadInput(f"the query does not parse: {exc}") from None
        return bounded.query(self.store, text, timeout, memory, forked=forked, **options)

    def graphs(self) -> list:
        return list(self.store.named_graphs())

    def quads(self):
        for quad in self.store.quads_for_pattern(None, None, None, None):
            if not isinstance(quad.graph_name, ox.DefaultGraph):
                yield quad

    def quads_in(self, graph, subject=None):
        return self.store.quads_for_pattern(subject, None, None, graph)

    def position(self) -> tuple[int, str] | None:
        seq = digest = None
        for quad in self.store.quads_for_pattern(vocab.INDEX_NODE, None, None, vocab.DEFAULT_GRAPH):
            if quad.predicate == _KG_SEQ:
                seq = int(quad.object.value)
            elif quad.predicate == _KG_DIGEST:
                digest = quad.object.value
        return None if seq is None else (seq, digest or "")

    def schema_quads(self) -> list:
        """The effective schema the index holds (the ontology and an accepted site extension)."""
        return list(self.store.quads_for_pattern(None, None, None, ox.NamedNode(vocab.SCHEMA_GRAPH)))

    def schema_digest(self) -> str | None:
        for quad in self.store.quads_for_pattern(vocab.INDEX_NODE, _KG_SCHEMA, None, vocab.DEFAULT_GRAPH):
            return quad.object.value
        return None

    # --- writes --------------------------------------------------------------------------------

    @staticmethod
    def _position_update(after: Position) -> str:
        node = vocab.INDEX_NODE.value
        return (
            f"DELETE WHERE {{ <{node}> <{_KG_SEQ.value}> ?s }} ;\n"
            f"DELETE WHERE {{ <{node}> <{_KG_DIGEST.value}> ?d }} ;\n"
            f"INSERT DATA {{ <{vocab.INDEX_NODE.value}> <{_KG_SEQ.value}> {after.seq} ; "
            f'<{_KG_DIGEST.value}> "{after.digest}" }}'
        )

    def apply(self, tx: Transaction, after: Position) -> None:
        if len(tx.adds) + len(tx.deletes) > BULK_THRESHOLD:
            if tx.deletes:
                self.store.update(_data_block("DELETE DATA", tx.deletes))
            # A bounded number of lines to a load: the text of 100k facts' quads is about a GB as
            # one piece. A cut between loads leaves the index behind the journal's position, and
            # the next command applies the transaction again. The lines were written from parsed
            # quads, as a rebuild's are: not checked again.
            for at in range(0, len(tx.adds), LOAD_LINES):
                data = "".join(f"{line} .\n" for line in tx.adds[at : at + LOAD_LINES]).encode("utf-8")
                self.store.bulk_load(input=data, format=ox.RdfFormat.N_QUADS, lenient=True)
                del data
            self.store.update(self._position_update(after))
            return
        parts = []
        if tx.deletes:
            parts.append(_data_block("DELETE DATA", tx.deletes))
        if tx.adds:
            parts.append(_data_block("INSERT DATA", tx.adds))
        parts.append(self._position_update(after))
        self.store.update(" ;\n".join(parts))

    def set_position(self, position: Position) -> None:
        self.store.update(self._position_update(position))

    def replace_all(self, nquads: Iterable[str], position: Position) -> None:
        self.store.clear()
        # Loaded a bounded number of lines at a time: the text of a million facts' quads is GBs.
        rest = iter(nquads)
        for lines in iter(lambda: list(itertools.islice(rest, LOAD_LINES)), []):
            data = "".join(f"{line} .\n" for line in lines).encode("utf-8")
            # The rows are the journal's, each written from a parsed quad and chained by digest:
            # checking their IRIs again would cost a sixth of the load.
            self.store.bulk_load(input=data, format=ox.RdfFormat.N_QUADS, lenient=True)
        self.store.update(self._position_update(position))
        if self.persistent:
            self.store.flush()

    def close(self) -> None:
        if self.persistent and not self.read_only:
            try:
                self.store.flush()
            except OSError:
                pass
        self.store = None


def _data_block(keyword: str, lines: list[str]) -> str:
    """``INSERT DATA { GRAPH <g> { s p o . } ... }`` from N-Quads lines (each names its graph last)."""
    by_graph: dict[str, list[str]] = {}
    for line in lines:
        triple, _, graph = line.rpartition(" ")
        by_graph.setdefault(graph, []).append(triple)
    body = "\n".join(f"GRAPH {g} {{ {' . '.join(ts)} }}" for g, ts in by_graph.items())
    return f"{keyword} {{\n{body}\n}}"
