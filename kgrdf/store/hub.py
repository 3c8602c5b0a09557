"""A team's hub: a SPARQL 1.1 server that holds the replicas' shared journals (§9b, kg sync).

No protocol of kgrdf's own: a replica's shared journal is already RDF Patch, and the server already
speaks the SPARQL 1.1 Query and Update protocols. Each patch a replica pushes is kept whole in the
hub's journal graph, ``urn:kgrdf:hub``, as one node (``urn:kgrdf:hub:<replica>:<number>``) with the
replica, the patch's number in its journal, its time, the SHA-256 of its bytes and the bytes
themselves (the RDF Patch text); in the same Update request its rows are applied to the hub's
dataset, in their own graphs (facts, provenance, entities under ``https://kgrdf.org/``), so that the
team's shared knowledge can be queried on the hub too. One request is applied whole by the server:
a patch is on the hub with its rows, or not at all, and pushing it again changes nothing.

Only shared journals are pushed: the private journal never leaves its machine.

A hub that does not answer, or answers with an error, refuses that remote's sync (HubError, exit 1):
it damages nothing of the knowledge base, and kg sync goes on with the other remotes.
"""

import hashlib
from contextlib import contextmanager

import pyoxigraph as ox

from kgrdf import queries, vocab
from kgrdf.errors import Damaged, KgError, Refused
from kgrdf.queries import term
from kgrdf.store.sparql import LINES_A_REQUEST, SparqlBackend, data_block

JOURNALS = ox.NamedNode("urn:kgrdf:hub")
_REPLICA = vocab.kg("replica")
_NUMBER = vocab.kg("patchNumber")
_DIGEST = vocab.kg("patchDigest")
_TEXT = vocab.kg("patchText")
_TIME = vocab.kg("patchTime")
_ALTERED = vocab.kg("patchAltered")
PAGE = 500  # patches read in one query: the LIMIT of hub-patches.rq
PIECE = 1_000_000  # characters of a patch's text read in one answer: hub-patches.rq's and hub-patch-piece.rq's


class HubError(Refused):
    """The hub does not answer, or answers with an error (exit 1): a refusal of that remote's sync,
    not damage; what was pulled before it is kept, and the next kg sync pushes and pulls what is left."""


@contextmanager
def _asking():
    """A request to the hub's server: its failure (Unreachable, or the server's refusal, both
    Damaged as an index's are) raised as HubError."""
    try:
        yield
    except HubError:
        raise
    except (Damaged, Refused) as exc:
        raise HubError(exc.message, hint=exc.hint, **exc.details) from None


def patch_node(replica: str, number: int) -> ox.NamedNode:
    return ox.NamedNode(f"urn:kgrdf:hub:{replica}:{number}")


