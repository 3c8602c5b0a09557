"""The named queries are data: each parses, documents its parameters, gives its expected rows on the
example organization, and gives the same answer on Oxigraph and on rdflib's SPARQL engine."""

import re
from datetime import UTC, datetime, timedelta

import pyoxigraph as ox
import pytest

from kgrdf import clock, queries, vocab
from kgrdf.errors import BadInput

from .conftest import both_engines

# The example is recorded at the real time the tests start: ask about the day after.
NOW = vocab.datetime_literal(clock.iso(datetime.now(UTC) + timedelta(days=1)))
LATER = vocab.datetime_literal(clock.iso(datetime.now(UTC) + timedelta(days=400)))
SINCE = vocab.datetime_literal(clock.iso(datetime.now(UTC) - timedelta(days=7)))
ENTITIES = vocab.entities_graph("main")


def e(entity_id):
    return vocab.entity_iri("main", entity_id)


@pytest.fixture(scope="module")
def dataset(demo_template):
    """The example organization as TriG, loaded into both engines."""
    return both_engines(demo_template)


def fact_of(store, subject, predicate_key):
    rows = store.query(
        "SELECT ?f ?s ?k WHERE { GRAPH ?f { ?s ?p ?o } GRAPH <https://kgrdf.org/ns> { ?p <https://kgrdf.org/ns#key> ?k } }",
        substitutions={ox.Variable("s"): e(subject), ox.Variable("k"): ox.Literal(predicate_key)},
    )
    return next(iter(rows))["f"]


def entry_points(store, subject):
    rows = store.query(
        "SELECT ?f ?s WHERE { GRAPH ?f { ?s <https://kgrdf.org/ns#entryPoint> ?o } }",
        substitutions={ox.Variable("s"): e(subject)},
    )
    return [row["f"] for row in rows]


