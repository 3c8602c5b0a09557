"""The daily batch (§8): grouping, folding, lettered parts, caps, priority, and the one-line answer."""

import json
import re
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgrdf import batch as batch_module
from kgrdf import review
from kgrdf.errors import BadInput
from kgrdf.kb import KnowledgeBase

from .conftest import Kg, one_line

# --- a knowledge base with a few hundred proposals ----------------------------------------------------


def _records():
    out = [{"type": "entity", "id": f"process/p{p}", "name": f"Process {p}"} for p in range(3)]
    out += [
        {"type": "entity", "id": f"step/p{p}-s{s}", "name": f"Step {s} of process {p}"}
        for p in range(3)
        for s in range(6)
    ]
    out += [{"type": "entity", "id": f"repo/r{r}", "name": f"repo {r}"} for r in range(40)]
    out += [{"type": "entity", "id": f"person/u{u}", "name": f"User {u}"} for u in range(6)]
    out += [{"type": "entity", "id": "lesson/l0", "name": "Lesson zero"}]
    out += [{"type": "entity", "id": f"channel/c{c}", "name": f"#chan{c}"} for c in range(3)]
    facts = []
    for p in range(3):
        for s in range(6):
            facts.append(
                {"subject": f"process/p{p}", "predicate": "has_step", "object": f"step/p{p}-s{s}", "order": s + 1}
            )
            facts.append({"subject": f"step/p{p}-s{s}", "predicate": "posts_to", "object": f"channel/c{p}"})
    for r in range(40):
        for n in range(r % 12 + 1):  # 1 to 12 caveats: small groups fold, big ones split
            facts.append({"subject": f"repo/r{r}", "predicate": "caveat", "value": f"caveat {n} of {r}"})
    for u in range(6):
        for r in range(3):
            facts.append({"subject": f"person/u{u}", "predicate": "reviews", "object": f"repo/r{(u + r) % 20}"})
    facts.append({"subject": "lesson/l0", "predicate": "about", "object": "repo/r11"})
    facts.append({"subject": "lesson/l0", "predicate": "states", "value": "never deploy on Fridays"})
    facts.append({"subject": "repo/r0", "predicate": "caveat", "value": "the rework one", "prevents_rework": True})
    for fact in facts:
        fact.update(type="fact", sources=["slack:seed"])
    return out + facts


@pytest.fixture(scope="module")
def batch_template(tmp_path_factory):
    path = tmp_path_factory.mktemp("batch") / "kb"
    kg = Kg(path)
    kg("init")
    seed = path.parent / "seed.jsonl"
    seed.write_text("\n".join(json.dumps(r) for r in _records()), encoding="utf-8")
    report = kg.json("import", seed, "--apply")
    assert report["refused"] == {} and report["proposals"] > 200
    return path


@pytest.fixture
def many(batch_template, tmp_path):
    path = tmp_path / "kb"
    shutil.copytree(batch_template, path, symlinks=True)
    return Kg(path)


def test_the_batch_keeps_to_its_caps_and_letters_its_facts(many):
    batch = many.json("batch")
    groups = batch["groups"]
    assert len(groups) <= 10 and batch["in_batch"] <= 40
    assert batch["waiting"] > 200 and batch["batches"] >= batch["waiting"] // 40
    assert [g["number"] for g in groups] == list(range(1, len(groups) + 1))
    for group in groups:
        assert 1 <= len(group["facts"]) <= 8
        assert [f["label"] for f in group["facts"]] == [
            f"{group['number']}{c}" for c in "abcdefgh"[: len(group["facts"])]
        ]
    ids = [f["id"] for g in groups for f in g["facts"]]
    assert len(ids) == len(set(ids)) == batch["in_batch"]
    statuses = {f["id"]: f["status"] for e in ("repo/r0",) for f in many.json("facts", e)["facts"]}
    assert all(statuses.get(i, "proposed") == "proposed" for i in ids)


def test_the_caps_are_settings(many, monkeypatch):
    monkeypatch.setenv("KGRDF_BATCH_GROUPS", "3")
    monkeypatch.setenv("KGRDF_GROUP_FACTS", "4")
    monkeypatch.setenv("KGRDF_BATCH_FACTS", "10")
    groups = many.json("batch")["groups"]
    assert len(groups) <= 3 and sum(len(g["facts"]) for g in groups) <= 10
    assert all(len(g["facts"]) <= 4 for g in groups)
    monkeypatch.setenv("KGRDF_GROUP_FACTS", "27")
    assert "KGRDF_GROUP_FACTS='27' must be between 1 and 26" in many("batch", expect=2).stderr


