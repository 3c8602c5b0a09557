"""The journal's own rules, as values: patches round-trip, folding equals replaying, each journal is
an RDF Patch log on its own (read by a strict reader of the format and by rdflib), files cut short
are set aside."""

import gzip

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrdf.errors import Damaged
from kgrdf.journal import Journal, Position, Transaction, fold, folded, last_deletions
from kgrdf.store import oxigraph as oxigraph_store
from kgrdf.store.oxigraph import OxigraphBackend

from .patchlog import apply_with_rdflib, check_journals, journal_bytes, patch_bytes, read_log, write_patch

QUADS = [f'<urn:s{i}> <urn:p> "v{i} \\"q\\"" <urn:g{i % 3}>' for i in range(8)]

transactions = st.lists(
    st.tuples(
        st.lists(st.sampled_from(QUADS), max_size=4, unique=True),
        st.lists(st.sampled_from(QUADS), max_size=4, unique=True),
    ),
    min_size=1,
    max_size=8,
)


def private(line: str) -> bool:
    return line.endswith("<urn:g0>")  # the lines the tests route to the private journal


def _write(tmp_path, steps, route=None, first=1):
    journal = Journal(tmp_path / "journal", "r-test")
    position = Position()
    for seq, (deletes, adds) in enumerate(steps, start=first):
        tx = Transaction(seq=seq, command="test", time="2026-01-01T00:00:00Z", deletes=deletes, adds=adds)
        position = journal.append(tx, position, private=route)
    return journal, position


@settings(max_examples=40, deadline=None)
@given(steps=transactions, split=st.booleans(), first=st.sampled_from([1, 7]))
def test_folding_the_journal_equals_replaying_it_into_oxigraph(tmp_path_factory, steps, split, first):
    journal, position = _write(tmp_path_factory.mktemp("j"), steps, private if split else None, first)
    entries, torn = journal.read_after(Position())
    assert torn == []
    assert [tx.deletes + tx.adds for tx, _ in entries] == [
        [q for q in d if private(q)]
        + [q for q in d if not private(q)]
        + [q for q in a if private(q)]
        + [q for q in a if not private(q)]
        if split
        else d + a
        for d, a in steps
    ]
    assert [tx.seq for tx, _ in entries] == list(range(first, first + len(steps)))
    assert entries[-1][1] == position
    backend = OxigraphBackend(None)
    for tx, after in entries:
        backend.apply(tx, after)
    replayed = {str(q) for q in backend.quads()}
    assert replayed == fold(tx for tx, _ in entries)
    assert backend.position() == (position.seq, position.digest)
    # A rebuild loads the folded lines a few at a time (three here): the same store.
    rebuilt = OxigraphBackend(None)
    load_lines, oxigraph_store.LOAD_LINES = oxigraph_store.LOAD_LINES, 3
    try:
        rebuilt.replace_all(folded([tx for tx, _ in entries]), position)
    finally:
        oxigraph_store.LOAD_LINES = load_lines
    assert {str(q) for q in rebuilt.quads()} == replayed
    assert rebuilt.position() == (position.seq, position.digest)
    # Each journal alone is a patch log that a strict reader and rdflib read.
    shared, local = check_journals(journal.folder, "r-test")
    assert len(shared) + len(local) >= len(steps)
    route = private if split else (lambda line: False)
    for stream in (journal.shared, journal.local):
        local = stream is journal.local
        rows = {r for p in read_log(stream.dir) for r in (row for _, row in p["rows"])}
        assert all(route(r[:-2]) == local for r in rows)
        dataset = apply_with_rdflib(stream.dir)
        assert len(list(dataset.quads((None, None, None, None)))) == len(fold(_part(entries, route, local)))


def _part(entries, route, local):
    for tx, _ in entries:
        yield Transaction(
            tx.seq,
            tx.command,
            tx.time,
            [q for q in tx.deletes if route(q) == local],
            [q for q in tx.adds if route(q) == local],
        )


