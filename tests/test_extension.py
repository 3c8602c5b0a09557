"""Site schema extensions: accepted ones are usable by propose; none can add a predicate about a person;
every clash of names is refused with its own one-line reason, and no two accepted names are one IRI
(a property test); checked with --kb, one must keep what the knowledge base's data uses."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

ON_CALL = {
    "name": "on_call_for",
    "axis": "Process",
    "object": "entity",
    "domain": ["team"],
    "range": ["repo"],
    "sentence": "{subject} is on call for {target}",
}


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


def test_a_subproperty_of_a_high_risk_or_single_valued_predicate_is_one_too(seeded):
    lifecycle = {**_predicate("lifecycle", axis="Product", domain=["environment"]), "subproperty_of": "status"}
    guarded = {
        **ON_CALL,
        "name": "guarded_by",
        "domain": ["process"],
        "range": ["gate"],
        "subproperty_of": "gated_by",
    }
    write(seeded, {"predicates": [lifecycle, guarded]})
    marks = {p["key"]: p for p in seeded.json("schema")["predicates"]}
    assert marks["lifecycle"]["high_risk"] and marks["lifecycle"]["single_valued"]
    assert marks["guarded_by"]["high_risk"] and not marks["guarded_by"]["single_valued"]
    seeded("add-entity", "environment/qa", "--name", "qa")
    seeded("add-entity", "process/ship", "--name", "ship")
    seeded("add-entity", "gate/gatekeeper", "--name", "gatekeeper")
    two = ("-s", "ledger:L1", "-s", "report:R1")  # two trusted kinds: enough for a low-risk fact
    for args in (
        ("environment/qa", "lifecycle", "--value", "retired"),
        ("process/ship", "guarded_by", "--object", "gatekeeper"),
    ):
        fact = seeded.json("propose", *args, *two)
        assert fact["status"] == "proposed" and "high-risk" in fact["note"], fact
    first = seeded.json("propose", "environment/qa", "lifecycle", "--value", "retired", *two)["id"]
    other = seeded.json("propose", "environment/qa", "lifecycle", "--value", "active", *two)["id"]
    seeded("confirm", first)
    seeded("confirm", other)  # one value at a time: confirming the other closes the first
    current = seeded.json("facts", "environment/qa")["facts"]
    assert [f["id"] for f in current if f["predicate"] == "lifecycle"] == [other]


def test_a_subproperty_of_a_date_takes_dates_alone(seeded):
    """ratified, a subproperty of decided (a date), took "sometime last spring", and kg validate
    said clean: a value of it is one of its parent's, which takes a date."""
    ratified = {**_predicate("ratified", axis="Product"), "subproperty_of": "decided"}
    met = {**_predicate("met_at", axis="Organizations"), "subproperty_of": "last_contact_at"}
    write(seeded, {"predicates": [ratified, met]})
    seeded("add-entity", "decision/d1", "--name", "D1")
    seeded("add-entity", "organization/acme", "--name", "Acme")
    before = seeded.snapshot()
    for subject, key in (("decision/d1", "ratified"), ("organization/acme", "met_at")):
        refused = seeded("propose", subject, key, "--value", "sometime last spring", "-s", "ledger:1", expect=2)
        assert f"{key} value 'sometime last spring' is not a date" in refused.stderr
    assert seeded.snapshot() == before
    assert seeded.json("propose", "decision/d1", "ratified", "--value", "2026-03-01", "-s", "ledger:1")["value"]
    assert "clean" in seeded("validate").stdout
    both = {**_predicate("settled", axis="Product"), "subproperty_of": ["decided", "status"]}  # a date and a text
    (seeded.path / "next.json").write_text(json.dumps({"predicates": [both]}))
    checked = seeded("schema", "check", seeded.path / "next.json", expect=1).stdout
    assert "settled: its parents in subproperty_of take values of different kinds" in checked


def test_a_subproperty_of_a_claim_is_refused_and_takes_no_claim_confirmed_by_its_sources(seeded):
    """rumored_member under claimed_member was accepted, and a fact of it, said by no one, was
    confirmed by two sources: hearsay in agents' context packs as a confirmed fact, where a claim is
    recorded with its speaker and confirmed by no source."""
    rumored = {
        **_predicate("rumored_member", axis="Organizations", domain=["organization"]),
        "subproperty_of": ["claimed_member"],
    }
    (seeded.path / "next.json").write_text(json.dumps({"predicates": [rumored]}))
    checked = seeded("schema", "check", seeded.path / "next.json", expect=1).stdout
    assert "rumored_member: claimed_member takes no subproperty: a claim is hearsay" in checked
    write(seeded, {"predicates": [rumored]})  # copied in all the same
    seeded("org", "add", "Acme")
    before = seeded.snapshot()
    refused = seeded(
        "propose", "Acme", "rumored_member", "--value", "Jim", "-s", "ledger:a", "-s", "report:b", expect=1
    )
    assert "unknown predicate 'rumored_member'" in refused.stderr
    assert seeded.snapshot() == before


def test_kg_org_set_of_a_key_the_site_schema_declares_for_organizations_writes_that_predicate(seeded):
    """kg org set Acme met_at yesterday, met_at a site predicate of organizations taking dates,
    wrote a free-text attribute "met_at: yesterday" beside the predicate, past its date check."""
    met = {**_predicate("met_at", axis="Organizations", domain=["organization"]), "subproperty_of": "last_contact_at"}
    worth = _predicate("contract_value", axis="Organizations", domain=["organization"])
    write(seeded, {"predicates": [met, worth]})
    seeded("org", "add", "Acme")
    before = seeded.snapshot()
    refused = seeded("org", "set", "Acme", "met_at", "yesterday", "-s", "slack:q", expect=2)
    assert "met_at value 'yesterday' is not a date" in refused.stderr
    assert seeded.snapshot() == before
    made = [seeded.json("org", "set", "Acme", key, value, "-s", "slack:q") for key, value in
            (("Met at", "2026-03-01"), ("contract value", "30k"), ("colour", "red"))]  # fmt: skip
    assert [(f["predicate"], f["value"]) for f in made] == [
        ("met_at", "2026-03-01"),
        ("contract_value", "30k"),
        ("attribute", "colour: red"),
    ]