def cases(store):
    """Bindings for each query, and what its rows must show."""
    hotfix_entry = fact_of(store, "process/hotfix", "rule")
    return {
        "lookup": (
            dict(entity=e("process/hotfix"), now=NOW),
            lambda rows: (
                sorted((r["direction"], r["predicateKey"]) for r in rows)
                == [("in", "approves"), ("out", "entry_point"), ("out", "posts_to"), ("out", "rule")]
            ),
        ),
        "facts": (
            dict(subject=e("process/hotfix"), predicate=vocab.kg("entryPoint"), validAt=NOW, knownAt=NOW),
            lambda rows: [r["peerId"] for r in rows] == ["channel/deploys"],
        ),
        "facts-all": (
            dict(subject=e("process/hotfix"), predicate=vocab.kg("entryPoint")),
            lambda rows: sorted(r["peerId"] for r in rows) == ["channel/deploys", "channel/incidents"],
        ),
        "neighbors": (
            dict(entity=e("repo/api"), now=NOW),
            lambda rows: (
                {r["peerId"] for r in rows} == {"person/priya", "team/platform", "repo/web-app", "process/release"}
            ),
        ),
        "identify": (
            dict(entities=ENTITIES, key=ox.Literal("the api")),
            lambda rows: [(r["id"], r["how"]) for r in rows] == [("repo/api", "alias")],
        ),
        "labels-taken": (  # a name, a strong alias, a weak alias (no one's name) and a key of nothing
            dict(entities=ENTITIES, key=[ox.Literal(k) for k in ("api", "the api", "backend", "no such name")]),
            lambda rows: sorted(r["key"] for r in rows) == ["api", "the api"],
        ),
        "search": (
            dict(entities=ENTITIES, text=ox.Literal("stag")),
            lambda rows: (
                {r["id"] for r in rows} == {"environment/staging", "environment/staging-2", "step/deploy-staging"}
            ),
        ),
        "entity": (
            dict(entity=e("repo/api")),
            lambda rows: {r["o"] for r in rows} >= {"repo/api", "api", "the API", "backend"},
        ),
        "fact": (
            dict(fact=hotfix_entry),
            lambda rows: (
                {r["kind"] for r in rows} == {"assertion", "provenance"}
                and sum(r["kind"] == "assertion" for r in rows) == 1
            ),
        ),
        "fact-sources": (
            dict(fact=hotfix_entry),
            lambda rows: [(r["kind"], r["ref"]) for r in rows] == [("transcript", "session-2026-10-03")],
        ),
        "fact-exists": (dict(fact=hotfix_entry), lambda answer: answer is True),
        # The example records no disclosure: tests/test_disclosures.py reads them back through kg.
        "fact-disclosures": (dict(fact=hotfix_entry), lambda rows: rows == []),
        "told": (
            dict(audience=ox.Literal("owner"), since=vocab.datetime_literal("0001-01-01T00:00:00Z")),
            lambda rows: rows == [],
        ),
        "subject-predicate": (
            dict(subject=e("process/hotfix"), predicate=vocab.kg("entryPoint")),
            lambda rows: len(rows) == 2,
        ),
        "stats": (
            dict(entities=ENTITIES),
            lambda rows: {(r["what"], r["key"]): r["count"] for r in rows}[("entities", "person")] == 3,
        ),
        "stats-alone": (
            dict(entities=ENTITIES),
            lambda rows: (
                {(r["what"], r["key"]): r["count"] for r in rows}[("entities", "person")] == 3
                and {(r["what"], r["key"]): r["count"] for r in rows}[("facts", "confirmed")] == 33
            ),
        ),
        "schema-types": ({}, lambda rows: len(rows) == 16),
        "schema-predicates": (
            {},
            lambda rows: {r["key"] for r in rows} >= {"member_of", "has_step", "affiliated_with"},
        ),
        "schema-concepts": ({}, lambda rows: {r["notation"] for r in rows} >= {"proposed", "slack", "personal"}),
        "graph-current": (dict(now=NOW), lambda rows: len(rows) > 100),
        # The example holds two proposals and ten facts naming a person, all recorded today.
        "proposals-due": (dict(before=LATER), lambda rows: len(rows) == 2),
        "context-facts": (
            dict(entity=e("process/release"), now=NOW),
            lambda rows: (
                sorted((r["direction"], r["predicateKey"], r["anchoring"]) for r in rows)
                == [("out", "has_step", "container")] * 4
                + [("out", "posts_to", None), ("out", "purpose", None), ("out", "uses", None), ("out", "uses", None)]
            ),
        ),
        # Two proposals: a caveat of the api and Sam's preferred channel.
        "proposals": ({}, lambda rows: len(rows) == 2 and all(r["id"].startswith("f-") for r in rows)),
        "assertions": (
            {},
            lambda rows: (
                len(rows) == 35 and sorted(r["predicate"].rsplit("#", 1)[1] for r in rows).count("hasStep") == 4
            ),
        ),
        # The two proposals, summed up by what they are about: the api and Sam, one each.
        "batch-piles": (
            {},
            lambda rows: (
                sorted((r["key"].rsplit("/", 1)[1], r["area"], r["facts"]) for r in rows)
                == [("api", False, 1), ("sam", False, 1)]
            ),
        ),
        "batch-facts": (
            dict(key=e("repo/api"), area=ox.Literal(False)),
            lambda rows: (
                len(rows) == 1 and rows[0]["id"].startswith("f-") and rows[0]["subject"] == e("repo/api").value
            ),
        ),
        # The hotfix's two entry points: the one a correction ended, on the day the new one began.
        "batch-times": (
            dict(fact=entry_points(store, "process/hotfix")),
            lambda rows: (
                sorted((r["validFrom"][:10], (r["validTo"] or "")[:10]) for r in rows)
                == [("2026-01-15", "2026-10-20"), ("2026-10-20", "")]
            ),
        ),
        # The rows batch-piles.rq sums up, one per proposal, with what ranks it.
        "batch-waiting": (
            {},
            lambda rows: (
                sorted((r["key"].rsplit("/", 1)[1], r["area"], r["seen"], r["id"].startswith("f-")) for r in rows)
                == [("api", False, 1, True), ("sam", False, 1, True)]
            ),
        ),
        # Both proposals, each observed when it was recorded (today): proposals-due's rows for any cut-off.
        "proposals-observed": ({}, lambda rows: len(rows) == 2 and all(r["observedAt"] for r in rows)),
        "anchors-of": (
            dict(thing=e("step/canary-checks")),
            lambda rows: (
                [(r["thing"].rsplit("/", 1)[1], r["anchor"].rsplit("/", 1)[1]) for r in rows]
                == [("canary-checks", "release")]
            ),
        ),
        "anchors": (
            {},
            lambda rows: (
                sorted((r["thing"].rsplit("/", 1)[1], r["anchor"].rsplit("/", 1)[1]) for r in rows)
                == [
                    ("canary-checks", "release"),
                    ("deploy-staging", "release"),
                    ("gradual-rollout", "release"),
                    ("merge-to-main", "release"),
                    ("retired-env-no-work", "staging-2"),
                ]
            ),
        ),
        "lint-stale": (dict(before=LATER, now=NOW), lambda rows: len(rows) == 32),
        "lint-retention": (dict(before=LATER), lambda rows: len(rows) == 10),
        "lint-lost": (dict(now=NOW), lambda rows: rows == []),  # no correction of the example was rejected
        # The hotfix process's two entry points, the old one closed where the new one begins.
        "lint-overlaps": (
            {},
            lambda rows: (
                sorted(r["object"].rsplit("/", 1)[1] for r in rows) == ["deploys", "incidents"]
                and sum(r["retiredAt"] is not None for r in rows) == 1
            ),
        ),
        "lint-orphans": (
            dict(entities=ENTITIES, now=NOW),
            lambda rows: (
                sorted(r["entity"] for r in rows) == [e("channel/incidents").value, e("organization/fernhill").value]
            ),
        ),
        "lint-names": (dict(entities=ENTITIES), lambda rows: len({r["entity"] for r in rows}) == 23),
        "lint-links": (dict(now=NOW), lambda rows: rows == []),
        "lint-degree": (dict(entity=e("process/hotfix"), now=NOW), lambda rows: [r["facts"] for r in rows] == [4]),
        # Ten facts name a person: nine about them, and the hotfix rule, whose text names Dana.
        "private-facts": ({}, lambda rows: len(rows) == 10 and hotfix_entry.value in {r["fact"] for r in rows}),
        "person-labels": (
            dict(entities=ENTITIES),
            lambda rows: (
                sorted(r["key"] for r in rows)
                == ["dana", "dana okafor", "priya", "priya natarajan", "sam", "sam reyes"]
            ),
        ),
        "labels": (
            dict(entities=ENTITIES),
            lambda rows: (
                len({r["entity"] for r in rows}) == 23
                and {(r["label"], r["property"].rsplit("#", 1)[1]) for r in rows if r["entity"] == e("repo/api").value}
                >= {("api", "prefLabel"), ("the API", "altLabel")}
            ),
        ),
        "audiences": (
            {},
            lambda rows: (
                sum(r["hearing"] is None for r in rows) == 35  # each fact once
                and {r["fact"] for r in rows if r["hearing"] is not None and r["audience"] is None}
                == {r["fact"] for r in rows if r["hearing"] is None}  # each heard
                and {r["audience"] for r in rows if r["audience"] is not None} == {"owner"}
            ),
        ),
        "fact-audience": (dict(fact=hotfix_entry), lambda rows: [r["audience"] for r in rows] == ["owner"]),
        "fact-heard": (
            dict(fact=hotfix_entry),
            lambda rows: (
                sum(r["kind"] == "assertion" for r in rows) == 1
                and any(r["p"] == vocab.kg("heardIn").value for r in rows)
                and not any("/update/" in r["s"] for r in rows)
            ),
        ),
        # Everything the example knows was heard by its owner alone.
        "entity-audiences": (dict(entity=e("process/hotfix")), lambda rows: [r["audience"] for r in rows] == ["owner"]),
        "perspectives": (
            {},
            lambda rows: [(r["perspective"], r["count"]) for r in rows] == [(vocab.perspective_iri("main").value, 58)],
        ),
        "perspective-entities": (dict(entities=ENTITIES), lambda rows: [r["count"] for r in rows] == [23]),
        # The example holds one perspective: nothing of another.
        "other-perspectives": (dict(perspective=vocab.perspective_iri("main")), lambda rows: rows == []),
        "self-organization": (dict(entities=ENTITIES), lambda rows: rows == []),
        # The example merges no organization: tests/test_audience.py asks it on a merge.
        "merged-names": (dict(entities=ENTITIES), lambda rows: rows == []),
        # The example promotes no claim: tests/test_audience.py asks it of a promotion.
        "promotion-audiences": (dict(claim=hotfix_entry), lambda rows: rows == []),
        # Every fact naming the hotfix process, closed ones too: its two entry points (one superseded),
        # where it is announced, its rule, and who approves it.
        "entity-facts": (
            dict(entity=e("process/hotfix")),
            lambda rows: (
                sorted(r["direction"] for r in rows) == ["in", "out", "out", "out", "out"]
                and len({r["id"] for r in rows}) == 5
            ),
        ),
        # The example organization records no customers, affiliations or relations between organizations:
        # tests/test_org.py asks these on fixtures with known answers.
        "customers-quiet": (dict(us=e("organization/fernhill")), lambda rows: rows == []),
        "actor-organizations": (dict(actor=e("person/dana")), lambda rows: rows == []),
        "org-relations": (dict(org=e("organization/fernhill")), lambda rows: rows == []),
        "facts-exist": (
            dict(fact=hotfix_entry),
            lambda rows: [r["fact"] for r in rows] == [hotfix_entry.value],
        ),
        # Asked of a hub (tests/test_sync.py runs them there): a knowledge base's own dataset holds no hub journal.
        "hub-heads": ({}, lambda rows: rows == []),
        "hub-patches": ({"replica": ox.Literal("r-0123abcd"), "after": ox.Literal(0)}, lambda rows: rows == []),
        "hub-patch-piece": (
            {"patch": ox.NamedNode("urn:kgrdf:hub:r-0123abcd:1"), "start": ox.Literal(1000001)},
            lambda rows: rows == [],
        ),
        "hub-altered": ({"replica": ox.Literal("r-0123abcd")}, lambda rows: rows == []),
        "hub-digest": ({"patch": ox.NamedNode("urn:kgrdf:hub:r-0123abcd:1")}, lambda rows: rows == []),
        # The example has no site schema: tests/test_extension.py asks this of knowledge bases that do.
        "schema-usage": ({}, lambda rows: rows == []),
        # The Briefing's rows: every fact of the example, one of them replaced by another.
        "briefing-facts": (
            {},
            lambda rows: (
                len(rows) == 35
                and {r["perspective"] for r in rows} == {PERSPECTIVE.value}
                and sum(r["status"] == vocab.kg("Confirmed").value and not r["retiredAt"] for r in rows) == 32
                and [(r["successor"] is not None, r["retiredAt"] is not None) for r in rows].count((True, True)) == 1
                and all(r["recordedAt"] and r["subject"] and r["predicate"] for r in rows)
            ),
        ),
        # Each fact of the example heard once, by the owner; a hearing's own node, never the fact.
        "briefing-hearings": (
            {},
            lambda rows: (  # each hearing's audience, and its time, in a row each
                len([r for r in rows if r.get("audience")]) == 35
                and {r.get("audience") for r in rows} == {"owner", None}
                and {r["node"] for r in rows if r.get("heardAt")} == {r["node"] for r in rows if r.get("audience")}
                and all(r["graph"] == r["node"].split("/hearing/")[0] + "/provenance" for r in rows)
            ),
        ),
        # The example confirmed facts after recording them, and closed one: the hotfix process's old entry point.
        "briefing-revisions": (
            {},
            lambda rows: (
                hotfix_entry.value in {r["fact"] for r in rows} and len(rows) > 1 and all(r["revisedAt"] for r in rows)
            ),
        ),
        "raw-entities": (
            dict(entities=ENTITIES, **{"class": vocab.kg("Person")}),
            lambda rows: sorted(r["id"] for r in rows) == ["person/dana", "person/priya", "person/sam"],
        ),
        "raw-waiting": (
            {},
            lambda rows: (
                sorted((r["subject"], r["facts"]) for r in rows)
                == [(e("person/sam").value, 1), (e("repo/api").value, 1)]
            ),
        ),
        # Each fact's triple restated on it, beside its provenance, the entities and the schema.
        "validation-view": (
            {},
            lambda triples: (
                sum(p == vocab.kg("assertedPredicate").value for _, p, _ in triples) == 35
                and (hotfix_entry.value, vocab.kg("assertedSubject").value, e("process/hotfix").value) in triples
                and any(s == e("repo/api").value for s, _, _ in triples)
                and any(s == vocab.kg("entryPoint").value for s, _, _ in triples)
            ),
        ),
    }