def test_reading_after_a_position_returns_only_later_transactions(tmp_path):
    journal, _ = _write(tmp_path, [([], [QUADS[0]]), ([], [QUADS[1]]), ([QUADS[0]], [QUADS[2]])])
    entries, _ = journal.read_after(Position())
    later, _ = journal.read_after(entries[0][1])
    assert [tx.seq for tx, _ in later] == [2, 3]
    assert later[-1][0].deletes == [QUADS[0]]


def test_one_patch_a_file_a_thousand_files_a_folder_and_a_write_touches_one_new_file(tmp_path, monkeypatch):
    import kgrdf.journal as journal_mod

    monkeypatch.setattr(journal_mod, "PER_FOLDER", 3)
    journal, position = _write(tmp_path, [([], [q]) for q in QUADS if not private(q)])
    names = [f"{p.parent.name}/{p.name}" for p in journal.shared.files()]
    assert names == [
        "0000000/0000000001.rdfp.gz",
        "0000000/0000000002.rdfp.gz",
        "0000001/0000000003.rdfp.gz",
        "0000001/0000000004.rdfp.gz",
        "0000001/0000000005.rdfp.gz",
    ]
    before = {p: p.read_bytes() for p in journal.segments()}
    after = journal.append(Transaction(position.seq + 1, "test", "t", adds=[QUADS[1]]), position)
    changed = [p for p in journal.segments() if before.get(p) != p.read_bytes()]
    assert [f"{p.parent.name}/{p.name}" for p in changed] == ["0000002/0000000006.rdfp.gz"]
    entries, torn = journal.read_after(Position())
    assert torn == [] and entries[-1][1] == after
    parsed = ox.parse(input=("\n".join(f"{q} ." for q in QUADS)).encode(), format=ox.RdfFormat.N_QUADS)
    assert {str(q) for q in parsed} == set(QUADS)  # the journal's rows are canonical N-Quads


WHOLE = b'H id <urn:uuid:x> .\nH time "t" .\nTX .\nA <urn:a> <urn:b> "c" .\nTC .\n'


@pytest.mark.parametrize(
    "name, data",
    [
        pytest.param("0000000002.rdfp", WHOLE[: -len("TC .\n")], id="a plain file (format 2) without its TC"),
        pytest.param("0000000002.rdfp.gz", gzip.compress(WHOLE[: -len("TC .\n")]), id="gzipped, without its TC"),
        pytest.param("0000000002.rdfp.gz", gzip.compress(WHOLE)[:30], id="a gzip stream cut in its rows"),
        pytest.param("0000000002.rdfp.gz", gzip.compress(WHOLE)[:-4], id="a gzip stream cut in its trailer"),
    ],
)
def test_a_file_cut_short_is_a_torn_tail_set_aside(tmp_path, name, data):
    journal, position = _write(tmp_path, [([], [QUADS[1]])])
    cut = journal.shared.dir / "0000000" / name
    cut.write_bytes(data)
    entries, [torn] = journal.read_after(Position())
    assert [tx.seq for tx, _ in entries] == [1] and torn.segment == cut and torn.size == len(data)
    aside = journal.set_aside(torn, "20260101T000000Z")
    assert aside.name == f"{name}.torn-20260101T000000Z" and not cut.exists()
    assert journal.end_offset() == position.ends()
    assert journal.read_after(position) == ([], [])


@pytest.mark.parametrize(
    "data, found",
    [
        (b"H id <urn:uuid:x> .\nTX .\nTC .\nH id <urn:uuid:y> .\nTX .\nTC .\n", "after the patch's TC"),
        (b'H id <urn:uuid:x> .\nTX .\nH seq "3" .\nTC .\n', "unexpected row in the patch"),
        (b"TX .\nTC .\n", "lacks its id"),
        (b"H id <urn:uuid:x> .\nA <urn:a> <urn:b> <urn:c> .\nTX .\nTC .\n", "unexpected row in the header"),
        (b"H id <urn:uuid:x> .\nH id <urn:uuid:y> .\nTX .\nTC .\n", "two id headers"),
    ],
)
@pytest.mark.parametrize("gzipped", [True, False], ids=["gzipped", "plain (format 2)"])
def test_a_file_that_is_not_exactly_one_patch_is_damage(tmp_path, data, found, gzipped):
    journal, _ = _write(tmp_path, [([], [QUADS[1]])])
    name = "0000000002.rdfp.gz" if gzipped else "0000000002.rdfp"
    (journal.shared.dir / "0000000" / name).write_bytes(gzip.compress(data) if gzipped else data)
    with pytest.raises(Damaged, match=found):
        journal.read_after(Position())


