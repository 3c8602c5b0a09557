"""kg sparql is a sandbox (§7): no SERVICE, a time limit that frees the lock, bounded size and nesting."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgrdf import sandbox
from tests.conftest import Kg, one_line

PORT9 = "<http://127.0.0.1:9/>"  # Oxigraph refuses port 9 before connecting: a SERVICE call shows, none is sent
ALL = "SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
_FOUR_TIMES = "{ GRAPH ?g { ?a ?p ?x } GRAPH ?g2 { ?b ?q ?y } GRAPH ?g3 { ?c ?r ?z } GRAPH ?g4 { ?d ?t ?w } }"
# every quad four times over, ordered: minutes of work, memory growing by hundreds of MB a second
CARTESIAN = f"SELECT * WHERE {_FOUR_TIMES} ORDER BY ?x ?y ?z ?w"
# the same rows counted: minutes of work in little memory
SLOW = f"SELECT (COUNT(*) AS ?n) WHERE {_FOUR_TIMES}"


@pytest.fixture(scope="module")
def small_template(tmp_path_factory):
    kg = Kg(tmp_path_factory.mktemp("sandbox") / "kb")
    kg("init")
    kg("add-entity", "service/db", "--name", "service", "--summary", "the service database")
    kg("add-entity", "repo/web-app", "--name", "web-app")
    return kg.path


@pytest.fixture
def small(small_template, tmp_path):
    """A knowledge base with an entity named "service", of the type kg:Service."""
    shutil.copytree(small_template, tmp_path / "kb", symlinks=True)
    return Kg(tmp_path / "kb")


@pytest.mark.parametrize(
    "query",
    [
        f"SELECT * WHERE {{ SERVICE {PORT9} {{ ?s ?p ?o }} }}",
        f"select * where {{ service silent {PORT9} {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ BIND({PORT9} AS ?u) SeRvIcE ?u {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ {{ OPTIONAL {{ {{ SERVICE {PORT9} {{ ?s ?p ?o }} }} }} }} }}",
        f"SELECT * WHERE {{ GRAPH ?g {{ ?s ?p ?o }} SERVICESILENT{PORT9}{{}} }}",
        f"SELECT * WHERE {{ GRAPH ?g {{ ?s ?p 1SERVICE{PORT9}{{}} }} }}",
        f"PREFIX : {PORT9} SELECT * WHERE {{ ?s ?p ?o . SERVICE:x {{}} }}",
        'SELECT * WHERE { ?s ?p "service" . SERVICE ?u {} }  # SERVICE in a comment too',
        f"SELECT * WHERE {{ ?s ?p ?o }}\n# first line clean\nSERVICE {PORT9} {{}}",
        # an escaped "#" in a prefixed name is part of the name, not a comment hiding the rest of the line
        f"PREFIX ex: <urn:ex:> SELECT * WHERE {{ OPTIONAL {{ ?s ex:a\\#b ?o }} SERVICE {PORT9} {{ ?s ?p ?o }} }}",
        f"PREFIX ex: <urn:ex:> SELECT * WHERE {{ ?s ex:a\\#\\( ?o . SERVICE {PORT9} {{}} }}",
    ],
)
def test_service_is_refused_before_running(small, query):
    before = small.snapshot()
    result = small("sparql", query, expect=1)
    assert "does not run SERVICE" in one_line(result)
    assert result.stdout == ""
    assert small.snapshot() == before


@pytest.mark.parametrize(
    "query, word",
    [
        ('INSERT DATA { GRAPH <urn:g> { <urn:a> <urn:b> "c" } }', "INSERT"),
        ("prefix ex: <urn:ex:>\nbase <urn:b/>\n  delete where { GRAPH ?g { ?s ex:p ?o } }", "DELETE"),
        ("# a comment first\nWITH <urn:g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", "WITH"),
        ("PREFIX : <urn:x:> CLEAR ALL", "CLEAR"),
        ("DROP SILENT GRAPH <urn:g>", "DROP"),
        ("load<http://127.0.0.1:9/data.ttl>", "LOAD"),
    ],
)
def test_an_update_is_refused_as_one_by_its_keyword(small, query, word):
    before = small.snapshot()
    result = small("sparql", query, expect=1)
    assert f"{word} (line " in one_line(result) and "starts an update" in one_line(result)
    assert result.stdout == ""
    assert small.snapshot() == before


@pytest.mark.parametrize(
    "query",
    [
        "SELECT ?insert WHERE { GRAPH ?g { ?insert ?p ?o } } LIMIT 1",
        "PREFIX delete: <https://kgrdf.org/ns#> SELECT ?s WHERE { GRAPH ?g { ?s a delete:Repo } }",
        "PREFIX load: <urn:x:> ASK { ?s load:clear ?o }",
    ],
)
def test_update_words_as_names_in_a_query_still_run(small, query):
    small("sparql", query)


@pytest.mark.parametrize(
    "query, expected",
    [
        ('SELECT ?e WHERE { GRAPH ?g { ?e <http://www.w3.org/2004/02/skos/core#prefLabel> "service" } }', "service/db"),
        ("SELECT ?e WHERE { GRAPH ?g { ?e <http://www.w3.org/2004/02/skos/core#prefLabel> 'service' } }", "service/db"),
        ('SELECT ?e WHERE { GRAPH ?g { ?e ?p """a "SERVICE" <x> {} ...""" } }', ""),
        (
            "PREFIX kg: <https://kgrdf.org/ns#> SELECT ?service WHERE { GRAPH ?g { ?service a kg:Service } }",
            "service/db",
        ),
        ("SELECT ?e WHERE { GRAPH ?g { ?e a <https://kgrdf.org/ns#Service> } } # SERVICE <http://x/> {}", "service/db"),
        ('SELECT $service WHERE { GRAPH ?g { $service ?p ?o FILTER(?o = "x"@service) } }', ""),
        ('SELECT ?e WHERE { GRAPH ?g { ?e a ?t } FILTER(CONTAINS(STR(?e), "/service/")) }', "service/db"),
        # an escaped character in a prefixed name: the query runs, its "#" no comment
        (
            "PREFIX s: <http://www.w3.org/2004/02/skos/core> SELECT ?e WHERE { GRAPH ?g { ?e s:\\#prefLabel ?n } }",
            "service/db",
        ),
    ],
)
def test_service_as_a_word_in_data_still_runs(small, query, expected):
    out = small("sparql", query).stdout
    assert expected in out


WORDS = ["SERVICE", "service", "Service", "sErViCe", "SERVICESILENT", "SERVICE SILENT"]
GLUE = [
    "",
    " ",
    "\n",
    "\t",
    ".",
    " . ",
    "1",
    "1.0",
    "true",
    "{}",
    "[]",
    ")",
    '"x"',
    "?o ",
    "?o.",
    ":",
    "kg:",
    "kg:a.",
    "_:b",
    "# c\n",
    "<http://x/>",
    "@en ",
    "\\u0020",
]
TARGETS = [PORT9, "?u", ":x", "<http://127.0.0.1:9/a b>"]


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.sampled_from(GLUE),
    word=st.sampled_from(WORDS),
    after=st.sampled_from(["", " ", "\n"]),
    target=st.sampled_from(TARGETS),
    wrap=st.integers(0, 3),
)
def test_no_spelling_of_service_reaches_the_engine(small, before, word, after, target, wrap):
    """Whatever the glue around the keyword, either kg refuses it or Oxigraph never attempts a call
    (it would fail naming port 9, or an unbound service variable)."""
    inner = f"GRAPH ?g {{ ?s ?p ?o }} {before}{word}{after}{target} {{ ?s ?p ?o }}"
    query = (
        f"PREFIX : {PORT9} PREFIX kg: <https://kgrdf.org/ns#> SELECT * WHERE "
        + "{ " * wrap
        + inner
        + " }" * wrap
        + " }"
    )
    query = query.replace("WHERE { ", "WHERE { BIND(<http://127.0.0.1:9/> AS ?u) ", 1)
    result = _run(small, query)
    assert result.exit_code in (0, 1, 2)
    assert "port 9" not in result.stderr and "service name" not in result.stderr, (query, result.stderr)
    if result.exit_code:
        one_line(result)


def _run(kg, query):
    from typer.testing import CliRunner

    from kgrdf.cli import app

    result = CliRunner().invoke(app, ["sparql", query, "--kb", str(kg.path)])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.sampled_from(["service", "SERVICE", "Service", " ", "\n", "{", "}", "\\", '"', "'", "x", ":"]), max_size=12
    )
)
def test_the_word_inside_a_string_iri_or_comment_is_never_refused(small, parts):
    body = "".join(parts).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    iri_body = "".join(p for p in parts if p.strip() and p not in "{}\\\"'")
    comment = "".join(parts).replace("\n", " ")
    query = f'SELECT * WHERE {{ GRAPH ?g {{ ?s ?p "{body}" . ?s <http://e/{iri_body}> ?o }} }} # {comment}\n'
    result = _run(small, query)
    assert result.exit_code == 0, (query, result.stderr)


@pytest.mark.parametrize("opener, closer", [("(", ")"), ("{", "}"), ("[", "]")])
def test_deep_nesting_is_refused_with_one_line(small, opener, closer):
    deep = {
        "(": f"SELECT * WHERE {{ FILTER({'(' * 5000}1{')' * 5000}) }}",
        "{": f"SELECT * WHERE {'{' * 5000}{'}' * 5000}",
        "[": f"SELECT * WHERE {{ ?s ?p {'[ ?p ' * 5000}1{']' * 5000} }}",
    }[opener]
    result = small("sparql", deep, expect=2)
    assert f"more than {sandbox.MAX_NESTING} deep" in one_line(result)


def test_nesting_after_an_escaped_hash_in_a_name_is_counted(small):
    """``ex:a\\#`` is a name to the engine: what follows on its line is code, and is checked as code."""
    deep = f"PREFIX ex: <urn:ex:> SELECT * WHERE {{ ?s ex:a\\# ?o . {'{' * 5000}{'}' * 5000} }}"
    result = small("sparql", deep, expect=2)
    assert f"more than {sandbox.MAX_NESTING} deep" in one_line(result)


