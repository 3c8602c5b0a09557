"""Privacy (§5, §8): the two journals, forget that leaves no trace, retention the same way, the
secret key's cases, and a forget cut short finished by the next command."""

import gzip
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import unicodedata
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgrdf.kb import KnowledgeBase

from .conftest import Kg, at_a_terminal, one_line
from .patchlog import check_journals, journal_bytes, patch_bytes
from .test_durability import KILL_AT, _finish, _git, _spawn


def _propose(kg, *args) -> dict:
    return kg.json("propose", *args)


def _people(kg, tmp_path) -> dict:
    """Sam appears as a subject, an object, by alias, by identifier, in a user's quote and in a value,
    over several commits; Priya and the rest of the organization are there too."""
    kg("add-entity", "person/sam", "--name", "Sam Reyes", "--alias", "Sam", "--alias", "Sammy R")
    kg("add-entity", "person/priya", "--name", "Priya Natarajan", "--alias", "Priya")
    kg("add-entity", "repo/api", "--name", "api")
    kg("add-entity", "team/web", "--name", "Web team")
    kg("add-entity", "process/release", "--name", "Release process")
    kg("identifiers", "add", "person/sam", "chat", "U0SAMCHAT")
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "user",
                "message": {"role": "user", "content": "Remember: Sammy R reviews every api change before it merges."},
            }
        )
        + "\n"
    )
    facts = {
        "sam_member": _propose(kg, "person/sam", "member_of", "--object", "team/web", "-s", "profile:directory")["id"],
        "priya_reports": _propose(kg, "person/priya", "distinct_from", "--object", "person/sam", "-s", "slack:p1")[
            "id"
        ],
        "quote": _propose(
            kg,
            "person/sam",
            "reviews",
            "--object",
            "repo/api",
            "--from-user",
            "--quote",
            "Sammy R reviews every api change",
            "--transcript",
            str(transcript),
        )["id"],
        "value": _propose(
            kg, "process/release", "rule", "--value", "Sam Reyes signs off every release", "-s", "memory:notes"
        )["id"],
        "priya_member": _propose(kg, "person/priya", "member_of", "--object", "team/web", "-s", "profile:directory")[
            "id"
        ],
        "api_caveat": _propose(kg, "repo/api", "caveat", "--value", "slow integration tests", "-s", "pr:12")["id"],
    }
    kg("confirm", facts["sam_member"])
    kg("supersede", facts["value"], "--value", "Sam Reyes and Priya sign off every release", "-s", "memory:notes2")
    return facts


SAM = ["person/sam", "Sam Reyes", "Sam", "Sammy R", "U0SAMCHAT"]


def _files_naming(root: Path, terms) -> list[str]:
    """Every file under root, .git objects decompressed, that holds a term as a whole word: in any
    case in text, and in binary files (the index's tables, manifest and logs, git's trees) as a
    program stores it, spelled as written, lowercased or uppercased, and followed by what can end a
    word in a stored string (a space, a punctuation mark, the padding or length byte of a short
    string kept in a key). Binary files also hold 128-bit hashes of terms, random bytes in which a
    three-letter name turns up, any case and any byte after, about once in a few hundred scans: a
    CI run failed that way on a manifest that could not hold the name. Each match is printed with
    the bytes around it, shown when a test fails."""
    words = b"|".join(re.escape(t.encode()) for t in terms)
    text = re.compile(rb"(?<![\w-])(?:" + words + rb")(?![\w-])", re.IGNORECASE)
    spellings = {s.encode() for t in terms for s in (t, t.lower(), t.upper())}
    binary = re.compile(
        rb"(?<![\w-])(?:"
        + b"|".join(map(re.escape, sorted(spellings)))
        + rb")(?=[\x00-\x0f\x20-\x2c\x2e\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7e\xc2\xe2\xe3\xef]|\Z)"
    )
    found = []
    for path, data in _file_bytes(root):
        try:
            data.decode("utf-8")
            pattern = text
        except UnicodeDecodeError:
            pattern = binary
        matches = list(pattern.finditer(data))
        for match in matches:
            print(f"{path.relative_to(root)}: {data[max(0, match.start() - 24) : match.end() + 24]!r}")
        if matches:
            found.append(str(path.relative_to(root)))
    return found


def _file_bytes(root: Path):
    """(path, bytes) of every file under root, loose git objects and gzipped files (the journal's
    patches) decompressed, and the index's table files as the entries they hold where sst_dump reads
    them (_sst_entries)."""
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        data = (_sst_entries(path) if path.suffix == ".sst" else None) or path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if ".git" in path.parts and "objects" in path.parts and "pack" not in path.parts:
            try:
                data = zlib.decompress(data)
            except zlib.error:
                pass
        yield path, data


