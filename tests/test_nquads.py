"""A new fact's rows are made as text (kgrdf.nquads, model.fact_lines), not as quads written out:
the text must be what Oxigraph writes for the same quads, whatever the texts hold, or a row staged
by a write would not cancel its own deletion, nor match the index's."""

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyoxigraph import BlankNode, Literal, NamedNode, Quad, RdfFormat, parse

from kgrdf import model, nquads, vocab
from kgrdf import schema as schema_module

SCHEMA = schema_module.core()
# Any text Python holds, lone surrogates too (a Literal refuses them, and so must the rows).
ANY_TEXT = st.text(st.characters(codec=None), max_size=40)
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
HOSTILE = st.sampled_from(['"', "\\", "\n", "\r", "\t", "\x00", "\x7f", "\x1f", "é", "\u2028", "\u0085", " . ", " <"])
SHOWN = st.one_of(TEXT, st.lists(st.one_of(TEXT, HOSTILE), max_size=6).map("".join))


@given(st.one_of(ANY_TEXT, st.lists(st.one_of(ANY_TEXT, HOSTILE), max_size=6).map("".join)))
def test_a_string_is_written_as_oxigraph_writes_it(text):
    try:
        expected = str(Literal(text))
    except (TypeError, ValueError, UnicodeError) as exc:
        with pytest.raises(type(exc)):
            nquads.string(text)
        return
    assert nquads.string(text) == expected


def test_an_iri_is_checked_as_oxigraph_checks_it():
    assert nquads.iri("https://example.org/a") == "<https://example.org/a>"
    with pytest.raises(ValueError):
        nquads.iri("not an iri")


@given(SHOWN, st.sampled_from(["", "@en", "^^<http://www.w3.org/2001/XMLSchema#integer>"]), st.booleans())
def test_a_row_shows_its_subject_predicate_and_graph(text, tail, blank):
    subject = BlankNode("b1") if blank else NamedNode("https://example.org/s")
    obj = (
        Literal("7", datatype=vocab.XSD_INTEGER)
        if tail.startswith("^^")
        else Literal(text, language="en")
        if tail
        else Literal(text)
    )
    quad = Quad(subject, NamedNode("https://example.org/p"), obj, NamedNode("https://example.org/g"))
    line = str(quad)
    assert nquads.predicate_of(line) == "https://example.org/p"
    assert nquads.subject_of(line) == ("" if blank else "https://example.org/s")
    assert nquads.graph_of(line) == "https://example.org/g"


def test_quads_are_parsed_many_at_a_time_and_only_those_kept(monkeypatch):
    monkeypatch.setattr(nquads, "PARSED_AT_ONCE", 3)
    lines = [
        str(
            Quad(
                NamedNode(f"https://example.org/s{i}"),
                NamedNode("https://example.org/p"),
                Literal(f'v "{i}"'),
                NamedNode("https://example.org/g"),
            )
        )
        for i in range(10)
    ]
    assert [str(q) for q in nquads.quads(lines)] == lines
    kept = list(nquads.quads(lines, keep=lambda line: line.startswith("<https://example.org/s1")))
    assert [str(q) for q in kept] == [lines[1]]
    assert nquads.parsed([]) == []


def _fact(draw_texts, status, authority, with_quote, with_value):
    ref, quote, message, span, role, value = draw_texts
    iri = vocab.fact_iri("main", "f-abcdef").value
    source = model.Source("slack", ref or "ref", quote if with_quote and quote else None)
    hearing = model.Hearing(
        iri=model.hearing_iri(iri, 3, 1),
        audience="channel:sales",
        sources=(source,),
        message=message or None,
        heard_at="2026-12-02T07:20:26Z",
        confidence=0.25,
        span=span or None,
    )
    return model.Fact(
        id="f-abcdef",
        iri=iri,
        subject=vocab.entity_iri("main", "repo/api").value,
        predicate=SCHEMA.predicate("caveat").iri if with_value else SCHEMA.predicate("depends_on").iri,
        target=Literal(value) if with_value else vocab.entity_iri("main", "team/core"),
        status=status,
        authority=authority,
        sources=[source],
        observed_at="2026-12-02T07:20:26Z",
        observations=2,
        valid_from="2026-01-01T00:00:00Z",
        recorded_at="2026-12-02T07:20:26Z",
        reviewed_by="Ann",
        claimed_role=role or None,
        extracted=True,
        order=4,
        perspective=vocab.perspective_iri("main").value,
        hearings=[hearing],
    )


