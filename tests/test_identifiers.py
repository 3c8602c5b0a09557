"""Identifiers (§8): kept apart in identifiers.jsonl (0600), shown only by kg identifiers list."""

import json
import stat
import subprocess

import pytest

SECRET = "U024BE7LH"


@pytest.fixture
def known(demo):
    demo("identifiers", "add", "Sam", "chat", SECRET)
    demo("identifiers", "add", "person/sam", "code-host", "sam-reyes-gh")
    return demo


def test_identifiers_are_listed_and_kept_owner_only(known):
    listed = known.json("identifiers", "list", "sam")["identifiers"]
    assert [(e["entity"], e["kind"], e["value"]) for e in listed] == [
        ("person/sam", "chat", SECRET),
        ("person/sam", "code-host", "sam-reyes-gh"),
    ]
    path = known.path / "identifiers.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    tracked = subprocess.run(["git", "ls-files"], cwd=known.path, capture_output=True, text=True).stdout
    assert "identifiers.jsonl" not in tracked


def test_adding_one_twice_is_harmless_and_one_value_names_one_person(known):
    before = (known.path / "identifiers.jsonl").read_text()
    assert known.json("identifiers", "add", "Sam", "chat", SECRET)["outcome"] == "unchanged"
    result = known("identifiers", "add", "Dana", "chat", SECRET, expect=1)
    assert "belongs to person/sam already" in result.stderr
    assert (known.path / "identifiers.jsonl").read_text() == before


@pytest.mark.parametrize(
    "args,code,message",
    [
        (["web-app", "chat", "X1"], 1, "identifiers are kept for people and actors only"),
        (["fernhill", "chat", "X1"], 1, "organization/fernhill is an organization: identifiers are kept"),
        (["Sam", "email", "sam@example.com"], 2, "unknown identifier kind 'email'"),
        (["Sam", "chat", "  "], 2, "the identifier's value is empty"),
        (["nobody", "chat", "X2"], 1, "'nobody' is not known"),
    ],
    ids=["not-a-person", "an-organization", "unknown-kind", "empty", "unknown-entity"],
)
def test_bad_identifiers_are_refused_and_nothing_is_written(known, args, code, message):
    before = (known.path / "identifiers.jsonl").read_text()
    assert message in known("identifiers", "add", *args, expect=code).stderr
    assert (known.path / "identifiers.jsonl").read_text() == before


@pytest.mark.parametrize(
    "value, matched",
    [("DANA", "alias"), ("person/dana", "id"), ("  dana   okafor ", "name"), ("Sam Reyes", "name")],
)
def test_an_identifier_that_is_another_persons_name_or_id_is_refused_and_forget_finds_nothing_left(
    known, value, matched
):
    before = (known.path / "identifiers.jsonl").read_text()
    owner, other = ("Dana", "person/sam") if value == "Sam Reyes" else ("Sam", "person/dana")
    line = known("identifiers", "add", owner, "chat", value, expect=1).stderr
    assert f"is the {matched} of {other} (" in line and "a person's identifiers are theirs alone" in line
    assert (known.path / "identifiers.jsonl").read_text() == before
    if other == "person/dana":  # what the identifier would have broken: a forget that cannot finish
        known("forget", "person/dana")
        left = (known.path / "identifiers.jsonl").read_text()
        assert "dana" not in left.lower() and SECRET in left


@pytest.mark.parametrize(
    "value, matched",
    [
        ("hotfix", "alias"),
        ("HOTFIXES", "alias"),
        ("process/hotfix", "id"),
        ("web-app", "name"),
        ("ｗｅｂ-ａｐｐ", "name"),
    ],
)
def test_an_identifier_that_is_another_entitys_name_or_id_is_refused_and_its_facts_stay_shared(known, value, matched):
    """A chat identifier "hotfix" of Sam was taken: every later fact naming the hotfix process was
    then taken for one naming Sam (kept in the private journal alone, never confirmed on its
    sources), and forgetting Sam was refused over the shared journal holding the process's names."""
    before = (known.path / "identifiers.jsonl").read_text()
    line = known("identifiers", "add", "Sam", "chat", value, expect=1).stderr
    assert f"is the {matched} of " in line and "would be taken for one naming person/sam" in line
    assert (known.path / "identifiers.jsonl").read_text() == before
    said = known.json("propose", "process/hotfix", "caveat", "--value", f"the {value} steps skip review", "-s", "doc:x")
    assert "naming a person" not in (said.get("note") or "")
    known("forget", "person/sam")


