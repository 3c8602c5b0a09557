"""SHACL on the write path, kg validate and kg schema."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .patchlog import patch_bytes, patch_files, write_patch


def _clean(report) -> bool:
    """A report of no damage and no findings, beside what compacting the index first did."""
    compacted = report["compacted"]
    return report == {"damage": [], "findings": [], "compacted": compacted} and compacted["files_after"] > 0


def test_validate_reports_a_clean_knowledge_base(demo):
    result = demo("validate")
    assert "clean" in result.stdout
    assert _clean(demo.json("validate"))


def test_validate_lays_its_rebuild_out_in_chunk_files_it_removes_and_a_killed_ones_are_removed_next(demo):
    """kg validate spills the journal's rebuild to cache/validate-<pid>/ rather than hold it: none is
    left when it ends, and one left by a validate that was killed (its process gone) goes next time."""
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = demo.path / "cache" / f"validate-{gone.stdout.strip()}"
    left.mkdir(parents=True)
    (left / "chunk-00000.nq").write_text("<a> <b> <c> <d> .\n")
    assert _clean(demo.json("validate"))
    assert not list((demo.path / "cache").glob("validate-*"))


@pytest.mark.parametrize("separator", ["\u2028", "\u2029"])
def test_validate_reads_a_value_holding_a_line_or_paragraph_separator_whole(kg, tmp_path, separator):
    """A value that holds U+2028 is accepted, and kg validate then stopped on every later run (a bug
    in kgrdf, exit 3): the rebuild it spills was read back split at every character str.splitlines
    breaks at, the N-Quads line cut in two."""
    kg("add-entity", "service/api", "--name", "api")
    kg("propose", "service/api", "caveat", "--value", f"live{separator}ish", "-s", "doc:c")
    records = tmp_path / "r.jsonl"
    records.write_text(
        json.dumps(
            {
                "type": "fact",
                "subject": "service/api",
                "predicate": "caveat",
                "value": f"a{separator}b",
                "sources": ["doc:d"],
            }
        )
        + "\n"
    )
    kg("import", records, "--apply")
    assert _clean(kg.json("validate"))
    assert sorted(f["value"] for f in kg.json("facts", "service/api")["facts"]) == [
        f"a{separator}b",
        f"live{separator}ish",
    ]


def test_validate_reports_a_journal_edited_outside_kgrdf_as_damage(demo):
    segment = next(p for p in patch_files(demo.path / "journal") if b"#deploys" in patch_bytes(p))
    write_patch(segment, patch_bytes(segment).replace(b"#deploys", b"#deploy5"))
    report = demo.json("validate", expect=3)
    checks = {d["check"] for d in report["damage"]}
    assert "journal position" in checks and "edited outside kgrdf" in checks
    said = demo("validate", expect=3).stdout.splitlines()[-1]
    assert said.startswith("the knowledge base is damaged (above): writes refuse while its journal or git history is")


def test_a_commit_git_could_not_make_is_no_damage_and_an_edit_outside_kgrdf_beside_it_is(demo):
    lock = demo.path / ".git" / "index.lock"  # what a git killed mid-commit leaves, for a while
    lock.touch()
    made = demo("propose", "hotfix", "caveat", "--value", "needs two approvals", "-s", "doc:a")
    assert "git did not commit" in made.stderr and "the next command commits it" in made.stderr
    assert demo.json("validate")["damage"] == []  # kgrdf's own write, owed to git: not "edited outside"
    ignored = demo.path / ".gitignore"
    kept = ignored.read_bytes()
    ignored.write_bytes(kept + b"# edited\n")
    report = demo.json("validate", expect=3)
    assert [d["message"] for d in report["damage"] if d["check"] == "edited outside kgrdf"] == [
        "changed since the last commit: .gitignore"
    ]
    ignored.write_bytes(kept)
    lock.unlink()
    demo("propose", "hotfix", "caveat", "--value", "needs a ticket", "-s", "doc:b")
    assert demo.json("validate")["damage"] == []
    assert not (demo.path / "uncommitted").exists()


def test_validate_sets_a_torn_tail_aside_like_any_command_then_reports_clean(demo):
    from .test_storage import next_patch_file

    segment = next_patch_file(demo.path)  # a write cut short leaves its new patch file short
    write_patch(segment, b"H id <urn:uuid:t> .\nTX .\n")
    size = segment.stat().st_size
    result = demo("validate", "--json")
    assert f"set aside a torn journal tail of {size} bytes" in result.stderr
    assert [p.name.split(".torn-")[0] for p in segment.parent.glob("*.torn-*")] == [segment.name]
    assert json.loads(result.stdout)["damage"] == []


def test_validate_reports_a_torn_tail_the_store_checks_find(demo):
    from kgrdf import validation
    from kgrdf.kb import KnowledgeBase

    from .test_storage import next_patch_file

    write_patch(next_patch_file(demo.path), b"H id <urn:uuid:t> .\nTX .\n")
    checks = {d["check"] for d in validation.check_store(KnowledgeBase.open(demo.path))}
    assert "torn tail" in checks


@pytest.mark.parametrize("confidence", ["-0.0", "-0", "0.0000001", "0.99999999", "0.1234567"])
def test_a_confidence_written_in_another_form_of_its_number_leaves_the_index_equal_to_a_rebuild(seeded, confidence):
    """A decimal is journaled in the one form Oxigraph keeps it in: -0.0 was journaled "-0", the
    index kept "0", and kg validate called the knowledge base damaged for good."""
    spanned = seeded.json(
        *("propose", "release", "caveat", "--value", "flaky on mondays", "-s", "slack:m1"),
        *("--extracted", "--span", "flaky on mondays", "--confidence", confidence),
    )["id"]
    assert seeded("validate").exit_code == 0
    hearings = seeded.json("history", spanned)["fact"]["hearings"]
    assert [h["confidence"] for h in hearings] == [round(abs(float(confidence)), 6)]


@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False))
def test_a_decimal_reads_back_from_oxigraph_as_it_was_written(number):
    import pyoxigraph as ox

    from kgrdf import vocab

    literal = vocab.decimal(number)
    store = ox.Store()
    store.add(ox.Quad(ox.NamedNode("https://e.org/s"), ox.NamedNode("https://e.org/p"), literal))
    assert [quad.object for quad in store] == [literal]


def test_a_second_current_value_of_a_single_valued_predicate_is_a_warning_not_a_refusal(seeded):
    seeded("propose", "release", "entry_point", "--object", "channel/ops", "--source", "report:a")
    doc = seeded.json("propose", "release", "entry_point", "--object", "channel/deploys", "--source", "report:b")
    assert doc["status"] == "proposed"
    findings = seeded.json("validate")["findings"]
    assert {f["severity"] for f in findings} == {"warning"}
    assert all("entry_point is single-valued" in f["message"] for f in findings)


def test_two_values_of_a_single_valued_predicate_at_different_times_are_no_warning(seeded):
    """'Old' until the year 999, 'new' from then: they never hold at once, so proposing the second
    warns of nothing (kg lint reports nothing either); a value that overlaps one of them is warned of."""
    old = seeded.json(
        "propose", "staging", "status", "--value", "old", "-s", "report:a", "--valid-from", "0001-01-01",
        "--valid-to", "0999-01-01",
    )  # fmt: skip
    seeded("confirm", old["id"])
    later = seeded("propose", "staging", "status", "--value", "new", "-s", "report:b", "--valid-from", "0999-01-01")
    assert later.stderr == ""
    assert "clean" in seeded("validate").stdout
    overlapping = seeded(
        "propose", "staging", "status", "--value", "mid", "-s", "report:c", "--valid-from", "0998-01-01"
    )
    assert f"status is single-valued, and {old['id']} holds another current value" in overlapping.stderr
    assert len(overlapping.stderr.splitlines()) == 2  # with both: old until 999, new from then


_TIMED_FACT = """<https://kgrdf.org/kb/main/fact/f-{name}> a kg:Fact ;
    kg:assertedSubject <https://kgrdf.org/kb/main/process/release> ; kg:assertedPredicate kg:entryPoint ;
    kg:assertedObject <https://kgrdf.org/kb/main/channel/{name}> ;
    kg:factStatus kg:Confirmed ; kg:authority kg:Observed ;
    prov:wasDerivedFrom <https://kgrdf.org/kb/main/fact/f-{name}/source/1> ;
    kg:recordedAt "2026-11-30T09:00:00Z"^^xsd:dateTime ; {times}
    dcterms:identifier "f-{name}" .
