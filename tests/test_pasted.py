"""Command lines a refusal prints to paste name the knowledge base the command ran on: pasted as
printed, from another folder, with another default knowledge base, they act where they were made."""

import re
import shlex

import pytest

from tests.conftest import Kg


@pytest.fixture
def elsewhere(kg, tmp_path, monkeypatch) -> Kg:
    """The default knowledge base (KGRDF_HOME), not the one the test's commands name."""
    other = Kg(tmp_path / "default")
    other("init")
    monkeypatch.setenv("KGRDF_HOME", str(other.path))
    monkeypatch.chdir(tmp_path)
    return other


def pasted(kg: Kg, text: str, before: str, after: str = ""):
    """Run the command line ``text`` shows between ``before`` and ``after``, as pasted: no --kb added."""
    line = re.search(re.escape(before) + r"(kg .+?)" + (re.escape(after) if after else "$"), text).group(1)
    words = shlex.split(line)
    assert words.count("--kb") == 1
    return kg(*words[1:], kb=False)


def test_a_token_named_twice_names_the_revoke_of_this_knowledge_base(kg, elsewhere):
    elsewhere("tokens", "add", "bot", "--perspective", "main", "--audience", "public")
    kg("tokens", "add", "bot", "--perspective", "main", "--audience", "public")
    hint = kg.json("tokens", "add", "bot", "--perspective", "main", "--audience", "public", expect=1)["hint"]
    pasted(kg, hint, "", " first")
    assert kg.json("tokens", "list")["tokens"] == []
    assert [t["name"] for t in elsewhere.json("tokens", "list")["tokens"]] == ["bot"]


def test_a_remote_named_twice_names_the_remove_of_this_knowledge_base(kg, elsewhere):
    elsewhere("remote", "add", "hub", "http://127.0.0.1:9/")
    kg("remote", "add", "hub", "http://127.0.0.1:9/")
    hint = kg.json("remote", "add", "hub", "http://127.0.0.1:9/", expect=1)["hint"]
    pasted(kg, hint, "", " first")
    assert kg.json("remote", "list")["remotes"] == []
    assert [r["name"] for r in elsewhere.json("remote", "list")["remotes"]] == ["hub"]


def test_merging_the_self_organization_away_names_the_merge_the_other_way_here(kg, elsewhere):
    for base in (kg, elsewhere):
        base("org", "init", "Acme")
        base("org", "add", "Beta")
    hint = kg.json("org", "merge", "organization/beta", "organization/acme", expect=1)["hint"]
    pasted(kg, hint, "")
    assert kg.json("lookup", "organization/beta")["entity"]["id"] == "organization/acme"
    assert elsewhere.json("lookup", "organization/beta")["entity"]["id"] == "organization/beta"


def test_a_forget_another_perspective_holds_names_the_forget_there_of_this_knowledge_base(kg, elsewhere):
    for base in (kg, elsewhere):
        base("org", "init", "Beta Org", "--perspective", "beta")
        for perspective in ("main", "beta"):
            base("add-entity", "person/ada", "--name", "Ada Quistorp", "--perspective", perspective)
    refused = kg("forget", "person/ada", expect=3).stderr
    pasted(kg, refused, "(", ")")
    assert kg.json("lookup", "person/ada", "--perspective", "beta", expect=1)["error"] == "not_found"
    assert elsewhere.json("lookup", "person/ada", "--perspective", "beta")["entity"]["id"] == "person/ada"


def test_a_fact_proposed_again_with_other_dates_names_the_correction_of_this_knowledge_base(kg, elsewhere):
    for base in (kg, elsewhere):
        base("add-entity", "repo/api", "--name", "api")
    fact = kg.json("propose", "repo/api", "caveat", "--value", "slow tests", "-s", "doc:a")["id"]
    hint = kg.json(
        "propose", "repo/api", "caveat", "--value", "slow tests", "-s", "doc:b", "--valid-from", "2020-01-01", expect=1
    )["hint"]
    pasted(kg, hint, "", " corrects it")
    assert kg.json("history", fact)["fact"]["valid_from"] == "2020-01-01T00:00:00Z"


def test_a_supersede_saying_what_the_fact_says_names_the_retime_of_this_knowledge_base(kg, elsewhere):
    for base in (kg, elsewhere):
        base("add-entity", "repo/api", "--name", "api")
    fact = kg.json("propose", "repo/api", "caveat", "--value", "slow tests", "-s", "doc:a")["id"]
    kg("confirm", fact)
    hint = kg.json("supersede", fact, "--value", "slow tests", expect=1)["hint"]
    line = re.search(r"(kg supersede .+)$", hint).group(1).replace("DATE", "2021-03-01")
    kg(*shlex.split(line)[1:], kb=False)
    assert kg.json("history", fact)["fact"]["valid_from"] == "2021-03-01T00:00:00Z"
