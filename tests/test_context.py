"""Context packs (§7): small, cited, ranked, within their token budget; confirmed and current facts only."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrdf import context
from kgrdf.context import count_tokens
from kgrdf.errors import BadInput

# --- the token count ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("", 0),
        ("reviews", 2),  # a run of letters: ceil(7 / 4)
        ("Sam", 1),
        ("a b", 2),  # a single space counts nothing: BPE joins it to the next word
        ("f-3k9x2a", 8),  # each digit, each punctuation mark, each letter run apart
        ("2026-10-02", 10),
        ("·", 2),  # a non-ASCII character: its UTF-8 bytes
        ("café", 5),
        ("a\nb", 3),
        ("- x", 2),
        ("1.   x", 4),  # a run of spaces counts ceil(length / 4)
        ("a" + " " * 20 + "b", 7),  # a long run counts by its length, not 1
        ("a\u00a0b", 4),  # a space past ASCII counts its UTF-8 bytes, as any non-ASCII character does
        ("\u3000" * 3, 9),
        ("a\rb\x0cc", 5),  # an ASCII control character counts 1
    ],
)
def test_count_tokens_follows_the_stated_method(text, tokens):
    assert count_tokens(text) == tokens


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=40), min_size=1, max_size=6))
def test_count_tokens_adds_up_over_lines(lines):
    assert count_tokens("\n".join(lines)) == sum(map(count_tokens, lines)) + len(lines) - 1


@settings(max_examples=800)
@given(
    st.text(alphabet=st.characters(max_codepoint=127), max_size=80)
    | st.text(alphabet=st.characters(max_codepoint=127) | st.sampled_from("·—…é٣\u00a0\u2028"), max_size=80)
    | st.text(max_size=40)
)
def test_text_counts_by_kind_as_it_does_piece_by_piece(text):
    assert count_tokens(text) == context.count_pieces(text)


@pytest.mark.parametrize("code", range(128))
def test_every_ascii_character_counts_by_kind_as_it_does_alone(code):
    character = chr(code)
    assert count_tokens(character) == context.count_pieces(character)
    assert count_tokens(f"x{character}x{character}") == context.count_pieces(f"x{character}x{character}")


@given(
    st.text(alphabet=st.characters() | st.sampled_from(" \t\u00a0\u3000\u2028\r\x0b"), min_size=1, max_size=60).filter(
        lambda text: text not in (" ", "\t")
    )
)
def test_no_text_but_one_space_or_tab_counts_nothing(text):
    """A pack of 20,000 no-break spaces counted 72 tokens for 40 KB, and a run of 20,000 spaces 1."""
    assert count_tokens(text) >= 1
    assert count_tokens(text * 8) >= 2 * count_tokens(text)


def test_the_method_is_stated_in_help_and_json(demo):
    assert "ceil(length/4)" in context.TOKEN_METHOD
    assert "ceil(length/4)" in " ".join(demo("context", "--help", kb=False).stdout.split())
    assert demo.json("context", "--for", "release")["token_method"] == context.TOKEN_METHOD


# --- the pure core: ranking, sources, budget -----------------------------------------------------------


def fact(fid, kind, sentence=None, **extra):
    return {
        "id": fid,
        "kind": kind,
        "sentence": sentence or f"fact {fid}",
        "source": "report:x",
        "entity": "process/p",
        **extra,
    }


def test_rank_puts_rework_first_then_the_thing_itself_then_its_neighbourhood():
    facts = [
        fact("f-around", "around", anchor="step/b", anchor_order=2),
        fact("f-link", "links"),
        fact("f-step2", "steps", order=2),
        fact("f-about", "about"),
        fact("f-rework-around", "around", anchor="step/a", anchor_order=1, prevents_rework=True),
        fact("f-step1", "steps", order=1),
        fact("f-rework-link", "links", prevents_rework=True),
        fact("f-around-first", "around", anchor="step/a", anchor_order=1),
    ]
    ranked = flat(context.rank(facts))
    assert [f["id"] for f in ranked] == [
        "f-rework-link",
        "f-rework-around",
        "f-step1",
        "f-step2",
        "f-about",
        "f-link",
        "f-around-first",
        "f-around",
    ]
    assert [f["section"] for f in ranked[:3]] == ["prevents rework", "prevents rework", "steps"]


def test_rank_keeps_the_packed_entities_direct_facts_before_any_neighbourhood():
    ranked = flat(
        context.rank(
            [
                fact("f-b-around", "around", entity_index=0),
                fact("f-c", "about", entity_index=1),
                fact("f-a", "links", entity_index=0),
            ]
        )
    )
    assert [f["id"] for f in ranked] == ["f-a", "f-c", "f-b-around"]


def test_short_source_names_the_first_source_shortened():
    assert context.short_source([]) == "no source"
    assert (
        context.short_source([{"kind": "ledger", "ref": "review-rota"}, {"kind": "transcript", "ref": "s-1"}])
        == "ledger:review-rota +1"
    )
    assert context.short_source([{"kind": "slack", "ref": "https://www.chat.example/p1"}]) == "slack:chat.example/p1"
    long = context.short_source([{"kind": "doc", "ref": "https://docs.example/" + "a" * 80 + "/end-part"}])
    assert long.startswith("doc:docs.example/") and long.endswith("/end-part") and "..." in long
    assert len(long) <= len("doc:") + context.SOURCE_WIDTH


HEAD = {
    "for": "p",
    "entities": [{"id": "process/p", "type": "process", "name": "P"}],
    "budget": 0,
    "token_method": context.TOKEN_METHOD,
}


def ranked_facts(n):
    facts = [
        fact(
            f"f-{i:06d}",
            "steps" if i % 3 == 0 else "about",
            order=i,
            prevents_rework=(i % 7 == 0),
            sentence=f"P has the step number {i} with some words",
        )
        for i in range(n)
    ]
    return context.rank(facts)


def flat(units):
    return [fact for unit in units for fact in unit]


@given(st.integers(min_value=1, max_value=3000), st.integers(min_value=0, max_value=60))
def test_fit_never_exceeds_the_budget_and_drops_from_the_bottom(budget, n):
    ranked = ranked_facts(n)
    try:
        pack = context.fit({**HEAD, "budget": budget}, ranked, len(ranked))
    except BadInput as exc:
        minimum = int(exc.hint.split()[2])
        assert minimum > budget
        assert context.fit({**HEAD, "budget": minimum}, ranked, len(ranked))["tokens"] <= minimum
        return
    assert pack["tokens"] == count_tokens(pack["markdown"]) <= budget
    ranked = flat(ranked)
    assert [f["id"] for f in pack["facts"]] == [f["id"] for f in ranked[: len(pack["facts"])]]
    assert pack["omitted"] == n - len(pack["facts"])
    if pack["omitted"]:
        assert f"_{pack['omitted']} more fact" in pack["markdown"]
        # the next fact in the ranking would not have fitted
        one_more = ranked[: len(pack["facts"]) + 1]
        assert (
            count_tokens("\n".join(context._lines({**HEAD, "budget": budget}, one_more, pack["omitted"] - 1))) > budget
        )


def test_fit_reads_only_as_far_as_it_keeps():
    taken = []

    def cited():
        for unit in ranked_facts(50):
            taken.append(unit[0]["id"])
            yield unit

    pack = context.fit({**HEAD, "budget": 200}, cited(), 50)
    assert 0 < len(pack["facts"]) < 50
    assert len(taken) == len(pack["facts"]) + 1  # one more was tried and did not fit


def test_markdown_has_a_title_sections_and_one_cited_bullet_per_fact():
    pack = context.fit(
        {**HEAD, "budget": 1500},
        context.rank(
            [
                fact("f-aaaaa1", "steps", "P has the step A", order=1),
                fact("f-aaaaa2", "about", "P exists to ship"),
                fact("f-aaaaa3", "links", "Sam approves P", prevents_rework=True),
            ]
        ),
        3,
    )
    assert pack["markdown"].splitlines() == [
        "# Context: P (process, process/p)",
        "Confirmed facts, most useful first, each with [fact id · source].",
        "",
        "## Prevents rework",
        "- Sam approves P [f-aaaaa3 · report:x]",
        "",
        "## P: steps, in order",
        "1. P has the step A [f-aaaaa1 · report:x]",
        "",
        "## About P",
        "- P exists to ship [f-aaaaa2 · report:x]",
    ]
    assert context.markdown(pack) == pack["markdown"]


def test_a_step_that_prevents_rework_keeps_its_place_among_the_steps():
    """A process's second step, prevents-rework, was listed first without its number, and the steps
    read 1, 3: an agent could not tell where it goes."""
    pack = context.fit(
        {**HEAD, "budget": 1500},
        context.rank(
            [
                fact("f-aaaaa1", "steps", "P has the step A", order=1),
                fact("f-aaaaa2", "steps", "P has the step B", order=2, prevents_rework=True),
                fact("f-aaaaa3", "steps", "P has the step C", order=3),
            ]
        ),
        3,
    )
    assert pack["markdown"].splitlines()[3:] == [
        "## Prevents rework",
        "- step 2: P has the step B [f-aaaaa2 · report:x]",
        "",
        "## P: steps, in order",
        "1. P has the step A [f-aaaaa1 · report:x]",
        "3. P has the step C [f-aaaaa3 · report:x]",
    ]


def test_a_pack_with_no_facts_says_so():
    pack = context.fit({**HEAD, "budget": 100}, [], 0)
    assert pack["facts"] == [] and pack["omitted"] == 0
    assert "No confirmed facts hold now" in pack["markdown"]


# --- packs from the example organization ----------------------------------------------------------------


def test_the_release_pack_lists_its_steps_in_order_with_ids_and_sources(demo):
    pack = demo.json("context", "--for", "release")
    assert pack["entities"] == [{"id": "process/release", "type": "process", "name": "Release process"}]
    steps = [f for f in pack["facts"] if f["section"] == "steps"]
    assert [f["sentence"] for f in steps] == [
        "Release process has the step Merge to main",
        "Release process has the step Deploy to staging",
        "Release process has the step Canary checks",
        "Release process has the step Gradual rollout to production",
    ]
    assert [f["order"] for f in steps] == [1, 2, 3, 4]
    known = {f["object"]: f for f in demo.json("facts", "release", "--predicate", "has_step")["facts"]}
    assert [f["id"] for f in steps] == [
        known[s]["id"]
        for s in ("step/merge-to-main", "step/deploy-staging", "step/canary-checks", "step/gradual-rollout")
    ]
    assert {f["source"] for f in steps} == {"memory:release-notes"}
    # each step's gates come with the process, in the neighbourhood
    around = [f["sentence"] for f in pack["facts"] if f["section"] == "around"]
    assert "Canary checks is gated by Smoke tests" in around
    assert "Merge to main uses CI pipeline" in around
    text = demo("context", "--for", "release").stdout
    first, channel = steps[0], next(f for f in pack["facts"] if f["predicate"] == "posts_to")
    assert f"1. Release process has the step Merge to main [{first['id']} · memory:release-notes]" in text
    assert f"- Release process is announced in #deploys [{channel['id']} · transcript:session-2026-10-01]" in text


def test_the_web_app_pack_names_its_reviewers_owners_and_users(demo):
    pack = demo.json("context", "--for", "repo/web-app")
    by_sentence = {f["sentence"]: f for f in pack["facts"]}
    reviewer = by_sentence["Sam Reyes reviews web-app"]
    assert reviewer["source"] == "ledger:review-rota +1" and reviewer["id"].startswith("f-")
    assert {"Web team owns web-app", "Release process uses web-app", "web-app depends on api"} <= set(by_sentence)
    assert pack["omitted"] == 0


def test_prevents_rework_facts_come_first(demo):
    for target in ("release", "hotfix", "repo/web-app", "staging-2", "Dana"):
        facts = demo.json("context", "--for", target)["facts"]
        flags = [f["prevents_rework"] for f in facts]
        assert True in flags, target
        assert flags == sorted(flags, reverse=True), target
        assert all(f["section"] == "prevents rework" for f in facts if f["prevents_rework"])


def test_a_proposed_fact_appears_only_once_confirmed(demo):
    proposed = demo.json("propose", "web-app", "caveat", "--value", "builds need node 22", "--source", "pr:web#9")
    assert proposed["status"] == "proposed"
    assert proposed["id"] not in {f["id"] for f in demo.json("context", "--for", "web-app")["facts"]}
    demo("confirm", proposed["id"])
    shown = {f["id"]: f for f in demo.json("context", "--for", "web-app")["facts"]}
    assert shown[proposed["id"]]["sentence"] == "web-app comes with a caveat: builds need node 22"
    assert shown[proposed["id"]]["source"] == "pr:web#9"


def test_proposed_facts_of_the_example_never_appear(demo):
    # api's caveat and Sam's channel preference are proposed in the example
    assert "integration tests" not in demo("context", "--for", "api").stdout
    assert "prefers" not in demo("context", "--for", "person/sam").stdout


def test_rejected_superseded_and_closed_facts_never_appear(demo):
    ids = lambda target: {f["id"] for f in demo.json("context", "--for", target)["facts"]}  # noqa: E731
    old_entry = next(
        f
        for f in demo.json("facts", "hotfix", "--predicate", "entry_point", "--all")["facts"]
        if f.get("superseded_by")
    )
    assert old_entry["id"] not in ids("hotfix")
    assert "#incidents" not in demo("context", "--for", "hotfix").stdout
    depends = demo.json("facts", "web-app", "--predicate", "depends_on")["facts"][0]
    demo("reject", depends["id"])
    assert depends["id"] not in ids("web-app")
    assert depends["id"] not in ids("api")
    reviewer = demo.json("facts", "priya", "--predicate", "reviews")["facts"][0]
    new = demo.json("supersede", reviewer["id"], "--object", "repo/web-app")  # Priya reviews web-app now
    assert reviewer["id"] not in ids("api") and new["id"] in ids("web-app")
    ended = demo.json(
        "propose",
        "api",
        "caveat",
        "--value",
        "old quirk",
        "--source",
        "pr:1",
        "--valid-from",
        "2019-01-01",
        "--valid-to",
        "2020-01-01",
    )
    demo("confirm", ended["id"])
    assert ended["id"] not in ids("api")


def test_a_pack_holds_only_facts_and_names(demo):
    line = {"entity": "person/sam", "perspective": "main", "kind": "chat", "value": "U0SECRET42"}
    (demo.path / "identifiers.jsonl").write_text(json.dumps(line) + "\n")
    text = demo("context", "--for", "web-app").stdout
    assert "U0SECRET42" not in text
    assert "customer-facing dashboard" not in text  # the summary is not a fact
    assert "webapp" not in text  # nor is an alias


def test_a_topic_packs_the_few_entities_that_match_it(demo):
    pack = demo.json("context", "--for", "deploy")
    assert pack["topic"] == "deploy"
    assert [e["id"] for e in pack["entities"]] == ["channel/deploys", "step/deploy-staging"]
    assert len({f["id"] for f in pack["facts"]}) == len(pack["facts"])  # a fact between two of them once
    assert demo("context", "--for", "deploy").stdout.startswith(
        '# Context for "deploy": #deploys (channel, channel/deploys)'
    )


def test_an_ambiguous_name_is_packed_as_a_topic(seeded):
    pack = seeded.json("context", "--for", "Web")
    assert {"team/web", "team/platform"} <= {e["id"] for e in pack["entities"]}
    assert len(pack["entities"]) <= context.TOPIC_ENTITIES


def test_a_topic_that_matches_nothing_exits_1(demo):
    result = demo("context", "--for", "quantum teleporter", expect=1)
    assert "nothing is called 'quantum teleporter'" in result.stderr and "kg search" in result.stderr
    doc = json.loads(demo("context", "--for", "quantum teleporter", "--json", expect=1).stdout)
    assert doc["error"] == "not_found"


def test_the_budget_cuts_whole_facts_and_says_how_many(demo):
    full = demo.json("context", "--for", "release")
    small = demo.json("context", "--for", "release", "--budget", "150")
    assert small["tokens"] <= 150 < full["tokens"]
    assert [f["id"] for f in small["facts"]] == [f["id"] for f in full["facts"][: len(small["facts"])]]
    assert small["omitted"] == len(full["facts"]) - len(small["facts"]) > 0
    assert f"_{small['omitted']} more facts left out to fit 150 tokens._" in small["markdown"]


def test_a_budget_too_small_for_the_title_exits_2_naming_the_minimum(demo):
    result = demo("context", "--for", "release", "--budget", "20", expect=2)
    minimum = int(result.stderr.split("give --budget ")[1].split()[0])
    assert minimum > 20
    assert demo.json("context", "--for", "release", "--budget", str(minimum))["tokens"] <= minimum
    assert "positive" in demo("context", "--for", "release", "--budget", "0", expect=2).stderr


def test_the_default_budget_is_a_setting(demo, monkeypatch):
    assert demo.json("context", "--for", "release")["budget"] == 1500
    monkeypatch.setenv("KGRDF_CONTEXT_BUDGET", "120")
    pack = demo.json("context", "--for", "release")
    assert pack["budget"] == 120 and pack["tokens"] <= 120
    monkeypatch.setenv("KGRDF_CONTEXT_BUDGET", "lots")
    assert "KGRDF_CONTEXT_BUDGET" in demo("context", "--for", "release", expect=2).stderr


def test_json_is_one_document_of_the_stated_shape(demo):
    pack = demo.json("context", "--for", "hotfix")
    assert set(pack) == {"for", "entities", "budget", "tokens", "token_method", "facts", "omitted", "markdown"}
    assert pack["tokens"] == count_tokens(pack["markdown"])
    for f in pack["facts"]:
        assert {"id", "sentence", "source", "section", "entity", "predicate", "prevents_rework"} <= set(f)
        assert f["section"] in ("prevents rework", "steps", "about", "links", "around")


def test_markdown_is_the_default_output(demo):
    text = demo("context", "--for", "hotfix").stdout
    assert text.startswith("# Context: Hotfix process (process, process/hotfix)\n")
    assert "## Prevents rework\n- Hotfix process has the rule: Only Dana approves a hotfix" in text
    assert text == demo.json("context", "--for", "hotfix")["markdown"] + "\n"


def test_anchored_entities_beyond_the_cap_are_reported(demo, monkeypatch):
    monkeypatch.setattr(context, "MAX_ANCHORED", 1)
    pack = demo.json("context", "--for", "release")
    assert pack["unread_entities"] == 3
    assert {f["anchor"] for f in pack["facts"] if f["section"] == "around"} == {"step/merge-to-main"}
    assert "The facts of 3 more anchored entities were not read." in pack["markdown"]


# --- budgets over the example, on the library ------------------------------------------------------------

TARGETS = [
    "release",
    "hotfix",
    "repo/web-app",
    "api",
    "staging",
    "staging-2",
    "Dana",
    "person/sam",
    "deploy",
    "lesson/retired-env-no-work",
    "step/canary-checks",
    "organization/fernhill",
    "stag",
]


@pytest.fixture(scope="module")
def session(demo_template):
    from kgrdf.kb import KnowledgeBase

    with KnowledgeBase.open(demo_template).reading() as reading:
        yield reading


@pytest.fixture(scope="module")
def full_packs(session):
    return {target: context.pack(session, target, 10**6) for target in TARGETS}


@settings(max_examples=150, deadline=None)
@given(budget=st.integers(min_value=50, max_value=3000), target=st.sampled_from(TARGETS))
def test_packs_never_exceed_their_budget(session, full_packs, budget, target):
    full = full_packs[target]
    try:
        pack = context.pack(session, target, budget)
    except BadInput as exc:
        assert int(exc.hint.split()[2]) > budget
        return
    assert pack["tokens"] == count_tokens(pack["markdown"]) <= budget
    assert count_tokens(pack["markdown"] + "\n") <= budget + 1  # what the CLI prints: one newline more
    kept = [f["id"] for f in pack["facts"]]
    assert kept == [f["id"] for f in full["facts"]][: len(kept)]
    assert pack["omitted"] == len(full["facts"]) - len(kept)
    assert (pack["omitted"] > 0) == (f"{pack['omitted']} more fact" in pack["markdown"])


def test_every_example_pack_is_confirmed_and_current(session, full_packs):
    confirmed = {}
    for target in TARGETS:
        for f in full_packs[target]["facts"]:
            confirmed.setdefault(f["id"], session.fact(f["id"]))
    assert confirmed
    assert all(f.status == "confirmed" and f.current for f in confirmed.values())


def test_a_lone_surrogate_is_counted_not_a_crash():
    # JSON may carry one ("\ud800"), and so may a name read back from the index.
    assert count_tokens("\ud800") == 3


def test_a_message_that_mentions_no_known_name_gives_a_pack_that_says_so(demo):
    """It said 'No confirmed facts yet', of a knowledge base full of them; --for a name nothing has exits 1."""
    pack = demo.json("context", "--message", "the weather is nice today")
    assert pack["entities"] == [] and pack["facts"] == []
    assert "The message mentions no known name or alias: nothing to pack." in pack["markdown"]
    assert "No confirmed facts hold now" not in pack["markdown"]
    assert "nothing is called" in demo("context", "--for", "the weather", expect=1).stderr


def test_a_message_whose_every_name_is_shared_says_so_not_that_it_names_none(kg):
    """Its pack said the message mentions no known name or alias, below a line listing the name it
    gave as one more than one entity has."""
    kg("add-entity", "system/mercury-a", "--name", "Mercury")
    kg("add-entity", "system/mercury-b", "--name", "Mercury")
    pack = kg.json("context", "--message", "Mercury is down")
    assert pack["entities"] == [] and pack["ambiguous"] == ["Mercury"]
    assert "mentions no known name" not in pack["markdown"] and "no known name" not in pack["markdown"]
    assert "Each name the message gives is more than one entity's" in pack["markdown"]


def test_values_that_conflict_are_packed_marked_newest_first_and_kept_or_cut_together(kg, monkeypatch):
    """Two confirmed values of a single-valued predicate stay, both shown as conflicting, newest
    first, until a person resolves them (§9): a pack listed them unmarked, oldest first, and a
    budget could keep the older alone, which an agent would take for the value. Also for an
    audience, and through kg mcp's service."""
    from kgrdf.serve.service import Caller, Service

    monkeypatch.setenv("KGRDF_NOW", "2026-03-05T09:00:00Z")
    kg("add-entity", "process/ship", "--name", "Ship")
    heard = ["--audience", "public"]
    old = kg.json("propose", "process/ship", "purpose", "-v", "mkolder", "-s", "ledger:1", "-s", "report:1", *heard)
    monkeypatch.setenv("KGRDF_NOW", "2026-03-06T09:00:00Z")
    new = kg.json("propose", "process/ship", "purpose", "-v", "mknewer", "-s", "ledger:2", "-s", "report:2", *heard)
    kg("propose", "process/ship", "caveat", "-v", "mkcaveat", "-s", "ledger:3", "-s", "report:3")
    assert old["status"] == new["status"] == "confirmed"
    pack = kg.json("context", "--for", "process/ship")
    conflicting = [(f["id"], f.get("conflicting")) for f in pack["facts"] if f["predicate"] == "purpose"]
    assert conflicting == [(new["id"], [old["id"]]), (old["id"], [new["id"]])]
    lines = kg("context", "--for", "process/ship").stdout.splitlines()
    assert [line for line in lines if "mkolder" in line or "mknewer" in line] == [
        f"- Ship exists to mknewer (conflicts with {old['id']}) [{new['id']} · ledger:2 +1]",
        f"- Ship exists to mkolder (conflicts with {new['id']}) [{old['id']} · ledger:1 +1]",
    ]
    served = Service(kg.path).context(Caller("t", "main", "owner"), entity="process/ship")
    assert served["facts"] == pack["facts"]
    public = kg.json("context", "--for", "process/ship", "--audience", "public")["facts"]
    assert [(f["id"], f.get("conflicting")) for f in public] == conflicting  # (the caveat is the owner's)
    for budget in range(60, pack["tokens"] + 1):  # every cut keeps both values or neither
        kept = {f["id"] for f in kg.json("context", "--for", "process/ship", "--budget", str(budget))["facts"]}
        assert len(kept & {old["id"], new["id"]}) != 1, budget