def _sst_entries(path: Path) -> bytes | None:
    """Every key and value of one of the index's table files, decompressed by rocksdb-tools'
    sst_dump (make system-deps installs it); None for a file it cannot read (a table format newer
    than it knows), which is then scanned as its raw bytes. On disk a table's blocks are LZ4, where
    a literal that ends inside another's id ("person/sam" of "person/samuel") is followed by a match
    offset whose byte can read as the end of an id: raw bytes can show traces that are not there."""
    sst_dump = shutil.which("sst_dump")
    if sst_dump is None:
        pytest.fail("sst_dump (Debian's rocksdb-tools; make system-deps installs it) reads the index's files")
    done = subprocess.run([sst_dump, f"--file={path}", "--command=scan"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


def _unpack_git(root: Path) -> None:
    """Pack files too: unpack them so their objects are searched one by one."""
    for pack in (root / ".git" / "objects" / "pack").glob("*.pack"):
        subprocess.run(["git", "unpack-objects", "-q"], cwd=root, stdin=open(pack, "rb"), check=True)


def test_the_byte_scan_reads_the_index_files_entries_and_finds_a_person_they_hold(kg, tmp_path):
    """The control of the scans below: a person in the index's table files is found in the entries
    sst_dump reads out of them, where their compressed bytes need not show the name whole."""
    _people(kg, tmp_path)
    shutil.rmtree(kg.path / "index")
    kg("stats")  # the index made again from the journal: one bulk load, into table files
    tables = sorted((kg.path / "index").glob("*.sst"))
    assert tables
    read = [entries for entries in map(_sst_entries, tables) if entries is not None]
    assert read, "sst_dump read none of the index's table files"
    assert any(b"Sam Reyes" in entries and b"/person/sam" in entries for entries in read)


# --- two journals --------------------------------------------------------------------------------


def test_what_names_a_person_goes_to_the_private_journal_the_rest_to_the_replicas(kg, tmp_path):
    facts = _people(kg, tmp_path)
    kb = KnowledgeBase.open(kg.path)
    local = journal_bytes(kb.journal.local.dir).decode()
    shared = journal_bytes(kb.journal.shared.dir).decode()
    assert kb.journal.local.dir.name == "local" and kb.journal.shared.dir.name == kb.replica
    for term in ["Sam Reyes", "Sammy R", "Priya Natarajan", facts["sam_member"], facts["quote"], facts["value"]]:
        assert term in local and term not in shared, term
    assert facts["api_caveat"] in shared and facts["api_caveat"] not in local
    assert "Release process" in shared  # an entity that is not a person
    # One sequence across both: every transaction once, in order, the index equal to a rebuild.
    seqs = [tx.seq for tx, _ in kb.journal.read_after(type(kb.view())())[0]]
    assert seqs == list(range(1, len(seqs) + 1)) and seqs[-1] == kb.view().seq
    kg("validate")


def test_routing_finds_the_people_a_text_names_through_a_cache_every_write_keeps_current(kg):
    """A write reads the people its texts' words lead to from cache/people-<perspective>.sqlite, not
    everyone: the people added, renamed or given an alias since it was made are found, and a cache
    that is damaged or made for another state of the journal is made again, never believed."""
    kg("add-entity", "repo/w", "--name", "W")

    def caveat(text):
        return _propose(kg, "repo/w", "caveat", "--value", text, "-s", "doc:r1")["id"]

    public = [caveat("the build needs a warm cache")]
    cache = kg.path / "cache" / "people-main.sqlite"
    assert cache.is_file()
    stale = cache.read_bytes()
    kg("add-entity", "person/zed", "--name", "Zed Quill")
    private = [caveat("ask Zed Quill first")]
    kg("add-entity", "person/zed", "--name", "Zed Quill", "--alias", "ZQ")
    kg("add-entity", "person/ada", "--name", "Ada Lin", "--weak-alias", "al-7")
    private += [caveat("zq said so"), caveat("AL-7 runs it"), caveat("see person/ada")]
    public.append(caveat("Zed and Quill are two words, Ada one"))
    cache.write_bytes(stale)  # made before Zed and Ada were added
    private.append(caveat("Zed Quill again"))
    cache.write_bytes(b"not a database")
    private.append(caveat("Ada Lin again"))
    kb = KnowledgeBase.open(kg.path)
    shared = journal_bytes(kb.journal.shared.dir).decode()
    local = journal_bytes(kb.journal.local.dir).decode()
    assert all(fact in shared and fact not in local for fact in public)
    assert all(fact in local and fact not in shared for fact in private)


# --- forget ---------------------------------------------------------------------------------------


def test_a_dry_run_lists_each_fact_a_forget_deletes_and_whether_it_is_about_them_or_only_names_them(kg):
    """A one-word name is found in other words too: forgetting Mark deletes "mark the ticket done",
    which is not about Mark. The dry run said "2 facts" alone; it now lists each fact, what it says
    and why it goes, so that the owner sees what goes beside the person before it is gone."""
    kg("add-entity", "person/mark", "--name", "Mark")
    kg("add-entity", "repo/api", "--name", "Api")
    about = kg.json("propose", "person/mark", "reviews", "--object", "repo/api", "-s", "slack:a")["id"]
    names = kg.json("propose", "repo/api", "caveat", "--value", "mark the ticket done first", "-s", "slack:b")["id"]
    kept = kg.json("propose", "repo/api", "caveat", "--value", "deploys need two reviewers", "-s", "slack:c")["id"]
    before = kg.snapshot()
    dry = kg.json("forget", "Mark", "--dry-run")
    assert dry["facts"] == 2
    assert [(one["id"], one["why"], one["status"]) for one in dry["going"]] == [
        (about, "about", "proposed"),
        (names, "names", "proposed"),
    ]
    assert dry["going"][1]["sentence"] == "Api comes with a caveat: mark the ticket done first"
    said = kg("forget", "person/mark", "--dry-run").stdout
    assert f"{names}  names them: Api comes with a caveat: mark the ticket done first" in said
    assert f"{about}  about them: " in said and kept not in said
    assert kg.snapshot() == before  # nothing changed


def test_forget_leaves_no_trace_in_any_file_and_keeps_everyone_else(kg, tmp_path):
    facts = _people(kg, tmp_path)
    kg("propose", "repo/api", "caveat", "--value", "a write cut short", "-s", "pr:1")
    segment = KnowledgeBase.open(kg.path).journal.local.files()[-1]
    (segment.parent / (segment.name + ".torn-20261101T000000Z")).write_text('A <x> <y> "Sam Reyes" <z> .\n')
    kg("batch")  # batch.json names Sam
    assert kg.json("mentions", "ask Sam Reyes")["mentions"]  # cache/ keeps every name for kg mentions
    (kg.path / "batch.json.tmp").write_text('{"text": "Sam Reyes reviews api"}')  # a kg batch cut short
    named = _files_naming(kg.path, SAM)  # they are everywhere before, the private journal's gzipped patches too
    assert any(name.startswith("journal/local/") and name.endswith(".rdfp.gz") for name in named), named
    before_priya = {f["id"] for f in kg.json("facts", "person/priya", "--all")["facts"]}
    assert facts["priya_reports"] in before_priya

    dry = kg.json("forget", "person/sam", "--dry-run")
    going = dry.pop("going")
    assert len(going) == 5 and facts["priya_reports"] in {one["id"] for one in going}
    assert dry == {
        "entity": "person/sam",
        "elsewhere": [],
        "elsewhere_in_text_only": [],
        "elsewhere_shared": [],
        "others": [],
        "facts": 5,
        "redacted": 0,
        "identifiers": 1,
        "tokens": 0,
        "dry_run": True,
        "token_names": [],
        "refused": None,
    }
    result = kg.json("forget", "person/sam")
    assert result["facts"] == 5 and result["identifiers"] == 1 and result["remaining"] == []
    assert result["leftovers"] == 4  # the torn tail, the .tmp file, batch.json, cache/

    _unpack_git(kg.path)
    assert _files_naming(kg.path, SAM) == []
    # Everyone else is intact: Priya's own fact stays, the one pointing at Sam is gone with him.
    assert {f["id"] for f in kg.json("facts", "person/priya", "--all")["facts"]} == {facts["priya_member"]}
    assert facts["api_caveat"] in {f["id"] for f in kg.json("facts", "repo/api")["facts"]}
    assert kg.json("lookup", "Priya")["entity"]["name"] == "Priya Natarajan"
    kg("lookup", "person/sam", expect=1)
    assert [e["entity"] for e in kg.json("identifiers", "list")["identifiers"]] == []
    # The sequence never goes back: placeholders keep it, the next write goes on from it.
    kb = KnowledgeBase.open(kg.path)
    seq = kb.view().seq
    entries, torn = kb.journal.read_after(type(kb.view())())
    assert torn == [] and [tx.seq for tx, _ in entries] == list(range(1, seq + 1))
    placeholders = [tx for tx, _ in entries if not tx.adds and not tx.deletes]
    assert len(placeholders) == result["placeholders"] > 0
    # Both journals are still whole patch logs: the placeholders keep the private chain.
    shared, local = check_journals(kg.path / "journal", kb.replica)
    assert sum("placeholder" in p["headers"] for p in local) == result["placeholders"]
    # The history starts again: one commit, and the forgotten record holds a keyed hash only.
    assert _git(kg.path, "log", "--format=%s").splitlines() == [
        "kg: the history starts again here (records were deleted on request or past retention)"
    ]
    [record] = [json.loads(line) for line in (kg.path / "forgotten.jsonl").read_text().splitlines()]
    assert record["hash_kind"] == "hmac-sha256" and record["facts"] == 5 and len(record["hash"]) == 64
    kg("validate")
    later = _propose(kg, "repo/api", "caveat", "--value", "after the forget", "-s", "pr:2")
    assert KnowledgeBase.open(kg.path).view().seq == seq + 1 and later["id"]


def test_forget_deletes_the_saved_batch_of_every_perspective_that_names_them(kg):
    """Each perspective keeps its own saved batch (batch-<perspective>.json beside batch.json): one
    that names the person goes with the rest, whichever perspective forgets them."""
    kg("org", "init", "Beta Org", "--perspective", "beta")
    kg("add-entity", "person/sam", "--name", "Sam Reyes", "--alias", "Sam", "--perspective", "beta")
    kg("add-entity", "repo/api", "--name", "api", "--perspective", "beta")
    kg("propose", "person/sam", "reviews", "--object", "repo/api", "-s", "slack:1", "--perspective", "beta")
    kg("batch", "--perspective", "beta")
    assert "Sam Reyes" in (kg.path / "batch-beta.json").read_text()
    kg("batch")  # the main perspective's, naming nobody
    result = kg.json("forget", "person/sam", "--perspective", "beta")
    assert result["facts"] == 1 and result["leftovers"] >= 2  # both saved batches, and cache/
    assert not (kg.path / "batch-beta.json").exists() and not (kg.path / "batch.json").exists()
    _unpack_git(kg.path)
    assert _files_naming(kg.path, ["person/sam", "Sam Reyes"]) == []


def test_a_perspective_naming_the_person_in_text_alone_is_not_told_to_forget_them_there(kg):
    """Beta knows no person/nina: its fact naming her went to the journal that may be shared. The
    forget said to forget her in beta, which answered 'not known'."""
    kg("org", "init", "Beta Org", "--perspective", "beta")
    kg("add-entity", "person/nina", "--name", "Nina Okoro", "--alias", "Nina")
    kg("add-entity", "repo/api", "--name", "api")
    kg("add-entity", "repo/api", "--name", "api", "--perspective", "beta")
    kg("propose", "repo/api", "caveat", "--value", "Nina Okoro owns auth", "-s", "doc:z", "--perspective", "beta")
    planned = kg.json("forget", "person/nina", "--dry-run")
    assert (planned["elsewhere"], planned["elsewhere_in_text_only"]) == (["beta"], ["beta"])
    refused = kg("forget", "person/nina", expect=3)
    assert "--perspective beta" not in refused.stderr and "knows no person/nina" in refused.stderr
    kg("forget", "person/nina", "--perspective", "beta", expect=1)  # (what it said to do, and would not do)


@pytest.mark.parametrize("known_there", [False, True])
def test_a_perspective_naming_the_person_in_private_records_is_told_the_way_that_forgets_them_there(kg, known_there):
    """A fact of another perspective heard in a conversation of theirs is in the private journal: the
    forget said it was in the journal that may be shared, never rewritten, and named no way out;
    where that perspective holds the person, it said it knew none (it judged by the rows that named
    them alone). Each way out now named works, and leaves no file naming them."""
    kg("org", "init", "Acme Corp", "--perspective", "acme")
    kg("add-entity", "person/dorota", "--name", "Dorota Quell", "--perspective", "acme")
    if known_there:  # (by another name: the forget in acme judged by rows naming her as acme names her)
        kg("add-entity", "person/dorota", "--name", "Dorota Vance")
    kg("add-entity", "repo/web", "--name", "web")
    kg(
        "propose",
        "repo/web",
        "caveat",
        "--value",
        "deploys freeze on fridays",
        "-s",
        "slack:x",
        "--audience",
        "dm:dorota,jo",
    )
    refused = one_line(kg("forget", "person/dorota", "--perspective", "acme", expect=3))
    assert "journal that may be shared" not in refused and "shared journal" not in refused, refused
    way = refused[refused.rindex("(") + 1 : -2] if known_there else refused[refused.index("(kg add-entity") + 1 : -2]
    for command in way.split(", then "):
        words = shlex.split(command)
        assert words[0] == "kg", way
        kg(*[("Dorota Quell" if w == "NAME" else w) for w in words[1:]])
    assert kg.json("facts", "repo/web", "--all")["facts"] == []
    _unpack_git(kg.path)
    assert _files_naming(kg.path, ["person/dorota", "Dorota Quell", "Dorota Vance", "dm:dorota"]) == []


def test_a_person_another_perspective_knows_too_is_not_said_forgotten_until_forgotten_there(kg):
    """Forgetting Ada in the main perspective left the beta perspective's records of her (its entity, a
    fact naming her) and exited 0 saying she was forgotten. The dry run now names the perspective, the
    forget exits 3 naming it and how to forget her there, and a forget there leaves no file naming her."""
    kg("org", "init", "Beta Org", "--perspective", "beta")
    for perspective in ("main", "beta"):
        kg("add-entity", "person/ada", "--name", "Ada Quistorp", "--alias", "Adq", "--perspective", perspective)
        kg("add-entity", "repo/api", "--name", "api", "--perspective", perspective)
    kg("propose", "repo/api", "caveat", "--value", "Adq merges on Fridays", "-s", "pr:3", "--perspective", "beta")
    kept = _propose(kg, "repo/api", "caveat", "--value", "slow tests", "-s", "pr:4")
    planned = kg.json("forget", "person/ada", "--dry-run")
    assert planned["elsewhere"] == ["beta"]
    assert "kg forget person/ada --perspective beta" in kg("forget", "person/ada", "--dry-run").stdout
    refused = kg("forget", "person/ada", expect=3)
    assert refused.stderr.count("\n") == 1 and "kg forget person/ada --perspective beta" in refused.stderr
    assert "Quistorp" not in refused.stderr and "Adq" not in refused.stderr
    assert kg.json("lookup", "person/ada", expect=1)["error"] == "not_found"
    assert kg.json("forget", "person/ada", "--perspective", "beta")["elsewhere"] == []
    assert kg.json("facts", "repo/api", "--all", "--perspective", "beta")["facts"] == []
    assert [f["id"] for f in kg.json("facts", "repo/api", "--all")["facts"]] == [kept["id"]]
    _unpack_git(kg.path)
    assert _files_naming(kg.path, ["person/ada", "Quistorp", "Adq"]) == []
    kg("validate")


def test_a_forget_checks_every_file_while_the_index_compacts_and_names_one_that_still_names_them(
    kg, tmp_path, monkeypatch
):
    """The last check of a forget reads every file of the folder while the index is rebuilt, once
    the store has every row (the load takes both cores; the compaction one), with the folder as
    the forget leaves it: index.old gone, git restarted. A file kgrdf did not write that names them fails the forget
    (exit 3, naming the file), though the person is gone from everything kgrdf keeps."""
    from kgrdf import forget as forget_mod
    from kgrdf.store import oxigraph as oxigraph_store

    _people(kg, tmp_path)
    (kg.path / "notes").mkdir()
    (kg.path / "notes" / "todo.txt").write_text("ask Sam Reyes about the api\n")
    (kg.path / "notes" / "other.txt").write_text("ask Priya about the api\n")
    checked = []  # (the index not compacted yet, index.old there, the git restart unfinished)
    compacted = threading.Event()
    real_compact, real_remaining = oxigraph_store.OxigraphBackend.compact, forget_mod.remaining

    def compact(backend):
        deadline = time.monotonic() + 10
        while not checked and time.monotonic() < deadline:
            time.sleep(0.01)  # a compaction that outlasts the check
        real_compact(backend)
        compacted.set()

    def remaining(kb, person, unchanged=None):
        checked.append(
            (
                not compacted.is_set(),
                (kb.path / "index.old").exists(),
                (kb.path / "uncommitted").exists(),
            )
        )
        return real_remaining(kb, person, unchanged)

    monkeypatch.setattr(oxigraph_store.OxigraphBackend, "compact", compact)
    monkeypatch.setattr(forget_mod, "remaining", remaining)
    result = kg("forget", "person/sam", expect=3)
    assert checked == [(True, False, False)]
    assert "1 file of the knowledge base still names them: notes/todo.txt" in one_line(result)
    assert not (kg.path / "purging.json").exists()  # the deletion itself is done
    assert _files_naming(kg.path, SAM) == ["notes/todo.txt"]
    assert kg.json("search", "Sam")["results"] == []


def test_a_forget_reads_the_shared_journal_once_when_it_names_them_nowhere(kg, tmp_path, monkeypatch):
    """The shared journal (most of a knowledge base: 9 in 10 of its rows) is searched once: its rows
    of the facts the forget drops are found as it is searched, and the last check does not read its
    files again, which the search found free of the person and the lock kept unchanged. The private
    journal, rewritten, is read for the names the person went by, by the search and by the check."""
    from kgrdf import forget as forget_mod
    from kgrdf.journal import Stream

    _people(kg, tmp_path)
    kg("propose", "repo/api", "caveat", "--value", "shared and about no one", "-s", "pr:1")
    reads: dict[str, int] = {}
    real_patch_bytes, real_open = Stream.patch_bytes, open

    def patch_bytes(stream, path):
        reads[stream.dir.name] = reads.get(stream.dir.name, 0) + 1
        return real_patch_bytes(stream, path)

    def checked_open(path, *args, **kwargs):
        if "/journal/" in str(path):
            reads["checked " + Path(path).parent.parent.name] = 1
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(Stream, "patch_bytes", patch_bytes)
    monkeypatch.setattr(forget_mod, "open", checked_open, raising=False)
    shared = KnowledgeBase.open(kg.path).journal.shared
    result = kg.json("forget", "person/sam")
    assert result["remaining"] == [] and result["facts"] == 5
    assert reads == {
        "local": 2 * len(KnowledgeBase.open(kg.path).journal.local.files()),
        shared.dir.name: len(shared.files()),
        "checked local": 1,
    }
    assert _files_naming(kg.path, SAM) == []


def test_a_forgotten_person_is_not_added_again_without_allow_forgotten(kg, tmp_path):
    _people(kg, tmp_path)
    kg("forget", "person/sam")
    refused = kg("add-entity", "person/sam", "--name", "Sam Reyes", expect=1)
    assert "person/sam was forgotten on request" in refused.stderr and "--allow-forgotten" in refused.stderr
    records = tmp_path / "people.jsonl"
    records.write_text(json.dumps({"type": "entity", "id": "person/sam", "name": "Sam Reyes"}) + "\n")
    report = kg.json("import", records, "--apply")
    assert report["refused"] == {"forgotten": 1}
    assert report["refusals"][0]["message"].endswith("(add them again knowingly with --allow-forgotten)")
    # the import's --allow-forgotten lets it in (it reached the import's first writer, not the one it staged in)
    copy = type(kg)(tmp_path / "copy")
    shutil.copytree(kg.path, copy.path)
    report = copy.json("import", records, "--apply", "--allow-forgotten")
    assert report["refused"] == {} and report["entities"] == {"created": 1}
    assert copy.json("lookup", "person/sam")["entity"]["name"] == "Sam Reyes"
    assert kg.json("add-entity", "person/sam", "--name", "Sam Reyes", "--allow-forgotten")["outcome"] == "created"


def test_forget_is_refused_when_the_shared_journal_names_them_and_nothing_changes(kg):
    kg("add-entity", "process/release", "--name", "Release process")
    stated = _propose(kg, "process/release", "rule", "--value", "Jo Park signs off", "-s", "memory:notes")
    kg("add-entity", "person/jo", "--name", "Jo Park")  # the text was written before Jo was known
    before = kg.snapshot()
    result = kg("forget", "person/jo", expect=1)
    assert "the shared journal" in result.stderr and stated["id"] in result.stderr
    assert "never rewritten" in result.stderr and "Jo Park" not in result.stderr
    assert kg.snapshot() == before and not (kg.path / "forgotten.jsonl").exists()


@pytest.mark.parametrize(
    "named",
    [
        [["add-entity", "repo/jo-tools", "--name", "Jo Park tools"]],
        [["org", "init", "Fernhill"], ["org", "add", "Jo Park LLC"]],
        [
            ["org", "init", "Fernhill"],
            ["org", "add", "Acme"],
            ["org", "add", "Jo Park LLC"],
            ["org", "merge", "Acme", "Jo Park LLC"],
        ],
    ],
    ids=["a-repo", "an-organization", "a-merged-organization"],
)
def test_forget_is_refused_when_the_shared_journal_holds_a_name_naming_them(kg, named):
    """Another entity's name naming the person, written before they were known, is in the shared
    journal: renamed in the index alone, it came back when the index was made again from the journal
    (and forget exited 3 calling the shared journal a file kgrdf did not write). It is refused, as a
    fact's text there is, naming the entity, before anything is written; a dry run says so too."""
    for args in named:
        kg(*args)
    kg("add-entity", "person/jo", "--name", "Jo Park")
    before = kg.snapshot()
    for dry in ([], ["--dry-run"]):
        result = kg("forget", "person/jo", *dry, expect=1)
        assert "the shared journal" in result.stderr and "never rewritten" in result.stderr
        assert ("repo/jo-tools" if "repo" in named[0][1] else "organization/jo-park-llc") in result.stderr
        assert "Jo Park" not in result.stderr
        # a dry run lists what the forget would delete all the same, as README promises
        assert result.stdout.startswith("would forget person/jo: ") == bool(dry), result.stdout
    planned = kg.json("forget", "person/jo", "--dry-run", expect=1)
    assert "the shared journal" in planned["refused"]["message"] and planned["dry_run"] is True
    assert kg.snapshot() == before and not (kg.path / "forgotten.jsonl").exists()


def test_an_id_naming_a_person_is_refused_when_made_and_a_forget_is_refused_where_one_was_made_before(kg, tmp_path):
    """`kg org add "Sam Reyes"` beside person/sam made organization/sam-reyes: its id went to the
    shared journal in every record of it and of its facts, and a forget exited 0 leaving it there
    (its name made the id, which spells theirs). An id naming a known person is refused, its name
    may be theirs, and a forget where such an id was made before them is refused, naming it."""
    kg("add-entity", "repo/jo-park-sync", "--name", "Sync")  # before Jo is known
    _propose(kg, "repo/jo-park-sync", "caveat", "--value", "runs hourly", "-s", "doc:1")
    kg("add-entity", "person/jo", "--name", "Jo Park", "--alias", "Jojo")
    before = kg.snapshot()
    for dry in ([], ["--dry-run"]):
        result = kg("forget", "person/jo", *dry, expect=1)
        assert "the shared journal" in result.stderr and "repo/jo-park-sync" in result.stderr
    assert kg.snapshot() == before and not (kg.path / "forgotten.jsonl").exists()

    from tests.conftest import Kg

    two = Kg(tmp_path / "two")
    two("init")
    two("add-entity", "person/jo", "--name", "Jo Park", "--alias", "Jojo")
    before = two.snapshot()
    for made in (["org", "add", "Jo Park"], ["add-entity", "team/ops-of-jo-park", "--name", "Ops"]):
        refused = two(*made, expect=1).stderr
        assert "names person/jo" in refused and "an id of its own" in refused, refused
    records = tmp_path / "org.jsonl"
    records.write_text(json.dumps({"type": "entity", "id": "organization/jo-park", "name": "Jo Park"}) + "\n")
    imported = two.json("import", records, "--apply")
    assert imported["refused"] == {"whitelist": 1} and "names person/jo" in imported["refusals"][0]["message"]
    assert two.snapshot() == before
    two("org", "add", "Jo Park", "--id", "organization/jp-holdings")  # the way it names: its name is theirs
    two("add-entity", "team/jojo-ops", "--name", "Ops")  # an alias is no spelling of their name
    _propose(two, "organization/jp-holdings", "attribute", "--value", "salary: 250k", "-s", "ledger:a")
    assert two.json("forget", "person/jo")["remaining"] == []
    _unpack_git(two.path)
    assert _files_naming(two.path, ["Jo Park", "jo-park"]) == []
    assert two.json("lookup", "organization/jp-holdings")["entity"]["name"] == "organization/jp-holdings"


def test_an_id_spelling_a_name_is_found_without_its_accents_by_a_former_name_and_before_the_import_adds_them(
    kg, tmp_path
):
    """kg org add "José Núñez" made organization/jose-nunez (the slug drops the marks the name's words
    keep); an id spelling the name a person went by before a rename let a forget exit 0; an import
    whose entity record came before the person's took the id (and the person could not be forgotten
    after); and MCP's org_add advised kg org add --id, which no tool takes."""
    from tests.conftest import Kg

    kg("add-entity", "person/jose", "--name", "José Núñez")
    before = kg.snapshot()
    assert "names person/jose" in kg("org", "add", "José Núñez", expect=1).stderr
    assert kg.snapshot() == before

    renamed = Kg(tmp_path / "renamed")
    renamed("init")
    renamed("add-entity", "repo/mkquill-ortega-tools", "--name", "tools")  # before the person is known
    renamed("add-entity", "person/mq", "--name", "Mkquill Ortega")
    renamed("add-entity", "person/mq", "--name", "Pat Lee")
    kept = renamed.snapshot()
    for dry in ([], ["--dry-run"]):
        assert "repo/mkquill-ortega-tools" in renamed("forget", "person/mq", *dry, expect=1).stderr
    assert renamed.snapshot() == kept

    imported = Kg(tmp_path / "imported")
    imported("init")
    records = tmp_path / "order.jsonl"
    rows = [
        {"type": "entity", "id": "repo/mkquill-ortega-tools", "name": "tools"},
        {"type": "entity", "id": "person/mq", "name": "Mkquill Ortega"},
    ]
    records.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = imported.json("import", records, "--apply")
    assert [(r["line"], r["reason"]) for r in report["refusals"]] == [(1, "whitelist")]
    assert imported.json("forget", "person/mq")["remaining"] == []

    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "org_add", "arguments": {"name": "José Núñez"}},
        },
    ]
    env = {k: v for k, v in os.environ.items() if k != "KGRDF_HOME"}
    served = subprocess.run(
        [sys.executable, "-m", "kgrdf", "mcp", "--kb", str(kg.path), "--audience", "owner", "--write"],
        input="\n".join(json.dumps(line) for line in lines) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    answer = json.loads(served.stdout.splitlines()[-1])["result"]
    said = answer["content"][0]["text"]
    assert answer["isError"] and "its owner adds it with an id of its own (kg org add NAME --id ID)" in said, said
    assert kg.snapshot() == before


def test_forget_refuses_what_is_not_a_person(kg):
    kg("add-entity", "repo/api", "--name", "api")
    assert "for people and actors" in kg("forget", "repo/api", expect=1).stderr
    assert "not known" in kg("forget", "person/nobody", expect=1).stderr


# --- retention ------------------------------------------------------------------------------------


def test_expire_deletes_person_facts_past_retention_from_the_journal_and_history(tmp_path, monkeypatch):
    from tests.conftest import Kg

    monkeypatch.setenv("KGRDF_NOW", "2025-01-01T09:00:00Z")  # recorded time never goes back: from the start
    kg = Kg(tmp_path / "kb")
    kg("init")
    kg("add-entity", "person/dana", "--name", "Dana Okafor")
    kg("add-entity", "repo/api", "--name", "api")
    old = _propose(kg, "person/dana", "reviews", "--object", "repo/api", "-s", "pr:1")
    kg("confirm", old["id"])
    monkeypatch.setenv("KGRDF_NOW", "2026-01-02T09:00:00Z")
    result = kg("expire")
    assert "deleted 1 person fact past retention" in result.stdout and "restarted" in result.stdout
    journal = journal_bytes(kg.path / "journal")
    assert old["id"].encode() not in journal
    assert b'H placeholder "forgotten"' in journal  # the propose and the confirm, kept as placeholders
    assert old["id"] not in _git(kg.path, "log", "-p", "--all")
    assert kg.json("lookup", "person/dana")["entity"]["name"] == "Dana Okafor"  # the person stays
    kg("validate")


def test_a_fact_observed_again_after_expire_counted_it_is_not_deleted(tmp_path, monkeypatch):
    """kg expire counts the facts past retention in its write, lets go of the folder, then deletes
    them: a write that got in between and observed one again (and said so, exit 0) lost it. The
    deletion takes them as they stand once it holds the folder."""
    from kgrdf import forget
    from kgrdf.kb import KnowledgeBase
    from tests.conftest import Kg

    monkeypatch.setenv("KGRDF_NOW", "2025-01-01T09:00:00Z")
    kg = Kg(tmp_path / "kb")
    kg("init")
    kg("add-entity", "person/dana", "--name", "Dana Okafor")
    kg("add-entity", "repo/api", "--name", "api")
    kg("add-entity", "repo/web", "--name", "web")
    again = _propose(kg, "person/dana", "reviews", "--object", "repo/api", "-s", "pr:1")
    gone = _propose(kg, "person/dana", "reviews", "--object", "repo/web", "-s", "pr:2")
    monkeypatch.setenv("KGRDF_NOW", "2026-01-02T09:00:00Z")
    base = KnowledgeBase.open(kg.path)
    with base.writing("expire") as writer:  # what kg expire counts, holding the folder
        counted = writer.past_retention(365, writer.now)
    assert sorted(iri.rpartition("/")[2] for iri in counted) == sorted(f["id"] for f in (again, gone))
    observed = _propose(kg, "person/dana", "reviews", "--object", "repo/api", "-s", "pr:3")
    assert observed["id"] == again["id"]
    assert forget.purge_past_retention(base, 365) == 1
    assert [f["id"] for f in kg.json("facts", "person/dana", "--all")["facts"]] == [again["id"]]
    kg("history", gone["id"], expect=1)
    kg("validate")


# --- the secret key -------------------------------------------------------------------------------


def test_the_first_write_makes_the_key_private_and_out_of_the_history(kg):
    key = kg.path / "secret.key"
    kg("add-entity", "repo/api", "--name", "api")
    assert len(key.read_bytes()) == 32 and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert "secret.key" not in _git(kg.path, "ls-files")


def test_a_broken_key_with_no_keyed_record_is_set_aside_and_made_again(kg):
    key = kg.path / "secret.key"
    kg("add-entity", "repo/api", "--name", "api")
    key.write_bytes(b"short")
    result = kg("add-entity", "repo/web", "--name", "web")
    assert "secret.key was 5 bytes, not a key of 32; set it aside as secret.key.aside-" in result.stderr
    assert len(key.read_bytes()) == 32
    [aside] = kg.path.glob("secret.key.aside-*")
    assert aside.read_bytes() == b"short" and "secret.key.aside" not in _git(kg.path, "ls-files")


@pytest.mark.parametrize("damage", ["missing", "broken"])
def test_keyed_records_without_their_key_refuse_what_needs_it_and_nothing_else(kg, tmp_path, damage):
    _people(kg, tmp_path)
    kg("forget", "person/sam")
    key = kg.path / "secret.key"
    saved = key.read_bytes()
    if damage == "missing":
        key.unlink()
    else:
        key.write_bytes(b"")
    for argv in (
        ["add-entity", "person/sam", "--name", "Sam Reyes"],
        ["add-entity", "person/lee", "--name", "Lee"],
        ["forget", "person/priya"],
    ):
        result = kg(*argv, expect=1)
        assert str(key) in result.stderr and "unmatchable" in result.stderr, argv
    assert kg.json("add-entity", "repo/web", "--name", "web")["outcome"] == "created"  # other writes go on
    assert not key.exists() if damage == "missing" else key.read_bytes() == b""  # never made anew
    key.write_bytes(saved)  # restored: the record matches again
    assert "was forgotten" in kg("add-entity", "person/sam", "--name", "Sam Reyes", expect=1).stderr
    assert kg.json("add-entity", "person/lee", "--name", "Lee")["outcome"] == "created"


def test_a_key_lost_for_good_is_left_behind_with_the_records_and_the_journal(kg, tmp_path):
    _people(kg, tmp_path)
    kg("forget", "person/sam")
    (kg.path / "secret.key").unlink()
    for name in ("forgotten.jsonl", "journal"):
        (kg.path / name).rename(tmp_path / f"{name}.aside")
    result = kg("add-entity", "person/sam", "--name", "Sam Reyes")  # a choice made knowingly
    assert "new journal" in result.stderr and len((kg.path / "secret.key").read_bytes()) == 32
    kg("validate")


# --- a forget cut short ---------------------------------------------------------------------------

FORGET_POINTS = [
    ("kgrdf.files:write_json", "after", "purging.json"),  # the plan recorded, nothing done
    ("kgrdf.purge:_rewrite_private_journal", "after", ""),  # the private journal rewritten
    ("kgrdf.purge:_drop_identifiers", "after", ""),  # the identifiers gone
    ("kgrdf.kb:KnowledgeBase.rebuild_index", "before", ""),  # the record kept, the old index
    ("kgrdf.kb:os.replace", "after", "index.old"),  # the old index moved aside, view.json not written
    ("kgrdf.purge:shutil.rmtree", "after", "/.git'"),  # the old history gone, no new one
    ("kgrdf.vcs:init", "after", ""),  # the old history gone, no commit yet
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "target, when, match",
    FORGET_POINTS,
    ids=[
        "plan recorded",
        "journal rewritten",
        "identifiers dropped",
        "before the index",
        "old index aside",
        "history removed",
        "history made again",
    ],
)
def test_a_forget_killed_at_any_step_is_finished_by_the_next_command(kg, tmp_path, target, when, match):
    facts = _people(kg, tmp_path)
    proc = _spawn(kg.path, "-c", KILL_AT, target, when, match, "forget", "person/sam")
    _out, err = _finish(proc)
    assert proc.returncode == -signal.SIGKILL, f"the kill point is gone from the library: {err}"
    read = kg("facts", "person/priya", "--all", "--json")  # a read finishes it first
    assert "finished a deletion cut short" in read.stderr
    assert {f["id"] for f in json.loads(read.stdout)["facts"]} == {facts["priya_member"]}
    assert not (kg.path / "purging.json").exists()
    _unpack_git(kg.path)
    assert _files_naming(kg.path, SAM) == []
    assert len((kg.path / "forgotten.jsonl").read_text().splitlines()) == 1
    # It said the history was restarted: it was, before any write of its own made one.
    assert "the history starts again here (records were deleted" in _git(kg.path, "log", "--format=%s")
    kg("validate")
    kg("propose", "repo/api", "caveat", "--value", "after", "-s", "pr:3")
    assert os.path.exists(kg.path / ".git") and "kg propose" in _git(kg.path, "log", "--format=%s")


def test_a_forget_where_git_is_missing_leaves_no_old_history_and_the_next_commit_starts_one(kg, tmp_path, monkeypatch):
    """Without git on the PATH, a forget said the history was restarted and left every old commit
    naming the person; following the advice kg gave once git was back restored their records."""
    _people(kg, tmp_path)
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    kg("forget", "person/sam")
    assert not (kg.path / ".git").exists()
    monkeypatch.setenv("PATH", path)
    assert _files_naming(kg.path, SAM) == []
    kg("validate")
    kg("propose", "repo/api", "caveat", "--value", "after", "-s", "pr:3")
    assert _git(kg.path, "log", "--format=%s").splitlines()[0].startswith("kg propose")


def test_a_forget_refuses_a_history_kept_out_of_the_folder_and_writes_nothing(kg, tmp_path):
    """A .git that is a link to a history elsewhere: the forget failed midway (rmtree on a link), and
    every command after it exited 3 with advice that did not help, the old commits kept."""
    _people(kg, tmp_path)
    elsewhere = tmp_path / "history"
    (kg.path / ".git").rename(elsewhere)
    (kg.path / ".git").symlink_to(elsewhere)
    before = kg.snapshot()
    line = one_line(kg("forget", "person/sam", expect=1))
    assert f"is a link to {elsewhere}" in line and f"mv {elsewhere} {kg.path / '.git'}" in line
    assert kg.snapshot() == before and not (kg.path / "purging.json").exists()
    kg("status")
    (kg.path / ".git").unlink()  # as the hint says
    elsewhere.rename(kg.path / ".git")
    kg("forget", "person/sam")
    _unpack_git(kg.path)
    assert _files_naming(kg.path, SAM) == []


def test_kg_tokens_list_after_a_forget_killed_midway_finishes_it_and_shows_no_token_of_theirs(kg, tmp_path):
    """A token reading for a conversation of the person is revoked by the forget: kg tokens list,
    which reads tokens.json alone, finishes a forget cut short first, as every command does."""
    _people(kg, tmp_path)
    kg("tokens", "add", "sambot", "--perspective", "main", "--audience", "dm:sam,owner")
    kg("tokens", "add", "ops", "--perspective", "main", "--audience", "owner")
    proc = _spawn(kg.path, "-c", KILL_AT, *FORGET_POINTS[0], "forget", "person/sam")
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    listed = kg("tokens", "list", "--json")
    assert "finished a deletion cut short" in listed.stderr
    assert [t["name"] for t in json.loads(listed.stdout)["tokens"]] == ["ops"]
    assert not (kg.path / "purging.json").exists()


def test_kg_serve_after_a_forget_killed_midway_finishes_it_and_answers(kg, tmp_path):
    """A server started on a folder with a forget cut short finishes it at its first request, as
    every command does, and answers: its index is the one the forget made, not the one it replaced
    (every request failed, with the old index's files gone under it)."""
    from .serving import Server

    facts = _people(kg, tmp_path)
    secret = kg.json("tokens", "add", "ops", "--perspective", "main", "--audience", "owner")["secret"]
    proc = _spawn(kg.path, "-c", KILL_AT, *FORGET_POINTS[0], "forget", "person/sam")
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    server = Server(kg.path)
    try:
        for _ in range(2):
            status, text = server.request("/api/facts?subject=person/priya", secret)
            assert status == 200, text
            assert {f["id"] for f in json.loads(text)["facts"]} == {facts["priya_member"]}
        status, text = server.request("/api/search?text=Sammy", secret)
        assert status == 200 and json.loads(text)["results"] == [], text
    finally:
        server.stop()
    assert "Traceback" not in server.process.stderr.read().decode()
    assert not (kg.path / "purging.json").exists()
    _unpack_git(kg.path)
    assert _files_naming(kg.path, SAM) == []


def test_a_token_a_forget_cut_short_revokes_opens_nothing_on_the_request_that_finishes_it(kg, tmp_path):
    """The request's token was looked up before its call finished the forget that revokes it: it
    then read, and wrote, as the person's conversation (a 404 naming Sam's alias; a fact heard in
    dm:sam,owner, which no forget could then find). The call asks again once it holds the folder."""
    from .serving import Server

    _people(kg, tmp_path)
    theirs = kg.json("tokens", "add", "sambot", "--perspective", "main", "--audience", "dm:sam,owner", "--write")
    before = kg.json("facts", "repo/api", "--all")["facts"]
    for route, body in [
        ("propose", {"subject": "repo/api", "predicate": "caveat", "value": "slow on mondays", "sources": ["pr:9"]}),
        ("lookup", None),
    ]:
        proc = _spawn(kg.path, "-c", KILL_AT, *FORGET_POINTS[0], "forget", "person/sam")
        _finish(proc)
        assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
        server = Server(kg.path)
        try:
            if body is None:
                status, text = server.request("/api/lookup?entity=repo/api", theirs["secret"])
            else:
                status, text = server.request(
                    f"/api/{route}", theirs["secret"], json.dumps(body).encode(), "application/json"
                )
            assert status == 401, text
            assert json.loads(text)["error"] == "unauthorized"
        finally:
            server.stop()
        assert not (kg.path / "purging.json").exists()
        assert kg.json("facts", "repo/api", "--all")["facts"] == before
        kg("add-entity", "person/sam", "--name", "Sam Reyes", "--allow-forgotten")  # (back for the next round)
        theirs = kg.json("tokens", "add", "sambot", "--perspective", "main", "--audience", "dm:sam,owner", "--write")


@pytest.mark.slow
@pytest.mark.parametrize("target, when, match", FORGET_POINTS, ids=[p[0].rpartition(":")[2] for p in FORGET_POINTS])
def test_kg_status_after_a_forget_killed_midway_finishes_it_and_never_calls_the_journal_damaged(
    kg, tmp_path, target, when, match
):
    """kg status read the journal the forget was rewriting against view.json, and answered exit 3:
    "changed after it was written ... move journal/ aside", advice that would have set the journal
    aside. It finishes the deletion first, as every command does."""
    _people(kg, tmp_path)
    proc = _spawn(kg.path, "-c", KILL_AT, target, when, match, "forget", "person/sam")
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    status = kg("status", "--json")
    assert "finished a deletion cut short" in status.stderr
    assert json.loads(status.stdout)["index"]["behind"] == 0
    assert not (kg.path / "purging.json").exists()
    _unpack_git(kg.path)
    assert _files_naming(kg.path, SAM) == []
    kg("validate")


# --- one matcher: what names a person, for routing and for forget ----------------------------------


def _decoded(path: Path, stream: str | None = None) -> str:
    """The terms of every journal row, decoded (a newline in a literal is a newline here), of the
    private journal ("local"), the replica's ("shared") or both."""
    from pyoxigraph import RdfFormat, parse

    kb = KnowledgeBase.open(path)
    streams = {"local": [kb.journal.local], "shared": [kb.journal.shared], None: [kb.journal.local, kb.journal.shared]}
    terms = []
    for journal in streams[stream]:
        for segment in journal.files():
            for row in patch_bytes(segment).decode("utf-8").split("\n"):
                if row.startswith(("A ", "D ")):
                    for quad in parse(input=(row[2:] + "\n").encode("utf-8"), format=RdfFormat.N_QUADS):
                        terms += [quad.subject.value, quad.object.value]
    return "\n".join(terms)


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@pytest.mark.slow
def test_forget_takes_the_id_exactly_and_the_names_in_any_case_form_and_separators_and_no_one_else(kg):
    kg("add-entity", "person/sam", "--name", "Samantha Quixley", "--alias", "Sam Q")
    kg("add-entity", "person/sam.lee", "--name", "Sam Lee", "--alias", "Sam L")
    kg("add-entity", "person/samantha", "--name", "Samantha Quinn")
    kg("add-entity", "person/samuel", "--name", "Samuel Quixley")
    kg("add-entity", "team/web", "--name", "Web team")
    kg("add-entity", "process/release", "--name", "Release process")
    theirs = [_propose(kg, "person/sam", "member_of", "--object", "team/web", "-s", "profile:hr")["id"]]
    for text in [
        "ping Samantha\nQuixley",
        "ask Samantha-Quixley",
        "SAMANTHA  QUIXLEY signs",
        "ｓａｍａｎｔｈａ\tＱｕｉｘｌｅｙ",
        "(samantha_quixley)",
        "see person/sam.",
        "sam q, again",
    ]:
        theirs.append(_propose(kg, "process/release", "rule", "--value", text, "-s", "memory:n")["id"])
    others = {}
    for person in ("person/sam.lee", "person/samantha", "person/samuel"):
        others[person] = _propose(kg, person, "member_of", "--object", "team/web", "-s", "profile:hr")["id"]
    kept = {
        _propose(kg, "process/release", "rule", "--value", text, "-s", "memory:n")["id"]: text
        for text in [
            "ask Sam Lee",
            "Samantha Quinn signs",
            "Samuel Quixley too",
            "Samuel, Sam and Samantha",
            "see person/sam.lee",
            "quixley samantha",
        ]
    }

    assert kg.json("forget", "person/sam", "--dry-run")["facts"] == len(theirs)
    result = kg.json("forget", "person/sam")
    assert result["facts"] == len(theirs) and result["remaining"] == []
    journal = _folded(_decoded(kg.path))
    assert not re.search(r"samantha[\W_]+quixley|\bsam[\W_]+q\b|person/sam(?![.\w])", journal)
    assert all(fact not in journal for fact in theirs)
    for person, fact in others.items():
        assert [f["id"] for f in kg.json("facts", person)["facts"]] == [fact], person
    rules = {f["id"]: f["value"] for f in kg.json("facts", "process/release", "--all")["facts"]}
    assert rules == kept
    kg("lookup", "person/sam", expect=1)
    assert kg.json("lookup", "Sam L")["entity"]["id"] == "person/sam.lee"
    kg("validate")


def test_a_name_inside_another_persons_longer_name_names_the_other(kg):
    """The alias "Sam" is a word of "Sam Lee": the longer name wins, as when a write routes, so
    forgetting person/sam leaves Sam Lee, their name and what names only them as they were."""
    kg("add-entity", "person/sam", "--name", "Samantha Quixley", "--alias", "Sam")
    kg("add-entity", "person/sam.lee", "--name", "Sam Lee", "--alias", "Lee")
    kg("add-entity", "process/release", "--name", "Release process")
    gone = _propose(kg, "process/release", "rule", "--value", "ask Sam, then Sam Lee", "-s", "memory:n")["id"]
    kept = _propose(kg, "process/release", "rule", "--value", "ask SAM-LEE first", "-s", "memory:n")["id"]
    lee = _propose(kg, "person/sam.lee", "title", "--value", "Release manager", "-s", "profile:hr")["id"]

    result = kg.json("forget", "person/sam")
    assert result["facts"] == 1 and result["remaining"] == []
    assert kg.json("lookup", "Sam Lee")["entity"] == {**kg.json("lookup", "person/sam.lee")["entity"]}
    assert kg.json("lookup", "person/sam.lee")["entity"]["name"] == "Sam Lee"
    rules = [f["id"] for f in kg.json("facts", "process/release", "--all")["facts"]]
    assert rules == [kept] and gone not in rules
    assert [f["id"] for f in kg.json("facts", "person/sam.lee")["facts"]] == [lee]
    kg("validate")


def test_a_weak_alias_routes_as_it_forgets_and_a_shared_name_stays_with_the_other_person(kg):
    """Routing and forget read one set of names, weak aliases included; two people who share a
    name keep theirs: forgetting one never renames the other."""
    kg("add-entity", "person/kim", "--name", "Kim Park", "--weak-alias", "kp99")
    kg("add-entity", "person/kim.p", "--name", "Kim Park", "--alias", "KP")
    kg("add-entity", "repo/w", "--name", "W")
    weak = _propose(kg, "repo/w", "caveat", "--value", "kp99 knows the build", "-s", "doc:r3")["id"]
    other = _propose(kg, "person/kim.p", "title", "--value", "Build lead", "-s", "profile:hr")["id"]
    shared = next((kg.path / "journal").glob("r-*"))
    assert weak.encode() not in journal_bytes(shared)

    result = kg.json("forget", "person/kim")
    assert result["remaining"] == []
    assert weak not in [f["id"] for f in kg.json("facts", "repo/w", "--all")["facts"]]
    assert kg.json("lookup", "person/kim.p")["entity"]["name"] == "Kim Park"
    assert [f["id"] for f in kg.json("facts", "KP")["facts"]] == [other]
    kg("validate")


def test_every_text_that_names_a_person_goes_to_the_private_journal_and_forget_takes_it(kg):
    kg("add-entity", "person/sam", "--name", "Samantha Quixley", "--alias", "Sam Q")
    kg("add-entity", "person/samuel", "--name", "Samuel Park")
    kg("identifiers", "add", "person/sam", "chat", "U0SAMCHAT")
    kg("add-entity", "service/db", "--name", "db", "--summary", "owned by Samantha Quixley")
    kg("add-entity", "team/qx", "--name", "SAMANTHA  QUIXLEY's team")
    kg("add-entity", "repo/api", "--name", "api", "--alias", "Samantha-Quixley api", "--weak-alias", "sam q's thing")
    kg("add-entity", "process/release", "--name", "Release process", "--summary", "run by Samuel")
    private = {
        "value": _propose(kg, "process/release", "rule", "--value", "ping Samantha\nQuixley", "-s", "memory:n"),
        "identifier": _propose(kg, "process/release", "rule", "--value", "ask <@U0SAMCHAT> first", "-s", "memory:n"),
        "source": _propose(kg, "repo/api", "caveat", "--value", "flaky tests", "-s", "slack:thread with sam q"),
        "span": _propose(
            kg,
            "repo/api",
            "caveat",
            "--value",
            "slow build",
            "-s",
            "slack:p1",
            "--extracted",
            "--span",
            "Samantha-Quixley says the build is slow",
        ),
        "message": _propose(
            kg, "repo/api", "caveat", "--value", "no docs", "-s", "slack:p2", "--message", "from <@u0samchat>"
        ),
        # a channel named after them: the audience is a text forget reads too
        "audience": _propose(
            kg, "repo/api", "caveat", "--value", "no tests", "-s", "slack:p4", "--audience", "channel:samantha-quixley"
        ),
    }
    shared = {"plain": _propose(kg, "repo/api", "caveat", "--value", "asked Samuel", "-s", "slack:p3")}
    local, replica = _decoded(kg.path, "local"), _decoded(kg.path, "shared")
    for text in [
        "owned by Samantha Quixley",
        "SAMANTHA QUIXLEY's team",
        "Samantha-Quixley api",
        "sam q's thing",
        "thread with sam q",
        "Samantha-Quixley says the build is slow",
        "from <@u0samchat>",
        "channel:samantha-quixley",
    ]:
        assert text in local and text not in replica, text
    for fact in private.values():
        assert fact["id"] in local and fact["id"] not in replica
    assert shared["plain"]["id"] in replica and "run by Samuel" in replica and "Release process" in replica

    assert kg.json("forget", "person/sam")["facts"] == len(private)
    everything = _decoded(kg.path).casefold()
    assert "quixley" not in everything and "u0samchat" not in everything and "sam q" not in everything
    # Another entity's text that named them: an alias or a summary goes, a name becomes the id.
    db = kg.json("lookup", "service/db")["entity"]
    assert db["name"] == "db" and "summary" not in db
    assert kg.json("lookup", "team/qx")["entity"]["name"] == "team/qx"
    api = kg.json("lookup", "repo/api")
    assert api["entity"]["aliases"] == [] and api["entity"]["weak_aliases"] == []
    assert [f["id"] for f in api["facts"]] == [shared["plain"]["id"]]
    assert kg.json("lookup", "process/release")["entity"]["summary"] == "run by Samuel"
    kg("validate")


@pytest.mark.parametrize("conversation", ["dm:bo,person/qux", "dm:bo,qux", "dm:ＱＵＸ,bo"])
def test_a_fact_heard_in_a_private_conversation_with_a_person_is_private_and_forget_takes_that_hearing(
    kg, conversation
):
    """A hearing's audience names its people: a dm with a person sends the fact's lines to the
    private journal, so the shared journal never names them and forget is not refused; a shared
    fact heard again in that dm keeps its other hearing and loses theirs, whether the dm lists them
    by id or by the handle their id ends in (as the README's dm:jo,dana)."""
    kg("add-entity", "person/qux", "--name", "Quinta Xavier")
    kg("add-entity", "repo/api", "--name", "api")
    only_dm = _propose(
        kg, "repo/api", "caveat", "--value", "flaky on mondays", "-s", "slack:d1", "--audience", "DM:person/qux,bo"
    )
    shared = _propose(kg, "repo/api", "caveat", "--value", "slow on fridays", "-s", "slack:d2", "--audience", "public")
    again = _propose(
        kg, "repo/api", "caveat", "--value", "slow on fridays", "-s", "slack:d3", "--audience", conversation
    )
    assert again["id"] == shared["id"] and again["outcome"] == "observed"
    # private by where it was heard, not personal: what it says names nobody (it may still confirm itself)
    assert only_dm["sensitivity"] == again["sensitivity"] == "internal"
    assert "qux" not in _decoded(kg.path, "shared") and "person/qux" in _decoded(kg.path, "local")
    assert only_dm["id"] in _decoded(kg.path, "local") and only_dm["id"] not in _decoded(kg.path, "shared")
    done = kg.json("forget", "person/qux")
    assert done["facts"] == 1
    assert _files_naming(kg.path, ["qux", "person/qux", "quinta"]) == []
    kept = kg.json("lookup", "repo/api")["facts"]
    # the conversation's hearing stays, without them: an audience narrower than it was
    assert [f["id"] for f in kept] == [shared["id"]] and set(kept[0]["audiences"]) == {"public", "dm:bo"}
    kg("validate")


def test_a_conversation_that_lists_a_person_by_their_handle_is_theirs_and_forget_takes_them_from_it(kg):
    """dm:jo,dora names Dora by the handle her id ends in (person/dora), as the README's example
    (dm:jo,dora) does: the fact heard there is private, and forget takes her from the hearing, the disclosure
    told there and the token reading for it, where it left all three whole."""
    kg("add-entity", "person/dora", "--name", "Dora Okafor")
    kg("org", "add", "Texture")
    fact = _propose(kg, "Texture", "industry", "--value", "energy", "-s", "slack:p12", "--audience", "dm:jo,dora")
    kg("disclose", fact["id"], "--message", "slack:r3", "--audience", "dm:dora", "--by", "sales-bot")
    kg("tokens", "add", "dbot", "--perspective", "main", "--audience", "dm:dora")
    assert "dm:dora" not in _decoded(kg.path, "shared")
    planned = kg.json("forget", "person/dora", "--dry-run")
    assert planned["tokens"] == 1 and planned["token_names"] == ["dbot"]
    assert planned["facts"] == 1  # heard in her conversation alone, it is hers to take (as a dm named by her name)
    kg("forget", "person/dora")
    assert _files_naming(kg.path, ["dora", "person/dora", "okafor"]) == []
    assert kg.json("facts", "Texture", "--all")["facts"] == []
    assert kg.json("tokens", "list")["tokens"] == []
    kg("validate")


@pytest.mark.parametrize(
    "hidden",
    # format characters, and the marks and letters past them that show as nothing: the combining
    # grapheme joiner, a variation selector, a Khmer inherent vowel, a Mongolian variation
    # selector, a Hangul filler and a variation selector of the supplement
    [
        *("\u00ad", "\u200b", "\u200d", "\u2060", "\ufeff", "\u034f", "\ufe0f", "\u17b4", "\u180b", "\u3164"),
        *("\U000e0100", "\u2065", "\ufff0"),  # (the last two not assigned yet)
    ],
)
def test_a_name_with_a_character_that_shows_as_nothing_inside_is_still_the_name(kg, hidden):
    """'Quix<soft hyphen>ley' reads as Quixley: routed to the private journal, and forgotten."""
    kg("add-entity", "person/zq", "--name", "Zoe Quixley", "--alias", "Quixbert")
    kg("add-entity", "process/release", "--name", "Release process")
    kg("add-entity", "repo/web", "--name", "web")
    kept = _propose(kg, "repo/web", "caveat", "--value", "Quix and bert are two words", "-s", "doc:k")
    for value in (f"ask Zoe Qui{hidden}xley", f"ask Quix{hidden}bert", f"ZOE {hidden}QUIXLEY signs off"):
        made = _propose(kg, "process/release", "caveat", "--value", value, "-s", "doc:a")
        assert made["sensitivity"] == "personal", value
    assert "quix" not in _folded(_decoded(kg.path, "shared")).replace("quix and bert", "")
    kg("forget", "person/zq")
    assert kg.json("facts", "process/release")["facts"] == []
    assert [f["id"] for f in kg.json("facts", "repo/web")["facts"]] == [kept["id"]]
    assert _files_naming(kg.path, ["quixley", "quixbert", "person/zq"]) == []


def test_a_person_is_forgotten_by_every_name_they_went_by_not_only_the_last(kg):
    """Renamed twice, Vera is forgotten by her first and second names too: the facts written while
    she went by them name her, and forget took them out of nothing. A name she left that another
    person goes by now stays with that person."""
    kg("add-entity", "person/vera", "--name", "Vera Lindqvist")
    kg("add-entity", "process/release", "--name", "Release process")
    kg("add-entity", "repo/web", "--name", "web")
    first = _propose(kg, "process/release", "caveat", "--value", "Vera Lindqvist signs off", "-s", "doc:a")
    kg("add-entity", "person/vera", "--name", "Vera Okonkwo-Berg")
    second = _propose(kg, "repo/web", "caveat", "--value", "ask vera okonkwo berg first", "-s", "doc:b")
    kg("add-entity", "person/vera", "--name", "Kim Tanaka")  # a name she left, now Kim's:
    kg("add-entity", "person/vera", "--name", "Vera Holm")
    kg("add-entity", "person/kim", "--name", "Kim Tanaka")
    kims = _propose(kg, "repo/web", "caveat", "--value", "Kim Tanaka owns the deploy", "-s", "doc:c")
    kg("add-entity", "person/vera", "--name", "Vera H.")
    planned = kg.json("forget", "person/vera", "--dry-run")
    assert {g["id"] for g in planned["going"]} == {first["id"], second["id"]}
    kg("forget", "person/vera")
    assert kg.json("facts", "process/release", "--all")["facts"] == []
    assert [f["id"] for f in kg.json("facts", "repo/web", "--all")["facts"]] == [kims["id"]]
    assert _files_naming(kg.path, ["lindqvist", "okonkwo", "okonkwo-berg", "person/vera", "vera"]) == []
    kg("validate")


def test_a_forget_that_would_leave_a_trace_does_not_exit_0(kg):
    kg("add-entity", "person/sam", "--name", "Samantha Quixley")
    (kg.path / "notes.txt").write_text("call Samantha\nQuixley\n")  # not kgrdf's: it cannot be rewritten
    result = kg("forget", "person/sam", expect=3)
    assert result.stderr.count("\n") == 1 and "notes.txt" in result.stderr
    assert "Quixley" not in result.stderr and "Traceback" not in result.stderr
    assert "Quixley" not in _decoded(kg.path)  # what kgrdf keeps is forgotten all the same


def test_a_shared_fact_that_came_to_name_a_person_keeps_its_shared_records_and_loses_theirs(kg):
    """A fact first heard where it may be shared, then heard from the person, with a source, a
    message and reasons naming them: those later records went to the private journal, and forget
    takes them out (a speaker's row goes, a text becomes "[forgotten]") and keeps the fact."""
    kg("add-entity", "person/sam", "--name", "Samantha Quixley")
    kg("add-entity", "repo/api", "--name", "api")
    fact = _propose(kg, "repo/api", "caveat", "--value", "flaky tests", "-s", "pr:1")["id"]
    kg(
        "propose",
        "repo/api",
        "caveat",
        "--value",
        "flaky tests",
        "-s",
        "slack:said by samantha quixley",
        "--said-by",
        "person/sam",
        "--message",
        "m-77",
    )
    kg("confirm", fact, "--reason", "Samantha-Quixley checked it")
    shared_before = _decoded(kg.path, "shared")
    assert "samantha quixley" in _decoded(kg.path, "local") and "samantha quixley" not in shared_before

    result = kg.json("forget", "person/sam")
    assert result["remaining"] == [] and result["redacted"] == 1
    assert _decoded(kg.path, "shared") == shared_before  # the shared journal is never rewritten
    journal = _folded(_decoded(kg.path))
    assert "samantha" not in journal and "person/sam>" not in journal
    kept = kg.json("facts", "repo/api")["facts"]
    assert [f["id"] for f in kept] == [fact] and kept[0]["status"] == "confirmed"
    assert sorted(s["ref"] for s in kept[0]["sources"]) == ["1", "[forgotten]"]
    assert "said_by" not in kept[0]
    kg("validate")


def test_a_shared_record_that_names_a_person_makes_forget_refuse_naming_the_fact(kg):
    kg("add-entity", "repo/api", "--name", "api")
    fact = _propose(kg, "repo/api", "caveat", "--value", "ask Samantha Quixley", "-s", "pr:1")["id"]
    kg("add-entity", "person/sam", "--name", "Samantha Quixley")  # known only after the text was shared
    before = kg.snapshot()
    result = kg("forget", "person/sam", expect=1)
    assert fact in result.stderr and "never rewritten" in result.stderr and kg.snapshot() == before


# --- a forget cut short while the index is rebuilt never breaks a read ----------------------------

REBUILD_POINTS = [  # each with the read that comes next
    ("kgrdf.kb:os.unlink", "after", ".sst", ["stats"]),  # old index half removed
    ("kgrdf.store.oxigraph:OxigraphBackend.replace_all", "before", "", ["lookup", "Priya"]),  # a new index, empty
    ("kgrdf.store.oxigraph:OxigraphBackend.replace_all", "after", "", ["validate"]),  # rebuilt, no view
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "target, when, match, read", REBUILD_POINTS, ids=["old index half removed", "new index empty", "new index full"]
)
def test_a_forget_killed_while_the_index_is_rebuilt_never_breaks_a_read(kg, tmp_path, target, when, match, read):
    facts = _people(kg, tmp_path)
    proc = _spawn(kg.path, "-c", KILL_AT, target, when, match, "forget", "person/sam")
    _finish(proc)
    assert proc.returncode == -signal.SIGKILL, "the kill point is gone from the library"
    result = kg(*read)  # exit 0, no traceback: the read finishes the forget first
    assert "finished a deletion cut short" in result.stderr and "Traceback" not in result.stderr
    assert {f["id"] for f in kg.json("facts", "person/priya", "--all")["facts"]} == {facts["priya_member"]}
    assert kg.json("stats")["fact_count"] == 2 and not (kg.path / "purging.json").exists()
    _unpack_git(kg.path)
    assert _files_naming(kg.path, SAM) == []
    assert "clean" in kg("validate").stdout


HOLD_OPEN = (
    "import sys, time, pyoxigraph; store = pyoxigraph.Store(sys.argv[1]); print('open', flush=True); time.sleep(60)"
)


def test_an_index_that_does_not_open_is_rebuilt_by_a_read_and_a_locked_one_is_exit_3(kg):
    kg("add-entity", "repo/api", "--name", "api")
    (kg.path / "index" / "CURRENT").write_text("garbage\n")  # a store that says it is corrupt
    result = kg("lookup", "api")
    assert "rebuilding it from the journal" in result.stderr and "api" in result.stdout
    before = kg.snapshot()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_OPEN, str(kg.path / "index")], stdout=subprocess.PIPE, text=True
    )  # another process keeps the index open for writing
    try:
        assert holder.stdout.readline() == "open\n"
        refused = kg("add-entity", "repo/web", "--name", "web", expect=3)
        assert refused.stderr.count("\n") == 1 and "cannot open the index" in refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        holder.kill()
        holder.wait()
    assert kg.snapshot() == before
    assert kg.json("add-entity", "repo/web", "--name", "web")["outcome"] == "created"