def test_values_written_before_their_predicate_took_dates_are_found_by_every_check(seeded, tmp_path):
    """met_at, text until a schema.json made it a subproperty of last_contact_at (a date): kg schema
    check --kb accepted the change over "last tuesday", kg confirm put it into current reads, and
    kg validate said clean."""
    met = {**_predicate("met_at", axis="Organizations", domain=["organization"])}
    write(seeded, {"predicates": [met]})
    seeded("add-entity", "organization/acme", "--name", "Acme")
    text = seeded.json("propose", "organization/acme", "met_at", "--value", "last tuesday", "-s", "slack:a")
    dated = {"predicates": [{**met, "subproperty_of": "last_contact_at"}]}
    (tmp_path / "next.json").write_text(json.dumps(dated))
    checked = seeded("schema", "check", tmp_path / "next.json", expect=1)
    assert "met_at takes a date (YYYY-MM-DD)" in checked.stdout + checked.stderr
    write(seeded, dated)  # copied in unchecked
    assert f"{text['id']}: met_at takes a date (YYYY-MM-DD)" in seeded("validate", expect=1).stdout
    refused = seeded("confirm", text["id"], expect=1)
    assert "met_at takes a date" in refused.stderr and "kg reject takes it out of current reads" in refused.stderr
    assert seeded.json("reject", text["id"])["status"] == "rejected"


def test_a_subproperty_that_names_no_domain_or_range_takes_its_parents_and_propose_keeps_to_it(seeded):
    unbounded = {k: v for k, v in ON_CALL.items() if k not in ("domain", "range")}
    hard = unbounded | {"name": "hard_dep", "axis": "Product", "subproperty_of": "depends_on"}
    write(seeded, {"predicates": [hard]})
    doc = seeded.json("schema")
    assert doc["extension"] == {"accepted": True, "problems": []}
    marks = {p["key"]: p for p in doc["predicates"]}
    assert (marks["hard_dep"]["domain"], marks["hard_dep"]["range"]) == (
        marks["depends_on"]["domain"],
        marks["depends_on"]["range"],
    )
    assert "repo" in marks["hard_dep"]["domain"] and "team" not in marks["hard_dep"]["domain"]
    seeded.json("propose", "repo/web-app", "hard_dep", "--object", "repo/api", "--source", "ledger:deps")
    before = seeded.json("status")
    refused = seeded("propose", "team/web", "hard_dep", "--object", "repo/api", "--source", "ledger:deps", expect=1)
    assert "hard_dep is not about a team" in refused.stderr
    assert seeded.json("status") == before


def test_the_schema_every_command_reads_follows_schema_json_past_its_cache(seeded):
    core = seeded.json("schema")["predicates"]
    cache = seeded.path / "cache" / "schema.json"
    assert cache.is_file()  # the schema each command reads is kept, derived, beside the index
    write(seeded, {"predicates": [ON_CALL]})
    assert "on_call_for" in {p["key"] for p in seeded.json("schema")["predicates"]}
    (seeded.path / "schema.json").unlink()
    assert seeded.json("schema")["predicates"] == core
    cache.write_text("{ not json")  # a damaged cache is made again, never believed
    assert seeded.json("schema")["predicates"] == core
    assert json.loads(cache.read_text())["data"]


REFUSED = [
    ({"predicates": [{**ON_CALL, "name": "mentors", "domain": ["person"]}]}, "would be about a person"),
    (
        {"predicates": [{**ON_CALL, "name": "nicknamed", "object": "value", "domain": [], "range": ["actor"]}]},
        "would be about a person",
    ),
    (
        {
            "types": [{"name": "contractor", "axis": "People", "subclass_of": "person"}],
            "predicates": [
                {**ON_CALL, "name": "hourly_rate", "object": "value", "domain": ["contractor"], "range": []}
            ],
        },
        "would be about a person",
    ),
    (
        {"predicates": [{**ON_CALL, "name": "code_buddy_of", "domain": ["team"], "subproperty_of": "reviews"}]},
        "subproperty of the People whitelist's reviews",
    ),
    (
        {"predicates": [{**ON_CALL, "name": "mirrors", "domain": ["channel"], "subproperty_of": "depends_on"}]},
        "mirrors would take a channel as its subject, which its parent depends_on does not",
    ),
    (
        {
            "predicates": [
                {
                    **ON_CALL,
                    "name": "backed_by",
                    "domain": ["repo"],
                    "range": ["team"],
                    "subproperty_of": "depends_on",
                }
            ]
        },
        "backed_by would take a team as its object, which its parent depends_on does not",
    ),
    (
        {"predicates": [{**ON_CALL, "name": "lead_time", "object": "value", "subproperty_of": "gated_by"}]},
        "lead_time takes a value, where its parent gated_by takes an entity",
    ),
    (
        {
            "predicates": [
                {**ON_CALL, "name": "phase", "object": "entity", "range": ["gate"], "subproperty_of": "status"}
            ]
        },
        "phase takes an entity, where its parent status takes a value",
    ),
    (
        {
            "predicates": [
                {k: v for k, v in ON_CALL.items() if k not in ("domain", "range")}
                | {"name": "odd_pair", "subproperty_of": ["depends_on", "has_step"]}
            ]
        },
        "odd_pair would take subjects of any type, where its parent has_step takes some: give it a domain",
    ),
    ({"predicates": [{**ON_CALL, "name": "owns"}]}, "owns is already a core predicate"),
    (
        {"predicates": [{**ON_CALL, "name": "no_words", "sentence": ""}]},
        "the predicate no_words needs a reviewer sentence",
    ),
    (
        {"predicates": [{**ON_CALL, "name": "blank_words", "sentence": "   "}]},
        "the predicate blank_words needs a reviewer sentence",
    ),
]