def test_every_query_is_covered_by_a_case(dataset):
    assert set(cases(dataset[0])) == set(queries.names())


@pytest.mark.parametrize("name", queries.names())
def test_query_header_documents_every_parameter(name):
    query = queries.load(name)
    assert query.title, f"{name}.rq has no '# title:' line"
    body = "\n".join(line for line in query.text.splitlines() if not line.startswith("#"))
    used = set(re.findall(r"\$(\w+)", body))
    assert used == set(query.params), f"{name}.rq uses {sorted(used)}, documents {sorted(query.params)}"


PERSPECTIVE = vocab.perspective_iri("main")


def _scoped(query, bindings: dict) -> dict:
    """A whole-knowledge-base query reads one perspective, as the session binds it."""
    return {"perspective": PERSPECTIVE, **bindings} if "perspective" in query.params else bindings


def _oxigraph(store, query, bindings):
    """The query's answer as the embedded index gives it: its parameters bound in its text."""
    bindings = _scoped(query, bindings)
    result = store.query(queries.bind(query.text, bindings))
    if isinstance(result, ox.QueryBoolean):
        return bool(result)
    if isinstance(result, ox.QuerySolutions):
        names = [v.value for v in result.variables]
        return [{n: queries.value(row[n]) for n in names} for row in result]
    # A blank node's label is the engine's own: compare it as any blank node.
    return {tuple("_:" if isinstance(term, ox.BlankNode) else term.value for term in t) for t in result}