def test_the_self_organizations_conflicting_values_open_a_pack_together(kg, monkeypatch):
    """A pack opens with the first few facts of our own organization: they were cut before the
    values that conflict were marked, and the cut could keep one of two alone, unmarked."""
    monkeypatch.setenv("KGRDF_NOW", "2026-03-03T00:00:00Z")
    kg("add-entity", "repo/web-app", "--name", "web-app")
    kg("org", "init", "Acme")
    for key in ("a1", "a2", "a3", "a4"):
        kg("org", "set", "Acme", key, "v", "-s", "ledger:x", "-s", "report:y")
    old = kg.json("org", "set", "Acme", "founded", "2001", "-s", "ledger:x", "-s", "report:y")["id"]
    monkeypatch.setenv("KGRDF_NOW", "2026-03-03T00:05:00Z")
    new = kg.json("org", "set", "Acme", "founded", "2003", "-s", "ledger:x", "-s", "report:y")["id"]
    for asked in (("--for", "web-app"), ("--message", "how is web-app?")):
        facts = kg.json("context", *asked)["facts"]
        founded = [(f["id"], f.get("conflicting")) for f in facts if f["predicate"] == "founded"]
        assert founded == [(new, [old]), (old, [new])], asked


def test_a_merged_organizations_id_packs_the_one_kept(kg):
    """kg context --for a merged duplicate's id gave an empty pack about the duplicate (exit 0,
    "no confirmed facts"), while lookup and every other read lead to the organization kept."""
    kg("org", "add", "Ctkeep")
    kg("org", "add", "Ctdup Inc")
    kg("propose", "Ctdup Inc", "founded", "--value", "2023", "-s", "report:a", "-s", "ledger:b")
    kg("org", "merge", "Ctkeep", "Ctdup Inc")
    for asked in ("organization/ctdup-inc", "Ctdup Inc"):
        pack = kg.json("context", "--for", asked)
        assert [e["id"] for e in pack["entities"]] == ["organization/ctkeep"], asked
        assert [f["sentence"] for f in pack["facts"]] == ["Ctkeep was founded in 2023"], asked


def test_a_name_two_entities_share_repeated_in_a_message_is_left_out_once(kg):
    """Each repeat of a shared name was listed in the pack's title, which grew with the message
    until the default budget could not hold it (exit 2)."""
    kg("add-entity", "repo/orion", "--name", "Orion")
    kg("add-entity", "channel/orion", "--name", "Orion")
    kg("add-entity", "repo/api", "--name", "api")
    pack = kg.json("context", "--message", "Orion, orion and ORION " * 300 + "and the api")
    assert pack["ambiguous"] == ["Orion"] and [e["id"] for e in pack["entities"]] == ["repo/api"]
    assert pack["tokens"] <= pack["budget"]