@pytest.mark.parametrize("data, reason", REFUSED)
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


@pytest.mark.parametrize("then", ["removed", "refused", "without it"])
def test_facts_of_a_predicate_the_schema_no_longer_has_are_read_and_reported_not_a_crash(seeded, then):
    """SPEC §4: a bad extension is refused and the knowledge base keeps working on the core schema.
    A fact of a site predicate the schema then lost crashed every read that showed it (exit 3)."""
    write(seeded, {"predicates": [ON_CALL]})
    fact = seeded.json("propose", "team/web", "on_call_for", "--object", "repo/web-app", "--source", "ledger:rota")
    seeded("confirm", fact["id"])
    if then == "removed":
        (seeded.path / "schema.json").unlink()
    elif then == "refused":
        write(seeded, {"predicates": [ON_CALL, {**ON_CALL, "name": "mentors", "domain": ["person"]}]})
    else:
        write(seeded, {"predicates": [{**ON_CALL, "name": "backs_up"}]})
    shown = "Web team [on_call_for] web-app"
    assert f"{fact['id']} [confirmed] {shown}" in seeded("lookup", "repo/web-app").stdout
    assert [(f["predicate"], f["sentence"]) for f in seeded.json("facts", "team/web")["facts"]] == [
        ("on_call_for", shown)
    ]
    assert seeded.json("history", fact["id"])["fact"]["sentence"] == shown
    links = seeded.json("neighbors", "team/web")["edges"]
    assert [(e["fact"], e["predicate"]) for e in links] == [(fact["id"], "on_call_for")]
    pack = seeded.json("context", "--for", "repo/web-app")
    assert [(f["predicate"], f["sentence"]) for f in pack["facts"]] == [("on_call_for", shown)]
    assert f"- {shown} [{fact['id']} · ledger:rota]" in pack["markdown"]
    report = seeded("validate", expect=1)  # reported, as violations are: the knowledge base is not damaged
    assert f"{fact['id']}: the predicate https://kgrdf.org/ns/site#on_call_for is not in the schema" in report.stdout
    before = seeded.snapshot()  # a correction of it is refused saying so (it stopped as a bug in kgrdf)
    refused = seeded("supersede", fact["id"], "--object", "repo/api", "-s", "doc:y", expect=1)
    assert "is a fact of on_call_for, which the schema in use does not hold" in refused.stderr
    assert seeded.snapshot() == before


@pytest.mark.parametrize("then", ["without it", "a value now"])
def test_a_fact_that_breaks_the_schema_in_use_may_be_taken_out_of_current_reads_never_into_them(
    seeded, monkeypatch, then
):
    """After a schema.json copied in unchecked took away a predicate facts used, or made it take a
    value, kg reject of such a fact was refused with the shape's message (and kg batch apply with
    it), kg supersede --value too, though a value was what it asked for, and kg expire skipped the
    proposal for good: nothing took them out of current reads. A confirmation stays refused,
    saying the way out."""
    write(seeded, {"predicates": [ON_CALL]})
    held = seeded.json("propose", "team/web", "on_call_for", "--object", "repo/web-app", "--source", "ledger:rota")
    seeded("confirm", held["id"])
    waiting = seeded.json("propose", "team/web", "on_call_for", "--object", "repo/api", "--source", "ledger:b")
    seeded("add-entity", "repo/docs", "--name", "docs")
    wrong = seeded.json("propose", "team/web", "on_call_for", "--object", "repo/docs", "--source", "ledger:c")
    write(seeded, {} if then == "without it" else {"predicates": [{**ON_CALL, "object": "value", "range": []}]})
    before = seeded.snapshot()
    refused = seeded("confirm", waiting["id"], expect=1)
    assert "kg reject takes it out of current reads, or put back the schema.json" in refused.stderr
    assert seeded.snapshot() == before
    assert seeded.json("reject", wrong["id"])["status"] == "rejected"
    if then == "a value now":
        assert seeded.json("supersede", held["id"], "--value", "web-app")["value"] == "web-app"
    else:
        assert seeded.json("reject", held["id"])["status"] == "rejected"
    monkeypatch.setenv("KGRDF_NOW", "2099-01-01T00:00:00Z")
    assert seeded.json("expire")["expired"] == 1
    statuses = {f["id"]: f["status"] for f in seeded.json("facts", "team/web", "--all")["facts"]}
    assert statuses[waiting["id"]] == "expired" and statuses[wrong["id"]] == "rejected"
    assert not [
        f for f in seeded.json("facts", "team/web")["facts"] if f["predicate"] == "on_call_for" and "object" in f
    ]


def test_an_organization_merge_carries_rejected_facts_that_break_the_schema_in_use(seeded):
    """A duplicate's facts of a predicate a schema.json copied in unchecked made take an entity: the
    merge was refused with no way out, and still so after each was rejected (the copies it carries
    are rejected too, but new). It is refused saying the way out, then takes them, rejected."""
    city = {"name": "hq_city", "axis": "Organizations", "object": "value", "domain": ["organization"]}
    city["sentence"] = "{subject} is based in {target}"
    write(seeded, {"predicates": [city]})
    seeded("org", "add", "Texture")
    seeded("org", "add", "Texture Inc")
    made = [
        seeded.json("propose", "Texture Inc", "hq_city", "--value", v, "-s", "slack:a")["id"]
        for v in ("Berlin", "Paris")
    ]
    write(seeded, {"predicates": [{**city, "object": "entity"}]})
    before = seeded.snapshot()
    refused = seeded("org", "merge", "Texture", "Texture Inc", expect=1)
    assert "hq_city takes an entity, not a value" in refused.stderr and "kg reject takes it out" in refused.stderr
    assert seeded.snapshot() == before
    for fact in made:
        seeded("reject", fact)
    merged = seeded.json("org", "merge", "Texture", "Texture Inc")
    assert sorted(merged["rejections"]) == sorted(made)
    carried = [f for f in seeded.json("facts", "Texture", "--all")["facts"] if f["predicate"] == "hq_city"]
    assert sorted((f["merged_from"], f["status"]) for f in carried) == sorted((f, "rejected") for f in made)


