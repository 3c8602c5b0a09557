"""kg serve's HTTP face: ``/sparql`` (SPARQL 1.1 Protocol, read only), ``/api/...`` (the CLI's
``--json`` documents) and ``/mcp`` (MCP over streamable HTTP), every one behind a bearer token.

A request without a token that :func:`kgrdf.tokens.resolve` knows gets 401 before it reaches any
of them. The token alone decides the perspective, the audience and the right to write: no query
parameter, header or SPARQL clause can widen them (``FROM``, ``FROM NAMED`` and ``GRAPH`` only
ever see the dataset the engine is given, which holds what the token may read; ``SERVICE`` is
refused by the sandbox; an update does not run). An expected error is a JSON document with the
CLI's one-line reason: ``{"error": kind, "message": ..., "hint": ...}``.
"""

import contextvars
import json
import re
import sys
import threading
from pathlib import Path

import anyio

from kgrdf import errors, inputs, tokens
from kgrdf.errors import BadInput, KgError
from kgrdf.serve.service import Caller, Service
from kgrdf.store import bounded

STATUS = {
    "bad_input": 400,
    "not_found": 404,
    "refused": 409,
    "damaged": 503,
    "bug": 500,
    "too_large": 413,
    "unauthorized": 401,
}
# Bytes of a request body: the MCP transport's own bound (4 MiB), which the guard says first, in JSON,
# on every route. A query is at most 1 MiB, a text field 64k characters (KGRDF_MAX_TEXT).
MAX_BODY = 4 * 1024 * 1024
RESULT_TYPES = {  # SELECT and ASK answers, the first the default
    "application/sparql-results+json": "JSON",
    "application/json": "JSON",
    "application/sparql-results+xml": "XML",
    "application/xml": "XML",
    "text/csv": "CSV",
    "text/tab-separated-values": "TSV",
}
GRAPH_TYPES = {  # CONSTRUCT and DESCRIBE answers, the first the default
    "text/turtle": "TURTLE",
    "application/n-triples": "N_TRIPLES",
    "application/trig": "TRIG",
    "application/n-quads": "N_QUADS",
    "application/rdf+xml": "RDF_XML",
}


class Tokens:
    """The callers of requests, looked up in tokens.json on each (kgrdf.tokens parses it again
    whenever it changed), so that a token revoked with kg tokens revoke opens nothing from the next
    request on."""

    def __init__(self, kb_path: Path):
        self.kb_path = kb_path

    def caller(self, header: str | None) -> Caller | None:
        scheme, _, secret = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return None
        token = tokens.resolve(self.kb_path, secret.strip())
        return None if token is None else Caller.of(token)


def _json(data: dict, status: int = 200, headers: dict | None = None):
    from starlette.responses import Response

    body = json.dumps(data, ensure_ascii=False) + "\n"  # (a lone surrogate it echoes is written as its JSON escape)
    return Response(
        body.encode("utf-8", "backslashreplace"), status_code=status, media_type="application/json", headers=headers
    )


def _error(exc: KgError):
    return _json(exc.as_json(), STATUS.get(exc.kind, 409))


def _unauthorized(message: str):
    from starlette.responses import Response

    body = json.dumps({"error": "unauthorized", "message": message}) + "\n"
    return Response(body, status_code=401, media_type="application/json", headers={"WWW-Authenticate": "Bearer"})


class TooLarge(BadInput):
    """A request body larger than MAX_BODY (413): refused before the rest of it is read."""

    kind = "too_large"

    def __init__(self, size: int | None = None):
        said = f"of {size:,} bytes " if size is not None else ""
        super().__init__(f"the request body {said}is larger than kg serve takes ({MAX_BODY:,} bytes)")


async def _read_chunked(receive):
    """(the body of a request sent in chunks, whose length no header says, and a ``receive`` that
    gives it again whole), or None once it passes MAX_BODY: read here, before any route, so that a
    body too large is refused in JSON by every route alike (the MCP transport's own refusal is a
    plain line, and an error raised inside it a 500)."""
    body, more = bytearray(), True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return _nothing  # the client went away before its body ended: the route meets the same
        body += message.get("body", b"")
        more = message.get("more_body", False)
        if len(body) > MAX_BODY:
            return None
    given = False

    async def again():
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": bytes(body), "more_body": False}

    return again


