"""The index on a SPARQL 1.1 server, over HTTP: the Query protocol for reads, the Update protocol for
writes (Oxigraph server first; the same requests serve any server that speaks the protocols).

Portable by construction: no engine extension is used. A named query's parameters are bound as
the embedded index binds them, by putting each value, written as a SPARQL term, where its variable
stands (kgrdf.queries.bind), so that the server's planner sees the constants.

The index's own bookkeeping (the journal position it reflects, the schema's digest) is kept in a
named graph of its own, ``urn:kgrdf:index``: a server's default graph is not portable (Virtuoso's
and GraphDB's are the union of all graphs, Oxigraph's is a graph apart), and no named query matches
its triples. The knowledge base's graphs are those under ``https://kgrdf.org/``: the index reads,
lists and replaces only those and its bookkeeping graph, never what else a server holds (Virtuoso
keeps its own graphs beside them). A journal transaction and the position it moves the index to go in one Update request, which
a server applies atomically: applying it twice leaves the same quads and the same position. A
transaction too large for one request (an import) is sent in pieces with the position last, so a
cut between pieces leaves the index behind the journal, and the next command applies it again.

A server that does not answer raises :class:`kgrdf.errors.Unreachable` (exit 3).
"""

from collections.abc import Iterable, Iterator

import pyoxigraph as ox

from kgrdf import nquads, sandbox, vocab
from kgrdf.errors import BadInput, Damaged, Refused, Unreachable
from kgrdf.journal import Position, Transaction
from kgrdf.queries import Query, bind, term
from kgrdf.store.base import Backend, user_dataset

