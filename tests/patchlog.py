"""A strict reader of RDF Patch logs, written from the specification rather than from kgrdf's own
reader, that checks each journal folder alone: every file one patch (a header, ``TX``, rows, ``TC``,
nothing after), exactly one ``id`` and at most one ``prev`` header, the files numbered 1, 2, 3 ... a
thousand to a folder, each ``prev`` naming the patch before it in the same folder (the first none),
and every row an N-Quads statement. rdflib's RDF Patch parser then applies the log, file after file,
as any other tool would.

The RDF Patch format: https://jena.apache.org/documentation/rdf-patch/ (a header, possibly empty, then
change blocks); patch logs: each patch has an ``id`` and names the previous one with ``prev``.
"""

import gzip
import re
from pathlib import Path

import pyoxigraph as ox

_HEADER = re.compile(r'^H ([A-Za-z_][\w-]*) (<[^<>"{}|^`\\\s]*>|"(?:[^"\\]|\\.)*") \.$')
_FILE = re.compile(r"^\d{10}\.rdfp(?:\.gz)?$")  # gzipped since format 3; format 2's files are plain


def patch_files(folder: Path) -> list[Path]:
    """Every patch file under ``folder`` (either form, no torn file set aside), in order."""
    return sorted((p for p in folder.rglob("*") if p.is_file() and _FILE.match(p.name)), key=lambda p: p.name)


def patch_bytes(path: Path) -> bytes:
    """The patch a file holds: gunzipped by Python's gzip (which fails on a stream cut short), or plain."""
    return gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()


def journal_bytes(folder: Path) -> bytes:
    """Every patch under ``folder`` (a journal, or all of them), one after another."""
    return b"".join(patch_bytes(p) for p in patch_files(folder))


def read_patch(data: bytes, where: str) -> dict:
    """One RDF Patch: {"headers": {name: value}, "rows": [(op, quad text)]}. Fails on anything else."""
    text = data.decode("utf-8")  # strict: not UTF-8 is not a patch
    assert text.endswith("\n"), f"{where}: does not end with a newline"
    lines = text[:-1].split("\n")
    headers: dict[str, str] = {}
    index = 0
    while index < len(lines) and lines[index].startswith("H "):
        match = _HEADER.match(lines[index])
        assert match, f"{where}: a header row that is not 'H word term .': {lines[index]!r}"
        assert match.group(1) not in headers, f"{where}: two {match.group(1)} headers"
        headers[match.group(1)] = match.group(2).strip('<>"')
        index += 1
    assert "id" in headers, f"{where}: no id header"
    assert lines[index : index + 1] == ["TX ."], (
        f"{where}: the header is not followed by TX: {lines[index : index + 1]}"
    )
    rows = []
    for line in lines[index + 1 : -1]:
        op, _, rest = line.partition(" ")
        assert op in ("A", "D") and rest.endswith(" ."), f"{where}: not an A or D row inside TX..TC: {line[:80]!r}"
        rows.append((op, rest))
    assert lines[-1] in ("TC .", "TA ."), f"{where}: the last row is not TC (or TA): {lines[-1][:80]!r}"
    if rows:  # each row one N-Quads statement
        parsed = list(ox.parse(input="\n".join(r for _, r in rows).encode(), format=ox.RdfFormat.N_QUADS))
        assert len(parsed) == len(rows), f"{where}: {len(rows)} rows are {len(parsed)} N-Quads statements"
    return {"headers": headers, "rows": rows}


def read_log(folder: Path) -> list[dict]:
    """Every patch of one journal folder, in order, checked as a patch log on its own."""
    patches, prev, ids = [], None, set()
    for number, path in enumerate(patch_files(folder), start=1):
        where = f"{folder.name}/{path.relative_to(folder)}"
        assert path.relative_to(folder).as_posix().removesuffix(".gz") == f"{number // 1000:07d}/{number:010d}.rdfp", (
            f"{where}: expected patch {number} here"
        )
        patch = read_patch(patch_bytes(path), where)
        headers = patch["headers"]
        assert headers.get("prev") == prev, f"{where}: prev {headers.get('prev')} is not the patch before it ({prev})"
        assert headers["id"] not in ids, f"{where}: id {headers['id']} twice"
        ids.add(headers["id"])
        prev = headers["id"]
        patches.append({**patch, "path": path})
    return patches


def apply_with_rdflib(folder: Path):
    """The dataset rdflib's RDF Patch parser leaves after applying the log's files in order."""
    import rdflib

    dataset = rdflib.Dataset()
    for path in patch_files(folder):
        dataset.parse(data=patch_bytes(path), format="patch")
    return dataset


def check_journals(journal: Path, replica: str) -> tuple[list[dict], list[dict]]:
    """Both journals of a knowledge base, each a patch log alone, and the shared one naming nothing of
    the private one: no header but id, prev, time and command; no private patch's id anywhere in
    its files. The private one's prev never leaves it; its shared headers name shared patches, in
    order. Returns (shared patches, private patches)."""
    shared = read_log(journal / replica) if (journal / replica).exists() else []
    local = read_log(journal / "local") if (journal / "local").exists() else []
    shared_ids = [p["headers"]["id"] for p in shared]
    local_ids = {p["headers"]["id"] for p in local}
    shared_bytes = b"".join(patch_bytes(p["path"]) for p in shared)
    for patch in shared:
        assert set(patch["headers"]) <= {"id", "prev", "time", "command"}, patch["headers"]
    for private_id in local_ids:
        assert private_id.encode() not in shared_bytes, f"the shared journal names private patch {private_id}"
    named = [p["headers"]["shared"] for p in local if "shared" in p["headers"]]
    assert named == [i for i in shared_ids if i in set(named)], "private patches name shared ones out of order"
    assert set(named) <= set(shared_ids), "a private patch names a shared patch that is not there"
    seqs = [int(p["headers"]["seq"]) for p in local]
    assert seqs == sorted(set(seqs)), f"the private journal's sequence numbers do not rise: {seqs}"
    assert not local_ids & set(shared_ids)
    return shared, local


def write_patch(path: Path, data: bytes) -> None:
    """Put ``data`` in a patch file in the file's own form (an edit made outside kgrdf)."""
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