<https://kgrdf.org/kb/main/fact/f-{name}/source/1> a kg:Source ; kg:sourceKind kg:PrSource ; kg:sourceRef "pr:1" .
<https://kgrdf.org/kb/main/channel/{name}> a kg:Channel ; dcterms:identifier "channel/{name}" ; skos:prefLabel "{name}" .
"""


def test_the_single_valued_warning_pairs_only_values_whose_valid_times_overlap_as_pyshacl_does():
    """Valid time is [from, to), an open start or end unbounded: two values whose times only meet,
    or one that never holds (an empty time), are no pair; kg's set-based query and pySHACL agree."""
    import pyoxigraph as ox

    from kgrdf import validation

    times = {
        "aaaaaa": (None, "2026-03-01"),
        "bbbbbb": ("2026-03-01", None),  # begins where aaaaaa ends: no overlap
        "cccccc": ("2026-02-01", "2026-04-01"),  # across both
        "dddddd": ("2026-05-01", "2026-05-01"),  # never holds
        "eeeeee": (None, None),  # always
    }
    header = Path(__file__).parent / "shapes" / "warn" / "single-valued.ttl"
    text = "".join(line + "\n" for line in header.read_text().splitlines() if line.startswith("@prefix"))
    text += '<https://kgrdf.org/kb/main/process/release> a kg:Process ; dcterms:identifier "process/release" ; '
    text += 'skos:prefLabel "Release" .\n'
    for name, (start, end) in times.items():
        said = "".join(
            f'kg:{field} "{day}T00:00:00Z"^^xsd:dateTime ; '
            for field, day in (("validFrom", start), ("validTo", end))
            if day
        )
        text += _TIMED_FACT.format(name=name, times=said)
    quads = [
        ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph()) for t in ox.parse(text, format=ox.RdfFormat.TURTLE)
    ]
    store = validation.view([], quads)
    found = kg_findings(store)
    assert found == pyshacl_findings(store)
    pairs = {
        (focus.rsplit("/", 1)[1], message.split(", and ")[1].split()[0])
        for focus, message, severity, _shape in found
        if severity == "warning"
    }
    overlapping = {("f-aaaaaa", "f-cccccc"), ("f-bbbbbb", "f-cccccc"), ("f-aaaaaa", "f-eeeeee")}
    overlapping |= {("f-bbbbbb", "f-eeeeee"), ("f-cccccc", "f-eeeeee")}
    assert pairs == overlapping | {(b, a) for a, b in overlapping}
    assert {f for f in found if f[2] == "violation"} == set()


def test_schema_lists_types_and_predicates_with_markers(kg):
    doc = kg.json("schema")
    assert len(doc["types"]) == 16
    by_key = {p["key"]: p for p in doc["predicates"]}
    assert by_key["entry_point"]["single_valued"] and not by_key["entry_point"]["high_risk"]
    assert by_key["approves"]["high_risk"] and by_key["approves"]["person_ok"]
    assert by_key["caveat"]["object"] == "value" and by_key["reviews"]["object"] == "entity"
    turtle = kg("schema", "--format", "turtle").stdout
    assert "@prefix kg:" in turtle
    assert kg.json("schema", "--format", "turtle") == {"format": "turtle", "data": turtle}  # one document
    assert "unknown schema format" in kg("schema", "--format", "xml", expect=2).stderr


def test_the_shapes_conform_to_the_shapes_for_shacl():
    from pyshacl import validate

    from kgrdf.validation import shapes_graph

    conforms, _, text = validate(shapes_graph(), shacl_graph=shapes_graph(), meta_shacl=True)
    # meta_shacl checks the shapes graph itself against SHACL's own shapes before validating.
    assert conforms, text