@pytest.mark.parametrize("then", ["refused", "without the type"])
def test_an_entity_of_a_type_the_schema_no_longer_has_is_read_and_a_change_to_it_refused(seeded, then):
    """A change to an entity of a site type the schema in use lost (schema.json refused, or without
    it) crashed as a bug in kgrdf (KeyError '?'), and kg validate said clean: its facts could be
    neither confirmed nor rejected. The change is refused saying why, validate reports the entity,
    and reads go on; a schema.json that declares the type again lets the change through."""
    site = {"types": [_type("playbook")], "predicates": [{**ON_CALL, "name": "covers", "domain": ["playbook"]}]}
    write(seeded, site)
    seeded("add-entity", "playbook/deploy", "--name", "Deploy playbook")
    fact = seeded.json("propose", "playbook/deploy", "covers", "--object", "repo/web-app", "-s", "doc:x")["id"]
    write(seeded, {**site, "types": [_type("playbook", subclass_of="person")]} if then == "refused" else {})
    before = seeded.snapshot()
    lost = "playbook/deploy is of a type the schema in use does not hold (playbook)"
    for change, says in [
        (["confirm", fact], lost),
        (["reject", fact], lost),
        (["propose", "playbook/deploy", "caveat", "--value", "x", "-s", "doc:y"], lost),
        (["supersede", fact, "--object", "repo/api", "-s", "doc:y"], "which the schema in use does not hold"),
        (["add-entity", "playbook/deploy", "--name", "Deploy playbook", "--alias", "deploys"], "unknown entity type"),
    ]:
        refused = seeded(*change, expect=1)
        assert says in refused.stderr and "bug" not in refused.stderr, change
    assert seeded.snapshot() == before
    report = seeded("validate", expect=1).stdout
    assert "playbook/deploy is of a type the schema in use does not hold (playbook)" in report
    assert seeded.json("history", fact)["fact"]["status"] == "proposed"  # read, as it stands
    write(seeded, site)
    assert seeded.json("confirm", fact)["status"] == "confirmed"
    assert "clean" in seeded("validate").stdout


def test_a_schema_json_over_the_bound_in_force_is_refused_for_the_index_too(seeded, monkeypatch):
    """Whether schema.json is taken depends on KGRDF_MAX_IMPORT, and the index kept its schema by the
    file's bytes alone: refused for its size, its predicate was still written; once it was taken
    under a smaller bound, its predicate stayed unknown after the bound was lifted."""
    write(seeded, {"predicates": [ON_CALL]})
    size = (seeded.path / "schema.json").stat().st_size
    propose = ["propose", "team/web", "on_call_for", "--object", "repo/web-app", "-s", "ledger:rota"]
    monkeypatch.setenv("KGRDF_MAX_IMPORT", str(size - 1))
    before = seeded.snapshot()
    assert "unknown predicate 'on_call_for'" in seeded(*propose, expect=1).stderr
    assert seeded.snapshot() == before
    monkeypatch.delenv("KGRDF_MAX_IMPORT")
    assert seeded.json(*propose)["predicate"] == "on_call_for"
    monkeypatch.setenv("KGRDF_MAX_IMPORT", str(size - 1))
    assert seeded.json("schema")["extension"]["accepted"] is False
    assert "unknown predicate 'on_call_for'" in seeded(*propose[:4], "repo/api", "-s", "ledger:b", expect=1).stderr


def test_proposals_expire_beside_one_of_a_predicate_the_schema_lost(seeded, monkeypatch):
    """A proposal of a site predicate schema.json no longer declares, due to expire, made kg expire and
    kg batch fail (exit 1, no way out): no proposal expired, and no person fact past retention was
    deleted. It expires with the others (a write may take it out of current reads)."""
    monkeypatch.setenv("KGRDF_NOW", "2026-03-01T09:00:00Z")
    write(seeded, {"predicates": [ON_CALL]})
    lost = seeded.json("propose", "team/web", "on_call_for", "--object", "repo/web-app", "-s", "slack:x")["id"]
    other = seeded.json("propose", "repo/api", "caveat", "--value", "mkstale", "-s", "slack:y")["id"]
    write(seeded, {})
    monkeypatch.setenv("KGRDF_NOW", "2026-05-01T09:00:00Z")
    done = seeded.json("expire")
    assert done["expired"] == 2, done
    assert seeded.json("history", other)["fact"]["status"] == "expired"
    assert seeded.json("history", lost)["fact"]["status"] == "expired"
    seeded("batch")  # (which expires first: it failed too)


def test_an_extension_copied_in_as_the_readme_says_is_no_damage_to_validate(seeded):
    write(seeded, {"predicates": [ON_CALL]})
    seeded("add-entity", "repo/x", "--name", "X")  # (the write commits schema.json)
    write(seeded, {"predicates": [ON_CALL, {**ON_CALL, "name": "backs_up"}]})  # checked, then copied in
    assert "clean" in seeded("validate").stdout


def test_the_closure_of_one_schema_json_is_judged_once_and_again_when_it_changes(seeded, monkeypatch):
    """OWL RL over the core ontology takes seconds a predicate: kg schema ran it on every call (47 s
    with ten predicates), and so did each index that loaded the schema."""
    from kgrdf import extension

    judged = []
    judge = extension.problems_of
    monkeypatch.setattr(extension, "problems_of", lambda *args: judged.append(1) or judge(*args))
    write(seeded, {"predicates": [ON_CALL]})
    for _ in range(3):
        assert seeded.json("schema")["extension"] == {"accepted": True, "problems": []}
    seeded("lookup", "team/web")
    assert len(judged) == 1
    write(seeded, {"predicates": [ON_CALL, {**ON_CALL, "name": "mentors", "domain": ["person"]}]})
    assert seeded.json("schema")["extension"]["accepted"] is False
    assert "mentors" not in {p["key"] for p in seeded.json("schema")["predicates"]}
    assert len(judged) == 2
    (seeded.path / "cache" / "extension.json").write_text("{not json")  # a damaged verdict is judged again
    assert seeded.json("schema")["extension"]["accepted"] is False and len(judged) == 3


