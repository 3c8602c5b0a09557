"""SHACL on the write path, kg validate and kg schema."""

import pytest


def test_validate_reports_a_clean_knowledge_base(demo):
    result = demo("validate")
    assert "clean" in result.stdout
    assert demo.json("validate") == {"damage": [], "findings": []}


def test_validate_reports_a_journal_edited_outside_kgrdf_as_damage(demo):
    segment = sorted((demo.path / "journal").rglob("*.rdfp"))[-1]
    segment.write_bytes(segment.read_bytes().replace(b"#deploys", b"#deploy5"))
    report = demo.json("validate", expect=3)
    checks = {d["check"] for d in report["damage"]}
    assert "journal position" in checks and "edited outside kgrdf" in checks


def test_validate_reports_a_torn_tail(demo):
    segment = sorted((demo.path / "journal").rglob("*.rdfp"))[-1]
    with open(segment, "ab") as out:
        out.write(b'H id <urn:uuid:t> .\nTX .\n')
    report = demo.json("validate", expect=3)
    assert "torn tail" in {d["check"] for d in report["damage"]}


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
])
def test_shapes_refuse_on_the_write_path_and_nothing_is_written(seeded, args, reason):
    before = seeded.snapshot()
    result = seeded(*args, expect=1)
    assert reason in result.stderr
    assert seeded.snapshot() == before