# --- the property: forget finds a person wherever a text names them, and no one else ---------------

FIRSTS, LASTS = ["Samantha", "Zoë", "Renée"], ["Quixley", "Ångström", "Ó Briain"]
SEPARATORS = [" ", "  ", "-", "_", ".", " - "]  # also in source refs, which refuse control characters
CONTROL_SEPARATORS = ["\n", "\t", "\r\n"]  # where a text may hold them
CASES = [str, str.upper, str.lower, str.title]
FORMS = ["NFC", "NFD", "NFKD", "fullwidth"]
WRAPS = [("", ""), ("(", ")"), ("", "'s"), ("«", "»"), ("@", ","), ("", "!")]
PLACES = [
    "value",
    "source",
    "quote",
    "summary",
    "alias",
    "weak alias",
    "name",
    "span",
    "message",
    "identifier",
    "id",
    "claim",
]


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@st.composite
def _namings(draw, words: list[str], controls: bool):
    """The person's name or alias as a text may write it."""
    separators = SEPARATORS + (CONTROL_SEPARATORS if controls else [])
    text = draw(st.sampled_from(separators)).join(words)
    text = draw(st.sampled_from(CASES))(text)
    form = draw(st.sampled_from(FORMS))
    text = _fullwidth(text) if form == "fullwidth" else unicodedata.normalize(form, text)
    before, after = draw(st.sampled_from(WRAPS))
    return before + text + after