def test_what_prevents_rework_comes_first(many):
    first = many.json("batch")["groups"][0]
    assert first["facts"][0]["prevents_rework"] is True
    assert first["facts"][0]["sentence"] == "repo 0 comes with a caveat: the rework one"


def test_facts_are_grouped_under_their_anchor(monkeypatch, many):
    monkeypatch.setenv("KGRDF_BATCH_GROUPS", "1000")
    monkeypatch.setenv("KGRDF_BATCH_FACTS", "1000")
    groups = many.json("batch")["groups"]
    by_title = {}
    for group in groups:
        by_title.setdefault(re.sub(r" \(\d+/\d+\)$", "", group["title"]), []).extend(
            f["sentence"] for f in group["facts"]
        )
    # A step's facts go to its process; a lesson's to what it is about; reviews to the area.
    assert "Step 2 of process 1 is announced in #chan1" in by_title["Process 1"]
    assert "Lesson zero says: never deploy on Fridays" in by_title["repo 11"]
    assert "User 0 reviews repo 11" not in by_title.get("People: other facts", [])
    assert any("reviews repo 5" in s for s in by_title["repo 5"])
    # Anchors with fewer than five facts fold into one group per axis.
    assert "repo 1 comes with a caveat: caveat 0 of 1" in by_title["Product: other facts"]
    # A group larger than a part is split into lettered parts of at most eight.
    assert any(re.search(r"\(2/2\)$", g["title"]) for g in groups)


def test_the_plan_puts_every_proposal_in_exactly_one_batch():
    items = [
        review.Item(
            id=f"f-{i:06d}",
            subject=f"s{i % 37}",
            anchor=f"a{i % 37}",
            anchor_name=f"A{i % 37}",
            axis=["People", "Process", "Product"][i % 3],
            sentence=str(i),
            prevents_rework=i % 29 == 0,
            observations=1 + i % 4,
            recorded_at=f"2026-01-{1 + i % 28:02d}",
        )
        for i in range(700)
    ]
    caps = review.Caps()
    plan = review.plan(items, caps)
    seen = [item.id for batch in plan for group in batch for item in group.items]
    assert sorted(seen) == sorted(i.id for i in items)
    for batch in plan:
        assert len(batch) <= caps.groups and sum(len(g.items) for g in batch) <= caps.batch_facts
        assert all(len(g.items) <= caps.group_facts for g in batch)
    assert all(item.prevents_rework for item in plan[0][0].items[:1])


def _imported(tmp_path, records) -> Kg:
    kg = Kg(tmp_path / "kb")
    kg("init")
    seed = tmp_path / "seed.jsonl"
    seed.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    assert kg.json("import", seed, "--apply")["refused"] == {}
    return kg


def test_a_folded_group_shows_its_most_observed_facts_whatever_thing_they_are_about(tmp_path, monkeypatch):
    """The batch reads a group's facts thing by thing, best first: the four most observed of
    twenty caveats on twenty repos are the ones shown, most observed first."""
    records = [{"type": "entity", "id": f"repo/r{r:02d}", "name": f"repo {r:02d}"} for r in range(20)]
    for r in range(20):
        # A fact imported n times is observed n times: repos 3, 8, 13 and 18 four times, the others
        # one to three times.
        caveat = {"type": "fact", "subject": f"repo/r{r:02d}", "predicate": "caveat", "value": f"c{r}"}
        times = 4 if r % 5 == 3 else r % 3 + 1
        records += [dict(caveat, sources=[f"slack:{r}-{n}"]) for n in range(times)]
    kg = _imported(tmp_path, records)
    monkeypatch.setenv("KGRDF_BATCH_FACTS", "6")
    monkeypatch.setenv("KGRDF_GROUP_FACTS", "6")
    batch = kg.json("batch")
    (group,) = batch["groups"]
    assert group["title"] == "Product: other facts (1/4)"
    shown = [(f["observations"], f["sentence"].rsplit(" ", 1)[1]) for f in group["facts"]]
    assert [n for n, _ in shown] == [4, 4, 4, 4, 3, 3]
    assert {c for _, c in shown[:4]} == {"c3", "c8", "c13", "c18"}
    assert batch["waiting"] == 20 and batch["batches"] == 4


