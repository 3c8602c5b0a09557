"""The journal's own rules, as values: blocks round-trip, folding equals replaying, tails tear cleanly."""

import pyoxigraph as ox
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrdf.journal import Journal, Position, Transaction, fold
from kgrdf.store.oxigraph import OxigraphBackend

QUADS = [f'<urn:s{i}> <urn:p> "v{i} \\"q\\"" <urn:g{i % 3}>' for i in range(8)]

transactions = st.lists(
    st.tuples(st.lists(st.sampled_from(QUADS), max_size=4, unique=True),
              st.lists(st.sampled_from(QUADS), max_size=4, unique=True)),
    min_size=1, max_size=8)


def private(line: str) -> bool:
    return line.endswith("<urn:g0>")  # the lines the tests route to the private journal


def _write(tmp_path, steps, route=None):
    journal = Journal(tmp_path / "journal", "r-test")
    position = Position()
    for seq, (deletes, adds) in enumerate(steps, start=1):
        tx = Transaction(seq=seq, command="test", time="2026-01-01T00:00:00Z", deletes=deletes, adds=adds,
                         prev=position.tx_id)
        position = journal.append(tx, position, private=route)
    return journal, position


@settings(max_examples=40, deadline=None)
@given(steps=transactions, split=st.booleans())
def test_folding_the_journal_equals_replaying_it_into_oxigraph(tmp_path_factory, steps, split):
    journal, position = _write(tmp_path_factory.mktemp("j"), steps, private if split else None)
    entries, torn = journal.read_after(Position())
    assert torn == []
    assert [tx.deletes + tx.adds for tx, _ in entries] == [
        [q for q in d if private(q)] + [q for q in d if not private(q)] + [q for q in a if private(q)]
        + [q for q in a if not private(q)] if split else d + a for d, a in steps]
    assert [tx.seq for tx, _ in entries] == list(range(1, len(steps) + 1))
    assert entries[-1][1] == position
    backend = OxigraphBackend(None)
    for tx, after in entries:
        backend.apply(tx, after)
    replayed = {str(q) for q in backend.quads()}
    assert replayed == fold(tx for tx, _ in entries)
    assert backend.position() == (position.seq, position.digest)


def test_reading_after_a_position_returns_only_later_transactions(tmp_path):
    journal, _ = _write(tmp_path, [([], [QUADS[0]]), ([], [QUADS[1]]), ([QUADS[0]], [QUADS[2]])])
    entries, _ = journal.read_after(Position())
    later, _ = journal.read_after(entries[0][1])
    assert [tx.seq for tx, _ in later] == [2, 3]
    assert later[-1][0].deletes == [QUADS[0]]


def test_a_block_without_its_commit_row_is_a_torn_tail(tmp_path):
    journal, position = _write(tmp_path, [([], [QUADS[0]])])
    segment = journal.segments()[-1]
    with open(segment, "ab") as out:
        out.write(b'H id <urn:uuid:x> .\nH seq "2" .\nTX .\nA ' + QUADS[1].encode() + b" .\n")
    entries, [torn] = journal.read_after(Position())
    assert [tx.seq for tx, _ in entries] == [1]
    assert torn.offset == position.offset
    aside = journal.set_aside(torn, "20260101T000000Z")
    assert aside.read_bytes().startswith(b"H id <urn:uuid:x>")
    assert segment.stat().st_size == position.offset


def test_segments_roll_over_on_transaction_boundaries(tmp_path, monkeypatch):
    import kgrdf.journal as journal_mod

    monkeypatch.setattr(journal_mod, "SEGMENT_BYTES", 300)
    journal, position = _write(tmp_path, [([], [q]) for q in QUADS])
    assert len(journal.segments()) > 1
    entries, torn = journal.read_after(Position())
    assert torn == [] and len(entries) == len(QUADS)
    assert fold(tx for tx, _ in entries) == set(QUADS)
    parsed = ox.parse(input=("\n".join(f"{q} ." for q in QUADS)).encode(), format=ox.RdfFormat.N_QUADS)
    assert {str(q) for q in parsed} == set(QUADS)  # the journal's rows are canonical N-Quads


def test_a_transaction_with_private_lines_is_two_blocks_private_first(tmp_path):
    journal, position = _write(tmp_path, [([], [QUADS[0], QUADS[1]]), ([], [QUADS[4]]), ([], [QUADS[3]])], private)
    local = b"".join(p.read_bytes() for p in journal.local.segments()).decode()
    shared = b"".join(p.read_bytes() for p in journal.shared.segments()).decode()
    assert QUADS[0] in local and QUADS[3] in local and QUADS[0] not in shared
    assert QUADS[1] in shared and QUADS[4] in shared and QUADS[1] not in local
    assert local.count('H streams "local r-test"') == 1 and local.count('H streams "local"') == 1
    assert shared.count('H seq "1"') == 1 and shared.count('H streams "r-test"') == 1
    entries, _ = journal.read_after(Position())
    assert [tx.seq for tx, _ in entries] == [1, 2, 3] and entries[-1][1] == position
    assert position.ends() == journal.end_offset()
    later, _ = journal.read_after(entries[0][1])
    assert [tx.adds for tx, _ in later] == [[QUADS[4]], [QUADS[3]]]


def test_a_private_block_whose_shared_block_was_never_written_is_set_aside(tmp_path):
    journal, position = _write(tmp_path, [([], [QUADS[0], QUADS[1]])], private)
    cut = Transaction(seq=2, command="test", time="t", adds=[QUADS[3], QUADS[4]], prev=position.tx_id)
    journal.local.append(cut.part([], [QUADS[3]], ("local", "r-test")))  # killed before the second block
    entries, [torn] = journal.read_after(Position())
    assert [tx.seq for tx, _ in entries] == [1] and entries[-1][1] == position
    journal.set_aside(torn, "20260101T000000Z")
    assert journal.end_offset() == position.ends()
    assert journal.read_after(position) == ([], [])


def test_a_transaction_missing_its_private_block_is_damage(tmp_path):
    import pytest

    from kgrdf.errors import Damaged

    journal, _ = _write(tmp_path, [([], [QUADS[0], QUADS[1]]), ([], [QUADS[4]])], private)
    journal.local.segments()[0].write_bytes(b"")  # the private journal lost its records
    with pytest.raises(Damaged, match="lacks its block in journal/local"):
        journal.read_after(Position())