@pytest.mark.parametrize(
    "args, reason",
    [
        (["add-entity", "person/eve", "--name", "Eve", "--summary", "likes cats"], "a person has no summary"),
        (["propose", "Dana", "caveat", "--value", "moody", "--source", "pr:1"], "not on the People whitelist"),
        (["propose", "Dana", "stated_preference", "--value", "tables", "--source", "pr:1"], "stated_* fact"),
        (
            ["propose", "Dana", "stated_preference", "--value", "tables", "--authority", "stakeholder"]
            + ["--said-by", "person/dan", "--source", "pr:1"],
            "a stated_* fact takes only what the person said: this one was said by someone else",
        ),
        (
            ["propose", "Dana", "reviews", "--object", "person/dan", "--source", "pr:1"],
            "reviews does not point to a person",
        ),
        (
            ["propose", "repo/api", "alias_of", "--object", "person/dan", "--source", "pr:1"],
            "alias_of says another name of one thing, of one kind: not a repo and a person",
        ),
        (
            ["propose", "person/dan", "alias_of", "--object", "web-app", "--source", "pr:1"],
            "alias_of says another name of one thing, of one kind: not a person and a repo",
        ),
    ],
)
def test_shapes_refuse_on_the_write_path_and_nothing_is_written(seeded, args, reason):
    before = seeded.snapshot()
    result = seeded(*args, expect=1)
    assert reason in result.stderr
    assert seeded.snapshot() == before


SHAPE_CASES = sorted((Path(__file__).parent / "shapes").glob("*/*.ttl"))


@pytest.fixture(scope="module")
def shapes_cache(tmp_path_factory):
    """A knowledge base folder's cache, where the first example's check keeps the compiled shapes
    and every later one reads them, as writes do."""
    return tmp_path_factory.mktemp("kb")


def test_the_compiled_shapes_a_write_keeps_in_its_cache_are_the_shapes_compiled_anew(tmp_path):
    from kgrdf import shacl

    fresh = shacl.compiled()
    assert shacl.compiled(kb_path=tmp_path) == fresh  # made, and kept
    kept = tmp_path / "cache" / "shapes-facts.json"
    assert kept.is_file()
    assert shacl.compiled(kb_path=tmp_path) == fresh  # read back
    kept.write_text('{"key": "', encoding="utf-8")  # damaged: made again
    assert shacl.compiled(kb_path=tmp_path) == fresh
    data = json.loads(kept.read_text())
    data["data"]["constraints"] = data["data"]["constraints"][:1]
    data["key"] = "made for other shapes"
    kept.write_text(json.dumps(data))
    assert shacl.compiled(kb_path=tmp_path) == fresh


def _findings(path, kb_path=None):
    """Validate an example, written in the validation view's form, the way a write is validated."""
    import pyoxigraph as ox

    from kgrdf import validation

    quads = [
        ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph())
        for t in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE)
    ]
    data = validation.view([], quads)  # the ontology beside the example's triples
    focus = sorted(
        {
            q.subject.value
            for q in quads
            if q.subject.value.startswith("https://kgrdf.org/kb/") and "/source/" not in q.subject.value
        }
    )
    return validation.check(data, focus, kb_path)


@pytest.mark.parametrize("path", SHAPE_CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_shape_passes_its_good_example_and_fails_its_bad_one(path, shapes_cache):
    expected = path.read_text().splitlines()[0].removeprefix("# expect:").strip()
    findings = _findings(path, shapes_cache)
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
    expected = [
        path.read_text().splitlines()[0].removeprefix("# expect:").strip()
        for path in SHAPE_CASES
        if path.parent.name != "good"
    ]

    def covered(template):
        pattern = ".+?".join(re.escape(part) for part in re.split(r"\{\?\w+\}", template))
        return any(e in template or re.fullmatch(pattern, e) or re.match(pattern, e) for e in expected)

    assert [t for t in templates if not covered(t)] == []


def pyshacl_findings(store, sparql_counts: bool = False):
    """(focus, message, severity, shape) of every result pySHACL reports on the view in ``store``,
    read into an rdflib graph: rdflib binds $this in every part of a query (SHACL's pre-binding), where
    Oxigraph's substitutions bind it in the outermost group only. With ``sparql_counts``, how many
    results each SPARQL-based constraint gave (one a solution) instead."""
    from collections import Counter

    import pyoxigraph as ox
    import rdflib
    from pyshacl import validate

    from kgrdf import validation

    graph = rdflib.Graph().parse(data=ox.serialize(store, format=ox.RdfFormat.N_QUADS).decode(), format="nquads")
    _conforms, report, _text = validate(
        graph, shacl_graph=validation.shapes_graph(), inference="none", allow_warnings=True
    )
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    found = Counter()
    for result in report.subjects(rdflib.RDF.type, sh.ValidationResult):
        shape = report.value(result, sh.sourceShape)
        if isinstance(shape, rdflib.BNode):  # a property shape: report the node shape it is in
            shape = validation.shapes_graph().value(None, sh.property, shape)
        if sparql_counts and report.value(result, sh.sourceConstraintComponent) != sh.SPARQLConstraintComponent:
            continue
        found[
            (
                str(report.value(result, sh.focusNode)),
                validation.readable(str(report.value(result, sh.resultMessage))),
                "warning" if report.value(result, sh.resultSeverity) == sh.Warning else "violation",
                str(shape),
            )
        ] += 1
    return found if sparql_counts else set(found)


def kg_findings(store, focus=None) -> set:
    from kgrdf import shacl, validation

    findings = shacl.check(store, validation.shapes_graph()) if focus is None else validation.check(store, focus)
    return {(f.focus, f.message, f.severity, f.shape) for f in findings}


def kg_sparql_counts(store):
    """How many distinct rows each SPARQL-based constraint's query gives, by focus node and message
    (pySHACL reports one result for each distinct row)."""
    from collections import Counter

    from kgrdf import shacl, validation

    rows = {
        (f, row) for c in shacl.queries(validation.shapes_graph()) if c.sparql for f, row in shacl.results(store, c)
    }
    return Counter((f.focus, f.message, f.severity, f.shape) for f, _row in rows)


@pytest.mark.parametrize("path", SHAPE_CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_kg_reports_what_pyshacl_reports_on_each_example(path):
    """The same focus nodes, shapes and messages, one by one: kg validate's whole view, a write's
    view of the same nodes, and pySHACL; and as many results of each SPARQL-based constraint (kg
    reports each finding once: pySHACL one for each row of a SPARQL query)."""
    import pyoxigraph as ox

    from kgrdf import validation

    quads = [
        ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph())
        for t in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE)
    ]
    store = validation.view([], quads)
    reference = pyshacl_findings(store)
    assert kg_findings(store) == reference
    focus = sorted(
        {
            q.subject.value
            for q in quads
            if q.subject.value.startswith("https://kgrdf.org/kb/")
            and "/source/" not in q.subject.value
            and "/hearing/" not in q.subject.value
        }
    )
    assert kg_findings(store, focus) == reference
    derived = ox.NamedNode("http://www.w3.org/ns/prov#wasDerivedFrom")
    for node in focus:  # a write of one node: its queries are given that node (VALUES), each subquery too
        nodes = {node} | {q.object.value for q in store.quads_for_pattern(ox.NamedNode(node), derived, None)}
        assert kg_findings(store, [node]) == {f for f in reference if f[0] in nodes}, node
    assert kg_sparql_counts(store) == pyshacl_findings(store, sparql_counts=True)


