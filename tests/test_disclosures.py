"""Disclosures (SPEC §9b): which facts were told to which audience in which message, recorded by
kg disclose, kg context --record and the MCP tool record_disclosure; read back by kg disclosures and
kg told; refused for an audience that may not hear the fact; private when they name a person, and
gone after kg forget."""

import json

import pytest

from .conftest import Kg, one_line
from .patchlog import patch_bytes, patch_files
from .serving import Server
from .test_forget import _files_naming, _unpack_git

NOW = "2026-03-02T09:00:00Z"
QUIXA = ["person/quixa", "Quixa Vell", "Quixa"]  # a person no other text of the tests names


@pytest.fixture
def told(kg, monkeypatch) -> dict:
    """Facts heard in public, in channel:sales, in channel:eng and in a DM (of people the tests never
    forget), all confirmed; Quixa, a person, reviews the api."""
    monkeypatch.setenv("KGRDF_NOW", NOW)
    kg("add-entity", "repo/api", "--name", "api")
    kg("add-entity", "person/quixa", "--name", "Quixa Vell", "--alias", "Quixa")
    kg("add-entity", "actor/bo", "--name", "Bo Chen", "--alias", "Bo")
    trusted = ["-s", "ledger:a", "-s", "report:b"]
    facts = {}
    for key, value, heard in [
        ("public", "slow integration tests", "public"),
        ("public2", "no deploys on fridays", "public"),
        ("sales", "discount for pilots", "channel:sales"),
        ("eng", "rewrite planned", "channel:eng"),
        ("dm", "flaky on mondays", "dm:bo,cy"),
    ]:
        facts[key] = kg.json("propose", "repo/api", "caveat", "--value", value, *trusted, "--audience", heard)["id"]
    facts["person"] = kg.json(
        "propose", "Quixa", "reviews", "--object", "api", "-s", "slack:p1", "--audience", "public"
    )["id"]
    kg("confirm", facts["person"])
    return facts


def _patches_holding(kg: Kg, text: str) -> list[str]:
    """The journal each patch file holding ``text`` belongs to: local, or the replica's."""
    return sorted(
        path.relative_to(kg.path / "journal").parts[0]
        for path in patch_files(kg.path / "journal")
        if text.encode() in patch_bytes(path)
    )


def test_kg_disclosures_lists_what_a_recorded_pack_disclosed_and_kg_told_what_the_audience_heard(kg, told):
    pack = kg.json("context", "--for", "api", "--audience", "channel:sales", "--record", "slack:r1")
    shown = sorted(fact["id"] for fact in pack["facts"])
    assert shown == sorted([told["public"], told["public2"], told["sales"], told["person"]])  # what sales may hear
    assert sorted(f["id"] for f in pack["recorded"]["facts"]) == shown
    for fact in shown:
        assert kg.json("disclosures", fact)["disclosures"] == [
            {"audience": "channel:sales", "message": "slack:r1", "at": NOW, "by": "owner"}
        ]
    assert kg.json("disclosures", told["eng"])["disclosures"] == []  # not in the pack, not told
    doc = kg.json("told", "channel:sales")
    assert sorted(d["fact"] for d in doc["disclosures"]) == shown
    assert {(d["message"], d["by"], d["at"]) for d in doc["disclosures"]} == {("slack:r1", "owner", NOW)}
    assert all(d["sentence"].startswith(("api", "Quixa")) for d in doc["disclosures"])
    assert kg.json("told", "channel:sales", "--since", "2026-03-03")["disclosures"] == []
    assert kg.json("told", "channel:eng")["disclosures"] == []
    text = kg("disclosures", told["sales"]).stdout
    assert f"{NOW}  channel:sales  in slack:r1  by owner" in text


