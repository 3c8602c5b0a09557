"""SHACL on the write path, kg validate and kg schema."""

import json
from pathlib import Path

import pytest


def test_validate_reports_a_clean_knowledge_base(demo):
    result = demo("validate")
    assert "clean" in result.stdout
    assert demo.json("validate") == {"damage": [], "findings": []}


def test_validate_reports_a_journal_edited_outside_kgrdf_as_damage(demo):
    segment = next(p for p in sorted((demo.path / "journal").rglob("*.rdfp")) if b"#deploys" in p.read_bytes())
    segment.write_bytes(segment.read_bytes().replace(b"#deploys", b"#deploy5"))
    report = demo.json("validate", expect=3)
    checks = {d["check"] for d in report["damage"]}
    assert "journal position" in checks and "edited outside kgrdf" in checks


def test_validate_sets_a_torn_tail_aside_like_any_command_then_reports_clean(demo):
    from .test_storage import next_patch_file

    segment = next_patch_file(demo.path)  # a write cut short leaves its new patch file short
    segment.write_bytes(b'H id <urn:uuid:t> .\nTX .\n')
    result = demo("validate", "--json")
    assert "set aside a torn journal tail of 25 bytes" in result.stderr
    assert [p.name.split(".torn-")[0] for p in segment.parent.glob("*.torn-*")] == [segment.name]
    assert json.loads(result.stdout)["damage"] == []


def test_validate_reports_a_torn_tail_the_store_checks_find(demo):
    from kgrdf import validation
    from kgrdf.kb import KnowledgeBase

    from .test_storage import next_patch_file

    next_patch_file(demo.path).write_bytes(b'H id <urn:uuid:t> .\nTX .\n')
    checks = {d["check"] for d in validation.check_store(KnowledgeBase.open(demo.path))}
    assert "torn tail" in checks


def test_a_second_current_value_of_a_single_valued_predicate_is_a_warning_not_a_refusal(seeded):
    seeded("propose", "release", "entry_point", "--object", "channel/ops", "--source", "report:a")
    doc = seeded.json("propose", "release", "entry_point", "--object", "channel/deploys", "--source", "report:b")
    assert doc["status"] == "proposed"
    findings = seeded.json("validate")["findings"]
    assert {f["severity"] for f in findings} == {"warning"}
    assert all("entry_point is single-valued" in f["message"] for f in findings)


def test_schema_lists_types_and_predicates_with_markers(kg):
    doc = kg.json("schema")
    assert len(doc["types"]) == 16
    by_key = {p["key"]: p for p in doc["predicates"]}
    assert by_key["entry_point"]["single_valued"] and not by_key["entry_point"]["high_risk"]
    assert by_key["approves"]["high_risk"] and by_key["approves"]["person_ok"]
    assert by_key["caveat"]["object"] == "value" and by_key["reviews"]["object"] == "entity"
    assert "@prefix kg:" in kg("schema", "--format", "turtle").stdout
    assert "unknown schema format" in kg("schema", "--format", "xml", expect=2).stderr


def test_the_shapes_conform_to_the_shapes_for_shacl():
    from pyshacl import validate

    from kgrdf.validation import shapes_graph

    conforms, _, text = validate(shapes_graph(), shacl_graph=shapes_graph(), meta_shacl=True)
    # meta_shacl checks the shapes graph itself against SHACL's own shapes before validating.
    assert conforms, text


@pytest.mark.parametrize("args, reason", [
    (["add-entity", "person/eve", "--name", "Eve", "--summary", "likes cats"], "a person has no summary"),
    (["propose", "Dana", "caveat", "--value", "moody", "--source", "pr:1"], "not on the People whitelist"),
    (["propose", "Dana", "stated_preference", "--value", "tables", "--source", "pr:1"], "stated_* fact"),
    (["propose", "Dana", "reviews", "--object", "person/dan", "--source", "pr:1"], "reviews does not point to a person"),
])
def test_shapes_refuse_on_the_write_path_and_nothing_is_written(seeded, args, reason):
    before = seeded.snapshot()
    result = seeded(*args, expect=1)
    assert reason in result.stderr
    assert seeded.snapshot() == before


SHAPE_CASES = sorted((Path(__file__).parent / "shapes").glob("*/*.ttl"))


def _findings(path):
    """Validate an example, written in the validation view's form, the way a write is validated."""
    import pyoxigraph as ox

    from kgrdf import validation

    quads = [ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph())
             for t in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE)]
    data = validation.view([], quads)  # the ontology beside the example's triples
    focus = sorted({q.subject.value for q in quads if q.subject.value.startswith("https://kgrdf.org/kb/")
                    and "/source/" not in q.subject.value})
    return validation.check(data, focus)


@pytest.mark.parametrize("path", SHAPE_CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_shape_passes_its_good_example_and_fails_its_bad_one(path):
    expected = path.read_text().splitlines()[0].removeprefix("# expect:").strip()
    findings = _findings(path)
    violations = [f.message for f in findings if f.severity == "violation"]
    warnings = [f.message for f in findings if f.severity == "warning"]
    if path.parent.name == "good":
        assert violations == [] and warnings == []
    elif path.parent.name == "bad":
        assert any(expected in message for message in violations), violations
    else:
        assert violations == [] and any(expected in message for message in warnings), warnings


def test_every_shape_has_a_bad_example():
    import re

    import rdflib

    from kgrdf.validation import shapes_graph

    templates = {str(o) for o in shapes_graph().objects(None, rdflib.URIRef("http://www.w3.org/ns/shacl#message"))}
    expected = [path.read_text().splitlines()[0].removeprefix("# expect:").strip() for path in SHAPE_CASES
                if path.parent.name != "good"]

    def covered(template):
        pattern = ".+?".join(re.escape(part) for part in re.split(r"\{\?\w+\}", template))
        return any(e in template or re.fullmatch(pattern, e) or re.match(pattern, e) for e in expected)

    assert [t for t in templates if not covered(t)] == []


@pytest.mark.parametrize("path", SHAPE_CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_whole_knowledge_base_validation_finds_what_pyshacl_finds(path):
    import pyoxigraph as ox

    from kgrdf import shacl, validation

    quads = [ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph())
             for t in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE)]
    set_based = {(f.focus, f.message, f.severity) for f in shacl.check(validation.view([], quads),
                                                                        validation.shapes_graph())}
    one_by_one = {(f.focus, f.message, f.severity) for f in _findings(path)}
    assert set_based == one_by_one