def test_a_malformed_schema_json_is_reported_not_fatal(seeded, tmp_path):
    path = tmp_path / "schema.json"
    path.write_text("{not json")
    doc = json.loads(seeded("schema", "check", path, "--json", kb=False, expect=1).stdout)
    assert "is not JSON" in doc["problems"][0]
    path.write_text(json.dumps({"predicates": [{"name": "x", "axis": "Sideways", "object": "entity"}]}))
    doc = json.loads(seeded("schema", "check", path, "--json", kb=False, expect=1).stdout)
    assert "axis must be one of" in doc["problems"][0]


# --- names: every clash refused with its own reason (kgrdf/extension.py has the table) ---------------


def _type(name, **more):
    return {"name": name, "axis": "Product", **more}


def _predicate(name, **more):
    return {"name": name, "axis": "Process", "object": "value", "sentence": "{subject} has {target}", **more}


GRAMMAR_TYPE = "is not valid: a type name is lower-case ASCII letters and _, starting with a letter"
GRAMMAR_PREDICATE = "is not valid: a predicate name is lower-case ASCII letters, digits and _, starting with a letter"

# (the site name's kind) x (the kind of name it meets): the one reason it is refused with.
CLASHES = {
    "type ~ core type by key": ({"types": [_type("team")]}, "the type team is already a core type"),
    "type ~ core type by IRI": (
        {"types": [_type("Team")]},
        f"the type name 'Team' {GRAMMAR_TYPE}, as in an entity id (contract/acme); it reads as the core type team",
    ),
    "type ~ core predicate by key": (
        {"types": [_type("owns")]},
        "the type owns has the name of the core predicate owns: one key would name a type and a predicate",
    ),
    "type ~ core predicate by IRI": (
        {"types": [_type("memberof")]},
        "the type memberof differs only in case from kg:memberOf, the core predicate member_of",
    ),
    "type ~ the core key of two kinds": ({"types": [_type("actor")]}, "the type actor is already a core type"),
    "type ~ site type": ({"types": [_type("contract"), _type("contract")]}, "the type contract is given twice"),
    "type ~ site predicate": (
        {"types": [_type("rota")], "predicates": [_predicate("rota")]},
        "rota is both a type and a predicate: one IRI, site:rota, would be a class and a property",
    ),
    "type ~ reserved fact": (
        {"types": [_type("fact")]},
        "the type fact is a reserved word: kgrdf names a fact <kb>/<perspective>/fact/<id>, so "
        "an entity fact/<id> would take a fact's IRI",
    ),
    "type ~ reserved entities": (
        {"types": [_type("entities")]},
        "the type entities is a reserved word: kgrdf names a perspective's entity graph "
        "<kb>/<perspective>/entities, which its entities' IRIs would extend",
    ),
    "predicate ~ core predicate by key": (
        {"predicates": [_predicate("owns")]},
        "the predicate owns is already a core predicate",
    ),
    "predicate ~ core predicate by IRI": (
        {"predicates": [_predicate("dependson")]},
        "the predicate dependson differs only in case from kg:dependsOn, the core predicate depends_on",
    ),
    "predicate ~ core predicate by IRI, as written": (
        {"predicates": [_predicate("dependsOn")]},
        f"the predicate name 'dependsOn' {GRAMMAR_PREDICATE}; it reads as the core predicate depends_on",
    ),
    "predicate ~ core type by key": (
        {"predicates": [_predicate("team")]},
        "the predicate team has the name of the core type team: one key would name a predicate and a type",
    ),
    "predicate ~ core type by IRI": (
        {"predicates": [_predicate("Repo")]},
        f"the predicate name 'Repo' {GRAMMAR_PREDICATE}; it reads as the core type repo",
    ),
    "predicate ~ the core key of two kinds": (
        {"predicates": [_predicate("actor")]},
        "the predicate actor is already a core predicate",
    ),
    "predicate ~ site predicate": (
        {"predicates": [_predicate("rota"), _predicate("rota")]},
        "the predicate rota is given twice",
    ),
    "predicate ~ site type in another case": (
        {"types": [_type("rota")], "predicates": [_predicate("ROTA")]},
        f"the predicate name 'ROTA' {GRAMMAR_PREDICATE}; it reads as the site type rota",
    ),
    "NFKC variant of a core predicate": (
        {"predicates": [_predicate("ｏｗｎｓ")]},
        f"the predicate name 'ｏｗｎｓ' {GRAMMAR_PREDICATE}; it reads as the core predicate owns",
    ),
    "invisible character": (
        {"predicates": [_predicate("owns\u200b")]},
        f"the predicate name 'owns\\u200b' {GRAMMAR_PREDICATE}; it reads as the core predicate owns",
    ),
    "accent": (
        {"predicates": [_predicate("ówns")]},
        f"the predicate name 'ówns' {GRAMMAR_PREDICATE}; it reads as the core predicate owns",
    ),
    "hyphen": (
        {"predicates": [_predicate("member-of")]},
        f"the predicate name 'member-of' {GRAMMAR_PREDICATE}; it reads as the core predicate member_of",
    ),
    "a space": ({"predicates": [_predicate("on call")]}, f"the predicate name 'on call' {GRAMMAR_PREDICATE}"),
    "a digit in a type, which no entity id may hold": (
        {"types": [_type("team2")]},
        f"the type name 'team2' {GRAMMAR_TYPE}, as in an entity id (contract/acme)",
    ),
    "too long": (
        {"predicates": [_predicate("x" * 65)]},
        f"the predicate name '{'x' * 40}'... is 65 characters long; the most is 64",
    ),
    "no name": ({"types": [{"axis": "Product"}]}, 'type 1 needs a "name"'),
    "a name that is no text": ({"predicates": [_predicate(7)]}, 'predicate 1: "name" must be text, not a number (7)'),
}


