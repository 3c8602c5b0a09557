"""``kg demo``: the example organization loaded into a knowledge base, then a lookup, a two-hop
question, a fact's history and a context pack."""

import tempfile
from pathlib import Path

from kgrdf import context, importer, render, settings
from kgrdf.kb import KnowledgeBase
from kgrdf.resources import example_path


def load(path: Path) -> tuple[KnowledgeBase, str]:
    """Make a knowledge base at ``path`` holding the example organization; return it and the id of
    the fact a correction replaced (the hotfix process's old entry point: closed, or, at a clock
    before the correction begins, holding until then)."""
    kb = KnowledgeBase.create(path)
    records = importer.read_records(example_path("fernhill.jsonl"))
    with kb.writing("import") as writer:
        report = importer.stage_all(writer, records, auto_confirm=False)
    # An import makes proposals; the example marks the facts a person has reviewed since.
    with kb.writing("confirm") as writer:
        for record in records:
            if record.data.get("status") == "confirmed":
                writer.confirm(report.fact_ids[record.line], reviewed_by="demo")
    with kb.reading() as session:
        # Every fact, not the current ones: the example's entry point holds from 2026-01-15, and the
        # demo runs at any clock (KGRDF_NOW before then included).
        old = session.facts("process/hotfix", predicate="entry_point", everything=True)["facts"][0]["id"]
    with kb.writing("supersede") as writer:
        writer.supersede(
            old,
            object="channel/deploys",
            valid_from="2026-10-20",
            reason="hotfixes now start in #deploys, like releases",
        )
    return kb, old


def run(path: Path | None, as_json: bool) -> None:
    if path is None:
        path = Path(tempfile.mkdtemp(prefix="kgrdf-demo-")) / "kb"
    kb, superseded = load(path)
    with kb.reading() as session:
        lookup = session.lookup("hotfix")
        two_hops = session.neighbors("process/release", hops=2)
        history = session.history(superseded)
        stats = session.stats()
        pack = context.pack(session, "process/release", settings.get("KGRDF_CONTEXT_BUDGET"))
    reviewers = sorted({(e["from"], e["to"]) for e in two_hops["edges"] if e["predicate"] == "reviews"})
    if as_json:
        render.emit(
            {
                "kb": str(path),
                "stats": stats,
                "lookup": lookup,
                "two_hops": two_hops,
                "reviewers_of_released_repos": [{"person": p, "repo": r} for p, r in reviewers],
                "history": history,
                "context": pack,
            }
        )
        return
    print(f"Loaded the example organization (Fernhill Analytics) into {path}")
    render.stats(False, stats)
    print(f"\n$ kg lookup hotfix --kb {path}")
    render.lookup(False, lookup)
    print(f"\n$ kg neighbors process/release --hops 2 --kb {path}")
    print("Two hops out: which repos does the release process use, and who reviews them?")
    for person, repo in reviewers:
        print(f"  {person} reviews {repo}")
    render.neighbors(False, two_hops)
    print(f"\n$ kg history {superseded} --kb {path}")
    render.history(False, history)
    print(f"\n$ kg context --for process/release --kb {path}")
    print("A context pack for an agent about to touch the release process (confirmed facts only, cited):\n")
    print(pack["markdown"])
    print(f"\nTry: kg --help, and any command above with --kb {path}")
