"""The MCP tools and resources: explicit verbs, each a thin call into :class:`Service`.

Each tool is described for a model to use well: what it answers, when to reach for it, and what its
arguments look like. Every answer is the document ``kg ... --json`` prints; every list is paged
(``limit``, ``cursor``; ``next_cursor`` while more are left). An expected failure comes back as a
tool error carrying the CLI's one-line reason and its way out.

The caller is fixed outside the call: over HTTP by the bearer token of the request, over stdio by
``kg mcp``'s command line. No argument names a perspective, an audience or a speaker.
"""

from typing import Annotated, Any

from pydantic import Field

from kgrdf.errors import KgError
from kgrdf.serve.service import Caller, Service

INSTRUCTIONS = (
    "kgrdf is the organization's memory of working facts (people, processes, products, "
    "organizations), each with its sources and a status a person confirms. Before answering "
    "about the organization, call context (for an entity, or for the user's message) or lookup; "
    "cite the fact ids you use. Use mentions to find the known names in a message first. What you "
    "see is what your token's audience may hear: never assume more exists."
)

Limit = Annotated[int | None, Field(description="How many items a page holds (1-500; default 50).")]
Cursor = Annotated[str | None, Field(description="The next_cursor of the page before, to read on.")]
EntityArg = Annotated[str, Field(description="An entity id (repo/web-app), name or alias.")]


def _caller_of(ctx, fixed: Caller | None, cache) -> Caller:
    """The caller of this call: the fixed one (stdio), else the request's token (HTTP)."""
    from mcp.server.mcpserver.exceptions import ToolError

    if fixed is not None:
        return fixed
    headers = getattr(ctx, "headers", None) or {}
    caller = cache.caller(headers.get("authorization")) if cache is not None else None
    if caller is None:
        raise ToolError("this call carries no known token")
    return caller


async def _run(ctx, fixed, cache, failure, call, *args, **kwargs) -> Any:
    """Run a blocking library call off the event loop; a KgError becomes ``failure`` (a tool's or a
    resource's error) with the CLI's one-line reason."""
    import anyio

    caller = _caller_of(ctx, fixed, cache)
    try:
        return await anyio.to_thread.run_sync(lambda: call(caller, *args, **kwargs))
    except KgError as exc:
        raise failure(exc.message + (f" ({exc.hint})" if exc.hint else "")) from None


def server(service: Service, fixed: Caller | None, cache=None):
    """The MCP server over ``service``: for the caller ``fixed`` (stdio), or for each HTTP request's
    token (``cache`` resolves it)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError

    mcp = MCPServer("kgrdf", instructions=INSTRUCTIONS, log_level="WARNING")

    def run(ctx, call, *args, **kwargs):
        return _run(ctx, fixed, cache, ToolError, call, *args, **kwargs)

    def read(ctx, call, *args, **kwargs):
        return _run(ctx, fixed, cache, ResourceError, call, *args, **kwargs)

    @mcp.tool()
    async def lookup(entity: EntityArg, ctx: Context, limit: Limit = None, cursor: Cursor = None) -> dict[str, Any]:
        """An entity and its current facts, each with its id, status and sources, and the facts that
        point to it. Reach for it when a question names one thing."""
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
        hops: Annotated[int, Field(description="How many facts away (1-3).")] = 1,
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

    @mcp.resource("kgrdf://entity/{kind}/{name}", mime_type="application/json")
    async def entity_resource(kind: str, name: str, ctx: Context) -> str:
        """An entity and its current facts (the lookup document), e.g. kgrdf://entity/repo/web-app."""
        import json

        return json.dumps(await read(ctx, service.lookup, f"{kind}/{name}", limit=500))

    @mcp.resource("kgrdf://context/{kind}/{name}", mime_type="application/json")
    async def context_resource(kind: str, name: str, ctx: Context) -> str:
        """The context pack for an entity (the context document), e.g. kgrdf://context/repo/web-app."""
        import json

        return json.dumps(await read(ctx, service.context, f"{kind}/{name}", None, None))

    return mcp