def _trace(root: Path, first: str, last: str) -> list[str]:
    """Every file under root (git objects decompressed, packs unpacked, the index's files) holding the
    person's name or alias with any separators, in any case and Unicode form, their id as a whole
    token or their chat id: read as text with JSON and N-Quads escapes undone. (The index's files
    are compressed: another's "Sam Lee" kept as the literal "sam " then an offset byte 0x71 reads
    "sam q", so the person's alias here is not that short.)"""
    gap = r"[\s\-_.]+"  # what SEPARATORS hold, folded (not any byte of a binary file)
    name = gap.join(re.escape(_folded(w)) for w in f"{first} {last}".split())
    pattern = re.compile(
        rf"(?<![^\W_]){name}(?![^\W_])|(?<![^\W_])sunny{gap}vale(?![^\W_])"
        r"|person/sam(?![^\W_]|[-.@+_][^\W_])|u0samchat"
    )
    found = []
    for path, data in _file_bytes(root):
        text = data.decode("utf-8", errors="ignore")
        text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
        text = re.sub(r"\\[ntr\"\\]", " ", text)
        folded = _folded(text)
        match = pattern.search(folded)
        if match:
            found.append(f"{path.relative_to(root)}: {folded[max(0, match.start() - 30) : match.end() + 10]!r}")
    return found


