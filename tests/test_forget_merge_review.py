"""kg forget and kg org merge against what a hostile user tries (§8, §9): a person's names reached
through a merge, and what a forget or a merge leaves behind."""

import gzip
from pathlib import Path


def _shared_text(kg) -> str:
    """The text of every patch of this replica's shared journal (the one that may leave the machine)."""
    folders = [p for p in (kg.path / "journal").iterdir() if p.name != "local"]
    return "".join(gzip.decompress(p.read_bytes()).decode("utf-8") for f in folders for p in sorted(f.rglob("*.gz")))


def _names_anywhere(path: Path, words) -> list[str]:
    """The files under ``path`` (the index and git aside, rebuilt from them) whose text, unpacked when
    gzipped, holds any of ``words``, in any case."""
    found = []
    for file in sorted(path.rglob("*")):
        parts = file.relative_to(path).parts
        if not file.is_file() or parts[0] in (".git", "index"):
            continue
        data = file.read_bytes()
        if file.name.endswith(".gz"):
            data = gzip.decompress(data)
        text = data.decode("utf-8", errors="replace").casefold()
        if any(word.casefold() in text for word in words):
            found.append(str(file.relative_to(path)))
    return found


def test_the_names_a_merged_organization_went_by_that_name_a_person_stay_private_and_forget_takes_them(kg):
    """A merge records the aliases the merged organization went by (kg:mergedName). One naming a
    person went to the shared journal, which is never rewritten: the person could no longer be
    forgotten (refused, exit 1)."""
    kg("add-entity", "person/quentin", "--name", "Quentin Zarbo")
    kg("org", "add", "Acme")
    kg(
        "add-entity",
        "organization/zarbo-consulting",
        "--name",
        "Zarbo Consulting",
        "--alias",
        "Quentin Zarbo Ltd",
        "--weak-alias",
        "Quentin Zarbo",
    )
    kg("org", "merge", "Acme", "Zarbo Consulting")
    assert "quentin" not in _shared_text(kg).casefold()
    kg("forget", "person/quentin")
    assert _names_anywhere(kg.path, ["Quentin Zarbo", "person/quentin"]) == []
    entity = kg.json("lookup", "Zarbo Consulting")["entity"]
    assert (entity["id"], entity["aliases"], entity["weak_aliases"]) == ("organization/acme", ["Zarbo Consulting"], [])
    assert "clean" in kg("validate").stdout


def test_a_hearing_in_a_channel_named_after_a_person_is_private_and_forget_narrows_it_to_the_owner(kg):
    """forget reads a hearing's audience as a text that may name a person; routing did not, so a
    fact heard again in ``channel:quenty-zarbo`` wrote that audience to the shared journal and the
    person could never be forgotten. The hearing, taken out of the fact forget keeps, becomes the
    owner's (it became "[forgotten]", no audience: kg validate failed on it)."""
    kg("add-entity", "person/quentin", "--name", "Quentin Zarbo", "--alias", "Quenty")
    kg("add-entity", "repo/web", "--name", "Web")
    fact = kg.json("propose", "repo/web", "purpose", "--value", "serve pages", "-s", "doc:d1", "--audience", "public")
    kg("propose", "repo/web", "purpose", "--value", "serve pages", "-s", "doc:d2", "--audience", "channel:quenty-zarbo")
    assert "quenty" not in _shared_text(kg).casefold()
    kg("forget", "person/quentin")
    kept = kg.json("history", fact["id"])["fact"]
    assert [h["audience"] for h in kept["hearings"]] == ["public", "owner"]
    assert _names_anywhere(kg.path, ["quenty", "person/quentin"]) == []
    assert "clean" in kg("validate").stdout


def test_forget_revokes_the_tokens_that_speak_as_a_person_or_read_for_them_and_keeps_the_others(kg):
    """A token made with --speaker person/quentin, or for a conversation named after them, kept
    their id or name in tokens.json, which kgrdf wrote: forget exited 3 saying kgrdf did not write
    it that way, and the token still spoke as someone the knowledge base no longer knows."""
    kg("add-entity", "person/quentin", "--name", "Quentin Zarbo", "--alias", "Quenty")
    kg("add-entity", "person/ann", "--name", "Ann Lee")
    kg("tokens", "add", "q-bot", "--perspective", "main", "--audience", "owner", "--speaker", "person/quentin")
    kg("tokens", "add", "dm-bot", "--perspective", "main", "--audience", "dm:person/ann,person/quentin")
    kg("tokens", "add", "ann-bot", "--perspective", "main", "--audience", "channel:sales", "--speaker", "Ann Lee")
    dry = kg.json("forget", "person/quentin", "--dry-run")
    assert dry["tokens"] == 2 and sorted(dry["token_names"]) == ["dm-bot", "q-bot"]
    said = kg("forget", "person/quentin", "--dry-run").stdout
    assert "would revoke 2 tokens naming them (" in said and "q-bot" in said and "dm-bot" in said
    assert "revoked" not in said
    assert len(kg.json("tokens", "list")["tokens"]) == 3
    done = kg.json("forget", "person/quentin")
    assert done["tokens"] == 2 and done["remaining"] == []
    assert [t["name"] for t in kg.json("tokens", "list")["tokens"]] == ["ann-bot"]
    assert _names_anywhere(kg.path, ["quentin"]) == []


def test_forget_leaves_another_perspectives_tokens_as_its_own_and_finishes(kg):
    """A token of another perspective named after someone of the same name is that perspective's, as
    its journal rows are: forget neither revokes it nor, having done its work, ends by blaming it
    (exit 3, "tokens.json still names them"), the two rules now one."""
    kg("add-entity", "person/dana", "--name", "Dana Quixley")
    kg("org", "init", "Otherco", "--perspective", "other")
    kg("tokens", "add", "dana-quixley-bot", "--perspective", "other", "--audience", "public")
    kg("tokens", "add", "main-dana-quixley", "--perspective", "main", "--audience", "public")
    done = kg.json("forget", "person/dana")
    assert done["tokens"] == 1 and done["remaining"] == []
    assert [t["name"] for t in kg.json("tokens", "list")["tokens"]] == ["dana-quixley-bot"]
    assert kg.json("lookup", "person/dana", expect=1)["error"] == "not_found"
