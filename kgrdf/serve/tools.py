"""The MCP tools and resources: explicit verbs, each a thin call into :class:`Service`.

Each tool is described for a model to use well: what it answers, when to reach for it, and what its
arguments look like. Every answer is the document ``kg ... --json`` prints; every list is paged
(``limit``, ``cursor``; ``next_cursor`` while more are left). An expected failure comes back as a
tool error carrying the CLI's one-line reason and its way out.

The caller is fixed outside the call: over HTTP by the bearer token of the request, over stdio by
``kg mcp``'s command line. No argument names a perspective, an audience or a speaker.
"""

import json
from collections import Counter
from typing import Annotated, Any

from pydantic import Field

from kgrdf import __version__
from kgrdf.errors import KgError
from kgrdf.serve.service import Caller, Service
from kgrdf.session import MAX_HOPS

INSTRUCTIONS = (
    "kgrdf is the organization's memory of working facts (people, processes, products, "
    "organizations), each with its sources and a status a person confirms. Before answering "
    "about the organization, call context (for an entity, or for the user's message) or lookup; "
    "cite the fact ids you use, and after replying call record_disclosure with them. Use mentions to "
    "find the known names in a message first. What you see is what your token's audience may hear: "
    "never assume more exists."
)

Limit = Annotated[int | None, Field(description="How many items a page holds (1-500; default 50).")]
Cursor = Annotated[str | None, Field(description="The next_cursor of the page before, to read on.")]
EntityArg = Annotated[str, Field(description="An entity id (repo/web-app), name or alias.")]
FactArg = Annotated[str, Field(description="A fact id, e.g. f-3k9x2a.")]
Sources = Annotated[
    list[str] | None,
    Field(description="Where it came from, each KIND:REF, e.g. slack:https://chat.example/p7 or pr:owner/repo#12."),
]
Quote = Annotated[str, Field(description="The user's own words, as they wrote them (8 characters or more).")]
Transcript = Annotated[str, Field(description="The path of this session's transcript (JSON lines).")]


def _caller_of(ctx, fixed: Caller | None) -> Caller:
    """The caller of this call: the fixed one (stdio), else the one the HTTP guard found for the
    request's token (kgrdf.serve.http.Guard puts it in the request's scope)."""
    from mcp.server.mcpserver.exceptions import ToolError

    if fixed is not None:
        return fixed
    request = getattr(ctx.request_context, "request", None)
    caller = (getattr(request, "scope", None) or {}).get("state", {}).get("caller")
    if caller is None:
        raise ToolError("this call carries no known token")
    return caller


async def _run(ctx, fixed, failure, call, *args, **kwargs) -> Any:
    """Run a blocking library call off the event loop; a KgError becomes the error ``failure(exc,
    reason)`` makes (a tool's or a resource's) with the CLI's one-line reason."""
    import anyio

    caller = _caller_of(ctx, fixed)
    try:
        return await anyio.to_thread.run_sync(lambda: call(caller, *args, **kwargs))
    except KgError as exc:
        raise failure(exc, exc.message + (f" ({exc.hint})" if exc.hint else "")) from None


class _Unanswered:
    """The ids of the requests kg mcp read and has not answered yet; ``none_left`` is set while
    there are none. A request the client cancels (notifications/cancelled) gets no answer."""

    def __init__(self):
        import anyio

        self.ids: Counter = Counter()  # (a client may give two requests one id: each is answered)
        self.none_left = anyio.Event()
        self.none_left.set()

    def read(self, message) -> None:
        from mcp import types

        message = getattr(message, "root", message)  # (a JSONRPCMessage wraps one in older SDKs)

        if isinstance(message, types.JSONRPCRequest):
            self.ids[message.id] += 1
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            self._done((message.params or {}).get("requestId"))
        self._changed()

    def answered(self, message) -> None:
        from mcp import types

        message = getattr(message, "root", message)  # (a JSONRPCMessage wraps one in older SDKs)

        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._done(message.id)
            self._changed()

    def _done(self, request_id) -> None:
        if self.ids[request_id] > 1:
            self.ids[request_id] -= 1
        else:
            self.ids.pop(request_id, None)

    def _changed(self) -> None:
        import anyio

        if not self.ids:
            self.none_left.set()
        elif self.none_left.is_set():  # (an event is never unset: a new one)
            self.none_left = anyio.Event()