# --- a property shape's constraints in one query -------------------------------------------------

_KG, _XSD = "https://kgrdf.org/ns#", "http://www.w3.org/2001/XMLSchema#"
_NODES = [f"https://kgrdf.org/kb/main/fact/f-{i}" for i in range(4)]
# Values that meet and break each core constraint of the shapes: their kinds of status and authority, a
# source kind, dates, counts, empty and plain text, a tagged string, and literals of a datatype that
# do not parse (comparing one raises an error, which must keep a row as it does in a FILTER).
_VALUES = [
    *(f"<{n}>" for n in _NODES),
    f"<{_KG}Proposed>",
    f"<{_KG}Expired>",
    f"<{_KG}Observed>",
    f"<{_KG}Fact>",
    f"<{_KG}SlackSource>",
    f"<{_KG}LedgerSource>",
    f'"2026-01-01T00:00:00Z"^^<{_XSD}dateTime>',
    f'"2025-06-01T00:00:00Z"^^<{_XSD}dateTime>',
    f'"soon"^^<{_XSD}dateTime>',
    f'"2026-01-01"^^<{_XSD}date>',
    f'"1"^^<{_XSD}integer>',
    f'"0"^^<{_XSD}integer>',
    f'"many"^^<{_XSD}integer>',
    '""',
    '"x"',
    '"x"@en',
]
_TYPES = ["Fact", "Disclosure", "Person", "Repo", "Organization", "SourceKind"]


def _core_paths() -> list[str]:
    """Every path a core constraint of the shapes reads: its own and the one it compares with."""
    import rdflib

    from kgrdf import shacl, validation

    shapes, sh = validation.shapes_graph(), rdflib.Namespace(shacl.SH)
    paths = {shapes.value(prop, sh.path) for prop in shapes.objects(None, sh.property)}
    paths |= set(shapes.objects(None, sh.lessThanOrEquals)) | set(shapes.objects(None, sh.disjoint))
    return sorted(str(p) for p in paths) + ["http://www.w3.org/ns/prov#wasDerivedFrom"]


@st.composite
def _core_views(draw):
    """N-Triples of a few nodes, each of a type or two, with any number of any values on any path."""
    paths = _core_paths()
    lines = []
    for node in _NODES:
        for kind in draw(st.lists(st.sampled_from(_TYPES), max_size=2, unique=True)):
            lines.append(f"<{node}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{_KG}{kind}> .")
        for path in draw(st.lists(st.sampled_from(paths), max_size=6)):
            for value in draw(st.lists(st.sampled_from(_VALUES), min_size=1, max_size=3, unique=True)):
                lines.append(f"<{node}> <{path}> {value} .")
    return "\n".join(lines) + "\n"


def test_a_property_shapes_one_query_finds_what_a_query_for_each_of_its_constraints_finds():
    """Each property shape's core constraints (counts, in, datatype, node kind, class, length,
    bounds, comparisons with another path) run as one grouped query: on any view, the same findings
    as one query a constraint, errors on ill-typed values included."""
    import pyoxigraph as ox
    from hypothesis import given, settings

    from kgrdf import shacl, validation

    shapes = validation.shapes_graph()
    ntriples = shapes.serialize(format="nt", encoding="utf-8")
    one = shacl.Compiled([c for c in shacl.queries(shapes) if not c.sparql], ntriples)
    each = shacl.Compiled([c for c in shacl.queries(shapes, split=True) if not c.sparql], ntriples)
    assert len(one.constraints) < len(each.constraints)
    found = []

    @settings(max_examples=300, deadline=None)
    @given(_core_views())
    def same(text):
        quads = [
            ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph())
            for t in ox.parse(input=text.encode(), format=ox.RdfFormat.N_TRIPLES)
        ]
        store = validation.view([], quads)
        ours = shacl.check(store, one, threads=1)
        assert ours == shacl.check(store, each, threads=1)
        found.append(len(ours))

    same()
    assert sum(found) > 0 and found.count(0) > 0  # the draws both break the shapes and keep to them


# --- SHACL's pre-binding, for every focus node at once ---------------------------------------------

