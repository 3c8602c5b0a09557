"""Site schema extensions: accepted ones are usable by propose; none can add a predicate about a person."""

import json

import pytest

ON_CALL = {"name": "on_call_for", "axis": "Process", "object": "entity", "domain": ["team"],
           "range": ["repo"], "sentence": "{subject} is on call for {target}"}


def write(kg, data):
    (kg.path / "schema.json").write_text(json.dumps(data))


def test_an_accepted_extension_adds_a_predicate_about_a_team_that_propose_can_use(seeded):
    write(seeded, {"predicates": [ON_CALL]})
    doc = seeded.json("schema")
    assert doc["extension"] == {"accepted": True, "problems": []}
    assert "on_call_for" in {p["key"] for p in doc["predicates"]}
    fact = seeded.json("propose", "team/web", "on_call_for", "--object", "repo/web-app", "--source", "ledger:rota")
    assert fact["sentence"] == "Web team is on call for web-app"
    assert seeded.json("lookup", "team/web")["facts"][0]["predicate"] == "on_call_for"
    refused = seeded("propose", "repo/api", "on_call_for", "--object", "repo/web-app", "--source", "ledger:r", expect=1)
    assert "on_call_for is not about a repo" in refused.stderr


@pytest.mark.parametrize("data, reason", [
    ({"predicates": [{**ON_CALL, "name": "mentors", "domain": ["person"]}]}, "would be about a person"),
    ({"predicates": [{**ON_CALL, "name": "nicknamed", "object": "value", "domain": [], "range": ["actor"]}]},
     "would be about a person"),
    ({"types": [{"name": "contractor", "axis": "People", "subclass_of": "person"}],
      "predicates": [{**ON_CALL, "name": "hourly_rate", "object": "value", "domain": ["contractor"], "range": []}]},
     "would be about a person"),
    ({"predicates": [{**ON_CALL, "name": "code_buddy_of", "domain": ["team"], "subproperty_of": "reviews"}]},
     "subproperty of the People whitelist's reviews"),
    ({"predicates": [{**ON_CALL, "name": "owns"}]}, "owns is already a core predicate"),
    ({"predicates": [{**ON_CALL, "name": "no_words", "sentence": ""}]}, "needs a reviewer sentence"),
])
def test_an_extension_about_a_person_or_clashing_with_the_core_is_refused(seeded, tmp_path, data, reason):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(data))
    result = seeded("schema", "check", path, "--json", kb=False, expect=1)
    doc = json.loads(result.stdout)
    assert doc["accepted"] is False
    assert any(reason in p for p in doc["problems"]), doc["problems"]


def test_a_refused_extension_never_stops_the_knowledge_base(seeded):
    write(seeded, {"predicates": [{**ON_CALL, "name": "mentors", "domain": ["person"]}]})
    doc = seeded.json("schema")
    assert doc["extension"]["accepted"] is False
    assert "mentors" not in {p["key"] for p in doc["predicates"]}
    assert "refused" in seeded("schema").stdout
    fact = seeded.json("propose", "repo/api", "caveat", "--value", "still works", "--source", "pr:1")
    assert fact["status"] == "proposed"
    unknown = seeded("propose", "person/dana", "mentors", "--object", "team/web", "--source", "pr:1", expect=1)
    assert "unknown predicate 'mentors'" in unknown.stderr


def test_a_malformed_schema_json_is_reported_not_fatal(seeded, tmp_path):
    path = tmp_path / "schema.json"
    path.write_text("{not json")
    doc = json.loads(seeded("schema", "check", path, "--json", kb=False, expect=1).stdout)
    assert "is not JSON" in doc["problems"][0]
    path.write_text(json.dumps({"predicates": [{"name": "x", "axis": "Sideways", "object": "entity"}]}))
    doc = json.loads(seeded("schema", "check", path, "--json", kb=False, expect=1).stdout)
    assert "axis must be one of" in doc["problems"][0]
