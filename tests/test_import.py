"""kg import: a dry run unless --apply, proposals unless --auto-confirm, refusals by reason (§6)."""

import contextlib
import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from .conftest import Kg, one_line
from .patchlog import journal_bytes, read_log


def records_file(path, *records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


ENTITIES = [
    {"type": "entity", "id": "repo/web", "name": "web", "aliases": ["webapp"]},
    {"type": "entity", "id": "person/kim", "name": "Kim Lee", "aliases": ["Kim"]},
    {"type": "entity", "id": "process/release", "name": "Release process", "aliases": ["release"]},
]
GOOD = [
    {
        "type": "fact",
        "subject": "webapp",
        "predicate": "caveat",
        "value": "slow CI",
        "sources": ["ledger:L1", {"kind": "report", "ref": "R1"}],
    },
    {"type": "fact", "subject": "release", "predicate": "uses", "object": "repo/web", "sources": ["slack:S1"]},
    {
        "type": "fact",
        "subject": "Kim",
        "predicate": "reviews",
        "object": "webapp",
        "sources": ["slack:S2"],
        "prevents_rework": True,
    },
    {
        "type": "fact",
        "subject": "person/kim",
        "predicate": "title",
        "value": "Staff engineer",
        "sources": ["profile:hr"],
    },
]
BAD = [
    {
        "type": "fact",
        "subject": "person/kim",
        "predicate": "caveat",
        "value": "moody",
        "sources": ["slack:3"],
    },  # whitelist
    {"type": "fact", "subject": "Kim", "predicate": "knows", "object": "webapp", "sources": ["slack:3"]},  # schema
    {"type": "fact", "subject": "release", "predicate": "uses", "value": "a value", "sources": ["slack:3"]},  # schema
    {
        "type": "fact",
        "subject": "nobody",
        "predicate": "reviews",
        "object": "webapp",
        "sources": ["slack:3"],
    },  # unresolved
    {"type": "fact", "subject": "webapp", "predicate": "caveat", "value": "x", "sources": ["bogus:3"]},  # malformed
    {"type": "entity", "id": "person/jo", "name": "Jo Park", "summary": "great at everything"},  # whitelist
]


@pytest.fixture
def mixed(tmp_path):
    return records_file(tmp_path / "seed.jsonl", *ENTITIES, *GOOD, *BAD)


def test_a_dry_run_counts_everything_and_writes_nothing(kg, mixed):
    before = kg.snapshot()
    report = kg.json("import", mixed)
    assert kg.snapshot() == before
    assert report["applied"] is False
    assert report["entities"] == {"created": 3}
    assert report["facts"] == {"created": 4}
    assert report["refused"] == {"whitelist": 2, "schema": 2, "unresolved": 1, "malformed": 1}
    assert [r["line"] for r in report["refusals"]] == [8, 9, 10, 11, 12, 13]
    assert report["proposals"] == 4 and report["daily_batches"] == 1
    text = kg("import", mixed).stdout
    assert "nothing written" in text and "refused 6" in text


def test_apply_writes_the_same_as_the_dry_run_said_all_as_proposals(kg, mixed):
    dry = kg.json("import", mixed)
    applied = kg.json("import", mixed, "--apply")
    assert applied["applied"] is True
    assert {k: v for k, v in applied.items() if k != "applied"} == {k: v for k, v in dry.items() if k != "applied"}
    stats = kg.json("stats")
    assert stats["facts"] == {"proposed": 4} and stats["entity_count"] == 3
    kg("validate")


def test_auto_confirm_applies_the_rules(kg, mixed):
    report = kg.json("import", mixed, "--apply", "--auto-confirm")
    assert report["auto_confirmed"] == {"two trusted sources of different kinds": 1, "a structured profile source": 1}
    assert report["proposals"] == 2
    assert kg.json("stats")["facts"] == {"confirmed": 2, "proposed": 2}


def test_importing_again_observes_instead_of_duplicating(kg, tmp_path):
    path = records_file(tmp_path / "seed.jsonl", *ENTITIES, *GOOD)
    kg("import", path, "--apply")
    again = kg.json("import", path, "--apply")
    assert again["entities"] == {"unchanged": 3} and again["facts"] == {"observed": 4}
    assert kg.json("stats")["fact_count"] == 4


def test_the_refusals_listed_are_the_first_by_line_whichever_check_refused_them(kg, tmp_path):
    """The whitelist's refusal of line 1 comes from the shapes, after every record is staged: past
    twenty malformed records it was counted and never listed, the list starting at line 2."""
    kg("add-entity", "person/dana", "--name", "Dana Reyes")
    kg("add-entity", "process/release", "--name", "Release process")
    person = {"type": "fact", "subject": "person/dana", "predicate": "caveat", "value": "x", "sources": ["doc:a"]}
    bad = {"type": "fact", "subject": "process/release", "predicate": "caveat", "value": 7, "sources": ["doc:a"]}
    report = kg.json("import", records_file(tmp_path / "r.jsonl", person, *[bad] * 25))
    assert report["refused"] == {"whitelist": 1, "malformed": 25}
    assert [r["line"] for r in report["refusals"]] == list(range(1, 21))
    assert report["refusals"][0]["reason"] == "whitelist"


def test_a_name_an_import_takes_from_an_entity_is_no_longer_its_for_the_rest_of_the_import(kg, tmp_path):
    """An entity renamed early in an import went by its old name to the end of it: the name was then
    ambiguous with the entity given it, or named the renamed one, where the same records written one
    by one mean the entity that goes by it now."""
    from .conftest import copy_of

    kg("add-entity", "repo/api", "--name", "api", "--alias", "the api", "--weak-alias", "backend")
    one_by_one = copy_of(kg.path, tmp_path / "one-by-one")
    path = records_file(
        tmp_path / "renames.jsonl",
        {"type": "entity", "id": "repo/api", "name": "API v2"},
        {"type": "entity", "id": "repo/newapi", "name": "api"},
        {"type": "fact", "subject": "api", "predicate": "caveat", "value": "which api", "sources": ["doc:q"]},
        {"type": "entity", "id": "repo/other", "name": "Other", "aliases": ["API"]},
        {"type": "fact", "subject": "the api", "predicate": "caveat", "value": "by alias", "sources": ["doc:r"]},
    )
    done = kg.json("import", path, "--apply")
    one_by_one("add-entity", "repo/api", "--name", "API v2")
    one_by_one("add-entity", "repo/newapi", "--name", "api")
    one_by_one("propose", "api", "caveat", "--value", "which api", "-s", "doc:q")
    refused = one_line(one_by_one("add-entity", "repo/other", "--name", "Other", "--alias", "API", expect=1))
    one_by_one("propose", "the api", "caveat", "--value", "by alias", "-s", "doc:r")
    assert len(done["refusals"]) == 1 and refused.startswith(f"kg: {done['refusals'][0]['message']}")
    assert "repo/newapi" in refused and "repo/api (" not in refused
    for entity in ("repo/api", "repo/newapi"):
        values = [f["value"] for f in kg.json("facts", entity)["facts"]]
        assert values == [f["value"] for f in one_by_one.json("facts", entity)["facts"]]
    assert [f["value"] for f in kg.json("facts", "repo/newapi")["facts"]] == ["which api"]
    assert [f["value"] for f in kg.json("facts", "repo/api")["facts"]] == ["by alias"]


@pytest.mark.parametrize("at", [0, 1, 2])
def test_a_fact_naming_a_person_the_import_adds_is_judged_the_same_wherever_the_persons_record_stands(kg, tmp_path, at):
    """A fact staged before the record of the person it names was judged as naming nobody: with two
    trusted sources it was confirmed and kept internal, and an inference naming them was taken,
    where the same records with the person first made a proposal and refused the inference."""
    kg("add-entity", "service/billing", "--name", "Billing")
    person = {"type": "entity", "id": "person/ines", "name": "Inés Duarte", "aliases": ["Ducky"]}
    facts = [
        {
            "type": "fact",
            "subject": "Billing",
            "predicate": "caveat",
            "value": "ask ducky first",
            "sources": ["ledger:a", "report:b"],
        },
        {
            "type": "fact",
            "subject": "Billing",
            "predicate": "caveat",
            "value": "INÉS DUARTE is away",
            "sources": ["doc:c"],
            "authority": "inferred",
        },
    ]
    records = facts[:at] + [person] + facts[at:]
    report = kg.json("import", records_file(tmp_path / "people.jsonl", *records), "--apply", "--auto-confirm")
    assert [(r["line"], r["reason"]) for r in report["refusals"]] == [(records.index(facts[1]) + 1, "whitelist")]
    kept = kg.json("facts", "billing", "--all")["facts"]
    assert [(f["value"], f["status"]) for f in kept] == [("ask ducky first", "proposed")]
    assert kg.json("history", kept[0]["id"])["fact"]["sensitivity"] == "personal"


@pytest.mark.parametrize("then", ["its name given to another", "renamed alone"])
def test_a_fact_waiting_for_a_later_entity_means_what_its_names_meant_at_its_line(kg, tmp_path, then):
    """Behind a fact waiting for an entity a later record makes, a fact naming an entity by a name a
    later record took from it went to the entity given the name at the end of the file (or was
    refused as unknown), where the records one by one put it on the entity that had the name then."""
    records = [
        {"type": "entity", "id": "repo/ylib", "name": "Foolib"},
        {"type": "fact", "subject": "repo/later", "predicate": "depends_on", "object": "Foolib", "sources": ["doc:a"]},
        {"type": "entity", "id": "actor/abot", "name": "Bot A"},
        {
            "type": "fact",
            "subject": "Foolib",
            "predicate": "caveat",
            "value": "flaky tests",
            "sources": ["doc:a"],
            "said_by": "Bot A",
        },
        {"type": "entity", "id": "repo/ylib", "name": "Barlib"},
        {"type": "entity", "id": "actor/abot", "name": "Bot X"},
        {"type": "entity", "id": "actor/bbot", "name": "Bot A"},
        *([{"type": "entity", "id": "repo/zlib", "name": "Foolib"}] if then.startswith("its name") else []),
        {"type": "entity", "id": "repo/later", "name": "Later"},
    ]
    report = kg.json("import", records_file(tmp_path / "later.jsonl", *records), "--apply")
    assert report["refused"] == {} and report["facts"] == {"created": 2}, report
    assert [(f["value"], f["said_by"]) for f in kg.json("facts", "repo/ylib")["facts"]] == [
        ("flaky tests", "actor/abot")
    ]
    assert [f["object"] for f in kg.json("facts", "repo/later")["facts"]] == ["repo/ylib"]
    if then.startswith("its name"):
        assert kg.json("facts", "repo/zlib")["facts"] == []


@pytest.mark.parametrize("order", ["facts first", "reversed", "interleaved"])
def test_a_fact_may_name_an_entity_a_later_record_makes(kg, tmp_path, order):
    records = ENTITIES + GOOD + BAD
    shuffled = {
        "facts first": [r for r in records if r["type"] == "fact"] + [r for r in records if r["type"] == "entity"],
        "reversed": records[::-1],
        "interleaved": [
            GOOD[0],
            ENTITIES[0],
            GOOD[2],
            BAD[3],
            ENTITIES[1],
            GOOD[3],
            GOOD[1],
            ENTITIES[2],
            *BAD[:3],
            *BAD[4:],
        ],
    }[order]
    in_order = kg.json("import", records_file(tmp_path / "seed.jsonl", *records))
    report = kg.json("import", records_file(tmp_path / "shuffled.jsonl", *shuffled), "--apply")
    for key in ("entities", "facts", "proposals", "refused"):
        assert report[key] == in_order[key], key
    unresolved = [r for r in report["refusals"] if r["reason"] == "unresolved"]
    assert [r["message"] for r in unresolved] == ["subject 'nobody' is not known"]
    assert unresolved[0]["line"] == shuffled.index(BAD[3]) + 1
    assert kg.json("stats")["facts"] == {"proposed": 4}
    kg("validate")


@pytest.mark.parametrize("entity_at", [0, 1, 2, 3, 4])
def test_a_fact_s_first_record_makes_it_wherever_the_entity_s_record_comes(kg, tmp_path, entity_at):
    """Two records of one fact, the first with a valid time, its reason and an order: the first
    makes the fact and the second observes it, in the file's order, whether the entity they name
    is made before them, between them or after them. A fact that waited for a later record's
    entity was staged after every other record, so the second record made the fact, and the first
    was refused as a clash with it: its valid time, order and source were lost."""
    service = {"type": "entity", "id": "service/billing", "name": "billing"}
    step = {"type": "entity", "id": "step/deploy", "name": "deploy"}
    facts = [
        {"subject": "service/billing", "predicate": "status", "value": "live", "valid_from": "2025-01-01"},
        {"subject": "process/release", "predicate": "has_step", "object": "step/deploy", "order": 2},
        {"subject": "service/billing", "predicate": "status", "value": "live"},
        {"subject": "process/release", "predicate": "has_step", "object": "step/deploy"},
    ]
    facts = [{"type": "fact", "sources": [f"doc:r{n}"], "reason": f"record {n}", **f} for n, f in enumerate(facts)]
    kg("add-entity", "process/release", "--name", "Release")
    records = facts[:entity_at] + [service, step] + facts[entity_at:]
    report = kg.json("import", records_file(tmp_path / "seed.jsonl", *records), "--apply")
    assert (report["facts"], report["refused_total"]) == ({"created": 2, "observed": 2}, 0)
    status = kg.json("facts", "billing")["facts"][0]
    assert status["valid_from"].startswith("2025-01-01")
    assert [s["ref"] for s in status["sources"]] == ["r0", "r2"]
    assert kg.json("history", status["id"])["history"][0]["reason"] == "record 0"
    [step_fact] = kg.json("facts", "release", "-p", "has_step")["facts"]
    assert step_fact["order"] == 2


def test_a_json_array_is_read_too(kg, tmp_path):
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(ENTITIES + GOOD[:1]), encoding="utf-8")
    assert kg.json("import", path, "--apply")["facts"] == {"created": 1}