def test_kg_disclose_records_each_fact_with_the_message_audience_time_and_teller(kg, told, monkeypatch):
    doc = kg.json("disclose", told["public"], told["sales"], "--message", "slack:r2", "--audience", "channel:sales")
    assert [f["id"] for f in doc["facts"]] == [told["public"], told["sales"]]
    assert (doc["audience"], doc["message"], doc["by"], doc["at"]) == ("channel:sales", "slack:r2", "owner", NOW)
    monkeypatch.setenv("KGRDF_NOW", "2026-03-05T10:00:00Z")
    kg("disclose", told["public"], "--message", "https://chat.example/r3", "--audience", "PUBLIC", "--by", "sales-bot")
    assert [(d["audience"], d["message"], d["by"]) for d in kg.json("disclosures", told["public"])["disclosures"]] == [
        ("channel:sales", "slack:r2", "owner"),
        ("public", "https://chat.example/r3", "sales-bot"),
    ]
    assert [d["fact"] for d in kg.json("told", "public", "--since", "2026-03-04")["disclosures"]] == [told["public"]]
    assert kg.json("told", "public", "--since", "2026-03-06")["disclosures"] == []
    # a read for an audience is shown the disclosures told to an audience it may hear, as hearings are
    assert [d["audience"] for d in kg.json("disclosures", told["public"], "--audience", "public")["disclosures"]] == [
        "public"
    ]
    assert "not_found" in kg("disclosures", told["sales"], "--audience", "public", "--json", expect=1).stdout
    assert kg("validate").stdout.startswith("clean")


def test_a_disclosure_to_an_audience_that_may_not_hear_the_fact_is_refused_and_nothing_is_written(kg, told):
    before = kg.snapshot()
    result = kg(
        "disclose", told["public"], told["eng"], "--message", "slack:r4", "--audience", "channel:sales", expect=1
    )
    line = one_line(result)
    assert told["eng"] in line and "channel:sales" in line and "may not be told" in line
    assert line.endswith("(it was heard in channel:eng)")  # (kg history showed no audience of an owner's fact)
    doc = kg.json("disclose", told["dm"], "--message", "slack:r4", "--audience", "dm:bo,cy,zed", expect=1)
    assert doc["error"] == "refused" and told["dm"] in doc["message"]  # more people than heard it
    assert kg.snapshot() == before
    assert kg.json("disclosures", told["public"])["disclosures"] == []  # all of the record or none
    # a DM of fewer of the same people may hear what the conversation heard; the owner hears all
    kg("disclose", told["dm"], "--message", "slack:r5", "--audience", "dm:cy")
    kg("disclose", told["eng"], "--message", "slack:r6", "--audience", "owner")


@pytest.mark.parametrize(
    "args, code, says",
    [
        (["f-zzzzzz", "--message", "slack:r", "--audience", "public"], 1, "no fact f-zzzzzz"),
        (["not-a-fact", "--message", "slack:r", "--audience", "public"], 2, "is not a fact id"),
        (["{public}", "--message", "slack:r", "--audience", "everyone"], 2, "'everyone' is not an audience"),
        (["{public}", "--message", "  ", "--audience", "public"], 2, "the message is empty"),
        (["{public}", "--message", "slack:r", "--audience", "public", "--by", ""], 2, "is empty"),
        (["{public}", "--audience", "public"], 2, "--message"),
    ],
)
def test_a_bad_disclosure_says_why_in_one_line_and_writes_nothing(kg, told, args, code, says):
    before = kg.snapshot()
    args = [a.format(**told) if a.startswith("{") else a for a in args]
    assert says in one_line(kg("disclose", *args, expect=code))
    assert kg.snapshot() == before


def test_kg_context_record_with_a_malformed_audience_writes_nothing(kg, told):
    before = kg.snapshot()
    assert "not an audience" in kg("context", "--for", "api", "--audience", "bogus:", "--record", "r", expect=2).stderr
    assert kg.snapshot() == before


def test_a_disclosure_naming_a_person_goes_to_the_private_journal_the_rest_to_the_shared_one(kg, told):
    kg("disclose", told["public"], "--message", "slack:mkshared", "--audience", "channel:sales")
    kg("disclose", told["public"], "--message", "slack:mkdm", "--audience", "dm:bo,quixa")
    kg("disclose", told["public"], "--message", "asked by Quixa in slack:mkmention", "--audience", "public")
    kg("disclose", told["person"], "--message", "slack:mkpersonfact", "--audience", "channel:sales")
    replica = json.loads((kg.path / "replica.json").read_text())["replica"]
    assert _patches_holding(kg, "slack:mkshared") == [replica]
    assert _patches_holding(kg, "slack:mkdm") == ["local"]  # told in a private conversation
    assert _patches_holding(kg, "slack:mkmention") == ["local"]  # the message names a person
    assert _patches_holding(kg, "slack:mkpersonfact") == ["local"]  # the fact names a person
    assert kg("validate").stdout.startswith("clean")