EX = "PREFIX ex: <http://example.org/>\n"
NODES = ["a", "b", "c", "d"]
# Queries that read $this where a bottom-up evaluation sees it unbound, or sees every node's: each must
# give, in one evaluation, what pre-binding $this to each target node gives (SHACL §5.3.1).
PREBINDING_CASES = {
    "a union branch of BINDs alone": "SELECT $this ?n WHERE { { BIND ($this AS ?n) } UNION { $this ex:p ?n } }",
    "a BIND before the triple that binds $this": "SELECT $this ?n WHERE { BIND ($this AS ?n) $this ex:p ?x }",
    "an OPTIONAL that only reads $this": "SELECT $this ?n WHERE { $this ex:p ?x OPTIONAL { BIND ($this AS ?n) } }",
    "a FILTER in a branch that does not bind $this": "SELECT $this ?x WHERE { { ?x ex:p ?y FILTER (?y = $this) } UNION { $this ex:q ?x } }",
    "a FILTER NOT EXISTS beside no triple of $this": "SELECT $this ?x WHERE { ?x ex:p ?y FILTER NOT EXISTS { $this ex:q ?y } }",
    "a FILTER NOT EXISTS holding a group of BINDs": "SELECT $this WHERE { FILTER NOT EXISTS { { BIND ($this AS ?z) } ?z ex:p ?w } }",
    "an EXISTS inside an expression": "SELECT $this WHERE { FILTER (EXISTS { $this ex:p ?x } || NOT EXISTS { ?y ex:q $this }) }",
    "a MINUS": "SELECT $this WHERE { MINUS { $this ex:p ?w } }",
    "a MINUS that only filters on $this": "SELECT $this WHERE { MINUS { ?x ex:p ?w FILTER (?x = $this) } }",
    "a subquery that counts": "SELECT $this ?n WHERE { { SELECT $this (COUNT(?o) AS ?n) WHERE { $this ?p ?o } "
    "GROUP BY $this } FILTER (?n > 1) }",
    "a subquery with a branch of BINDs": "SELECT $this ?n WHERE { { SELECT $this ?n WHERE { { BIND ($this AS ?n) } "
    "UNION { $this ex:p ?n } } } }",
    "a nested group": "SELECT $this ?n WHERE { { { BIND (STR($this) AS ?n) } } }",
    "a subquery returning $this beside one that does not name it": "SELECT $this ?n WHERE { { SELECT $this ?y "
    "WHERE { $this ex:p ?y } } { SELECT ?n ?y WHERE { ?n ex:q ?y } } FILTER (?n != $this) }",
    "a group whose subquery returns $this from a branch of BINDs": "SELECT $this ?n WHERE { { { SELECT $this ?n "
    "WHERE { { BIND ($this AS ?n) } UNION { $this ex:p ?n } } } ?n ex:q ?z } }",
    "a string and an IRI that look like $this": 'SELECT $this ?n WHERE { $this ex:p ?x BIND ("{ $this }" AS ?n) '
    "FILTER (?x != <http://example.org/$this>) }",
}


def _prebound_both_ways(triples, select, rewrite=True):
    """The query's rows for every target (every ex:C) as kg evaluates it, in one query on Oxigraph,
    and as pre-binding defines them, one rdflib query per node with $this bound (as pySHACL does)."""
    import pyoxigraph as ox
    import rdflib

    from kgrdf import shacl

    turtle = "@prefix ex: <http://example.org/> .\n" + "\n".join(
        f"ex:{s} {'a' if p == 'type' else 'ex:' + p} ex:{o} ." for s, p, o in triples
    )
    store = ox.Store()
    store.load(input=turtle.encode(), format=ox.RdfFormat.TURTLE)
    graph = rdflib.Graph().parse(data=turtle, format="turtle")
    query = shacl.prebound(select, "?this a ex:C .") if rewrite else select
    solutions = store.query(EX + query)
    names = [v.value for v in solutions.variables]
    ours = {tuple(None if row[n] is None else row[n].value for n in names) for row in solutions}
    targets = set(graph.subjects(rdflib.RDF.type, rdflib.URIRef("http://example.org/C")))
    reference = set()
    for node in targets:
        result = graph.query(EX + select, initBindings={"this": node})
        for row in result:
            reference.add(tuple(None if v is None else str(v) for v in row))
    return ours, reference


@pytest.mark.parametrize("case", sorted(PREBINDING_CASES))
def test_one_query_gives_what_pre_binding_gives_for_each_focus_node(case):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    triple = st.tuples(st.sampled_from(NODES), st.sampled_from(["p", "q"]), st.sampled_from(NODES))

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sets(triple, max_size=10), st.sets(st.sampled_from(NODES), min_size=1))
    def agree(triples, targets):
        data = triples | {(node, "type", "C") for node in targets}
        ours, reference = _prebound_both_ways(sorted(data), PREBINDING_CASES[case])
        assert ours == reference

    agree()


def test_a_target_joined_only_at_the_top_misses_what_pre_binding_finds():
    """The cases are not passed by joining the target in the WHERE clause alone (bottom-up): most
    give other rows that way, on one small graph."""
    import re

    data = [
        ("a", "type", "C"),
        ("b", "type", "C"),
        ("d", "type", "C"),
        ("a", "p", "b"),
        ("b", "q", "a"),
        ("c", "p", "a"),
        ("b", "p", "c"),
    ]
    wrong = []
    for case, select in PREBINDING_CASES.items():
        ours, reference = _prebound_both_ways(data, select)
        assert ours == reference, case
        top_only = re.sub(r"WHERE \{", "WHERE { { ?this a ex:C }", select, count=1)
        bottom_up, _ = _prebound_both_ways(data, top_only, rewrite=False)
        wrong += [case] if bottom_up != reference else []
    assert set(wrong) >= {
        "a union branch of BINDs alone",
        "an OPTIONAL that only reads $this",
        "a FILTER in a branch that does not bind $this",
        "a MINUS that only filters on $this",
        "a subquery with a branch of BINDs",
        "a nested group",
    }, wrong