@pytest.mark.parametrize("content", ["[]", " [\n ]\n", "\ufeff[ ]"])
def test_an_empty_json_array_is_no_record(kg, tmp_path, content):
    """It was read as a JSON line, and so as one record refused as malformed."""
    path = tmp_path / "seed.json"
    path.write_text(content, encoding="utf-8")
    report = kg.json("import", path, "--apply")
    assert (report["records"], report["refused_total"], report["facts"], report["entities"]) == (0, 0, {}, {})


@pytest.mark.parametrize(
    "content,line,message",
    [
        ('{"type": "entity", "id": "repo/x", "name": "x"}\n{"type": "fact", broken\n', 2, "not JSON"),
        ('{"type": "entity", "id": "repo/x", "name": "x"}\n{"type": "place", "id": "x"}\n', 2, "a record is an object"),
        ('[{"type": "entity", "id": "repo/x", "name": "x"}, 1, 2]', 1, "a record is an object"),
        ('[\n  {"type": "entity", "id": "repo/x", "name": "x"},\n\n  1,\n  2\n]', 4, "a record is an object"),
        ('{"type": "entity", "id": "repo/x", "name": "x"}\n[1]\n"text"\n', 2, "a record is an object"),
    ],
    ids=["broken-line", "unknown-type", "not-objects", "not-objects-on-their-lines", "lines-not-objects"],
)
def test_a_record_that_is_not_one_is_refused_alone(kg, tmp_path, content, line, message):
    path = tmp_path / "seed.jsonl"
    path.write_text(content, encoding="utf-8")
    report = kg.json("import", path, "--apply")
    assert report["entities"] == {"created": 1}
    assert report["refused"]["malformed"] >= 1
    assert report["refusals"][0]["line"] == line and message in report["refusals"][0]["message"]


def test_an_array_item_that_gives_a_key_twice_is_refused_alone_by_its_line(kg, tmp_path):
    """A refusal names the line the item starts on, as the README says: it named the item's number."""
    path = tmp_path / "seed.json"
    path.write_text(
        '[\n {"type": "entity", "id": "repo/k1", "name": "k1"},\n'
        ' {"type": "entity", "id": "repo/k2", "name": "k2",\n  "name": "k3"},\n'
        ' {"type": "entity", "id": "repo/k4", "name": "k4", "aliases": ["four"]},\n\n'
        ' {"type": "fact", "subject": "repo/k1", "predicate": "caveat", "value": "v",'
        ' "sources": [{"kind": "doc", "ref": "a", "kind": "pr"}]}]\n',
        encoding="utf-8",
    )
    report = kg.json("import", path, "--apply")
    assert report["entities"] == {"created": 2} and report["refused"] == {"malformed": 2}
    assert report["refusals"] == [
        {"line": 3, "reason": "malformed", "message": "not JSON: the key 'name' is given twice"},
        {"line": 7, "reason": "malformed", "message": "not JSON: the key 'kind' is given twice"},
    ]
    assert kg.json("lookup", "repo/k4")["entity"]["name"] == "k4"
    kg("lookup", "repo/k2", expect=1)


def test_an_array_item_with_a_raw_control_character_or_a_huge_number_is_refused_alone(kg, tmp_path):
    """An item holding a raw tab in a string, or a number of 5,000 digits, refused the whole array
    (exit 2, nothing imported), where the same records as JSON lines were refused alone."""
    path = tmp_path / "seed.json"
    path.write_text(
        '[\n{"type": "entity", "id": "repo/n1", "name": "n1"},\n'
        '{"type": "entity", "id": "repo/n2", "name": "a\tb"},\n'
        '{"type": "entity", "id": "repo/n3", "name": "n3", "order": ' + "9" * 5000 + "},\n"
        '{"type": "entity", "id": "repo/n4", "name": "n4"}\n]\n',
        encoding="utf-8",
    )
    report = kg.json("import", path, "--apply")
    assert report["entities"] == {"created": 2}
    assert [(r["line"], r["reason"], r["message"].split(":")[0]) for r in report["refusals"]] == [
        (3, "malformed", "not JSON"),
        (4, "malformed", "not JSON"),
    ]
    assert "control character" in report["refusals"][0]["message"]
    assert "4300 digits" in report["refusals"][1]["message"]
    assert [kg.json("lookup", f"repo/n{n}")["entity"]["name"] for n in (1, 4)] == ["n1", "n4"]


@pytest.mark.parametrize("first", ["Base camp notes", "PREFIX of the file", "<!DOCTYPE html>", "<html><body>"])
def test_a_first_line_that_only_looks_like_rdf_is_refused_alone(kg, tmp_path, first):
    """A JSON-lines file whose first line began "Base ", "prefix " or "<" was refused whole as RDF
    "as kg export writes it", its records after that line lost with it."""
    path = tmp_path / "seed.jsonl"
    path.write_text(first + '\n{"type": "entity", "id": "repo/n1", "name": "n1"}\n', encoding="utf-8")
    report = kg.json("import", path, "--apply")
    assert report["entities"] == {"created": 1}
    assert [(r["line"], r["reason"]) for r in report["refusals"]] == [(1, "malformed")]