@pytest.mark.slow
def test_property_forget_finds_the_person_in_every_place_and_keeps_everyone_else(tmp_path_factory):
    from hypothesis import HealthCheck, Phase, given, settings

    tried = []

    @settings(
        max_examples=6,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
    )  # each case is a knowledge base: no shrinking
    @given(
        first=st.sampled_from(FIRSTS),
        last=st.sampled_from(LASTS),
        data=st.data(),
        places=st.lists(st.sampled_from(PLACES), min_size=1, max_size=5, unique=True),
    )
    def run(first, last, data, places):
        tried.append(places)
        kg = Kg(tmp_path_factory.mktemp("prop") / "kb")
        kg("init")
        name = f"{first} {last}"
        kg("add-entity", "person/sam", "--name", name, "--alias", "Sunny Vale", "--weak-alias", "the quiet one")
        others = {"person/sam.lee": "Sam Lee", "person/samantha": f"{first} Quinn", "person/samuel": f"Samuel {last}"}
        for person, other in others.items():
            kg("add-entity", person, "--name", other)
        kg("identifiers", "add", "person/sam", "chat", "U0SAMCHAT")
        for entity, label in [("team/web", "Web team"), ("process/release", "Release process"), ("repo/api", "api")]:
            kg("add-entity", entity, "--name", label)
        kg("org", "add", "Acme")
        member = {
            p: _propose(kg, p, "member_of", "--object", "team/web", "-s", "profile:hr")["id"]
            for p in ["person/sam", *others]
        }
        kept = {}
        for person, other in others.items():
            kept[
                _propose(kg, "process/release", "rule", "--value", f"ask {other} or {person}", "-s", "memory:n")["id"]
            ] = f"ask {other} or {person}"

        def named(controls=True):
            words = data.draw(st.sampled_from([name.split(), ["Sunny", "Vale"]]))
            return data.draw(_namings(words, controls))

        for n, place in enumerate(places):
            if place == "value":
                _propose(kg, "process/release", "rule", "--value", f"ping {named()} first", "-s", "memory:n")
            elif place == "source":
                _propose(kg, "repo/api", "caveat", "--value", f"v{n}", "-s", f"slack:thread with {named(False)}")
            elif place == "quote":
                quote = f"{named(False)} reviews api"
                transcript = kg.path.parent / "session.jsonl"
                transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": quote}}))
                _propose(
                    kg,
                    "repo/api",
                    "caveat",
                    "--value",
                    f"q{n}",
                    "--from-user",
                    "--quote",
                    quote,
                    "--transcript",
                    transcript,
                )
            elif place in ("summary", "alias", "weak alias", "name"):
                option = {"summary": "--summary", "alias": "--alias", "weak alias": "--weak-alias", "name": "--name"}
                # (each its own text: a name and another entity's alias that fold alike are refused)
                kg("add-entity", f"service/s{n}", "--name", f"s{n}", option[place], f"s{n} run by {named()}")
            elif place == "span":
                _propose(
                    kg,
                    "repo/api",
                    "caveat",
                    "--value",
                    f"e{n}",
                    "-s",
                    "slack:p",
                    "--extracted",
                    "--span",
                    f"{named()} said so",
                )
            elif place == "message":
                _propose(
                    kg,
                    "repo/api",
                    "caveat",
                    "--value",
                    f"m{n}",
                    "-s",
                    "slack:p",
                    "--message",
                    f"dm with {named(False)}",
                )
            elif place == "identifier":
                chat = data.draw(st.sampled_from(["U0SAMCHAT", "u0samchat", "<@U0SAMCHAT>"]))
                _propose(kg, "process/release", "rule", "--value", f"ping {chat}", "-s", "memory:n")
            elif place == "id":
                end = data.draw(st.sampled_from(["", ".", ","]))
                _propose(kg, "process/release", "rule", "--value", f"see person/sam{end}", "-s", "memory:n")
            else:
                kg(
                    "org",
                    "affiliate",
                    "Acme",
                    "--claimed-name",
                    named(False),
                    "--said-by",
                    "person/samuel",
                    "--message",
                    f"slack:c{n}",
                )

        result = kg.json("forget", "person/sam")
        assert result["remaining"] == []
        _unpack_git(kg.path)
        assert _trace(kg.path, first, last) == [], places
        for person, other in others.items():
            assert kg.json("lookup", person)["entity"]["name"] == other
            assert member[person] in {f["id"] for f in kg.json("facts", person)["facts"]}
        rules = {f["id"]: f["value"] for f in kg.json("facts", "process/release", "--all")["facts"]}
        assert rules == kept
        for n, place in enumerate(places):
            if place in ("summary", "alias", "weak alias", "name"):
                service = kg.json("lookup", f"service/s{n}")["entity"]
                assert service["name"] == (f"service/s{n}" if place == "name" else f"s{n}")
                assert service["aliases"] == service["weak_aliases"] == [] and "summary" not in service
        assert "clean" in kg("validate").stdout

    run()
    print(f"forget property: {len(tried)} cases tried, places {sorted({p for ps in tried for p in ps})}")
    assert len(tried) >= 6