@pytest.mark.parametrize(
    "command",
    [
        ["add-entity", "repo/atlas", "--name", "Atlas"],
        ["add-entity", "repo/big", "--name", "Big service", "--alias", "ATLAS"],
        ["add-entity", "repo/web-app", "--name", "web-app", "--alias", "atlas"],
        ["org", "add", "Atlas"],
        ["add-entity", "repo/atlas", "--name", "ＡＴＬＡＳ"],
    ],
    ids=["name", "alias", "alias-added", "organization", "fullwidth"],
)
def test_an_entity_named_as_a_persons_identifier_is_refused_and_a_weak_alias_is_not(known, command):
    """The other side of the rule above: Sam's chat identifier "atlas" was there first, and a repo
    named Atlas was added after it; every fact naming the repo was then taken for one naming Sam."""
    known("identifiers", "add", "Sam", "code-host", "atlas")
    before = known.snapshot()
    line = known(*command, expect=1).stderr
    assert "is the code-host identifier of person/sam" in line
    assert known.snapshot() == before
    known("add-entity", "repo/big", "--name", "Big service", "--weak-alias", "atlas")


@pytest.mark.parametrize(
    "owner, value, other",
    [
        ("Sam", "ＤＡＮＡ", "person/dana"),  # her alias, in fullwidth letters
        ("Dana", "SAM-REYES-GH", "person/sam"),  # his identifier, in capitals
        ("Dana", "ｓａｍ-ｒｅｙｅｓ-ｇｈ", "person/sam"),
        ("Sam", "dana.okafor", "person/dana"),  # her name, word for word, inside it
    ],
)
def test_an_identifier_that_names_another_person_as_forget_reads_names_is_refused(known, owner, value, other):
    """kg forget reads names in any case and Unicode form: an identifier another person's name or
    identifier is in, so read, was taken as this person's, and forgetting the other then exited 3
    on identifiers.jsonl, which kgrdf had written."""
    before = (known.path / "identifiers.jsonl").read_text()
    line = known("identifiers", "add", owner, "chat", value, expect=1).stderr
    assert f"names {other} as kg forget reads names" in line and "theirs alone" in line
    assert (known.path / "identifiers.jsonl").read_text() == before
    assert known.json("identifiers", "add", owner, "tracker", f"{owner.lower()}-tracker")["outcome"] == "added"
    known("forget", other)
    assert value.lower() not in (known.path / "identifiers.jsonl").read_text().lower()