def test_a_thing_anchored_twice_is_reviewed_under_the_first_anchor_every_time(tmp_path):
    """A step of two processes goes, with its facts, under the process whose IRI comes first, on
    every read and in the count of batches an import reports."""
    records = [
        {"type": "entity", "id": "process/b-release", "name": "Release"},
        {"type": "entity", "id": "process/a-hotfix", "name": "Hotfix"},
        {"type": "entity", "id": "step/deploy", "name": "Deploy"},
        {"type": "entity", "id": "channel/deploys", "name": "#deploys"},
        {"type": "fact", "subject": "process/b-release", "predicate": "has_step", "object": "step/deploy"},
        {"type": "fact", "subject": "process/a-hotfix", "predicate": "has_step", "object": "step/deploy"},
    ]
    records += [
        {"type": "fact", "subject": "step/deploy", "predicate": "caveat", "value": f"caveat {n}"} for n in range(5)
    ]
    for record in records:
        if record["type"] == "fact":
            record["sources"] = ["slack:seed"]
    kg = _imported(tmp_path, records)
    titles = {}
    for _ in range(2):
        for group in kg.json("batch")["groups"]:
            for fact in group["facts"]:
                titles.setdefault(fact["sentence"], set()).add(group["title"])
    assert titles["Deploy comes with a caveat: caveat 0"] == {"Hotfix"}
    assert all(len(where) == 1 for where in titles.values())


# --- answering it ---------------------------------------------------------------------------------------


def test_confirm_all_except_and_reject_do_exactly_what_was_printed(many):
    groups = many.json("batch")["groups"]
    label = {f["label"]: f["id"] for g in groups for f in g["facts"]}
    result = many.json("batch", "apply", "confirm all except 2b, reject 3a")
    assert result["rejected"] == 1 and result["left_proposed"] == 1
    assert result["confirmed"] == len(label) - 2

    def status(fact_id):
        return many.json("history", fact_id)["fact"]["status"]

    assert status(label["2b"]) == "proposed"
    assert status(label["3a"]) == "rejected"
    assert status(label["1a"]) == "confirmed"
    history = many.json("history", label["1a"])["history"]
    assert history[-1]["reason"] == "confirmed in the daily batch"
    # Answered once; the next kg batch prints the next one, without what was decided.
    assert "was answered" in many("batch", "apply", "confirm all", expect=1).stderr
    following = {f["id"] for g in many.json("batch")["groups"] for f in g["facts"]}
    assert label["3a"] not in following and label["1a"] not in following


@pytest.mark.parametrize("decision", ["reject 2a, 2b, and 3a", "reject 2a; and 2b and 3a", "reject 2a, 2b, 3a"])
def test_a_comma_before_and_separates_once_as_in_english(many, decision):
    """A batch answer "confirm 1a, 1b, and 1c" was refused as two separators with nothing between them, where
    README says clauses and targets are separated by commas, semicolons or "and"."""
    label = {f["label"]: f["id"] for g in many.json("batch")["groups"] for f in g["facts"]}
    result = many.json("batch", "apply", decision)
    assert result["rejected"] == 3 and result["confirmed"] == 0
    assert {many.json("history", label[x])["fact"]["status"] for x in ("2a", "2b", "3a")} == {"rejected"}


@pytest.mark.parametrize(
    "decision,where",
    [
        ("confirm 1a, rejekt 2", "'rejekt 2' (character 13)"),
        ("confirm 99", "'99' (character 9): expected a group of this batch"),
        ("confirm 1z", "'1z' (character 9): expected a fact of group 1"),
        ("confirm all except", "expected what to except"),
        ("2b", "'2b' (character 1): expected confirm, reject, skip or except"),
        ("confirm 1a,, 1b", "between two separators"),
        ("confirm 1a and and 1b", "(character 16): expected a verb or a target between two separators"),
        ("confirm 1a and, 1b", "between two separators"),
        ("and confirm 1a", "'and confirm' (character 1): expected confirm, reject, skip or except first"),
        ("confirm 1a!", "'!' (character 11)"),
        ("", "the decision is empty"),
    ],
    ids=[
        "typo",
        "no-group",
        "no-letter",
        "dangling-except",
        "no-verb",
        "double-comma",
        "double-and",
        "and-comma",
        "leading-and",
        "stray-mark",
        "empty",
    ],
)
def test_a_malformed_decision_says_where_and_changes_nothing(many, decision, where):
    many("batch")
    before = many.snapshot()
    saved = (many.path / "batch.json").read_text()
    result = many("batch", "apply", decision, expect=2)
    assert where in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert many.snapshot() == before and (many.path / "batch.json").read_text() == saved