@pytest.mark.parametrize(
    "select, reason",
    [
        ("SELECT $this WHERE { VALUES ?x { ex:a } $this ex:p ?x }", "does not allow VALUES"),
        ("SELECT $this WHERE { SERVICE <http://example.org/sparql> { $this ex:p ?x } }", "does not allow SERVICE"),
        ("SELECT $this ?x WHERE { ?x ex:p ?y BIND (?y AS $this) }", "may not bind $this"),
        ("SELECT $this ?n WHERE { { SELECT (COUNT(*) AS ?n) WHERE { $this ex:p ?o } } }", "must return it"),
        ("SELECT ?x WHERE { $this ex:p ?x }", "must return $this"),
        ("SELECT $this WHERE { $this ex:p ?x ", "braces do not match"),
    ],
)
def test_a_constraint_shacl_does_not_allow_is_refused_with_its_reason(select, reason):
    from kgrdf import shacl

    with pytest.raises(shacl.Unsupported, match=re.escape(reason)):
        shacl.prebound(select, "?this a ex:C .")


def test_the_shipped_shapes_join_their_target_once_a_query():
    """Their every group binds $this by a triple pattern of its own before reading it, so the only
    join with the target is the one in the WHERE clause: no extra join over 100k facts."""
    import rdflib

    from kgrdf import shacl, validation

    selects = list(validation.shapes_graph().objects(None, rdflib.URIRef(shacl.SH + "select")))
    assert len(selects) == 20
    for select in selects:
        assert shacl.prebound(str(select), "?this a <urn:target> .").count("<urn:target>") == 1, select


def _union_branches(select: str) -> list[tuple[int, int]]:
    """(start, end) of the inside of every branch of every UNION in a query."""
    from kgrdf import shacl

    top, _ = shacl._parse_groups(select)
    branches, todo = [], [top]
    while todo:
        group = todo.pop()
        todo += group.children
        before, after = select[: group.start - 1].rstrip(), select[group.end + 1 :].lstrip()
        if group.parent is not None and (before.upper().endswith("UNION") or after.upper().startswith("UNION")):
            branches.append((group.start, group.end))
    return sorted(branches)


def test_every_branch_of_every_sparql_constraint_has_a_bad_example_that_needs_it():
    """Each UNION branch, replaced by a branch that finds nothing, loses a finding on some example
    under tests/shapes/bad or warn: no branch goes untested (as the perspective shape's branch for the
    fact's own IRI once did)."""
    import pyoxigraph as ox
    import rdflib

    from kgrdf import shacl, validation

    sh = rdflib.Namespace(shacl.SH)
    shapes = validation.shapes_graph()
    examples = []
    for path in SHAPE_CASES:
        if path.parent.name != "good":
            quads = [
                ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph())
                for t in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE)
            ]
            examples.append((path.stem, validation.view([], quads)))

    def only(shape, constraint, select):
        """The shapes graph with one SPARQL constraint left, its query replaced by ``select``."""
        graph = rdflib.Graph()
        for triple in shapes:
            if triple[1] not in (sh.property, sh.sparql, sh.select):
                graph.add(triple)
        graph.add((shape, sh.sparql, constraint))
        graph.add((constraint, sh.select, rdflib.Literal(select)))
        return graph

    untested = []
    for shape, constraint in shapes.subject_objects(sh.sparql):
        select = str(shapes.value(constraint, sh.select))
        found = {name: shacl.check(store, only(shape, constraint, select), threads=1) for name, store in examples}
        for start, end in _union_branches(select):
            mutated = only(shape, constraint, select[:start] + " FILTER (false) " + select[end:])
            if all(shacl.check(store, mutated, threads=1) == found[name] for name, store in examples):
                untested.append(f"{shape.split('#')[1]}: {' '.join(select[start:end].split())}")
    assert untested == []
    assert sum(len(_union_branches(str(s))) for s in shapes.objects(None, sh.select)) == 15


# --- the published data: an export, the view query, any SHACL engine -------------------------------

ROOT = Path(__file__).parents[1]


def _recipe(readme: Path) -> str:
    """The shell commands of a README that export, build the view and validate it."""
    import re

    return next(
        block
        for block in re.findall(r"```(?:sh|text)\n(.*?)```", readme.read_text(), flags=re.S)
        if "validation-view.rq" in block
    )


def _break_the_rules(path: Path) -> None:
    """Write, around the writer's checks, what the shapes refuse: a fact with no status, one with
    two authorities, one superseded by a fact of another perspective and left open, a hearing in two
    audiences (one no audience at all), an alias that repeats the name, a person with a summary."""
    import pyoxigraph as ox

    from kgrdf import vocab
    from kgrdf.kb import KnowledgeBase

    kg = vocab.kg
    kb = KnowledgeBase.open(path)
    with kb.reading() as session:
        quads = list(session.backend.quads())
        closed = {q.subject.value for q in quads if q.predicate == kg("retiredAt")}
        facts = sorted(  # open ones: a fact the demo closed already would not be left open by the break
            {
                q.graph_name.value.removesuffix("/provenance")
                for q in quads
                if q.graph_name.value.endswith("/provenance")
            }
            - closed
        )
        provenance = {f: list(session.backend.quads_in(ox.NamedNode(f + "/provenance"))) for f in facts[:4]}
    first, second, third, fourth = facts[:4]
    status = [q for q in provenance[first] if q.predicate == kg("factStatus")]
    hearing = next(q for q in provenance[fourth] if q.predicate == kg("heardIn")).object
    entities = vocab.entities_graph("main")
    adds = [
        ox.Quad(ox.NamedNode(second), kg("authority"), kg("Inferred"), ox.NamedNode(second + "/provenance")),
        ox.Quad(
            ox.NamedNode(third),
            kg("supersededBy"),
            ox.NamedNode("https://kgrdf.org/kb/other/fact/f-zzzzzz"),
            ox.NamedNode(third + "/provenance"),
        ),
        ox.Quad(hearing, kg("audience"), ox.Literal("team:sales"), ox.NamedNode(fourth + "/provenance")),
        ox.Quad(vocab.entity_iri("main", "repo/api"), vocab.term("skos:altLabel"), ox.Literal("api"), entities),
        ox.Quad(vocab.entity_iri("main", "person/dana"), kg("summary"), ox.Literal("likes cats"), entities),
    ]
    with kb.writing("test") as writer:
        writer.stage(status, adds)
        writer.validated = True  # what a write would refuse, written anyway