@pytest.mark.parametrize(
    "args, how",
    [
        (["person/mark", "--name", "Mark Twain", "--alias", "Mark"], "alias 'Mark'"),
        (["person/mark", "--name", "MARK"], "name 'MARK'"),
        (["person/mark", "--name", "Mark Twain", "--weak-alias", "ｍａｒｋ"], "weak alias 'ｍａｒｋ'"),
        (["person/bo", "--name", "Bo Ek", "--alias", "Mark"], None),  # his own identifier names him: his to hold
    ],
)
def test_a_name_another_persons_identifier_holds_is_refused_and_nothing_is_written(known, args, how):
    """An identifier added before another person took a name it holds (the login mark-ek, then a
    person named Mark): forgetting Mark would take that login, which is Bo's alone. The name is
    refused, as kg identifiers add refuses an identifier naming another person."""
    known("add-entity", "person/bo", "--name", "Bo Ek")
    known("identifiers", "add", "person/bo", "tracker", "mark-ek")
    journal = sorted((p.name, p.read_bytes()) for p in (known.path / "journal").rglob("*") if p.is_file())
    if how is None:
        assert known.json("add-entity", *args)["outcome"] == "updated"
        return
    line = known("add-entity", *args, expect=1).stderr
    assert f"the {how} of person/mark is in the tracker identifier 'mark-ek' of person/bo" in line
    assert sorted((p.name, p.read_bytes()) for p in (known.path / "journal").rglob("*") if p.is_file()) == journal
    assert known.json("identify", "Mark Twain", expect=1)["matches"] == []
    record = {"type": "entity", "id": "person/mark", "name": args[2], "aliases": args[4:5] if "--alias" in args else []}
    records = known.path.parent / "people.jsonl"
    records.write_text(json.dumps(record) + "\n")
    report = known.json("import", str(records), "--apply")
    assert report["refused_total"] == (1 if "--weak-alias" not in args else 0)
    if report["refused_total"]:  # refused alone, and nothing of it written (it was staged before the check)
        assert known.json("identify", record["name"], expect=1)["matches"] == []
        known("lookup", "person/mark", expect=1)


def test_a_new_persons_id_another_persons_identifier_holds_is_refused(known):
    known("add-entity", "person/bo", "--name", "Bo Ek")
    known("identifiers", "add", "person/bo", "tracker", "person/lu")
    line = known("add-entity", "person/lu", "--name", "Lu Wen", expect=1).stderr
    assert "the id 'person/lu' of person/lu is in the tracker identifier 'person/lu' of person/bo" in line
    known("lookup", "person/lu", expect=1)


def test_another_persons_identifier_a_name_held_from_before_names_goes_with_the_forget(known):
    """An identifiers file written before names were checked against it (Bo's login mark-ek beside
    Mark's alias Mark): kg forget takes that one entry, as it takes every identifier naming the
    person, and leaves Bo's others."""
    known("add-entity", "person/bo", "--name", "Bo Ek")
    known("identifiers", "add", "person/bo", "chat", "UBOEK01")
    known("add-entity", "person/mark", "--name", "Mark Twain", "--alias", "Mark")
    path = known.path / "identifiers.jsonl"
    entry = json.loads(path.read_text().splitlines()[-1]) | {"kind": "tracker", "value": "mark-ek"}
    path.write_text(path.read_text() + json.dumps(entry) + "\n")
    assert known.json("forget", "person/mark", "--dry-run")["identifiers"] == 1
    assert known.json("forget", "person/mark")["remaining"] == []
    left = [(e["entity"], e["value"]) for e in known.json("identifiers", "list")["identifiers"]]
    assert ("person/bo", "UBOEK01") in left and ("person/bo", "mark-ek") not in left
    assert ("person/sam", SECRET) in left


@pytest.mark.parametrize(
    "command",
    [
        ["export", "--format", "trig"],
        ["export", "--format", "nquads"],
        ["export", "--format", "jsonld"],
        ["export", "--format", "turtle"],
        ["search", "sam"],
        ["lookup", "sam"],
        ["facts", "sam", "--all"],
        ["context", "--for", "Sam"],
        ["context", "--for", "web-app"],
        ["neighbors", "sam", "--hops", "2"],
        ["sparql", "SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"],
        ["stats"],
        ["lint"],
    ],
)
def test_no_read_but_the_list_ever_shows_an_identifier(known, command):
    result = _run(known, command)
    assert SECRET not in result and "sam-reyes-gh" not in result