@pytest.mark.parametrize("case", sorted(CLASHES))
def test_every_clash_and_invalid_name_is_refused_with_its_own_reason(tmp_path, case):
    from typer.testing import CliRunner

    from kgrdf.cli import app

    data, reason = CLASHES[case]
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    result = CliRunner().invoke(app, ["schema", "check", str(path), "--json"])
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["problems"] == [reason]


def test_names_that_meet_a_concept_or_other_core_vocabulary_are_no_clash(tmp_path):
    """A concept is a value of a fact's metadata (ticket is a source kind, confirmed a status,
    observed an authority), never a type or a predicate, and its IRI is in kg:, as are kg:Entity
    and kg:summary: no site name becomes any of them."""
    from kgrdf import extension

    data = {
        "types": [_type("ticket"), _type("report"), _type("entity")],
        "predicates": [_predicate("confirmed"), _predicate("observed"), _predicate("summary"), _predicate("fact")],
    }
    ext = extension.check(json.dumps(data).encode(), "schema.json")
    assert ext.problems == [] and ext.accepted


def test_every_problem_of_a_file_is_reported_in_its_order():
    from kgrdf import extension

    data = {
        "types": [_type("team"), _type("Bad Name")],
        "predicates": [_predicate("owns"), _predicate("ok_one", single_valued="false", high_risk=True)],
    }
    problems = extension.check(json.dumps(data).encode(), "schema.json").problems
    assert problems == [
        "the type team is already a core type",
        f"the type name 'Bad Name' {GRAMMAR_TYPE}, as in an entity id (contract/acme)",
        "the predicate owns is already a core predicate",
        "the predicate ok_one has the field 'high_risk', which a predicate does not take; its fields are name, "
        "axis, object, sentence, label, domain, range, single_valued, subproperty_of",
        "the predicate ok_one: \"single_valued\" must be true or false, not text ('false')",
    ]


@pytest.mark.parametrize(
    "data, reason",
    [
        ({"types": [_type("owns")]}, "the type owns has the name of the core predicate owns"),
        ({"predicates": [_predicate("team")]}, "the predicate team has the name of the core type team"),
        ({"types": [_type("rota")], "predicates": [_predicate("rota")]}, "rota is both a type and a predicate"),
        ({"predicates": [_predicate("owns")]}, "the predicate owns is already a core predicate"),
        ({"types": [_type("team")]}, "the type team is already a core type"),
    ],
)
def test_the_shapes_alone_refuse_the_clashes_rdf_shows_with_the_same_reason(monkeypatch, data, reason):
    """RDF made some other way than kgrdf's checks (which refuse these before any IRI is made) is
    refused by shapes/schema.ttl with the same words."""
    from kgrdf import extension, schema

    monkeypatch.setattr(extension, "name_problems", lambda *args, **kwargs: [])
    problems = extension.problems_of(extension.to_quads(data, schema.core()), schema.quads())
    assert any(p.startswith(reason) for p in problems), problems


def test_an_empty_extension_is_accepted_and_adds_nothing(seeded):
    write(seeded, {})
    doc = seeded.json("schema")
    assert doc["extension"] == {"accepted": True, "problems": []}
    from kgrdf import schema

    assert {p["key"] for p in doc["predicates"]} == set(schema.core().predicates)


# --- kg schema check --kb: as the knowledge base's next schema.json ------------------------------------

ROTA = {"types": [_type("rota")], "predicates": [ON_CALL]}


def test_check_with_kb_refuses_a_schema_that_takes_away_what_the_data_uses(seeded, tmp_path, monkeypatch):
    write(seeded, ROTA)
    seeded("add-entity", "rota/weekly", "--name", "weekly rota")
    seeded("propose", "team/web", "on_call_for", "--object", "repo/web-app", "--source", "ledger:rota")
    proposed = tmp_path / "next.json"

    def check(data, expect):
        proposed.write_text(json.dumps(data))
        return seeded.json("schema", "check", proposed, expect=expect)

    assert check(ROTA, 0) == {
        "file": str(proposed),
        "kb": str(seeded.path),
        "accepted": True,
        "problems": [],
        "types": ["rota"],
        "predicates": ["on_call_for"],
    }
    assert check({"predicates": [ON_CALL]}, 1)["problems"] == [
        "the knowledge base has 1 entity of the site type rota, which this schema drops"
    ]
    assert check({"types": [_type("rota")]}, 1)["problems"] == [
        "the knowledge base has 1 fact of the site predicate on_call_for, which this schema drops"
    ]
    as_value = {**ON_CALL, "object": "value", "range": []}
    assert check({"types": [_type("rota")], "predicates": [as_value]}, 1)["problems"] == [
        "the knowledge base has 1 fact of on_call_for whose object is an entity, and this schema makes it take a value"
    ]
    # Without --kb, the same file is checked against the core alone; KGRDF_HOME stands for --kb.
    from typer.testing import CliRunner

    from kgrdf.cli import app

    monkeypatch.delenv("KGRDF_HOME", raising=False)
    assert CliRunner().invoke(app, ["schema", "check", str(proposed)]).exit_code == 0
    monkeypatch.setenv("KGRDF_HOME", str(seeded.path))
    result = CliRunner().invoke(app, ["schema", "check", str(proposed)])
    assert result.exit_code == 1 and f"refused as the schema.json of {seeded.path}" in result.stdout


