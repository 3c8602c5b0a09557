"""Every named query runs unchanged on a real Oxigraph server, its parameters bound portably, and
gives the rows it gives on the embedded store: the query cases of test_queries.py, on the server."""

import re

import pyoxigraph as ox
import pytest

from kgrdf import queries
from kgrdf.journal import Position
from kgrdf.store.sparql import SparqlBackend, bind

from .test_queries import _comparable, _oxigraph, _scoped, cases, dataset  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def remote(dataset, sparql_server):  # noqa: F811 (the fixture imported above)
    """The example organization's quads on the session's server (loaded once for this module)."""
    store, _ = dataset
    if not sparql_server.running():
        sparql_server.start()
    backend = SparqlBackend(sparql_server.url)
    backend.replace_all((str(q) for q in store), Position(seq=1, digest="test"))
    yield backend
    backend.close()


def _remote(backend: SparqlBackend, query, bindings):
    bindings = _scoped(query, bindings)
    body = "\n".join(line for line in query.text.splitlines() if not line.startswith(("#", "PREFIX")))
    form = re.match(r"\s*(\w+)", body).group(1).upper()
    if form == "CONSTRUCT":
        answer = backend.http.post(
            backend.query_url, data={"query": bind(query.text, bindings)}, headers={"Accept": "application/n-triples"}
        )
        answer.raise_for_status()
        triples = ox.parse(answer.content, format=ox.RdfFormat.N_TRIPLES)
        return {tuple("_:" if isinstance(t, ox.BlankNode) else t.value for t in q.triple) for q in triples}
    if form == "ASK":
        return backend.ask(query, bindings)
    return [{k: queries.value(v) for k, v in row.items()} for row in backend.select(query, bindings)]


@pytest.mark.parametrize("name", queries.names())
def test_query_gives_its_expected_rows_on_the_server(dataset, remote, name):  # noqa: F811
    store, _ = dataset
    bindings, expect = cases(store)[name]
    rows = _remote(remote, queries.load(name), bindings)
    assert expect(rows), f"{name}.rq gave {rows!r:.2000}"


@pytest.mark.parametrize("name", queries.names())
def test_the_server_and_the_embedded_store_agree(dataset, remote, name):  # noqa: F811
    store, _ = dataset
    bindings, _ = cases(store)[name]
    query = queries.load(name)
    assert _comparable(_remote(remote, query, bindings)) == _comparable(_oxigraph(store, query, bindings))


def test_the_server_holds_the_position_the_load_recorded(remote):
    assert remote.position() == (1, "test")