def test_an_identifier_typed_into_a_fact_never_reaches_a_context_pack(known):
    """A pack holds no identifier (§7): one a person typed into a fact's value, or a source's ref,
    is masked there as a whole token, in the Markdown and the JSON alike."""
    typed = known.json("propose", "web-app", "caveat", "--value", f"page {SECRET} on failures", "-s", "ledger:a")
    known("confirm", typed["id"])
    cited = known.json("propose", "web-app", "caveat", "--value", "deploys wait for a review", "-s", f"ledger:{SECRET}")
    known("confirm", cited["id"])
    for command in (["context", "--for", "web-app"], ["context", "--for", "web-app", "--json"]):
        shown = _run(known, command)
        assert SECRET not in shown and SECRET.lower() not in shown.lower(), shown
        assert "page [an identifier] on failures" in shown
    pack = known.json("context", "--for", "web-app")
    assert next(f for f in pack["facts"] if f["id"] == cited["id"])["source"].startswith("ledger:[an identifier]")
    assert SECRET in known.json("history", typed["id"])["fact"]["value"]  # the fact itself is as it was said


def test_an_identifier_in_another_form_or_in_a_name_never_reaches_a_context_pack(known):
    """The pack masked an identifier as typed alone: in full-width letters, another case with a
    soft hyphen inside, or in an entity's name (the pack's title and headings), it was shown, though
    the matcher of people reads each as the person's."""
    import unicodedata

    wide = unicodedata.normalize("NFKC", SECRET).translate({c: c + 0xFEE0 for c in range(0x21, 0x7F)})
    for value in (f"ask {wide}", f"ask {SECRET[:3].lower()}\u00ad{SECRET[3:].lower()}"):
        fact = known.json("propose", "web-app", "caveat", "--value", value, "-s", "ledger:a", "-s", "report:b")
        known("confirm", fact["id"])
    known("add-entity", "repo/dots", "--name", f"{SECRET.lower()} dotfiles")
    known("confirm", known.json("propose", "repo/dots", "depends_on", "--object", "web-app", "-s", "ledger:d")["id"])
    for command in (["context", "--for", "web-app", "--json"], ["context", "--for", "repo/dots"]):
        shown = _run(known, command)
        assert "[an identifier]" in shown and wide not in shown, shown
        assert not {v for v in ("u024be7lh", "u02\u00ad4be7lh") if v in unicodedata.normalize("NFKC", shown).lower()}
    assert "# Context: [an identifier] dotfiles" in _run(known, ["context", "--for", "repo/dots"])
    known("add-entity", "repo/dots2", "--name", f"{SECRET.lower()} dotfiles")  # a name two share: left out
    pack = known.json("context", "--message", f"are the {SECRET} dotfiles broken?")
    assert pack["ambiguous"] == ["[an identifier] dotfiles"], pack


def _run(kg, command):
    from typer.testing import CliRunner

    from kgrdf.cli import app

    out = CliRunner().invoke(app, [*command, "--kb", str(kg.path)])
    assert out.exit_code in (0, 1), out.stdout + out.stderr  # lint exits 1 with findings
    return out.stdout + out.stderr


@pytest.mark.parametrize(
    "line, said",
    [
        ("{not json", "identifiers.jsonl:3 does not parse"),
        ("null", "identifiers.jsonl:3 is not a JSON object"),
        ('{"entity": "person/sam"}', "identifiers.jsonl:3 has no text 'kind'"),
        ('{"entity": 5, "kind": "chat", "value": "x"}', "identifiers.jsonl:3 has no text 'entity'"),
        (
            '{"entity": "person/sam", "kind": "chat", "value": "x", "perspective": 7}',
            "identifiers.jsonl:3 has no text 'perspective'",
        ),
    ],
)
def test_a_damaged_identifiers_file_is_reported_with_its_line(known, line, said):
    """A line that parses but is no identifier was a 'bug in kgrdf' (TypeError, KeyError), or was
    listed as it was (an entity 5): it is damage, named by its line."""
    path = known.path / "identifiers.jsonl"
    path.write_text(path.read_text() + line + "\n")
    before = path.read_bytes()
    for command in (
        ["identifiers", "list"],
        ["identifiers", "add", "Sam", "chat", "U0OTHER"],
        ["forget", "person/sam"],
    ):
        result = known(*command, expect=3)
        assert said in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert path.read_bytes() == before
    json.loads(path.read_text().splitlines()[0])  # the good lines are still there