def test_a_group_of_a_batch_with_none_is_refused_as_there_being_none(kg):
    """An empty batch answered "expected a group of this batch (1 to 0)": a range that cannot be."""
    assert "Nothing waits for review" in kg("batch").stdout
    said = kg("batch", "apply", "confirm 1", expect=2).stderr
    assert "this batch has no group 1: nothing waited for review when it was made" in said and "1 to 0" not in said


def test_apply_without_a_printed_batch_is_refused(many):
    assert "there is no batch to answer" in many("batch", "apply", "confirm all", expect=1).stderr


def _one_group(doc):
    doc["groups"] = [
        {"number": 1, "title": "x", "anchor": None, "facts": [f for g in doc["groups"] for f in g["facts"]]}
    ]


def _set(where, key, value):
    def edit(doc):
        where(doc)[key] = value

    return edit


def _fact_twice(doc):
    doc["groups"][1]["facts"][0] = dict(doc["groups"][0]["facts"][0])


@pytest.mark.parametrize(
    "edit",
    [
        _one_group,
        _set(lambda d: d["groups"], 1, "2"),
        _set(lambda d: d["groups"][0], "facts", {"1a": "f-x"}),
        _set(lambda d: d["groups"][0], "number", "1"),
        _set(lambda d: d["groups"][0], "number", True),
        _set(lambda d: d["groups"][1], "number", 1),
        _set(lambda d: d["groups"][0], "title", None),
        _set(lambda d: d["groups"][-1], "facts", []),
        _fact_twice,
        _set(lambda d: d["groups"][0]["facts"][0], "id", ""),
        _set(lambda d: d["groups"][0]["facts"][0], "valid_from", 2026),
        _set(lambda d: d, "made_at", 20260302),
    ],
    ids=[
        "40-facts-in-one-group",
        "group-not-an-object",
        "facts-not-a-list",
        "number-as-text",
        "number-true",
        "two-groups-numbered-1",
        "title-null",
        "group-of-no-fact",
        "a-fact-twice",
        "empty-id",
        "valid-time-a-number",
        "made-at-a-number",
    ],
)
def test_a_batch_json_edited_by_hand_into_any_shape_is_bad_input_and_writes_nothing(many, edit):
    """A saved batch edited by hand is refused as bad input (exit 2, one line naming the file), and
    nothing is written, whatever its shape: 27 facts or more in one group crashed as a bug (a fact
    has no letter past z), and numbers out of turn, a fact twice, a group of no fact were answered;
    the console's review queue leaves such a file alone and shows a batch of its own."""
    many("batch")
    saved = many.path / "batch.json"
    doc = json.loads(saved.read_text())
    assert len(doc["groups"]) >= 2 and sum(len(g["facts"]) for g in doc["groups"]) > len(review.LETTERS)
    edit(doc)
    saved.write_text(json.dumps(doc))
    edited, before = saved.read_text(), many.snapshot()
    line = one_line(many("batch", "apply", "confirm 1a", expect=2))
    assert line == "kg: batch.json is not a batch kg batch saved (kg batch prints and saves a new one)"
    assert many.snapshot() == before and saved.read_text() == edited
    shown = batch_module.for_review(KnowledgeBase.open(many.path))
    assert shown["groups"] and {f["status"] for g in shown["groups"] for f in g["facts"]} == {"proposed"}


def test_proposals_past_30_days_expire_before_the_batch(many, monkeypatch):
    monkeypatch.setenv("KGRDF_NOW", "2099-01-01T00:00:00Z")
    batch = many.json("batch")
    assert batch["expired"] > 200 and batch["groups"] == [] and batch["waiting"] == 0
    assert "Nothing waits for review" in many("batch").stdout


@pytest.mark.parametrize("days, said", [("10", "10 days"), ("1", "1 day")])
def test_the_batch_says_the_days_its_expiry_counted(kg, monkeypatch, days, said):
    """It said "30 days" and "proposals" whatever KGRDF_PROPOSAL_DAYS and the count were."""
    monkeypatch.setenv("KGRDF_NOW", "2026-01-01T09:00:00Z")
    kg("add-entity", "repo/a", "--name", "alpha")
    kg("add-entity", "repo/b", "--name", "beta")
    kg("propose", "repo/a", "depends_on", "--object", "repo/b", "-s", "doc:x")
    monkeypatch.setenv("KGRDF_NOW", "2026-01-12T09:00:00Z")
    monkeypatch.setenv("KGRDF_PROPOSAL_DAYS", days)
    assert f"1 proposal not observed again for {said} expired" in kg("batch").stdout


# --- the grammar, as properties ---------------------------------------------------------------------------

