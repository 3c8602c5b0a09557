"""kg console in a real browser (Debian's chromium driven by Playwright) over a real kg console on
loopback: what a person sees on each page equals what kg prints, the review queue writes what kg
batch apply writes, and every request the page did not make is refused without writing anything.

One console and one browser serve the whole module; the tests that decide facts come last."""

import json
import re
import shutil
import urllib.error
import urllib.request

import pytest
from playwright import sync_api as playwright_api

from .conftest import Kg
from .consoling import Console, _NoRedirect, chromium, shot
from .serving import refused_a_port_in_use

WAITING = [  # proposals for the review queue, each from one untrusted source: they wait for a person
    ("repo/api", "caveat", "--value", "mkcaveat one: the api cache warms for ten minutes"),
    ("repo/api", "caveat", "--value", "mkcaveat two: rate limits apply to the batch endpoint"),
    ("repo/api", "caveat", "--value", "mkcaveat three: the api logs rotate daily"),
    ("repo/web-app", "caveat", "--value", "mkcaveat four: the web-app build needs node 22"),
    ("repo/web-app", "caveat", "--value", "mkcaveat five: the web-app storybook is stale"),
    ("repo/web-app", "caveat", "--value", "mkcaveat six: the web-app e2e suite is flaky"),
]
DECISIONS = [  # a decision this week's changes show replaced by a newer one
    ("decision/mkmono", "mkmonorepo", "one repository for all services"),
    ("decision/mkpoly", "mkpolyrepo", "a repository per service"),
]
IDENTIFIER = "U0MKCHATID9"  # a person's chat id: the console never reads identifiers.jsonl


@pytest.fixture(scope="module")
def kb(demo_template, tmp_path_factory) -> Kg:
    """The example organization, a few proposals waiting, a fact heard in #sales, and a chat id."""
    path = tmp_path_factory.mktemp("console") / "kb"
    shutil.copytree(demo_template, path, symlinks=True)
    kg = Kg(path)
    for subject, predicate, kind, value in WAITING:
        kg("propose", subject, predicate, kind, value, "--source", "slack:https://chat.example/" + value[9:13])
    kg("propose", "repo/api", "caveat", "--value", "mksales: the api is priced per seat", "-s", "slack:s1")
    kg(
        "propose",
        "repo/api",
        "caveat",
        "--value",
        "mksalesvalue heard in sales",
        "-s",
        "slack:s2",
        "--audience",
        "channel:sales",
    )
    for zone in ("Europe/Paris", "America/New_York"):  # two values of one single-valued predicate
        kg("propose", "team/platform", "timezone", "--value", zone, "-s", "slack:tz-" + zone[:2])
    kg("identifiers", "add", "Dana", "chat", IDENTIFIER)
    for key, name, states in DECISIONS:
        kg("add-entity", key, "--name", name)
        kg("confirm", kg.json("propose", key, "states", "--value", states, "-s", "report:adr")["id"])
    kg(
        "confirm",
        kg.json("propose", "decision/mkpoly", "supersedes", "--object", "decision/mkmono", "-s", "report:adr")["id"],
    )
    kg("org", "add", "Texture", "--alias", "Texture HQ")
    kg("propose", "Texture", "founded", "--value", "2023", "-s", "report:press-kit", "-s", "ledger:crm")
    kg("propose", "Texture", "founded", "--value", "2021", "-s", "report:registry", "-s", "ledger:filings")
    kg("org", "init", "Lyra Labs", "--perspective", "lyra")
    kg("add-entity", "repo/lyra", "--name", "mklyraname", "--perspective", "lyra")
    kg("org", "affiliate", "Texture", "--claimed-name", "Jim", "--role", "IT", "-s", "slack:c1", "--said-by", "Dana")
    return kg


@pytest.fixture(scope="module")
def console(kb):
    running = Console(kb.path)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def context(browser, console):
    """One browser session: it opened the address kg console printed, once."""
    made = browser.new_context(viewport={"width": 1280, "height": 900})
    page = made.new_page()
    page.goto(console.address)
    page.wait_for_selector("body[data-ready=home]")
    page.close()
    yield made
    made.close()


@pytest.fixture
def page(context):
    opened = context.new_page()
    errors = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    yield opened
    opened.close()
    assert not errors, errors


def visit(page, console, path: str, ready: str):
    page.goto(console.url + path)
    page.wait_for_selector(f"body[data-ready={ready}]")
    return page


def entity_path(page, console, name: str) -> str:
    """The opaque address of an entity's page, reached as a person does: through the search."""
    visit(page, console, "/", "home")
    page.fill("#search", name)
    page.press("#search", "Enter")
    page.wait_for_selector("body[data-ready=search]")
    page.get_by_role("link", name=name, exact=True).first.click()
    page.wait_for_selector("body[data-ready=entity]")
    return page.url.removeprefix(console.url)


# --- the door ------------------------------------------------------------------------------------------


def test_the_token_becomes_a_strict_http_only_cookie_and_leaves_the_address_bar(browser, console):
    made = browser.new_context()
    page = made.new_page()
    page.goto(console.address)
    page.wait_for_selector("body[data-ready=home]")
    assert page.url == console.url + "/"
    assert "token" not in page.evaluate("location.href")
    (cookie,) = made.cookies()
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["domain"]) == (True, "Strict", "127.0.0.1")
    assert page.evaluate("document.cookie") == ""  # the page's script cannot read it
    made.close()


def test_without_the_cookie_every_page_is_refused(browser, console):
    made = browser.new_context()
    page = made.new_page()
    answer = page.goto(console.url + "/")
    assert answer.status == 401
    assert "open the address kg console printed" in page.content()
    made.close()
    for path in ["/index.json", "/review.json", "/search.json?q=api", "/static/console.js", "/f/f-aaaaaa.json"]:
        status, _headers, body = console.request(path, cookie=False)
        assert status == 401, path
        assert json.loads(body)["error"] == "unauthorized"


def test_a_wrong_token_or_a_foreign_host_name_is_refused(console):
    status, _headers, _body = console.request("/?token=not-the-token", cookie=False)
    assert status == 401
    status, _headers, body = console.request("/index.json", headers={"Host": "evil.example:80"})
    assert status == 403
    assert "loopback address" in json.loads(body)["message"]


