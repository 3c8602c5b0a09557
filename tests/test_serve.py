"""kg serve and kg mcp, tried through a real server on loopback and the real MCP client: the token
decides what a caller sees, through every route, tool, resource and SPARQL trick.

Every name and value written here is a marker; a caller for an audience must never be shown the
markers of what that audience may not hear, nor anything of another perspective."""

import asyncio
import importlib.metadata
import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .conftest import Kg
from .serving import Server, settled

SALES_OK = ["mkpublicvalue", "mksalesvalue"]  # what channel:sales may hear
SALES_NEVER = ["mkengvalue", "mkdmvalue", "mkhiddenname", "mklyravalue", "mklyraname", "mkengmessage"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A knowledge base with facts heard in four audiences and a second perspective, its tokens,
    and kg serve running on it (a real process on a free loopback port)."""
    kg = Kg(tmp_path_factory.mktemp("serve") / "kb")
    kg("init")
    kg("add-entity", "repo/api", "--name", "Api")
    kg("add-entity", "repo/hidden", "--name", "mkhiddenname")
    for value, heard in [
        ("mkpublicvalue", "public"),
        ("mksalesvalue", "channel:sales"),
        ("mkengvalue", "channel:eng"),
        ("mkdmvalue", "dm:ana,bo"),
    ]:
        kg("propose", "repo/api", "caveat", "--value", value, "--source", "slack:" + value, "--audience", heard)
    kg(
        "propose",
        "repo/hidden",
        "depends_on",
        "--object",
        "repo/api",
        "--source",
        "slack:x1",
        "--audience",
        "dm:ana,bo",
    )
    told = {f["value"]: f["id"] for f in kg.json("facts", "repo/api")["facts"]}
    kg("disclose", "--message", "mkengmessage", "--audience", "channel:eng", told["mkengvalue"])
    kg("disclose", "--message", "mksalesmessage", "--audience", "channel:sales", told["mksalesvalue"])
    kg("add-entity", "repo/web", "--name", "Web")
    kg("add-entity", "actor/bot", "--name", "Helper Bot")
    kg("org", "init", "Lyra Labs", "--perspective", "lyra")
    kg("add-entity", "repo/lyra", "--name", "mklyraname", "--perspective", "lyra")
    kg("propose", "repo/lyra", "caveat", "--value", "mklyravalue", "--source", "slack:l1", "--perspective", "lyra")
    secrets = {}
    for name, perspective, heard in [
        ("owner", "main", "owner"),
        ("sales", "main", "channel:sales"),
        ("lyra", "lyra", "owner"),
    ]:
        secrets[name] = kg.json("tokens", "add", name, "--perspective", perspective, "--audience", heard)["secret"]
    for name, heard in [("writer", "channel:sales"), ("boss", "owner")]:
        made = kg.json(
            "tokens", "add", name, "--perspective", "main", "--audience", heard, "--write", "--speaker", "Helper Bot"
        )
        secrets[name] = made["secret"]
    sessions = tmp_path_factory.mktemp("sessions")  # the folder of transcripts the server may read
    server = Server(kg.path, "--transcripts", str(sessions))
    yield {"kg": kg, "url": server.url, "secrets": secrets, "server": server, "sessions": sessions}
    server.stop()


def _get(served, path: str, token: str | None = "owner", accept: str | None = None, data=None, kind=None):
    """(status, body text) of a request to the server."""
    secret = None if token is None else served["secrets"].get(token, token)
    return served["server"].request(path, secret, data=data, kind=kind, accept=accept)


def _snapshot(served) -> dict:
    """The knowledge base's state, once the server has committed what it answered."""
    settled(served["kg"].path)
    return served["kg"].snapshot()


def _sparql(served, query: str, token="owner", accept=None):
    return _get(served, "/sparql?" + urllib.parse.urlencode({"query": query}), token, accept)


# --- who is asking ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/sparql?query=ASK%7B%7D", "/api/lookup?entity=repo/api", "/mcp"])
def test_no_token_or_an_unknown_one_gets_401(served, path):
    status, body = _get(served, path, token=None)
    assert status == 401 and "bearer token is needed" in json.loads(body)["message"]
    status, body = _get(served, path, token="kgt_" + "A" * 43)
    assert status == 401 and "not known" in json.loads(body)["message"]


def test_a_revoked_token_opens_nothing_from_the_next_request_on(served):
    kg = served["kg"]
    secret = kg.json("tokens", "add", "brief", "--perspective", "main", "--audience", "public")["secret"]
    assert _get(served, "/api/identify?name=Api", token=secret)[0] == 200
    kg("tokens", "revoke", "brief")
    assert _get(served, "/api/identify?name=Api", token=secret)[0] == 401


# --- the SPARQL endpoint -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "accept, starts",
    [
        (None, '{"head"'),
        ("application/sparql-results+json", '{"head"'),
        ("application/sparql-results+xml", "<?xml"),
        ("text/csv", "value\r\n"),
        ("text/tab-separated-values", "?value\n"),
    ],
)
def test_the_endpoint_answers_select_in_each_results_format(served, accept, starts):
    status, body = _sparql(
        served, "SELECT ?value WHERE { GRAPH ?g { ?s <https://kgrdf.org/ns#caveat> ?value } }", accept=accept
    )
    assert status == 200 and body.startswith(starts)
    assert all(marker in body for marker in SALES_OK + ["mkengvalue", "mkdmvalue"])  # the owner hears all


@pytest.mark.parametrize(
    "accept, marker",
    [
        ("text/turtle", "<https://kgrdf.org/"),
        ("application/n-quads", " .\n"),
        ("application/trig", "<https://kgrdf.org/kb/main/repo/api> "),
    ],
)
def test_the_endpoint_answers_construct_as_the_graph_format_asked(served, accept, marker):
    query = "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s <https://kgrdf.org/ns#caveat> ?o . BIND(<https://kgrdf.org/ns#caveat> AS ?p) } }"
    status, body = _sparql(served, query, accept=accept)
    assert status == 200 and marker in body and "mksalesvalue" in body


def test_an_answer_in_no_format_offered_is_refused_before_the_query_runs(served):
    """The Accept header was read once the query had run: a runaway read held the index up to its
    time limit (30 s), then answered 406."""
    import time

    runaway = "SELECT * WHERE { GRAPH ?a { ?s ?p ?o } GRAPH ?b { ?t ?q ?r } GRAPH ?c { ?u ?w ?x } } ORDER BY ?o ?r ?x"
    started = time.monotonic()
    status, body = _sparql(served, runaway, accept="image/png")
    assert status == 406 and "application/sparql-results+json" in json.loads(body)["message"]
    assert time.monotonic() - started < 10
    status, body = _sparql(served, "ASK {}", accept="text/turtle")  # a graph format for a boolean: after it runs
    assert status == 406 and "results are" in json.loads(body)["message"]