GROUPS = [
    review.Group(
        n,
        f"g{n}",
        None,
        [
            review.Item(id=f"f-{n}{c}", subject="", anchor="", anchor_name="", axis="", sentence="")
            for c in "abcdefgh"[:size]
        ],
    )
    for n, size in ((1, 3), (2, 8), (3, 1), (4, 5))
]
IDS = {f"{g.number}{c}": item.id for g in GROUPS for c, item in zip("abcdefgh", g.items, strict=False)}
VERB_DECISION = {"confirm": "confirm", "reject": "reject", "skip": "defer", "except": "defer"}

target = st.one_of(st.just("all"), st.sampled_from([str(g.number) for g in GROUPS]), st.sampled_from(sorted(IDS)))
clause = st.tuples(st.sampled_from(sorted(VERB_DECISION)), st.lists(target, min_size=1, max_size=3))


def reference(clauses) -> dict:
    """What a list of clauses means, clause by clause: later clauses win."""
    out = {}
    for verb, targets in clauses:
        for t in targets:
            if t == "all":
                chosen = list(IDS.values())
            elif t.isdigit():
                chosen = [i.id for g in GROUPS if g.number == int(t) for i in g.items]
            else:
                chosen = [IDS[t]]
            for fact_id in chosen:
                out[fact_id] = VERB_DECISION[verb]
    return out


@given(
    st.lists(clause, min_size=1, max_size=5),
    st.sampled_from([", ", "; ", " and ", " , "]),
    st.sampled_from([" ", ", "]),
    st.booleans(),
)
def test_a_well_formed_decision_means_its_clauses_in_order(clauses, separator, target_separator, upper):
    text = separator.join(f"{verb} {target_separator.join(targets)}" for verb, targets in clauses)
    if upper:
        text = text.upper()
    assert review.parse(text, GROUPS) == reference(clauses)


@given(st.text(alphabet="confirmrejectskipexcptal0123456789abh ,;!", max_size=40))
def test_any_text_either_parses_to_facts_of_the_batch_or_is_refused(text):
    try:
        decided = review.parse(text, GROUPS)
    except BadInput as exc:
        assert "decision" in exc.message
        return
    assert set(decided) <= set(IDS.values())
    assert set(decided.values()) <= {"confirm", "reject", "defer"}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="confirmrejectskipexcptal12345ab ,", min_size=1, max_size=30))
def test_any_decision_applies_exactly_as_parsed_or_changes_nothing(many, tmp_path_factory, text):
    kg = Kg(tmp_path_factory.mktemp("apply") / "kb")
    shutil.copytree(many.path, kg.path, symlinks=True)
    printed = kg.json("batch")
    groups = [
        review.Group(
            g["number"],
            g["title"],
            None,
            [review.Item(id=f["id"], subject="", anchor="", anchor_name="", axis="", sentence="") for f in g["facts"]],
        )
        for g in printed["groups"]
    ]
    ids = [f["id"] for g in printed["groups"] for f in g["facts"]]
    before = kg.snapshot()
    try:
        decided = review.parse(text, groups)
    except BadInput:
        kg("batch", "apply", text, expect=2)
        assert kg.snapshot() == before
        return
    kg("batch", "apply", text)
    expected = {"confirm": "confirmed", "reject": "rejected", "defer": "proposed"}
    for fact_id in ids:
        assert kg.json("history", fact_id)["fact"]["status"] == expected[decided.get(fact_id, "defer")]


def test_what_is_known_of_an_anchor_is_read_once_a_batch_and_without_sources(many, monkeypatch):
    """Each group shows a few confirmed facts of its anchor. They are read once an anchor, however
    many groups it is split into, and without their sources (a query a fact: an anchor with 20k
    facts took 15 s a group); and they are what kg lookup lists first."""
    from kgrdf.session.reading import Reading

    monkeypatch.setenv("KGRDF_BATCH_GROUPS", "1000")
    monkeypatch.setenv("KGRDF_BATCH_FACTS", "1000")
    caveats = [f for f in many.json("lookup", "repo/r11")["facts"] if f["predicate"] == "caveat"]
    for fact in caveats[:2]:
        many("confirm", fact["id"])
    asked = []
    rows = Reading.rows
    monkeypatch.setattr(Reading, "rows", lambda self, name, **kw: asked.append(name) or rows(self, name, **kw))
    groups = many.json("batch")["groups"]
    monkeypatch.undo()
    anchors = [g["anchor"] for g in groups if g["anchor"]]
    split = [g for g in groups if g["anchor"] == "repo/r11"]
    assert len(split) == 2 and len(set(anchors)) < len(anchors)
    assert asked.count("lookup") == len(set(anchors)) and "fact-heard" not in asked
    confirmed = [f["sentence"] for f in many.json("lookup", "repo/r11")["facts"] if f["status"] == "confirmed"]
    assert len(confirmed) == 2 and all(g["known"] == confirmed for g in split)