def test_a_malformed_file_is_one_line_and_writes_nothing(kg, tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text('[{"type": "entity", "id": "repo/x", "name": "x"}, broken', encoding="utf-8")
    before = kg.snapshot()
    result = kg("import", path, "--apply", expect=2)
    assert "seed.jsonl: not JSON" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert kg.snapshot() == before


def test_an_array_whose_one_item_nests_too_deep_refuses_that_item_and_writes_nothing(kg, tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")  # an array of one item, an array
    before = kg.snapshot()
    report = kg.json("import", path, "--apply")
    assert report["refused"] == {"malformed": 1} and "nests too deep" in report["refusals"][0]["message"]
    assert kg.snapshot() == before


def test_a_missing_file_is_bad_input(kg, tmp_path):
    assert "cannot read" in kg("import", tmp_path / "none.jsonl", expect=2).stderr


def test_the_batches_count_follows_the_batch_caps(kg, tmp_path, monkeypatch):
    entities = [{"type": "entity", "id": f"repo/r{i}", "name": f"r{i}"} for i in range(30)]
    facts = [
        {"type": "fact", "subject": f"repo/r{i}", "predicate": "caveat", "value": f"caveat {j}", "sources": ["slack:x"]}
        for i in range(30)
        for j in range(5)
    ]
    path = records_file(tmp_path / "seed.jsonl", *entities, *facts)
    # 30 groups of 5: at most 10 groups and 40 facts a day -> 8 groups a batch -> 4 batches.
    assert kg.json("import", path)["daily_batches"] == 4
    monkeypatch.setenv("KGRDF_BATCH_FACTS", "100")
    assert kg.json("import", path)["daily_batches"] == 3


def test_a_large_import_is_validated_set_based_and_refuses_the_same_way(kg, tmp_path):
    """Above 200 facts the shapes run as set-based queries; the refusals must not change."""
    entities = [{"type": "entity", "id": f"repo/r{i}", "name": f"r{i}"} for i in range(60)]
    entities.append({"type": "entity", "id": "person/kim", "name": "Kim Lee"})
    facts = [
        {"type": "fact", "subject": f"repo/r{i}", "predicate": "caveat", "value": f"caveat {j}", "sources": ["slack:x"]}
        for i in range(60)
        for j in range(5)
    ]
    bad = [
        {"type": "fact", "subject": "person/kim", "predicate": "caveat", "value": "moody", "sources": ["slack:3"]},
        {"type": "fact", "subject": "repo/r1", "predicate": "uses", "value": "text", "sources": ["slack:3"]},
    ]
    path = records_file(tmp_path / "seed.jsonl", *entities, *facts, *bad)
    report = kg.json("import", path, "--apply")
    assert report["facts"] == {"created": 300}
    assert report["refused"] == {"whitelist": 1, "schema": 1}
    assert kg.json("stats")["fact_count"] == 300
    kg("validate")


def _views_entities(monkeypatch) -> list[set[str]]:
    """The entities (their IRIs, as N-Triples) of each view a large write's chunks are checked in,
    one set a chunk, as they are checked."""
    from kgrdf import validation

    seen = []
    check_lines = validation.check_lines

    def recorded(fact_lines, entity_lines, ontology):
        seen.append({line.split(" ", 1)[0] for line in entity_lines})
        return check_lines(fact_lines, entity_lines, ontology)

    monkeypatch.setattr(validation, "check_lines", recorded)
    return seen


def test_a_large_import_checks_its_facts_beside_the_entities_they_name_not_every_entity(kg, tmp_path, monkeypatch):
    """Each chunk of a large import is checked beside the entities its facts name and the import's
    own, as the knowledge base holds them (their types decide the People whitelist and a
    predicate's range), never beside every entity of the base: those made an import of 300 facts
    five times slower on a base of 100k facts than on one of 1k. What the shapes refuse is the same."""
    from kgrdf import importer

    monkeypatch.setattr(importer, "CHUNK", 50)
    kg("add-entity", "person/kim", "--name", "Kim Lee")
    kg("add-entity", "team/web", "--name", "Web team")
    for i in range(40):
        kg("add-entity", f"repo/old{i}", "--name", f"Old repo {i}")
    unrelated = {f"repo/old{i}" for i in range(10, 40)}
    entities = [{"type": "entity", "id": f"repo/new{i}", "name": f"New repo {i}"} for i in range(5)]
    facts = [
        {
            "type": "fact",
            "subject": f"repo/old{i % 10}",
            "predicate": "caveat",
            "value": f"caveat {j}",
            "sources": ["slack:x"],
        }
        for i in range(10)
        for j in range(25)
    ]
    facts += [
        {
            "type": "fact",
            "subject": f"repo/new{i}",
            "predicate": "depends_on",
            "object": "repo/old0",
            "sources": ["slack:y"],
        }
        for i in range(5)
    ]
    bad = [  # refused by the shapes alone, from the types the index holds
        {"type": "fact", "subject": "person/kim", "predicate": "caveat", "value": "moody", "sources": ["slack:3"]},
        {"type": "fact", "subject": "repo/old3", "predicate": "uses", "object": "team/web", "sources": ["slack:4"]},
    ]
    path = records_file(tmp_path / "seed.jsonl", *entities, *facts[:120], *bad, *facts[120:])
    seen = _views_entities(monkeypatch)
    report = kg.json("import", path, "--apply")
    assert report["refused"] == {"whitelist": 1, "schema": 1}
    assert report["facts"] == {"created": 255}
    assert len(seen) >= 5
    named = set().union(*seen)
    iri = lambda entity_id: f"<https://kgrdf.org/kb/main/{entity_id}>"  # noqa: E731
    assert {iri("person/kim"), iri("team/web"), iri("repo/old0"), iri("repo/new4")} <= named
    assert not named & {iri(entity_id) for entity_id in unrelated}
    kg("validate")


def test_a_large_import_checks_each_of_its_entities_in_the_chunk_that_last_changed_it(kg, tmp_path, monkeypatch):
    """A large import's own entity is checked in the chunk that stages or changes it, as it then
    stands, and again only where a fact of a chunk names it: not in every chunk (10k entities in
    each of ten chunks were a tenth of an import of 100k facts). What the shapes refuse is the same:
    an entity refused in the first chunk and never touched again, and one made clean there and
    given a person's summary three chunks later."""
    from kgrdf import importer

    monkeypatch.setattr(importer, "CHUNK", 50)
    kg("add-entity", "repo/api", "--name", "Api")
    quiet = [{"type": "entity", "id": f"repo/quiet{i}", "name": f"Quiet {i}"} for i in range(20)]

    def caveats(start, n):
        return [
            {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": f"c{j}", "sources": ["slack:x"]}
            for j in range(start, start + n)
        ]

    def person(entity_id, name, **more):
        return {"type": "entity", "id": entity_id, "name": name, **more}

    reviews = {
        "type": "fact",
        "subject": "person/ann",
        "predicate": "reviews",
        "object": "repo/api",
        "sources": ["slack:y"],
    }
    seen = _views_entities(monkeypatch)
    records = [
        person("person/ann", "Ann Fox"),
        *quiet,
        *caveats(0, 180),  # to the fourth chunk
        person("person/ann", "Ann Fox", aliases=["Annie"]),
        *caveats(180, 100),
        reviews,
    ]
    report = kg.json("import", records_file(tmp_path / "one.jsonl", *records), "--apply")
    assert report["refusals"] == [] and report["facts"] == {"created": 281}
    assert len(seen) >= 5
    iri = lambda entity_id: f"<https://kgrdf.org/kb/main/{entity_id}>"  # noqa: E731
    assert all(sum(iri(e["id"]) in view for view in seen) == 1 for e in quiet)
    assert sum(iri("person/ann") in view for view in seen) == 3  # made, changed, named by the last fact
    assert all(iri("repo/api") in view for view in seen[1:])
    assert kg.json("lookup", "person/ann")["entity"]["aliases"] == ["Annie"]

    records = [
        person("person/bob", "Bob Ng", summary="likes tea"),  # refused: a person has no summary
        person("person/cy", "Cy Dee"),
        *caveats(300, 180),
        person("person/cy", "Cy Dee", summary="plays chess"),  # refused the same, three chunks later
        *caveats(480, 30),
    ]
    report = kg.json("import", records_file(tmp_path / "two.jsonl", *records), "--apply")
    assert report["refused"] == {"whitelist": 2}
    assert sorted(r["line"] for r in report["refusals"]) == [1, 183]
    assert report["facts"] == {"created": 210} and report["entities"] == {"created": 1}
    assert kg.json("lookup", "person/cy")["entity"] == {
        "id": "person/cy",
        "type": "person",
        "name": "Cy Dee",
        "aliases": [],
        "weak_aliases": [],
    }
    kg("lookup", "person/bob", expect=1)  # not known
    kg("validate")


def test_a_large_import_looks_its_aliases_up_a_block_at_a_time_and_refuses_each_one_taken(kg, tmp_path, monkeypatch):
    """An import's aliases are looked up in the index a block at a time (labels-taken.rq), never by
    reading every label of the base (0.3 s at 100k facts, and growing with it), and an alias is
    looked up by itself (identify.rq) only when its key is found. Each alias that another entity
    goes by is still refused: an alias or a name of the index in other spellings, and an alias of
    an entity the import made a block of records before."""
    from kgrdf.session import Session
    from kgrdf.writer import Writer

    monkeypatch.setattr(Writer, "LABELS_AT_ONCE", 50)
    kg("add-entity", "repo/web", "--name", "Web", "--alias", "webapp")
    kg("add-entity", "person/kim", "--name", "Kim Lee", "--alias", "Kim")
    made = [{"type": "entity", "id": f"repo/n{i}", "name": f"N {i}", "aliases": [f"alias {i}"]} for i in range(120)]
    filler = [
        {"type": "fact", "subject": "repo/web", "predicate": "caveat", "value": f"c{j}", "sources": ["slack:x"]}
        for j in range(500)
    ]
    taken = [
        {"type": "entity", "id": "repo/x1", "name": "X1", "aliases": ["WEBAPP"]},  # an index alias
        {"type": "entity", "id": "repo/x2", "name": "X2", "aliases": ["kim   lee"]},  # an index name
        {"type": "entity", "id": "repo/x3", "name": "X3", "aliases": ["Alias 5"]},  # repo/n5's, made above
        {"type": "entity", "id": "repo/x4", "name": "X4", "aliases": ["fresh", "alias 7"]},
    ]
    read, asked = [], []
    rows, identify = Session.rows, Writer.identify

    def counted(self, name, **bindings):
        read.append(name)
        return rows(self, name, **bindings)

    def looked_up(self, text):
        asked.append(text)
        return identify(self, text)

    monkeypatch.setattr(Session, "rows", counted)
    monkeypatch.setattr(Writer, "identify", looked_up)
    path = records_file(tmp_path / "seed.jsonl", *made, *filler, *taken)
    report = kg.json("import", path, "--apply")
    assert report["entities"] == {"created": 120} and report["facts"] == {"created": 500}
    assert report["refused"] == {"conflict": 4}
    assert [r["line"] for r in report["refusals"]] == [621, 622, 623, 624]
    assert "labels" not in read
    assert read.count("labels-taken") == 3 + 1  # 120 keys of the first block of records, 50 a query; then 5
    assert sorted(asked) == ["Alias 5", "WEBAPP", "alias 7", "kim lee"]
    assert kg.json("identify", "fresh", expect=1)["matches"] == []
    assert [m["id"] for m in kg.json("identify", "alias 5")["matches"]] == ["repo/n5"]


def test_a_large_import_never_mints_the_id_of_a_fact_there_is(kg, tmp_path, monkeypatch):
    """A write checks the ids it mints, the first one at a time and then a block at a time (every
    fact id of the base was read once: 1.9 s at 100k facts for an import of 300). With every third
    candidate the id of a fact the base holds, and some candidates twice, the import makes every
    fact under an id of its own and leaves the facts there were as they were."""
    from kgrdf import model

    kg("add-entity", "repo/api", "--name", "Api")
    there = [
        kg.json("propose", "repo/api", "caveat", "--value", f"old {i}", "-s", f"slack:o{i}")["id"] for i in range(4)
    ]
    before = {fact_id: kg.json("history", fact_id)["fact"] for fact_id in there}
    mint = model.mint_fact_id

    def colliding(replica, seq, n):
        if n % 3 == 0:
            return there[n // 3 % len(there)]
        return mint(replica, seq, n // 2)  # each fresh candidate comes twice

    monkeypatch.setattr(model, "mint_fact_id", colliding)
    records = [
        {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": f"new {i}", "sources": [f"slack:n{i}"]}
        for i in range(700)
    ]
    report = kg.json("import", records_file(tmp_path / "seed.jsonl", *records), "--apply")
    monkeypatch.undo()
    assert report["facts"] == {"created": 700}
    ids = [f["id"] for f in kg.json("facts", "repo/api")["facts"]]
    assert len(ids) == len(set(ids)) == 704 and set(there) <= set(ids)
    assert {fact_id: kg.json("history", fact_id)["fact"] for fact_id in there} == before
    kg("validate")


def test_a_terminal_gets_a_progress_bar_and_a_pipe_does_not(kg, tmp_path):
    import os
    import pty
    import subprocess
    import sys

    path = records_file(tmp_path / "seed.jsonl", *ENTITIES, *GOOD)
    leader, follower = pty.openpty()
    run = subprocess.run(
        [sys.executable, "-m", "kgrdf", "import", str(path), "--kb", str(kg.path)],
        stdout=subprocess.PIPE,
        stderr=follower,
        timeout=120,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert run.returncode == 0
    assert b"7/7 records" in shown and b"[####" in shown and b"checking the shapes" in shown
    piped = subprocess.run(
        [sys.executable, "-m", "kgrdf", "import", str(path), "--kb", str(kg.path)], capture_output=True, timeout=120
    )
    assert piped.returncode == 0 and b"records" not in piped.stderr


def _journal_rows(kg) -> int:
    """The rows of every patch of both journals (added or deleted quads, and headers)."""
    return len(journal_bytes(kg.path / "journal").splitlines())


def _copies(kg, tmp_path, n: int) -> dict:
    """Import n copies of one fact, each from another source, every third heard in public; return
    what the import added to the journals and the fact as the owner and the public are shown it."""
    records = [{"type": "entity", "id": "repo/api", "name": "api"}]
    for i in range(n):
        record = {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": "flaky tests"}
        records.append(record | {"sources": [f"slack:msg-{i:04d}"], "audience": "public" if i % 3 == 2 else "owner"})
    before = _journal_rows(kg)
    report = kg.json("import", records_file(tmp_path / f"copies-{n}.jsonl", *records), "--apply")
    assert report["facts"] == {"created": 1, "observed": n - 1}
    (fact,) = kg.json("lookup", "api")["facts"]
    (public,) = kg.json("lookup", "api", "--audience", "public")["facts"]
    return {"rows": _journal_rows(kg) - before, "fact": fact, "public": public}


def test_copies_of_one_fact_are_one_fact_heard_n_times_and_the_journal_grows_linearly(kg, tmp_path):
    n = 300
    got = _copies(kg, tmp_path, n)
    fact, public = got["fact"], got["public"]
    labels = [f"slack:msg-{i:04d}" for i in range(n)]
    assert fact["observations"] == n and fact["audiences"] == ["owner", "public"]
    assert [f"{s['kind']}:{s['ref']}" for s in fact["sources"]] == labels
    # Each hearing keeps its own audience: the public is told of its hundred alone.
    heard_in_public = [label for i, label in enumerate(labels) if i % 3 == 2]
    assert public["observations"] == n // 3 and public["audiences"] == ["public"]
    assert [f"{s['kind']}:{s['ref']}" for s in public["sources"]] == heard_in_public
    # kg history: recorded with the first source, then one observation that added all the others.
    events = kg.json("history", fact["id"])["history"]
    assert [e["action"] for e in events] == ["recorded", "observe"]
    assert events[0]["changes"] == {"sources": {"added": labels[:1]}}
    assert events[1]["changes"] == {"observations": {"before": [1], "after": [n]}, "sources": {"added": labels[1:]}}
    shown = kg("history", fact["id"]).stdout
    assert "observations: 1 -> 300" in shown and f"sources: + {', '.join(labels[1:])}" in shown
    told = kg.json("history", fact["id"], "--audience", "public")["history"]
    assert [e.get("changes") for e in told] == [None, {"sources": {"added": heard_in_public}}]
    # Twice the copies, twice the journal: an observation records what it adds, not all it held.
    other = type(kg)(tmp_path / "kb-twice")
    other("init")
    twice = _copies(other, tmp_path, 2 * n)
    assert twice["fact"]["observations"] == 2 * n
    assert 1.8 < twice["rows"] / got["rows"] < 2.2, (got["rows"], twice["rows"])


def test_copies_in_one_import_fold_into_a_record_for_each_run_of_one_reason(kg, tmp_path):
    record = {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": "flaky tests"}
    reasons = [None, "from the wiki", "from the wiki", "from chat", "from the wiki"]
    records = [{"type": "entity", "id": "repo/api", "name": "api"}] + [
        record | {"sources": [f"slack:m{i}"]} | ({"reason": reason} if reason else {})
        for i, reason in enumerate(reasons)
    ]
    kg("import", records_file(tmp_path / "runs.jsonl", *records), "--apply")
    (fact,) = kg.json("lookup", "api")["facts"]
    assert fact["observations"] == 5
    events = kg.json("history", fact["id"])["history"]
    assert [(e["action"], e.get("reason")) for e in events] == [
        ("recorded", None),
        ("observe", "from the wiki"),
        ("observe", "from chat"),
        ("observe", "from the wiki"),
    ]
    assert [e["changes"]["sources"]["added"] for e in events] == [
        ["slack:m0"],
        ["slack:m1", "slack:m2"],
        ["slack:m3"],
        ["slack:m4"],
    ]
    assert [e["changes"]["observations"] for e in events[1:]] == [
        {"before": [1], "after": [3]},
        {"before": [3], "after": [4]},
        {"before": [4], "after": [5]},
    ]


def test_a_large_import_finds_the_people_its_values_name_as_a_small_one_does(kg, tmp_path):
    """Past 200 records the writer reads the people's cache once instead of asking it for each
    record: a value naming a person known before the import, by name or by alias, still makes its
    fact personal, and one naming nobody does not."""
    kg("import", records_file(tmp_path / "people.jsonl", *ENTITIES), "--apply")
    repos = [{"type": "entity", "id": f"repo/r{i}", "name": f"r{i}"} for i in range(100)]
    facts = [
        {"type": "fact", "subject": f"repo/r{i}", "predicate": "caveat", "value": f"caveat {j}", "sources": ["slack:x"]}
        for i in range(100)
        for j in range(3)
    ]
    naming = [
        {"type": "fact", "subject": "repo/r7", "predicate": "caveat", "value": v, "sources": ["slack:y"]}
        for v in ("ask Kim Lee first", "kim knows why", "nobody knows why")
    ]
    report = kg.json("import", records_file(tmp_path / "seed.jsonl", *repos, *facts, *naming), "--apply")
    assert report["facts"] == {"created": 303}
    ids = {f["value"]: f["id"] for f in kg.json("facts", "repo/r7")["facts"]}
    shown = {value: kg.json("history", fact_id)["fact"]["sensitivity"] for value, fact_id in ids.items()}
    assert shown["ask Kim Lee first"] == "personal"
    assert shown["kim knows why"] == "personal"
    assert shown["nobody knows why"] == "internal"
    assert shown["caveat 0"] == "internal"


def test_a_large_import_waits_for_its_checker_rather_than_hold_every_chunk_it_staged(kg, tmp_path, monkeypatch):
    """Each chunk handed to the checker holds its rows as text until it is checked: when staging
    runs ahead of a slow checker, it waits, so that no more than Writer.CHUNKS_HELD chunks are
    held at once, whatever the size of the import; and the import is whole all the same."""
    import concurrent.futures
    import time

    from kgrdf import importer, validation
    from kgrdf.writer import Writer

    monkeypatch.setattr(importer, "CHUNK", 20)
    check_lines = validation.check_lines

    def slow(*args):
        time.sleep(0.05)
        return check_lines(*args)

    held, given = [], []

    class Watching(concurrent.futures.ThreadPoolExecutor):
        def submit(self, fn, *args, **kwargs):
            future = super().submit(fn, *args, **kwargs)
            if fn is slow:
                given.append(future)
                held.append(sum(not f.done() for f in given))
            return future

    monkeypatch.setattr(validation, "check_lines", slow)
    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", Watching)
    entities = [{"type": "entity", "id": f"repo/r{i}", "name": f"r{i}"} for i in range(10)]
    facts = [
        {"type": "fact", "subject": f"repo/r{i % 10}", "predicate": "caveat", "value": f"c{i}", "sources": ["slack:x"]}
        for i in range(400)
    ]
    report = kg.json("import", records_file(tmp_path / "seed.jsonl", *entities, *facts), "--apply")
    assert report["facts"] == {"created": 400}
    assert len(given) >= 20  # (the path under test: a chunk at a time, each checked slower than it is staged)
    assert max(held) == Writer.CHUNKS_HELD
    assert kg.json("stats")["fact_count"] == 400
    kg("validate")


def test_facts_packed_once_checked_are_unpacked_when_the_import_changes_them_again(kg, tmp_path, monkeypatch):
    """A large import keeps each new fact's rows packed once its chunk is checked (nquads.Block): a
    later record that observes the fact again, or is refused, must leave the same knowledge base
    as if nothing had been packed: the journal's rows each once, and the index made of them."""
    from kgrdf import importer, nquads

    monkeypatch.setattr(importer, "CHUNK", 50)
    packed, pack = [], nquads.Block.pack
    monkeypatch.setattr(nquads.Block, "pack", classmethod(lambda cls, lines: packed.append(lines[0]) or pack(lines)))
    entities = [{"type": "entity", "id": f"repo/r{i}", "name": f"r{i}"} for i in range(30)]
    entities.append({"type": "entity", "id": "person/kim", "name": "Kim Lee"})
    entities.append({"type": "entity", "id": "person/jo", "name": "Jo Park", "summary": "great at everything"})

    def fact(i, source, **more):
        return {"type": "fact", "subject": f"repo/r{i % 30}", "predicate": "caveat", "value": f"caveat {i}"} | {
            "sources": [source],
            **more,
        }

    early = [fact(i, f"slack:m{i}") for i in range(250)]
    late = [
        fact(0, "report:again"),  # packed in the first chunk, observed again
        fact(7, "slack:m7-public", audience="public"),  # and heard in another audience
        {"type": "fact", "subject": "person/kim", "predicate": "caveat", "value": "moody", "sources": ["slack:x"]},
        fact(0, "report:third"),  # a second change of the same unpacked fact
    ]
    report = kg.json("import", records_file(tmp_path / "seed.jsonl", *entities, *early, *late), "--apply")
    assert report["facts"] == {"created": 250, "observed": 3}
    assert report["refused"] == {"whitelist": 2}  # the person with a summary, checked with the entities alone
    assert len(packed) >= 251  # (the path under test: every new fact packed once checked, the refused one too)
    kg("validate")

    def caveat(i):
        (found,) = [f for f in kg.json("facts", f"repo/r{i % 30}")["facts"] if f["value"] == f"caveat {i}"]
        return found

    zero, seven = caveat(0), caveat(7)
    assert zero["observations"] == 3
    assert sorted(f"{s['kind']}:{s['ref']}" for s in zero["sources"]) == ["report:again", "report:third", "slack:m0"]
    assert seven["audiences"] == ["owner", "public"]
    assert caveat(249)["observations"] == 1
    # every row of the journal once, and the index (made again from them) answers the same
    folders = sorted((kg.path / "journal").iterdir())
    rows = [row for folder in folders for patch in read_log(folder) for row in patch["rows"]]
    assert len(rows) == len(set(rows))
    # a change of a fact this import made cancels the rows it replaces: nothing was there to delete
    assert [row for op, row in rows if op == "D"] == []
    assert not any("moody" in row for _, row in rows)
    shutil.rmtree(kg.path / "index")
    assert caveat(0) == zero and caveat(7) == seven
    assert kg.json("stats")["fact_count"] == 250


@pytest.mark.parametrize("others", [0, 250], ids=["a few facts", "past the bulk threshold"])
def test_facts_heard_again_and_again_are_checked_in_a_view_kept_from_chunk_to_chunk(kg, tmp_path, monkeypatch, others):
    """A large import's facts heard more than Writer.HEARD_OFTEN times are checked in a view kept
    across its chunks (validation.StandingView), each chunk bringing it the rows staged since,
    rather than built whole once the staging is done. What the last check reads of them is what
    kg validate's view of the written knowledge base holds (less their update records), whether
    the write is checked as a small one (a few facts) or in bulk; the facts are whole."""
    import pyoxigraph as ox

    from kgrdf import importer, validation
    from kgrdf.kb import KnowledgeBase
    from kgrdf.writer import Writer

    monkeypatch.setattr(importer, "CHUNK", 25)
    monkeypatch.setattr(Writer, "HEARD_OFTEN", 10)

    def triples(store, keep=lambda triple: True):
        return sorted(
            t
            for t in (
                " ".join("_:" if isinstance(x, ox.BlankNode) else str(x) for x in (q.subject, q.predicate, q.object))
                for q in store.quads_for_pattern(None, None, None, ox.DefaultGraph())
            )
            if keep(t)
        )

    seen = []
    check, with_facts = validation.StandingView.check, validation.StandingView.with_facts

    def checking(self, *args):
        found = check(self, *args)
        seen.append((set(self.facts), triples(self._store)))
        return found

    def with_others(self, *args):
        store = with_facts(self, *args)
        seen.append((set(self.facts), triples(store)))
        return store

    monkeypatch.setattr(validation.StandingView, "check", checking)
    monkeypatch.setattr(validation.StandingView, "with_facts", with_others)
    entities = [{"type": "entity", "id": f"repo/r{i}", "name": f"r{i}"} for i in range(max(others, 3))]

    def heard(value, n, **more):
        return {"type": "fact", "subject": "repo/r0", "predicate": "caveat", "value": value} | {
            "sources": [f"slack:m{n % 40}"],  # a source heard again, as well as new ones
            "audience": ("owner", "public", "channel:eng")[n % 3],
            **more,
        }

    records = [
        *entities,
        *(heard("flaky", n) for n in range(200)),  # past the 200 records of a large write, whatever the facts
        heard("flaky", 200, prevents_rework=True),  # a field changed once the fact stands: a row deleted
        *(heard("slow", n) for n in range(30)),
        *(heard("rare", n) for n in range(3)),
        *(
            {"type": "fact", "subject": f"repo/r{i}", "predicate": "caveat", "value": "x", "sources": ["report:r"]}
            for i in range(others)
        ),
    ]
    report = kg.json("import", records_file(tmp_path / "seed.jsonl", *records), "--apply")
    assert report["facts"] == {"created": 3 + others, "observed": 231}
    (standing, last) = seen[-1]
    assert len(standing) == 2  # flaky and slow; rare was heard three times

    with KnowledgeBase.open(kg.path).reading() as session:
        whole = validation.view_of(session.backend.store)
    facts = tuple(f"<{iri}" for iri in standing)
    if others:  # the bulk path's standing view holds its own facts beside the entity they name and the ontology
        others_of = {t.split(" ")[0] for t in triples(whole) if "/fact/" in t.split(" ")[0]}
        others_of = {s for s in others_of if not s.startswith(facts)}
        others_of |= {f"<https://kgrdf.org/kb/main/repo/r{i}>" for i in range(1, others)}
        assert any(t.startswith("<https://kgrdf.org/kb/main/repo/r0> ") for t in last)
    else:
        others_of = set()
    expected = triples(whole, lambda t: "/update/" not in t.split(" ")[0] and t.split(" ")[0] not in others_of)
    assert len([t for t in expected if t.startswith(facts)]) > 1000
    assert last == expected

    facts = {f["value"]: f for f in kg.json("facts", "repo/r0")["facts"]}
    assert facts["flaky"]["observations"] == 201 and facts["slow"]["observations"] == 30
    assert sorted(facts["flaky"]["audiences"]) == ["channel:eng", "owner", "public"]
    kg("validate")


def test_a_bulk_load_as_large_as_the_index_leaves_it_compacted_and_a_small_one_leaves_it_alone(
    kg, tmp_path, monkeypatch
):
    """Each bulk load adds files of its own to the index, each spanning every key, which the store
    merges in the background of a write that a command ends first: a scan of every quad then reads
    them all (36-44 s instead of 8 s at 100k facts). A large write's load as large as what the index
    held is followed by a compaction, which leaves it in a few files; a later one, small beside the
    index, is not (the whole index would be rewritten for it)."""
    from kgrdf import kb as kb_module
    from kgrdf.store import oxigraph

    monkeypatch.setattr(kb_module, "LARGE", 2_000)  # the large path, loads and all, at a test's size
    monkeypatch.setattr(oxigraph, "LOAD_LINES", 500)  # a bulk load every 500 rows: many files
    compactions = []  # (the index's files holding data before, after)
    compact = oxigraph.OxigraphBackend.compact
    tables = 8  # the store's tables holding data here: its strings, six orders of quads, the graphs

    def files(larger_than=0):
        sizes = []
        for file in (kg.path / "index").glob("*.sst"):
            with contextlib.suppress(FileNotFoundError):  # (one the store deletes as it is counted)
                sizes.append(file.stat().st_size)
        return len([size for size in sizes if size > larger_than])

    def data_files():
        return files(larger_than=8_000)  # (a table holding almost nothing keeps a file of ~1.3 KB)

    def compacting(self):
        before = data_files()
        compact(self)
        # (the store deletes the files a compaction replaced in its background: on a busy machine a
        # count taken at once may still see them)
        deadline = time.monotonic() + 10
        while data_files() > tables and time.monotonic() < deadline:
            time.sleep(0.1)
        compactions.append((before, data_files()))

    monkeypatch.setattr(oxigraph.OxigraphBackend, "compact", compacting)
    loads = []  # the rows of each bulk load
    load = oxigraph.OxigraphBackend.load

    def loading(self, tx, compact=None):
        loads.append(len(tx.adds))
        load(self, tx, compact)

    monkeypatch.setattr(oxigraph.OxigraphBackend, "load", loading)

    kg("add-entity", "repo/r0", "--name", "r0")  # (a first write builds the index, compacted too)
    compactions.clear()
    kg("import", records_file(tmp_path / "first.jsonl", *_repos(20), *_caveats(0, 1000)), "--apply")
    ((before, after),) = compactions
    assert before > tables and after <= tables  # each table in one file (how many before varies:
    # the store merges some in its background as the loads go)
    compactions.clear()
    loads.clear()
    kg("import", records_file(tmp_path / "second.jsonl", *_caveats(1000, 120)), "--apply")
    assert len(loads) == 1 and loads[0] > 2_000  # (the path under test: the second import loads in bulk)
    assert compactions == []  # small beside the index: left to the store's own merging
    assert kg.json("stats")["fact_count"] == 1120
    kg("validate")


def _repos(n):
    return [{"type": "entity", "id": f"repo/r{i}", "name": f"r{i}"} for i in range(n)]


def _caveats(start, n):
    """Records of ``n`` caveats on 20 repos, numbered from ``start``."""
    return [
        {"type": "fact", "subject": f"repo/r{i % 20}", "predicate": "caveat", "value": f"c{i}", "sources": ["slack:x"]}
        for i in range(start, start + n)
    ]


def test_an_index_left_in_many_files_by_small_loads_is_compacted_by_kg_validate_and_kg_index_compact(
    kg, tmp_path, monkeypatch
):
    """Large writes small beside the index leave their loads' files (a 100k base grown by eleven of
    them: 73 files, a scan of every quad 65 s against 15 s compacted). kg index compact merges them,
    and kg validate does so first; what the index holds, and what validate finds, do not change."""
    from kgrdf import kb as kb_module
    from kgrdf.store import oxigraph

    monkeypatch.setattr(kb_module, "LARGE", 500)
    monkeypatch.setattr(oxigraph, "LOAD_LINES", 100)
    index = kg.path / "index"

    def files(folder=index):
        return len(list(folder.glob("*.sst")))

    def compacted():
        """The files of a copy of the index, compacted by the store itself."""
        import shutil

        import pyoxigraph

        copy = tmp_path / f"copy-{len(list(tmp_path.glob('copy-*')))}"
        shutil.copytree(index, copy)
        pyoxigraph.Store(str(copy)).optimize()
        return files(copy)

    def grow(start):
        """Small imports until the index has files enough beyond what compacting leaves (the store
        merges some of them in the background of a write, as it can)."""
        least = compacted() + 6
        for n in range(6):
            kg("import", records_file(tmp_path / f"more{start}-{n}.jsonl", *_caveats(start + 30 * n, 30)), "--apply")
            imported.append(30)
            assert loads.pop() == "loaded"  # (each a bulk load: the path under test)
            if files() >= least:
                return files(), least - 6
        raise AssertionError(f"the imports left {files()} files, compacted {least - 6}: the path is not under test")

    imported = [1000]
    loads = []
    load = oxigraph.OxigraphBackend._bulk_load
    monkeypatch.setattr(
        oxigraph.OxigraphBackend, "_bulk_load", lambda self, rows: (load(self, rows), loads.append("loaded"))
    )
    kg("import", records_file(tmp_path / "first.jsonl", *_repos(20), *_caveats(0, 1000)), "--apply")
    many, least = grow(1000)
    held = kg("export", "--format", "nquads").stdout

    report = kg.json("index", "compact")  # (counted open: a write's last rows may make one more file)
    assert report["compacted"] is True and report["files_before"] >= many and report["seconds"] >= 0
    assert report["files_after"] <= least + 1 and files() <= least + 1
    assert kg("export", "--format", "nquads").stdout == held
    again = kg.json("index", "compact")
    assert abs(again["files_after"] - again["files_before"]) <= 1 and again["files_after"] <= least + 1
    assert "now" in kg("index", "compact").stdout

    many, least = grow(2000)
    report = kg.json("validate")
    assert report["damage"] == [] and report["findings"] == []
    assert report["compacted"]["files_before"] >= many and files() <= least + 1
    assert kg.json("stats")["fact_count"] == sum(imported)


def test_kg_index_compact_refuses_an_index_that_does_not_open_and_says_the_way_out(kg, tmp_path):
    """A damaged table file: kg index compact exits 3 with the store's own word and the way out, and
    rewrites nothing; the next command that reads (kg validate here) makes the index again from the
    journal, as the README says of an index that does not open."""
    kg("import", records_file(tmp_path / "some.jsonl", *_repos(20), *_caveats(0, 40)), "--apply")
    table = max((kg.path / "index").glob("*.sst"), key=lambda p: p.stat().st_size)
    data = bytearray(table.read_bytes())
    for at in range(100, len(data) - 200, 997):
        data[at] ^= 0xFF
    table.write_bytes(bytes(data))
    refused = kg("index", "compact", expect=3)
    assert "cannot open the index" in refused.stderr and "rebuilds it from the journal" in refused.stderr
    assert table.read_bytes() == bytes(data)  # nothing rewritten
    checked = kg("validate")
    assert "rebuilding it from the journal" in checked.stderr and "clean" in checked.stdout


def test_a_write_of_a_fact_heard_again_and_again_is_journaled_beside_its_compaction_and_new_facts_beside_their_load(
    kg, tmp_path, monkeypatch
):
    """A large write's journal is written beside the index's load, which runs on both cores, unless
    the load is followed by a compaction (on one core) and the write is the rows of a few facts heard
    again and again: its journal, shorter than the compaction, is written beside that, after the load.
    Either way the write lands whole."""
    import threading

    from kgrdf import kb as kb_module
    from kgrdf.journal import Journal
    from kgrdf.store import oxigraph

    monkeypatch.setattr(kb_module, "LARGE", 100)
    monkeypatch.setattr(oxigraph.OxigraphBackend, "compacts_after", lambda self, tx: True)
    events: list[str] = []
    journaled = threading.Event()
    waits = {"for the journal": False}
    load, append = oxigraph.OxigraphBackend.load, Journal.append

    def loading(self, tx, compact=None):
        events.append("load")
        if waits["for the journal"]:  # held until the journal is written: a write that waited would hang
            assert journaled.wait(30), "the journal was not written beside the load"
        load(self, tx, compact)
        events.append("loaded")

    def appending(self, *args, **kwargs):
        events.append("journal")
        try:
            return append(self, *args, **kwargs)
        finally:
            journaled.set()

    monkeypatch.setattr(oxigraph.OxigraphBackend, "load", loading)
    monkeypatch.setattr(Journal, "append", appending)
    kg("add-entity", "repo/api", "--name", "api")
    copies = [
        {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": "flaky", "sources": [f"slack:m{i}"]}
        for i in range(300)
    ]
    events.clear()
    kg("import", records_file(tmp_path / "copies.jsonl", *copies), "--apply")
    assert events == ["load", "loaded", "journal"]
    (fact,) = kg.json("facts", "repo/api")["facts"]
    assert fact["observations"] == 300

    new = [
        {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": f"caveat {i}", "sources": ["doc:a"]}
        for i in range(150)
    ]
    events.clear()
    journaled.clear()
    waits["for the journal"] = True
    kg("import", records_file(tmp_path / "new.jsonl", *new), "--apply")
    assert events == ["load", "journal", "loaded"]
    assert len(kg.json("facts", "repo/api")["facts"]) == 151
    kg("validate")


# --- what an import's size costs: each record's work stays the same, whatever came before it ------


def test_values_of_one_subjects_predicate_are_found_by_their_key_not_by_reading_every_sibling(
    kg, tmp_path, monkeypatch
):
    """An import of many values of one subject's predicate finds a record's own value among the
    staged ones by its key: a value heard again (in other case and spacing) is observed, a new one
    made, and the work a record does stays the same however many siblings came before it (the
    values' keys read grow with the records, not with their square)."""
    from kgrdf import model

    reads = []
    key = model.Fact.value_key
    monkeypatch.setattr(model.Fact, "value_key", lambda self: reads.append(1) or key(self))
    n = 600
    records = [{"type": "entity", "id": "repo/api", "name": "api"}]
    records += [
        {
            "type": "fact",
            "subject": "repo/api",
            "predicate": "caveat",
            "value": f"caveat {i}",
            "sources": [f"slack:{i}"],
        }
        for i in range(n)
    ]
    records.append(
        {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": "  CAVEAT   7 ", "sources": ["pr:7"]}
    )
    report = kg.json("import", records_file(tmp_path / "values.jsonl", *records), "--apply")
    assert report["facts"] == {"created": n, "observed": 1}
    assert len(reads) < 10 * n, len(reads)  # before: 180k, each record reading every sibling's
    (seventh,) = [f for f in kg.json("lookup", "api")["facts"] if f["value"] == "caveat 7"]
    assert seventh["observations"] == 2 and [s["ref"] for s in seventh["sources"]] == ["7", "7"]
    assert len(kg.json("lookup", "api")["facts"]) == n


def test_facts_the_shapes_refuse_leave_an_import_in_one_pass_over_its_rows(kg, tmp_path, monkeypatch):
    """Facts refused by the shapes once staged are taken out of the import together: its pending
    rows are read once for all of them, not once for each (10k refused of 100k facts read two
    million rows 10k times). What is left is written whole, and nothing of the refused."""
    from kgrdf import nquads

    entities = [{"type": "entity", "id": f"repo/r{i}", "name": f"r{i}"} for i in range(30)]
    entities += [{"type": "entity", "id": f"person/p{i}", "name": f"P {i}"} for i in range(10)]
    good = [
        {"type": "fact", "subject": f"repo/r{i % 30}", "predicate": "caveat", "value": f"c {i}", "sources": ["slack:g"]}
        for i in range(300)
    ]
    refused = [
        {"type": "fact", "subject": f"person/p{i % 10}", "predicate": "caveat", "value": f"moody {i}"}
        | {"sources": [f"slack:x{i}"]}
        for i in range(150)
    ]
    records = [*entities, *good[:150], *refused, *good[150:]]
    asked = []
    graph_of = nquads.graph_of
    monkeypatch.setattr(nquads, "graph_of", lambda line: asked.append(1) or graph_of(line))
    report = kg.json("import", records_file(tmp_path / "refused.jsonl", *records), "--apply")
    assert report["facts"] == {"created": 300} and report["refused"] == {"whitelist": 150}
    rows = (300 + 150) * 25  # more than the import stages: one pass reads fewer
    assert len(asked) <= rows, len(asked)  # before: 30k, a pass for each refused fact
    assert kg.json("stats")["fact_count"] == 300
    assert b"moody" not in journal_bytes(kg.path / "journal")
    kg("validate")


def test_copies_that_come_to_two_trusted_kinds_are_confirmed_at_the_record_that_brings_the_second(kg, tmp_path):
    """With --auto-confirm, copies of one fact keep count of their sources' kinds as they come, each
    record looking at its own source, not at all before it (20k copies: 50 s against 3 s): the
    copy that brings a second trusted kind confirms the fact, and no copy before it does."""
    n = 400
    record = {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": "flaky tests"}
    records = [{"type": "entity", "id": "repo/api", "name": "api"}]
    records += [record | {"sources": [f"slack:m{i}" if i % 2 else f"report:r{i}"]} for i in range(n)]
    records.append(record | {"sources": ["ledger:L1"]})  # the second trusted kind, last
    records += [record | {"sources": [f"chat:c{i}"]} for i in range(3)]
    report = kg.json("import", records_file(tmp_path / "copies.jsonl", *records), "--apply", "--auto-confirm")
    assert report["facts"] == {"created": 1, "observed": n + 3}
    assert report["auto_confirmed"] == {"two trusted sources of different kinds": 1}
    (fact,) = kg.json("lookup", "api")["facts"]
    assert fact["status"] == "confirmed" and fact["observations"] == n + 4
    (event,) = [e for e in kg.json("history", fact["id"])["history"] if e["action"] == "confirm"]
    assert event["reason"] == "auto-confirmed: two trusted sources of different kinds"


def test_a_facts_source_kinds_look_at_each_source_once_however_often_they_are_asked():
    """What auto-confirm asks of a fact on every copy an import observes: its sources' kinds. Asked
    after each of N sources appended, each source is looked at once (not N²/2 times); sources
    replaced, or a copy of the fact, are counted afresh."""
    from dataclasses import replace

    from pyoxigraph import Literal

    from kgrdf import model

    looked = []

    class Seen:
        def __init__(self, kind):
            self._kind = kind

        @property
        def kind(self):
            looked.append(self._kind)
            return self._kind

    fact = model.Fact("f-aaaaaa", "urn:f", "urn:s", "urn:p", Literal("v"), sources=[Seen("slack")])
    kinds = []
    for i in range(300):
        fact.sources.append(Seen(["slack", "report", "ledger"][i % 3] if i < 100 else "pr"))
        kinds.append(fact.source_kinds())
    assert len(looked) == 301
    assert (
        kinds[0] == {"slack"} and kinds[1] == {"slack", "report"} and kinds[-1] == {"slack", "report", "ledger", "pr"}
    )
    fact.sources = [Seen("memory")]
    assert fact.source_kinds() == {"memory"}
    copy = replace(fact, sources=[*fact.sources, Seen("doc")])
    assert copy.source_kinds() == {"memory", "doc"} and fact.source_kinds() == {"memory"}


def test_a_record_of_a_fact_in_any_status_is_taken_as_kg_propose_takes_it(seeded, monkeypatch, tmp_path):
    """A record of a fact the knowledge base holds as proposed, confirmed, rejected, expired or
    closed: the import does to it what kg propose does, in a dry run and applied, beside a record of
    a new fact. (A record of a rejected fact, which the write leaves as it was, made every import
    holding one fail with an unexpected error.)"""
    from tests.conftest import Kg

    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T09:00:00Z")

    def fact(subject, predicate, *target):
        return seeded.json("propose", subject, predicate, *target, "--source", "report:first")["id"]

    held = {
        "proposed": fact("repo/api", "caveat", "--value", "Slow tests"),
        "confirmed": fact("repo/web-app", "caveat", "--value", "Flaky deploys"),
        "rejected": fact("process/release", "posts_to", "--object", "channel/ops"),
        "expired": fact("repo/api", "caveat", "--value", "Cold caches"),
        "closed": fact("process/release", "entry_point", "--object", "channel/ops"),
    }
    seeded("confirm", held["confirmed"])
    seeded("reject", held["rejected"])
    seeded("confirm", held["closed"])
    seeded("confirm", fact("process/release", "entry_point", "--object", "channel/deploys"))
    monkeypatch.setenv("KGRDF_NOW", "2026-02-15T09:00:00Z")
    seeded("propose", "repo/api", "caveat", "--value", "slow tests", "--source", "report:again")
    seeded("propose", "repo/web-app", "caveat", "--value", "flaky deploys", "--source", "report:again")
    assert seeded.json("expire")["expired"] == 1
    statuses = {
        f["id"]: f["status"] for s in ("repo/api", "process/release") for f in seeded.json("facts", s, "--all")["facts"]
    }
    assert statuses[held["expired"]] == "expired" and statuses[held["rejected"]] == "rejected"

    # each in another spelling than it was written in, and one new fact
    records = [
        ("proposed", {"subject": "api", "predicate": "caveat", "value": "  slow TESTS"}),
        ("confirmed", {"subject": "webapp", "predicate": "caveat", "value": "Flaky  deploys"}),
        ("rejected", {"subject": "release", "predicate": "posts_to", "object": "#ops"}),
        ("expired", {"subject": "repo/api", "predicate": "caveat", "value": "cold caches"}),
        ("closed", {"subject": "release", "predicate": "entry_point", "object": "channel/ops"}),
        ("new", {"subject": "repo/api", "predicate": "caveat", "value": "no staging"}),
    ]
    monkeypatch.setenv("KGRDF_NOW", "2026-02-20T09:00:00Z")
    expected = {}
    for name, record in records:  # what kg propose does to each, on a copy of the knowledge base
        copy = Kg(tmp_path / f"propose-{name}")
        shutil.copytree(seeded.path, copy.path)
        target = ["--object", record["object"]] if "object" in record else ["--value", record["value"]]
        said = copy.json("propose", record["subject"], record["predicate"], *target, "--source", "slack:later")
        expected[name] = (said["outcome"], said["status"], said["id"] if name in held else None)
    assert expected["rejected"] == ("rejected", "rejected", held["rejected"])  # what the test is about

    seed = records_file(
        tmp_path / "again.jsonl",
        *[{"type": "fact", **r, "sources": [f"slack:{n}"]} for n, (_, r) in enumerate(records)],
    )
    before = seeded.snapshot()
    dry = seeded.json("import", seed)
    assert seeded.snapshot() == before
    applied = seeded.json("import", seed, "--apply")
    for report in (dry, applied):
        outcomes = {}
        for outcome, _status, _id in expected.values():
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        assert report["facts"] == outcomes
        assert report["refusals"] == []
    after = {
        f["id"]: f["status"]
        for s in ("repo/api", "repo/web-app", "process/release")
        for f in seeded.json("facts", s, "--all")["facts"]
    }
    for name, (_outcome, status, fact_id) in expected.items():
        if fact_id is not None:
            assert after[fact_id] == status, name
    rejected = seeded.json("history", held["rejected"])["fact"]
    assert rejected["status"] == "rejected" and rejected["observations"] == 1  # nothing of the record recorded


def test_a_fact_the_shapes_refuse_takes_its_first_records_alone_when_a_later_one_makes_it_anew(kg, tmp_path):
    """Records of one fact, the first ones refused by the shapes as they made it (a person's stated
    preference heard as observed), a later one acceptable alone (heard from the stakeholder): the
    import refuses the first ones and makes the fact of the later one, as kg propose one by one
    does. (Every record of it was refused, each with the first one's reason.)"""
    from tests.conftest import Kg

    kg("add-entity", "person/sam", "--name", "Sam Reyes", "--alias", "Sam")
    kg("add-entity", "repo/web", "--name", "web")
    one_by_one = Kg(tmp_path / "one-by-one")
    shutil.copytree(kg.path, one_by_one.path)
    pref = {"type": "fact", "subject": "Sam", "predicate": "stated_preference", "value": "async reviews"}
    records = [
        {**pref, "sources": ["slack:a"]},
        {"type": "fact", "subject": "web", "predicate": "caveat", "value": "slow tests", "sources": ["slack:w"]},
        {**pref, "value": "Async reviews", "sources": ["slack:b"]},
        {**pref, "sources": ["slack:c"], "authority": "stakeholder"},
        {**pref, "sources": ["slack:d"], "authority": "stakeholder"},
    ]
    from typer.testing import CliRunner

    from kgrdf.cli import app

    refused_alone = []
    for n, record in enumerate(records, start=1):
        extra = ["--authority", record["authority"]] if "authority" in record else []
        argv = ["propose", record["subject"], record["predicate"], "--value", record["value"], *extra]
        said = CliRunner().invoke(app, [*argv, "-s", record["sources"][0], "--kb", str(one_by_one.path)])
        assert said.exit_code in (0, 1), said.output
        if said.exit_code:
            refused_alone.append(n)
    assert refused_alone == [1, 3]
    report = kg.json("import", records_file(tmp_path / "pref.jsonl", *records), "--apply")
    assert [(r["line"], r["reason"]) for r in report["refusals"]] == [(1, "whitelist"), (3, "whitelist")]
    assert report["facts"] == {"created": 2, "observed": 1}

    def held(base):
        return sorted(
            (f["predicate"], f["value"], f["authority"], tuple(sorted(s["ref"] for s in f["sources"])))
            for s in ("person/sam", "repo/web")
            for f in base.json("facts", s, "--all")["facts"]
        )

    assert held(kg) == held(one_by_one)
    assert ("stated_preference", "async reviews", "stakeholder", ("c", "d")) in held(kg)
    kg("validate")


def test_an_alias_that_is_no_text_refuses_its_record_alone(kg, tmp_path):
    """An entity record's aliases are read ahead of it, a block of records at a time: one that is no
    text the knowledge base can hold (a lone surrogate, a number, an id-less record's) refuses its
    own record when it is staged, and the import goes on. (It failed the whole import with an
    unexpected error.)"""
    seed = tmp_path / "aliases.jsonl"
    lines = [
        '{"type": "entity", "id": "repo/a0", "name": "a0", "aliases": ["\\udcff", "fine alias"]}',
        '{"type": "entity", "aliases": ["\\udcff"], "weak_aliases": null}',
        '{"type": "entity", "id": "repo/a1", "name": "a1", "aliases": [7]}',
        '{"type": "entity", "id": "repo/a2", "name": "a2", "aliases": ["a two"]}',
    ]
    seed.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = kg.snapshot()
    for apply in ([], ["--apply"]):
        report = kg.json("import", seed, *apply)
        assert report["refused"] == {"malformed": 3} and report["entities"] == {"created": 1}
        assert [r["line"] for r in report["refusals"]] == [1, 2, 3]
        if not apply:
            assert kg.snapshot() == before
    assert kg.json("lookup", "a two")["entity"]["id"] == "repo/a2"


def test_an_empty_summary_given_to_an_entity_without_one_changes_nothing_and_says_so(kg, tmp_path):
    """The record said "1 updated" beside "nothing written", and kg add-entity "updated": an empty
    summary was told from none, though neither is kept."""
    kg("add-entity", "repo/api", "--name", "api")
    path = records_file(tmp_path / "same.jsonl", {"type": "entity", "id": "repo/api", "name": "api", "summary": ""})
    assert kg.json("import", path, "--apply")["entities"] == {"unchanged": 1}
    assert kg("add-entity", "repo/api", "--name", "api", "--summary", "").stdout.startswith("unchanged repo/api")
    kg("add-entity", "repo/api", "--name", "api", "--summary", "the public API")
    assert kg("add-entity", "repo/api", "--name", "api", "--summary", "").stdout.startswith("updated repo/api")
    assert kg.json("lookup", "api")["entity"].get("summary") is None  # an empty summary still takes one away


@pytest.mark.parametrize("syntax", ["trig", "nquads", "jsonld", "turtle"])
def test_an_export_given_to_import_is_named_rdf_in_one_line_and_nothing_is_written(kg, tmp_path, syntax):
    """Each line was refused as no JSON (the JSON-LD's every object as no record), and the import
    exited 0, saying nothing of why: kg import reads records, not what kg export writes."""
    kg("add-entity", "repo/api", "--name", "api")
    exported = tmp_path / f"kb.{syntax}"
    kg("export", "-f", syntax, "--output", exported)
    before = kg.snapshot()
    line = one_line(kg("import", exported, "--apply", expect=2))
    assert line == (
        f"kg: {exported} is RDF (as kg export writes it), not records: kg import reads JSON records, "
        "one object a line or a JSON array of them (kg import --help)"
    )
    assert kg.snapshot() == before


def test_an_import_refusal_names_the_record_s_fields_not_the_options_of_a_command(kg, tmp_path):
    """A record without a name was refused as "an entity needs a --name", one without sources as
    needing "--source KIND:REF": an import file has no options to give."""
    kg("add-entity", "repo/api", "--name", "api")
    path = records_file(
        tmp_path / "refused.jsonl",
        {"type": "entity", "id": "repo/web", "name": "  "},
        {"type": "fact", "subject": "repo/api", "predicate": "caveat", "value": "slow", "sources": []},
        {
            "type": "fact",
            "subject": "repo/api",
            "predicate": "caveat",
            "value": "v",
            "sources": ["doc:a"],
            "valid_from": "2026-03-01",
            "valid_to": "2026-02-01",
        },
    )
    said = [r["message"] for r in kg.json("import", path, "--apply")["refusals"]]
    assert said[0] == 'an entity needs a "name"'
    assert said[1].startswith('a fact needs at least one "sources" (where it came from)')
    assert '"valid_from" 2026-03-01T00:00:00Z is after "valid_to" 2026-02-01T00:00:00Z' in said[2]
    assert not any("--" in message for message in said)


def test_an_import_refusal_of_a_claim_names_the_said_by_field(kg, tmp_path):
    """A claim without its speaker was refused with "give --said-by", one whose speaker is a repo
    with "--said-by names an actor or a person": an import file has no options."""
    kg("org", "add", "Acme")
    kg("add-entity", "repo/api", "--name", "api")
    path = records_file(
        tmp_path / "claims.jsonl",
        {"type": "fact", "subject": "Acme", "predicate": "claimed_member", "value": "Jim", "sources": ["slack:x"]},
        {
            "type": "fact",
            "subject": "Acme",
            "predicate": "claimed_member",
            "value": "Jo",
            "sources": ["slack:y"],
            "said_by": "repo/api",
        },
    )
    said = [r["message"] for r in kg.json("import", path, "--apply")["refusals"]]
    assert len(said) == 2 and all('"said_by"' in message and "--said-by" not in message for message in said), said


def test_the_benchmarks_records_all_go_in_and_their_generated_base_validates(kg, tmp_path):
    """bench/generate.py's data is what the benchmarks time: were the schema to refuse some of it
    (an alias between two kinds, a claim with no speaker), an import benchmark would time refusals
    and report the facts it left out as imported, and kg validate would time violations."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from generate import generate, records

    path = tmp_path / "records.jsonl"
    records(path, 3000)
    done = kg.json("import", path, "--apply")
    assert (done["refused_total"], done["facts"]["created"]) == (0, 3000), done["refusals"][:3]
    made = Kg(tmp_path / "generated")
    generate(made.path, 3000)
    violations = [f for f in made.json("validate")["findings"] if f["severity"] != "warning"]
    assert violations == [], violations[:3]