class Hub:
    """The hub at ``url`` (an address as for ``kg init --index``: an Oxigraph server's, or a
    ``/sparql`` endpoint). Raises HubError when it does not answer or answers with an error."""

    def __init__(self, url: str):
        self.url = url
        self.backend = SparqlBackend(url, role="hub")

    def close(self) -> None:
        self.backend.close()

    def _select(self, query, bindings: dict | None = None) -> list[dict]:
        with _asking():
            return self.backend.select(query, bindings)

    def _update(self, text: str) -> None:
        with _asking():
            self.backend.update(text)

    def heads(self) -> dict[str, int]:
        """Each replica the hub holds a journal of, and the number of its last patch there."""
        rows = self._select(queries.load("hub-heads"))
        return {row["replica"].value: int(row["last"].value) for row in rows}

    def digests(self, replica: str, number: int) -> set[str]:
        """The SHA-256 each record of patch ``number`` of ``replica`` on the hub was pushed with (one,
        unless two knowledge bases pushed that patch as theirs)."""
        rows = self._select(queries.load("hub-digest"), {"patch": patch_node(replica, number)})
        return {row["digest"].value for row in rows}

    def push(self, replica: str, patches: list[tuple[int, bytes, list[str], list[str], str]]) -> None:
        """Push patches of ``replica``'s shared journal, in order: (number, bytes, deletes, adds,
        time) each. Patches go a few to a request, each request whole, in the journal's order; a patch
        larger than a request's worth of rows goes in pieces, the record that it is there last.
        Raises HubError, pushing nothing, when the server holds a knowledge base's index: its rows
        would land among that index's."""
        with _asking():
            indexed = bool(patches) and self.backend.position() is not None
        if indexed:
            raise HubError(
                f"the server at {self.url} holds a knowledge base's index, not a hub: nothing was pushed",
                hint="a hub is a server or dataset of its own: kg remote remove this one and add the hub's",
            )
        batch: list[str] = []
        lines = 0
        for number, data, deletes, adds, time in patches:
            record = _record(replica, number, data, time)
            if len(deletes) + len(adds) > LINES_A_REQUEST:
                # A patch too large for one request (an import) is sent in pieces, its record last:
                # one cut short is sent whole again by the next push, which changes nothing twice.
                if batch:
                    self._update(" ;\n".join(batch))
                    batch, lines = [], 0
                for keyword, part in (("DELETE DATA", deletes), ("INSERT DATA", adds)):
                    for at in range(0, len(part), LINES_A_REQUEST):
                        self._update(data_block(keyword, part[at : at + LINES_A_REQUEST]))
                self._update(record)
                continue
            rows = [data_block("DELETE DATA", deletes), data_block("INSERT DATA", adds)]
            batch.append(" ;\n".join([r for r in rows if r] + [record]))
            lines += len(deletes) + len(adds) + 1
            if lines >= LINES_A_REQUEST:
                self._update(" ;\n".join(batch))
                batch, lines = [], 0
        if batch:
            self._update(" ;\n".join(batch))

    def pull(self, replica: str, after: int) -> list[tuple[int, bytes]]:
        """The patches of ``replica``'s journal after number ``after``, in order, as (number, bytes).
        Raises Damaged for a patch whose bytes do not match the digest it was pushed with."""
        out: list[tuple[int, bytes]] = []
        query = queries.load("hub-patches")
        while True:
            start = out[-1][0] if out else after
            rows = self._select(query, {"replica": ox.Literal(replica), "after": ox.Literal(start)})
            for row in rows:
                number, data = int(row["number"].value), self._text(row).encode("utf-8")
                if hashlib.sha256(data).hexdigest() != row["digest"].value:
                    self._mark_altered(replica, number)
                    raise Damaged(
                        f"the hub at {self.url} holds patch {number} of replica {replica} altered",
                        hint=f"the hub's journal graph was changed outside kgrdf; replica {replica} pushes the patch "
                        "again at its next kg sync, and the others' patches are folded meanwhile",
                    )
                out.append((number, data))
            if len(rows) < PAGE:
                return out

    def _text(self, row: dict) -> str:
        """A patch's text: the head hub-patches.rq gave, and the rest in pieces when it is longer."""
        text, length = [row["head"].value], int(row["length"].value)
        query = queries.load("hub-patch-piece")
        for start in range(PIECE + 1, length + 1, PIECE):
            (piece,) = self._select(query, {"patch": row["patch"], "start": ox.Literal(start)})
            text.append(piece["piece"].value)
        return "".join(text)

    def _mark_altered(self, replica: str, number: int) -> None:
        """Say on the hub that this patch is altered, for the replica that made it to push it again
        (altered); a hub that takes no write keeps it unsaid."""
        node = term(patch_node(replica, number))
        try:
            self._update(f"INSERT DATA {{ GRAPH {term(JOURNALS)} {{ {node} {term(_ALTERED)} true }} }}")
        except KgError:
            pass

    def altered(self, replica: str) -> list[int]:
        """The numbers of ``replica``'s patches another replica found altered on the hub."""
        rows = self._select(queries.load("hub-altered"), {"replica": ox.Literal(replica)})
        return sorted(int(row["number"].value) for row in rows)

    def restore(self, replica: str, patches: list[tuple[int, bytes, str]]) -> None:
        """Put back each patch's record as it was pushed ((number, bytes, time) each, read from the
        replica's own journal); its rows in the hub's dataset were applied when it was first pushed."""
        for number, data, time in patches:
            node = term(patch_node(replica, number))
            self._update(
                f"DELETE WHERE {{ GRAPH {term(JOURNALS)} {{ {node} ?p ?o }} }} ;\n"
                + _record(replica, number, data, time)
            )


def _record(replica: str, number: int, data: bytes, time: str) -> str:
    """The Update that records one patch on the hub: its replica, number, time, digest and text."""
    node = term(patch_node(replica, number))
    return (
        f"INSERT DATA {{ GRAPH {term(JOURNALS)} {{ {node} {term(_REPLICA)} {term(ox.Literal(replica))} ; "
        f"{term(_NUMBER)} {number} ; {term(_TIME)} {term(ox.Literal(time))} ; "
        f"{term(_DIGEST)} {term(ox.Literal(hashlib.sha256(data).hexdigest()))} ; "
        f"{term(_TEXT)} {term(ox.Literal(data.decode('utf-8')))} }} }}"
    )
