"""kg tokens: bearer tokens that bind a perspective, an audience and the right to write, kept hashed
in a 0600 file that neither git, the journal nor the index ever holds."""

import json
import stat
import subprocess

import pytest

from kgrdf import tokens

from .conftest import one_line
from .patchlog import patch_bytes


def _all_bytes(kb) -> bytes:
    """Every file kgrdf keeps but tokens.json: the journal (its patches unzipped), the index, git's
    objects, the caches."""
    out = []
    for path in kb.rglob("*"):
        if path.is_file() and path.name != "tokens.json":
            out.append(patch_bytes(path) if path.suffix == ".gz" else path.read_bytes())
    return b"".join(out)


def test_a_token_is_shown_once_and_kept_only_as_its_digest(kg):
    made = kg.json("tokens", "add", "sales-bot", "--perspective", "main", "--audience", "Channel:sales")
    secret = made["secret"]
    assert made["audience"] == "channel:sales" and made["write"] is False and made["perspective"] == "main"
    kept = (kg.path / "tokens.json").read_bytes()
    assert secret.encode() not in kept and tokens.digest(secret).encode() in kept
    assert stat.S_IMODE((kg.path / "tokens.json").stat().st_mode) == 0o600
    listed = kg.json("tokens", "list")["tokens"]
    assert [t["name"] for t in listed] == ["sales-bot"] and "secret" not in listed[0] and "digest" not in listed[0]
    kg("add-entity", "repo/api", "--name", "api")  # a write commits to git
    subprocess.run(["git", "gc", "-q"], cwd=kg.path, check=True)
    assert (
        "tokens.json"
        not in subprocess.run(["git", "ls-files"], cwd=kg.path, capture_output=True, text=True).stdout.split()
    )
    everything = _all_bytes(kg.path)
    assert secret.encode() not in everything and tokens.digest(secret).encode() not in everything


def test_a_secret_resolves_to_its_token_until_it_is_revoked(kg):
    reader = kg.json("tokens", "add", "reader", "--perspective", "main", "--audience", "public")["secret"]
    writer = kg.json("tokens", "add", "writer", "--perspective", "main", "--audience", "owner", "--write")["secret"]
    assert tokens.resolve(kg.path, reader).name == "reader"
    found = tokens.resolve(kg.path, writer)
    assert (found.name, found.write, found.audience) == ("writer", True, "owner")
    assert tokens.resolve(kg.path, reader[:-1] + ("A" if reader[-1] != "A" else "B")) is None
    assert tokens.resolve(kg.path, "") is None and tokens.resolve(kg.path, "Bearer " + reader) is None
    assert kg.json("tokens", "revoke", "reader")["revoked"]["name"] == "reader"
    assert tokens.resolve(kg.path, reader) is None
    assert tokens.resolve(kg.path, writer).name == "writer"


def test_a_bad_token_request_says_why_in_one_line_and_writes_nothing(kg):
    kg("tokens", "add", "bot", "--perspective", "main", "--audience", "public")
    before = (kg.path / "tokens.json").read_bytes()
    cases = [
        (("other", "--perspective", "Main!", "--audience", "public"), "lower-case"),
        (("other", "--perspective", "main", "--audience", "chan:x"), "not an audience"),
        (("other", "--perspective", "main", "--audience", "dm:"), "not an audience"),
        (("has space", "--perspective", "main", "--audience", "public"), "token name"),
        (("-", "--perspective", "main", "--audience", "public"), "token name"),
    ]
    for args, reason in cases:
        assert reason in one_line(kg("tokens", "add", *args, expect=2))
    taken = json.loads(
        kg("tokens", "add", "bot", "--perspective", "main", "--audience", "owner", "--json", expect=1).stdout
    )
    assert (taken["error"], taken["message"]) == ("refused", "there is a token named 'bot' already")  # a conflict: 1
    assert "no perspective 'mian'; known: main" in one_line(
        kg("tokens", "add", "other", "--perspective", "mian", "--audience", "public", expect=1)
    )
    assert "no token named 'nobody'" in one_line(kg("tokens", "revoke", "nobody", expect=1))
    assert (kg.path / "tokens.json").read_bytes() == before


def test_a_token_may_name_another_perspective_the_knowledge_base_holds(kg):
    kg("org", "init", "Lyra Labs", "--perspective", "lyra")
    made = kg.json("tokens", "add", "lyra-bot", "--perspective", "lyra", "--audience", "owner")
    assert tokens.resolve(kg.path, made["secret"]).perspective == "lyra"


def test_a_knowledge_base_made_before_tokens_learns_to_ignore_them_with_its_next_write(kg):
    """An older .gitignore, without tokens.json and index.held: the next write adds them (and keeps
    what a person added), so a `git add .` by hand never takes the tokens' file."""
    ignore = kg.path / ".gitignore"
    older = [line for line in ignore.read_text().splitlines() if line not in ("tokens.json", "index.held")]
    ignore.write_text("\n".join(older) + "\nnotes.txt")  # a person's own line, without a newline at the end
    kg.json("tokens", "add", "bot", "--perspective", "main", "--audience", "owner")
    kg("add-entity", "repo/api", "--name", "api")
    lines = ignore.read_text().splitlines()
    assert {"tokens.json", "index.held", "notes.txt"} <= set(lines) and len(lines) == len(set(lines))
    subprocess.run(["git", "add", "."], cwd=kg.path, check=True)
    staged = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=kg.path, capture_output=True, text=True)
    assert "tokens.json" not in staged.stdout.split() and "index.held" not in staged.stdout.split()
    tracked = subprocess.run(["git", "ls-files"], cwd=kg.path, capture_output=True, text=True).stdout.split()
    assert "tokens.json" not in tracked


@pytest.mark.parametrize(
    "content, said",
    [
        ("[]", "tokens.json is not a list of tokens"),
        ('{"tokens": 5}', "tokens.json is not a list of tokens"),
        ('{"tokens": [5]}', "tokens.json holds an entry that is not a token (the 1st)"),
        (
            '{"tokens": [{"name": 7, "perspective": "main", "audience": "public", "write": false, '
            '"created": "2026-01-01", "digest": "00"}]}',
            "tokens.json holds a token whose fields are not what kgrdf writes (the 1st)",
        ),
    ],
)
def test_a_tokens_file_of_another_shape_is_damage_named_never_a_bug(kg, content, said):
    """A tokens.json that parses but is no list of tokens was reported as 'a bug in kgrdf'
    (AttributeError, TypeError): it is damage, exit 3, saying what is wrong and where."""
    (kg.path / "tokens.json").write_text(content)
    for command in (["tokens", "list"], ["tokens", "add", "bot", "--perspective", "main", "--audience", "public"]):
        error = kg.json(*command, expect=3)
        assert error["error"] == "damaged" and error["message"] == said, error
    assert (kg.path / "tokens.json").read_text() == content