class Guard:
    """ASGI middleware: every request carries a known token, whose caller it puts in the scope, and a
    body of at most MAX_BODY bytes (the server would otherwise hold whatever a client sends)."""

    def __init__(self, app, cache: Tokens):
        self.app = app
        self.cache = cache

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        header = headers.get("authorization")
        try:
            caller = self.cache.caller(header)
        except KgError as exc:  # tokens.json damaged: every request is refused, in one line here too
            print(f"kg: {exc.message}", file=sys.stderr)
            return await _error(exc)(scope, receive, send)
        if caller is None:
            message = (
                "a bearer token is needed (Authorization: Bearer SECRET; kg tokens add makes one)"
                if not header
                else "the token is not known, or was revoked"
            )
            return await _unauthorized(message)(scope, receive, send)
        scope.setdefault("state", {})["caller"] = caller
        length = headers.get("content-length", "0").strip()
        if not length.isdigit() or int(length) > MAX_BODY:
            return await _error(TooLarge(int(length) if length.isdigit() else None))(scope, receive, send)
        if "transfer-encoding" in headers:
            receive = await _read_chunked(receive)
            if receive is None:
                return await _error(TooLarge())(scope, _nothing, send)
        return await self.app(scope, receive, send)


async def _nothing():
    return {"type": "http.disconnect"}


def _negotiate(accept: str | None, offered: dict) -> str | None:
    """The offered media type the Accept header prefers (the first offered for none or */*)."""
    if not accept:
        return next(iter(offered))
    wanted = []
    for order, part in enumerate(accept.split(",")):
        media, *params = [p.strip() for p in part.split(";")]
        quality = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    quality = float(param[2:])
                except ValueError:
                    quality = 0.0
        wanted.append((-quality, order, media.lower()))
    for negative, _order, media in sorted(wanted):
        if negative == 0:
            break
        if media in offered:
            return media
        if media in ("*/*", "application/*", "text/*"):
            return next((m for m in offered if media == "*/*" or m.startswith(media[:-1])), None)
    return None


def _answer(result, accept: str | None):
    """A SPARQL answer in the media type the client accepts (406 when none is offered)."""
    import pyoxigraph as ox
    from starlette.responses import Response

    if isinstance(result, (ox.QuerySolutions, ox.QueryBoolean)):
        media = _negotiate(accept, RESULT_TYPES)
        if media is None:
            return _json({"error": "not_acceptable", "message": "results are " + ", ".join(RESULT_TYPES)}, 406)
        data = result.serialize(format=getattr(ox.QueryResultsFormat, RESULT_TYPES[media]))
        return Response(data, media_type=media)
    media = _negotiate(accept, GRAPH_TYPES)
    if media is None:
        return _json({"error": "not_acceptable", "message": "graphs are " + ", ".join(GRAPH_TYPES)}, 406)
    fmt = getattr(ox.RdfFormat, GRAPH_TYPES[media])
    items = [ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in result]
    if not fmt.supports_datasets:
        items = [q.triple for q in items]
    return Response(ox.serialize(items, format=fmt), media_type=media)


def _sparql_endpoint(service: Service):
    async def endpoint(request):
        from starlette.concurrency import run_in_threadpool

        caller: Caller = request.scope["state"]["caller"]
        try:
            pairs = _pairs(request.scope["query_string"], "the query string")
        except KgError as exc:
            return _error(exc)
        params = dict(pairs)
        text = params.get("query")
        queries = sum(1 for key, _ in pairs if key == "query")  # (the protocol's: exactly one)
        if request.method == "POST":
            kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
            try:
                if kind == "application/sparql-query":
                    try:
                        text = (await request.body()).decode("utf-8")
                        queries += 1
                    except UnicodeDecodeError as exc:  # (never read as other text than was sent)
                        return _error(BadInput(f"the query is not UTF-8 text (byte {exc.start + 1})"))
                elif kind == "application/x-www-form-urlencoded":
                    form = _pairs(await request.body(), "the form")
                    params.update(form)
                    text = params.get("query")
                    queries += sum(1 for key, _ in form if key == "query")
                elif kind == "application/sparql-update":
                    params["update"] = "1"
                else:
                    sent = kind or "a body without a Content-Type"
                    message = f"a query is not sent as {sent}: send application/sparql-query or a form"
                    return _json({"error": "bad_input", "message": message, "hint": None}, 415)
            except KgError as exc:
                return _error(exc)
        if "update" in params:
            message = "this endpoint is read only: the knowledge base changes through its verbs (MCP tools, kg)"
            return _json({"error": "refused", "message": message}, 403)
        if "default-graph-uri" in params or "named-graph-uri" in params:
            message = "the dataset is the token's to fix: ask without default-graph-uri and named-graph-uri"
            return _json({"error": "bad_input", "message": message}, 400)
        if queries > 1:
            message = f"query= is given {queries} times: give one query"
            return _json({"error": "bad_input", "message": message}, 400)
        if not text:
            return _json({"error": "bad_input", "message": "no query (give query=...)"}, 400)
        accept = request.headers.get("accept")
        if _negotiate(accept, RESULT_TYPES) is None and _negotiate(accept, GRAPH_TYPES) is None:
            # (said before the query runs: it would hold a read, up to its time limit, for nothing)
            offered = ", ".join([*RESULT_TYPES, *GRAPH_TYPES])
            return _json({"error": "not_acceptable", "message": f"answers are {offered}"}, 406)
        gone = threading.Event()

        def answer():
            bounded.ABANDONED.set(gone)  # (this worker thread's context: the query child is killed once set)
            # pyoxigraph's answers belong to the thread that made them: written out in it too.
            return _answer(service.sparql(caller, text), accept)

        async def watch() -> None:  # a client that hangs up frees the read, and the writes it holds back
            while not await request.is_disconnected():
                await anyio.sleep(bounded.ABANDON_CHECK)
            gone.set()

        async with anyio.create_task_group() as watching:
            watching.start_soon(watch)
            try:
                return await run_in_threadpool(contextvars.copy_context().run, answer)
            except KgError as exc:  # (caught here: a task group would wrap it in a group of its own)
                return _error(exc)
            finally:
                watching.cancel_scope.cancel()

    return endpoint