def test_a_new_journal_started_from_the_index_routes_by_the_same_matcher(kg, tmp_path):
    kg("add-entity", "person/sam", "--name", "Samantha Quixley")
    kg("add-entity", "service/db", "--name", "db", "--summary", "owned by SAMANTHA-QUIXLEY")
    kg("add-entity", "repo/api", "--name", "api", "--summary", "owned by Samuel")
    (kg.path / "journal").rename(tmp_path / "journal.aside")  # the way out of a damaged journal
    assert "new journal" in kg("add-entity", "repo/web", "--name", "web").stderr
    local, replica = _decoded(kg.path, "local"), _decoded(kg.path, "shared")
    assert "owned by SAMANTHA-QUIXLEY" in local and "owned by SAMANTHA-QUIXLEY" not in replica
    assert "owned by Samuel" in replica
    assert kg.json("forget", "person/sam")["remaining"] == []
    assert "summary" not in kg.json("lookup", "service/db")["entity"]
    kg("validate")


def test_forget_deletes_a_git_history_moved_aside_which_holds_every_record(kg):
    """The way out of a history git cannot read (README: mv .git .git.aside) keeps the old commits,
    and with them the person's records: forget takes it away, and its last check agrees."""
    kg("add-entity", "person/quinn", "--name", "Quinn Albrecht", "--alias", "Quinn")
    kg("add-entity", "repo/api", "--name", "api")
    _propose(kg, "Quinn", "reviews", "--object", "api", "-s", "slack:p1")
    (kg.path / ".git" / "HEAD").write_text("garbage\n")
    kg("add-entity", "repo/web", "--name", "web", expect=3)
    (kg.path / ".git").rename(kg.path / ".git.aside")
    kg("add-entity", "repo/web", "--name", "web")
    result = kg.json("forget", "person/quinn")
    assert result["remaining"] == [] and not (kg.path / ".git.aside").exists()
    _unpack_git(kg.path)
    assert _files_naming(kg.path, ["Quinn Albrecht", "Quinn", "person/quinn"]) == []