@pytest.mark.parametrize(
    "data, found",
    [
        (WHOLE, "not a gzipped patch"),
        (b"\x1f\x8b\x08\x00" + bytes(60), "not a gzipped patch"),
        (gzip.compress(WHOLE) + gzip.compress(WHOLE), "bytes after the gzipped patch"),
        (gzip.compress(WHOLE) + b"\n", "bytes after the gzipped patch"),
    ],
    ids=["plain bytes", "a damaged stream", "two streams", "a byte after the stream"],
)
def test_a_gzipped_file_that_is_not_one_gzip_stream_is_damage(tmp_path, data, found):
    journal, _ = _write(tmp_path, [([], [QUADS[1]])])
    (journal.shared.dir / "0000000" / "0000000002.rdfp.gz").write_bytes(data)
    with pytest.raises(Damaged, match=found):
        journal.read_after(Position())


def test_a_format_2_journal_of_plain_files_goes_on_gzipped_and_chains_the_same_digests(tmp_path):
    """Gzip is how a file holds a patch, not what is chained: the same patches read plain (as
    format 2 wrote them) and gzipped give the same positions, and a plain journal goes on gzipped."""
    journal, position = _write(tmp_path, [([], [QUADS[0], QUADS[1]]), ([], [QUADS[3]]), ([], [QUADS[4]])], private)
    gzipped = [after for _, after in journal.read_after(Position())[0]]
    for path in journal.segments():
        path.with_suffix("").write_bytes(gzip.decompress(path.read_bytes()))
        path.unlink()
    plain, _ = journal.read_after(Position())
    assert [after.digest for _, after in plain] == [after.digest for after in gzipped]
    assert all(after.shared.endswith(".rdfp") and after.local.endswith(".rdfp") for _, after in plain)
    position = plain[-1][1]
    after = journal.append(Transaction(position.seq + 1, "test", "t", adds=[QUADS[1]]), position)
    assert after.shared == "0000000/0000000003.rdfp.gz" and journal.ends_at(after)
    assert not journal.ends_at(position)  # the plain journal's last file is no longer its end
    entries, torn = journal.read_after(Position())
    assert torn == [] and [tx.seq for tx, _ in entries] == [1, 2, 3, 4] and entries[-1][1] == after
    check_journals(journal.folder, "r-test")
    with pytest.raises(Damaged, match="is there already"):
        journal.shared.write_bytes(2, WHOLE)  # patch 2 is there, as a plain file


def test_a_transaction_with_private_rows_is_a_patch_in_each_journal_and_the_shared_one_names_nothing_private(tmp_path):
    journal, position = _write(tmp_path, [([], [QUADS[0], QUADS[1]]), ([], [QUADS[4]]), ([], [QUADS[3]])], private)
    shared, local = check_journals(journal.folder, "r-test")
    assert [len(p["rows"]) for p in local] == [1, 1] and [len(p["rows"]) for p in shared] == [1, 1]
    # The private journal holds the order: each private patch its sequence number, and the shared
    # patch of its transaction; the shared journal holds no number, so no gap shows private writes.
    assert [(p["headers"]["seq"], p["headers"].get("shared")) for p in local] == [
        ("1", shared[0]["headers"]["id"]),
        ("3", None),
    ]
    assert all("seq" not in p["headers"] and "streams" not in p["headers"] for p in shared)
    assert shared[1]["headers"]["prev"] == shared[0]["headers"]["id"]
    assert local[1]["headers"]["prev"] == local[0]["headers"]["id"]
    local_text = journal_bytes(journal.local.dir).decode()
    shared_text = journal_bytes(journal.shared.dir).decode()
    assert QUADS[0] in local_text and QUADS[3] in local_text and QUADS[0] not in shared_text
    assert QUADS[1] in shared_text and QUADS[4] in shared_text and QUADS[1] not in local_text
    entries, _ = journal.read_after(Position())
    assert [tx.seq for tx, _ in entries] == [1, 2, 3] and entries[-1][1] == position
    assert position.ends() == journal.end_offset()
    later, _ = journal.read_after(entries[0][1])
    assert [tx.adds for tx, _ in later] == [[QUADS[4]], [QUADS[3]]]