def test_a_new_journal_started_from_the_index_keeps_a_disclosure_to_a_dm_private(kg, told):
    """The way out of a damaged journal starts a new one from the index, split by fact: a fact told
    in a private conversation goes to the private journal with its disclosure."""
    kg("disclose", told["public"], "--message", "slack:mkdm", "--audience", "dm:bo,quixa")
    kg("disclose", told["public2"], "--message", "slack:mksales", "--audience", "channel:sales")
    (kg.path / "journal").rename(kg.path / "journal.aside")
    kg("propose", "repo/api", "caveat", "--value", "after the move", "-s", "pr:9")
    replica = json.loads((kg.path / "replica.json").read_text())["replica"]
    assert _patches_holding(kg, "slack:mkdm") == ["local"]
    assert _patches_holding(kg, "slack:mksales") == [replica]
    assert [d["message"] for d in kg.json("disclosures", told["public"])["disclosures"]] == ["slack:mkdm"]


def test_a_new_journal_started_from_the_index_puts_each_fact_where_its_writes_put_it(kg, told):
    """A fact heard in a private conversation (dm: heard, not told) and one a person said went to
    the shared journal of a new journal, and the next sync took them to the hub: the split of a new
    journal is the one every write makes, fact by fact."""
    kg("propose", "repo/api", "caveat", "--value", "mkheardindm", "-s", "slack:d1", "--audience", "dm:bo,cy")
    kg("propose", "repo/api", "caveat", "--value", "mksaidbybo", "-s", "slack:d2", "--said-by", "Bo")
    kg("propose", "repo/api", "caveat", "--value", "mkinchannel", "-s", "slack:d3", "--audience", "channel:eng")
    kg(
        "propose",
        "repo/api",
        "caveat",
        "--value",
        "mkquixaslaptop",
        "-s",
        "slack:d4",
        "--extracted",
        "--span",
        "Quixa's laptop",
    )
    markers = ["mkheardindm", "mksaidbybo", "mkinchannel", "mkquixaslaptop", "flaky on mondays", "rewrite planned"]
    before = {marker: _patches_holding(kg, marker) for marker in markers}
    replica = json.loads((kg.path / "replica.json").read_text())["replica"]
    assert before == {**dict.fromkeys(markers, ["local"]), "mkinchannel": [replica], "rewrite planned": [replica]}
    (kg.path / "journal").rename(kg.path / "journal.aside")
    kg("propose", "repo/api", "caveat", "--value", "after the move", "-s", "pr:9")
    replica = json.loads((kg.path / "replica.json").read_text())["replica"]
    after = {marker: _patches_holding(kg, marker) for marker in markers}
    assert after == {**dict.fromkeys(markers, ["local"]), "mkinchannel": [replica], "rewrite planned": [replica]}


def test_after_kg_forget_no_disclosure_names_the_person_and_the_facts_they_did_not_name_stay(kg, told):
    kg("disclose", told["public"], told["public2"], "--message", "slack:mkdm", "--audience", "dm:bo,quixa")
    kg("disclose", told["public"], "--message", "asked by Quixa Vell", "--audience", "public")
    kg("disclose", told["public"], told["person"], "--message", "slack:mkkept", "--audience", "channel:sales")
    assert _files_naming(kg.path, QUIXA)  # the control: the scan finds them before
    result = kg.json("forget", "person/quixa")
    assert result["remaining"] == []
    _unpack_git(kg.path)
    assert _files_naming(kg.path, QUIXA) == []
    # the facts that did not name Quixa stay, with the disclosures that did not name them either
    assert [(d["audience"], d["message"]) for d in kg.json("disclosures", told["public"])["disclosures"]] == [
        ("channel:sales", "slack:mkkept")
    ]
    assert kg.json("disclosures", told["public2"])["disclosures"] == []
    assert "not_found" in kg("disclosures", told["person"], "--json", expect=1).stdout  # their fact went whole
    assert [d["fact"] for d in kg.json("told", "channel:sales")["disclosures"]] == [told["public"]]
    assert kg("validate").stdout.startswith("clean")


def test_a_read_for_an_audience_sees_no_disclosure_to_another(kg, told):
    kg("disclose", told["public"], "--message", "slack:mkdmmsg", "--audience", "dm:bo,quixa")
    kg("disclose", told["public"], "--message", "slack:mksalesmsg", "--audience", "channel:sales")
    query = "SELECT ?m WHERE { GRAPH ?g { ?d <https://kgrdf.org/ns#toldIn> ?m } }"
    assert "mkdmmsg" in kg("sparql", query).stdout  # the owner's read
    sales = kg("sparql", query, "--audience", "channel:sales").stdout
    assert "mksalesmsg" in sales and "mkdmmsg" not in sales
    exported = kg("export", "--format", "nquads", "--audience", "channel:sales").stdout
    assert "mksalesmsg" in exported and "mkdmmsg" not in exported
    assert kg.json("told", "dm:bo,quixa")["disclosures"]  # the owner's
    assert [d["audience"] for d in kg.json("history", told["public"])["fact"]["hearings"]] == ["public"]


