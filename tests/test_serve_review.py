"""kg serve as a hostile client meets it: arguments of the wrong kind, bodies too large to hold,
methods and paths it does not serve. Each is refused in one line, with its status, and writes
nothing."""

import json

import pytest

from .conftest import Kg
from .serving import Server, settled


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A knowledge base with one entity, a token that writes and one that reads, and kg serve on it."""
    kg = Kg(tmp_path_factory.mktemp("review") / "kb")
    kg("init")
    kg("add-entity", "repo/api", "--name", "Api")
    kg("add-entity", "actor/bot", "--name", "Helper Bot")
    secrets = {
        "writer": kg.json("tokens", "add", "writer", "--perspective", "main", "--audience", "channel:sales", "--write")[
            "secret"
        ],
        "reader": kg.json("tokens", "add", "reader", "--perspective", "main", "--audience", "public")["secret"],
    }
    server = Server(kg.path)
    yield {"kg": kg, "server": server, "secrets": secrets}
    server.stop()


def _snapshot(served) -> dict:
    settled(served["kg"].path)
    return served["kg"].snapshot()


GOOD = {"subject": "repo/api", "predicate": "caveat", "value": "mkvalue", "sources": ["slack:p1"]}


@pytest.mark.parametrize(
    "route, body, says",
    [
        ("propose", {**GOOD, "subject": ["repo/api"]}, "subject must be text, not a list"),
        ("propose", {**GOOD, "sources": "slack:p1"}, "sources must be a list, not text"),
        ("propose", {**GOOD, "sources": ["slack:p1", 7]}, "each of sources must be text, not a number (7)"),
        ("propose", {**GOOD, "prevents_rework": "no"}, "prevents_rework must be true or false, not text"),
        ("propose", {**GOOD, "extracted": True, "confidence": "high"}, "confidence must be a number, not text"),
        ("propose", {**GOOD, "order": True}, "order must be a whole number, not true or false (true)"),
        ("org_add", {"name": "Mkacme", "aliases": "mkacme.example"}, "aliases must be a list, not text"),
        ("org_add", {"name": {"x": 1}}, "name must be text, not an object"),
        ("confirm", {"fact": "f-3k9x2a", "quote": 12345678, "transcript": "/x"}, "quote must be text"),
        ("confirm", {"fact": "f-3k9x2a", "quote": "the users words", "transcript": ["/x"]}, "transcript must be"),
    ],
)
def test_a_write_argument_of_the_wrong_kind_is_refused_in_one_line_and_writes_nothing(served, route, body, says):
    """The API takes a tool's arguments as JSON: one of another kind than the tool declares is a 400
    naming it (never a 500, never a string read as a list of its letters or "no" read as true)."""
    before = _snapshot(served)
    status, doc = served["server"].post(route, served["secrets"]["writer"], body)
    assert status == 400 and doc["error"] == "bad_input", doc
    assert says in doc["message"] and "\n" not in doc["message"]
    assert _snapshot(served) == before


def _send_large(served, path: str, kind: str, size: int, chunked: bool) -> tuple[int, str]:
    """(status, body) of a request whose body is ``size`` bytes, sent as a client that reads the
    answer as soon as one comes does (the server may answer, and close, before the body ends)."""
    import select
    import socket

    head = [
        f"POST {path} HTTP/1.1",
        f"Host: 127.0.0.1:{served['server'].port}",
        "Authorization: Bearer " + served["secrets"]["writer"],
        f"Content-Type: {kind}",
        "Accept: application/json, text/event-stream",
        "Connection: close",
        "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}",
    ]
    piece = b"x" * (1 << 20)
    if "form" in kind:
        piece = b"query=" + piece[6:]
    with socket.create_connection(("127.0.0.1", served["server"].port), timeout=60) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sent = 0
        try:
            while sent < size and not select.select([sock], [], [], 0)[0]:
                chunk = piece[: size - sent]
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                sent += len(chunk)
                piece = b"x" * (1 << 20)
            if chunked and sent >= size:
                sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # it answered and closed: the answer is read below
        answer = b""
        while True:
            try:
                data = sock.recv(1 << 16)
            except ConnectionResetError:
                break
            if not data:
                break
            answer += data
    status = int(answer.split(b" ", 2)[1])
    body = answer.split(b"\r\n\r\n", 1)[1].decode(errors="replace")
    if chunked and "\r\n" in body and body.split("\r\n", 1)[0].strip().isalnum():
        body = body.split("\r\n", 1)[1].rsplit("\r\n0\r\n", 1)[0]  # the answer's own chunk
    return status, body


@pytest.mark.parametrize(
    "path, kind",
    [
        ("/sparql", "application/sparql-query"),
        ("/sparql", "application/x-www-form-urlencoded"),
        ("/api/propose", "application/json"),
        ("/mcp", "application/json"),
    ],
)
@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_past_the_bound_is_refused_and_writes_nothing(served, path, kind, chunked):
    """The server reads no body past 4 MiB (the MCP transport's own bound, said in JSON on every route), whether its length is said or not: a client cannot make
    it hold what it sends (a query is at most 1 MiB, a text field 64k characters). A length said past
    the bound is refused before a byte of the body is read."""
    before = _snapshot(served)
    status, text = _send_large(served, path, kind, 4 * 1024 * 1024 + 1, chunked)
    assert status == 413, text
    assert "larger than kg serve takes (4,194,304 bytes)" in json.loads(text)["message"], text  # /mcp too
    assert _snapshot(served) == before


@pytest.mark.parametrize("chunked", [False, True])
def test_a_form_field_past_what_a_query_may_be_is_a_json_refusal(served, chunked):
    """A form within the bound whose query passes what a query may be (1 MiB) is a 400 in one line
    of JSON, as every refusal, not a form reader's line of plain text."""
    status, text = _send_large(served, "/sparql", "application/x-www-form-urlencoded", 2 * 1024 * 1024, chunked)
    assert status == 400 and "runs queries of at most 1,048,576 bytes" in json.loads(text)["message"], text


@pytest.mark.parametrize(
    "method, path, status",
    [
        ("PUT", "/sparql", 405),
        ("DELETE", "/sparql", 405),
        ("OPTIONS", "/sparql", 405),
        ("PATCH", "/api/propose", 405),
        ("DELETE", "/api/lookup", 405),
        ("PUT", "/mcp", 405),
        ("PATCH", "/mcp", 405),
        ("GET", "/", 404),
        ("GET", "/sparql/../tokens.json", 404),
        ("GET", "/api/lookup/../../tokens.json", 404),
        ("GET", "/mcp/../tokens.json", 404),
        ("POST", "/mcpx", 404),
    ],
)
def test_a_method_or_path_not_served_is_said_in_json_with_its_status(served, method, path, status):
    """A method a route does not take is 405 with the methods it takes (never 404, as though the
    route were not there); a path that is not served is 404; both as one line of JSON, like every
    other refusal, and neither reads a file."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", served["server"].port, timeout=30)
    try:
        connection.request(method, path, headers={"Authorization": "Bearer " + served["secrets"]["reader"]})
        answer = connection.getresponse()
        body = answer.read().decode()
    finally:
        connection.close()
    assert answer.status == status, body
    doc = json.loads(body)
    assert doc["message"].count("\n") == 0 and "tokens" not in body.replace(path, "")
    if status == 405:  # the methods this path takes, not all its route's pattern takes (/api/{route})
        takes = {"/api/propose": {"POST"}, "/api/lookup": {"GET"}}.get(path, {"GET", "POST"})
        allowed = {m.strip() for m in answer.headers["Allow"].split(",")}
        assert takes <= allowed and not ({"GET", "POST"} - takes) & allowed, allowed


@pytest.mark.parametrize(
    "method, route, allowed",
    [
        ("GET", "propose", "POST"),
        ("GET", "org_add", "POST"),
        ("POST", "lookup", "GET"),
        ("POST", "search", "GET"),
        ("PUT", "propose", "POST"),
        ("DELETE", "lookup", "GET"),
    ],
)
def test_a_read_route_asked_to_write_or_a_write_route_asked_to_read_is_405_with_what_it_takes(
    served, method, route, allowed
):
    before = _snapshot(served)
    data = json.dumps({"entity": "repo/api"}).encode() if method == "POST" else None
    status, text = served["server"].request(
        f"/api/{route}", served["secrets"]["writer"], data, "application/json", method=method
    )
    assert status == 405, text
    assert json.loads(text)["message"] == f"/api/{route} does not take {method}; it takes {allowed}"
    assert _snapshot(served) == before


def _cursor(held) -> str:
    import base64

    return base64.urlsafe_b64encode(held.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        _cursor('{"at": Infinity, "of": "x"}'),
        _cursor('{"at": 1e400, "of": "x"}'),
        _cursor('{"at": 2.5, "of": "x"}'),
        _cursor('{"at": true, "of": "x"}'),
        _cursor("[" * 3_000 + "]" * 3_000),
        _cursor('["at", "of"]'),
    ],
    ids=["infinity", "huge", "fraction", "boolean", "deep", "list"],
)
def test_a_forged_cursor_is_refused_in_one_line_as_one_never_given_out(served, cursor):
    status, text = served["server"].request(f"/api/search?text=a&cursor={cursor}", served["secrets"]["reader"])
    assert status == 400 and json.loads(text)["message"] == "the cursor is not one this server gave out", text


@pytest.mark.parametrize("deep", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_a_body_nested_past_what_json_reads_is_bad_input_not_a_bug(served, deep):
    before = _snapshot(served)
    status, text = served["server"].request(
        "/api/propose", served["secrets"]["writer"], deep.encode(), "application/json"
    )
    assert status == 400 and json.loads(text)["message"] == "the body is not JSON", text
    assert _snapshot(served) == before


def test_a_reads_text_is_bounded_as_the_cli_bounds_it(served):
    for route, name in (("search", "text"), ("lookup", "entity"), ("identify", "name"), ("neighbors", "entity")):
        status, text = served["server"].request(f"/api/{route}?{name}={'a' * 70_000}", served["secrets"]["reader"])
        assert status == 400, (route, text[:200])
        assert "is 70000 characters long; the most is 65536" in json.loads(text)["message"] and len(text) < 1000


def test_a_query_string_or_form_that_is_not_utf8_is_refused_not_read_as_another(served):
    """A byte that is not UTF-8 in a query string or a form was read as U+FFFD: another query or
    search ran than the one sent. A number takes ASCII digits alone (int() takes 1_0 and ５)."""
    secret = served["secrets"]["reader"]
    for path, data, kind in [
        ("/sparql?query=SELECT%20(%22%FF%22%20AS%20%3Fx)%20%7B%7D", None, None),
        ("/sparql", b"query=SELECT%20(%22%FF%22%20AS%20%3Fx)%20%7B%7D", "application/x-www-form-urlencoded"),
        ("/api/search?text=%FFapi", None, None),
        ("/api/search?te%FFxt=api", None, None),
    ]:
        status, text = served["server"].request(path, secret, data, kind)
        assert status == 400 and json.loads(text)["message"].endswith("is not UTF-8 text"), (path, text)
    for limit in ("1_0", "%EF%BC%95", "+5", "5.0"):
        status, text = served["server"].request(f"/api/search?text=api&limit={limit}", secret)
        assert status == 400 and "limit must be a whole number" in json.loads(text)["message"], (limit, text)
    status, text = served["server"].request("/api/search?text=%C3%A9api&limit=5", secret)
    assert status == 200 and json.loads(text)["text"] == "éapi", text


def test_a_sparql_query_that_is_not_utf8_or_has_no_content_type_is_refused_saying_what_to_send(served):
    import http.client

    secret = served["secrets"]["reader"]
    status, text = served["server"].request("/sparql", secret, b"ASK { ?s ?p '\xff' }", "application/sparql-query")
    assert status == 400 and json.loads(text)["message"] == "the query is not UTF-8 text (byte 14)", text
    connection = http.client.HTTPConnection("127.0.0.1", served["server"].port, timeout=30)
    try:  # (urllib would send a form's Content-Type of its own)
        connection.request("POST", "/sparql", body=b"ASK {}", headers={"Authorization": "Bearer " + secret})
        answer = connection.getresponse()
        status, text = answer.status, answer.read().decode()
    finally:
        connection.close()
    assert status == 415, text
    assert json.loads(text)["message"] == (
        "a query is not sent as a body without a Content-Type: send application/sparql-query or a form"
    )


def test_a_sparql_request_of_two_queries_is_refused_not_read_as_the_last(served):
    """The protocol's query is given once: of two, the endpoint answered the last, unsaid."""
    import urllib.parse

    secret, server = served["secrets"]["reader"], served["server"]
    ask, select = "ASK { ?s ?p ?o }", "SELECT * WHERE { ?s ?p ?o } LIMIT 1"
    form = urllib.parse.urlencode([("query", ask), ("query", select)]).encode()
    for path, body, kind in [
        ("/sparql?" + urllib.parse.urlencode([("query", ask), ("query", select)]), None, None),
        ("/sparql", form, "application/x-www-form-urlencoded"),
        ("/sparql?" + urllib.parse.urlencode({"query": ask}), select.encode(), "application/sparql-query"),
        (
            "/sparql?" + urllib.parse.urlencode({"query": ask}),
            urllib.parse.urlencode({"query": select}).encode(),
            "application/x-www-form-urlencoded",
        ),
    ]:
        status, text = server.request(path, secret, body, kind) if body else server.request(path, secret)
        assert status == 400 and json.loads(text)["message"] == "query= is given 2 times: give one query", text
    status, text = server.request("/sparql?" + urllib.parse.urlencode({"query": ask}), secret)
    assert status == 200 and "boolean" in text, text


@pytest.mark.parametrize("tool, argument", [("mentions", "text"), ("context", "message")])
def test_a_message_longer_than_a_text_field_is_refused_at_once(served, tool, argument):
    """A message is a text field (KGRDF_MAX_TEXT characters, as kg mentions - and kg context
    --message - bound it): one of megabytes is refused in one line, rather than holding a read of
    the knowledge base for as long as matching it takes (a minute for 3 MB)."""
    import time

    words = "Api " * 20_000  # 80,000 characters
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {argument: words}}}
    started = time.monotonic()
    status, text = served["server"].request(
        "/mcp", served["secrets"]["reader"], json.dumps(call).encode(), "application/json", "application/json"
    )
    result = json.loads(text)["result"]
    assert status == 200 and result["isError"], text[:300]
    assert "the message is 80000 characters long; the most is 65536" in result["content"][0]["text"]
    assert time.monotonic() - started < 10


def test_the_neighbors_tool_says_the_hops_it_takes(served):
    """An agent reads a tool's description to call it: the range of hops it states is the range the
    call takes, its top answered and one past refused."""
    import asyncio
    import re

    from kgrdf.serve import tools

    listed = {tool.name: tool for tool in asyncio.run(tools.server(None, None).list_tools())}
    stated = re.search(r"\((\d+)-(\d+)\)", listed["neighbors"].input_schema["properties"]["hops"]["description"])
    low, high = int(stated.group(1)), int(stated.group(2))
    writer = served["secrets"]["writer"]
    status, doc = served["server"].post("propose", writer, {**GOOD, "value": "hops a neighbor"})  # heard in sales
    assert status == 200, doc
    for hops, status in ((low, 200), (high, 200), (high + 1, 400), (low - 1, 400)):
        answered, text = served["server"].request(f"/api/neighbors?entity=repo/api&hops={hops}", writer)
        assert answered == status, (hops, text)