def test_the_first_transaction_always_has_a_private_patch_saying_where_the_sequence_starts(tmp_path):
    journal, position = _write(tmp_path, [([], [QUADS[1]]), ([], [QUADS[2]])], private, first=41)
    shared, local = check_journals(journal.folder, "r-test")
    assert [p["headers"]["seq"] for p in local] == ["41"] and local[0]["rows"] == []
    assert local[0]["headers"]["shared"] == shared[0]["headers"]["id"] and len(shared) == 2
    assert [tx.seq for tx, _ in journal.read_after(Position())[0]] == [41, 42]


def test_a_private_patch_whose_shared_patch_was_never_written_is_set_aside(tmp_path):
    journal, position = _write(tmp_path, [([], [QUADS[0], QUADS[1]])], private)
    cut = Transaction(seq=2, command="test", time="t", adds=[QUADS[3], QUADS[4]])

    def killed(*args):
        raise KeyboardInterrupt  # killed between the two patches

    journal.shared.write = killed
    with pytest.raises(KeyboardInterrupt):
        journal.append(cut, position, private=private)
    journal = Journal(journal.folder, "r-test")
    entries, [torn] = journal.read_after(Position())
    assert [tx.seq for tx, _ in entries] == [1] and entries[-1][1] == position
    assert torn.segment.name == "0000000002.rdfp.gz" and torn.segment.parent.parent.name == "local"
    journal.set_aside(torn, "20260101T000000Z")
    assert journal.end_offset() == position.ends()
    assert journal.read_after(position) == ([], [])


def test_a_journal_whose_chain_breaks_is_damage(tmp_path):
    journal, _ = _write(tmp_path, [([], [QUADS[0], QUADS[1]]), ([], [QUADS[3]]), ([], [QUADS[4]])], private)
    journal.local.files()[0].unlink()  # the private journal lost a patch
    with pytest.raises(Damaged, match="patch 1 is missing"):
        journal.read_after(Position())


def test_a_patch_naming_another_prev_is_damage(tmp_path):
    journal, _ = _write(tmp_path, [([], [QUADS[1]]), ([], [QUADS[2]])])
    second = journal.shared.files()[1]
    write_patch(second, patch_bytes(second).replace(b"H prev <urn:uuid:", b"H prev <urn:uuid:0"))
    with pytest.raises(Damaged, match="prev does not name the patch before it"):
        journal.read_after(Position())


def test_a_transaction_missing_its_shared_patch_is_damage(tmp_path):
    journal, _ = _write(tmp_path, [([], [QUADS[0], QUADS[1]]), ([], [QUADS[0], QUADS[2]]), ([], [QUADS[3]])], private)
    for path in journal.shared.files():
        path.unlink()
    with pytest.raises(Damaged, match="lacks its patch in journal/r-test"):
        journal.read_after(Position())


def test_reading_the_journal_holds_a_few_patches_never_the_whole(tmp_path):
    import tracemalloc

    rows = [f'<urn:s{i}> <urn:p> "{"x" * 200}" <urn:g{i % 3}>' for i in range(2000)]  # ~0.5 MB a patch
    journal, position = _write(tmp_path, [([], rows[:1000]), ([], rows[1000:])] * 15, private)
    size = sum(len(patch_bytes(p)) for p in journal.segments())  # the patches' bytes, unzipped
    tracemalloc.start()
    try:
        seqs = [(tx.seq, len(tx.adds)) for tx, _after in journal.transactions(Position())]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seqs == [(seq, 1000) for seq in range(1, 31)]
    assert peak < size / 3, f"{peak} bytes held reading a journal of {size}"