def test_nesting_within_the_bound_runs(small):
    depth = sandbox.MAX_NESTING - 2
    small("sparql", f"SELECT * WHERE {'{' * depth}{'}' * depth}")
    small("sparql", f"SELECT * WHERE {{ FILTER({'(' * depth}true{')' * depth}) }}")


def test_a_query_that_crashes_the_engine_is_one_line(small):
    chain = "+".join(["1"] * 20000)  # shallow, but the parser recurses once a term
    result = small("sparql", f"SELECT * WHERE {{ FILTER({chain} > 0) }}", expect=2)
    assert "query engine failed" in one_line(result)
    small("sparql", ALL)  # and the next query runs


def test_size_is_bounded_as_text_and_as_file(small, tmp_path):
    huge = ALL + " #" + "x" * sandbox.MAX_BYTES
    assert "bytes" in one_line(small("sparql", huge, expect=2))
    path = tmp_path / "huge.rq"
    path.write_text(huge)
    assert "larger than" in one_line(small("sparql", str(path), expect=2))
    path.write_text(f"SELECT * WHERE {{ SERVICE {PORT9} {{}} }}")
    assert "SERVICE" in one_line(small("sparql", str(path), expect=1))


def test_a_slow_query_stops_at_its_limit(small):
    started = time.monotonic()
    result = small("sparql", SLOW, "--timeout", "1", expect=1)
    elapsed = time.monotonic() - started
    assert "time limit of 1 s" in one_line(result)
    assert elapsed < 1 + 4
    small("sparql", ALL)