@given(
    st.tuples(SHOWN, SHOWN, SHOWN, SHOWN, SHOWN, SHOWN),
    st.sampled_from(["proposed", "confirmed", "rejected"]),
    st.sampled_from(["observed", "user", "inferred"]),
    st.booleans(),
    st.booleans(),
)
def test_a_facts_rows_are_the_quads_oxigraph_reads_back_into_the_same_fact(texts, status, authority, quote, value):
    fact = _fact(texts, status, authority, quote, value)
    lines = model.fact_lines(fact, SCHEMA)
    quads = list(parse((" .\n".join(lines) + " .\n").encode("utf-8"), format=RdfFormat.N_QUADS))
    assert [str(q) for q in quads] == lines  # each row as Oxigraph writes its quad
    assert model.fact_quads(fact, SCHEMA) == quads
    rows = [
        {
            "kind": Literal("assertion" if q.graph_name.value == fact.iri else "provenance"),
            "s": q.subject,
            "p": q.predicate,
            "o": q.object,
        }
        for q in quads
    ]
    assert model.fold_fact(fact.iri, rows, SCHEMA) == fact


def test_a_read_of_one_graph_leaves_the_blocks_of_other_graphs_packed(monkeypatch):
    """people and waiting read the entities graph: a write's packed facts hold no row of it, and
    stay packed, though what the read finds is what it finds in the rows unpacked."""
    facts = [_fact(("ref", "", "", "", "", f"value {i}"), "proposed", "observed", False, True) for i in range(3)]
    facts = [replace(f, iri=f.iri + str(i)) for i, f in enumerate(facts)]
    entities = vocab.entities_graph("main").value
    label = vocab.PREF_LABEL.value
    loose = [f'<{vocab.entity_iri("main", "person/ann").value}> <{label}> "Ann" <{entities}>']
    blocks = [nquads.Block.pack(model.fact_lines(f, SCHEMA)) for f in facts]
    every = loose + [line for block in blocks for line in block.lines()]
    fact_graph, provenance = facts[1].iri, facts[1].iri + "/provenance"
    predicates = {SCHEMA.predicate("caveat").iri, vocab.RDF_TYPE.value}
    expected = {
        graph: nquads.subjects_and_objects(every, graph, predicates | {label})
        for graph in (entities, fact_graph, provenance)
    }
    assert expected[entities] and expected[fact_graph] and expected[provenance]

    unpacked = []
    lines_of = nquads.Block.lines
    monkeypatch.setattr(nquads.Block, "lines", lambda block: unpacked.append(block) or lines_of(block))
    for graph in (entities, fact_graph, provenance):
        unpacked.clear()
        rows = nquads.Rows(loose, blocks)
        assert nquads.subjects_and_objects(rows, graph, predicates | {label}) == expected[graph]
        assert unpacked == ([] if graph == entities else [blocks[1]])


@given(SHOWN, SHOWN, SHOWN)
def test_a_changes_rows_are_written_as_oxigraph_writes_them_and_delete_only_what_is_there(reason, ref, message):
    """A change (an observation, a field set and set back within one record) is made as rows, not
    quads: each row must be the text Oxigraph writes for it, or a deletion would not find the row
    it deletes; and what it deletes is what the fact and the record's earlier rows hold."""
    fact = _fact(("ref", "", "", "", "", "value"), "proposed", "observed", False, True)
    held = set(model.fact_lines(fact, SCHEMA))
    hearing = model.Hearing(
        model.hearing_iri(fact.iri, 9, 1), "owner", (model.Source("slack", ref or "r"),), message=message or None
    )
    deletes, adds, draft = model.draft_change(
        fact,
        {"observations": 3, "status": "confirmed"},
        seq=9,
        at="2026-12-02T08:00:00Z",
        action="observe",
        reason=reason or None,
        schema=SCHEMA,
        new_sources=list(hearing.sources),
        new_hearings=[hearing],
    )
    more_deletes, more_adds = model.fold_change(draft, {"status": "proposed", "observations": 4}, schema=SCHEMA)
    for rows in (deletes, adds, more_deletes, more_adds):
        assert [str(q) for q in nquads.parsed(rows)] == rows
    assert set(deletes) <= held
    held = (held - set(deletes)) | set(adds)
    assert set(more_deletes) <= held
    held = (held - set(more_deletes)) | set(more_adds)
    # the status is back to what it held before the record: the record no longer says it changed
    assert not [row for row in held if f"<{draft.update.value}/status>" in row]
    assert [row for row in held if f"<{draft.update.value}/observations>" in row]
    assert model.fact_lines(draft.fact, SCHEMA)[0] in held