def test_an_identifier_as_a_segment_of_a_path_names_its_person(known):
    """A chat id at the end of a URL, a login in a code host's address, a path's segment in a source's
    ref: each names Sam, as the id standing alone does (joined to more letters by a dot or a hyphen,
    it is another token). They went to the shared journal, were confirmed automatically as naming
    no one, reached the pack, and were left by kg forget, which exited 0."""
    from .test_forget import _decoded, _files_naming

    values = [f"https://chat.example/team/{SECRET}", "github.example/sam-reyes-gh/dotfiles", f"{SECRET}/profile"]
    made = [
        known.json("propose", "web-app", "caveat", "--value", value, "-s", "ledger:a", "-s", "report:b")
        for value in values
    ]
    made.append(
        known.json(
            "propose", "web-app", "caveat", "--value", "pages on call", "-s", f"ledger:crm/{SECRET}", "-s", "report:b"
        )
    )
    for fact in made:
        assert fact["status"] == "proposed" and fact["sensitivity"] == "personal", fact
    shared = _decoded(known.path, "shared")
    assert SECRET not in shared and "sam-reyes-gh" not in shared
    for fact in made:
        known("confirm", fact["id"])
    pack = _run(known, ["context", "--for", "web-app"])
    assert SECRET not in pack and "github.example/[an identifier]/dotfiles" in pack
    known("forget", "person/sam")
    assert _files_naming(known.path, [SECRET, "sam-reyes-gh", "person/sam", "Sam Reyes"]) == []
    assert not {f["id"] for f in known.json("facts", "web-app", "--all")["facts"]} & {m["id"] for m in made}


def test_identifiers_are_each_perspectives_own_listed_matched_and_forgotten_there_alone(kg):
    """Two perspectives that each know a person/rio: each lists only its own identifiers, a text
    naming the other's routes nowhere private, and forgetting one Rio leaves the other's identifier,
    where every perspective listed every identifier and a forget took both. One written before
    identifiers had a perspective is every perspective's: listed in each, taken by a forget in any."""
    from .test_forget import _decoded

    kg("org", "init", "Beta Org", "--perspective", "beta")
    kg("add-entity", "person/rio", "--name", "Rio Main")
    kg("add-entity", "person/rio", "--name", "Rio Beta", "--perspective", "beta")
    kg("add-entity", "repo/api", "--name", "api", "--perspective", "beta")
    kg("identifiers", "add", "person/rio", "chat", "UMAINRIO")
    kg("identifiers", "add", "Rio Beta", "tracker", "rio-beta", "--perspective", "beta")
    kg("identifiers", "add", "Rio Beta", "chat", "UMAINRIO", "--perspective", "beta")  # the same person, here too

    def listed(*perspective):
        return sorted((e["kind"], e["value"]) for e in kg.json("identifiers", "list", *perspective)["identifiers"])

    assert listed() == [("chat", "UMAINRIO")]
    assert listed("--perspective", "beta") == [("chat", "UMAINRIO"), ("tracker", "rio-beta")]
    fact = kg.json("propose", "repo/api", "caveat", "--value", "ping UMAINRIO", "-s", "pr:1", "--perspective", "beta")
    assert fact["sensitivity"] == "personal" and "UMAINRIO" not in _decoded(kg.path, "shared")
    assert kg.json("forget", "person/rio", "--perspective", "beta")["identifiers"] == 2
    assert listed() == [("chat", "UMAINRIO")]
    assert listed("--perspective", "beta") == []
    with (kg.path / "identifiers.jsonl").open("a") as file:  # as kgrdf wrote them before
        file.write('{"entity": "person/rio", "kind": "code-host", "value": "rio-old", "added_at": "2026-01-01"}\n')
    kg("add-entity", "person/rio", "--name", "Rio Beta", "--perspective", "beta", "--allow-forgotten")
    assert listed("--perspective", "beta") == [("code-host", "rio-old")]
    assert kg.json("forget", "person/rio", "--perspective", "beta")["identifiers"] == 1
    assert listed() == [("chat", "UMAINRIO")]