# --- through the server: the MCP tool and the JSON API ------------------------------------------------


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """kg serve on a knowledge base with a public and an engineering fact, and four tokens."""
    kg = Kg(tmp_path_factory.mktemp("disclose") / "kb")
    kg("init")
    kg("add-entity", "repo/api", "--name", "Api")
    facts = {}
    for key, value, heard in [("public", "mkpublicvalue", "public"), ("eng", "mkengvalue", "channel:eng")]:
        facts[key] = kg.json(
            "propose", "repo/api", "caveat", "--value", value, "-s", "ledger:a", "-s", "report:b", "--audience", heard
        )["id"]
    secrets = {}
    for name, heard, write in [
        ("salesbot", "channel:sales", True),
        ("reader", "channel:sales", False),
        ("boss", "owner", True),
        ("engbot", "channel:eng", True),
    ]:
        made = kg.json(
            "tokens", "add", name, "--perspective", "main", "--audience", heard, *(["--write"] if write else [])
        )
        secrets[name] = made["secret"]
    server = Server(kg.path)
    yield {"kg": kg, "url": server.url, "secrets": secrets, "server": server, "facts": facts}
    server.stop()


def _calls(serving, token: str, calls: list[tuple[str, dict]]) -> list[tuple[bool, str]]:
    from .test_serve import _mcp, _text

    async def run(client):
        out = []
        for name, args in calls:
            result = await client.call_tool(name, args)
            out.append((result.is_error, _text(result)))
        return out

    return _mcp(serving, token, run)


def test_record_disclosure_over_mcp_records_the_tokens_name_and_refuses_what_it_may_not_tell(serving):
    kg, facts = serving["kg"], serving["facts"]
    before = kg.snapshot()
    refused = _calls(
        serving,
        "salesbot",
        [
            ("record_disclosure", {"message": "slack:m0", "audience": "channel:sales", "facts": [facts["eng"]]}),
            ("record_disclosure", {"message": "slack:m0", "audience": "public", "facts": [facts["public"]]}),
            ("record_disclosure", {"message": "slack:m0", "audience": "channel:sales", "facts": []}),
            ("record_disclosure", {"message": "slack:m0", "audience": "channel:sales", "facts": ["f-zzzzzz"]}),
        ],
    )
    assert [failed for failed, _ in refused] == [True, True, True, True]
    # a fact the token's audience may not hear reads as one that is not there: the refusal tells nothing
    assert refused[0][1].replace(facts["eng"], "ID") == refused[3][1].replace("f-zzzzzz", "ID")
    assert f"no fact {facts['eng']} (" in refused[0][1] and "records what it told channel:sales" in refused[1][1]
    owner = _calls(
        serving,
        "boss",
        [("record_disclosure", {"message": "slack:m0", "audience": "channel:sales", "facts": [facts["eng"]]})],
    )
    assert owner[0][0] and "may not be told to channel:sales" in owner[0][1]  # the owner knows it is there
    reading = _calls(
        serving,
        "reader",
        [("record_disclosure", {"message": "slack:m0", "audience": "channel:sales", "facts": [facts["public"]]})],
    )
    assert reading[0][0] and "reads only" in reading[0][1]
    assert kg.snapshot() == before
    done = _calls(
        serving,
        "salesbot",
        [
            ("record_disclosure", {"message": "slack:m1", "audience": "channel:sales", "facts": [facts["public"]]}),
            ("disclosures", {"fact": facts["public"]}),
            ("told", {"audience": "channel:sales"}),
        ],
    )
    assert [failed for failed, _ in done] == [False, False, False]
    recorded, listed, heard = (json.loads(text) for _, text in done)
    assert (recorded["by"], recorded["audience"], [f["id"] for f in recorded["facts"]]) == (
        "salesbot",
        "channel:sales",
        [facts["public"]],
    )
    assert [(d["audience"], d["message"], d["by"]) for d in listed["disclosures"]] == [
        ("channel:sales", "slack:m1", "salesbot")
    ]
    assert [d["fact"] for d in heard["disclosures"]] == [facts["public"]] and heard["total"]["disclosures"] == 1
    assert kg.json("disclosures", facts["public"])["disclosures"][0]["by"] == "salesbot"