def _to_rdflib(term):
    import rdflib

    if isinstance(term, ox.NamedNode):
        return rdflib.URIRef(term.value)
    if term.datatype == vocab.XSD_STRING:  # rdflib keeps xsd:string apart from a plain literal
        return rdflib.Literal(term.value)
    return rdflib.Literal(term.value, datatype=rdflib.URIRef(term.datatype.value))


def _rdflib(graph, query, bindings):
    import rdflib

    bindings = _scoped(query, bindings)
    many = [k for k, v in bindings.items() if isinstance(v, list)]
    if many:  # rdflib binds one value a parameter: the answer is its answers for each value, together
        (name,) = many
        return [row for one in bindings[name] for row in _rdflib(graph, query, {**bindings, name: one})]
    result = graph.query(query.text, initBindings={rdflib.Variable(k): _to_rdflib(v) for k, v in bindings.items()})
    if result.type == "ASK":
        return bool(result.askAnswer)
    if result.type == "CONSTRUCT":
        return {tuple("_:" if isinstance(term, rdflib.BNode) else str(term) for term in triple) for triple in result}
    names = [str(v) for v in result.vars]
    return [
        {
            n: (
                None
                if row[i] is None
                else row[i].toPython()
                if isinstance(row[i], rdflib.Literal)
                and row[i].datatype
                and str(row[i].datatype).endswith(("integer", "boolean"))
                else str(row[i])
            )
            for i, n in enumerate(names)
        }
        for row in result
    ]


