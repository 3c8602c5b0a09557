"""kg console's HTTP face: the page shell, its assets, each page's JSON twin and the one write.

Security (SPEC §10): the console listens on loopback only and answers only requests addressed to
it by that name (a page of another site cannot reach it through a name it controls). The token in
the address ``kg console`` prints is traded, once per browser, for a session cookie (HttpOnly,
SameSite=Strict) and the address bar is cleaned by a redirect. Every request needs that cookie.
Every route is GET only, except ``POST /review/decide``, which also needs an Origin naming the
console, a JSON body and the CSRF token of this start in a header: the token is written into the
page shell, which only a page of the console itself can read. Every answer carries a
Content-Security-Policy of ``'self'``: nothing is loaded from anywhere else.
"""

import dataclasses
import hmac
import json
import re
import secrets
import threading
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from kgrdf import errors
from kgrdf.console.pages import Keys, Pages, View
from kgrdf.errors import BadInput, KgError, NotFound

COOKIE = "kg_console"  # and the port: a browser sends a loopback cookie to every port of the host,
# so two consoles open at once (two perspectives, two folders) each keep a session of their own
CSRF_HEADER = "x-kg-csrf"
DECIDE = "/review/decide"
STATUS = {"bad_input": 400, "not_found": 404, "refused": 409, "damaged": 503, "bug": 500}
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
]
ASSETS = {"console.js": "text/javascript", "console.css": "text/css"}
STATIC = Path(__file__).parent / "static"
DIGITS = re.compile(r"[0-9]+")  # ASCII digits alone: str.isdigit takes "²", which int() refuses


class Secrets:
    """What one start of the console hands out: the address token, the session and the CSRF token."""

    def __init__(self):
        self.token = secrets.token_urlsafe(24)
        self.session = secrets.token_urlsafe(32)
        self.csrf = secrets.token_urlsafe(24)


