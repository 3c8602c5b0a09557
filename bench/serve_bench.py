"""Benchmark: kg serve, beside the native query and the cold CLI, measured side by side in one run.

    python bench/serve_bench.py                       # 1k, 10k and 100k facts
    python bench/serve_bench.py --sizes 1000 --writes 50

For each size it generates a knowledge base (bench/generate.py), makes a token that may write, starts
`kg serve` on a free loopback port, and measures, each --calls times (p50 and p95):

- MCP over streamable HTTP with the official client (one session): `lookup` and `context`, then
  `propose` (the reads first: a read just after a write pays for its commit beside it, which the
  native reads are not asked to); and `lookup` and `context` as one plain JSON-RPC POST each
  ("raw": the server's own cost, without the client's), before the proposals;
- the JSON API's `GET /api/lookup` and `/api/context` over one kept-alive connection, and the HTTP
  floor: a request answered 401 before any work, the round trip every read through the server pays;
- the MCP floor: a tool call refused before any work (batch, for a token of an audience), what every
  MCP call pays for the protocol and the SDK on both sides;
- `/sparql` with two queries (SPARQL JSON back): one about a single entity, where the cost is the
  server's own, and one over every fact; each beside the same query on pyoxigraph in this process
  on the same index (native: what the engine alone takes); and the single-entity query for a token
  of channel:sales, whose dataset the server makes whole at its first query and then follows write
  by write (its first query, the next ones, and the first after each of ten writes);
- the same dataset kept by the CLI (`kg sparql --audience channel:sales`, in a fresh process, after
  the server stops): made whole, kept, and followed after an import of IMPORTED facts (a third of
  them heard in channel:sales), which is to cost the import, not the knowledge base;
- `lookup` and `context` as pyoxigraph alone runs their named queries in this process (native, the
  floor of bench/run.py), and `kg lookup` and `kg sparql` in a fresh process (the cold CLI);
- four clients making --writes proposals each at once through `POST /api/propose`: the throughput,
  the p95 of one write, and whether all landed (the facts counted afterwards).

Targets (issue 14): a validated write through the server at most 0.1 s at 100k facts; a read through
the server at most twice the native query, HTTP included. The machine is shared and noisy: read the
ratios, which hold better than absolute times.
"""

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import threading
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

import measure  # noqa: E402
from generate import generate  # noqa: E402
from run import floor_runner  # noqa: E402
from serving import Server, settled  # noqa: E402

ENTITY = "repo/rep-000001"
QUERIES = {
    "one entity": f"SELECT ?p ?o WHERE {{ GRAPH ?g {{ <https://kgrdf.org/kb/main/{ENTITY}> ?p ?o }} }}",
    "every fact": "SELECT ?p (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?p",
}
CLIENTS = 4


def quantiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def mcp_times(url: str, path: Path, secret: str, calls: int) -> dict:
    """p50/p95 of MCP lookup, context and propose over one streamable HTTP session."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        http = httpx2.AsyncClient(headers={"Authorization": "Bearer " + secret}, timeout=120)
        out = {"lookup": [], "context": [], "propose": []}
        async with Client(streamable_http_client(url + "/mcp", http_client=http)) as client:
            for calls_of in (
                lambda n: (("lookup", {"entity": ENTITY}), ("context", {"entity": ENTITY})),
                lambda n: (
                    (
                        "propose",
                        {"subject": ENTITY, "predicate": "caveat", "value": f"bench mcp {n}", "sources": ["slack:b"]},
                    ),
                ),
            ):
                for n in range(calls):
                    for name, args in calls_of(n):
                        start = time.perf_counter()
                        result = await client.call_tool(name, args)
                        out[name].append(time.perf_counter() - start)
                        if result.is_error:
                            raise RuntimeError(f"{name}: {result.content[0].text}")
        return out

    raw = mcp_raw_times(url, secret, calls)  # before the proposals, which add facts to the entity read
    times = asyncio.run(main())
    settled(path)  # the proposals' commit is made before the next reads are timed
    return {name: quantiles(each) for name, each in {**times, **raw}.items()}


def mcp_floor(url: str, secret: str, calls: int) -> dict:
    """The MCP floor: a tool call the server refuses before any work (batch, for a token of an
    audience: the owner's alone), over one session with the official client. What every MCP call
    pays for the protocol and the SDK on both sides, as the HTTP floor is what every request pays."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        http = httpx2.AsyncClient(headers={"Authorization": "Bearer " + secret}, timeout=120)
        times = []
        async with Client(streamable_http_client(url + "/mcp", http_client=http)) as client:
            for _ in range(calls):
                start = time.perf_counter()
                result = await client.call_tool("batch", {})
                times.append(time.perf_counter() - start)
                if not result.is_error:
                    raise RuntimeError("batch answered a token of an audience")
        return times

    return {"mcp floor": quantiles(asyncio.run(main()))}


def mcp_raw_times(url: str, secret: str, calls: int) -> dict:
    """MCP lookup and context as one JSON-RPC POST each (the server stateless: no session), read
    back as JSON: what the server itself costs, without the official client's own work."""
    import httpx2

    headers = {
        "Authorization": "Bearer " + secret,
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    out = {"lookup raw": [], "context raw": []}
    with httpx2.Client(timeout=120) as http:
        for n in range(calls):
            for name in ("lookup", "context"):
                body = {"jsonrpc": "2.0", "id": n, "method": "tools/call"}
                body["params"] = {"name": name, "arguments": {"entity": ENTITY}}
                start = time.perf_counter()
                answer = http.post(url + "/mcp", headers=headers, json=body)
                document = answer.json()
                out[name + " raw"].append(time.perf_counter() - start)
                if answer.status_code != 200 or document["result"].get("isError"):
                    raise RuntimeError(f"{name}: {answer.text[:200]}")
    return out


def sparql_times(server: Server, path: Path, secret: str, calls: int) -> dict:
    """Each query through /sparql beside the same query on pyoxigraph in this process (native)."""
    import pyoxigraph as ox

    out = {}
    for name, query in QUERIES.items():
        served = []
        for _ in range(calls):
            start = time.perf_counter()
            status, _body = server.request("/sparql?" + urllib.parse.urlencode({"query": query}), secret)
            served.append(time.perf_counter() - start)
            if status != 200:
                raise RuntimeError(f"/sparql answered {status}")
        store = ox.Store.read_only(str(path / "index"))

        def native_once(text=query, engine=store) -> None:
            engine.query(text, use_default_graph_as_union=True).serialize(format=ox.QueryResultsFormat.JSON)

        native = [timed(native_once) for _ in range(calls)]
        store = None  # closed before the server writes again
        out[f"/sparql {name}"] = quantiles(served)
        out[f"native {name}"] = quantiles(native)
    return out


def audience_times(server: Server, secret: str, calls: int) -> dict:
    """/sparql about one entity for a token of channel:sales, whose dataset is what that audience may
    hear: the first query (the server makes the dataset whole), the queries after it, and the first
    query after a write (the dataset follows the write). The token is made before the server
    starts: a command run beside the server takes the index from it for a moment (COOL_DOWN in
    kgrdf.resident), and the reads that follow would measure that moment, not the kept path."""
    url = "/sparql?" + urllib.parse.urlencode({"query": QUERIES["one entity"]})

    def ask(may_refuse: bool = False) -> float:
        start = time.perf_counter()
        status, body = server.request(url, secret)
        if status == 409 and may_refuse:  # gathering took the query's time limit: the server keeps it
            print(f"   /sparql for channel:sales, first query: {json.loads(body)['message']}", flush=True)
            return -(time.perf_counter() - start)
        if status != 200:
            raise RuntimeError(f"/sparql answered {status}: {body}")
        return time.perf_counter() - start

    first, waited = 0.0, ask(may_refuse=True)
    while waited < 0:  # asked again until it answers: the time until the first answer
        first -= waited
        waited = ask(may_refuse=True)
    first += waited
    warm = [ask() for _ in range(calls)]
    after = []
    for n in range(min(calls, 10)):
        body = {"subject": ENTITY, "predicate": "caveat", "value": f"bench heard {n}", "sources": ["slack:bench"]}
        status, _doc = server.post("propose", secret, body)
        if status != 200:
            raise RuntimeError(f"/api/propose answered {status}")
        after.append(ask())
    return {
        "/sparql one entity, sales, first": (first, first),
        "/sparql one entity, sales": quantiles(warm),
        "/sparql one entity, sales, after a write": quantiles(after),
    }


def api_times(server: Server, secret: str, calls: int) -> dict:
    """``GET /api/lookup`` and ``/api/context`` over one kept-alive connection, and the HTTP floor: a
    request the server answers 401 before any work (no token), the round trip any read pays."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)

    def get(path: str, token: str | None) -> int:
        connection.request("GET", path, headers={"Authorization": "Bearer " + token} if token else {})
        answer = connection.getresponse()
        answer.read()
        return answer.status

    out = {}
    for name, path, token, status in (
        ("http floor", "/api/lookup?entity=" + ENTITY, None, 401),
        ("/api lookup", "/api/lookup?entity=" + ENTITY, secret, 200),
        ("/api context", "/api/context?entity=" + ENTITY, secret, 200),
    ):
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            got = get(path, token)
            times.append(time.perf_counter() - start)
            if got != status:
                raise RuntimeError(f"{path} answered {got}")
        out[name] = quantiles(times)
    connection.close()
    return out


def native_reads(path: Path, calls: int) -> dict:
    """lookup and context as pyoxigraph alone runs their named queries, in this warm process (the
    floor of bench/run.py), for the MCP tools to be read beside."""
    store, reads = floor_runner(path)
    out = {}
    for name in ("lookup", "context"):
        out[f"native {name}"] = quantiles([timed(lambda run=reads[name]: run(ENTITY)) for _ in range(calls)])
    del store
    return out


def cold_times(path: Path) -> dict:
    return {
        "cold kg lookup": quantiles([measure.run(["lookup", ENTITY, "--kb", str(path)])[0] for _ in range(5)]),
        "cold kg sparql": quantiles(
            [measure.run(["sparql", QUERIES["one entity"], "--kb", str(path)])[0] for _ in range(5)]
        ),
    }


IMPORTED = 600  # facts of the import a kept dataset follows (kept_times)


def kept_times(path: Path, work: Path) -> dict:
    """``kg sparql --audience channel:sales`` in a fresh process: its dataset made whole (none kept),
    kept (the next query), and followed after an import of IMPORTED facts on the entity."""
    shutil.rmtree(path / "cache" / "heard", ignore_errors=True)
    ask = ["sparql", QUERIES["one entity"], "--audience", "channel:sales", "--timeout", "600", "--kb", str(path)]
    whole = measure.run(ask)[0]
    kept = quantiles([measure.run(ask)[0] for _ in range(3)])
    seed = work / "kept-import.jsonl"
    with open(seed, "w", encoding="utf-8") as out:
        for n in range(IMPORTED):
            audience = ("channel:sales", "public", "channel:eng")[n % 3]
            record = {"type": "fact", "subject": ENTITY, "predicate": "caveat", "value": f"bench kept {n}"}
            out.write(json.dumps({**record, "sources": [f"slack:k{n}"], "audience": audience}) + "\n")
    measure.run(["import", str(seed), "--apply", "--kb", str(path)])
    followed = measure.run(ask)[0]
    return {
        "kg sparql sales, made whole": (whole, whole),
        "kg sparql sales, kept": kept,
        f"kg sparql sales, after {IMPORTED} imported": (followed, followed),
    }


def write_load(server: Server, secret: str, writes: int) -> dict:
    """CLIENTS clients making ``writes`` proposals each at once."""
    times, failures = [], []
    lock = threading.Lock()

    def client(worker: int) -> None:
        for n in range(writes):
            body = {
                "subject": ENTITY,
                "predicate": "caveat",
                "value": f"bench load {worker}.{n}",
                "sources": ["slack:l"],
            }
            start = time.perf_counter()
            status, doc = server.post("propose", secret, body)
            with lock:
                times.append(time.perf_counter() - start)
                if status != 200:
                    failures.append(doc)

    threads = [threading.Thread(target=client, args=(w,)) for w in range(CLIENTS)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    return {"writes": len(times), "failed": len(failures), "per_second": len(times) / wall, "p95": quantiles(times)[1]}


def landed(path: Path, writes: int) -> bool:
    """Whether every load write is a fact of the entity now."""
    out = measure.subprocess.run(
        measure.KG + ["facts", ENTITY, "--json", "--kb", str(path)],
        capture_output=True,
        text=True,
        env=measure.environment(),
        check=True,
    )
    values = {f.get("value") for f in json.loads(out.stdout)["facts"]}
    return all(f"bench load {w}.{n}" in values for w in range(CLIENTS) for n in range(writes))


def token(path: Path, name: str = "bench", audience: str = "owner") -> str:
    args = ["tokens", "add", name, "--perspective", "main", "--audience", audience, "--write", "--json"]
    made = measure.subprocess.run(
        measure.KG + args + ["--kb", str(path)], capture_output=True, text=True, env=measure.environment(), check=True
    )
    return json.loads(made.stdout)["secret"]


def measure_size(size: int, work: Path, calls: int, writes: int, made: Path | None = None) -> dict:
    path = work / f"kb-{size}"
    shutil.rmtree(path, ignore_errors=True)
    if made is not None and (made / f"kb-{size}" / "format.json").is_file():
        print(f"\n== {size} facts: copying {made / f'kb-{size}'} ...", flush=True)
        shutil.copytree(made / f"kb-{size}", path, symlinks=True)
        shutil.rmtree(path / "cache" / "heard", ignore_errors=True)  # every audience's set is made here
    else:
        print(f"\n== {size} facts: generating ...", flush=True)
        generate(path, size)
    secret = token(path)
    sales = token(path, "sales", "channel:sales")
    row = {"size": size, **cold_times(path), **native_reads(path, calls)}
    server = Server(path)
    try:
        row.update(api_times(server, secret, calls))
        row.update(mcp_floor(server.url, sales, calls))
        row.update(mcp_times(server.url, path, secret, calls))
        row.update(sparql_times(server, path, secret, calls))
        row.update(audience_times(server, sales, calls))
        row["load"] = write_load(server, secret, writes)
    finally:
        server.stop()
    row["load"]["all landed"] = landed(path, writes)
    row.update(kept_times(path, work))
    shutil.rmtree(path, ignore_errors=True)
    return row


def print_table(rows: list[dict]) -> None:
    print("\n== kg serve, p50 and p95 in ms: MCP over HTTP; /sparql beside the native query; the cold CLI")
    names = ["lookup", "lookup raw", "/api lookup", "native lookup", "context", "context raw", "/api context"]
    names += ["native context", "propose"]
    names += ["http floor", "mcp floor", "cold kg lookup", "cold kg sparql"]
    names += [f"{door} {q}" for q in QUERIES for door in ("/sparql", "native")]
    names += [f"/sparql one entity, sales{when}" for when in (", first", "", ", after a write")]
    names += ["kg sparql sales, made whole", "kg sparql sales, kept", f"kg sparql sales, after {IMPORTED} imported"]
    for row in rows:
        print(f"-- {row['size']} facts")
        for name in names:
            p50, p95 = row[name]
            extra = ""
            if name.startswith("/sparql"):
                native = row["native " + name.removeprefix("/sparql ").split(",")[0]][0]
                extra = f"   /sparql:native {p50 / native:.1f}"
            elif name.split()[0] in ("lookup", "context"):
                extra = f"   MCP:native {p50 / row['native ' + name.split()[0]][0]:.1f}"
            elif name.startswith("/api"):
                extra = f"   /api:native {p50 / row['native ' + name.split()[1]][0]:.1f}"
            if name.startswith("kg sparql sales, after"):
                extra = f"   after:made whole {p50 / row['kg sparql sales, made whole'][0]:.2f}"
            print(f"   {name:<22} {p50 * 1000:9.1f} {p95 * 1000:9.1f}{extra}")
    print(f"\n== {CLIENTS} clients writing at once (POST /api/propose)")
    for row in rows:
        load = row["load"]
        print(
            f"{row['size']:>8} facts: {load['writes']} writes, {load['per_second']:.1f}/s, "
            f"p95 {load['p95'] * 1000:.0f} ms, failed {load['failed']}, all landed: {load['all landed']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--calls", type=int, default=30, help="calls of each read and of MCP propose")
    parser.add_argument("--writes", type=int, default=250, help="writes of each of the four clients")
    parser.add_argument(
        "--made",
        type=Path,
        help="a folder of knowledge bases bench/run.py --keep made (kb-SIZE): each is copied, not generated",
    )
    args = parser.parse_args()
    with measure.work_folder(None, "kgrdf-serve-bench-") as work:
        rows = [measure_size(size, work, args.calls, args.writes, args.made) for size in args.sizes]
    print_table(rows)


if __name__ == "__main__":
    main()