_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T")


def _lexical(value) -> str:
    """One spelling for both engines: rdflib writes 2026-01-01T00:00:00+00:00 where Oxigraph keeps Z."""
    text = str(value)
    if _DATETIME.match(text):
        return clock.iso(datetime.fromisoformat(text.replace("Z", "+00:00")))
    return text


def _comparable(rows):
    if isinstance(rows, set):
        return sorted(tuple(_lexical(v) for v in triple) for triple in rows)
    if not isinstance(rows, list):
        return rows
    return sorted(tuple(sorted((k, _lexical(v)) for k, v in row.items())) for row in rows)


@pytest.mark.parametrize("name", queries.names())
def test_query_gives_its_expected_rows_on_oxigraph(dataset, name):
    store, _ = dataset
    bindings, expect = cases(store)[name]
    rows = _oxigraph(store, queries.load(name), bindings)
    assert expect(rows), f"{name}.rq gave {rows!r:.2000}"


def test_a_whole_knowledge_base_query_sees_nothing_of_another_perspective(dataset):
    store, _ = dataset
    other = vocab.perspective_iri("other")
    for name in queries.names():
        query = queries.load(name)
        if "perspective" in query.params:
            bindings, _ = cases(store)[name]
            rows = _oxigraph(store, query, {**bindings, "perspective": other})
            assert rows == [] or all(row.get("count", 0) == 0 for row in rows), name