def test_forget_says_before_and_after_which_other_entities_lose_a_name_naming_them(kg):
    """A weak alias as common as "deploy" takes other entities' names, aliases and summaries with
    it: the dry run and the forget said nothing of them (0 facts)."""
    kg("add-entity", "person/max", "--name", "Max Held", "--alias", "Max", "--weak-alias", "deploy")
    kg("add-entity", "process/deploy", "--name", "Deploy process", "--alias", "deploy-flow")
    kg("add-entity", "repo/api", "--name", "api", "--summary", "what we deploy")
    kg("add-entity", "repo/web", "--name", "web", "--summary", "the site")
    before = kg.snapshot()
    dry = kg.json("forget", "person/max", "--dry-run")
    assert (dry["facts"], dry["others"]) == (0, ["process/deploy", "repo/api"])
    assert "2 other entities named them" in kg("forget", "person/max", "--dry-run").stdout
    assert kg.snapshot() == before
    done = kg("forget", "person/max")
    assert "which went (a name becomes the entity's id): process/deploy, repo/api" in done.stdout
    assert kg.json("lookup", "process/deploy")["entity"]["name"] == "process/deploy"
    assert kg.json("lookup", "repo/web")["entity"]["summary"] == "the site"


def test_a_name_that_becomes_the_id_never_repeats_an_alias(kg):
    """An entity whose alias (or weak alias) is its own id, named after the person: its name became
    that id, which the alias then repeated, and kg validate failed after a forget that exited 0."""
    kg("add-entity", "person/zed", "--name", "Zed Quux")
    kg("add-entity", "process/onboard", "--name", "Zed Quux onboarding", "--alias", "process/onboard", "--alias", "Onb")
    kg("add-entity", "process/intake", "--name", "Intake of Zed Quux", "--weak-alias", "process/intake")
    kg("add-entity", "process/plain", "--name", "Zed Quux plain")
    kg("add-entity", "process/gone", "--name", "Gone", "--alias", "process/gone")
    kg("add-entity", "process/gone", "--name", "process/gone")  # renamed to its alias, which goes
    kg("add-entity", "process/gone", "--name", "Zed Quux gone")
    assert kg.json("lookup", "process/gone")["entity"]["aliases"] == []
    kg("forget", "person/zed")
    assert kg("validate").stdout.startswith("clean")  # (a violation exits 1, which fails the call)
    names = {e: kg.json("lookup", e)["entity"] for e in ("process/onboard", "process/intake", "process/plain")}
    assert names["process/onboard"]["name"] == "process/onboard [forgotten]"
    assert sorted(names["process/onboard"]["aliases"]) == ["Onb", "process/onboard"]
    assert names["process/intake"]["name"] == "process/intake [forgotten]"
    assert names["process/plain"]["name"] == "process/plain"
    assert kg.json("lookup", "process/gone")["entity"]["name"] == "process/gone"  # the alias it no longer has
    assert kg.json("lookup", "process/onboard [forgotten]")["entity"]["id"] == "process/onboard"


def test_a_reason_naming_a_person_makes_the_change_private(kg):
    kg("add-entity", "person/sam", "--name", "Samantha Quixley")
    kg("add-entity", "process/release", "--name", "Release process")
    fact = _propose(kg, "process/release", "rule", "--value", "tag every release", "-s", "memory:n")["id"]
    kg("confirm", fact, "--reason", "samantha quixley said so")
    assert "samantha quixley said so" in _decoded(kg.path, "local")
    assert "samantha quixley said so" not in _decoded(kg.path, "shared")
    shared = _decoded(kg.path, "shared")
    assert kg.json("forget", "person/sam")["redacted"] == 1  # the fact stays, the reason goes
    assert _decoded(kg.path, "shared") == shared and "samantha" not in _folded(_decoded(kg.path))
    assert kg.json("facts", "process/release")["facts"][0]["status"] == "confirmed"


def test_a_replacement_named_only_by_its_reason_stays_with_the_fact_it_closed(kg):
    """kg supersede --reason naming a person: the replacement went to the private journal whole, and
    forget deleted it, leaving the fact it closed pointing at no fact and the subject with no value.
    It is kept as a shared fact is (the reason becomes [forgotten]), and so is one that replaced it;
    one whose own triple names the person still goes."""
    kg("add-entity", "person/okafor", "--name", "Dana Okafor")
    kg("add-entity", "process/release", "--name", "Release process")
    for channel in ("a", "b", "c"):
        kg("add-entity", f"channel/{channel}", "--name", f"#{channel}")
    first = _propose(kg, "process/release", "entry_point", "--object", "channel/a", "-s", "doc:1")["id"]
    kg("confirm", first)
    second = kg.json("supersede", first, "--object", "channel/b", "--reason", "moved at Dana Okafor's request")["id"]
    third = kg.json("supersede", second, "--object", "channel/c", "--reason", "Dana Okafor again")["id"]
    owner = _propose(kg, "process/release", "actor", "--object", "person/okafor", "-s", "doc:2")["id"]
    result = kg.json("forget", "person/okafor")
    assert result["facts"] == 1 and result["remaining"] == []
    facts = {f["id"]: f for f in kg.json("facts", "process/release", "--all")["facts"]}
    assert set(facts) == {first, second, third}  # the fact naming her by its triple is gone
    assert facts[first]["superseded_by"] == second and facts[second]["superseded_by"] == third
    assert [f["object"] for f in kg.json("facts", "process/release")["facts"]] == ["channel/c"]
    reasons = [e.get("reason") for fact in (second, third) for e in kg.json("history", fact)["history"]]
    assert "[forgotten]" in reasons and not [r for r in reasons if r and "okafor" in r.lower()]
    closing = kg.json("history", first)["history"][-1]
    assert (closing["action"], closing["reason"]) == ("close", f"replaced by {second}: [forgotten]")
    assert owner not in facts
    kg("validate")
    _unpack_git(kg.path)
    assert _files_naming(kg.path, ["Dana Okafor", "person/okafor"]) == []


def test_a_name_is_a_whole_word_with_its_combining_marks(kg):
    """Python's \\w leaves out vowel signs: अमित (Amit) was found in अमिताभ (Amitabh), a fact naming
    Amitabh was private for Amit, and forgetting Amit deleted it."""
    kg("add-entity", "person/amit", "--name", "अमित")
    kg("add-entity", "process/hotfix", "--name", "Hotfix")
    kg("add-entity", "channel/deploys", "--name", "#deploys")
    other = _propose(kg, "hotfix", "posts_to", "--object", "#deploys", "-s", "slack:x", "--reason", "अमिताभ ने बताया")
    own = _propose(kg, "hotfix", "caveat", "--value", "slow", "-s", "slack:y", "--reason", "अमित ने बताया")["id"]
    going = {f["id"] for f in kg.json("forget", "person/amit", "--dry-run")["going"]}
    assert going == {own}
    assert "अमिताभ ने बताया" in _decoded(kg.path, "shared")
    kg("forget", "person/amit")
    assert kg.json("history", other["id"])["fact"]["status"] == "proposed"
    kg("history", own, expect=1)


def test_a_name_with_a_dotless_i_is_the_same_name_in_capitals(kg):
    """YILDIZ is the capitals of Yıldız, and case folding makes it yildiz, never yıldız: a fact
    naming AYŞE YILDIZ went to the shared journal as naming no one, was found by no kg mentions,
    and stayed after she was forgotten."""
    kg("add-entity", "person/ayse", "--name", "Ayşe Yıldız")
    kg("add-entity", "process/hotfix", "--name", "Hotfix")
    facts = [
        _propose(kg, "hotfix", "caveat", "--value", f"ask {name} first", "-s", f"slack:{n}")["id"]
        for n, name in enumerate(["AYŞE YILDIZ", "Ayşe Yıldız", "ayşe yildiz"])
    ]
    assert "first" not in _decoded(kg.path, "shared")
    found = kg.json("mentions", "AYŞE YILDIZ said so")["mentions"]
    assert [e["id"] for m in found for e in m["entities"]] == ["person/ayse"]
    assert {f["id"] for f in kg.json("forget", "person/ayse", "--dry-run")["going"]} == set(facts)
    kg("forget", "person/ayse")
    assert kg.json("facts", "process/hotfix")["facts"] == []
    assert _files_naming(kg.path, ["yıldız", "yildiz", "person/ayse"]) == []


def test_a_name_with_a_dotted_capital_i_is_the_same_name_in_every_case(kg):
    """İ folds to i and a combining dot: "İlker" was one word and "ILKER" another, so a fact naming
    ILKER DEMIR went to the shared journal and stayed there after he was forgotten."""
    kg("add-entity", "person/ilker", "--name", "İlker Demir")
    kg("add-entity", "process/hotfix", "--name", "Hotfix")
    facts = [
        _propose(kg, "hotfix", "caveat", "--value", f"v{n}", "-s", f"slack:{n}", "--reason", f"{name} said so")["id"]
        for n, name in enumerate(["İlker Demir", "ILKER DEMIR", "ilker demir", "Ilker Demir"])
    ]
    assert "said so" not in _decoded(kg.path, "shared")
    import sqlite3

    db = sqlite3.connect(kg.path / "cache" / "people-main.sqlite")  # a cache of the words read before
    with db:
        db.execute("UPDATE meta SET value = '1' WHERE name = 'format'")
        db.execute("DELETE FROM words")
    db.close()
    facts.append(
        _propose(kg, "hotfix", "caveat", "--value", "v9", "-s", "slack:9", "--reason", "İLKER DEMİR too")["id"]
    )
    assert "too" not in _decoded(kg.path, "shared")
    assert {f["id"] for f in kg.json("forget", "person/ilker", "--dry-run")["going"]} == set(facts)
    assert kg.json("forget", "person/ilker")["remaining"] == []
    assert "ilker" not in _folded(_decoded(kg.path)).replace("i\u0307", "i")
    for fact in facts:
        kg("history", fact, expect=1)


def test_the_marks_a_word_takes_in_are_the_combining_marks_of_this_pythons_unicode():
    import sys

    from kgrdf import privacy

    marks = re.compile(f"[{privacy._MARKS}]")
    differ = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if bool(marks.match(chr(code))) != unicodedata.category(chr(code)).startswith("M")
    ]
    assert differ == [], f"privacy._MARKS is not Unicode {unicodedata.unidata_version}'s marks: {differ[:10]}"


_LETTERS = "abcdefghijklmnopqrstuvwxyzéßİअमतभकलन"
_MARK_LETTERS = "\u093f\u093e\u0301"  # two vowel signs and a combining acute: never a word's first letter
_WORD = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(_LETTERS),
    st.text(alphabet=_LETTERS + _MARK_LETTERS, max_size=6),
)