def _unread(problem: Exception):
    """The JSON-RPC error answering a line of kg mcp's input that is no message: not JSON of
    Unicode text (-32700, a parse error), or JSON that is no request, notification or response
    (-32600, an invalid request). It answers the line's id where the line has one to read."""
    import mcp_types as types

    errors = problem.errors() if hasattr(problem, "errors") else []
    raw = errors[0].get("input") if errors and errors[0].get("type") == "json_invalid" else None
    said = None
    if isinstance(raw, str):
        try:
            said = json.loads(raw)
        except ValueError:
            pass
    if said is None and raw is None:  # JSON, but no message: a missing field's error holds the object
        said = next((e["input"] for e in errors if isinstance(e.get("input"), dict)), None)
    known = said.get("id") if isinstance(said, dict) else None
    known = known if isinstance(known, str) or (isinstance(known, int) and not isinstance(known, bool)) else None
    if said is None and raw is not None:
        error = types.ErrorData(code=types.PARSE_ERROR, message="Parse error: the line is not JSON")
    elif raw is not None:
        error = types.ErrorData(code=types.PARSE_ERROR, message="Parse error: the line is not Unicode text")
    else:
        error = types.ErrorData(
            code=types.INVALID_REQUEST,
            message='Invalid request: the line is no JSON-RPC 2.0 message (one object, "jsonrpc": "2.0")',
        )
    return types.JSONRPCError(jsonrpc="2.0", id=known, error=error)


def _answer(document: dict):
    """A tool's answer: the document as structured content, and as compact JSON text for a model
    to read (the SDK's own rendering indents it, and validates and copies it twice more: a tenth of
    a call's time, and a third more text for the model)."""
    from mcp.types import CallToolResult, TextContent

    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=document)


