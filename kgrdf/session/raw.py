"""Raw SPARQL over what the reader may see, and an export of it."""

from collections.abc import Iterator
from typing import BinaryIO

from pyoxigraph import NamedNode

from kgrdf import queries, vocab
from kgrdf.errors import BadInput
from kgrdf.session.reading import Reading, now_literal


class RawReads(Reading):
    """sparql and export."""

    def sparql(self, text: str, timeout: float | None = None):
        """Run a user's SPARQL query over the perspective's data graphs and the schema graph: the
        dataset the engine sees holds nothing else (for an audience, only what it may read: see
        _heard_quads). The text passes :func:`kgrdf.sandbox.check` first (no SERVICE, bounded size
        and nesting) and the query runs for at most ``timeout`` seconds (else
        :func:`kgrdf.sandbox.time_limit`) and :func:`kgrdf.sandbox.memory_limit`; its answer is
        returned read whole."""
        from kgrdf import sandbox

        sandbox.check(text)
        if timeout is None:
            timeout = sandbox.time_limit()
        if self._hearer is not None:
            import time

            from kgrdf import heard

            started = time.monotonic()
            with heard.held(self, deadline=started + timeout, timeout=timeout) as dataset:
                left = timeout - (time.monotonic() - started)  # gathering it counts in the limit
                if left <= 0:  # (gathered whole: a kept set is there for the next query)
                    raise heard.past_limit(timeout, kept=dataset.folder is not None)
                return dataset.backend.sparql(text, timeout=left, memory=sandbox.memory_limit(), forked=dataset.release)
        backend = self.backend
        scope = None  # the whole dataset: the knowledge base holds no other perspective
        if self._other_graphs():
            scope = [g for g in backend.graphs() if self.may_read(g.value)]
        return backend.sparql(text, graphs=scope, timeout=timeout, memory=sandbox.memory_limit())

    def _other_graphs(self) -> bool:
        """Whether the index holds an entity or fact of another perspective (one scan of
        kg:perspective), remembered by a resident process until the index moves on."""
        mine = vocab.perspective_iri(self.perspective)

        def scan() -> bool:
            return bool(self.backend.select(queries.load("other-perspectives"), {"perspective": mine}, limit=1))

        resident = self.kb.resident
        if resident is None:
            return scan()
        return resident.remember(("other-perspectives", self.perspective, self.backend.position()), scan)

    def export(self, fmt: str) -> bytes:
        """The export (export_to) as bytes, for a program that wants it whole."""
        import io

        buffer = io.BytesIO()
        self.export_to(fmt, buffer)
        return buffer.getvalue()

    def export_to(self, fmt: str, out: BinaryIO) -> None:
        """Write the knowledge base to ``out`` as TriG, N-Quads or JSON-LD (the whole dataset), or
        as Turtle (the current knowledge as one plain graph: entity descriptions and current fact
        triples). The dataset is written as the index is read, a quad at a time: a list of every
        quad held 1.8 GB at 100k facts, and took twice as long. Raises BadInput for an unknown
        format before anything is written."""
        import pyoxigraph as ox

        formats = {
            "trig": ox.RdfFormat.TRIG,
            "nquads": ox.RdfFormat.N_QUADS,
            "jsonld": ox.RdfFormat.JSON_LD,
            "turtle": ox.RdfFormat.TURTLE,
        }
        if fmt not in formats:
            raise BadInput(f"unknown export format {fmt!r}; use one of {', '.join(formats)}")
        options = {"prefixes": dict(vocab.PREFIXES)} if fmt in ("trig", "turtle") else {}
        if fmt == "turtle":
            ox.serialize(self._current_triples(), out, formats[fmt], **options)
        elif self._hearer is not None:
            from kgrdf import heard

            with heard.held(self) as dataset:
                ox.serialize(dataset.quads(), out, formats[fmt], **options)
        else:
            mine = (q for q in self.backend.quads() if self.may_read(q.graph_name.value))
            ox.serialize(mine, out, formats[fmt], **options)

    def _current_triples(self) -> Iterator:
        """The current knowledge as triples, each once, for the Turtle export. The owner's are
        given as the index yields them, and only a digest of each is kept, to drop a triple two
        facts hold: the rows and triples held whole took 2.6 GB at a million facts. An audience's
        are read whole: the entities its facts name decide which descriptions it may see, and each
        description is shown as the audience's dataset shows it (heard.described)."""
        from pyoxigraph import Triple

        if self._hearer is None:
            return _once(Triple(r["s"], r["p"], r["o"]) for r in self.rows_iter("graph-current", now=now_literal()))
        from kgrdf import heard

        rows = self.rows("graph-current", now=now_literal())
        named = {r["s"].value for r in rows if r["fact"] is not None}
        named |= {r["o"].value for r in rows if r["fact"] is not None and isinstance(r["o"], NamedNode)}
        ours = self.own_organization()
        named |= {ours.iri} if ours else set()
        triples = [Triple(r["s"], r["p"], r["o"]) for r in rows if r["fact"] is not None]
        descriptions: dict[str, list] = {}
        for r in rows:
            if r["fact"] is None and r["s"].value in named:
                descriptions.setdefault(r["s"].value, []).append(Triple(r["s"], r["p"], r["o"]))
        for subject, description in descriptions.items():
            triples += heard.described(self, subject, description)
        return _once(iter(triples))


def _once(triples: Iterator) -> Iterator:
    """Each triple the first time it comes, keeping a 16-byte digest of each seen (a chance of two
    triples sharing one is about 2^-128 a pair)."""
    from hashlib import blake2b

    seen = set()
    for triple in triples:
        key = blake2b(str(triple).encode("utf-8"), digest_size=16).digest()
        if key not in seen:
            seen.add(key)
            yield triple