def test_a_bound_parameter_is_a_constant_to_the_planner():
    """One fact's closing is read from that fact, not from every closing held: with the value bound
    as Oxigraph's own substitutions bind it (joined to the whole answer, past the aggregate), the
    query for one fact cost a third of the query for all (90 ms against 310 ms at 40k closings)."""
    import time

    from kgrdf.store.oxigraph import OxigraphBackend

    backend = OxigraphBackend(None)
    kg, prov = "https://kgrdf.org/ns#", "http://www.w3.org/ns/prov#"
    at = ox.Literal("2026-01-01T00:00:00Z", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#dateTime"))
    quads = []
    for n in range(20_000):
        fact, change = ox.NamedNode(f"https://kgrdf.org/fact/{n}"), ox.BlankNode()
        update, graph = ox.NamedNode(f"{fact.value}/update/1"), ox.NamedNode(f"{fact.value}/provenance")
        quads += [
            ox.Quad(update, ox.NamedNode(kg + "updates"), fact, graph),
            ox.Quad(update, ox.NamedNode(prov + "endedAtTime"), at, graph),
            ox.Quad(update, ox.NamedNode(kg + "change"), change, graph),
            ox.Quad(change, ox.NamedNode(kg + "field"), ox.NamedNode(kg + "validTo"), graph),
        ]
    backend.store.extend(quads)
    query, one = queries.load("briefing-revisions"), ox.NamedNode("https://kgrdf.org/fact/777")

    def best(bindings):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            rows = backend.select(query, bindings)
            times.append(time.perf_counter() - start)
        return min(times), rows

    every, rows = best({})
    alone, [row] = best({"fact": one})
    assert len(rows) == 20_000
    assert row["fact"] == one and row["revisedAt"] == at
    assert alone * 20 < every, f"one fact's closing took {alone:.4f} s, every closing {every:.4f} s"


@pytest.mark.parametrize("name", queries.names())
def test_any_variable_of_a_query_bound_leaves_a_query_oxigraph_runs(name):
    """kgrdf binds more than the declared parameters (kgrdf.waiting binds ?fact in batch-waiting.rq
    to keep one fact's rows): whichever variable is bound, in a projection, a subquery's projection
    that holds nothing else, a GROUP BY, BOUND( ) or a filter, the text stays a query; one the query
    assigns is refused."""
    query, store = queries.load(name), ox.Store()
    body = "\n".join(line for line in query.text.splitlines() if not line.lstrip().startswith("#"))
    for variable in sorted(set(re.findall(r"[?$](\w+)", query.text))):
        assigned = re.search(rf"\bAS\s+[?$]{variable}\b|\bVALUES\s*\(?[?$\w\s]*[?$]{variable}\b", body) is not None
        try:
            bound = queries.bind(query.text, {variable: ox.NamedNode("https://kgrdf.org/kb/main/fact/f-1")})
        except ValueError as exc:
            assert assigned, f"{name}.rq: ?{variable} refused: {exc}"
            assert f"?{variable} is assigned by the query" in str(exc)
            continue
        assert not assigned, f"{name}.rq: ?{variable} is assigned, yet it was bound"
        try:
            store.query(bound)
        except SyntaxError as exc:
            raise AssertionError(f"{name}.rq with ?{variable} bound: {exc}\n{bound}") from None


def test_the_anchors_of_things_given_at_once_are_the_rows_of_every_anchor_about_them(dataset):
    """An import reads the anchors of its subjects alone (anchors-of.rq, the things given as
    values): they are anchors.rq's rows about those things, row for row, and a thing with none
    (an entity anchored nowhere, an IRI of nothing) gives none."""
    store, _ = dataset
    every = _oxigraph(store, queries.load("anchors"), {})
    things = sorted({row["thing"] for row in every})
    assert len(things) >= 5
    given = [ox.NamedNode(t) for t in things] + [e("process/release"), e("repo/no-such-thing")]
    rows = _oxigraph(store, queries.load("anchors-of"), {"thing": given})
    assert _comparable(rows) == _comparable(every)
    for thing in things[:3]:
        alone = _oxigraph(store, queries.load("anchors-of"), {"thing": ox.NamedNode(thing)})
        assert _comparable(alone) == _comparable([row for row in every if row["thing"] == thing])


ONE_FACT_QUERIES = [name for name in queries.names() if "fact" in queries.load(name).params]


@pytest.mark.parametrize("name", [n for n in ONE_FACT_QUERIES if re.search(r"\bWHERE\s*\{", queries.load(n).text)])
def test_a_query_for_one_fact_given_many_gives_each_ones_rows(dataset, name):
    """A listing reads its facts' sources by one query given all of them (a VALUES block): its rows
    are, row for row, those of the query run for each fact alone, and no fact gives none."""
    store, _ = dataset
    query = queries.load(name)
    facts = [ox.NamedNode(row[0].value) for row in store.query("SELECT DISTINCT ?f WHERE { GRAPH ?f { ?s ?p ?o } }")]
    facts = sorted((f for f in facts if "/fact/" in f.value), key=lambda f: f.value)[:7]
    facts.append(ox.NamedNode("https://kgrdf.org/kb/main/fact/f-000000"))  # no such fact
    assert len(facts) == 8
    each = [row for fact in facts for row in _oxigraph(store, query, {"fact": fact})]
    together = _oxigraph(store, query, {"fact": facts})
    assert _comparable(together) == _comparable(each)
    assert _oxigraph(store, query, {"fact": []}) == []


def test_a_parameter_given_many_values_is_refused_where_the_query_assigns_it_or_has_no_where():
    many = [ox.NamedNode("https://ex.org/a"), ox.NamedNode("https://ex.org/b")]
    with pytest.raises(ValueError, match="assigned by the query"):
        queries.bind("SELECT ?x WHERE { BIND (<https://ex.org/c> AS ?x) }", {"x": many})
    with pytest.raises(ValueError, match="needs the query's WHERE"):
        queries.bind(queries.load("fact-exists").text, {"fact": many})
    with pytest.raises(BadInput):
        queries.bind("SELECT ?x WHERE { ?x ?p ?o }", {"x": [*many, "https://ex.org/c"]})
    # the VALUES block goes in the query's own WHERE, not a template's or a subquery's braces
    bound = queries.bind('CONSTRUCT { ?x ?p "}" } WHERE { { SELECT ?x ?p WHERE { ?x ?p ?o } } }', {"x": many[:1]})
    assert (
        bound
        == 'CONSTRUCT { ?x ?p "}" } WHERE { VALUES ?x { <https://ex.org/a> }\n { SELECT ?x ?p WHERE { ?x ?p ?o } } }'
    )


def test_a_subquery_left_projecting_nothing_projects_a_filler():
    text = "SELECT ?x ?y WHERE { { SELECT ?x WHERE { ?x ?p ?o } } { SELECT ?x ?y { ?x ?q ?y } } }"
    bound = queries.bind(text, {"x": ox.NamedNode("https://ex.org/x")})
    assert bound == (
        "SELECT (<https://ex.org/x> AS ?x) ?y WHERE { { SELECT  (true AS ?bound_x) WHERE { <https://ex.org/x> ?p ?o } } "
        "{ SELECT  ?y { <https://ex.org/x> ?q ?y } } }"
    )


@pytest.mark.parametrize("name", ["batch-waiting", "anchors", "proposals-observed"])
def test_a_batch_query_with_one_fact_bound_gives_that_facts_rows_of_the_whole(dataset, name):
    """kgrdf.waiting keeps a write's facts' rows by these queries with ?fact bound: each fact's rows
    are those the whole query gives it."""
    store, _ = dataset
    query = queries.load(name)
    every = _oxigraph(store, query, {})
    facts = sorted({row["fact"] for row in every})
    assert facts, f"{name}.rq gives no rows on the example"
    for fact in facts[:5]:
        alone = _oxigraph(store, query, {"fact": ox.NamedNode(fact)})
        assert _comparable(alone) == _comparable([row for row in every if row["fact"] == fact])


@pytest.mark.parametrize("name", queries.names())
def test_oxigraph_and_rdflib_agree(dataset, name):
    store, graph = dataset
    bindings, _ = cases(store)[name]
    query = queries.load(name)
    assert _comparable(_oxigraph(store, query, bindings)) == _comparable(_rdflib(graph, query, bindings))


# --- the organization questions, on a fixture that holds answers for them ---------------------------


@pytest.fixture(scope="module")
def org_dataset(tmp_path_factory):
    """Fernhill and four organizations: customers, a vendor, a parent, an affiliated actor."""
    from .conftest import Kg

    kg = Kg(tmp_path_factory.mktemp("org") / "kb")
    kg("init")
    kg("org", "init", "Fernhill")
    trusted = ["-s", "ledger:crm", "-s", "report:accounts"]
    for name in ("Acme", "Globex", "Initech", "Hooli"):
        kg("org", "add", name)
    kg("propose", "Acme", "customer_of", "--object", "Fernhill", *trusted)
    kg("propose", "Initech", "customer_of", "--object", "Fernhill", *trusted)
    kg("org", "set", "Acme", "last_contact_at", "2026-11-20", *trusted)
    kg("org", "set", "Initech", "last_contact_at", "2026-05-01", *trusted)
    kg("propose", "Globex", "vendor_of", "--object", "Acme", *trusted)
    kg("propose", "Hooli", "parent_of", "--object", "Globex", *trusted)
    kg("add-entity", "actor/jo", "--name", "Jo Park")
    link = kg.json("propose", "actor/jo", "affiliated_with", "--object", "Acme", "-s", "profile:dir")
    kg("confirm", link["id"])
    return both_engines(kg.path)


ORG = vocab.entity_iri("main", "organization/fernhill")
ORG_CASES = {
    "customers-quiet": (
        dict(us=ORG),
        lambda rows: (
            sorted((r["id"], r["contact"]) for r in rows)
            == [("organization/acme", "2026-11-20"), ("organization/initech", "2026-05-01")]
        ),
    ),
    "actor-organizations": (
        dict(actor=vocab.entity_iri("main", "actor/jo")),
        lambda rows: [r["id"] for r in rows] == ["organization/acme"],
    ),
    "org-relations": (
        dict(org=vocab.entity_iri("main", "organization/acme")),
        lambda rows: (
            sorted((r["direction"], r["predicateKey"], r["peerId"]) for r in rows)
            == [("in", "vendor_of", "organization/globex"), ("out", "customer_of", "organization/fernhill")]
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(ORG_CASES))
def test_organization_questions_give_their_known_answers_on_both_engines(org_dataset, name):
    store, graph = org_dataset
    bindings, expect = ORG_CASES[name]
    query = queries.load(name)
    rows = _oxigraph(store, query, bindings)
    assert expect(rows), f"{name}.rq gave {rows!r:.2000}"
    assert _comparable(rows) == _comparable(_rdflib(graph, query, bindings))