def server(service: Service, fixed: Caller | None):
    """The MCP server over ``service``: for the caller ``fixed`` (stdio), or for each HTTP request's
    token (as the HTTP guard resolved it)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

    from kgrdf.errors import BadInput, NotFound
    from kgrdf.serve import arguments

    class Checked(MCPServer):
        """Each call's arguments checked against its tool's schema first (kgrdf.serve.arguments):
        an argument a tool does not take, or of another kind, is refused in one line, as the API
        and the CLI refuse it, not left out or coerced."""

        schemas: dict[str, dict] = {}

        async def call_tool(self, name, arguments_given, context=None):
            if not self.schemas:
                self.schemas.update({tool.name: tool.input_schema for tool in await self.list_tools()})
            if name in self.schemas:
                try:
                    arguments.check(arguments_given, self.schemas[name])
                except KgError as exc:
                    raise ToolError(f"Error executing tool {name}: {exc.message}") from None
            return await super().call_tool(name, arguments_given, context)

        async def run_stdio_async(self) -> None:
            """As the SDK's, but a line that is no JSON-RPC message is answered (the SDK passed over
            it, and the client waited for an answer for ever): see :func:`_unread`; and the input
            ending (a client that writes its requests and closes) ends kg mcp once every request
            read is answered: the SDK cancelled those still running, a write among them made and
            never answered, and exited 0."""
            import anyio
            from mcp.server.stdio import stdio_server
            from mcp.shared.message import SessionMessage

            async with stdio_server() as (lines, answers):
                read, received = anyio.create_memory_object_stream(0)
                told, answered = anyio.create_memory_object_stream(0)
                open_ids = _Unanswered()

                async def sift():
                    async with read:
                        async for item in lines:
                            if isinstance(item, Exception):
                                await answers.send(SessionMessage(_unread(item)))
                            else:
                                open_ids.read(item.message)
                                await read.send(item)
                        await open_ids.none_left.wait()

                async def answer():
                    async with answered:
                        async for item in answered:
                            await answers.send(item)
                            open_ids.answered(item.message)

                async with anyio.create_task_group() as group:
                    group.start_soon(sift)
                    group.start_soon(answer)
                    low = self._lowlevel_server
                    await low.run(received, told, low.create_initialization_options())
                    group.cancel_scope.cancel()  # every request answered (the SDK keeps a copy of told open)
                await answers.aclose()  # (which ends the SDK's writer of the output)

    mcp = Checked("kgrdf", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    async def run(ctx, call, *args, **kwargs):
        # rendered in the worker thread that made the document, not on the event loop after it
        failed = lambda _exc, reason: ToolError(reason)  # noqa: E731
        return await _run(ctx, fixed, failed, lambda *a, **k: _answer(call(*a, **k)), *args, **kwargs)

    def unread(exc, reason):
        """A resource not there, or asked for wrongly, is the client's error (invalid params), not
        the server's (internal error): only the rest is."""
        return ResourceNotFoundError(reason) if isinstance(exc, NotFound | BadInput) else ResourceError(reason)

    def read(ctx, call, *args, **kwargs):
        return _run(ctx, fixed, unread, call, *args, **kwargs)

    @mcp.tool()
    async def lookup(entity: EntityArg, ctx: Context, limit: Limit = None, cursor: Cursor = None) -> dict[str, Any]:
        """An entity and its current facts, each with its id, status and sources, and the facts that
        point to it (both paged: a page holds the same places of each). Reach for it when a question
        names one thing."""
        return await run(ctx, service.lookup, entity, limit=limit, cursor=cursor)

    @mcp.tool()
    async def search(
        text: Annotated[str, Field(description="A part of an id, name or alias; case is ignored.")],
        ctx: Context,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Entities whose id, name, alias or weak alias contains the text, exact matches first."""
        return await run(ctx, service.search, text, limit=limit, cursor=cursor)

    @mcp.tool()
    async def identify(
        name: Annotated[str, Field(description="A name as someone said it.")], ctx: Context
    ) -> dict[str, Any]:
        """Which entity a name means: matches by id, name or strong alias; weak aliases only suggest.
        More than one match means the name is ambiguous: ask which one."""
        return await run(ctx, service.identify, name)

    @mcp.tool()
    async def facts(
        subject: EntityArg,
        ctx: Context,
        predicate: Annotated[str | None, Field(description="Only this predicate (e.g. reviews).")] = None,
        as_of: Annotated[str | None, Field(description="What was true then (YYYY-MM-DD or ISO time).")] = None,
        known_at: Annotated[str | None, Field(description="What the knowledge base held then.")] = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Facts about a subject: current by default; as_of for what was true at a time, known_at for
        what was known at a time (they combine)."""
        return await run(ctx, service.facts, subject, predicate, as_of, known_at, limit=limit, cursor=cursor)

    @mcp.tool()
    async def neighbors(
        entity: EntityArg,
        ctx: Context,
        hops: Annotated[int, Field(description=f"How many facts away (1-{MAX_HOPS}).")] = 1,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """The entities within some current facts of an entity, and the facts that link them."""
        return await run(ctx, service.neighbors, entity, hops, limit=limit, cursor=cursor)

    @mcp.tool()
    async def history(
        fact: Annotated[str, Field(description="A fact id, e.g. f-3k9x2a.")], ctx: Context
    ) -> dict[str, Any]:
        """A fact and every change to it (proposed, observed again, confirmed, superseded ...)."""
        return await run(ctx, service.history, fact)

    @mcp.tool()
    async def mentions(
        text: Annotated[str, Field(description="The message, as the user wrote it.")],
        ctx: Context,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """The known names and aliases a message mentions (whole words, any case), with offsets: the
        cheap first step before reading anything out of it."""
        return await run(ctx, service.mentions, text, limit=limit, cursor=cursor)

    @mcp.tool()
    async def context(
        ctx: Context,
        entity: Annotated[str | None, Field(description="A repo, process or topic to brief on.")] = None,
        message: Annotated[str | None, Field(description="Or: a message, briefed on what it mentions.")] = None,
        budget: Annotated[int | None, Field(description="At most this many tokens (default 1500).")] = None,
    ) -> dict[str, Any]:
        """A small cited pack for a task: current, confirmed facts about an entity or topic (or about
        what a message mentions) and its close neighbourhood, what prevents rework first, cut to the
        token budget. Give exactly one of entity and message."""
        return await run(ctx, service.context, entity, message, budget)

    @mcp.tool()
    async def batch(ctx: Context, limit: Limit = None, cursor: Cursor = None) -> dict[str, Any]:
        """Today's review batch, read only: the proposals a person will confirm or reject, grouped
        by what they are about. Show it; never answer it for the person."""
        return await run(ctx, service.batch, limit=limit, cursor=cursor)

    @mcp.tool()
    async def propose(
        subject: EntityArg,
        predicate: Annotated[str, Field(description="A predicate of the schema, e.g. reviews, caveat, owns.")],
        ctx: Context,
        object: Annotated[str | None, Field(description="The object entity (id, name or alias).")] = None,
        value: Annotated[str | None, Field(description="Or: the value (text, or a date).")] = None,
        sources: Sources = None,
        authority: Annotated[str, Field(description="stakeholder, observed or inferred.")] = "observed",
        valid_from: Annotated[str | None, Field(description="When it became true (YYYY-MM-DD).")] = None,
        valid_to: Annotated[str | None, Field(description="When it stopped being true.")] = None,
        order: Annotated[int | None, Field(description="Place in a sequence, for has_step.")] = None,
        prevents_rework: Annotated[bool, Field(description="Not knowing it once caused rework.")] = False,
        reason: Annotated[str | None, Field(description="Why, in a few words.")] = None,
        message: Annotated[str | None, Field(description="The message it was said in (a link or id).")] = None,
        extracted: Annotated[bool, Field(description="You read it out of text: it stays a proposal.")] = False,
        confidence: Annotated[float | None, Field(description="Your confidence, 0 to 1 (extracted).")] = None,
        span: Annotated[str | None, Field(description="The words it was read from (extracted).")] = None,
    ) -> dict[str, Any]:
        """Propose a fact, with its sources. It stays a proposal for the daily batch unless an
        auto-confirm rule applies (two trusted source kinds for a low-risk fact naming no person; a
        profile source for a title or timezone); the answer gives its id, status and why. Proposing
        a known fact again observes it again. The speaker and the audience are your token's."""
        return await run(
            ctx,
            service.propose,
            subject,
            predicate,
            object=object,
            value=value,
            sources=sources,
            authority=authority,
            valid_from=valid_from,
            valid_to=valid_to,
            order=order,
            prevents_rework=prevents_rework,
            reason=reason,
            message=message,
            extracted=extracted,
            confidence=confidence,
            span=span,
        )

    @mcp.tool()
    async def propose_from_user(
        subject: EntityArg,
        predicate: Annotated[str, Field(description="A predicate of the schema, e.g. posts_to, rule.")],
        quote: Quote,
        transcript: Transcript,
        ctx: Context,
        object: Annotated[str | None, Field(description="The object entity (id, name or alias).")] = None,
        value: Annotated[str | None, Field(description="Or: the value.")] = None,
        sources: Sources = None,
        reason: Annotated[str | None, Field(description="Why, in a few words.")] = None,
    ) -> dict[str, Any]:
        """A fact the user stated, in their own words: confirmed when the quote is found in a
        genuine user prompt of the session's transcript, else a proposal that says why."""
        return await run(
            ctx,
            service.propose_from_user,
            subject,
            predicate,
            quote,
            transcript,
            object=object,
            value=value,
            sources=sources,
            reason=reason,
        )

    @mcp.tool()
    async def confirm(fact: FactArg, quote: Quote, transcript: Transcript, ctx: Context) -> dict[str, Any]:
        """Confirm a fact because the user said so: only with their words, found in a user prompt of
        the session's transcript, and only a fact you can read."""
        return await run(ctx, service.confirm, fact, quote, transcript)

    @mcp.tool()
    async def reject(fact: FactArg, quote: Quote, transcript: Transcript, ctx: Context) -> dict[str, Any]:
        """Reject a fact because the user said it is wrong: only with their words, found in a user
        prompt of the session's transcript, and only a fact you can read. It leaves current reads and
        stays rejected."""
        return await run(ctx, service.reject, fact, quote, transcript)

    @mcp.tool()
    async def org_add(
        name: Annotated[str, Field(description="The organization's name, e.g. Texture.")],
        ctx: Context,
        aliases: Annotated[list[str] | None, Field(description="Other names: a short name, a domain.")] = None,
    ) -> dict[str, Any]:
        """Add an organization we deal with, or add aliases to one."""
        return await run(ctx, service.org_add, name, aliases)

    @mcp.tool()
    async def org_set(
        org: Annotated[str, Field(description="The organization (id, name or alias).")],
        key: Annotated[str, Field(description="founded, industry, relationship, ... or any other key.")],
        value: Annotated[str, Field(description="The attribute's value.")],
        ctx: Context,
        sources: Sources = None,
        message: Annotated[str | None, Field(description="The message it was said in.")] = None,
    ) -> dict[str, Any]:
        """Propose an attribute of an organization (a fact with a value, heard in your audience)."""
        return await run(ctx, service.org_set, org, key, value, sources, message)

    @mcp.tool()
    async def org_affiliate(
        org: Annotated[str, Field(description="The organization (id, name or alias).")],
        claimed_name: Annotated[str, Field(description="The person's name as it was said, e.g. Jim.")],
        ctx: Context,
        role: Annotated[str | None, Field(description="Their role as it was said, e.g. IT.")] = None,
        sources: Sources = None,
        message: Annotated[str | None, Field(description="The message it was said in.")] = None,
    ) -> dict[str, Any]:
        """Record that someone said a person by this name works at an organization ("check with Jim,
        he's our IT guy"): an unverified claim; no actor is made."""
        return await run(ctx, service.org_affiliate, org, claimed_name, role, sources, message)

    @mcp.tool()
    async def record_disclosure(
        message: Annotated[str, Field(description="Your reply that used the facts: its permalink or id.")],
        audience: Annotated[
            str, Field(description="Who your reply went to: your token's audience (public, channel:C, dm:A,B ...).")
        ],
        facts: Annotated[list[str], Field(description='The ids of every fact your reply used, e.g. ["f-3k9x2a"].')],
        ctx: Context,
    ) -> dict[str, Any]:
        """Call this after replying with facts from kgrdf: record which fact ids your reply used, in
        which message, to which audience, so that who was told what can be traced later. A fact that
        audience may not hear is refused and nothing is recorded; so is an audience other than your
        token's (unless it is the owner's)."""
        return await run(ctx, service.record_disclosure, message, audience, facts)

    @mcp.tool()
    async def disclosures(fact: FactArg, ctx: Context) -> dict[str, Any]:
        """Who was told a fact: each recorded disclosure's audience, message, time and who recorded it."""
        return await run(ctx, service.disclosures, fact)

    @mcp.tool()
    async def told(
        audience: Annotated[str, Field(description="The audience told, e.g. channel:sales.")],
        ctx: Context,
        since: Annotated[str | None, Field(description="Only what was told from then on (YYYY-MM-DD).")] = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """What an audience was told, newest first: each fact, the message it was told in, when and by
        whom. Check it before telling the same audience something again."""
        return await run(ctx, service.told, audience, since, limit=limit, cursor=cursor)

    @mcp.resource("kgrdf://entity/{kind}/{name}", mime_type="application/json")
    async def entity_resource(kind: str, name: str, ctx: Context) -> str:
        """An entity and its current facts (the lookup document), e.g. kgrdf://entity/repo/web-app."""
        return json.dumps(await read(ctx, service.lookup, f"{kind}/{name}", limit=500))

    @mcp.resource("kgrdf://context/{kind}/{name}", mime_type="application/json")
    async def context_resource(kind: str, name: str, ctx: Context) -> str:
        """The context pack for an entity (the context document), e.g. kgrdf://context/repo/web-app."""
        return json.dumps(await read(ctx, service.context, f"{kind}/{name}", None, None))

    return mcp