def test_folding_again_with_the_deletions_of_a_first_pass_gives_the_fold(tmp_path):
    steps = [([], [QUADS[0], QUADS[1]]), ([QUADS[0]], [QUADS[2]]), ([QUADS[2]], [QUADS[0], QUADS[2]]), ([QUADS[1]], [])]
    journal, _ = _write(tmp_path, steps, private)
    deleted = last_deletions(tx for tx, _ in journal.transactions(Position()))
    again = list(folded((tx for tx, _ in journal.transactions(Position())), deleted))
    assert sorted(again) == sorted(fold(tx for tx, _ in journal.read_after(Position())[0]))
    assert set(again) == {QUADS[0], QUADS[2]}


def test_a_patch_is_written_in_pieces_with_the_same_bytes_and_digest_as_whole(tmp_path, monkeypatch):
    import kgrdf.journal as journal_mod

    monkeypatch.setattr(journal_mod, "ROWS_AT_ONCE", 3)
    rows = [f'<urn:s{i}> <urn:p> "{i}" <urn:g>' for i in range(10)]
    patch = journal_mod.Patch("urn:uuid:p", "t", "test", deletes=rows[:4], adds=rows[4:])
    assert len(list(patch.pieces())) == 1 + 2 + 2 + 1  # the header, the deletes and adds three at a time, TC
    stream = journal_mod.Stream(tmp_path / "j")
    name, size, digest = stream.write(1, patch, "d0")
    path = stream.dir / name
    assert size == path.stat().st_size and gzip.decompress(path.read_bytes()) == patch.encode()
    assert digest == journal_mod.chain("d0", patch.encode())
    assert (
        patch.encode()
        == (
            "\n".join(
                ["H id <urn:uuid:p> .", 'H time "t" .', 'H command "test" .', "TX ."]
                + [f"D {r} ." for r in rows[:4]]
                + [f"A {r} ." for r in rows[4:]]
                + ["TC ."]
            )
            + "\n"
        ).encode()
    )
    read, data, _size = stream.read(path)
    assert (read.deletes, read.adds) == (rows[:4], rows[4:])


@settings(max_examples=300)
@given(st.binary(max_size=300), st.integers(min_value=1, max_value=40))
def test_a_large_patch_is_decoded_in_parts_to_the_same_rows(data, part):
    """An import's patch is decoded a part at a time, cut at a newline: the rows are those of the
    whole text decoded at once, whatever the bytes (broken UTF-8 beside a cut among them)."""
    from kgrdf import journal as journal_mod

    previous = journal_mod.DECODED_AT_ONCE
    journal_mod.DECODED_AT_ONCE = part
    try:
        assert journal_mod._split(data) == data.decode("utf-8", errors="replace").split("\n")
    finally:
        journal_mod.DECODED_AT_ONCE = previous


