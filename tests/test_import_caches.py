"""A large import keeps the caches derived from the index as any write does: the Briefing's cache
(kgrdf.measures) holds, row for row, what one made from the index after it holds."""

import json

import pytest

from kgrdf.kb import KnowledgeBase
from tests.test_measures import _kept, _made


@pytest.mark.parametrize("large", [False, True], ids=["a write", "a large write"])
def test_an_import_keeps_the_briefing_cache_as_one_made_from_the_index(demo, tmp_path, monkeypatch, large):
    """Kept by the write itself; a large one (kgrdf.kb.LARGE made small) reads what it changes while
    the index loads it beside the journal."""
    if large:
        import kgrdf.kb

        monkeypatch.setattr(kgrdf.kb, "LARGE", 5)
    held = demo.json("propose", "repo/api", "caveat", "--value", "imcaveat: held", "-s", "slack:h1")["id"]
    records = [{"type": "entity", "id": "repo/imported", "name": "imported"}]
    records += [  # past the writer's bulk size: the import's set-based path
        {"type": "fact", "subject": "repo/imported", "predicate": "caveat", "value": f"imcaveat {n}"}
        | {"sources": [f"slack:m{n}"], "audience": "public" if n % 3 else "channel:sales"}
        for n in range(250)
    ]
    records += [  # a fact the index holds, heard again in other audiences; one heard twice by the import
        {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": "imcaveat: held"}
        | {"sources": [f"slack:again{n}"], "audience": audience}
        for n, audience in enumerate(["public", "dm:ana,bo", "public"])
    ]
    records.append({"type": "fact", "subject": "repo/imported", "predicate": "knows", "object": "repo/api"})
    # refused by the shapes once staged (no work-operational predicate about a person): taken out of
    # the write after the check, while the commit's reading of the rows was made beside it
    records.append({"type": "fact", "subject": "person/dana", "predicate": "caveat", "value": "moody"})
    records[-1] |= {"sources": ["slack:x"], "audience": "public"}
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    report = demo.json("import", path, "--apply")
    assert report["facts"] == {"created": 250, "observed": 3} and report["refused_total"] == 2
    assert report["refused"]["whitelist"] == 1
    at, kept = _kept(demo.path)
    view = KnowledgeBase.open(demo.path).view()
    assert at == f"{view.seq}:{view.digest}"  # kept by the import, not made again
    audiences = {row[2] for row in kept if len(row) == 4 and row[0].endswith(held)}
    assert audiences == {"owner", "public", "dm:ana,bo"}
    assert kept == _made(demo.path)


def test_a_large_import_reads_its_rows_for_the_cache_once_while_its_last_check_runs(demo, tmp_path, monkeypatch):
    """What the Briefing's cache reads of a large import's rows is read while the import's last check
    runs (Writer.prepare_commit), and the commit uses it: the rows are read once, and the cache
    holds what one made from the index holds."""
    import kgrdf.kb
    from kgrdf import measures

    monkeypatch.setattr(kgrdf.kb, "LARGE", 5)
    reads = []
    changes = measures._changes
    monkeypatch.setattr(measures, "_changes", lambda *rows: reads.append(1) or changes(*rows))
    records = [{"type": "entity", "id": "repo/imported", "name": "imported"}]
    records += [
        {"type": "fact", "subject": "repo/imported", "predicate": "caveat", "value": f"c {n}", "sources": ["slack:x"]}
        for n in range(250)
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    assert demo.json("import", path, "--apply")["facts"] == {"created": 250}
    assert len(reads) == 1
    assert _kept(demo.path)[1] == _made(demo.path)