def test_a_query_growing_past_its_memory_stops(small, monkeypatch):
    monkeypatch.setenv("KGRDF_QUERY_MEMORY", "64")
    started = time.monotonic()
    result = small("sparql", CARTESIAN, "--timeout", "60", expect=1)
    assert "more than its 64 MB of memory" in one_line(result)
    assert time.monotonic() - started < 10
    small("sparql", ALL)


@pytest.mark.parametrize(
    "option, env",
    [
        (["--timeout", "0"], {}),
        (["--timeout", "-3"], {}),
        (["--timeout", "nan"], {}),
        ([], {"KGRDF_QUERY_TIMEOUT": "soon"}),
        ([], {"KGRDF_LOCK_TIMEOUT": "abc"}),
        ([], {"KGRDF_QUERY_MEMORY": "-1"}),
    ],
)
def test_a_bad_limit_is_bad_input(small, monkeypatch, option, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    one_line(small("sparql", ALL, *option, expect=2))


def _kg(*args, **env):
    return subprocess.Popen(
        [sys.executable, "-m", "kgrdf", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def _wait_for_child(parent: int) -> int:
    """The query's process, once the reader has forked it."""
    for _ in range(200):
        kids = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True).stdout.split()
        if kids:
            return int(kids[0])
        time.sleep(0.05)
    raise AssertionError("the query never started")


def test_a_write_lands_within_the_limit_of_a_slow_read(small):
    """The env default applies, and a writer waiting behind the read gets the lock once it stops."""
    kb = str(small.path)
    reader = _kg("sparql", SLOW, "--kb", kb, KGRDF_QUERY_TIMEOUT="2")
    _wait_for_child(reader.pid)
    started = time.monotonic()
    writer = _kg("add-entity", "repo/api", "--name", "api", "--kb", kb, KGRDF_LOCK_TIMEOUT="30")
    assert writer.wait(timeout=30) == 0, writer.stderr.read()
    assert time.monotonic() - started < 2 + 10  # the limit, then the write's own work on busy cores (without
    # the limit: the write's own 30 s)
    assert reader.wait(timeout=10) == 1
    assert "time limit" in reader.stderr.read()
    assert "api" in small("lookup", "repo/api").stdout


def test_a_killed_reader_takes_its_query_with_it(small):
    kb = str(small.path)
    reader = _kg("sparql", SLOW, "--kb", kb, "--timeout", "60")
    child = _wait_for_child(reader.pid)
    reader.send_signal(signal.SIGKILL)
    reader.wait()
    started = time.monotonic()
    writer = _kg("add-entity", "repo/api", "--name", "api", "--kb", kb, KGRDF_LOCK_TIMEOUT="20")
    assert writer.wait(timeout=30) == 0, writer.stderr.read()
    assert time.monotonic() - started < 15  # (the query left running: the write's own 20 s)
    assert not _running(child)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


@pytest.mark.slow
def test_a_stream_of_overlapping_reads_never_starves_a_write(small):
    """Reads keep starting, each overlapping the last: readers that arrive after a waiting writer
    queue behind it, so the write lands once the reads already running stop at their limit."""
    kb = str(small.path)
    readers = [_kg("sparql", SLOW, "--kb", kb, "--timeout", "3")]
    _wait_for_child(readers[0].pid)
    started = time.monotonic()  # the first read runs
    writer = _kg("add-entity", "repo/api", "--name", "api", "--kb", kb, KGRDF_LOCK_TIMEOUT="30")
    time.sleep(1.5)  # the writer waits
    while writer.poll() is None and time.monotonic() - started < 12:
        readers.append(_kg("sparql", SLOW, "--kb", kb, "--timeout", "3"))
        time.sleep(0.7)
    landed = time.monotonic() - started
    assert writer.wait(timeout=30) == 0, writer.stderr.read()
    for reader in readers:
        assert reader.wait(timeout=30) in (0, 1)
    # the read's 3 s, then the write's own work (about a second, more on busy cores); without the
    # turnstile the readers keep the lock shared and the write waits the whole 12 s
    assert landed < 3 + 6, f"the write landed {landed:.1f} s after a read of 3 s began"  # (starved: 12 s)
    assert "api" in small("lookup", "repo/api").stdout


# --- a query's own dataset: FROM and FROM NAMED narrow what it may read, never ignored ----------------------


@pytest.mark.parametrize(
    "query, expected",
    [
        ("SELECT * WHERE { ?s ?p ?o }", None),
        ("SELECT * FROM <urn:a> WHERE { ?s ?p ?o }", (["urn:a"], [])),
        ("select * from named <urn:a> from <urn:b> from NAMED <urn:c> { ?s ?p ?o }", (["urn:b"], ["urn:a", "urn:c"])),
        (
            "PREFIX g: <http://ex/g/> PREFIX : <http://ex/> SELECT * FROM g:one FROM NAMED :two {}",
            (["http://ex/g/one"], ["http://ex/two"]),
        ),
        (
            "BASE <http://ex/kb/> SELECT * FROM <fact/f1> FROM NAMED <../other> {}",
            (["http://ex/kb/fact/f1"], ["http://ex/other"]),
        ),
        ("SELECT * FROM<urn:a>FROM NAMED<urn:b>{}", (["urn:a"], ["urn:b"])),
        ("PREFIX ex: <urn:x:> SELECT * FROM ex:a\\-b {}", (["urn:x:a-b"], [])),
        ("SELECT * FROM <urn:\\u0061> {}", (["urn:a"], [])),
        # the word anywhere but as a keyword names no graph
        ('SELECT * WHERE { ?from ?p "FROM <urn:a>" } # FROM <urn:b>', None),
        ("PREFIX from: <urn:f:> SELECT * WHERE { ?s from:named from:x }", None),
    ],
)
def test_the_graphs_a_querys_dataset_clauses_name_are_read_as_the_engine_reads_them(query, expected):
    assert sandbox.dataset(query) == expected
    taken_out = sandbox.without_dataset(query)  # (what a server is sent: it may read them past its dataset)
    assert sandbox.dataset(taken_out) is None and len(taken_out) == len(query)
    assert (taken_out == query) == (expected is None)


FACT_GRAPHS = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } FILTER (CONTAINS(STR(?g), '/fact/')) }"


