"""Benchmark: kg mentions and kg context --message at 100k facts, beside their floors, side by side.

    python bench/org_bench.py                 # a knowledge base of 100k facts (10k entities, 10k aliases)
    python bench/org_bench.py --facts 20000

It generates a synthetic organization (bench/generate.py: a tenth as many entities as facts, each
with a name and one alias, facts heard in public, a channel, a workspace, a DM or by the owner), then
times, best of --repeat, interleaved:

- mentions: `kg mentions MESSAGE` in a fresh process, on a 2,000-character message naming 20
  entities among ordinary words (the first run builds the name matcher kept in cache/; the best of
  the rest reads it); beside it the naive matcher (one regular expression of every name
  and alias, compiled and run in one process) and the floor (the word-keyed matcher kg uses, built
  once, then only the search);
- context: `kg context --message MESSAGE --audience public` and without an audience (the owner's),
  beside `kg context --for ENTITY` and `kg lookup ENTITY` (the cost of any command: a process, the
  index opened).

The machine is shared and noisy: read the ratios, which hold better than absolute times.
"""

import argparse
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from generate import generate  # noqa: E402

WORDS = (
    "the a we should check with about and then release deploy review slow fast why how "
    "tomorrow customer contract renewal pricing meeting notes follow up please thanks"
).split()


def kg(*args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kgrdf", *args], capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"kg {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return took


def message(names: list[str], rng: random.Random, size: int = 2000) -> str:
    """About ``size`` characters of ordinary words with 20 of the names in it."""
    chosen = rng.sample(names, 20)
    parts, length = [], 0
    while length < size:
        piece = chosen.pop() if chosen and rng.random() < 0.08 else rng.choice(WORDS)
        parts.append(piece)
        length += len(piece) + 1
    return " ".join(parts)[:size]


def in_process(kb: Path, text: str, repeat: int) -> dict:
    from kgrdf.kb import KnowledgeBase
    from kgrdf.privacy import NameIndex

    with KnowledgeBase.open(kb).reading() as session:
        rows = session.values("labels", entities=session.entities_graph)
    labels = [r["label"] for r in rows]
    index = NameIndex()
    for label in labels:
        index.add(label, label)
    floor = min(_time(lambda: index.find(text)) for _ in range(repeat))

    def naive():
        pattern = re.compile(
            r"\b(?:" + "|".join(re.escape(x) for x in sorted(labels, key=len, reverse=True)) + r")\b", re.IGNORECASE
        )
        return pattern.findall(text)

    return {
        "labels": len(labels),
        "floor": floor,
        "naive": min(_time(naive) for _ in range(repeat)),
        "found": len(index.find(text)),
    }


def _time(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="kgrdf-org-") as tmp:
        kb = Path(tmp) / "kb"
        start = time.perf_counter()
        generate(kb, args.facts)
        print(f"generated {args.facts} facts in {time.perf_counter() - start:.0f} s", flush=True)
        where = ["--kb", str(kb)]
        kg("stats", *where)
        from kgrdf.kb import KnowledgeBase

        with KnowledgeBase.open(kb).reading() as session:
            names = sorted(
                {
                    r["label"]
                    for r in session.values("labels", entities=session.entities_graph)
                    if r["property"].endswith("prefLabel")
                }
            )
        text = message(names, rng)
        entity = "repo/rep-000001"
        rows = {"mentions": [], "context public": [], "context owner": [], "context --for": [], "lookup": []}
        for _ in range(args.repeat):
            rows["mentions"].append(kg("mentions", text, *where))
            rows["context public"].append(kg("context", "--message", text, "--audience", "public", *where))
            rows["context owner"].append(kg("context", "--message", text, *where))
            rows["context --for"].append(kg("context", "--for", entity, *where))
            rows["lookup"].append(kg("lookup", entity, *where))
        best = {k: min(v) for k, v in rows.items()}
        local = in_process(kb, text, args.repeat)
        print(f"message: {len(text)} characters; {local['labels']} names and aliases; {local['found']} found")
        print(
            f"kg mentions            {best['mentions']:.2f} s  ({best['mentions'] / best['lookup']:.2f}x kg lookup); "
            f"the first, which builds cache/names: {rows['mentions'][0]:.2f} s"
        )
        print(
            f"  in one process: word-keyed matcher {local['floor'] * 1000:.2f} ms, "
            f"one regex of every name {local['naive'] * 1000:.0f} ms ({local['naive'] / local['floor']:.0f}x)"
        )
        for name in ("context public", "context owner", "context --for"):
            print(f"kg {name:<20} {best[name]:.2f} s  ({best[name] / best['lookup']:.2f}x kg lookup)")
        print(f"kg lookup              {best['lookup']:.2f} s")
        shutil.rmtree(kb, ignore_errors=True)


if __name__ == "__main__":
    main()