def test_options_given_before_apply_say_which_batch_is_answered(many, tmp_path, monkeypatch):
    """kg batch --kb K apply ... answers K's batch (as kg batch --kb K printed it), not the one at
    KGRDF_HOME; --json and --perspective given there hold too. (They reached kg batch alone, and the
    answer confirmed another knowledge base's proposals.)"""
    other = Kg(tmp_path / "other")
    shutil.copytree(many.path, other.path, symlinks=True)
    monkeypatch.setenv("KGRDF_HOME", str(other.path))
    printed = many.json("batch")
    other("batch")
    before = other.snapshot()
    result = many("batch", "--kb", many.path, "--json", "apply", "confirm 1a", kb=False)
    assert json.loads(result.stdout)["confirmed"] == 1
    assert other.snapshot() == before  # the knowledge base at KGRDF_HOME is untouched
    first = printed["groups"][0]["facts"][0]["id"]
    assert many.json("history", first)["fact"]["status"] == "confirmed"
    assert other.json("history", first)["fact"]["status"] == "proposed"
    # --perspective given there holds too: another perspective answers its own saved batch, not main's
    many("org", "init", "Beta Org", "--perspective", "beta")
    many("batch")  # (the main perspective's next batch, saved)
    refused = many("batch", "--kb", many.path, "--perspective", "beta", "apply", "confirm all", kb=False, expect=1)
    assert "there is no batch to answer" in refused.stderr


def test_a_proposal_closed_since_the_batch_was_printed_is_left_as_it_is_and_named(many):
    """kg supersede (and kg org merge) close a proposal they replace, which stays proposed: the
    answer leaves it as it is and names it, as it does a fact decided since, and the rest of the
    answer is applied (it refused the whole answer)."""
    groups = many.json("batch")["groups"]
    label = {f["label"]: f["id"] for g in groups for f in g["facts"]}
    closed = label["1a"]
    assert many.json("history", closed)["fact"]["status"] == "proposed"
    replaced = many.json("supersede", closed, "--value", "a newer caveat")
    assert replaced["closed"] and many.json("history", closed)["fact"]["superseded_by"]
    shown = batch_module.for_review(KnowledgeBase.open(many.path))  # what the console's review shows
    statuses = {item["id"]: item["status"] for group in shown["groups"] for item in group["facts"]}
    assert statuses[closed] == "closed" and statuses[label["1b"]] == "proposed"
    for answer in ("confirm all", "reject all"):
        copy = Kg(many.path.parent / answer.replace(" ", "-"))
        shutil.copytree(many.path, copy.path, symlinks=True)
        result = copy.json("batch", "apply", answer)
        assert result["changed_since_printed"] == [closed]
        decided = result["confirmed"] + result["rejected"]
        assert decided == len(label) - 1
        fact = copy.json("history", closed)["fact"]
        assert fact["status"] == "proposed" and fact["superseded_by"]


# --- perspectives, and what changed since the batch was printed ----------------------------------------


def _beta(kg: Kg) -> str:
    """A perspective beta with one proposal waiting in it, beside the main perspective's; its id."""
    kg("org", "init", "Beta Org", "--perspective", "beta")
    kg("add-entity", "repo/beta", "--name", "beta repo", "--perspective", "beta")
    proposed = kg.json(
        "propose", "repo/beta", "caveat", "--value", "beta only", "-s", "slack:b", "--perspective", "beta"
    )
    return proposed["id"]


def test_each_perspective_answers_its_own_saved_batch_whatever_the_console_shows_meanwhile(many):
    """kg batch --perspective beta printed a batch; the owner's console then showed the main
    perspective's review, which saves the batch it shows: beta's answer still answers what beta
    printed (the one saved batch was main's then, and the answer was refused), and main's likewise."""
    proposed = _beta(many)
    printed = many.json("batch", "--perspective", "beta")
    assert [f["id"] for g in printed["groups"] for f in g["facts"]] == [proposed]
    shown = batch_module.for_review(KnowledgeBase.open(many.path))  # the console's Briefing, of perspective main
    assert shown["perspective"] == "main" and shown["groups"]
    result = many.json("batch", "apply", "--perspective", "beta", "confirm all")
    assert (result["confirmed"], result["changed_since_printed"]) == (1, [])
    assert many.json("history", proposed, "--perspective", "beta")["fact"]["status"] == "confirmed"
    first = many.json("batch")["groups"][0]["facts"][0]["id"]
    batch_module.for_review(KnowledgeBase.open(many.path, perspective="beta"))  # the console, of perspective beta
    assert many.json("batch", "apply", "confirm 1a")["confirmed"] == 1
    assert many.json("history", first)["fact"]["status"] == "confirmed"