API = {  # route -> (Service method, its parameters: name -> kind)
    "lookup": ("lookup", {"entity": str, "limit": int, "cursor": str}),
    "search": ("search", {"text": str, "limit": int, "cursor": str}),
    "identify": ("identify", {"name": str}),
    "facts": (
        "facts",
        {"subject": str, "predicate": str, "as_of": str, "known_at": str, "limit": int, "cursor": str},
    ),
    "neighbors": ("neighbors", {"entity": str, "hops": int, "limit": int, "cursor": str}),
    "history": ("history", {"fact": str}),
    "mentions": ("mentions", {"text": str, "limit": int, "cursor": str}),
    "context": ("context", {"entity": str, "message": str, "budget": int}),
    "batch": ("batch", {"limit": int, "cursor": str}),
    "disclosures": ("disclosures", {"fact": str}),
    "told": ("told", {"audience": str, "since": str, "limit": int, "cursor": str}),
}
WRITES = (  # POST, JSON
    "propose",
    "propose_from_user",
    "confirm",
    "reject",
    "org_add",
    "org_set",
    "org_affiliate",
    "record_disclosure",
)


def _pairs(raw: bytes, what: str) -> list[tuple[str, str]]:
    """The name=value pairs of a query string or a form, as sent: a byte that is not UTF-8 is
    refused (BadInput), never read as U+FFFD, which would run another query or search than was sent."""
    from urllib.parse import unquote_to_bytes

    from kgrdf.errors import BadInput

    def text(part: bytes) -> str:
        return unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")

    try:
        return [(text(k), text(v)) for k, _, v in (p.partition(b"=") for p in raw.split(b"&") if p)]
    except UnicodeDecodeError:
        raise BadInput(f"{what} is not UTF-8 text") from None


def _arguments(params: dict, wanted: dict, method) -> dict:
    """The query parameters as the method's arguments: each known, each of its kind, none missing."""
    from kgrdf.errors import BadInput

    unknown = sorted(set(params) - set(wanted))
    if unknown:
        raise BadInput(f"unknown parameter {unknown[0]!r}; this route takes " + ", ".join(wanted))
    needed = _missing(method, params)
    if needed:
        raise BadInput(f"{needed} is needed (give {needed}=...)")
    out = {}
    for name, value in params.items():
        if wanted[name] is int:
            if not re.fullmatch(r"-?[0-9]{1,18}", value):  # (int() takes 1_0 and full-width digits)
                raise BadInput(f"{name} must be a whole number of at most 18 digits, not {value!r}")
            value = int(value)
        out[name] = value
    return out


async def _body(request, method, schema: dict) -> dict:
    """A write's JSON body as the method's arguments: an object whose keys are the arguments the
    tool of the same name declares in ``schema`` (its input schema), none missing, each of the kind
    declared there: the API takes what the MCP tool takes, no more (kgrdf.serve.arguments)."""
    import inspect

    from kgrdf.errors import BadInput
    from kgrdf.serve import arguments

    try:
        body = json.loads(await request.body() or b"{}")
    except (ValueError, RecursionError):  # (nested past what the parser can: no call's arguments are)
        raise BadInput("the body is not JSON") from None
    if not isinstance(body, dict):
        raise BadInput("the body must be a JSON object of the call's arguments")
    if schema.get("properties"):
        arguments.check(body, schema)
        return body
    takes = list(inspect.signature(method).parameters)[1:]
    unknown = sorted(set(body) - set(takes))
    if unknown:
        raise BadInput(f"unknown argument {unknown[0]!r}; this route takes " + ", ".join(takes))
    needed = _missing(method, body)
    if needed:
        raise BadInput(f"{needed} is needed")
    return body