def _plain(status: int, message: str, headers: dict | None = None):
    from starlette.responses import Response

    body = json.dumps({"error": "refused" if status != 401 else "unauthorized", "message": message}) + "\n"
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class Door:
    """ASGI middleware: the console's own address, the token for the cookie, the cookie, the
    methods, and for the one write its Origin, JSON and CSRF token; security headers on every answer."""

    def __init__(self, app, port: int, keys: Secrets):
        self.app = app
        self.secrets = keys
        self.cookie = f"{COOKIE}_{port}"
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
        self.origins = {"http://" + host for host in self.hosts}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def sending(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        refusal = self._refusal(scope)
        if refusal is not None:
            return await refusal(scope, receive, sending)
        return await self.app(scope, receive, sending)

    def _refusal(self, scope):
        """The answer that turns the request away, or None to let it through."""
        from starlette.responses import RedirectResponse

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if headers.get("host") not in self.hosts:
            return _plain(403, "this console answers only at the loopback address kg console printed")
        method, path = scope["method"], scope["path"]
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        token = next((v for k, v in query if k == "token"), None)
        if token is not None:
            if method not in ("GET", "HEAD"):
                return _plain(
                    405, "the address kg console printed is opened (GET), not sent to", {"Allow": "GET, HEAD"}
                )
            if not _same(token, self.secrets.token):
                return _plain(401, "this is not the token kg console printed at its start")
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            # the path alone, on this site: "//host/..." would send the browser to another host
            here = "/" + path.lstrip("/")
            answer = RedirectResponse(here + ("?" + rest if rest else ""), status_code=303)
            answer.set_cookie(self.cookie, self.secrets.session, httponly=True, samesite="strict", path="/")
            return answer
        if not _same(_cookie(headers.get("cookie", ""), self.cookie), self.secrets.session):
            return _plain(401, "no console session: open the address kg console printed (it holds the token)")
        if path == DECIDE and method == "POST":
            if headers.get("origin") not in self.origins:
                return _plain(403, "a decision comes from the console's own page (its Origin), not from elsewhere")
            if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
                return _plain(415, "a decision is sent as JSON (Content-Type: application/json)")
            if not _same(headers.get(CSRF_HEADER), self.secrets.csrf):
                return _plain(403, "a decision carries the page's CSRF token (X-KG-CSRF); reload the page")
            return None
        if method not in ("GET", "HEAD"):
            allow = "POST" if path == DECIDE else "GET, HEAD"
            return _plain(405, f"{method} is not answered here: the console only reads", {"Allow": allow})
        return None


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


MAX_DECISION = 256 * 1024  # bytes of a decision's body: the ids of a batch's 40 facts take 1 KiB


def _json(data: dict, status: int = 200):
    from starlette.responses import Response

    text = json.dumps(data, ensure_ascii=False) + "\n"  # (a lone surrogate it echoes is written as its JSON escape)
    return Response(text.encode("utf-8", "backslashreplace"), status_code=status, media_type="application/json")


def _error(exc: KgError):
    return _json(exc.as_json(), STATUS.get(exc.kind, 409))


def app(kb_path: Path, port: int, keys: Secrets, perspective: str | None = None, resident=None):
    """The ASGI application of the console of the knowledge base at ``kb_path``, listening on
    ``port`` (the Host and Origin it accepts name it). With ``resident`` (kgrdf.resident.Resident),
    the index stays open between requests, as kg serve keeps it, and is given up when the
    application shuts down."""
    import contextlib

    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import HTMLResponse, Response
    from starlette.routing import Route

    from kgrdf import batch, inputs

    pages = Pages(kb_path, Keys(), resident, perspective)
    shell = (STATIC / "shell.html").read_text(encoding="utf-8").replace("{{csrf}}", keys.csrf)
    turn = threading.Lock()  # the console's decisions go in one at a time, in order

    def view_of(request) -> View:
        found = View.of(inputs.once(request.query_params.multi_items()))
        return found if found.perspective or not perspective else dataclasses.replace(found, perspective=perspective)

    def answered(build):
        def endpoint(request):
            try:
                return _json(build(request, view_of(request)))
            except KgError as exc:
                return _error(exc)
            except Exception as exc:  # an error kgrdf did not expect: one line, as the CLI reports it
                return _error(errors.of(exc))

        return endpoint

    def page(request):
        return HTMLResponse(shell)

    def asset(request):
        name = request.path_params["name"]
        if name not in ASSETS:
            return _error(NotFound(f"there is no asset {name}"))
        return Response((STATIC / name).read_bytes(), media_type=ASSETS[name])

    def entity(request, view):
        return pages.entity(view, request.path_params["key"])

    def fact(request, view):
        return pages.fact(view, request.path_params["fact"])

    def constellation(request, view):
        from kgrdf.briefing import MAX_STARS

        stars = request.query_params.get("stars", "150")
        if not DIGITS.fullmatch(stars):
            raise BadInput(f"stars is a whole number, not {stars[:40]!r}")
        if len(stars.lstrip("0")) > len(str(MAX_STARS)):  # (int() refuses a number of thousands of digits)
            raise BadInput(f"stars is a number from 1 to {MAX_STARS}")
        return pages.constellation(view, int(stars.lstrip("0") or "0"))  # (int() counts leading zeros to its limit)

    def raw(request, view):
        params = request.query_params
        return pages.raw(view, params.get("axis") or None, params.get("type") or None, params.get("q", ""))

    def search(request, view):
        return pages.search(view, request.query_params.get("q", ""))

    async def decide(request):
        from starlette.concurrency import run_in_threadpool

        if int(request.headers.get("content-length") or 0) > MAX_DECISION:
            return _error(BadInput(f"a decision is at most {MAX_DECISION // 1024} KiB"))
        sent = b""
        async for chunk in request.stream():  # (one sent in chunks is read no further than the bound)
            sent += chunk
            if len(sent) > MAX_DECISION:
                return _error(BadInput(f"a decision is at most {MAX_DECISION // 1024} KiB"))
        try:
            body = json.loads(sent or b"null")
        except (ValueError, RecursionError):  # (a body nested past Python's recursion limit)
            return _error(BadInput("the body is not JSON"))
        if not isinstance(body, dict) or set(body) - {"facts", "decision"}:
            return _error(BadInput('the body is {"facts": [FACT_ID, ...], "decision": "confirm|reject|defer"}'))
        try:
            view = view_of(request)
        except KgError as exc:
            return _error(exc)
        if view.audience:
            return _error(BadInput("decisions are the owner's: stop showing as " + view.audience))

        def run():
            with turn:
                decided = batch.decide(pages.kb(view), body.get("facts"), body.get("decision"), "console")
                if resident is not None:
                    resident.commit_owed()  # a decision is in the git history when the page hears of it
                return decided

        try:
            return _json(await run_in_threadpool(run))
        except KgError as exc:
            return _error(await run_in_threadpool(pages.refusal, exc, view))
        except Exception as exc:  # an error kgrdf did not expect: one line, as the CLI reports it
            return _error(errors.of(exc))

    get = ["GET", "HEAD"]
    routes = [
        Route("/", page, methods=get),
        Route("/index.json", answered(lambda r, v: pages.home(v)), methods=get),
        Route("/constellation", page, methods=get),
        Route("/constellation.json", answered(constellation), methods=get),
        Route("/raw", page, methods=get),
        Route("/raw.json", answered(raw), methods=get),
        Route("/review", page, methods=get),
        Route("/review.json", answered(lambda r, v: pages.review(v)), methods=get),
        Route(DECIDE, decide, methods=["POST"]),
        Route("/search", page, methods=get),
        Route("/search.json", answered(search), methods=get),
        Route("/e/{key}.json", answered(entity), methods=get),
        Route("/e/{key}", page, methods=get),
        Route("/f/{fact}.json", answered(fact), methods=get),
        Route("/f/{fact}", page, methods=get),
        Route("/static/{name}", asset, methods=get),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        if resident is not None:
            pages.warming()
            warming = threading.Thread(target=_warm, args=(pages, perspective), daemon=True, name="kgrdf-console-warm")
            warming.start()
        try:
            yield
        finally:
            if resident is not None:
                resident.stop()

    return Starlette(
        routes=routes,
        middleware=[Middleware(Door, port=port, keys=keys)],
        exception_handlers={404: _no_page, 405: _no_method},
        lifespan=lifespan,
    )


def _no_page(request, exc):
    """An address the console has no page at, answered in its JSON error shape."""
    return _error(NotFound(f"there is no page {request.url.path[:200]}", hint="the pages are linked from /"))


def _no_method(request, exc):
    """A method a page does not answer, as the door answers one (405, its Allow kept)."""
    allow = (exc.headers or {}).get("Allow", "GET, HEAD")
    return _plain(405, f"{request.method} is not answered at {request.url.path[:200]}", {"Allow": allow})


def _warm(pages: Pages, perspective: str | None) -> None:
    """The console's start: its caches brought up to the index while the first page is asked for."""
    import sys

    try:
        pages.warm(perspective)
    except Exception as exc:  # derived: the first page that needs them makes them again
        problem = errors.of(exc).message
        print(f"kg: the console's caches were not made ({problem}); the first Briefing makes them", file=sys.stderr)


def run(kb_path: Path, port: int, perspective: str | None, open_browser: bool, announce) -> None:
    """Serve the console on loopback until stopped; ``announce(url)`` is told the address with its token."""
    import socket

    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        listener.close()
        raise BadInput(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", hint="--port chooses another port"
        ) from None
    port = listener.getsockname()[1]
    keys = Secrets()
    url = f"http://127.0.0.1:{port}/?token={keys.token}"
    from kgrdf.resident import Resident

    resident = Resident(kb_path)
    resident.listen()
    served = app(kb_path, port, keys, perspective, resident)
    server = uvicorn.Server(uvicorn.Config(served, log_level="warning"))
    announce(url)
    if open_browser:
        import webbrowser

        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    server.run(sockets=[listener])