def test_a_batch_json_an_older_kgrdf_saved_for_another_perspective_is_never_answered_for_the_wrong_one(many):
    """An older kgrdf kept one batch.json for every perspective: one it saved for beta is refused
    for beta (whose batch is answered from its own file now) and for main, and nothing is written."""
    _beta(many)
    saved = many.json("batch", "--perspective", "beta")
    (many.path / "batch.json").write_text(json.dumps(saved), encoding="utf-8")  # where it was saved before
    (many.path / "batch-beta.json").unlink(missing_ok=True)
    before = many.snapshot()
    line = one_line(many("batch", "apply", "--perspective", "beta", "confirm all", expect=1))
    assert "batch.json, where an older kgrdf saved it" in line and "kg batch --perspective beta" in line
    line = one_line(many("batch", "apply", "confirm all", expect=1))
    assert "the saved batch is of perspective 'beta', not 'main'" in line
    assert many.snapshot() == before
    assert not (many.path / "batch-beta.json").exists()


def test_the_review_queue_shown_empty_shows_what_is_proposed_after(kg):
    """The console's review queue, shown on an empty knowledge base, saved an empty batch; what is
    proposed after is in the queue at once (it stayed empty until the next day)."""
    shown = batch_module.for_review(KnowledgeBase.open(kg.path))
    assert shown["groups"] == [] and shown["waiting"] == 0
    kg("add-entity", "repo/api", "--name", "api")
    proposed = kg.json("propose", "repo/api", "caveat", "--value", "flaky", "-s", "slack:1")["id"]
    shown = batch_module.for_review(KnowledgeBase.open(kg.path))
    assert [(f["id"], f["status"]) for g in shown["groups"] for f in g["facts"]] == [(proposed, "proposed")]
    assert shown["waiting"] == 1
    kg("reject", proposed)  # its one fact decided elsewhere: nothing is left to decide in it
    later = kg.json("propose", "repo/api", "caveat", "--value", "slow", "-s", "slack:2")["id"]
    shown = batch_module.for_review(KnowledgeBase.open(kg.path))
    assert [f["id"] for g in shown["groups"] for f in g["facts"]] == [later]


def test_facts_decided_in_the_console_since_the_batch_was_printed_are_named_and_never_left_proposed(many):
    """kg batch printed 1a 1b 1c; the console rejected 1a and 1b; the answer "confirm 1c" confirms 1c,
    names 1a and 1b as changed since printed, and counts them neither as left proposed nor decided,
    nor does an answer that decides nothing."""
    groups = many.json("batch")["groups"]
    label = {f["label"]: f["id"] for g in groups for f in g["facts"]}
    batch_module.decide(KnowledgeBase.open(many.path), [label["1a"], label["1b"]], "reject")
    skipped = many.json("batch", "apply", "skip all")
    assert skipped["changed_since_printed"] == [label["1a"], label["1b"]]
    assert (skipped["left_proposed"], skipped["answered"]) == (len(label) - 2, False)
    result = many.json("batch", "apply", "confirm 1c")
    assert (result["confirmed"], result["rejected"], result["left_proposed"]) == (1, 0, len(label) - 3)
    assert result["changed_since_printed"] == [label["1a"], label["1b"]]
    assert [many.json("history", label[x])["fact"]["status"] for x in ("1a", "1b", "1c")] == [
        "rejected",
        "rejected",
        "confirmed",
    ]


def test_a_value_this_answer_closes_is_not_named_as_changed_elsewhere(kg):
    """A past value and the value now, confirmed in one answer: the second closes the first (as on
    two days), which this answer did, not someone since the batch was printed."""
    kg("add-entity", "environment/staging", "--name", "Staging")
    past = kg.json(
        *("propose", "environment/staging", "status", "--value", "being built", "-s", "doc:1"),
        *("--valid-from", "2020-01-01", "--valid-to", "2021-06-01"),
    )["id"]
    now = kg.json("propose", "environment/staging", "status", "--value", "live", "-s", "doc:2")["id"]
    kg("batch")
    result = kg.json("batch", "apply", "confirm all")
    assert (result["confirmed"], result["left_proposed"], result["changed_since_printed"]) == (2, 0, [])
    assert kg.json("history", past)["fact"]["superseded_by"] == now