def _missing(method, given: dict) -> str | None:
    """The first argument ``method`` requires (its caller aside) that ``given`` lacks."""
    import inspect

    for name, parameter in inspect.signature(method).parameters.items():
        if name != "caller" and parameter.default is inspect.Parameter.empty and name not in given:
            return name
    return None


def _not_allowed(request, allowed: str):
    """405, with the methods the path takes (Allow)."""
    message = f"{request.url.path} does not take {request.method}; it takes {allowed}"
    return _json({"error": "method_not_allowed", "message": message}, 405, {"Allow": allowed})


def _api_endpoint(service: Service, mcp):
    schemas: dict[str, dict] = {}  # each write's tool's input schema, read at the first write

    async def endpoint(request):
        from starlette.concurrency import run_in_threadpool

        from kgrdf.errors import BadInput, NotFound

        caller: Caller = request.scope["state"]["caller"]
        route = request.path_params["route"]
        try:
            if request.method == "POST":
                if route in API:  # a read: it takes GET
                    return _not_allowed(request, "GET")
                if route not in WRITES:
                    raise NotFound(f"there is no POST /api/{route}", hint="writes: " + ", ".join(WRITES))
                method = getattr(service, route)
                named = [name for name, _ in _pairs(request.scope["query_string"], "the query string")]
                if named:  # a write takes its body alone: left out, they would be a write not asked for
                    raise BadInput(
                        f"a write's arguments are its JSON body, not the query string (it names {named[0]!r})",
                        hint=f"POST /api/{route} with a body such as {{{json.dumps(named[0])}: ...}}",
                    )
                if not schemas:
                    schemas.update({tool.name: tool.input_schema for tool in await mcp.list_tools()})
                args = await _body(request, method, schemas.get(route, {}))
            else:
                if route in WRITES:  # a write: it takes POST
                    return _not_allowed(request, "POST")
                if route not in API:
                    raise NotFound(f"there is no /api/{route}", hint="routes: " + ", ".join(f"/api/{r}" for r in API))
                name, wanted = API[route]
                method = getattr(service, name)
                args = _arguments(
                    inputs.once(_pairs(request.scope["query_string"], "the query string")), wanted, method
                )
            # written out in the worker thread that made the document, not on the event loop after it
            return await run_in_threadpool(lambda: _json(method(caller, **args)))
        except KgError as exc:
            return _error(exc)

    return endpoint


def app(kb_path: Path, resident=None, transcripts: tuple[Path, ...] = ()):
    """The ASGI application serving the knowledge base at ``kb_path``; with ``resident``
    (kgrdf.resident.Resident), its index stays open between requests and its commits follow the
    answers, and both are finished when the application shuts down. A caller's transcript is read
    only in the folders ``transcripts`` (none: no transcript is read)."""
    import contextlib

    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Route

    from kgrdf.serve import tools

    service = Service(kb_path, resident, transcripts)
    callers = Tokens(kb_path)
    mcp = tools.server(service, None)
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            if resident is not None:
                resident.stop()

    def failing(request, exc):
        return _error(errors.of(exc))

    def unserved(request, exc):
        """A path or a method kg serve does not serve, said as every refusal is (405 with Allow)."""
        path = request.url.path
        if exc.status_code == 405:
            route = path.removeprefix("/api/") if path.startswith("/api/") else None
            own = "POST" if route in WRITES else "GET" if route in API else None  # (not all the path's pattern takes)
            return _not_allowed(request, own or (exc.headers or {}).get("Allow", ""))
        message = f"there is no {path}; kg serve answers /mcp, /sparql and /api/ROUTE"
        return _json({"error": "not_found", "message": message}, exc.status_code)

    return Starlette(
        routes=[
            Route("/sparql", _sparql_endpoint(service), methods=["GET", "POST"]),
            Route("/api/{route}", _api_endpoint(service, mcp), methods=["GET", "POST"]),
            # the MCP app, for the methods of its transport; another is refused here, as on every route
            Route("/mcp", mcp_app, methods=["GET", "POST", "DELETE"]),
        ],
        middleware=[Middleware(Guard, cache=callers)],
        exception_handlers={404: unserved, 405: unserved, Exception: failing},
        lifespan=lifespan,
    )