def test_a_patch_of_many_rows_read_in_parts_is_the_patch_written(tmp_path, monkeypatch):
    """A patch of more rows than are made at a time, with text past ASCII, reads back as written,
    its rows in order; a row that is not one of ours among them is still damage, and a cut one
    still a torn tail."""
    from kgrdf import journal as journal_mod

    monkeypatch.setattr(journal_mod, "ROWS_AT_ONCE", 7)
    monkeypatch.setattr(journal_mod, "DECODED_AT_ONCE", 50)
    rows = [f'<https://example.org/s{i}> <https://example.org/p> "été {i}" <https://example.org/g>' for i in range(40)]
    patch = journal_mod.Patch(id="urn:uuid:1", time="2026-12-02T00:00:00Z", command="kg import", adds=rows)
    data = patch.encode()
    read = journal_mod.parse_patch(data, "here")
    assert read.adds == rows and read.deletes == [] and read.id == "urn:uuid:1"
    assert journal_mod.parse_patch(data[: len(data) // 2], "here") is None
    with pytest.raises(Damaged, match="unexpected row"):
        journal_mod.parse_patch(data.replace(b"A <https://example.org/s20>", b"X <https://example.org/s20>"), "here")
    with pytest.raises(Damaged, match="after the patch"):
        journal_mod.parse_patch(data + b"A <a> <b> <c> <d> .\n", "here")


def _scanned(data: bytes, cuts: list[int]):
    """What a pass that skips the rows that add reads of ``data`` fed in pieces cut at ``cuts``: the
    patch's headers and deletes, None, or the Damaged message."""
    from kgrdf import journal as journal_mod

    scan = journal_mod._Scan("here")
    at = 0
    for cut in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
        scan.feed(data[at:cut])
        at = cut
    try:
        return _read_of(scan.result())
    except Damaged as exc:
        return str(exc)


def _read_of(patch):
    if patch is None:
        return None
    return (patch.id, patch.prev, patch.seq, patch.shared, patch.time, patch.command, patch.placeholder, patch.deletes)


_PATCH_ROWS = st.lists(
    st.tuples(st.sampled_from(["A", "D"]), st.sampled_from(QUADS + ['<urn:s> <urn:p> "é\\n\\u00e9" <urn:g>'])),
    max_size=12,
)
_MUTATIONS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=2000),
        st.sampled_from([b"", b"\n", b"X", b" .", b"\nA ", b"\nD ", b"TC .\n", b"TA .\n", b"\xe9", b"\xc3", b" "]),
        st.integers(min_value=0, max_value=4),
    ),
    max_size=3,
)


@settings(max_examples=400, deadline=None)
@given(_PATCH_ROWS, st.booleans(), _MUTATIONS, st.lists(st.integers(min_value=0, max_value=2000), max_size=6))
def test_a_check_that_skips_the_rows_that_add_reads_any_patch_as_the_full_reader_does(rows, abort, mutations, cuts):
    """A rebuild's first pass and kg status read the journal without keeping the rows that add: on
    any bytes (a patch whole, cut short, aborted, or with bytes put in or taken out anywhere, fed in
    any pieces) they find the same headers and deletes, the same torn tail, and the same damage with
    the same message, as the reader that keeps every row."""
    from kgrdf import journal as journal_mod

    patch = journal_mod.Patch(
        id="urn:uuid:1",
        time="2026-12-03T00:00:00Z",
        command="kg import",
        prev="urn:uuid:0",
        seq=3,
        deletes=[quad for op, quad in rows if op == "D"],
        adds=[quad for op, quad in rows if op == "A"],
    )
    data = patch.encode()
    if abort:
        data = data.replace(b"TC .\n", b"TA .\n")
    for at, put, taken in mutations:
        at = min(at, len(data))
        data = data[:at] + put + data[at + taken :]
    try:
        expected = _read_of(journal_mod.parse_patch(data, "here"))
    except Damaged as exc:
        expected = str(exc)
    assert _scanned(data, cuts) == expected


def test_a_check_of_the_journal_without_its_added_rows_ends_where_the_full_read_does(tmp_path):
    """kg status and a rebuild's first pass read each transaction's deletes and the chained position
    as a read of every row does, and find the same damage in a patch whose row is not one of ours."""
    steps = [([], QUADS[:5]), ([QUADS[1]], [QUADS[6]]), ([QUADS[0], QUADS[6]], QUADS[2:4])]
    journal, end = _write(tmp_path, steps, route=private)
    full = [(tx.seq, tx.deletes, after) for tx, after in journal.transactions(Position())]
    lean = [(tx.seq, tx.deletes, after) for tx, after in journal.transactions(Position(), adds=False)]
    assert lean == full and full[-1][2] == end
    assert all(not tx.adds for tx, _after in journal.transactions(Position(), adds=False))
    last = sorted(journal.shared.files())[-1]
    data = gzip.decompress(last.read_bytes()).replace(b"\nA ", b"\nB ", 1)
    last.write_bytes(gzip.compress(data))
    for adds in (True, False):
        with pytest.raises(Damaged, match="unexpected row in the patch: 'B <urn:s"):
            list(journal.transactions(Position(), adds=adds))