def test_from_and_from_named_narrow_what_a_query_reads_to_the_graphs_it_names(small):
    small("add-entity", "repo/api", "--name", "api")
    fact = small.json("propose", "web-app", "depends_on", "--object", "api", "-s", "ledger:a")["id"]
    graph = f"https://kgrdf.org/kb/main/fact/{fact}"

    def rows(query: str, *more) -> list:
        return small.json("sparql", query, *more)["results"]["bindings"]

    def count(query: str, *more) -> int:
        return int(rows(query, *more)[0]["n"]["value"])

    everything = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    schema = count(everything)  # the default graph, without a FROM: the schema's
    assert schema > 1000
    assert count(f"SELECT (COUNT(*) AS ?n) FROM <{graph}> WHERE {{ ?s ?p ?o }}") == 1
    assert count(f"SELECT (COUNT(*) AS ?n) FROM <{graph}> FROM <{graph}/provenance> WHERE {{ ?s ?p ?o }}") > 1
    assert count(f"SELECT (COUNT(*) AS ?n) FROM NAMED <{graph}> WHERE {{ ?s ?p ?o }}") == 0  # no default graph
    assert count(f"SELECT (COUNT(*) AS ?n) FROM <{graph}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}") == 0  # no named
    named = f"SELECT ?g FROM NAMED <{graph}> FROM NAMED <urn:nowhere> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"
    assert [r["g"]["value"] for r in rows(named)] == [graph]
    # a knowledge base with another perspective: the query still reads what it names, of its own alone
    small("org", "init", "Other", "--perspective", "p2")
    other = "https://kgrdf.org/kb/p2/entities"
    both = f"SELECT DISTINCT ?g FROM NAMED <{graph}> FROM NAMED <{other}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"
    assert [r["g"]["value"] for r in rows(both)] == [graph]
    assert count(f"SELECT (COUNT(*) AS ?n) FROM <{other}> WHERE {{ ?s ?p ?o }}") == 0
    assert count(f"SELECT (COUNT(*) AS ?n) FROM <{graph}> WHERE {{ ?s ?p ?o }}") == 1
    assert count(everything) == schema
    assert len(rows(FACT_GRAPHS)) == 2  # and without one, every graph of its own, as before