def _pyshacl_on_the_export(kg, tmp_path: Path, readme: str = "shapes/README.md") -> set:
    """Run the README's commands on the knowledge base, then pySHACL's command line for its report
    as RDF: (focus id, message, severity) of each result."""
    import os
    import subprocess
    import sys

    import rdflib

    from kgrdf import vocab
    from kgrdf.resources import data_dir
    from kgrdf.validation import readable

    work = tmp_path / "published"
    work.mkdir()
    for name in ("queries", "shapes"):
        (work / name).symlink_to(data_dir(name))
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"], "KGRDF_HOME": str(kg.path)}
    recipe = _recipe(ROOT / readme)
    ran = subprocess.run(["bash", "-c", recipe], cwd=work, env=env, capture_output=True, text=True)
    assert (work / "view.nt").stat().st_size > 0, ran.stderr
    report = subprocess.run(
        ["pyshacl", "-s", "shapes/facts.ttl", "-f", "turtle", "view.nt"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert report.returncode in (0, 1), report.stderr
    graph = rdflib.Graph().parse(data=report.stdout, format="turtle")
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    assert ran.returncode == report.returncode  # the recipe's own pyshacl run says the same
    return {
        (
            vocab.id_of(str(graph.value(r, sh.focusNode))),
            readable(str(graph.value(r, sh.resultMessage))),
            "warning" if graph.value(r, sh.resultSeverity) == sh.Warning else "violation",
        )
        for r in graph.subjects(rdflib.RDF.type, sh.ValidationResult)
    }


@pytest.mark.parametrize("readme", ["shapes/README.md", "README.md"])
def test_pyshacl_on_an_export_through_the_view_query_reports_what_kg_validate_reports(demo, tmp_path, readme):
    _break_the_rules(demo.path)
    report = demo.json("validate", expect=1)
    assert report["damage"] == []
    ours = {(f["focus"], f["message"], f["severity"]) for f in report["findings"]}
    assert {m for _, m, s in ours if s == "violation"} >= {
        "a fact has exactly one status: proposed, confirmed, rejected or expired",
        "a fact has exactly one authority: user, stakeholder, observed or inferred",
        "a superseded fact must be closed (valid_to and retired_at)",
        "a strong alias may not repeat the name",
        "a person has no summary: only work-operational facts from the People whitelist",
    }
    assert any(m.startswith("what supersedes it other/fact/f-zzzzzz") for _, m, _ in ours)
    assert any(m.startswith("a hearing needs one audience") for _, m, _ in ours)
    assert _pyshacl_on_the_export(demo, tmp_path, readme) == ours


def test_pyshacl_on_a_clean_export_through_the_view_query_reports_nothing(demo, tmp_path):
    assert _clean(demo.json("validate"))
    assert _pyshacl_on_the_export(demo, tmp_path) == set()


def test_pyshacl_on_an_export_reports_the_warnings_kg_validate_reports(seeded, tmp_path):
    seeded("propose", "release", "entry_point", "--object", "channel/ops", "--source", "report:a")
    seeded("propose", "release", "entry_point", "--object", "channel/deploys", "--source", "report:b")
    ours = {(f["focus"], f["message"], f["severity"]) for f in seeded.json("validate")["findings"]}
    assert len(ours) == 2 and {s for _, _, s in ours} == {"warning"}
    assert _pyshacl_on_the_export(seeded, tmp_path) == ours


def test_a_large_writes_view_of_lines_is_the_view_the_query_builds(demo_template):
    """The import's checker makes validation-view.rq's view from N-Quads lines itself, for speed:
    the same triples as the query gives on the same dataset."""
    import pyoxigraph as ox

    from kgrdf import validation
    from kgrdf.kb import KnowledgeBase
    from kgrdf.privacy import is_entities_graph
    from kgrdf.schema import SCHEMA_GRAPH

    with KnowledgeBase.open(demo_template).reading() as session:
        quads = [q for q in session.backend.quads() if q.graph_name.value != SCHEMA_GRAPH]
        ontology = session.backend.schema_quads()
        by_query = validation.view_of(session.backend.store)
    facts = [str(q) for q in quads if not is_entities_graph(q.graph_name.value)]
    entities = [str(q) for q in quads if is_entities_graph(q.graph_name.value)]
    by_lines = validation.view_from_lines(facts, entities, ontology)

    def triples(store):
        """The view's triples, a blank node written as any blank node (the ontology's lists): the query
        gives them labels of its own."""
        return sorted(
            " ".join("_:" if isinstance(t, ox.BlankNode) else str(t) for t in (q.subject, q.predicate, q.object))
            for q in store.quads_for_pattern(None, None, None, ox.DefaultGraph())
        )

    assert len(triples(by_query)) > 1000
    assert triples(by_lines) == triples(by_query)


def test_validate_finds_in_chunks_of_one_fact_what_it_finds_in_one_view(seeded):
    """kg validate checks a chunk of facts at a time: the facts of one subject meet in one chunk, so
    the single-valued warning, which compares two facts, is found however small the chunks."""
    from kgrdf import validation
    from kgrdf.kb import KnowledgeBase

    seeded("propose", "release", "entry_point", "--object", "channel/ops", "--source", "report:a")
    seeded("propose", "release", "entry_point", "--object", "channel/deploys", "--source", "report:b")
    with KnowledgeBase.open(seeded.path).reading() as session:
        whole = validation.validate_all(session, facts_per_chunk=10**9)
        chunked = validation.validate_all(session, facts_per_chunk=1)
    assert len(whole) == 2 and all("entry_point is single-valued" in f.message for f in whole)
    assert chunked == whole


def test_validate_reports_an_index_that_differs_from_the_journal_with_the_count_each_way(demo):
    """The index is compared with the journal's rebuild line by line (by their hashes): a quad
    changed in the index alone, a non-ASCII value among them, is one more and one fewer."""
    import pyoxigraph as ox

    store = ox.Store(str(demo.path / "index"))
    label = ox.NamedNode("http://www.w3.org/2004/02/skos/core#prefLabel")
    old = next(store.quads_for_pattern(None, label, None, None))
    store.remove(old)
    store.add(ox.Quad(old.subject, old.predicate, ox.Literal("Zoë's café"), old.graph_name))
    store.flush()
    del store
    report = demo.json("validate", expect=3)
    assert report["damage"] == [
        {
            "check": "index equals a rebuild",
            "message": "the index differs from the journal's rebuild: 1 quads more, 1 fewer",
        }
    ]


def test_validate_finds_in_chunks_of_one_fact_what_it_finds_in_one_view_of_entities_no_fact_names(seeded):
    """A chunk's view holds the entities its facts name; an entity no fact names is still checked,
    with every other entity: a second name, and two self organizations of one perspective (a rule
    that compares entities), are found however small the chunks."""
    from kgrdf import validation
    from kgrdf.kb import KnowledgeBase

    seeded("org", "init", "Acme")
    seeded("propose", "release", "entry_point", "--object", "channel/ops", "--source", "report:a")
    seeded("propose", "release", "entry_point", "--object", "channel/deploys", "--source", "report:b")
    knowledge_base = KnowledgeBase.open(seeded.path)
    with knowledge_base.reading() as session:
        lines = list(validation._journal_lines(knowledge_base))
        ontology = session.backend.schema_quads()
    label = next(line for line in lines if "/person/dan> <http://www.w3.org/2004/02/skos/core#prefLabel>" in line)
    self_org = next(line for line in lines if "#selfOrganization>" in line)
    web = next(line for line in lines if "/team/web> " in line).partition(" ")[0]
    lines += [label.replace('"Dan Brooks"', '"Daniel Brooks"'), f"{web} {self_org.partition(' ')[2]}"]
    whole = validation.shapes_on_lines(lines, ontology, facts_per_chunk=10**9)
    chunked = validation.shapes_on_lines(lines, ontology, facts_per_chunk=1)
    messages = {(f.as_json()["focus"], f.message) for f in chunked}
    assert ("person/dan", "an entity has exactly one name (skos:prefLabel)") in messages
    assert ("team/web", "only an organization can be a perspective's self organization") in messages
    assert any(focus == "team/web" and "self organization already" in message for focus, message in messages)
    assert chunked == whole


def test_validate_decides_by_the_exact_comparison_when_the_index_cannot_be_written_to_a_named_pipe(demo, monkeypatch):
    """The index is written out to a named pipe for its digest; when that fails, the comparison line
    by line decides, and a clean knowledge base is reported clean rather than as an error."""
    from kgrdf import validation
    from kgrdf.kb import KnowledgeBase

    def broken(store, pipe):
        raise OSError("the pipe broke")

    monkeypatch.setattr(validation, "_dump_to_pipe", broken)
    assert _clean(KnowledgeBase.open(demo.path).validate())


_FACT = "https://kgrdf.org/kb/main/fact/f-standing"


def _standing_line(n: int) -> str:
    """Row n of a fact: its triple (n < 4: a fact holds one, and one row of its view says each of its
    terms; here, where it may hold several, none shares a term), a record about it in its provenance
    graph, or (n >= 20) a row of its update records, which a fact's view leaves out."""
    if n < 4:
        return f'<https://kgrdf.org/kb/main/repo/r{n}> <https://kgrdf.org/ns#caveat{n}> "v{n}" <{_FACT}>'
    if n < 20:
        return f'<{_FACT}/source/s{n}> <https://kgrdf.org/ns#sourceRef> "r{n}" <{_FACT}/provenance>'
    return f'<{_FACT}/update/{n}> <https://kgrdf.org/ns#added> "slack:{n}" <{_FACT}/provenance>'


def _entity_line(n: int) -> str:
    graph = "https://kgrdf.org/kb/main/entities"
    return f'<https://kgrdf.org/kb/main/repo/r{n}> <http://www.w3.org/2004/02/skos/core#prefLabel> "r{n}" <{graph}>'


def test_a_standing_view_holds_the_view_of_the_rows_it_was_given_however_they_came_in_chunks():
    """A large write's standing view (validation.StandingView) is given, chunk after chunk, the rows
    staged for its facts since the last (added, deleted, added again) and the entities' lines as
    they then stand: after any such history it holds exactly the view made at once of the rows
    that are left (view_from_lines), less the facts' update records."""
    from hypothesis import given, settings

    from kgrdf import validation

    rows = st.lists(st.integers(0, 25), max_size=6)
    step = st.tuples(st.booleans(), rows, st.booleans(), st.frozensets(st.integers(0, 5)))

    def triples(store):
        return sorted(str(q) for q in store)

    @settings(max_examples=150, deadline=None)
    @given(st.lists(rows, min_size=1, max_size=3), st.lists(step, max_size=25))
    def holds(start, steps):
        view = validation.StandingView([])
        present: dict[str, None] = {}
        first = list(dict.fromkeys(_standing_line(n) for n in start[0]))
        view.start(_FACT, first)
        present.update(dict.fromkeys(first))
        entities = frozenset()
        for adding, picked, chunk_ends, entity_numbers in steps:
            lines = list(dict.fromkeys(_standing_line(n) for n in picked))
            if adding:
                lines = [line for line in lines if line not in present]
                view.note(_FACT, [], lines)
                present.update(dict.fromkeys(lines))
            else:
                lines = [line for line in lines if line in present]
                view.note(_FACT, lines, [])
                for line in lines:
                    del present[line]
            view.note("https://kgrdf.org/kb/main/fact/f-other", [], [_standing_line(5)])  # not kept: ignored
            if chunk_ends:
                entities = frozenset(_entity_line(n) for n in entity_numbers)
                view.apply(*view.take(), entities)
        store = view.apply(*view.take(), entities)
        kept = [line for line in present if "/update/" not in line]
        assert triples(store) == triples(validation.view_from_lines(kept, sorted(entities), []))

    holds()