_KB = vocab.KB + "main/"
_ROWS = st.one_of(
    # a fact's rows, in its assertion or provenance graph (six facts, so that graphs repeat)
    st.builds(
        lambda n, prov, o: (
            f'<{_KB}repo/r{n}> <{vocab.KG}caveat> "{o}" <{_KB}fact/f-00000{n}{"/provenance" if prov else ""}>'
        ),
        st.integers(0, 5),
        st.booleans(),
        st.text(alphabet="abc ", max_size=8),
    ),
    # an entity's rows: a person's always private, another's when its text names one
    st.builds(
        lambda kind, name: f'<{_KB}{kind}/x> <{vocab.SKOS}prefLabel> "{name}" <{_KB}entities>',
        st.sampled_from(["person", "repo", "team"]),
        st.sampled_from(["Sam", "api", "web"]),
    ),
)


@given(st.lists(_ROWS, max_size=40), st.lists(st.sampled_from([True, False, None]), min_size=6, max_size=6))
def test_a_router_splits_many_rows_at_once_as_it_decides_each(rows, decisions):
    """The journal splits a write's rows between the private journal and the shared one with the
    router's split_lines (a loop, not a call a row): the same split, in the same order, as asking the
    router of each row, whatever the facts' decisions (None: not known, kept private) and entity rows."""
    from kgrdf import privacy

    def router():
        return privacy.Router(lambda iri: decisions[int(iri[-1])], lambda line: '"Sam"' in line)

    asked = router()
    expected = ([r for r in rows if asked(r)], [r for r in rows if not router()(r)])
    assert router().split_lines(rows) == expected
    left, right = nquads.Rows(list(rows)).split(router())
    assert (list(left), list(right)) == expected


_IRI_TEXT = st.text(st.characters(codec="ascii", categories=["L", "N"]) | st.sampled_from("/-._~:=&é"), max_size=12)
_TERM_IRI = _IRI_TEXT.map(lambda tail: NamedNode("https://example.org/" + tail))
_OBJECT = st.one_of(
    _TERM_IRI,
    st.builds(BlankNode, st.sampled_from(["b1", "x"])),
    st.builds(Literal, SHOWN),
    st.builds(lambda text: Literal(text, language="en"), SHOWN),
    st.builds(lambda text, datatype: Literal(text, datatype=datatype), SHOWN, _TERM_IRI),
    st.sampled_from(
        [Literal("7", datatype=vocab.XSD_INTEGER), Literal("2026-01-02T03:04:05Z", datatype=vocab.XSD_DATETIME)]
    ),
)


@given(
    st.lists(
        st.tuples(st.one_of(_TERM_IRI, st.builds(BlankNode, st.just("s"))), _TERM_IRI, _OBJECT, _TERM_IRI), max_size=12
    )
)
def test_a_rows_fields_read_from_its_text_are_the_parsed_quads_values(terms):
    """Whatever a row holds (escapes, a language, a datatype, a blank node, ' <' or '"^^<' in a
    string), the fields read from its text are the values Oxigraph's parser gives."""
    lines = [str(Quad(*t)) for t in terms]
    expected = []
    for quad in nquads.parsed(lines):
        datatype = getattr(quad.object, "datatype", None)
        expected.append(
            (
                quad.subject.value,
                quad.predicate.value,
                quad.object.value,
                getattr(datatype, "value", None),
                quad.graph_name.value,
            )
        )
    assert list(nquads.fields(lines)) == expected  # in the rows' order: a later row of a fact's column wins
    assert list(nquads.fields(lines, keep=lambda line: False)) == []