@given(
    st.lists(_WORD, min_size=1, max_size=3),
    st.sampled_from([str, str.upper, str.lower, str.title]),
    st.sampled_from(["", "said ", "(", "— "]),
    st.sampled_from(["", " said", ".", ", then"]),
    st.sampled_from(["x", "\u093f", "क"]),
)
def test_a_name_is_found_in_any_case_as_whole_words_and_never_inside_a_longer_word(words, case, before, after, more):
    """Both matchers (People: routing and forget; NameIndex: kg mentions) find a name written in
    any case between anything that is not a word, and neither finds it with a letter or a mark
    more at its end."""
    from kgrdf import privacy

    name = " ".join(words)
    people = privacy.People()
    people.add_name(name, "p")
    index = privacy.NameIndex()
    index.add(name, "p")
    text = before + case(name) + after
    assert people.in_text(text) == {"p"}, text
    assert [value for _start, _end, value in index.find(text)] == ["p"], text
    longer = before + case(name) + more + after
    assert people.in_text(longer) == set(), longer
    assert index.find(longer) == [], longer


def test_the_word_that_finds_a_name_in_a_journal_is_its_rarest_there():
    """Any word of a name finds the rows that may hold it; the search takes the rarest in the text,
    not a word every person's IRI holds, and still one for each name and token."""
    from kgrdf import privacy

    people = privacy.People()
    people.add_person("https://kgrdf.org/kb/main/person/sam", "person/sam", ["Person Quixley", "Sam"])
    text = "<https://kgrdf.org/kb/main/person/a> <https://kgrdf.org/kb/main/person/b> quixley"
    assert people.candidate_words(sample=text) == ["quixley", "sam"]
    assert people.candidate_words(sample="quixley quixley person") == ["person", "sam"]


def test_a_journal_is_searched_in_pieces_of_whole_patches_and_forget_finds_what_they_hold(kg, tmp_path, monkeypatch):
    from kgrdf import purge

    facts = _people(kg, tmp_path)
    kb = KnowledgeBase.open(kg.path)
    whole = journal_bytes(kb.journal.local.dir).decode()
    pieces = list(purge.journal_pieces(kb.journal.local, chars=1))
    assert len(pieces) == len(kb.journal.local.files()) > 1
    assert "".join(piece.text for piece in pieces) == whole and all(p.text.endswith("TC .\n") for p in pieces)
    monkeypatch.setattr(purge, "PIECE_CHARS", 1)  # a forget in this process searches one patch at a time
    from kgrdf import forget

    forget.forget(kb, "person/sam")
    assert {f["id"] for f in kg.json("facts", "person/priya", "--all")["facts"]} == {facts["priya_member"]}
    _unpack_git(kg.path)
    assert _files_naming(kg.path, SAM) == []


_KB = "https://kgrdf.org/kb/main/"
_GRAPHS = [f"{_KB}entities", f"{_KB}other/entities"] + [
    f"{_KB}fact/f-{i}{suffix}" for i in range(4) for suffix in ("", "/provenance")
]
_ROWS = st.lists(
    st.builds(
        lambda s, o, g: f'<{_KB}{s}> <https://kgrdf.org/ns#p> "{o}" <{g}>',
        st.sampled_from(["person/sam", "repo/api", "fact/f-1"]),
        st.sampled_from(["Sam", "x", "y"]),
        st.sampled_from(_GRAPHS),
    ),
    max_size=12,
)


@given(_ROWS, _ROWS, st.data(), st.booleans())
def test_a_patch_is_rewritten_as_asking_the_plan_of_every_row(deletes, adds, data, many):
    """The private journal's rewrite asks the plan only of the rows that end in an entity graph or
    a graph of one of its facts: the patch it writes, and the counts, are those of asking every row,
    for any plan (facts that go, facts redacted, rows that go or are replaced), with few facts or
    more than it lists."""
    from dataclasses import replace

    from kgrdf.journal import Patch
    from kgrdf.purge import Plan, _without, digest

    facts = [f"{_KB}fact/f-{i}" for i in range(4)]
    rows = deletes + adds
    plan = Plan(
        graphs=set(data.draw(st.lists(st.sampled_from(facts), unique=True))),
        lines={digest(r) for r in data.draw(st.lists(st.sampled_from(rows), unique=True))} if rows else set(),
        renames={digest(r): r.replace('"x"', '"renamed"') for r in rows if data.draw(st.booleans())},
        redacted=set(data.draw(st.lists(st.sampled_from(facts), unique=True))),
    )
    if many:
        plan.graphs |= {f"{_KB}fact/f-unheard-{i}" for i in range(70)}
    patch = Patch(id="urn:uuid:1", time="2026-12-03T00:00:00Z", deletes=deletes, adds=adds, seq=1)
    counts = {"records": 0, "placeholders": 0}
    got = _without(patch, plan, counts, plan.endings())

    dropped = sum(1 for q in rows if plan.rewrite(q) != q)
    kept_deletes = [r for r in map(plan.rewrite, deletes) if r is not None]
    kept_adds = [r for r in map(plan.rewrite, adds) if r is not None]
    if not dropped:
        expected = None
    elif not kept_deletes and not kept_adds:
        expected = Patch("urn:uuid:1", patch.time, "", [], [], None, 1, None, placeholder=True)
    else:
        expected = replace(patch, deletes=kept_deletes, adds=kept_adds)
    assert got == expected
    assert counts == {"records": dropped, "placeholders": int(expected is not None and expected.placeholder)}


@pytest.mark.parametrize("person_first", [True, False], ids=["person-first", "person-last"])
def test_an_import_routes_a_fact_naming_a_person_it_adds_to_the_private_journal_in_any_order(
    kg, tmp_path, person_first
):
    """One import is one transaction: a fact whose text names a person the same import adds goes to
    the private journal whether its record comes before the person's or after, and the person can
    be forgotten, leaving no file naming them. (Staged before the person, it went to the shared
    journal, and kg forget was refused.)"""
    kg("add-entity", "repo/web", "--name", "web")
    zoe = {"type": "entity", "id": "person/zoe", "name": "Zoe Quill", "aliases": ["Zed Q"]}
    facts = [
        {"type": "fact", "subject": "web", "predicate": "caveat", "value": "ask Zoe Quill first", "sources": ["doc:a"]},
        {"type": "fact", "subject": "web", "predicate": "caveat", "value": "deploys on Fridays", "sources": ["doc:b"]},
        {"type": "fact", "subject": "web", "predicate": "caveat", "value": "slow tests", "sources": ["doc:zed q"]},
    ]
    records = tmp_path / "zoe.jsonl"
    records.write_text("\n".join(json.dumps(r) for r in ([zoe, *facts] if person_first else [*facts, zoe])) + "\n")
    report = kg.json("import", records, "--apply")
    assert report["refused"] == {} and report["facts"] == {"created": 3}
    assert kg.json("forget", "person/zoe")["facts"] == 2
    assert _files_naming(kg.path, ["person/zoe", "Zoe Quill", "Zed Q"]) == []
    left = {f["value"] for f in kg.json("facts", "repo/web")["facts"]}
    assert left == {"deploys on Fridays"}
    kg("validate")


def test_a_forget_at_a_terminal_tells_each_step_as_it_starts_and_piped_tells_nothing(kg, tmp_path):
    """A forget reads the journal, rewrites it and rebuilds the index: minutes at a million facts,
    each step told as it starts to a person at a terminal, never to a program reading stderr."""
    _people(kg, tmp_path)
    twin = Kg(tmp_path / "twin")
    shutil.copytree(kg.path, twin.path, symlinks=True)
    transactions = KnowledgeBase.open(kg.path).view().seq

    done, told = at_a_terminal("forget", "Sam Reyes", "--kb", kg.path)
    assert done.returncode == 0, told
    assert told == [
        "kg: finding every record that names person/sam ...",
        "kg: rewriting the private journal without what goes ...",
        f"kg: rebuilding the index from the journal ({transactions} transactions) ...",
        "kg: compacting the index ...",
    ]
    assert done.stdout.decode().startswith("forgot person/sam:")

    piped = subprocess.run(
        [sys.executable, "-m", "kgrdf", "forget", "Sam Reyes", "--kb", twin.path], capture_output=True, text=True
    )
    assert piped.returncode == 0 and piped.stderr == ""
    assert piped.stdout == done.stdout.decode()


def test_an_index_rebuilt_by_any_command_is_told_at_a_terminal(kg, tmp_path):
    _people(kg, tmp_path)
    transactions = KnowledgeBase.open(kg.path).view().seq
    shutil.rmtree(kg.path / "index")
    done, told = at_a_terminal("lookup", "Priya", "--kb", kg.path)
    assert done.returncode == 0, told
    assert told == [
        f"kg: rebuilding the index from the journal ({transactions} transactions) ...",
        "kg: compacting the index ...",
    ]
    assert "Priya Natarajan" in done.stdout.decode()
    done, told = at_a_terminal("lookup", "Priya", "--kb", kg.path)
    assert (done.returncode, told) == (0, [])


def test_a_fact_whose_replacement_was_deleted_past_retention_says_so_and_how_to_hold_its_value_again(kg, monkeypatch):
    """Confirming it said to confirm its replacement instead, which was no fact any more."""
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T09:00:00Z")
    kg("add-entity", "person/dana", "--name", "Dana Okafor")
    kg("add-entity", "process/release", "--name", "Release process")
    old = kg.json("propose", "process/release", "purpose", "--value", "ship code", "-s", "ledger:a", "-s", "report:b")
    kg("supersede", old["id"], "--value", "ship code, ask Dana Okafor first")
    monkeypatch.setenv("KGRDF_NOW", "2027-01-05T09:00:00Z")
    assert kg.json("expire")["deleted"] == 1
    said = one_line(kg("confirm", old["id"], expect=1))
    assert "which was deleted since" in said and "kg propose process/release purpose --value 'ship code'" in said


_FEW = st.sampled_from(["the", "api", "sam", "lee", "web"])  # few words: names share their first ones


@given(
    st.lists(st.tuples(st.lists(_FEW, min_size=1, max_size=3), st.sampled_from("pqr")), max_size=8),
    st.lists(_FEW, max_size=14),
)
def test_both_matchers_find_what_comparing_each_name_at_each_word_finds(names, text_words):
    """The matchers walk the names as paths of words (one walk a word of the text, however many names
    share their first words); what they find is what comparing every name at every word finds, the
    longer of two names that overlap winning for People."""
    from kgrdf import privacy

    people, index = privacy.People(), privacy.NameIndex()
    for words, person in names:
        people.add_name(" ".join(words), person)
        index.add(" ".join(words), (" ".join(words), person))
    text = " ".join(text_words)
    spans = [
        (at, at + len(words), person)
        for at in range(len(text_words))
        for words, person in names
        if text_words[at : at + len(words)] == words
    ]
    longest_wins = {
        person
        for start, end, person in spans
        if not any(s <= start and end <= e and e - s > end - start for s, e, _ in spans)
    }
    assert people.in_text(text) == longest_wins
    offsets = [sum(len(w) + 1 for w in text_words[:at]) for at in range(len(text_words) + 1)]
    expected = [
        (offsets[at], offsets[at] + len(" ".join(words)), (" ".join(words), person))
        for at in range(len(text_words))
        for words, person in names
        if text_words[at : at + len(words)] == words
    ]
    assert sorted(index.find(text)) == sorted(expected)
    kept = privacy.NameIndex.load(json.loads(json.dumps(index.dump())))  # as cache/names-*.json keeps it
    assert kept.find(text) == index.find(text)


def test_a_text_naming_a_person_thousands_of_times_is_read_once():
    """Each mention of a name was compared with every other to see whether a longer name held it
    (a value naming Sam 16,000 times took 38 s to forget), and each word of a text with every name
    that begins with it (a message of 10,000 "the" against 8,000 names "the repoN": 12 s). Four times
    the mentions take about four times as long, and eight times the names no longer."""
    import time

    from kgrdf import privacy

    def best(run) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        return min(times)

    people = privacy.People()
    people.add_name("Sam", "sam")
    people.add_name("Sam Reyes", "reyes")
    for text in ("Sam " * 1_000 + "Sam Reyes", "Sam " * 4_000 + "Sam Reyes"):
        assert people.in_text(text) == {"sam", "reyes"}
    mentions = [best(lambda n=n: people.in_text("Sam " * n)) for n in (1_000, 4_000)]
    assert mentions[1] < 8 * mentions[0], mentions  # (every pair: 16 times)
    indexes = []
    for names in (500, 4_000):
        index = privacy.NameIndex()
        for i in range(names):
            index.add(f"the repo{i}", i)
        indexes.append(index)
    text = "the " * 2_000 + "the repo7"
    assert [[value for _s, _e, value in index.find(text)] for index in indexes] == [[7], [7]]
    names = [best(lambda index=index: index.find(text)) for index in indexes]
    assert names[1] < 3 * names[0], names  # (every name at every word: 8 times)