def test_two_consoles_open_in_one_browser_each_keep_their_own_session(browser, console, kb):
    """A browser sends a loopback cookie to every port of the host: two consoles' sessions under
    one name signed each other out (two perspectives open side by side, the first answered 401)."""
    other = Console(kb.path, "--perspective", "lyra")
    try:
        made = browser.new_context()
        first, second = made.new_page(), made.new_page()
        for page, opened in ((first, console), (second, other), (first, console), (second, other)):
            answer = page.goto(opened.address if page.url == "about:blank" else opened.url + "/")
            page.wait_for_selector("body[data-ready=home]")
            assert answer.status == 200 and page.url == opened.url + "/"
        assert "lyra" in second.locator("body").inner_text().lower()
        assert len(made.cookies()) == 2
        made.close()
    finally:
        other.stop()


def test_the_printed_address_opened_by_head_or_with_a_path_of_another_host_stays_on_the_console(console):
    """A link checker opens an address by HEAD first: it was told the token was wrong. A path
    beginning "//" made the redirect's Location another host's address."""
    opener = urllib.request.build_opener(_NoRedirect)
    for path, method, location in [
        ("/", "HEAD", "/"),
        ("//evil.example/", "GET", "/evil.example/"),
        ("/%2F%2Fevil.example", "GET", "/evil.example"),
    ]:
        request = urllib.request.Request(f"{console.url}{path}?token={console.token}", method=method)
        with pytest.raises(urllib.error.HTTPError) as answer:
            opener.open(request, timeout=30)
        assert (answer.value.code, answer.value.headers["location"]) == (303, location), path
    status, _headers, body = console.request(f"/?token={console.token}", method="POST", cookie=False)
    assert status == 405 and "opened (GET)" in json.loads(body)["message"]


def test_a_parameter_given_twice_is_refused_not_read_one_way_by_the_page_and_another_by_the_server(console):
    """/?as=public&as= showed 'public' in the page's box while the server read the last, empty: the
    owner's review stack and dm-only organizations, with no note that they were the owner's."""
    for path in ["/index.json?as=public&as=", "/review.json?as=&as=public", "/search.json?q=a&q=b"]:
        status, _headers, body = console.request(path)
        assert status == 400, path
        assert "is given twice" in json.loads(body)["message"]
    status, _headers, _body = console.request("/index.json?as=public")
    assert status == 200