def test_check_with_kb_counts_every_perspective(seeded, tmp_path):
    write(seeded, ROTA)
    seeded("org", "init", "Agent B Inc", "--perspective", "agent-b")  # a perspective is provisioned first
    seeded("add-entity", "team/ops", "--name", "Ops", "--perspective", "agent-b")
    seeded("add-entity", "repo/infra", "--name", "infra", "--perspective", "agent-b")
    seeded(
        "propose",
        "team/ops",
        "on_call_for",
        "--object",
        "repo/infra",
        "--source",
        "ledger:rota",
        "--perspective",
        "agent-b",
    )
    proposed = tmp_path / "next.json"
    proposed.write_text(json.dumps({"types": [_type("rota")]}))
    assert seeded.json("schema", "check", proposed, expect=1)["problems"] == [
        "the knowledge base has 1 fact of the site predicate on_call_for, which this schema drops"
    ]


def test_check_with_kb_refuses_a_schema_under_which_the_data_breaks_a_shape(seeded, tmp_path):
    """A site predicate's range narrowed, or a site type moved under another parent, with facts
    written under the old ones: accepted (exit 0), then kg validate failed once it was in place."""
    runbook = _type("runbook", subclass_of="process")
    write(seeded, {"types": [runbook], "predicates": [ON_CALL]})
    seeded("add-entity", "runbook/deploy", "--name", "Deploy runbook")
    seeded("add-entity", "step/merge", "--name", "Merge step")
    step = seeded.json("propose", "runbook/deploy", "has_step", "--object", "step/merge", "-s", "doc:runbook")["id"]
    on_call = []
    for n in range(6):
        seeded("add-entity", f"repo/r{n}", "--name", f"repo {n}")
        on_call.append(
            seeded.json("propose", "team/web", "on_call_for", "--object", f"repo/r{n}", "-s", "ledger:x")["id"]
        )
    seeded("validate")
    installed = (seeded.path / "schema.json").read_text()
    proposed = tmp_path / "next.json"

    def check(data, expect):
        proposed.write_text(json.dumps(data))
        return seeded.json("schema", "check", proposed, expect=expect)["problems"]

    assert check({"types": [runbook], "predicates": [{**ON_CALL, "range": ["repo", "service"]}]}, 0) == []
    moved = {"types": [{**runbook, "subclass_of": "service"}], "predicates": [ON_CALL]}
    assert check(moved, 1) == [f"{step} would break a shape: has_step is not about a runbook"]
    narrowed = check({"types": [runbook], "predicates": [{**ON_CALL, "range": ["service"]}]}, 1)
    assert narrowed == [
        f"{f} would break a shape: on_call_for does not point to a repo" for f in sorted(on_call)[:5]
    ] + ["and 1 more that kg validate would list once it is in place"]
    assert (seeded.path / "schema.json").read_text() == installed  # a check installs nothing
    # Installed all the same, the schema is the one whose findings kg validate gives: the same file
    # checked again finds nothing new to break.
    (seeded.path / "schema.json").write_text(json.dumps(moved))
    assert seeded.json("validate", expect=1)["findings"][0]["message"] == "has_step is not about a runbook"
    assert check(moved, 0) == []


def test_check_with_kb_of_no_knowledge_base_says_so(tmp_path):
    from typer.testing import CliRunner

    from kgrdf.cli import app

    proposed = tmp_path / "next.json"
    proposed.write_text("{}")
    result = CliRunner().invoke(app, ["schema", "check", str(proposed), "--kb", str(tmp_path / "none")])
    assert result.exit_code == 1 and "no knowledge base at" in result.stderr


# --- property: no two accepted names are one IRI ---------------------------------------------------------


def _core_words():
    from kgrdf import schema

    core = schema.core()
    words = set()
    for item in [*core.types.values(), *core.predicates.values()]:
        local = item.iri.rsplit("#", 1)[1]
        words |= {
            item.key,
            local,
            local.lower(),
            item.key.upper(),
            item.key.replace("_", "-"),
            item.key.replace("_", ""),
            item.key.capitalize(),
        }
    return sorted(words | {"fact", "entities", "Fact", "contract", "rota", "on_call", "oncall"})


def _variants(word: str):
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in word)
    return st.sampled_from(
        [
            word,
            word.upper(),
            word.title(),
            fullwidth,
            word + "\u200b",
            "\u00ad" + word,
            word.replace("o", "ο"),
            word + "_",
            word + "2",
        ]
    )


# Names that clash or read as another (core words in other cases, Unicode forms, with invisible
# characters), names beside the core ones that are valid (team_site), fresh words, and any text.
_NEAR = st.sampled_from(_core_words()).map(lambda word: word.lower().replace("-", "_") + "_site")
_FRESH = st.from_regex(r"[a-z][a-z_]{0,6}", fullmatch=True)
NAME = st.one_of(
    st.sampled_from(_core_words()).flatmap(_variants), _NEAR, _FRESH, _NEAR, _FRESH, st.text(min_size=1, max_size=8)
)
SCHEMAS = st.fixed_dictionaries(
    {
        "types": st.lists(NAME.map(_type), max_size=3),
        "predicates": st.lists(NAME.map(_predicate), max_size=3),
    }
)


def _assert_one_iri_each(data, core):
    """The names of an accepted schema.json: each its own IRI, none a core type's or predicate's key
    or IRI again, nor a reserved word, in any case or Unicode form."""
    from kgrdf import extension

    site = [
        (kind, entry["name"])
        for kind, group in (("type", "types"), ("predicate", "predicates"))
        for entry in data[group]
    ]
    iris = [extension.SITE + name for _kind, name in site]
    assert len(set(iris)) == len(iris), site
    folded = [extension.fold(name) for _kind, name in site]
    assert len(set(folded)) == len(folded), site
    taken = {extension.fold(item.key) for item in [*core.types.values(), *core.predicates.values()]}
    taken |= {extension.fold(item.iri.rsplit("#", 1)[1]) for item in [*core.types.values(), *core.predicates.values()]}
    taken |= set(extension.RESERVED)
    assert not set(folded) & taken, site
    assert all(name.isascii() and name == name.lower() for _kind, name in site)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS)