def test_the_owners_token_records_any_audience_and_the_api_takes_it_as_json(serving):
    kg, facts = serving["kg"], serving["facts"]
    body = {"message": "slack:m2", "audience": "channel:eng", "facts": [facts["eng"]]}
    status, doc = serving["server"].post("record_disclosure", serving["secrets"]["boss"], body)
    assert status == 200 and doc["by"] == "boss" and doc["audience"] == "channel:eng"
    status, doc = serving["server"].post("record_disclosure", serving["secrets"]["engbot"], {**body, "facts": "f-x"})
    assert status == 400 and doc["message"] == "facts must be a list, not text"  # the kind the tool declares
    status, text = serving["server"].request("/api/told?audience=channel:eng", serving["secrets"]["engbot"])
    assert status == 200 and [d["fact"] for d in json.loads(text)["disclosures"]] == [facts["eng"]]
    # what channel:eng was told is not for a sales token to read
    status, text = serving["server"].request("/api/told?audience=channel:eng", serving["secrets"]["reader"])
    assert status == 200 and json.loads(text)["disclosures"] == []
    status, text = serving["server"].request(f"/api/disclosures?fact={facts['eng']}", serving["secrets"]["reader"])
    assert status == 404
    assert [d["message"] for d in kg.json("told", "channel:eng")["disclosures"]] == ["slack:m2"]


def test_two_records_of_one_fact_in_one_write_are_two_disclosures(kg, told):
    from kgrdf import disclosure
    from kgrdf.kb import KnowledgeBase

    with KnowledgeBase.open(kg.path).writing("disclose") as writer:
        disclosure.record(writer, "slack:one", "public", [told["public"]])
        disclosure.record(writer, "slack:two", "channel:sales", [told["public"], told["public"]])
    assert [d["message"] for d in kg.json("disclosures", told["public"])["disclosures"]] == ["slack:one", "slack:two"]
    assert kg("validate").stdout.startswith("clean")


def test_one_message_telling_an_audience_a_fact_is_one_disclosure_however_often_it_is_recorded(kg, told):
    """kg disclose or kg context --record run again for the same reply piled up copies in kg told."""
    kg("context", "--for", "api", "--audience", "channel:sales", "--record", "slack:r1")
    before = kg.snapshot()
    again = kg.json("context", "--for", "api", "--audience", "channel:sales", "--record", "slack:r1")
    assert again["recorded"]["facts"] and all(f["recorded_before"] for f in again["recorded"]["facts"])
    repeated = kg("disclose", told["sales"], "--message", "slack:r1", "--audience", "channel:sales")
    assert "recorded before" in repeated.stdout
    assert kg.snapshot() == before  # nothing written
    told_sales = [(d["fact"], d["message"]) for d in kg.json("told", "channel:sales")["disclosures"]]
    assert len(told_sales) == len(set(told_sales)) == len(again["recorded"]["facts"])
    # Another message, or another audience, is another disclosure.
    kg("disclose", told["sales"], "--message", "slack:r2", "--audience", "channel:sales")
    kg("disclose", told["public"], "--message", "slack:r1", "--audience", "public")
    assert [d["message"] for d in kg.json("disclosures", told["sales"])["disclosures"]] == ["slack:r1", "slack:r2"]
    assert [d["audience"] for d in kg.json("disclosures", told["public"])["disclosures"]] == ["channel:sales", "public"]


def test_a_forget_held_back_by_a_disclosure_in_the_shared_journal_names_the_disclosure(kg, monkeypatch):
    """The refusal said the shared journal held "1 fact (f-...)" naming the person: the fact said
    nothing of them, its disclosure's message did, and kg reject of the fact, the way out for a fact,
    changed nothing."""
    monkeypatch.setenv("KGRDF_NOW", NOW)
    kg("add-entity", "repo/api", "--name", "api")
    fact = kg.json("propose", "api", "caveat", "--value", "slow tests", "-s", "ledger:a", "--audience", "public")["id"]
    kg("disclose", fact, "--message", "slack:thread-with-Quixa-Vell", "--audience", "public")
    kg("add-entity", *QUIXA[:1], "--name", QUIXA[1])  # known as a person only after the disclosure
    before = kg.snapshot()
    line = one_line(kg("forget", "person/quixa", expect=1))
    assert f"holds 6 records of it: disclosures of {fact} (kg disclosures shows them" in line
    assert "1 fact" not in line and kg.snapshot() == before