def test_every_answer_carries_a_content_security_policy_of_self(console):
    for path in ["/", "/index.json", "/static/console.js", "/e/knope.json"]:
        _status, headers, _body = console.request(path)
        policy = headers["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy, path
        assert "http" not in policy
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_the_page_loads_nothing_from_anywhere_else(page, console):
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    visit(page, console, "/", "home")
    assert asked and all(url.startswith(console.url + "/") for url in asked), asked


@pytest.mark.parametrize(
    "args, says",
    [
        (["console", "--port", "many"], "many"),
        (["console", "--bogus"], "No such option"),
        (["console", "--perspective", "Nope!"], "perspective"),
    ],
)
def test_kg_console_s_bad_arguments_fail_at_once_in_one_line(kg, args, says):
    result = kg(*args, expect=2)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kg: ") and says in lines[0]


def test_a_perspective_the_knowledge_base_does_not_hold_is_refused_before_the_console_starts(kg):
    """It started, and every page and decision then answered 409 'no perspective'."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "kgrdf", "console", "--no-open", "--perspective", "typo", "--kb", str(kg.path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("kg: no perspective 'typo'; known: main")


def test_a_port_in_use_is_refused_in_one_line(kg):
    refused_a_port_in_use(kg, "console", "--no-open")


# --- the Knowledge home --------------------------------------------------------------------------------


def test_the_home_figures_are_kg_stats_and_kg_batch(page, console, kb):
    visit(page, console, "/", "home")
    shot(page, "home")
    stats = kb.json("stats")
    batch = kb.json("batch")
    shown = {name: page.inner_text(f"#fig-{name} .n") for name in ["entities", "facts", "confirmed", "proposed"]}
    assert shown == {
        "entities": str(stats["entity_count"]),
        "facts": str(stats["fact_count"]),
        "confirmed": str(stats["facts"]["confirmed"]),
        "proposed": str(stats["facts"]["proposed"]),
    }
    assert page.inner_text("#fig-in-batch .n") == str(batch["in_batch"])
    assert page.inner_text("#fig-waiting .n") == str(batch["waiting"])
    shown = page.eval_on_selector_all(
        "#review .item", "rows => rows.map(r => [r.dataset.label, r.querySelector('.sentence').innerText])"
    )
    assert shown == [[f["label"], f["sentence"]] for g in batch["groups"] for f in g["facts"]]


def test_the_briefing_measures_agree_with_kg(page, console, kb):
    visit(page, console, "/", "home")
    stats = kb.json("stats")
    bars = page.eval_on_selector_all(
        "#captured-chart rect.bar", "bars => bars.map(b => [b.dataset.day, +b.dataset.captured])"
    )
    assert len(bars) == 30 and sum(n for _day, n in bars) == stats["fact_count"]  # every fact was recorded today
    assert f"{stats['fact_count']} in all" in page.inner_text("#captured-summary")
    people = page.inner_text('#coverage [data-card="People"]')
    assert f"of {stats['entities']['person'] + stats['entities']['team']}" in people
    top = page.locator("#most-connected li").first
    name = top.locator("a").inner_text()
    around = kb.json("neighbors", name)
    assert f"{len(around['nodes']) - 1} linked" in top.inner_text()
    changes = page.inner_text("#week-changes")
    assert page.inner_text("#week-changes h3") == "2 changes"
    assert "Hotfix process starts in #incidents → Hotfix process starts in #deploys" in changes
    assert "mkmonorepo: one repository for all services → mkpolyrepo: a repository per service" in changes
    assert page.locator("#week-new li").count() == 10  # the newest, however many replacements came after
    assert "Not measured yet" in page.inner_text("#rediscovery")


def test_a_write_by_kg_while_the_console_runs_shows_on_its_next_page(console, kb):
    """The console keeps the index open between requests; a kg command takes its turn meanwhile."""
    before = console.json("/index.json")
    kb("add-entity", "repo/console-side", "--name", "mkconsoleside")
    after = console.json("/index.json")
    stats = kb.json("stats")
    assert after["stats"]["entity_count"] == before["stats"]["entity_count"] + 1 == stats["entity_count"]
    product = {card["card"]: card for card in after["coverage"]}["Product"]
    assert product["entities"] == {card["card"]: card for card in before["coverage"]}["Product"]["entities"] + 1


def test_the_constellation_draws_the_most_connected_and_leads_to_their_pages(page, console, kb):
    visit(page, console, "/constellation", "constellation")
    shot(page, "constellation")
    nodes = page.locator("#constellation a.node")
    stats = kb.json("stats")
    assert 5 < nodes.count() <= stats["entity_count"]
    assert f"of {stats['entity_count']} entities" in page.inner_text("#constellation-summary")
    degrees = [
        int(d) for d in page.eval_on_selector_all("#constellation a.node", "ns => ns.map(n => n.dataset.degree)")
    ]
    assert degrees == sorted(degrees, reverse=True)
    page.locator("#constellation a.node circle").first.click()
    page.wait_for_selector("body[data-ready=entity]")
    assert page.inner_text("#entity-name").startswith("Release process")


def test_raw_data_browses_by_axis_and_type_with_proposals_waiting(page, console, kb):
    visit(page, console, "/raw", "raw")
    stats = kb.json("stats")
    people = page.locator('#raw-axes [data-axis="People"]')
    assert people.locator(".n").inner_text() == str(stats["entities"]["person"] + stats["entities"]["team"])
    waiting = page.locator('#raw-axes [data-axis="Product"] .waiting').inner_text()
    about_repos = sum(
        f["status"] == "proposed" for r in ("repo/api", "repo/web-app") for f in kb.json("facts", r)["facts"]
    )
    assert waiting == f"{about_repos} proposals waiting"  # the Product axis's only proposals are about repos
    people.get_by_role("link", name="person", exact=True).click()
    page.wait_for_selector("#raw-list")
    shot(page, "raw-people")
    names = page.eval_on_selector_all("#raw-list a.entity", "links => links.map(a => a.textContent)")
    assert (
        names == sorted(names, key=str.casefold)
        and "Dana Okafor" in names
        and len(names) == stats["entities"]["person"]
    )
    page.fill("#raw-q", "sam")
    page.press("#raw-q", "Enter")
    page.wait_for_selector("#raw-list")
    assert page.eval_on_selector_all("#raw-list a.entity", "links => links.map(a => a.textContent)") == ["Sam Reyes"]


# --- search, entity and fact pages ---------------------------------------------------------------------


def test_search_leads_to_an_entity_page_whose_address_names_nobody(page, console):
    path = entity_path(page, console, "Hotfix process")
    assert re.fullmatch(r"/e/k[a-z2-7]{16}", path), path
    assert "hotfix" not in path
    assert page.inner_text("#entity-name").startswith("Hotfix process")
    assert "hotfixes" in page.inner_text("#aliases")


def test_search_names_the_entity_a_name_identifies_and_what_a_weak_alias_suggests(page, console, kb):
    visit(page, console, "/search?q=hotfixes", "search")
    shot(page, "search")
    identified = page.inner_text("#identified")
    assert "Hotfix process" in identified and "is called" in identified
    named = kb.json("identify", "hotfixes")["matches"]
    assert [m["name"] for m in named] == ["Hotfix process"]


def test_an_entity_page_groups_current_facts_and_greys_what_was_superseded(page, console, kb):
    entity_path(page, console, "Hotfix process")
    shot(page, "entity-hotfix")
    current = {f["id"] for f in kb.json("lookup", "process/hotfix")["facts"]}
    shown = set(page.eval_on_selector_all(".predicate li.fact", "rows => rows.map(r => r.dataset.fact)"))
    assert shown == current
    entry = page.locator('.predicate[data-predicate="entry_point"] li.fact')
    assert "Hotfix process starts in #deploys" in entry.inner_text()
    assert "confirmed" in entry.inner_text() and "valid 2026-10-20" in entry.inner_text()
    superseded = page.inner_text("#superseded")
    assert "Hotfix process starts in #incidents" in superseded
    assert "replaced by Hotfix process starts in #deploys" in superseded
    assert page.eval_on_selector("#superseded li", "li => getComputedStyle(li).color") == "rgb(154, 160, 170)"
    assert "Dana Okafor approves Hotfix process" in page.inner_text("#backlinks")
    names = page.eval_on_selector_all("#neighbourhood a.node text", "ts => ts.map(t => t.textContent)")
    assert {"Hotfix process", "#deploys", "Dana Okafor"} <= set(names)


def test_a_process_page_is_an_ordered_flow_of_its_steps(page, console, kb):
    entity_path(page, console, "Release process")
    shot(page, "entity-release-flow")
    steps = page.eval_on_selector_all("#flow .step:not(.entry) > a", "links => links.map(a => a.textContent)")
    facts = [f for f in kb.json("lookup", "process/release")["facts"] if f["predicate"] == "has_step"]
    assert steps == [f["object_name"] for f in sorted(facts, key=lambda f: f.get("order", 0))]
    assert len(steps) >= 3


def test_an_organization_page_shows_its_digest_with_conflicts_side_by_side(page, console, kb):
    entity_path(page, console, "Texture")
    shot(page, "entity-organization")
    founded = page.locator('#digest-attributes .attribute[data-key="founded"]')
    assert "conflicting" in founded.inner_text()
    assert sorted(founded.locator(".value a").all_inner_texts()) == ["2021", "2023"]
    claims = page.inner_text("#digest-claims")
    assert "Jim, IT" in claims and "unverified" in claims
    assert "Claims (unverified" in kb("org", "digest", "Texture").stdout


def test_a_fact_page_shows_its_history_provenance_and_audience(page, console, kb):
    entity_path(page, console, "Hotfix process")
    page.click("#superseded li a.fact-link")
    page.wait_for_selector("body[data-ready=fact]")
    shot(page, "fact-superseded")
    assert page.inner_text("#fact-sentence") == "Hotfix process starts in #incidents"
    history = page.inner_text("#history")
    old = kb.json("facts", "hotfix", "--all")["facts"]
    replaced = next(f for f in old if f.get("superseded_by"))
    assert f"superseded_by: → {replaced['superseded_by']}" in history
    assert "memory:hotfix-notes" in page.inner_text("#provenance")
    assert "owner" in page.inner_text("#provenance")
    assert "Not recorded as told" in page.inner_text("#disclosures")


def test_time_travel_shows_the_superseded_value_at_an_earlier_date(page, console):
    path = entity_path(page, console, "Hotfix process")
    page.fill("#as-of", "2026-06-01")
    page.click("#timetravel button")
    page.wait_for_selector("#travelling")
    shot(page, "entity-hotfix-as-of")
    assert "as_of=2026-06-01" in page.url and page.url.startswith(console.url + path)
    entry = page.inner_text('.predicate[data-predicate="entry_point"]')
    assert "starts in #incidents" in entry and "#deploys" not in entry


def test_a_person_page_shows_no_summary_and_no_identifier(page, console, kb):
    entity_path(page, console, "Dana Okafor")
    shot(page, "entity-person")
    assert page.inner_text("#person-note") == "Work-operational facts only. Delete on request: kg forget person/ID"
    assert page.locator("#summary").count() == 0
    html = page.content()
    twin = console.request(page.url.removeprefix(console.url) + ".json")[2]
    for text in (html, twin, page.url):
        assert IDENTIFIER not in text
        assert "person/dana" not in text
    assert "Dana Okafor's title is Engineering lead" in page.inner_text("main")


def test_show_as_an_audience_shows_exactly_what_kg_lookup_for_it_tells(page, console, kb):
    path = entity_path(page, console, "api")
    visit(page, console, path + "?as=channel:sales", "entity")
    shot(page, "entity-show-as-sales")
    told = kb.json("lookup", "repo/api", "--audience", "channel:sales")
    shown = set(page.eval_on_selector_all(".predicate li.fact", "rows => rows.map(r => r.dataset.fact)"))
    assert shown == {f["id"] for f in told["facts"]}
    text = page.inner_text("main")
    assert "mksalesvalue" in text and "mkcaveat" not in text
    assert "channel:sales" in page.inner_text("#showing-as")


def test_the_briefing_shown_as_sales_holds_what_sales_heard_and_leaves_the_review_to_the_owner(page, console, kb):
    visit(page, console, "/", "home")
    page.fill("#show-as", "channel:sales")
    page.press("#show-as", "Enter")
    page.wait_for_url(re.compile(r"as=channel"))
    page.wait_for_selector("body[data-ready=home] #showing-as")
    shot(page, "briefing-show-as-sales")
    assert "channel:sales" in page.inner_text("#showing-as")
    new = page.inner_text("#week-new")
    assert "mksalesvalue" in new and "mksales:" not in new and "mkcaveat" not in new  # the owner's own stay out
    links = page.eval_on_selector_all("main a.fact-link", "links => links.map(a => a.getAttribute('href'))")
    shown = {re.match(r"/f/([^?]+)", link).group(1) for link in links}
    told = kb.json("lookup", "repo/api", "--audience", "channel:sales")
    assert shown and shown <= {f["id"] for f in told["facts"]}
    assert page.inner_text("#review-owners").startswith("The review queue is the owner's")
    assert page.locator("#fig-in-batch").count() == 0 and page.locator("#review").count() == 0
    twin = console.json("/index.json?as=channel:sales")
    assert page.inner_text("#fig-facts .n") == str(twin["stats"]["fact_count"])
    page.click("#tab-raw")  # the view goes along
    page.wait_for_selector("body[data-ready=raw] #showing-as")
    assert "Proposals waiting are not counted" in page.inner_text("#raw-owners")


def test_every_page_has_a_json_twin_with_the_same_answer(page, console):
    path = entity_path(page, console, "Hotfix process")
    twin = console.json(path + ".json")
    assert twin["page"] == "entity" and twin["entity"]["name"] == "Hotfix process"
    assert "process/hotfix" not in json.dumps(twin)
    assert console.json("/search.json?q=hotfix")["results"][0]["id"] == path.removeprefix("/e/")


# --- the review queue ----------------------------------------------------------------------------------


def _decide(console, body, headers=None, kind="application/json"):
    sent = {"Origin": console.url, "Content-Type": kind, "X-KG-CSRF": _csrf(console), **(headers or {})}
    return console.request("/review/decide", "POST", json.dumps(body).encode(), {k: v for k, v in sent.items() if v})


def _csrf(console) -> str:
    _status, _headers, shell = console.request("/")
    return re.search(r'name="kg-csrf" content="([^"]+)"', shell).group(1)


def _waiting(kb) -> list[str]:
    return [f["id"] for g in json.loads((kb.path / "batch.json").read_text())["groups"] for f in g["facts"]]


def test_a_decision_without_the_page_s_cookie_origin_json_or_csrf_token_writes_nothing(console, kb):
    visit_first = console.json("/review.json")  # the batch the page shows
    fact = visit_first["review"]["groups"][0]["facts"][0]["id"]
    before = kb.snapshot()
    body = {"facts": [fact], "decision": "confirm"}
    refusals = [
        (401, console.request("/review/decide", "POST", json.dumps(body).encode(), cookie=False)),
        (403, _decide(console, body, {"Origin": "http://evil.example"})),
        (403, _decide(console, body, {"Origin": None})),
        (403, _decide(console, body, {"X-KG-CSRF": None})),
        (403, _decide(console, body, {"X-KG-CSRF": "not-the-token"})),
        (415, _decide(console, body, kind="application/x-www-form-urlencoded")),
        (415, _decide(console, body, kind="text/plain")),
    ]
    for expected, (status, _headers, text) in refusals:
        assert status == expected, text
        assert json.loads(text)["message"]
    for method in ["PUT", "DELETE", "PATCH"]:
        for path in ["/", "/index.json", "/review.json", "/review/decide", "/e/knope.json", "/static/console.js"]:
            status, _headers, _text = console.request(path, method, b"{}", {"Origin": console.url})
            assert status == 405, (method, path)
    for path in ["/", "/index.json", "/review", "/search.json"]:
        status, _headers, _text = _decide_at(console, path, body)
        assert status == 405, path
    assert kb.snapshot() == before
    assert kb.json("history", fact)["fact"]["status"] == "proposed"


def _decide_at(console, path, body):
    headers = {"Origin": console.url, "Content-Type": "application/json", "X-KG-CSRF": _csrf(console)}
    return console.request(path, "POST", json.dumps(body).encode(), headers)


def test_a_decision_on_a_fact_outside_the_batch_or_a_bad_body_is_refused_in_one_line(console, kb):
    console.json("/review.json")  # the batch the page shows, saved as kg batch saves it
    outside = next(f["id"] for f in kb.json("facts", "hotfix")["facts"])
    before = kb.snapshot()
    for body, status, says in [
        ({"facts": [outside], "decision": "reject"}, 409, "is not in the batch being answered"),
        ({"facts": [outside], "decision": "approve"}, 400, "decision must be one of confirm, reject, defer"),
        ({"facts": "f-aaaaaa", "decision": "confirm"}, 400, "facts is a list of fact ids"),
        ({"facts": [outside], "decision": "confirm", "reason": "x"}, 400, "the body is"),
        ([outside], 400, "the body is"),
    ]:
        code, _headers, text = _decide(console, body)
        assert code == status and says in json.loads(text)["message"], text
    code, _headers, text = console.request(
        "/review/decide",
        "POST",
        b"{not json",
        {"Origin": console.url, "Content-Type": "application/json", "X-KG-CSRF": _csrf(console)},
    )
    assert code == 400 and json.loads(text)["message"] == "the body is not JSON"
    assert kb.snapshot() == before


def test_bad_input_to_the_console_is_a_400_in_one_line_and_writes_nothing(console, kb):
    """A body nested past Python's recursion limit, a view the decision's address gets wrong, a
    number of stars in digits int() does not read: each a 400 in the console's one-line JSON error
    (each was a 500), and nothing written."""
    fact = console.json("/review.json")["review"]["groups"][0]["facts"][0]["id"]
    saved = (kb.path / "batch.json").read_text()
    before = kb.snapshot()
    headers = {"Origin": console.url, "Content-Type": "application/json", "X-KG-CSRF": _csrf(console)}
    deep = b"[" * 100_000 + b"]" * 100_000
    body = json.dumps({"facts": [fact], "decision": "confirm"}).encode()
    for path, method, data, says in [
        ("/review/decide", "POST", deep, "the body is not JSON"),
        ("/review/decide?hops=3", "POST", body, "hops is 1 or 2"),
        ("/constellation.json?stars=%C2%B2", "GET", None, "stars is a whole number"),
        ("/constellation.json?stars=%D9%A3", "GET", None, "stars is a whole number"),
        ("/constellation.json?stars=" + "9" * 5000, "GET", None, "stars is a number from 1 to"),
    ]:
        status, _headers, text = console.request(path, method, data, headers if method == "POST" else None)
        assert status == 400, (path, text)
        assert len(text.strip().splitlines()) == 1 and says in json.loads(text)["message"], (path, text)
    assert kb.snapshot() == before and (kb.path / "batch.json").read_text() == saved
    assert kb.json("history", fact)["fact"]["status"] == "proposed"
    status, _headers, text = console.request("/constellation.json?stars=" + "0" * 5000 + "5")  # five, in many digits
    assert status == 200, text


def test_a_decision_body_too_large_or_naming_no_text_fact_is_a_400_or_409_in_one_short_line(console, kb):
    console.json("/review.json")
    before = kb.snapshot()
    for body, status, says in [
        ({"facts": ["\ud800"], "decision": "defer"}, 409, "'\\ud800' is not in the batch being answered"),
        ({"facts": ["a" * 200_000], "decision": "defer"}, 409, "is not in the batch being answered"),
        ({"facts": ["a" * 300_000], "decision": "defer"}, 400, "a decision is at most 256 KiB"),
    ]:
        code, _headers, text = _decide(console, body)
        assert code == status and says in json.loads(text)["message"], text[:300]
        assert len(text) < 1000 and len(text.strip().splitlines()) == 1
    assert kb.snapshot() == before


def test_an_entity_a_view_may_not_see_is_not_known_without_naming_it(page, console, kb):
    path = entity_path(page, console, "Dana Okafor")  # a person: no fact of theirs is heard in #sales
    for shown in ("channel:sales", "public"):
        status, _headers, text = console.request(f"{path}.json?as={shown}")
        assert status == 404, text
        assert json.loads(text)["message"] == "this entity is not known to this view"
        assert "dana" not in text.lower() and "person/" not in text


@pytest.mark.parametrize("shown", ["garbage", "chanel:sales", "dm:"])
def test_an_audience_that_is_none_is_refused_not_shown_as_an_empty_knowledge_base(console, shown):
    status, _headers, text = console.request(f"/index.json?as={shown}")
    assert status == 400, text
    doc = json.loads(text)
    assert "is not an audience" in doc["message"] or "audience" in doc["message"], doc
    assert doc["hint"] == "show as public, channel:NAME, dm:A,B or owner"


def test_a_reason_shows_the_names_of_the_entities_it_names_never_their_ids(console, kb):
    kb("org", "add", "Mkdupco")
    kb("org", "add", "Mkdupco Inc")
    carried = kb.json("propose", "Mkdupco Inc", "industry", "--value", "energy", "-s", "slack:p6")["id"]
    kb("org", "merge", "Mkdupco", "Mkdupco Inc")
    kept = next(f["id"] for f in kb.json("facts", "Mkdupco", "--all")["facts"] if f["value"] == "energy")
    reasons = [e.get("reason") or "" for fid in {carried, kept} for e in console.json(f"/f/{fid}.json")["history"]]
    assert any("Mkdupco Inc was merged into Mkdupco" in r for r in reasons), reasons
    assert not any("organization/" in r for r in reasons), reasons


def test_the_briefing_s_waiting_figure_is_kg_batch_s_after_a_write(console, kb):
    console.json("/index.json")  # today's batch, made and saved
    kb("propose", "repo/api", "caveat", "--value", "mkwaiting one more", "-s", "slack:w9")
    shown = console.json("/index.json")["batch"]
    printed = kb.json("batch")
    assert (shown["waiting"], shown["batches"]) == (printed["waiting"], printed["batches"])
    assert console.json("/review.json")["review"]["waiting"] == printed["waiting"]


def test_an_unknown_page_or_method_is_answered_in_the_console_s_json_error(console):
    for path in ["/nope", "/nope.json", "/e/x/y.json"]:
        status, headers, text = console.request(path)
        assert (status, headers["Content-Type"]) == (404, "application/json"), (path, text)
        assert json.loads(text)["message"] == f"there is no page {path}"
    status, headers, text = console.request("/review/decide")
    assert (status, headers["Allow"], headers["Content-Type"]) == (405, "POST", "application/json")
    assert json.loads(text)["message"] == "GET is not answered at /review/decide"


def test_confirming_in_the_queue_confirms_the_fact_in_one_commit(page, console, kb):
    visit(page, console, "/review", "review")
    shot(page, "review")
    row = page.locator(".item", has_text="mkcaveat one")
    fact = row.get_attribute("data-fact")
    before = kb.snapshot()
    row.get_by_role("button", name="confirm", exact=True).click()
    page.wait_for_selector(f'.item[data-fact="{fact}"][data-outcome=confirmed]')
    after = kb.snapshot()
    assert int(after["commits"]) == int(before["commits"]) + 1
    shown = kb.json("facts", "repo/api")["facts"]
    assert next(f for f in shown if f["id"] == fact)["status"] == "confirmed"
    assert kb.json("history", fact)["fact"]["reviewed_by"] == "console"


def test_rejecting_in_the_queue_rejects_the_fact_in_one_commit(page, console, kb):
    visit(page, console, "/review", "review")
    row = page.locator(".item", has_text="mkcaveat two")
    fact = row.get_attribute("data-fact")
    before = kb.snapshot()
    row.get_by_role("button", name="reject").click()
    page.wait_for_selector(f'.item[data-fact="{fact}"][data-outcome=rejected]')
    assert int(kb.snapshot()["commits"]) == int(before["commits"]) + 1
    assert kb.json("history", fact)["fact"]["status"] == "rejected"


def test_deferring_writes_nothing(page, console, kb):
    visit(page, console, "/review", "review")
    row = page.locator(".item", has_text="mkcaveat three")
    fact = row.get_attribute("data-fact")
    before = kb.snapshot()
    row.get_by_role("button", name="defer").click()
    page.wait_for_selector(f'.item[data-fact="{fact}"][data-outcome=deferred]')
    assert kb.snapshot() == before
    assert kb.json("history", fact)["fact"]["status"] == "proposed"


def test_a_fact_decided_elsewhere_meanwhile_shows_as_such(page, console, kb):
    visit(page, console, "/review", "review")
    row = page.locator(".item", has_text="mkcaveat four")
    fact = row.get_attribute("data-fact")
    kb("confirm", fact)
    before = kb.snapshot()
    row.get_by_role("button", name="reject").click()
    page.wait_for_selector(f'.item[data-fact="{fact}"][data-outcome=elsewhere]')
    assert kb.snapshot()["journal"] == before["journal"]
    assert kb.json("history", fact)["fact"]["status"] == "confirmed"


def test_a_key_decides_the_fact_in_focus_and_a_stray_one_decides_nothing(page, console, kb):
    visit(page, console, "/", "home")  # the Briefing holds the queue too
    assert page.locator(".item:not(.decided)").count() >= 1
    before = kb.snapshot()
    page.keyboard.press("r")  # nothing in focus: a stray key
    page.keyboard.press("c")
    page.wait_for_timeout(500)
    assert kb.snapshot() == before and page.locator(".item.selected").count() == 0
    visit(page, console, "/review", "review")
    rows = page.locator(".item:not(.decided)")
    assert rows.count() >= 3
    aimed = rows.nth(2).get_attribute("data-fact")
    page.focus(f'.item[data-fact="{aimed}"]')  # as Tab leaves it: focus alone, no click
    page.keyboard.press("d")
    page.wait_for_selector(f'.item[data-fact="{aimed}"][data-outcome=deferred]')
    assert page.locator(".item[data-outcome=deferred]").count() == 1  # that one, and no other


def test_a_decision_made_in_the_page_still_says_so_after_going_back_to_it(page, console, kb):
    visit(page, console, "/review", "review")
    row = page.locator(".item:not(.decided)").first
    fact = row.get_attribute("data-fact")
    row.get_by_role("button", name="reject").click()
    page.wait_for_selector(f'.item[data-fact="{fact}"][data-outcome=rejected]')
    row.locator("a").first.click()  # to the fact's page, and back
    page.wait_for_load_state()
    page.go_back()
    page.wait_for_selector(f'.item[data-fact="{fact}"].decided')
    assert page.get_attribute(f'.item[data-fact="{fact}"]', "data-outcome") == "rejected"
    assert kb.json("history", fact)["fact"]["status"] == "rejected"


def test_a_group_refused_as_two_values_at_once_names_its_rows_and_the_way_out(context, console, kb):
    """The refusal named the facts by ids the page never shows, and left out its way out."""
    page = context.new_page()  # (its refusal, a 409, is the browser's console error to expect here)
    visit(page, console, "/review", "review")
    rows = page.locator(".item", has_text="timezone")
    assert rows.count() == 2
    labels = [rows.nth(n).get_attribute("data-label") for n in range(2)]
    ids = [rows.nth(n).get_attribute("data-fact") for n in range(2)]
    before = kb.snapshot()
    group = page.locator(".card.group", has=rows.first)
    group.get_by_role("button", name="confirm group").click()
    said = page.wait_for_selector("p.error").inner_text()
    assert all(label in said for label in labels) and not any(fact in said for fact in ids), said
    assert "confirm one of them" in said, said
    assert kb.snapshot() == before
    page.close()


def test_a_group_answered_after_one_of_its_facts_keeps_that_ones_answer(page, console, kb):
    """A fact rejected in the page, then its group confirmed, showed as decided elsewhere: the group's
    answer sent it again, and the server called it changed since the batch was printed."""
    visit(page, console, "/review", "review")
    zones = page.locator(".item", has_text="timezone")
    group = page.locator(".card.group", has=zones.first)
    fact, other = (zones.nth(n).get_attribute("data-fact") for n in range(2))
    zones.first.get_by_role("button", name="reject").click()
    page.wait_for_selector(f'.item[data-fact="{fact}"][data-outcome=rejected]')
    group.get_by_role("button", name="confirm group").click()
    page.wait_for_selector(f'.item[data-fact="{other}"][data-outcome=confirmed]')
    assert page.get_attribute(f'.item[data-fact="{fact}"]', "data-outcome") == "rejected"
    assert kb.json("history", fact)["fact"]["status"] == "rejected"
    assert kb.json("history", other)["fact"]["status"] == "confirmed"


def test_the_keyboard_alone_answers_the_batch(page, console, kb):
    visit(page, console, "/review", "review")
    open_rows = page.locator(".item:not(.decided)")
    left = open_rows.count()
    assert left >= 3
    page.keyboard.press("j")  # the first open fact: none is selected before a key or a click
    page.keyboard.press("j")
    page.keyboard.press("k")  # back to the first open fact
    first = page.get_attribute(".item.selected", "data-fact")
    assert first == open_rows.first.get_attribute("data-fact")
    page.keyboard.press("r")
    page.wait_for_selector(f'.item[data-fact="{first}"][data-outcome=rejected]')
    for _ in range(left - 1):
        selected = page.get_attribute(".item.selected", "data-fact")
        page.keyboard.press("c")
        page.wait_for_selector(f'.item[data-fact="{selected}"][data-outcome=confirmed]')
    page.wait_for_selector("#review-answered")
    shot(page, "review-answered")
    assert json.loads((kb.path / "batch.json").read_text())["answered_at"]
    assert kb.json("history", first)["fact"]["status"] == "rejected"
    result = kb("batch", "apply", "confirm all", expect=1)
    assert "answered" in result.stderr


def test_the_perspective_switcher_shows_another_perspective_s_knowledge(page, console, kb):
    visit(page, console, "/", "home")
    assert page.eval_on_selector_all("#perspective option", "os => os.map(o => o.value)") == ["lyra", "main"]
    page.select_option("#perspective", "lyra")
    page.wait_for_url("**/?p=lyra")
    page.wait_for_selector("body[data-ready=home]")
    shot(page, "home-lyra")
    stats = kb.json("stats", "--perspective", "lyra")
    assert page.inner_text("#fig-entities .n") == str(stats["entity_count"])
    assert page.inner_text("#fig-facts .n") == str(stats["fact_count"])
    page.fill("#search", "mklyraname")
    page.press("#search", "Enter")
    page.wait_for_selector("body[data-ready=search]")
    assert "p=lyra" in page.url and page.locator("#results a.entity", has_text="mklyraname").count() == 1
    visit(page, console, "/search?q=mklyraname", "search")  # the main perspective knows nothing of it
    assert page.get_by_role("link", name="mklyraname").count() == 0


def test_a_console_started_without_its_caches_makes_them_once_and_its_briefing_agrees_with_kg(demo):
    shutil.rmtree(demo.path / "cache")
    fresh = Console(demo.path)
    try:
        home = fresh.json("/index.json")
    finally:
        fresh.stop()
    stats = demo.json("stats")
    assert (demo.path / "cache" / "measures.sqlite").exists() and (demo.path / "cache" / "batch-main.sqlite").exists()
    assert home["captured"]["total"] == stats["fact_count"]
    assert home["stats"]["entity_count"] == stats["entity_count"]


def test_a_console_started_for_one_perspective_serves_no_other(demo):
    """kg console --perspective beta sees and writes beta only: a page or a decision for another
    perspective (?p=main) is refused, naming the one served, and nothing is written."""
    demo("org", "init", "Beta Org", "--perspective", "beta")
    fact = demo.json("propose", "repo/api", "caveat", "--value", "mkmainonly", "-s", "slack:m")["id"]
    demo("batch")  # the main perspective's batch, saved
    saved = (demo.path / "batch.json").read_text()
    running = Console(demo.path, "--perspective", "beta")
    try:
        home = running.json("/index.json")
        assert (home["view"]["perspective"], home["perspectives"]) == ("beta", ["beta"])
        assert running.json("/index.json?p=beta")["view"]["perspective"] == "beta"
        before = demo.snapshot()
        for path in ["/index.json?p=main", "/review.json?p=main", "/search.json?q=api&p=main"]:
            status, _headers, text = running.request(path)
            assert status == 404 and "serves perspective 'beta' only" in json.loads(text)["message"], text
        body = {"facts": [fact], "decision": "confirm"}
        status, _headers, text = _decide_at(running, "/review/decide?p=main", body)
        assert status == 404 and "serves perspective 'beta' only" in json.loads(text)["message"], text
    finally:
        running.stop()
    assert demo.snapshot() == before and (demo.path / "batch.json").read_text() == saved
    assert demo.json("history", fact)["fact"]["status"] == "proposed"


def test_a_perspective_that_is_not_there_is_refused_by_every_page_not_shown_empty(demo):
    """?p=TYPO is refused with the perspectives there are, as kg --perspective TYPO is, by every
    page: the Constellation, Raw data and search answered for an empty perspective."""
    running = Console(demo.path)
    try:
        for path in [
            "/index.json?p=nope",
            "/constellation.json?p=nope",
            "/raw.json?p=nope",
            "/search.json?q=api&p=nope",
            "/review.json?p=nope",
        ]:
            status, _headers, text = running.request(path)
            said = json.loads(text)
            assert status >= 400 and "no perspective 'nope'" in said["message"] and "main" in said["message"], text
        assert running.json("/constellation.json?p=main")["entities"] > 0
    finally:
        running.stop()


def test_a_value_of_thousands_of_characters_wraps_inside_the_window(page, console, kb):
    """A value of 20,000 characters without a space wraps: the page stays as wide as the window (it
    was 200,000 px wide), on the entity's page and on the Briefing that lists it as new."""
    kb("add-entity", "repo/mklong", "--name", "mklongvalue")
    value = "mklong" + "x" * 20_000
    kb("confirm", kb.json("propose", "repo/mklong", "caveat", "--value", value, "-s", "report:long")["id"])
    entity_path(page, console, "mklongvalue")
    assert value in page.inner_text("main")
    width = page.evaluate("window.innerWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    visit(page, console, "/", "home")
    assert "mklong" in page.inner_text("#week-new")
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_a_refused_decision_names_people_by_name_and_its_way_out_in_the_page_s_words(kg):
    """Confirming two titles of a person at once is refused: the reason the review page showed named
    person/dana (the console shows no id) and told to type 'confirm all except F'."""
    kg("add-entity", "person/dana", "--name", "Dana Kim")
    ids = [kg.json("propose", "Dana Kim", "title", "--value", v, "-s", "slack:" + v)["id"] for v in ("CTO", "VP")]
    running = Console(kg.path)
    try:
        assert {f["id"] for g in running.json("/review.json")["review"]["groups"] for f in g["facts"]} == set(ids)
        status, _headers, text = _decide(running, {"facts": ids, "decision": "confirm"})
    finally:
        running.stop()
    refusal = json.loads(text)
    assert status == 409, refusal
    assert "Dana Kim" in refusal["message"] and "person/dana" not in text
    assert refusal["hint"] == "confirm one of them, and reject or defer the others"
    assert [f["status"] for f in kg.json("facts", "person/dana")["facts"]] == ["proposed", "proposed"]


@pytest.mark.parametrize("short, other", [("person/j", None), ("person/ana_", "person/ana")])
def test_a_refused_decision_names_by_name_a_person_whose_id_is_short_or_ends_in_punctuation(kg, short, other):
    """person/j was shown as its id; person/ana_ was read as person/ana, and the refusal named that
    other person (the ids kg add-entity takes end in a dot, dash or underscore, or are one letter)."""
    kg("add-entity", short, "--name", "Bea Other")
    if other:
        kg("add-entity", other, "--name", "Ana Real")
    ids = [kg.json("propose", short, "title", "--value", v, "-s", "slack:" + v)["id"] for v in ("CTO", "VP")]
    running = Console(kg.path)
    try:
        running.json("/review.json")
        status, _headers, text = _decide(running, {"facts": ids, "decision": "confirm"})
    finally:
        running.stop()
    refusal = json.loads(text)
    assert status == 409 and "title of Bea Other at once" in refusal["message"], refusal
    assert "Ana Real" not in text and "person/" not in text


def test_a_batch_kg_batch_apply_answered_meanwhile_is_still_decided_fact_by_fact_on_the_open_page(kg):
    """Every decision of the open page was refused, 'the saved batch was answered at ...', until
    it was loaded again: the fact decided in the terminal is to show as decided elsewhere, the
    other is still to decide."""
    kg("add-entity", "repo/api", "--name", "api")
    ids = [kg.json("propose", "api", "caveat", "--value", v, "-s", "slack:" + v)["id"] for v in ("slow", "flaky")]
    running = Console(kg.path)
    try:
        shown = running.json("/review.json")
        assert {f["id"] for g in shown["review"]["groups"] for f in g["facts"]} == set(ids)
        labels = {f["id"]: f["label"] for g in kg.json("batch")["groups"] for f in g["facts"]}
        kg("batch", "apply", f"confirm {labels[ids[0]]}")
        status, _headers, text = _decide(running, {"facts": ids, "decision": "reject"})
    finally:
        running.stop()
    decided = json.loads(text)
    assert status == 200, decided
    assert decided["decided"] == [ids[1]] and decided["changed_since_printed"] == [ids[0]]
    assert {f["id"]: f["status"] for f in kg.json("facts", "repo/api", "--all")["facts"]} == {
        ids[0]: "confirmed",
        ids[1]: "rejected",
    }


def test_a_folder_where_the_saved_batch_goes_is_one_line_of_damage_not_a_bug(kg):
    """A folder at the saved batch's name: the review page answered 500 'this is a bug in kgrdf',
    and left its temporary file beside it."""
    from kgrdf import batch
    from kgrdf.kb import KnowledgeBase

    kg("add-entity", "repo/api", "--name", "api")
    kg("propose", "api", "caveat", "--value", "slow", "-s", "slack:x")
    saved = batch.path(KnowledgeBase.open(kg.path))
    saved.mkdir()
    running = Console(kg.path)
    try:
        status, _headers, text = running.request("/review.json")
    finally:
        running.stop()
    assert status == 503, text
    assert json.loads(text)["message"].startswith(f"cannot use {saved}")
    assert sorted(p.name for p in saved.parent.iterdir() if p.name.startswith(saved.name)) == [saved.name]


def _own_console(browser, kg, values):
    """A console of a knowledge base of its own with ``values`` proposed as caveats of repo/api, and a
    browser session that opened its address: (console, context, ids)."""
    kg("add-entity", "repo/api", "--name", "api")
    ids = [kg.json("propose", "api", "caveat", "--value", v, "-s", "slack:" + v)["id"] for v in values]
    running = Console(kg.path)
    made = browser.new_context()
    opened = made.new_page()
    opened.goto(running.address)
    opened.wait_for_selector("body[data-ready=home]")
    opened.close()
    return running, made, ids


def test_a_fact_deferred_or_decided_here_then_decided_elsewhere_says_so(browser, kg):
    """A defer of a fact decided elsewhere came back as a plain success (the server named none), and
    a page loaded again showed what this tab did (deferred, confirmed) over what the fact is now."""
    running, made, ids = _own_console(browser, kg, ["mkslow", "mkflaky", "mkold", "mkkept"])  # (one left open)
    try:
        page = made.new_page()
        visit(page, running, "/review", "review")
        kg("confirm", ids[2])  # decided in the terminal while the page shows it open
        status, _headers, text = _decide(running, {"facts": [ids[2]], "decision": "defer"})
        assert status == 200 and json.loads(text)["changed_since_printed"] == [ids[2]]
        page.focus(f'.item[data-fact="{ids[0]}"]')
        page.keyboard.press("d")
        page.wait_for_selector(f'.item[data-fact="{ids[0]}"][data-outcome=deferred]')
        page.locator(f'.item[data-fact="{ids[1]}"]').get_by_role("button", name="confirm", exact=True).click()
        page.wait_for_selector(f'.item[data-fact="{ids[1]}"][data-outcome=confirmed]')
        kg("confirm", ids[0])
        kg("reject", ids[1])
        visit(page, running, "/review", "review")
        for fact, now in ((ids[0], "confirmed"), (ids[1], "rejected"), (ids[2], "confirmed")):
            row = page.locator(f'.item[data-fact="{fact}"]')
            assert row.get_attribute("data-outcome") == "elsewhere", fact
            assert row.locator(".outcome").inner_text() == f"decided elsewhere ({now})"
    finally:
        made.close()
        running.stop()


def test_a_key_pressed_twice_or_a_double_click_decides_once_and_says_so(browser, kg):
    """c pressed twice (or c then r), or confirm group clicked twice: each fact was decided once, but
    the second answer called this tab's own decision "decided elsewhere"."""
    running, made, ids = _own_console(browser, kg, ["mkone", "mktwo", "mkthree"])
    try:
        page = made.new_page()
        visit(page, running, "/review", "review")
        page.focus(f'.item[data-fact="{ids[0]}"]')
        page.keyboard.press("c")
        page.keyboard.press("r")
        page.wait_for_selector(f'.item[data-fact="{ids[0]}"].decided')
        page.locator(".card.group").first.get_by_role("button", name="confirm group").dblclick()
        for fact in ids:
            page.wait_for_selector(f'.item[data-fact="{fact}"][data-outcome=confirmed]')
        page.wait_for_timeout(300)  # (a second answer, had one been asked, would have come by now)
        assert [page.get_attribute(f'.item[data-fact="{f}"]', "data-outcome") for f in ids] == ["confirmed"] * 3
        actions = [[h["action"] for h in kg.json("history", f)["history"]] for f in ids]
        assert actions == [["recorded", "confirm"]] * 3
    finally:
        made.close()
        running.stop()