def test_property_no_two_accepted_names_are_one_iri(data):
    from kgrdf import extension, schema

    core = schema.core()
    problems = extension.name_problems(data, core)
    if problems:
        assert all(isinstance(p, str) and "\n" not in p for p in problems)
        return
    _assert_one_iri_each(data, core)
    quads = extension.to_quads(data, core)
    typed = {}
    for quad in quads:
        if quad.predicate.value.endswith("#type") and quad.object.value.endswith(("#SiteType", "#SitePredicate")):
            typed.setdefault(quad.subject.value, set()).add(quad.object.value)
    assert all(len(kinds) == 1 for kinds in typed.values()), typed
    assert len(typed) == len(data["types"]) + len(data["predicates"])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS)
@example(
    {
        "types": [_type("rota"), _type("team_site", subclass_of="team")],
        "predicates": [_predicate("owns_site"), _predicate("rota_of", object="entity", range=["rota"])],
    }
)
def test_property_an_accepted_extension_gives_every_key_one_iri_in_the_effective_schema(data):
    """The whole check (names, OWL RL, shapes), then the schema a knowledge base would load: each key
    of a kind is one IRI, and a site key is never a core one."""
    from kgrdf import extension, schema
    from kgrdf.store.oxigraph import OxigraphBackend

    ext = extension.check(json.dumps(data).encode(), "schema.json")
    if not ext.accepted:
        assert ext.problems
        return
    _assert_one_iri_each(data, schema.core())
    backend = OxigraphBackend(None)
    backend.store.extend(schema.quads() + ext.quads)
    effective = schema.from_backend(backend)
    core = schema.core()
    assert set(effective.types) == set(core.types) | set(ext.types)
    assert set(effective.predicates) == set(core.predicates) | set(ext.predicates)
    for name in ext.types:
        assert effective.types[name].iri == extension.SITE + name and name not in effective.predicates
    for name in ext.predicates:
        assert effective.predicates[name].iri == extension.SITE + name and name not in effective.types


def test_the_group_options_before_check_count_for_it(seeded, tmp_path):
    """kg schema --kb PATH --json check FILE is kg schema check FILE --kb PATH --json."""
    from typer.testing import CliRunner

    from kgrdf.cli import app

    write(seeded, ROTA)
    seeded("add-entity", "rota/weekly", "--name", "weekly rota")
    proposed = tmp_path / "next.json"
    proposed.write_text(json.dumps({"predicates": [ON_CALL]}))
    result = CliRunner().invoke(app, ["schema", "--kb", str(seeded.path), "--json", "check", str(proposed)])
    assert result.exit_code == 1
    assert json.loads(result.stdout) == seeded.json("schema", "check", proposed, expect=1)


def test_the_usage_query_gives_the_same_counts_on_both_engines(seeded):
    """schema-usage.rq on a knowledge base whose data uses a site type and a site predicate, on
    Oxigraph and on rdflib's engine over the same TriG export."""
    from kgrdf import queries

    from .conftest import both_engines
    from .test_queries import _comparable, _oxigraph, _rdflib

    write(seeded, ROTA)
    seeded("add-entity", "rota/weekly", "--name", "weekly rota")
    seeded("add-entity", "rota/daily", "--name", "daily rota")
    seeded("propose", "team/web", "on_call_for", "--object", "repo/web-app", "--source", "ledger:rota")
    store, graph = both_engines(seeded.path)
    query = queries.load("schema-usage")
    rows = _oxigraph(store, query, {})
    assert sorted((r["term"].rsplit("#", 1)[1], r["use"], r["count"]) for r in rows) == [
        ("on_call_for", "entity", 1),
        ("rota", "entities", 2),
    ]
    assert _comparable(rows) == _comparable(_rdflib(graph, query, {}))


def _pyshacl_problems(data) -> list[str]:
    """What pySHACL reports of the extension's OWL RL closure with the core ontology against
    shapes/schema.ttl (kgrdf judged extensions so before its own evaluator took over)."""
    import owlrl
    import rdflib
    from pyshacl import validate

    from kgrdf import extension, schema
    from kgrdf.shacl import shapes_graph

    graph = rdflib.Graph()
    for quad in [*schema.quads(), *extension.to_quads(data, schema.core())]:
        graph.add(tuple(extension._rdflib(t) for t in (quad.subject, quad.predicate, quad.object)))
    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics).expand(graph)
    _conforms, report, _text = validate(graph, shacl_graph=shapes_graph("schema.ttl"), inference="none", advanced=True)
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    return sorted(
        {str(report.value(r, sh.resultMessage)) for r in report.subjects(rdflib.RDF.type, sh.ValidationResult)}
    )


@pytest.mark.parametrize(
    "data",
    [data for data, _reason in REFUSED]
    + [
        {"predicates": [ON_CALL]},
        json.loads((Path(__file__).parent.parent / "examples" / "site-schema.json").read_text()),
        {  # types in a chain, each with a predicate of its own, two subproperties of the core's
            "types": [
                {"name": "kind_a", "axis": "Process", "subclass_of": "process"},
                {"name": "kind_b", "axis": "Process", "subclass_of": "kind_a"},
            ],
            "predicates": [
                {**ON_CALL, "name": "rel_a", "domain": ["kind_a"], "range": ["repo"]},
                {**ON_CALL, "name": "rel_b", "domain": ["kind_b"], "range": ["repo"], "subproperty_of": "depends_on"},
                {**ON_CALL, "name": "rel_c", "domain": ["kind_b"], "range": ["team"], "subproperty_of": "uses"},
            ],
        },
    ],
)
def test_kg_judges_an_extension_as_pyshacl_does(monkeypatch, data):
    """The closure's check runs on kg's own evaluator of the shapes (pySHACL took 12 s for ten
    predicates, 72 s for forty): the same problems, word for word, accepted or refused."""
    from kgrdf import extension, schema

    monkeypatch.setattr(extension, "name_problems", lambda *args, **kwargs: [])
    ours = extension.problems_of(extension.to_quads(data, schema.core()), schema.quads())
    assert ours == _pyshacl_problems(data)
