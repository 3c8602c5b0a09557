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