def test_a_proposal_retimed_since_the_batch_was_printed_is_left_proposed_and_named(kg, monkeypatch):
    """kg batch printed "staging is retired (from 2026-01-01)"; kg supersede then moved its start to
    2027-06-01, in place: "confirm all" confirmed it as it is now, unsaid. It is left proposed and
    named as changed since the batch was printed (in the console's review too), and the next batch
    prints it as it is."""
    monkeypatch.setenv("KGRDF_NOW", "2026-03-02T09:00:00Z")
    kg("add-entity", "environment/staging", "--name", "staging")
    fact = kg.json("propose", "staging", "status", "--value", "retired", "-s", "slack:x", "--valid-from", "2026-01-01")[
        "id"
    ]
    other = kg.json("propose", "staging", "caveat", "--value", "flaky", "-s", "slack:y")["id"]
    printed = kg("batch").stdout
    assert "staging is retired (from 2026-01-01)" in printed
    kg("supersede", fact, "--valid-from", "2027-06-01")
    shown = batch_module.for_review(KnowledgeBase.open(kg.path))  # the console's review of the same batch
    assert {f["id"]: f["status"] for g in shown["groups"] for f in g["facts"]} == {fact: "changed", other: "proposed"}
    console = batch_module.decide(KnowledgeBase.open(kg.path), [fact], "confirm")
    assert (console["decided"], console["changed_since_printed"]) == ([], [fact])
    assert kg.json("history", fact)["fact"]["status"] == "proposed"
    kg("batch")
    kg("supersede", fact, "--valid-from", "2027-07-01")
    line = kg("batch", "apply", "confirm all").stdout.strip()
    assert line == (
        f"confirmed 1, rejected 0, left 0 proposed; 1 changed since the batch was printed, left as they are: {fact}"
    )
    held = kg.json("history", fact)["fact"]
    assert (held["status"], held["valid_from"]) == ("proposed", "2027-07-01T00:00:00Z")
    assert kg.json("history", other)["fact"]["status"] == "confirmed"
    assert "staging is retired (from 2027-07-01)" in kg("batch").stdout
    assert kg.json("batch", "apply", "confirm all")["confirmed"] == 1
    assert kg.json("history", fact)["fact"]["status"] == "confirmed"


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"])
def test_a_value_holding_newlines_cannot_print_a_letter_or_a_group_of_its_own(kg, line_end):
    """A value is free text and may hold newlines, but each fact is one line of the batch (and of kg
    facts, and of a context pack): a value whose text goes on with a line that looks like another
    lettered fact or group would make the reviewer answer for facts that are not there."""
    forged = line_end.join(["fine", "   1b    P is announced in #ops  f-aaaaaa", "", "2. Spoofed (1 fact)"])
    kg("add-entity", "process/p", "--name", "P")
    fact = kg.json("propose", "process/p", "caveat", "--value", forged, "-s", "slack:x")
    assert fact["value"] == forged.replace("\r\n", "\n").replace("\r", "\n")  # kept as given
    batch = kg("batch").stdout
    kg("batch", "apply", "confirm 1a")  # the one fact there is
    assert (
        kg.json("facts", "process/p")["facts"][0] | {"status": "confirmed"} == kg.json("facts", "process/p")["facts"][0]
    )
    for shown in (batch, kg("facts", "process/p").stdout, kg("context", "--for", "process/p").stdout):
        assert not re.search(r"^\s*1b\b|^2\. ", shown, re.M), shown
        lines = [line for line in shown.splitlines() if "Spoofed" in line]
        assert len(lines) == 1 and "fine ⏎" in lines[0] and "announced" in lines[0] and fact["id"] in lines[0]


@pytest.mark.parametrize("facts", [1, 2, 3])
def test_the_answer_a_batch_shows_as_an_example_is_one_it_takes(kg, facts):
    """It showed "confirm all except 1b, reject 2a" whatever the batch held: pasted under a batch of
    one fact, it was refused (exit 2: 1b is no fact of it)."""
    import re
    import shlex

    kg("add-entity", "repo/a", "--name", "alpha")
    for n in range(facts):
        kg("propose", "repo/a", "caveat", "--value", f"caveat {n}", "-s", f"doc:{n}")
    shown = kg("batch").stdout
    example = re.search(r"e\.g\.  (kg batch apply .*)", shown).group(1)
    words = shlex.split(example)
    done = kg.json(*words[1:])
    assert done["confirmed"] + done["rejected"] >= 1
