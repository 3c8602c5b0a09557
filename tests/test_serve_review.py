"""kg serve as a hostile client meets it: arguments of the wrong kind, bodies too large to hold,
methods and paths it does not serve. Each is refused in one line, with its status, and writes
nothing."""

import pytest

from .conftest import Kg
from .serving import Server, settled


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A knowledge base with one entity, a token that writes and one that reads, and kg serve on it."""
    kg = Kg(tmp_path_factory.mktemp("review") / "kb")
    kg("init")
    kg("add-entity", "repo/api", "--name", "Api")
    kg("add-entity", "actor/bot", "--name", "Helper Bot")
    secrets = {
        "writer": kg.json("tokens", "add", "writer", "--perspective", "main", "--audience", "channel:sales", "--write")[
            "secret"
        ],
        "reader": kg.json("tokens", "add", "reader", "--perspective", "main", "--audience", "public")["secret"],
    }
    server = Server(kg.path)
    yield {"kg": kg, "server": server, "secrets": secrets}
    server.stop()


def _snapshot(served) -> dict:
    settled(served["kg"].path)
    return served["kg"].snapshot()


GOOD = {"subject": "repo/api", "predicate": "caveat", "value": "mkvalue", "sources": ["slack:p1"]}


@pytest.mark.parametrize(
    "route, body, says",
    [
        ("propose", {**GOOD, "subject": ["repo/api"]}, "subject must be text, not a list"),
        ("propose", {**GOOD, "sources": "slack:p1"}, "sources must be a list, not text"),
        ("propose", {**GOOD, "sources": ["slack:p1", 7]}, "each of sources must be text, not a number (7)"),
        ("propose", {**GOOD, "prevents_rework": "no"}, "prevents_rework must be true or false, not text"),
        ("propose", {**GOOD, "extracted": True, "confidence": "high"}, "confidence must be a number, not text"),
        ("propose", {**GOOD, "order": True}, "order must be a whole number, not true or false (true)"),
        ("org_add", {"name": "Mkacme", "aliases": "mkacme.example"}, "aliases must be a list, not text"),
        ("org_add", {"name": {"x": 1}}, "name must be text, not an object"),
        ("confirm", {"fact": "f-3k9x2a", "quote": 12345678, "transcript": "/x"}, "quote must be text"),
        ("confirm", {"fact": "f-3k9x2a", "quote": "the users words", "transcript": ["/x"]}, "transcript must be"),
    ],
)
def test_a_write_argument_of_the_wrong_kind_is_refused_in_one_line_and_writes_nothing(served, route, body, says):
    """The API takes a tool's arguments as JSON: one of another kind than the tool declares is a 400
    naming it (never a 500, never a string read as a list of its letters or "no" read as true)."""
    before = _snapshot(served)
    status, doc = served["server"].post(route, served["secrets"]["writer"], body)
    assert status == 400 and doc["error"] == "bad_input", doc
    assert says in doc["message"] and "\n" not in doc["message"]
    assert _snapshot(served) == before
