"""Time the console's pages on a knowledge base: each page's JSON twin as the server answers it
(first load, then again with nothing changed), and the browser's load of the home page.

    python bench/generate.py 100000 /tmp/kb-100k
    python bench/console_bench.py /tmp/kb-100k

Targets at 100k facts (the console's issue): an entity page under 0.1 s, the Briefing and the
Constellation under 1 s. The first load of the Briefing and the Constellation reads the whole
knowledge base; later loads reuse it until the next write.
"""

import json
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.consoling import Console, chromium


def timed(console: Console, path: str) -> tuple[float, dict]:
    request = urllib.request.Request(console.url + path, headers={"Cookie": console.cookie})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as answer:
        doc = json.loads(answer.read())
    return time.perf_counter() - start, doc


def main() -> None:
    kb = Path(sys.argv[1])
    console = Console(kb)
    try:
        rows = []
        search_time, found = timed(console, "/search.json?q=Process")
        key = found["results"][0]["id"]
        _t, entity = timed(console, f"/e/{key}.json")
        fact = entity["groups"][0]["facts"][0]["id"]
        for name, path in [
            ("Briefing (home)", "/index.json"),
            ("Constellation", "/constellation.json"),
            ("Raw data, one type", "/raw.json?axis=Product&type=repo"),
            ("Review queue", "/review.json"),
            ("Search", "/search.json?q=Process"),
            ("Entity page", f"/e/{key}.json"),
            ("Entity page, two hops", f"/e/{key}.json?hops=2"),
            ("Entity page, as of a year ago", f"/e/{key}.json?as_of=2025-12-01"),
            ("Fact page", f"/f/{fact}.json"),
            ("Briefing, shown as public", "/index.json?as=public"),
            ("Briefing, shown as a channel", "/index.json?as=channel:general"),
            ("Briefing, shown as a DM", "/index.json?as=dm:jo,sam"),
            ("Constellation, shown as public", "/constellation.json?as=public"),
            ("Raw data, one type, as public", "/raw.json?axis=Product&type=repo&as=public"),
        ]:
            first, _doc = timed(console, path)
            again, _doc = timed(console, path)
            rows.append((name, first, again))
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(console.address)
            page.wait_for_selector("body[data-ready=home]", timeout=600_000)
            start = time.perf_counter()
            page.goto(console.url + "/")
            page.wait_for_selector("body[data-ready=home]", timeout=600_000)
            loaded = time.perf_counter() - start
            browser.close()
        print(f"{'page':34} {'first':>8} {'again':>8}")
        for name, first, again in rows:
            print(f"{name:34} {first:8.3f} {again:8.3f}")
        print(f"{'browser: home page drawn':34} {loaded:8.3f}")
    finally:
        console.stop()


if __name__ == "__main__":
    main()