def test_a_standard_client_reads_the_endpoint(served):
    from rdflib import Graph
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    store = SPARQLStore(served["url"] + "/sparql", headers={"Authorization": "Bearer " + served["secrets"]["sales"]})
    rows = Graph(store=store).query("SELECT ?v WHERE { GRAPH ?g { ?s <https://kgrdf.org/ns#caveat> ?v } }")
    assert sorted(str(row.v) for row in rows) == SALES_OK
    done = subprocess.run(
        [
            "curl",
            "-s",
            "-H",
            "Authorization: Bearer " + served["secrets"]["sales"],
            "-H",
            "Accept: text/csv",
            "--data-urlencode",
            "query=SELECT ?v WHERE { GRAPH ?g { ?s <https://kgrdf.org/ns#caveat> ?v } }",
            served["url"] + "/sparql",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert sorted(done.stdout.split()[1:]) == SALES_OK


ATTACKS = [
    "SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
    "SELECT ?o WHERE { ?s ?p ?o }",
    "SELECT ?o FROM <https://kgrdf.org/kb/main/entities> WHERE { ?s ?p ?o }",
    "SELECT ?o FROM NAMED <https://kgrdf.org/kb/lyra/entities> WHERE { GRAPH ?g { ?s ?p ?o } }",
    "SELECT ?o WHERE { GRAPH <https://kgrdf.org/kb/lyra/entities> { ?s ?p ?o } }",
    "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }",
    "DESCRIBE ?s WHERE { GRAPH ?g { ?s ?p ?o } }",
]


@pytest.mark.parametrize("query", ATTACKS)
def test_a_sales_token_never_reads_what_sales_may_not_hear_whatever_the_query(served, query):
    status, body = _sparql(served, query, token="sales")
    assert status == 200, body
    assert [m for m in SALES_NEVER if m in body] == []


@pytest.mark.parametrize("query", ATTACKS)
def test_a_lyra_token_sees_nothing_of_main(served, query):
    status, body = _sparql(served, query, token="lyra")
    assert status == 200, body
    # its own, where a query asks for named graphs (the default graph is the schema's)
    assert (
        "mklyra" in body or "FROM <https://kgrdf.org/kb/main/" in query or "GRAPH" not in query or "DESCRIBE" in query
    )
    assert [m for m in ["mkpublicvalue", "mksalesvalue", "mkengvalue", "mkdmvalue", "mkhiddenname"] if m in body] == []


def test_the_endpoint_refuses_service_and_updates_and_writes_nothing(served):
    before = _snapshot(served)
    status, body = _sparql(served, "SELECT * WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }", token="sales")
    assert status == 409 and "SERVICE" in json.loads(body)["message"]
    update = "INSERT DATA { GRAPH <https://kgrdf.org/kb/main/entities> { <urn:x> <urn:y> <urn:z> } }"
    form = urllib.parse.urlencode({"update": update}).encode()
    assert _get(served, "/sparql", data=form, kind="application/x-www-form-urlencoded")[0] == 403
    assert _get(served, "/sparql", data=update.encode(), kind="application/sparql-update")[0] == 403
    status, body = _get(served, "/sparql", data=update.encode(), kind="application/sparql-query")
    assert status == 409 and "INSERT (line 1) starts an update" in json.loads(body)["message"]  # sent as a query
    status, body = _get(served, "/sparql?" + urllib.parse.urlencode({"query": "ASK {}", "default-graph-uri": "urn:x"}))
    assert status == 400 and "token's" in json.loads(body)["message"]
    assert _snapshot(served) == before


# --- the JSON API ---------------------------------------------------------------------------------------


def test_the_api_documents_are_the_clis(served):
    kg = served["kg"]
    for route, args, cli in [
        ("lookup", {"entity": "repo/api", "limit": 500}, ["lookup", "repo/api"]),
        ("search", {"text": "api", "limit": 500}, ["search", "api"]),
        ("identify", {"name": "Api"}, ["identify", "Api"]),
        ("history", None, None),
    ]:
        if args is None:
            continue
        status, body = _get(served, f"/api/{route}?" + urllib.parse.urlencode(args))
        doc = json.loads(body)
        assert status == 200
        for key in ("next_cursor", "total"):
            doc.pop(key, None)
        assert doc == kg.json(*cli)


def test_the_api_for_sales_leaves_out_what_sales_may_not_hear(served):
    routes = [
        "/api/lookup?entity=repo/api",
        "/api/facts?subject=repo/api",
        "/api/search?text=mk",
        "/api/neighbors?entity=repo/api&hops=2",
        "/api/mentions?text=" + urllib.parse.quote("Api and mkhiddenname"),
        "/api/context?entity=repo/api",
    ]
    for route in routes:
        status, body = _get(served, route, token="sales")
        assert status == 200, (route, body)
        shown = json.dumps({k: v for k, v in json.loads(body).items() if k != "text"})  # not the words sent
        assert [m for m in SALES_NEVER if m in shown] == [], route
    status, body = _get(served, "/api/lookup?entity=repo/hidden", token="sales")
    assert status == 404 and "mkhiddenname" not in body
    assert "mksalesvalue" in _get(served, "/api/lookup?entity=repo/api", token="sales")[1]


@pytest.mark.parametrize("audience", ["owner", "channel:sales"])
def test_a_lookup_pages_its_facts_and_backlinks_together_and_reads_sources_for_the_page_alone(
    kg, monkeypatch, audience
):
    """An entity of many facts and backlinks, paged: every page holds the same places of both lists,
    the pages together are the whole lookup (sources and hearings as kg lookup shows them to that
    audience), and each page reads the sources of its own facts, not the whole entity's."""
    from kgrdf.serve.service import Caller, Service
    from kgrdf.session.reading import Reading

    kg("add-entity", "repo/hub", "--name", "Hub")
    for i in range(7):
        heard = "channel:sales" if i % 2 else "channel:eng"
        kg("propose", "repo/hub", "caveat", "--value", f"caveat {i}", "-s", f"slack:c{i}", "--audience", heard)
    for i in range(4):
        kg("add-entity", f"repo/leaf{i}", "--name", f"Leaf {i}")
        kg(
            "propose",
            f"repo/leaf{i}",
            "depends_on",
            "--object",
            "repo/hub",
            "-s",
            f"slack:d{i}",
            "--audience",
            "public",
        )
    whole = kg.json("lookup", "repo/hub", "--audience", audience)
    service, caller = Service(kg.path), Caller("t", "main", audience)
    asked = []
    rows = Reading.rows

    def counted(self, name, **bindings):
        if name == "fact-heard":
            asked.extend(bindings["fact"])
        return rows(self, name, **bindings)

    monkeypatch.setattr(Reading, "rows", counted)
    pages, cursor = [], None
    while True:
        asked.clear()
        page = service.lookup(caller, "repo/hub", limit=3, cursor=cursor)
        assert len(page["facts"]) <= 3 and len(page["backlinks"]) <= 3
        assert len(asked) == len(page["facts"]) + len(page["backlinks"])
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    facts = len(whole["facts"])
    assert facts == (7 if audience == "owner" else 3) and len(whole["backlinks"]) == 4
    assert len(pages) == -(-max(facts, 4) // 3)
    assert all(p["total"] == {"facts": facts, "backlinks": 4} for p in pages)
    for key in ("facts", "backlinks"):
        assert [f for p in pages for f in p[key]] == whole[key]


def test_the_api_pages_a_list_with_a_cursor_good_for_its_question_only(served):
    first = json.loads(_get(served, "/api/lookup?entity=repo/api&limit=2")[1])
    assert len(first["facts"]) == 2 and first["total"]["facts"] == 4 and first["next_cursor"]
    rest = json.loads(_get(served, f"/api/lookup?entity=repo/api&limit=2&cursor={first['next_cursor']}")[1])
    assert len(rest["facts"]) == 2 and rest["next_cursor"] is None
    assert {f["id"] for f in first["facts"]}.isdisjoint({f["id"] for f in rest["facts"]})
    status, body = _get(served, f"/api/search?text=api&cursor={first['next_cursor']}")
    assert status == 400 and "another question" in json.loads(body)["message"]


@pytest.mark.parametrize(
    "path, status, says",
    [
        ("/api/lookup", 400, "entity is needed"),
        ("/api/lookup?entity=repo/api&limit=0", 400, "limit must be"),
        ("/api/lookup?entity=repo/api&limit=many", 400, "whole number"),
        ("/api/lookup?entity=repo/api&perspective=lyra", 400, "unknown parameter 'perspective'"),
        ("/api/lookup?entity=repo/api&audience=owner", 400, "unknown parameter 'audience'"),
        ("/api/lookup?entity=repo/api&cursor=zz", 400, "cursor"),
        ("/api/lookup?entity=repo/hidden&entity=repo/api", 400, "'entity' is given twice"),
        ("/api/lookup?entity=nothing-here", 404, "not known"),
        ("/api/nowhere", 404, "no /api/nowhere"),
    ],
)
def test_a_bad_api_call_says_why_in_one_line(served, path, status, says):
    got, body = _get(served, path, token="sales")
    assert got == status and says in json.loads(body)["message"]


# --- MCP, over HTTP and over stdio, with the real client -------------------------------------------------


def _mcp(served, token: str | None, calls, stdio_args=None):
    """Run ``calls(client)`` with the MCP client, over HTTP with ``token``, or over kg mcp's stdio."""
    import httpx2
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        if stdio_args is not None:
            env = {k: v for k, v in os.environ.items() if k != "KGRDF_HOME"}
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "kgrdf", "mcp", "--kb", str(served["kg"].path), *stdio_args],
                env=env,
            )
            client = Client(params)
        else:
            http = httpx2.AsyncClient(headers={"Authorization": "Bearer " + served["secrets"][token]}, timeout=60)
            client = Client(streamable_http_client(served["url"] + "/mcp", http_client=http))
        async with client as session:
            return await calls(session)

    return asyncio.run(main())


TOOL_CALLS = [
    ("lookup", {"entity": "repo/api"}),
    ("search", {"text": "mk"}),
    ("identify", {"name": "Api"}),
    ("facts", {"subject": "repo/api"}),
    ("facts", {"subject": "repo/api", "known_at": "2099-01-01"}),
    ("neighbors", {"entity": "repo/api", "hops": 2}),
    ("mentions", {"text": "Api and mkhiddenname and mklyraname"}),
    ("context", {"entity": "repo/api"}),
    ("context", {"message": "what about Api?"}),
]


def _text(result) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_an_argument_a_tool_does_not_take_or_of_another_kind_is_refused_in_one_line(served, transport):
    calls_made = [
        ("facts", {"subject": "repo/api", "predicat": "caveat"}, "unknown argument 'predicat'"),
        ("facts", {"subject": "repo/api", "asof": "2000-01-01"}, "unknown argument 'asof'"),
        (
            "propose",
            {**{"subject": "repo/web", "predicate": "caveat", "value": "mkextra"}, "audience": "public"},
            "unknown argument 'audience'",
        ),
        ("lookup", {"entity": "repo/api", "limit": True}, "limit must be a whole number, not true or false"),
        ("neighbors", {"entity": "repo/api", "hops": "2"}, "hops must be a whole number, not text"),
        ("lookup", {"limit": 3}, "entity is needed"),
    ]
    before = _snapshot(served)

    async def calls(client):
        return [(await client.call_tool(name, args), says) for name, args, says in calls_made]

    stdio = ["--audience", "channel:sales", "--write"] if transport == "stdio" else None
    for result, says in _mcp(served, None if stdio else "writer", calls, stdio_args=stdio):
        text = _text(result)
        assert result.is_error and says in text and "\n" not in text and "pydantic" not in text, text
    assert _snapshot(served) == before


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_every_read_tool_and_both_resources_answer_for_sales_without_what_it_may_not_hear(served, transport):
    async def calls(client):
        names = {tool.name for tool in (await client.list_tools()).tools}
        out = {"tools": names, "server": (client.server_info.name, client.server_info.version)}
        for name, args in TOOL_CALLS:
            result = await client.call_tool(name, args)
            out[f"{name} {args}"] = (result.is_error, _text(result))
            # the structured answer is the text's document: what one shows, the other shows
            assert result.structured_content == json.loads(_text(result)), name
        lookup = json.loads(out[f"lookup {TOOL_CALLS[0][1]}"][1])
        fact = lookup["facts"][0]["id"]
        result = await client.call_tool("history", {"fact": fact})
        out["history"] = (result.is_error, _text(result))
        for facts_id in [f["id"] for f in lookup["facts"]]:
            result = await client.call_tool("disclosures", {"fact": facts_id})
            out[f"disclosures {facts_id}"] = (result.is_error, _text(result))
        for heard in ("channel:sales", "channel:eng"):
            result = await client.call_tool("told", {"audience": heard})
            out[f"told {heard}"] = (result.is_error, _text(result))
        for uri in ("kgrdf://entity/repo/api", "kgrdf://context/repo/api"):
            out[uri] = (False, (await client.read_resource(uri)).contents[0].text)
        return out

    args = ["--audience", "channel:sales"] if transport == "stdio" else None
    out = _mcp(served, "sales", calls, stdio_args=args)
    assert {name for name, _ in TOOL_CALLS} | {"history"} <= out.pop("tools")
    assert out.pop("server") == ("kgrdf", importlib.metadata.version("kgrdf"))
    for key, (failed, text) in out.items():
        assert not failed, (key, text)
        shown = json.dumps({k: v for k, v in json.loads(text).items() if k != "text"})  # not the words sent
        assert [m for m in SALES_NEVER if m in shown] == [], key
    assert (
        "mksalesvalue" in out["kgrdf://entity/repo/api"][1] and "mkpublicvalue" in out[f"lookup {TOOL_CALLS[0][1]}"][1]
    )
    assert "mksalesmessage" in out["told channel:sales"][1]  # what it may hear, it is shown


def test_a_resource_not_there_is_the_clients_error_not_the_servers(served):
    """An entity not known read as a resource answered -32603, an internal error: a client may take
    the server for broken. It is invalid params (-32602), with the CLI's reason."""
    from mcp.shared.exceptions import MCPError

    async def calls(client):
        codes = {}
        for uri in ("kgrdf://entity/repo/nope", "kgrdf://context/repo/nope"):
            try:
                await client.read_resource(uri)
            except MCPError as exc:
                codes[uri] = (exc.error.code, exc.error.message)
        return codes

    codes = _mcp(served, "sales", calls)
    assert sorted(codes) == ["kgrdf://context/repo/nope", "kgrdf://entity/repo/nope"]
    assert all(code == -32602 and "'repo/nope'" in said for code, said in codes.values()), codes


def test_a_malformed_tool_call_is_a_tool_error_with_the_reason_and_writes_nothing(served):
    before = _snapshot(served)

    async def calls(client):
        out = []
        for name, args in [
            ("lookup", {}),
            ("lookup", {"entity": "repo/api", "limit": "many"}),
            ("lookup", {"entity": "nothing-here"}),
            ("context", {"entity": "repo/api", "message": "both"}),
            ("neighbors", {"entity": "repo/api", "hops": 9}),
            ("facts", {"subject": "repo/api", "as_of": "not a date"}),
            ("lookup", {"entity": "repo/api", "cursor": "forged"}),
        ]:
            result = await client.call_tool(name, args)
            out.append((name, result.is_error, _text(result)))
        return out

    for name, failed, text in _mcp(served, "sales", calls):
        assert failed and f"Error executing tool {name}" in text and "Traceback" not in text
    assert _snapshot(served) == before


def test_mcp_pages_with_a_cursor(served):
    async def calls(client):
        first = (await client.call_tool("lookup", {"entity": "repo/api", "limit": 3})).structured_content
        rest = (
            await client.call_tool("lookup", {"entity": "repo/api", "limit": 3, "cursor": first["next_cursor"]})
        ).structured_content
        return first, rest

    first, rest = _mcp(served, "owner", calls)
    assert len(first["facts"]) == 3 and len(rest["facts"]) == 1 and rest["next_cursor"] is None


def test_a_lyra_token_over_mcp_sees_lyra_alone(served):
    async def calls(client):
        found = _text(await client.call_tool("search", {"text": "mk"}))
        missing = await client.call_tool("lookup", {"entity": "repo/api"})
        return found, missing.is_error

    found, missing = _mcp(served, "lyra", calls)
    assert "mklyraname" in found and "mkhiddenname" not in found and missing


# --- writes, for a token that may write ----------------------------------------------------------------


def _transcript(served, *prompts) -> str:
    """A session file in the folder of transcripts the server may read."""
    import uuid

    path = served["sessions"] / f"session-{uuid.uuid4().hex[:8]}.jsonl"
    lines = [{"type": "user", "message": {"role": "user", "content": p}} for p in prompts]
    lines.append({"type": "assistant", "message": {"role": "assistant", "content": "noted: the deploy channel"}})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return str(path)


def test_a_proposal_over_mcp_is_heard_in_the_tokens_audience_and_said_by_its_speaker(served):
    async def calls(client):
        result = await client.call_tool(
            "propose",
            {"subject": "repo/web", "predicate": "caveat", "value": "mkwrittenvalue", "sources": ["slack:p1"]},
        )
        return result.is_error, result.structured_content

    failed, doc = _mcp(served, "writer", calls)
    assert not failed and doc["outcome"] == "created" and doc["status"] == "proposed"
    assert doc["id"].startswith("f-") and "note" in doc  # why it stays proposed
    shown = served["kg"].json("facts", "repo/web")["facts"]
    mine = next(f for f in shown if f.get("value") == "mkwrittenvalue")
    assert mine["said_by"] == "actor/bot" and "channel:sales" in mine["audiences"]


def test_a_token_may_not_say_the_user_said_it_without_their_verified_words(served):
    kg = served["kg"]
    known = kg.json("propose", "repo/web", "caveat", "--value", "mkauthority", "-s", "slack:a1", "--audience", "public")
    before = _snapshot(served)
    said = {"subject": "repo/web", "predicate": "caveat", "sources": ["user:made-up"], "authority": "user"}

    async def calls(client):
        out = []
        for value in ("mkauthority", "mkauthoritynew"):  # heard again, and new
            result = await client.call_tool("propose", {**said, "value": value})
            out.append((result.is_error, _text(result)))
        return out

    for failed, text in _mcp(served, "writer", calls):
        assert failed and "a token does not say the user said it" in text, text
    # in another case it was an unknown authority, the refusal listing user among those to give
    for authority, says in [("USER", "a token does not say the user said it"), ("Rumour", "a token gives one of")]:
        status, doc = served["server"].post(
            "propose", served["secrets"]["writer"], {**said, "authority": authority, "value": "x"}
        )
        assert status in (400, 409) and says in doc["message"] and ", user" not in doc["message"], doc
    status, doc = served["server"].post("propose", served["secrets"]["boss"], {**said, "value": "mkauthority"})
    assert status == 409 and "propose_from_user" in doc["hint"], doc
    assert _snapshot(served) == before
    assert kg.json("history", known["id"])["fact"]["authority"] == "observed"


def test_a_token_may_not_give_the_users_words_as_a_source(served):
    """A source of kind user is the user's verified words, which the knowledge base records itself
    (propose_from_user, and the hearing an organization's promotion makes: who may see a promotion
    follows it). A token gave one as it liked, with any authority: the fact showed the user as its
    source, and "user:kg org promote CLAIM" made a promotion shown to the token's audience."""
    kg = served["kg"]
    known = kg.json(
        "propose", "repo/web", "caveat", "--value", "mkusersource", "-s", "slack:u1", "--audience", "public"
    )
    before = _snapshot(served)
    calls_made = [
        ("propose", {"subject": "repo/web", "predicate": "caveat", "value": "mkusersource", "sources": ["User :x"]}),
        (
            "propose",
            {"subject": "repo/web", "predicate": "caveat", "value": "mkusernew", "sources": ["slack:a", "user:b"]},
        ),
        ("org_set", {"org": "Acme", "key": "hq", "value": "Lisbon", "sources": ["user:kg org promote f-aaaaaa"]}),
    ]

    async def calls(client):
        return [await client.call_tool(name, args) for name, args in calls_made]

    for result in _mcp(served, "writer", calls):
        text = _text(result)
        assert result.is_error and "a token does not give the user's words as a source" in text, text
    body = {"subject": "repo/web", "predicate": "caveat", "value": "mkusernew", "sources": ["user:c"]}
    status, doc = served["server"].post("propose", served["secrets"]["boss"], body)
    assert status == 409 and "propose_from_user" in doc["hint"], doc
    assert _snapshot(served) == before
    assert [s["kind"] for s in kg.json("history", known["id"])["fact"]["sources"]] == ["slack"]


def test_a_write_answers_a_token_with_what_its_audience_may_hear_of_the_fact(served):
    """Proposing again a fact heard in a private conversation: the answer, through MCP and the API,
    shows the token's own hearing alone, never the conversation's source, audience or count."""

    async def calls(client):
        result = await client.call_tool(
            "propose", {"subject": "repo/api", "predicate": "caveat", "value": "mkdmvalue", "sources": ["slack:w1"]}
        )
        return result.is_error, result.structured_content, _text(result)

    failed, doc, text = _mcp(served, "writer", calls)
    status, api = served["server"].post(
        "propose",
        served["secrets"]["writer"],
        {"subject": "repo/api", "predicate": "caveat", "value": "mkdmvalue", "sources": ["slack:w2"]},
    )
    # the first is its audience's first hearing, told as new; the second observes the first
    assert not failed and status == 200 and (doc["outcome"], api["outcome"]) == ("created", "observed")
    for shown in (text, json.dumps(api)):
        assert "slack:mkdmvalue" not in shown and "mkdmvalue" in shown
        assert "dm:ana,bo" not in shown and "ana" not in json.loads(shown).get("audiences", [])
    assert doc["audiences"] == ["channel:sales"] and doc["observations"] == 1 and "note" not in doc
    assert api["observations"] == 2 and {s["ref"] for s in api["sources"]} == {"w1", "w2"}
    owner = served["kg"].json("history", doc["id"])  # the owner sees every hearing
    assert "dm:ana,bo" in json.dumps(owner)


def test_a_read_only_token_cannot_write_through_any_door(served):
    before = _snapshot(served)

    async def calls(client):
        out = []
        for name, args in [
            ("propose", {"subject": "repo/web", "predicate": "caveat", "value": "mknever", "sources": ["slack:x"]}),
            ("org_add", {"name": "Mknever Inc"}),
            ("org_set", {"org": "Lyra Labs", "key": "industry", "value": "mknever"}),
        ]:
            result = await client.call_tool(name, args)
            out.append((result.is_error, _text(result)))
        return out

    for failed, text in _mcp(served, "sales", calls):
        assert failed and "reads only" in text and "kg tokens add" in text
    for failed, text in _mcp(served, None, calls, stdio_args=["--audience", "public"]):  # no token to name
        assert failed and "this kg mcp reads only (its owner starts kg mcp --write for one that writes)" in text
    body = json.dumps({"subject": "repo/web", "predicate": "caveat", "value": "mknever", "sources": ["slack:x"]})
    status, answer = _get(served, "/api/propose", token="sales", data=body.encode(), kind="application/json")
    assert status == 409 and "reads only" in json.loads(answer)["message"]
    assert _snapshot(served) == before


def test_the_users_words_confirm_only_when_the_transcript_holds_them(served, tmp_path):
    transcript = _transcript(served, "deploys of web are announced in the releases channel, always")

    async def calls(client):
        said = await client.call_tool(
            "propose_from_user",
            {
                "subject": "repo/web",
                "predicate": "caveat",
                "value": "mkuservalue",
                "quote": "announced in the releases channel",
                "transcript": transcript,
            },
        )
        made_up = await client.call_tool(
            "propose_from_user",
            {
                "subject": "repo/web",
                "predicate": "caveat",
                "value": "mkinventedvalue",
                "quote": "noted: the deploy channel",  # the assistant's words, not the user's
                "transcript": transcript,
            },
        )
        return said.structured_content, made_up.structured_content

    said, made_up = _mcp(served, "writer", calls)
    assert said["status"] == "confirmed" and said["authority"] == "user"
    assert made_up["status"] == "proposed" and "not in any of the 1 user prompts" in made_up["note"]


def test_a_transcript_outside_the_served_folders_is_never_read(served, tmp_path):
    kg = served["kg"]
    fact = kg.json(
        "propose", "repo/web", "caveat", "--value", "mkoutside", "--source", "slack:o1", "--audience", "channel:sales"
    )
    secret = tmp_path / "private.jsonl"  # the machine's file, with the user's words in it
    secret.write_text(json.dumps({"role": "user", "content": "the deploy key is QX7-PLUM-42, keep it"}) + "\n")
    link = served["sessions"] / "link.jsonl"  # in the folder, pointing out of it
    link.symlink_to(secret)
    before = _snapshot(served)

    async def calls(client):
        out = []
        for path in (
            str(secret),
            str(tmp_path / "missing.jsonl"),
            str(link),
            str(served["sessions"] / ".." / secret.name),
        ):
            for quote in ("the deploy key is QX7", "the deploy key is ZZZ"):
                result = await client.call_tool("confirm", {"fact": fact["id"], "quote": quote, "transcript": path})
                out.append((result.is_error, _text(result)))
        return out

    answers = _mcp(served, "writer", calls)
    assert all(failed for failed, _ in answers), answers
    assert len({text for _, text in answers}) == 1  # alike: a right guess, a wrong one, a file or none
    assert "reads a transcript only in the folders it was given" in answers[0][1]
    assert _snapshot(served) == before
    assert kg.json("history", fact["id"])["fact"]["status"] == "proposed"


def test_confirm_and_reject_need_the_users_verified_words(served, tmp_path):
    kg = served["kg"]
    sales = ("--audience", "channel:sales")
    fact = kg.json("propose", "repo/web", "caveat", "--value", "mkconfirmme", "--source", "slack:c1", *sales)["id"]
    other = kg.json("propose", "repo/web", "caveat", "--value", "mkrejectme", "--source", "slack:c2", *sales)["id"]
    unheard = kg.json("propose", "repo/web", "caveat", "--value", "mkownersonly", "--source", "slack:c3")["id"]
    transcript = _transcript(served, "yes that caveat about web is right, confirm it")
    before = _snapshot(served)

    async def refused(client):
        out = []
        for name, args in [
            ("confirm", {"fact": fact, "quote": "I never said this at all", "transcript": transcript}),
            ("reject", {"fact": other, "quote": "noted: the deploy channel", "transcript": transcript}),
            ("confirm", {"fact": fact, "quote": "short", "transcript": transcript}),
            ("confirm", {"fact": fact, "quote": "the caveat about web is right", "transcript": "/nonexistent.jsonl"}),
            ("confirm", {"fact": fact}),
            ("confirm", {"fact": unheard, "quote": "that caveat about web is right", "transcript": transcript}),
            ("reject", {"fact": unheard, "quote": "that caveat about web is right", "transcript": transcript}),
        ]:
            result = await client.call_tool(name, args)
            out.append((result.is_error, _text(result)))
        return out

    answers = _mcp(served, "writer", refused)
    for failed, text in answers:
        assert failed and "Error executing tool" in text, text
    # a fact the token's audience may not hear is no fact to it: nothing of it shows in the refusal
    assert [f"no fact {unheard} (" in text and "mkownersonly" not in text for _, text in answers[-2:]] == [True, True]
    assert _snapshot(served) == before

    async def accepted(client):
        yes = await client.call_tool(
            "confirm", {"fact": fact, "quote": "that caveat about web is right", "transcript": transcript}
        )
        no = await client.call_tool("reject", {"fact": other, "quote": "about web is right", "transcript": transcript})
        assert not yes.is_error and not no.is_error, (_text(yes), _text(no))
        return yes.structured_content, no.structured_content

    yes, no = _mcp(served, "writer", accepted)
    assert yes["status"] == "confirmed" and no["status"] == "rejected"
    for decided, quote in ((fact, "that caveat about web is right"), (other, "about web is right")):
        history = kg.json("history", decided)  # who decided, and the words it was told
        assert history["fact"]["reviewed_by"] == "token:writer", history["fact"]
        assert history["history"][-1].get("reason") == f"the user said: {quote}", history["history"][-1]


def test_the_users_words_are_kept_only_where_every_audience_of_the_fact_heard_them(served):
    """Words said in #sales confirmed a fact heard in public too: kg history showed the public the
    confirmation's reason, the user's words quoted, to any reader of the fact."""
    kg = served["kg"]
    fact = kg.json(
        "propose", "repo/web", "caveat", "--value", "mkwidelyheard", "-s", "slack:w1", "--audience", "public"
    )
    kg("propose", "repo/web", "caveat", "--value", "mkwidelyheard", "-s", "slack:w2", "--audience", "channel:sales")
    quote = "mksecretplan moves web to the new stack, confirm it"
    transcript = _transcript(served, quote)
    status, text = _get(
        served,
        "/api/confirm",
        token="writer",
        data=json.dumps({"fact": fact["id"], "quote": quote, "transcript": transcript}).encode(),
        kind="application/json",
    )
    assert status == 200 and json.loads(text)["status"] == "confirmed", text
    for audience in ("public", "channel:sales", "owner"):
        shown = kg("history", fact["id"], "--audience", audience).stdout
        assert "mksecretplan" not in shown and "the user said so" in shown, (audience, shown)
    status, text = _get(served, f"/api/history?fact={fact['id']}", token="sales")
    assert status == 200 and "mksecretplan" not in text


def test_kg_mcp_refusals_name_its_own_way_and_a_number_is_checked_as_the_api_checks_it(served):
    """kg mcp for channel:sales, asked to record what it told the public, called itself "the token
    stdio" and advised a token, which it has none of; and MCP took a budget of 20 digits that /api
    refuses (400)."""
    public = served["kg"].json("facts", "api", "--audience", "public")["facts"][0]["id"]

    async def calls(client):
        told = await client.call_tool("record_disclosure", {"message": "m1", "audience": "public", "facts": [public]})
        huge = await client.call_tool("context", {"entity": "api", "budget": 10**20})
        return _text(told), told.is_error, _text(huge), huge.is_error

    before = _snapshot(served)
    told, told_failed, huge, huge_failed = _mcp(
        served, None, calls, stdio_args=["--audience", "channel:sales", "--write", "--speaker", "Helper Bot"]
    )
    assert told_failed and "this kg mcp records what it told channel:sales" in told
    assert "kg mcp with --audience public" in told and "token" not in told
    status, text = _get(served, f"/api/context?entity=api&budget={10**20}")
    assert status == 400 and huge_failed
    assert json.loads(text)["message"] in huge and "at most 18 digits" in huge
    assert _snapshot(served) == before


def test_a_claim_asked_of_kg_mcp_without_a_speaker_names_the_way_that_gives_it_one(served):
    """kg mcp with no --speaker answered a claim with "give --said-by", an argument no tool has (one
    not declared is refused): it names how the claim gets a speaker, and writes nothing."""

    async def calls(client):
        claim = await client.call_tool(
            "org_affiliate", {"org": "Lyra Labs", "claimed_name": "Mkzed", "role": "IT", "sources": ["doc:m"]}
        )
        proposed = await client.call_tool(
            "propose", {"subject": "Lyra Labs", "predicate": "claimed_member", "value": "Mkzed", "sources": ["doc:m"]}
        )
        return _text(claim), claim.is_error, _text(proposed), proposed.is_error

    before = _snapshot(served)
    claim, claim_failed, proposed, proposed_failed = _mcp(
        served, None, calls, stdio_args=["--audience", "owner", "--write", "--perspective", "lyra"]
    )
    assert claim_failed and proposed_failed
    for said in (claim, proposed):
        assert "this kg mcp has no speaker" in said and "kg mcp with --speaker" in said and "--said-by" not in said, (
            said
        )
    assert _snapshot(served) == before
    cli = served["kg"](
        "org", "affiliate", "Lyra Labs", "--claimed-name", "Mkzed", "-s", "doc:m", "--perspective", "lyra", expect=2
    )
    assert "give --said-by" in cli.stderr


def test_organizations_through_mcp_and_a_bad_write_writes_nothing(served):
    async def calls(client):
        added = await client.call_tool("org_add", {"name": "Mkacme Corp", "aliases": ["mkacme.example"]})
        attribute = await client.call_tool(
            "org_set", {"org": "mkacme.example", "key": "industry", "value": "rockets", "sources": ["slack:i1"]}
        )
        claim = await client.call_tool(
            "org_affiliate", {"org": "Mkacme Corp", "claimed_name": "Jim", "role": "IT", "sources": ["slack:j1"]}
        )
        assert not (added.is_error or attribute.is_error or claim.is_error), [
            _text(added),
            _text(attribute),
            _text(claim),
        ]
        return added.structured_content, attribute.structured_content, claim.structured_content

    added, attribute, claim = _mcp(served, "writer", calls)
    assert added["id"] == "organization/mkacme-corp" and added["outcome"] == "created"
    # new, so the names it was made with are the call's own, and said so (it said none were added)
    assert added["aliases"] == ["mkacme.example"] and "none added" not in added["note"]
    assert "once a fact it may hear names it" in added["note"]  # (how its audience comes to know it)
    assert attribute["status"] == "proposed" and attribute["said_by"] == "actor/bot"
    assert claim["outcome"] == "created"
    before = _snapshot(served)

    async def bad(client):
        out = []
        for name, args in [
            (
                "propose",
                {"subject": "repo/web", "predicate": "no_such_predicate", "value": "x", "sources": ["slack:b"]},
            ),
            ("propose", {"subject": "repo/nowhere", "predicate": "caveat", "value": "x", "sources": ["slack:b"]}),
            ("propose", {"subject": "repo/web", "predicate": "caveat", "value": "x", "sources": ["nokind"]}),
            ("propose", {"subject": "repo/web", "predicate": "caveat"}),
            ("org_set", {"org": "Nobody Inc", "key": "industry", "value": "x"}),
        ]:
            result = await client.call_tool(name, args)
            out.append((name, result.is_error, _text(result)))
        return out

    for name, failed, text in _mcp(served, "writer", bad):
        assert failed and f"Error executing tool {name}" in text and "Traceback" not in text, text
    assert _snapshot(served) == before


def test_the_batch_is_read_by_the_owners_token_alone_and_changes_nothing(served):
    before = _snapshot(served)

    async def calls(client):
        owner = await client.call_tool("batch", {})
        return owner.is_error, owner.structured_content

    failed, doc = _mcp(served, "boss", calls)
    assert not failed and doc["waiting"] >= 1 and doc["groups"]
    status, body = _get(served, "/api/batch", token="sales")
    assert status == 409 and "owner's" in json.loads(body)["message"]
    assert _snapshot(served) == before
    assert not (served["kg"].path / "batch.json").exists()


def test_the_api_takes_a_write_as_json_and_refuses_what_the_call_does_not_take(served):
    body = {"subject": "repo/web", "predicate": "caveat", "value": "mkapivalue", "sources": ["slack:a1"]}
    status, answer = _get(
        served, "/api/propose", token="writer", data=json.dumps(body).encode(), kind="application/json"
    )
    assert status == 200 and json.loads(answer)["outcome"] == "created"
    before = _snapshot(served)
    for extra, says in [
        ({"perspective": "lyra"}, "unknown argument 'perspective'"),
        ({"audience": "owner"}, "unknown argument 'audience'"),
        ({"said_by": "Helper Bot"}, "unknown argument 'said_by'"),
        ({"caller": "boss"}, "unknown argument 'caller'"),
    ]:
        status, answer = _get(
            served, "/api/propose", token="writer", data=json.dumps({**body, **extra}).encode(), kind="application/json"
        )
        assert status == 400 and says in json.loads(answer)["message"]
    for route, extra in [  # arguments of the call below the tool, which the tool does not take
        ("org_add", {"name": "Acme", "org_id": ["x"]}),
        ("org_add", {"name": "Acme", "org_id": "organization/acme-two"}),
        ("reject", {"fact": "f-aaaaaa", "quote": "that is wrong", "transcript": "t.jsonl", "reason": 5}),
    ]:
        status, answer = _get(
            served, f"/api/{route}", token="writer", data=json.dumps(extra).encode(), kind="application/json"
        )
        assert status == 400 and "unknown argument" in json.loads(answer)["message"], answer
    for data in [b"not json", b"[1, 2]", json.dumps({"subject": "repo/web"}).encode()]:
        status, answer = _get(served, "/api/propose", token="writer", data=data, kind="application/json")
        assert status == 400, answer
    # an argument in the query string was left out, and the write made without it
    for route, query, data in [
        ("org_add", "aliases=acme.io", {"name": "Acme"}),
        ("org_add", "name=Acme", {}),
        ("propose", "valid_from=2020-01-01", body),
    ]:
        status, answer = _get(
            served, f"/api/{route}?{query}", token="writer", data=json.dumps(data).encode(), kind="application/json"
        )
        said = json.loads(answer)["message"]
        assert status == 400 and "not the query string" in said and query.split("=")[0] in said, answer
    assert _snapshot(served) == before


@pytest.mark.parametrize("query", ATTACKS)
def test_the_owner_of_main_reads_nothing_of_lyra_whatever_the_query(served, query):
    status, body = _sparql(served, query, token="owner")
    assert status == 200, body
    assert "mklyra" not in body


def test_a_write_token_over_stdio_proposes_as_its_command_line_says(served):
    async def calls(client):
        result = await client.call_tool(
            "propose", {"subject": "repo/web", "predicate": "caveat", "value": "mkstdiovalue", "sources": ["slack:s1"]}
        )
        return result.is_error, result.structured_content

    failed, doc = _mcp(
        served, None, calls, stdio_args=["--audience", "channel:sales", "--write", "--speaker", "Helper Bot"]
    )
    assert not failed and doc["status"] == "proposed"
    settled(served["kg"].path)
    mine = next(f for f in served["kg"].json("facts", "repo/web")["facts"] if f.get("value") == "mkstdiovalue")
    assert mine["said_by"] == "actor/bot" and "channel:sales" in mine["audiences"]


@pytest.mark.parametrize(
    "start", [["--audience", "dm:jo,quinta"], ["--audience", "public", "--speaker", "Quinta Xavier"]]
)
def test_a_kg_mcp_for_a_person_forgotten_since_it_started_answers_nothing_more(tmp_path, start):
    """forget revokes a token that reads for a person's conversation or speaks as them; a kg mcp
    started for one has no token, and went on writing dm:jo,quinta into the journal after she was
    forgotten. It is refused as its token would be, and writes nothing."""
    from tests.test_forget import _files_naming

    kg = Kg(tmp_path / "kb")
    kg("init")
    kg("add-entity", "person/quinta", "--name", "Quinta Xavier")
    kg("add-entity", "repo/web", "--name", "web")
    fact = {"subject": "repo/web", "predicate": "caveat", "sources": ["slack:s1"]}

    async def calls(client):
        before = await client.call_tool("propose", {**fact, "value": "first"})
        kg("forget", "person/quinta")
        after = await client.call_tool("propose", {**fact, "value": "second"})
        read = await client.call_tool("lookup", {"entity": "repo/web"})
        return before, after, read

    before, after, read = _mcp({"kg": kg}, None, calls, stdio_args=[*start, "--write"])
    assert not before.is_error
    for refused in (after, read):
        assert refused.is_error and "was forgotten: it answers nothing more" in refused.content[0].text
    assert [f.get("value") for f in kg.json("facts", "repo/web", "--all")["facts"]] in ([], ["first"])
    assert _files_naming(kg.path, ["quinta", "person/quinta", "xavier"]) == []


def test_a_kg_mcp_stops_for_its_own_perspectives_person_forgotten_since_it_started_alone(tmp_path):
    """A forget before it started (the person added again since) and a forget of the same id in
    another perspective leave it answering; a person its conversation lists by handle, added after
    it started and then forgotten, stops it."""
    kg = Kg(tmp_path / "kb")
    kg("init")
    kg("org", "init", "Client", "--perspective", "client")
    for perspective in ("main", "client"):
        kg("add-entity", "person/quinta", "--name", "Quinta Xavier", "--perspective", perspective)
    kg("add-entity", "repo/web", "--name", "web")
    kg("forget", "person/quinta", expect=3)  # (forgotten here; client names them too, and says so)
    kg("add-entity", "person/quinta", "--name", "Quinta Xavier", "--allow-forgotten")
    fact = {"subject": "repo/web", "predicate": "caveat", "sources": ["slack:s1"]}

    async def calls(client):
        said = [await client.call_tool("propose", {**fact, "value": "first"})]
        kg("forget", "person/quinta", "--perspective", "client", expect=3)  # (main names them too)
        said.append(await client.call_tool("propose", {**fact, "value": "second"}))
        kg("add-entity", "person/lee", "--name", "Lee Wu")
        said.append(await client.call_tool("propose", {**fact, "value": "third"}))
        kg("forget", "person/lee")
        said.append(await client.call_tool("propose", {**fact, "value": "fourth"}))
        return said

    said = _mcp({"kg": kg}, None, calls, stdio_args=["--audience", "dm:jo,quinta,lee", "--write"])
    assert [r.is_error for r in said] == [False, False, False, True], [r.content[0].text for r in said]
    assert "was forgotten: it answers nothing more" in said[-1].content[0].text
    from tests.patchlog import journal_bytes

    assert b"fourth" not in journal_bytes(kg.path / "journal")  # (the three before went with Lee's dm)


def test_a_name_a_token_writes_with_means_what_its_audience_knows_and_its_refusals_name_nothing_else(tmp_path):
    """A token of an audience resolves names among the entities it has heard of first; a refusal of a
    name says nothing of one it has not heard of (no hint, no candidate, no alias)."""
    kg = Kg(tmp_path / "kb")
    kg("init")
    kg("org", "init", "Acme")
    kg("add-entity", "repo/api", "--name", "Api")
    kg("add-entity", "repo/seen", "--name", "Mktwin")
    kg("add-entity", "repo/secret", "--name", "Mktwin")  # the same name, of one only a DM has heard of
    kg("add-entity", "repo/nightshade", "--name", "Mknightshade")
    kg("propose", "repo/seen", "depends_on", "--object", "repo/api", "--source", "slack:s1", "--audience", "public")
    kg("propose", "repo/secret", "caveat", "--value", "x", "--source", "slack:s2", "--audience", "dm:ana,bo")
    kg("propose", "repo/nightshade", "caveat", "--value", "y", "--source", "slack:s3", "--audience", "dm:ana,bo")
    kg("org", "add", "Mksecretco", "--alias", "mksecretco.example")
    kg("add-entity", "organization/mksecretco", "--name", "Mksecretco", "--summary", "codename mknightjar")
    kg("org", "set", "Mksecretco", "relationship", "target", "-s", "doc:d1", "--audience", "dm:ana,bo")
    secret = kg.json("tokens", "add", "pub", "--perspective", "main", "--audience", "public", "--write")["secret"]
    server = Server(kg.path)
    try:
        fact = {"predicate": "caveat", "value": "flaky", "sources": ["slack:w1"]}
        status, answer = server.post("propose", secret, {"subject": "Mktwin", **fact})
        assert status == 200 and answer["subject"] == "repo/seen", answer  # not refused as ambiguous
        settled(kg.path)
        before = kg.snapshot()
        status, answer = server.post("propose", secret, {"subject": "Mknight", **fact})
        assert status == 404 and "mknightshade" not in json.dumps(answer).lower(), answer
        status, answer = server.post("org_set", secret, {"org": "mksecret", "key": "industry", "value": "retail"})
        assert status == 404 and "mksecretco" not in json.dumps(answer).lower(), answer
        settled(kg.path)
        assert kg.snapshot() == before
        status, answer = server.post("org_add", secret, {"name": "Mksecretco"})
        assert status == 200 and answer["outcome"] == "unchanged"
        assert "mksecretco.example" not in json.dumps(answer), answer  # an alias the call did not say
        assert "mknightjar" not in json.dumps(answer) and set(answer) == {
            "id", "type", "name", "aliases", "weak_aliases", "outcome", "note"
        }, answer  # fmt: skip
        # Nor which of the names a call gives are its own: each guess is answered alike.
        for guesses in (["mksecretco.example", "mkwrong"], ["mkwrong"]):
            status, answer = server.post("org_add", secret, {"name": "mksecretco", "aliases": guesses})
            assert status == 200 and (answer["name"], answer["aliases"]) == ("mksecretco", []), answer
            assert answer["note"].endswith("none added"), answer
        owner = kg.json("lookup", "Mksecretco")["entity"]
        assert owner["aliases"] == ["mksecretco.example"]
    finally:
        server.stop()


def test_a_write_refused_for_an_audience_never_names_a_fact_it_may_not_hear(served):
    """A token's write refused over a fact heard where its audience does not hear (rejected there,
    its successor there, the same fact there with another valid time): refused, its reason telling
    nothing of that fact, its id and times; nothing written."""
    kg, writer = served["kg"], served["secrets"]["writer"]  # the writer hears channel:sales
    transcript = _transcript(served, "yes, the caveat mkold about Api is wrong, reject it")
    kg("add-entity", "repo/mkdb", "--name", "Mkdb")
    rejected = kg.json(
        "propose", "repo/api", "depends_on", "--object", "repo/mkdb", "-s", "slack:e1", "--audience", "channel:eng"
    )["id"]
    kg("reject", rejected)
    told = kg.json("propose", "repo/api", "caveat", "--value", "mkold", "-s", "slack:s1", "--audience", "channel:sales")
    kg("confirm", told["id"])
    successor = kg.json("supersede", told["id"], "--value", "mknew", "--audience", "channel:eng")["id"]
    timed = kg.json(
        "propose", "repo/mkdb", "uses", "--object", "repo/api", "-s", "slack:e2",
        "--audience", "channel:eng", "--valid-from", "2026-02-01",
    )["id"]  # fmt: skip
    before = _snapshot(served)
    for route, body in [
        ("propose", {"subject": "repo/api", "predicate": "depends_on", "object": "repo/mkdb", "sources": ["slack:w1"]}),
        ("reject", {"fact": told["id"], "quote": "the caveat mkold about Api is wrong", "transcript": transcript}),
        (
            "propose",
            {
                "subject": "repo/mkdb",
                "predicate": "uses",
                "object": "repo/api",
                "sources": ["slack:w2"],
                "valid_from": "2026-05-01",
            },
        ),
    ]:
        status, doc = served["server"].post(route, writer, body)
        assert status == 409 and doc["error"] == "refused", (route, doc)
        said = json.dumps(doc)
        assert not any(hidden in said for hidden in (rejected, successor, timed, "2026-02-01")), said
    assert _snapshot(served) == before


def test_a_tokens_write_refused_by_the_shapes_says_nothing_of_an_entity_it_does_not_know(served):
    """The SHACL findings a refusal carries name the fact's subject and object: of an entity the
    token's audience does not know (repo/hidden, heard in dm:ana,bo alone), they would tell its
    id and its type."""
    writer = served["secrets"]["writer"]
    before = _snapshot(served)
    body = {"subject": "mkhiddenname", "predicate": "timezone", "value": "UTC", "sources": ["slack:w9"]}
    status, answer = served["server"].post("propose", writer, body)
    assert status == 409 and answer["error"] == "refused", answer
    said = json.dumps(answer)
    assert "repo/hidden" not in said and "a repo" not in said and "does not know" in answer["message"], answer
    assert _snapshot(served) == before
    status, answer = served["server"].post("propose", served["secrets"]["boss"], body)  # the owner is told
    assert status == 409 and answer["findings"][0]["fact"]["subject"] == "repo/hidden", answer


def test_a_tokens_org_add_refused_for_a_name_taken_says_nothing_of_an_entity_it_does_not_know(served):
    """repo/hidden is known to dm:ana,bo alone: a refusal naming it (its id, its name) would tell
    a token of channel:sales that it exists, as lookup and search do not."""
    writer = served["secrets"]["writer"]
    before = _snapshot(served)
    status, answer = served["server"].post("org_add", writer, {"name": "Mkfreshco", "aliases": ["mkhiddenname"]})
    assert status == 409 and answer["error"] == "refused", answer
    assert "repo/hidden" not in json.dumps(answer) and "does not know" in answer["message"], answer
    assert _snapshot(served) == before
    # The owner's token is told which entity holds the name.
    status, answer = served["server"].post(
        "org_add", served["secrets"]["boss"], {"name": "Mkfreshco", "aliases": ["mkhiddenname"]}
    )
    assert status == 409 and "repo/hidden" in answer["message"], answer


def test_a_tokens_write_of_what_another_audience_heard_is_told_as_new(served):
    """A token of channel:sales proposing a value heard in a DM alone learns nothing of that hearing:
    not its count, its sources, nor that the value was known (the outcome says created, as for a
    guess the knowledge base did not hold); its own second proposal is an observation."""
    kg, writer = served["kg"], served["secrets"]["writer"]
    kg("propose", "repo/web", "caveat", "--value", "mkdmguess", "-s", "slack:dm1", "--audience", "dm:ana,bo")
    body = {"subject": "repo/web", "predicate": "caveat", "value": "mkdmguess", "sources": ["slack:g1"]}
    status, answer = served["server"].post("propose", writer, body)
    assert status == 200 and answer["outcome"] == "created" and "note" not in answer, answer
    assert answer["observations"] == 1 and "dm1" not in json.dumps(answer)
    status, answer = served["server"].post("propose", writer, {**body, "sources": ["slack:g2"]})
    assert status == 200 and answer["outcome"] == "observed" and answer["observations"] == 2, answer
    status, wrong = served["server"].post("propose", writer, {**body, "value": "mkdmnotheard"})
    assert status == 200 and wrong["outcome"] == "created", wrong


def test_a_tokens_org_add_never_changes_the_names_of_an_organization_known_already(served):
    """An organization's names are shown to every audience that knows it: a token of one audience
    adding an alias (a codename heard there) or another spelling of its name would tell every other
    audience. The owner changes them; a token's call is unchanged, and says so."""
    kg, writer = served["kg"], served["secrets"]["writer"]
    kg("org", "add", "Mkvisible", "--alias", "mkvis.example")
    kg("org", "set", "Mkvisible", "industry", "retail", "-s", "doc:d1", "--audience", "public")
    kg("org", "add", "Mkhushco", "--alias", "mkhush.example")  # no fact: channel:sales does not know it
    before = _snapshot(served)
    # A name another organization goes by as its alias made a second organization, and the name was
    # ambiguous to everyone, the owner too; one the audience does not know is refused, unnamed.
    status, answer = served["server"].post("org_add", writer, {"name": "MKHUSH.EXAMPLE"})
    assert status == 409 and "does not know" in answer["message"] and "mkhushco" not in json.dumps(answer).lower()
    for body in ({"name": "Mkvisible", "aliases": ["mkcodename"]}, {"name": "MKVISIBLE"}, {"name": "MKVIS.EXAMPLE"}):
        status, answer = served["server"].post("org_add", writer, body)
        assert status == 200 and answer["outcome"] == "unchanged", answer
        assert (
            answer.get("note")
            == "the names of an organization known already are changed by the owner alone: none added"
        ), answer
        assert answer["name"] == "Mkvisible" and "mkcodename" not in json.dumps(answer)
    assert _snapshot(served) == before
    status, found = _get(served, "/api/search?text=mkcodename", token="sales")
    assert status == 200 and json.loads(found)["results"] == []
    status, answer = served["server"].post("org_add", writer, {"name": "Mkvisible"})
    assert status == 200 and answer["outcome"] == "unchanged" and "note" not in answer  # nothing asked: no note
    status, answer = served["server"].post(
        "org_add", served["secrets"]["boss"], {"name": "Mkvisible", "aliases": ["mkv"]}
    )
    assert (
        status == 200 and answer["outcome"] == "updated" and answer["aliases"] == ["mkv", "mkvis.example"]
    )  # the owner's token may


def test_a_tokens_new_organization_says_how_its_audience_comes_to_know_it(served):
    """An audience token's org_add answered created, and the lookup after it said the organization
    was not known (an entity is known to an audience by the facts it may hear naming it): the
    answer says so, and the way it follows works."""
    writer = served["secrets"]["writer"]
    status, made = served["server"].post("org_add", writer, {"name": "Mkbarecorp"})
    assert status == 200 and made["outcome"] == "created" and "once a fact it may hear names it" in made["note"]
    assert _get(served, "/api/lookup?entity=Mkbarecorp", token="writer")[0] == 404  # not yet, as said
    body = {"org": made["id"], "key": "industry", "value": "mkbare retail", "sources": ["slack:b1"]}
    status, answer = served["server"].post("org_set", writer, body)
    assert status == 200, answer
    status, found = _get(served, "/api/lookup?entity=Mkbarecorp", token="writer")
    assert status == 200 and json.loads(found)["entity"]["id"] == made["id"]


def test_which_organization_a_tokens_name_means_is_told_only_by_names_its_audience_may_hear(served):
    """Mknestlé, an alias of Mknestlé S.A. whose letters make Mknestle's id, is Mknestlé S.A. to a
    token as to kg org add (a token was handed Mknestle, and wrote to it). The alias of a duplicate
    merged into an organization the audience knows, and the duplicate's id, are names it may not
    hear: org_add and org_set by them told it which organization they were; refused now as names
    nobody it knows goes by, writing nothing."""
    kg, writer = served["kg"], served["secrets"]["writer"]
    kg("org", "add", "Mknestlé S.A.", "--alias", "Mknestlé")
    kg("org", "add", "Mknestle")
    kg("org", "add", "Mkacmeco")
    kg("org", "add", "Mkacme Secret", "--alias", "mkacmesh")
    for org in ("Mknestlé S.A.", "Mknestle", "Mkacmeco"):
        kg("org", "set", org, "industry", "food", "-s", "doc:n1", "--audience", "channel:sales")
    kg("org", "set", "Mkacme Secret", "revenue", "9M", "-s", "doc:n2", "--audience", "dm:ana,bo")
    kg("org", "merge", "Mkacmeco", "Mkacme Secret")
    status, answer = served["server"].post("org_add", writer, {"name": "MKNESTLÉ"})
    assert status == 200 and (answer["id"], answer["outcome"]) == ("organization/mknestle-s-a", "unchanged"), answer
    before = _snapshot(served)
    for route, body in [
        ("org_add", {"name": "mkacmesh"}),
        ("org_add", {"name": "MKACME SECRET"}),  # (it was handed the merged id, which every call then refused)
        ("org_set", {"org": "mkacmesh", "key": "staff", "value": "50", "sources": ["slack:s20"]}),
        ("org_set", {"org": "organization/mkacme-secret", "key": "staff", "value": "50", "sources": ["slack:s20"]}),
        ("propose", {"subject": "organization/mkacme-secret", "predicate": "industry", "value": "x", "sources": ["slack:s21"]}),
    ]:  # fmt: skip
        status, answer = served["server"].post(route, writer, body)
        assert status in (404, 409) and "mkacmeco" not in json.dumps(answer).lower(), (route, answer)
    assert _snapshot(served) == before
    status, answer = served["server"].post("org_set", served["secrets"]["boss"], {
        "org": "mkacmesh", "key": "staff", "value": "50", "sources": ["slack:s20"]
    })  # fmt: skip
    assert status == 200 and answer["subject"] == "organization/mkacmeco", answer  # the owner's token resolves it


def test_a_name_taken_in_a_merge_tells_a_token_nothing_of_an_organization_it_never_heard_of(served):
    """A token whose audience had heard of neither organization proposed a fact naming the merged
    duplicate's alias (mkhidden.example): it was taken, and the answer named the organization kept
    (which the audience had not known to exist), telling it of a merge it may not hear. By the
    kept one's own name it may still write, as of any entity it names."""
    kg, writer = served["kg"], served["secrets"]["writer"]
    kg("org", "add", "Mkzebra")
    kg("org", "add", "Mkhidden", "--alias", "mkhidden.example")
    kg("org", "add", "Mkpartner")
    kg("org", "set", "Mkhidden", "industry", "mining", "-s", "doc:z1", "--audience", "dm:ana,bo")
    kg("org", "set", "Mkpartner", "industry", "food", "-s", "doc:z2", "--audience", "channel:sales")
    kg("org", "merge", "Mkzebra", "Mkhidden")
    before = _snapshot(served)
    for route, body in [
        ("propose", {"subject": "Mkpartner", "predicate": "customer_of", "object": "mkhidden.example", "sources": ["slack:z3"]}),
        ("propose", {"subject": "MKHIDDEN", "predicate": "industry", "value": "x", "sources": ["slack:z4"]}),
        ("org_set", {"org": "mkhidden.example", "key": "staff", "value": "50", "sources": ["slack:z5"]}),
    ]:  # fmt: skip
        status, answer = served["server"].post(route, writer, body)
        assert status in (404, 409) and "mkzebra" not in json.dumps(answer).lower(), (route, answer)
    assert _snapshot(served) == before
    status, answer = served["server"].post(
        "propose",
        writer,
        {"subject": "Mkpartner", "predicate": "customer_of", "object": "Mkzebra", "sources": ["slack:z6"]},
    )
    assert status == 200 and answer["object"] == "organization/mkzebra", answer


@given(
    kind=st.from_regex(r"[a-z][a-z_]{0,6}", fullmatch=True),
    slug=st.from_regex(r"[a-z0-9][a-z0-9._-]{0,12}", fullmatch=True),
    before=st.sampled_from(["", "the entity ", "(", "named ", "'"]),
    after=st.sampled_from(["", ".", ", ", ")", "; and more", "'", " goes by it"]),
)
def test_every_entity_id_a_refusal_names_is_found_to_be_hidden(kind, slug, before, after):
    """An id that ends in a dot or a dash (vocab.ID_PATTERN allows one) is found as it is, a full stop
    after an id found without it: a refusal naming either must not slip past the audience's check."""
    from kgrdf import model, vocab

    entity = f"{kind}/{slug}"
    assert vocab.ID_PATTERN.match(entity)
    assert entity in model.entity_ids_in(f"refused: {before}{entity}{after}")


def test_a_servers_hints_never_name_the_folder_of_its_knowledge_base(kg):
    """kg serve opened its knowledge base as the command line does, and every hint it answered after
    that named the folder (kg supersede F ... --kb /srv/...): a public token's caller learned where
    the knowledge base lives."""
    kg("add-entity", "environment/staging", "--name", "Staging")
    kg("propose", "environment/staging", "status", "--value", "running", "-s", "report:r", "--valid-from", "2026-01-01")
    kg("propose", "environment/staging", "status", "--value", "running", "-s", "report:s", "--audience", "public")
    secret = kg.json("tokens", "add", "w", "--perspective", "main", "--audience", "public", "--write")["secret"]
    server = Server(kg.path)
    try:
        said = {"subject": "environment/staging", "predicate": "status", "value": "running"}
        status, answer = server.post("propose", secret, {**said, "sources": ["report:r"], "valid_from": "2026-02-01"})
        assert status == 409 and "kg supersede" in answer["hint"], answer
        assert str(kg.path) not in json.dumps(answer) and "--kb" not in json.dumps(answer), answer
    finally:
        server.stop()