LINES_A_REQUEST = 5_000  # quads in one Update request of an import or a rebuild (about 1 MB of text)
CONNECT_TIMEOUT = 3.0  # seconds: a server that does not accept a connection by then is down
READ_TIMEOUT = 300.0  # seconds a named query or an update may take (a rebuild's piece, an import's)
# seconds the server may take to say where its index stands (a few quads): a server that takes longer
# does not answer, and a read or a write does not hold the lock that long waiting on it
CHECK_TIMEOUT = 15.0
# A proxy's answers when the server behind it is down or late: the server does not answer
_PROXY_DOWN = {502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
_RESULTS = "application/sparql-results+json"
OURS = "https://kgrdf.org/"  # every graph of a knowledge base (its facts, entities and schema) is under it
_KG_TAG = vocab.kg("movedHere")  # (SparqlBackend.tag)
BOOKKEEPING = ox.NamedNode("urn:kgrdf:index")  # the graph of the position and the schema's digest
_KG_SEQ = vocab.kg("journalSeq")
_KG_DIGEST = vocab.kg("journalDigest")
_KG_SCHEMA = vocab.kg("schemaDigest")


def endpoints(url: str, what: str = "an index URL") -> tuple[str, str]:
    """The query and update endpoints of the server at ``url``: a URL ending in ``/query`` updates at
    ``/update`` beside it (Oxigraph server, Fuseki); one ending in ``/sparql`` takes both (Virtuoso,
    Blazegraph); a bare server address is an Oxigraph server's (``/query`` and ``/update``); any
    other is taken as one endpoint for both. Raises BadInput for a URL that is not http(s)."""
    from urllib.parse import urlsplit

    refused = BadInput(
        f"{what} {url!r} must be an http:// or https:// address (a host, a port from 1 to 65535) with no "
        "query or fragment",
        hint="for an Oxigraph server: http://HOST:PORT (or its /query endpoint)",
    )
    try:
        parts = urlsplit(url)
        port = parts.port  # (a port that is no number, or past 65535, raises ValueError here)
    except ValueError:
        raise refused from None
    host = parts.hostname or ""
    if (
        parts.scheme not in ("http", "https")
        or not host
        or port == 0
        or any(c.isspace() or c in '<>"{}|\\^`' for c in url)
        or parts.query
        or parts.fragment
    ):
        raise refused
    if parts.username is not None or parts.password is not None:
        raise BadInput(
            f"{what} must not carry a user or password: it is kept in format.json, which git keeps",
            hint="let a proxy on this machine hold the credentials and give kgrdf its address",
        )
    base = url.rstrip("/")
    if parts.path in ("", "/"):
        return base + "/query", base + "/update"
    if base.endswith("/query"):
        return base, base.removesuffix("/query") + "/update"
    return base, base


class SparqlBackend(Backend):
    """The index on the SPARQL server at ``url`` (see :func:`endpoints`)."""

    name = "sparql"
    persistent = True
    local = False
    dataset_scoping = True

    def __init__(self, url: str, timeout: float = READ_TIMEOUT, role: str = "index"):
        import httpx2

        self.url = url
        self.role = role  # what the server is to the knowledge base, as errors name it: its index, or a hub
        self.query_url, self.update_url = endpoints(url, what="an index URL" if role == "index" else f"a {role}'s URL")
        self.timeout = timeout
        self.http = httpx2.Client(timeout=httpx2.Timeout(timeout, connect=CONNECT_TIMEOUT))

    # --- the protocol ----------------------------------------------------------------------------

    def _post(
        self, endpoint: str, form: dict, accept: str | None = None, timeout: float | None = None, check: bool = False
    ):
        """One request; a server that does not answer raises Unreachable (a proxy's 502, 503 or 504
        before it too), one that answers with an error or a redirect raises Damaged with its status
        and the first line it gave. ``timeout`` is a user's query's time limit (past it: Refused),
        or with ``check`` how long the server may take at all (past it: Unreachable)."""
        import httpx2

        headers = {"Accept": accept} if accept else {}
        try:
            limit = {} if timeout is None else {"timeout": timeout}
            response = self.http.post(endpoint, data=form, headers=headers, **limit)
        except httpx2.TimeoutException as exc:
            if timeout is not None and not check:
                raise Refused(f"the query ran past its time limit of {timeout:g} s") from None
            raise Unreachable(
                f"the {self.role} server at {self.url} did not answer in time ({type(exc).__name__})",
                hint=_HINTS[self.role, "late"],
            ) from None
        except httpx2.TransportError as exc:
            raise Unreachable(
                f"the {self.role} server at {self.url} does not answer ({_reason(exc)})",
                hint=_HINTS[self.role, "down"],
            ) from None
        if response.status_code in _PROXY_DOWN:
            raise Unreachable(
                f"the {self.role} server at {self.url} does not answer (answered {response.status_code} "
                f"{_PROXY_DOWN[response.status_code]}: a proxy before it finds it down or late)",
                hint=_HINTS[self.role, "down"],
            )
        if not 200 <= response.status_code < 300:  # (a redirect too: a SPARQL endpoint answers where it is asked)
            raise _refusal(self.url, response, self.role)
        return response

    def _select_text(
        self, text: str, graphs: list | None = None, default: list | None = None, check: bool = False
    ) -> ox.QuerySolutions:
        response, answer = self._query_text(text, graphs, default, check)
        if not isinstance(answer, ox.QuerySolutions):
            raise self._no_answer(response, "a yes or no, not the rows of a SELECT")
        return answer

    def _query_text(self, text: str, graphs: list | None = None, default: list | None = None, check: bool = False):
        """(the response, its answer: rows or a boolean) of a query written out in full."""
        response = self._post(
            self.query_url,
            {"query": text, **_dataset(graphs, default)},
            accept=_RESULTS,
            **({"timeout": CHECK_TIMEOUT, "check": True} if check else {}),
        )
        return response, self._answer(response)

    def _answer(self, response):
        """A response's SPARQL JSON results, read (:func:`_results`); what is none raises Damaged."""
        try:
            return _results(response.content)
        except (SyntaxError, ValueError) as exc:
            raise self._no_answer(response, f"no SPARQL results ({' '.join(str(exc).split())[:120]})") from None

    def _no_answer(self, response, what: str) -> Damaged:
        kind = response.headers.get("content-type", "").split(";")[0].strip() or "no content type"
        return Damaged(
            f"the {self.role} server at {self.url} answered {response.status_code} ({kind}) with {what}: "
            "is its URL a SPARQL endpoint?",
            hint=_HINTS[self.role, "refused"],
        )

    def solutions(self, text: str) -> ox.QuerySolutions:
        """The answer to a SELECT written out in full (no named query, no parameters)."""
        return self._select_text(text)

    def update(self, text: str) -> None:
        """One SPARQL Update request."""
        self._post(self.update_url, {"update": text})

    # --- reads ---------------------------------------------------------------------------------

    def _scope(self, graphs: list | None) -> dict:
        return {} if graphs is None else {"graphs": graphs, "default": [vocab.NO_GRAPH]}

    def select(
        self, query: Query, bindings: dict | None = None, graphs: list | None = None, limit: int | None = None
    ) -> list[dict]:
        import itertools

        solutions = self._select_text(bind(query.text, bindings), **self._scope(graphs))
        names = [v.value for v in solutions.variables]
        return [{n: _canonical(row[n]) for n in names} for row in itertools.islice(solutions, limit)]

    def ask(self, query: Query, bindings: dict | None = None, graphs: list | None = None) -> bool:
        return _boolean(self._query_text(bind(query.text, bindings), **self._scope(graphs))[1])

    def sparql(self, text: str, graphs: list | None = None, timeout: float | None = None, memory: int | None = None):
        # The text is parsed here first, as a query: a server may take an update through its
        # query endpoint (Virtuoso does), and a read must never write. Evaluated on an empty store,
        # the parse costs about what the parse alone would.
        try:
            form_of = ox.Store().query(text)
        except SyntaxError as exc:
            raise BadInput(f"the query does not parse: {exc}") from None
        # As on the embedded store: the schema is the default graph and the data graphs are the
        # named ones; the bookkeeping graph is never among them. The server bounds its own
        # memory; ``memory`` is not ours to enforce there.
        default, named = user_dataset(text, self.graphs() if graphs is None else graphs)
        # (the query's own FROM and FROM NAMED taken out: what they may read is in the dataset sent)
        form = {"query": sandbox.without_dataset(text), **_dataset(named, default)}
        # A CONSTRUCT or DESCRIBE asks for triples alone: offered a table too, Virtuoso answers one
        # as a table of s, p and o (its blank nodes written as IRIs no parser takes).
        accept = "application/n-triples" if isinstance(form_of, ox.QueryTriples) else _RESULTS
        try:
            response = self._post(self.query_url, form, accept=accept, timeout=timeout)
        except Damaged as exc:
            if exc.details.get("status") == 400:
                raise BadInput(f"the query does not parse or the server refused it: {exc.details['said']}") from None
            raise
        kind = response.headers.get("content-type", "").split(";")[0].strip()
        if kind in (_RESULTS, "application/json"):
            answer = self._answer(response)
            if isinstance(answer, ox.QuerySolutions) and [v.value for v in answer.variables] == [_VIRTUOSO_ASK]:
                verdict = b"true" if _boolean(answer) else b"false"
                return ox.parse_query_results(
                    b'{"head":{},"boolean":' + verdict + b"}", format=ox.QueryResultsFormat.JSON
                )
            return answer
        return [
            ox.Triple(q.subject, q.predicate, _canonical(q.object))
            for q in ox.parse(response.content, format=ox.RdfFormat.from_media_type(kind) or ox.RdfFormat.N_TRIPLES)
        ]

    def graphs(self) -> list:
        rows = self._select_text(f"SELECT DISTINCT ?g WHERE {{ GRAPH ?g {{ ?s ?p ?o }} {_OURS_ONLY} }}")
        return [row["g"] for row in rows]

    def quads(self) -> Iterator:
        rows = self._select_text(f"SELECT ?s ?p ?o ?g WHERE {{ GRAPH ?g {{ ?s ?p ?o }} {_OURS_ONLY} }}")
        for row in rows:
            yield ox.Quad(row["s"], row["p"], _canonical(row["o"]), row["g"])

    def quads_in(self, graph, subject=None) -> Iterator:
        if subject is not None:
            rows = self._select_text(f"SELECT ?p ?o WHERE {{ GRAPH {term(graph)} {{ {term(subject)} ?p ?o }} }}")
            return iter([ox.Quad(subject, row["p"], _canonical(row["o"]), graph) for row in rows])
        rows = self._select_text(f"SELECT ?s ?p ?o WHERE {{ GRAPH {term(graph)} {{ ?s ?p ?o }} }}")
        return iter([ox.Quad(row["s"], row["p"], _canonical(row["o"]), graph) for row in rows])

    def _bookkeeping(self) -> dict:
        node, graph = term(vocab.INDEX_NODE), term(BOOKKEEPING)
        rows = list(
            self._select_text(
                f"SELECT ?seq ?digest ?schema WHERE {{ OPTIONAL {{ GRAPH {graph} {{ {node} {term(_KG_SEQ)} ?seq }} }} "
                f"OPTIONAL {{ GRAPH {graph} {{ {node} {term(_KG_DIGEST)} ?digest }} }} "
                f"OPTIONAL {{ GRAPH {graph} {{ {node} {term(_KG_SCHEMA)} ?schema }} }} }}",
                check=True,
            )
        )
        row = rows[0] if rows else {}
        return {k: (row[k].value if rows and row[k] is not None else None) for k in ("seq", "digest", "schema")}

    def position(self) -> tuple[int, str] | None:
        held = self._bookkeeping()
        if held["seq"] is None:
            return None
        if not held["seq"].isdigit():
            raise Damaged(
                f"the {self.role} server at {self.url} holds a position that is no number ({held['seq'][:40]!r})",
                hint=_HINTS[self.role, "refused"],
            )
        return int(held["seq"]), held["digest"] or ""

    def schema_quads(self) -> list:
        return list(self.quads_in(ox.NamedNode(vocab.SCHEMA_GRAPH)))

    def schema_digest(self) -> str | None:
        return self._bookkeeping()["schema"]

    # --- writes --------------------------------------------------------------------------------

    @staticmethod
    def _position_update(after: Position) -> str:
        node, seq, digest, graph = term(vocab.INDEX_NODE), term(_KG_SEQ), term(_KG_DIGEST), term(BOOKKEEPING)
        return (
            f"DELETE WHERE {{ GRAPH {graph} {{ {node} {seq} ?s }} }} ;\n"
            f"DELETE WHERE {{ GRAPH {graph} {{ {node} {digest} ?d }} }} ;\n"
            f"INSERT DATA {{ GRAPH {graph} {{ {node} {seq} {after.seq} . {node} {digest} "
            f"{term(ox.Literal(after.digest))} }} }}"
        )

    def apply(self, tx: Transaction, after: Position) -> None:
        if len(tx.adds) + len(tx.deletes) <= LINES_A_REQUEST:
            parts = [data_block("DELETE DATA", tx.deletes), data_block("INSERT DATA", tx.adds)]
            self.update(" ;\n".join([p for p in parts if p] + [self._position_update(after)]))
            return
        for keyword, lines in (("DELETE DATA", tx.deletes), ("INSERT DATA", tx.adds)):
            for part in nquads.batches(lines, LINES_A_REQUEST):
                self.update(data_block(keyword, part))
        self.update(self._position_update(after))

    def set_position(self, position: Position) -> None:
        self.update(self._position_update(position))

    def replace_all(self, nquads: Iterable[str], position: Position) -> None:
        import itertools

        # Everything of the knowledge base's goes first, the position with it: a rebuild cut short
        # leaves an index with no position, which the next command rebuilds.
        self.drop_all()
        # A blank node is one node within one request only: the lines that hold one (the schema's
        # lists, a few hundred) go together in the last request.
        rest, blank = iter(nquads), []
        for lines in iter(lambda: list(itertools.islice(rest, LINES_A_REQUEST)), []):
            named = [line for line in lines if "_:" not in line]
            blank += [line for line in lines if "_:" in line]
            if named:
                self.update(data_block("INSERT DATA", named))
        if blank:
            self.update(data_block("INSERT DATA", blank))
        self.update(self._position_update(position))

    def tag(self, word: str) -> None:
        """Leave ``word`` in the bookkeeping graph: kg index move asks the server it moves off whether
        it holds the word, to tell it from the server it moved to when they are one (two addresses)."""
        node, graph, tagged = term(vocab.INDEX_NODE), term(BOOKKEEPING), term(_KG_TAG)
        self.update(
            f"DELETE WHERE {{ GRAPH {graph} {{ {node} {tagged} ?w }} }} ;\n"
            f"INSERT DATA {{ GRAPH {graph} {{ {node} {tagged} {term(ox.Literal(word))} }} }}"
        )

    def tagged(self, word: str) -> bool:
        node, graph, tagged = term(vocab.INDEX_NODE), term(BOOKKEEPING), term(_KG_TAG)
        found = self._select_text(f"SELECT ?w WHERE {{ GRAPH {graph} {{ {node} {tagged} ?w }} }}")
        return any(row["w"].value == word for row in found)

    def drop_all(self) -> None:
        """Remove every graph of kgrdf's the server holds, the position first (the server's other
        graphs stay)."""
        self.update(
            f"DROP SILENT GRAPH {term(BOOKKEEPING)} ;\n"
            f"DELETE {{ GRAPH ?g {{ ?s ?p ?o }} }} WHERE {{ GRAPH ?g {{ ?s ?p ?o }} {_OURS_ONLY} }}"
        )

    def close(self) -> None:
        self.http.close()


_OURS_ONLY = f'FILTER (STRSTARTS(STR(?g), "{OURS}"))'
_VIRTUOSO_ASK = "__ASK_RETVAL"  # Virtuoso answers an ASK in JSON as a row of this variable


def _results(content: bytes):
    """SPARQL JSON results as pyoxigraph reads them, in the terms the embedded store gives. Virtuoso
    names blank nodes ``nodeID://b1``, which is no blank node label: the prefix is dropped from a
    blank node's value (a label stays one within the answer), and from nothing else (a literal that
    holds the same text keeps it). It gives a boolean as 1 or 0: read as true or false (_canonical)."""
    if b"nodeID://" in content or _BOOLEAN_TYPE in content:
        import json

        document = json.loads(content)
        results = document.get("results") if isinstance(document, dict) else None
        rows = results.get("bindings") if isinstance(results, dict) else None
        for row in rows if isinstance(rows, list) else []:
            for value in row.values() if isinstance(row, dict) else []:
                if not isinstance(value, dict):
                    continue
                if value.get("type") == "bnode" and str(value.get("value")).startswith("nodeID://"):
                    value["value"] = value["value"][len("nodeID://") :]
                elif value.get("datatype") == vocab.XSD_BOOLEAN.value and value.get("value") in _BOOLEAN_WORDS:
                    value["value"] = _BOOLEAN_WORDS[value["value"]]
        content = json.dumps(document).encode("utf-8")
    return ox.parse_query_results(content, format=ox.QueryResultsFormat.JSON)


_BOOLEAN_WORDS = {"1": "true", "0": "false"}
_BOOLEAN_TYPE = vocab.XSD_BOOLEAN.value.encode()


def _canonical(term):
    """A term as the journal writes it: Virtuoso gives back a stored ``"true"^^xsd:boolean`` as
    ``"1"^^xsd:boolean``, the same value in another lexical form."""
    if isinstance(term, ox.Literal) and term.value in _BOOLEAN_WORDS and term.datatype == vocab.XSD_BOOLEAN:
        return ox.Literal(_BOOLEAN_WORDS[term.value], datatype=vocab.XSD_BOOLEAN)
    return term


def _boolean(answer) -> bool:
    """An ASK's answer: a boolean, or Virtuoso's one row of 1 or 0."""
    if isinstance(answer, ox.QuerySolutions):
        rows = list(answer)
        return bool(rows) and rows[0][0] is not None and rows[0][0].value in ("1", "true")
    return bool(answer)


def _dataset(graphs: list | None, default: list | None) -> dict:
    """The protocol's dataset parameters: the query sees these graphs and no other."""
    if graphs is None and default is None:
        return {}
    return {
        "default-graph-uri": [g.value for g in default or []],
        "named-graph-uri": [g.value for g in graphs or []],
    }


def data_block(keyword: str, lines: list[str]) -> str:
    """``INSERT DATA { ... }`` (or DELETE DATA) of N-Quads lines, each quad's graph kept, or "" for none."""
    if not lines:
        return ""
    quads = ox.parse(input="".join(f"{line} .\n" for line in lines).encode("utf-8"), format=ox.RdfFormat.N_QUADS)
    by_graph: dict[str, list[str]] = {}
    blank = False
    for quad in quads:
        blank = blank or any(isinstance(t, ox.BlankNode) for t in (quad.subject, quad.object))
        # The rebuild's one quad in the default graph is the schema's digest: bookkeeping.
        graph = str(BOOKKEEPING) if isinstance(quad.graph_name, ox.DefaultGraph) else str(quad.graph_name)
        by_graph.setdefault(graph, []).append(f"{quad.subject} {quad.predicate} {quad.object} .")
    body = "\n".join(f"GRAPH {graph} {{ {' '.join(triples)} }}" for graph, triples in by_graph.items())
    if blank and keyword == "INSERT DATA":
        # The same insert as a template: Virtuoso refuses a blank node in INSERT DATA, which SPARQL
        # allows; every engine takes it in a template, a new node per request either way.
        return f"INSERT {{\n{body}\n}} WHERE {{}}"
    return f"{keyword} {{\n{body}\n}}"


def _reason(exc) -> str:
    text = str(exc).strip() or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused"
    return text.splitlines()[0][:200]


_HINTS = {  # what to do, by what the server is to the knowledge base and how it failed
    ("index", "late"): "check that the server runs (kg status shows how far the index is behind the journal)",
    ("index", "down"): "start the server; the index catches up with the journal when it is back (kg status)",
    ("index", "refused"): "check the server's log, and that the URL is a SPARQL endpoint that takes updates",
    ("hub", "late"): "check that the hub runs; what was pulled before is kept, and the next kg sync goes on",
    ("hub", "down"): "start the hub, or check its URL (kg remote list); the next kg sync pushes and pulls what is left",
    (
        "hub",
        "refused",
    ): "check the hub's log, and that its URL is a SPARQL endpoint that takes updates (kg remote list)",
}


def _refusal(url: str, response, role: str = "index") -> Damaged:
    said = response.text.strip().splitlines()[0][:300] if response.text.strip() else response.reason_phrase
    return Damaged(
        f"the {role} server at {url} answered {response.status_code}: {said}",
        hint=_HINTS[role, "refused"],
        status=response.status_code,
        said=said,
    )
