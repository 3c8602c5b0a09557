// The console's pages, drawn from each page's JSON twin (the same address with .json).
"use strict";

const CSRF = document.querySelector('meta[name="kg-csrf"]').content;
const VIEW_PARAMS = ["p", "as", "as_of", "known_at", "hops"];
const AXIS_COLOURS = { People: "var(--people)", Process: "var(--process)", Product: "var(--product)", Organizations: "var(--systems)" };
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Append what is there: a missing piece (null, false) adds nothing.
function put(parent, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child);
  }
  return parent;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

// A link inside the console keeps the view: perspective, audience and time.
function href(path, extra) {
  const here = new URLSearchParams(location.search);
  const params = new URLSearchParams();
  for (const name of VIEW_PARAMS) if (here.get(name)) params.set(name, here.get(name));
  for (const [name, value] of Object.entries(extra || {})) {
    if (value) params.set(name, value); else params.delete(name);
  }
  const query = params.toString();
  return path + (query ? "?" + query : "");
}

const entityLink = (key, name) => el("a", { href: href("/e/" + key), class: "entity" }, name || "(unnamed)");
const factLink = (id, text) => el("a", { href: href("/f/" + id), class: "fact-link" }, text);
const decided = (decision) => [entityLink(decision.entity, decision.name), decision.states ? el("span", { class: "meta" }, ": " + decision.states) : ""];
const day = (stamp) => (stamp ? String(stamp).slice(0, 10) : "");

function badge(text, kind) {
  return el("span", { class: "badge " + (kind || text) }, text);
}

function sourceNode(source) {
  const text = source.kind + ":" + source.ref;
  if (/^https?:\/\//.test(source.ref)) {
    return el("a", { href: source.ref, rel: "noreferrer noopener", target: "_blank", class: "source" }, text);
  }
  return el("span", { class: "source" }, text);
}

function sources(list) {
  const out = [];
  (list || []).forEach((source, index) => {
    if (index) out.push(", ");
    out.push(sourceNode(source));
  });
  return out;
}

function validTime(fact) {
  if (!fact.valid_from && !fact.valid_to) return null;
  return "valid " + (day(fact.valid_from) || "…") + " → " + (day(fact.valid_to) || "now");
}

function factRow(fact) {
  const status = fact.conflicting ? "conflicting" : fact.status;
  return el(
    "li",
    { class: "fact", "data-fact": fact.id },
    factLink(fact.id, fact.sentence),
    badge(status),
    fact.authority ? badge(fact.authority, "authority") : null,
    el(
      "div",
      { class: "meta" },
      [validTime(fact), "recorded " + day(fact.recorded_at)].filter(Boolean).join(" · "),
      fact.sources && fact.sources.length ? " · " : "",
      sources(fact.sources),
    ),
  );
}

// --- pages -------------------------------------------------------------------------------------------

function tabs(current) {
  const tab = (id, path, label) =>
    el("a", { href: href(path), id: "tab-" + id, class: "tab" + (id === current ? " current" : ""), "aria-current": id === current ? "page" : null }, label);
  return el("nav", { class: "tabs" }, tab("briefing", "/", "Briefing"), tab("constellation", "/constellation", "Constellation"), tab("raw", "/raw", "Raw data"));
}

const percent = (share) => (share === null || share === undefined ? "–" : Math.round(share * 100) + "%");

// Shown as an audience, a page says so: it holds only what an agent speaking there would be told.
function showingAs(doc) {
  return doc.view.audience !== "owner" ? el("p", { class: "note", id: "showing-as" }, "Showing what an agent speaking in " + doc.view.audience + " would be told.") : null;
}

function home(doc, main) {
  const facts = doc.stats.facts || {};
  const figure = (id, n, what) => el("div", { class: "figure", id }, el("div", { class: "n" }, n), el("div", { class: "what" }, what));
  put(main,
    el("h1", {}, "Knowledge"),
    tabs("briefing"),
    showingAs(doc),
    el("p", { class: "muted" }, "Perspective " + doc.view.perspective + (doc.batch ? ". The counts are kg stats's and kg batch's." : ". The counts are of the facts this audience may hear and the entities they name.")),
    el(
      "div",
      { class: "figures" },
      figure("fig-entities", doc.stats.entity_count, "entities"),
      figure("fig-facts", doc.stats.fact_count, "facts"),
      figure("fig-confirmed", facts.confirmed || 0, "confirmed"),
      figure("fig-proposed", facts.proposed || 0, "proposed"),
      figure("fig-share", percent(doc.confirmed_share.share), "of current facts confirmed"),
      doc.batch ? figure("fig-in-batch", doc.batch.in_batch, "in today's batch") : null,
      doc.batch ? figure("fig-waiting", doc.batch.waiting, "waiting for review") : null,
    ),
  );
  put(main, el("h2", {}, "Captured, last 30 days"), capturedChart(doc.captured));
  put(main, el("h2", {}, "Coverage"), el("p", { class: "muted" }, "The share of each card's entities in at least one current confirmed fact: how much of what is held you have vouched for."));
  put(main, el("div", { class: "figures", id: "coverage" }, doc.coverage.map((card) =>
    el("div", { class: "figure", "data-card": card.card },
      el("div", { class: "n" }, percent(card.share)),
      el("div", { class: "what" }, card.card + ": " + card.covered + " of " + card.entities),
      el("div", { class: "bar" }, meter(card.share))))));
  const week = doc.this_week;
  put(main, el("h2", {}, "This week"), el("div", { class: "cols" },
    el("section", { class: "card", id: "week-new" },
      el("h3", {}, week.new + (week.new === 1 ? " new fact" : " new facts")),
      el("ul", { class: "facts" }, week.new_facts.map((f) => el("li", {}, factLink(f.id, f.sentence), badge(f.status))))),
    el("section", { class: "card", id: "week-changes" },
      el("h3", {}, (week.replaced + week.decisions) + (week.replaced + week.decisions === 1 ? " change" : " changes")),
      week.changes.length ? el("ul", { class: "facts" }, week.changes.map((c) => c.kind === "decision"
        ? el("li", { class: "decision" }, decided(c.before), el("span", { class: "arrow" }, " → "), decided(c.after), el("div", { class: "meta" }, factLink(c.fact, "the link")))
        : el("li", {}, factLink(c.before.id, c.before.sentence), el("span", { class: "arrow" }, " → "), c.after ? factLink(c.after.id, c.after.sentence) : el("span", { class: "muted" }, "a fact this audience is not told")))) : el("p", { class: "muted" }, "Nothing was replaced."))));
  put(main, el("h2", {}, "Today's review"));
  if (doc.review) {
    const stack = el("div", { id: "review" });
    put(main, stack);
    reviewQueue(doc.review, stack);
  } else {
    put(main, el("p", { class: "note card", id: "review-owners" }, ownersOnly(doc)));
  }
  put(main, el("div", { class: "cols" },
    el("section", {},
      el("h2", {}, "Most connected"),
      doc.most_connected.length
        ? el("ol", { class: "card", id: "most-connected" }, doc.most_connected.map((n) => el("li", {}, entityLink(n.id, n.name), badge(n.type, "type"), el("span", { class: "meta" }, " " + n.degree + " linked"))))
        : el("p", { class: "muted", id: "most-connected" }, "No links.")),
    el("section", {},
      el("h2", {}, "Contradictions waiting for you"),
      doc.contradictions.count
        ? el("div", { class: "card", id: "contradictions" },
          el("p", { class: "meta" }, doc.contradictions.count + " in all (kg lint lists them)" + (doc.contradictions.count > doc.contradictions.findings.length ? "; the first " + doc.contradictions.findings.length + ":" : ":")),
          el("ul", { class: "facts" }, doc.contradictions.findings.map((c) => el("li", {}, c.message, el("div", { class: "meta" }, c.facts.map((id, i) => [i ? ", " : "", factLink(id, id)]))))))
        : el("p", { class: "muted", id: "contradictions" }, "None."),
      el("h2", {}, "Proposals about to expire"),
      el("div", { class: "card", id: "expiring" },
        el("p", {}, doc.expiring.count + " not observed again for " + (doc.expiring.days - 7) + " days expire within a week."),
        el("ul", { class: "facts" }, doc.expiring.facts.map((f) => el("li", {}, factLink(f.id, f.sentence))))),
      el("h2", {}, "Rediscovery saved"),
      el("p", { class: "muted card", id: "rediscovery" }, "Not measured yet: it needs a count of the episodes where a fact had to be found again, which nothing records yet."),
    )));
}

function ownersOnly(doc) {
  const said = doc.review_note || "the review queue is the owner's";
  return said.charAt(0).toUpperCase() + said.slice(1) + ": stop showing as " + doc.view.audience + " to answer it.";
}

function meter(share) {
  const picture = svg("svg", { viewBox: "0 0 100 6", class: "meter", preserveAspectRatio: "none" });
  picture.append(svg("rect", { x: 0, y: 0, width: 100, height: 6, class: "meter-back" }));
  picture.append(svg("rect", { x: 0, y: 0, width: Math.round((share || 0) * 100), height: 6, class: "meter-fill" }));
  return picture;
}

// Bars: facts captured each day; the line: the running total (its own scale, on the right).
function capturedChart(doc) {
  const width = 900, height = 220, left = 40, right = 60, top = 12, bottom = 34;
  const plotW = width - left - right, plotH = height - top - bottom;
  const maxDay = Math.max(1, ...doc.days.map((d) => d.captured));
  const maxTotal = Math.max(1, ...doc.days.map((d) => d.total));
  const picture = svg("svg", { class: "chart", id: "captured-chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "Facts captured per day and running total" });
  const step = plotW / doc.days.length;
  picture.append(svg("line", { x1: left, y1: top + plotH, x2: left + plotW, y2: top + plotH, class: "axis" }));
  doc.days.forEach((d, i) => {
    const h = (d.captured / maxDay) * plotH;
    const bar = svg("rect", { x: left + i * step + 2, y: top + plotH - h, width: Math.max(step - 4, 1), height: h, class: "bar", "data-day": d.day, "data-captured": d.captured });
    bar.append(svg("title", {}, d.day + ": " + d.captured + " captured, " + d.total + " in all"));
    picture.append(bar);
    if (i % 5 === 0 || i === doc.days.length - 1) picture.append(svg("text", { x: left + i * step + step / 2, y: height - 12, "text-anchor": "middle" }, d.day.slice(5)));
  });
  const points = doc.days.map((d, i) => `${left + i * step + step / 2},${top + plotH - (d.total / maxTotal) * plotH}`).join(" ");
  picture.append(svg("polyline", { points, class: "total" }));
  picture.append(svg("text", { x: left - 6, y: top + 10, "text-anchor": "end" }, maxDay));
  picture.append(svg("text", { x: left + plotW + 6, y: top + 10 }, maxTotal));
  return el("div", { class: "card" }, picture,
    el("p", { class: "meta", id: "captured-summary" }, doc.captured + " captured in 30 days; " + doc.total + " in all (the line, right scale)."));
}

function rawPage(doc, main) {
  put(main, el("h1", {}, "Knowledge"), tabs("raw"), showingAs(doc));
  if (doc.review_note) put(main, el("p", { class: "muted", id: "raw-owners" }, "Proposals waiting are not counted. " + ownersOnly(doc)));
  const params = new URLSearchParams(location.search);
  const form = el("form", { class: "timetravel card", id: "raw-search", method: "get", action: "" },
    keptView(),
    doc.axis ? el("input", { type: "hidden", name: "axis", value: doc.axis }) : null,
    doc.type ? el("input", { type: "hidden", name: "type", value: doc.type }) : null,
    el("label", {}, "names and aliases" + (doc.type ? " of " + doc.type : doc.axis ? " in " + doc.axis : ""), el("input", { type: "search", name: "q", id: "raw-q", value: doc.text || null })),
    el("button", { type: "submit" }, "find"));
  put(main, form);
  const axes = el("div", { class: "figures", id: "raw-axes" });
  for (const axis of doc.browse) {
    const entities = axis.types.reduce((n, t) => n + t.entities, 0);
    put(axes, el("section", { class: "figure" + (doc.axis === axis.axis ? " current" : ""), "data-axis": axis.axis },
      el("a", { href: href("/raw", { axis: axis.axis, type: null, q: params.get("q") }) }, el("div", { class: "n" }, entities), el("div", { class: "what" }, axis.axis)),
      axis.waiting === null ? null : el("div", { class: "meta waiting" }, axis.waiting + (axis.waiting === 1 ? " proposal waiting" : " proposals waiting")),
      el("ul", { class: "types" }, axis.types.map((t) => el("li", { "data-type": t.type, class: doc.type === t.type ? "current" : null },
        el("a", { href: href("/raw", { axis: axis.axis, type: t.type, q: params.get("q") }) }, t.type), " " + t.entities,
        t.waiting ? el("span", { class: "badge proposed" }, t.waiting + " waiting") : null)))));
  }
  put(main, axes);
  if (doc.type || doc.text) {
    put(main, el("h2", {}, doc.found + (doc.found === 1 ? " entity" : " entities") + (doc.found > doc.entities.length ? ", the first " + doc.entities.length + " by name" : "")));
    put(main, el("ul", { class: "facts card", id: "raw-list" }, doc.entities.map((e) => el("li", {}, entityLink(e.id, e.name), badge(e.type, "type")))));
  } else {
    put(main, el("p", { class: "muted", id: "raw-hint" }, "Pick a type, or search, to list entities."));
  }
}

function constellationPage(doc, main) {
  put(main, el("h1", {}, "Knowledge"), tabs("constellation"), showingAs(doc));
  const form = el("form", { class: "timetravel card", id: "timetravel", method: "get", action: "" },
    keptView(),
    el("label", {}, "true in the world on (as of)", el("input", { type: "date", name: "as_of", id: "as-of", value: day(doc.view.as_of) || null })),
    el("label", {}, "as held on (known at)", el("input", { type: "date", name: "known_at", id: "known-at", value: day(doc.view.known_at) || null })),
    el("label", {}, "entities drawn", el("select", { name: "stars", id: "stars" }, [50, 150, 300, 500].map((n) =>
      el("option", { value: n, selected: n === doc.nodes.length || (n === 150 && ![50, 300, 500].includes(doc.nodes.length)) }, n)))),
    el("button", { type: "submit" }, "show"));
  put(main, form);
  const folded = Object.entries(doc.folded || {}).map(([type, n]) => n + " " + type).join(", ");
  put(main, el("p", { class: "muted", id: "constellation-summary" },
    "The " + doc.nodes.length + " most connected of " + doc.entities + " entities, sized by how many others they link to, coloured by axis" +
    (folded ? "; folded: " + folded : "") + "."));
  put(main, constellation(doc));
}

// A small force layout, run a fixed number of steps: close enough to read, the same on every load.
function constellation(doc) {
  const width = 1100, height = 720;
  const nodes = doc.nodes.map((n, i) => ({ ...n, x: width / 2 + 300 * Math.cos(i * 2.39996) * Math.sqrt(i / doc.nodes.length), y: height / 2 + 300 * Math.sin(i * 2.39996) * Math.sqrt(i / doc.nodes.length) }));
  const at = Object.fromEntries(nodes.map((n) => [n.id, n]));
  const edges = doc.edges.filter((e) => at[e.from] && at[e.to]);
  const maxDegree = Math.max(1, ...nodes.map((n) => n.degree));
  // Fruchterman and Reingold's spring layout: neighbours pull, everyone pushes, the moves cool down.
  const k = 0.75 * Math.sqrt((width * height) / Math.max(nodes.length, 1));
  const rounds = 160;
  for (let round = 0; round < rounds; round++) {
    const heat = (width / 8) * (1 - round / rounds) + 1;
    for (const a of nodes) { a.dx = 0; a.dy = 0; }
    for (let i = 0; i < nodes.length; i++) {
      for (let j = i + 1; j < nodes.length; j++) {
        const a = nodes[i], b = nodes[j];
        const dx = a.x - b.x, dy = a.y - b.y;
        const d = Math.max(Math.sqrt(dx * dx + dy * dy), 0.5);
        const push = (k * k) / d / d;
        a.dx += dx * push; a.dy += dy * push; b.dx -= dx * push; b.dy -= dy * push;
      }
    }
    for (const e of edges) {
      const a = at[e.from], b = at[e.to];
      const dx = a.x - b.x, dy = a.y - b.y;
      const d = Math.max(Math.sqrt(dx * dx + dy * dy), 0.5);
      const pull = d / k;
      a.dx -= dx * pull; a.dy -= dy * pull; b.dx += dx * pull; b.dy += dy * pull;
    }
    for (const a of nodes) {
      a.dx += (width / 2 - a.x) * 0.03; a.dy += (height / 2 - a.y) * 0.03;  // a little gravity keeps the folded-off apart
      const d = Math.max(Math.sqrt(a.dx * a.dx + a.dy * a.dy), 0.01);
      a.x = Math.min(width - 30, Math.max(30, a.x + (a.dx / d) * Math.min(d, heat)));
      a.y = Math.min(height - 20, Math.max(20, a.y + (a.dy / d) * Math.min(d, heat)));
    }
  }
  const picture = svg("svg", { class: "graph constellation", id: "constellation", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "Constellation" });
  for (const e of edges) picture.append(svg("line", { x1: at[e.from].x, y1: at[e.from].y, x2: at[e.to].x, y2: at[e.to].y }));
  const labelled = new Set(nodes.slice().sort((a, b) => b.degree - a.degree).slice(0, 40).map((n) => n.id));
  for (const n of nodes) {
    const link = svg("a", { href: href("/e/" + n.id), class: "node", "data-degree": n.degree });
    const circle = svg("circle", { cx: n.x, cy: n.y, r: 4 + 12 * Math.sqrt(n.degree / maxDegree) });
    circle.style.fill = AXIS_COLOURS[(doc.axes || {})[n.type]] || "var(--other)";
    link.append(circle, svg("title", {}, n.name + " (" + n.type + ", " + n.degree + " linked)"));
    if (labelled.has(n.id)) link.append(svg("text", { x: n.x + 8, y: n.y + 4 }, n.name));
    picture.append(link);
  }
  return el("div", { class: "card" }, picture, el("p", { class: "meta" }, Object.entries(AXIS_COLOURS).map(([axis, colour]) => {
    const dot = el("span", { class: "dot" });
    dot.style.background = colour;
    return el("span", { class: "legend" }, dot, axis + " ");
  })));
}

function reviewPage(doc, main) {
  put(main, 
    el("h1", {}, "Review queue"),
    el(
      "p",
      { class: "keys" },
      "Today's batch, as kg batch prints it. ",
      el("kbd", {}, "j"), " / ", el("kbd", {}, "k"), " move, ",
      el("kbd", {}, "c"), " confirm, ", el("kbd", {}, "r"), " reject, ", el("kbd", {}, "d"), " defer (writes nothing).",
    ),
  );
  const queue = el("div", { id: "review" });
  put(main, queue);
  reviewQueue(doc.review, queue);
}

const OUTCOME = { confirmed: "confirmed", rejected: "rejected", deferred: "deferred", elsewhere: "decided elsewhere" };
const DECIDED_HERE = "kg-decided:"; // + a fact id: what this tab decided of it (a page come back to by Back says so)

function decidedHere(id) {
  try {
    return sessionStorage.getItem(DECIDED_HERE + id);
  } catch (error) {
    return null; // (storage refused: it shows as decided elsewhere, as before)
  }
}

function reviewQueue(batch, holder) {
  if (!batch.groups.length) {
    put(holder, el("p", { class: "card", id: "review-empty" }, "Nothing waits for review."));
    return;
  }
  put(holder, 
    el("p", { class: "muted", id: "review-summary" },
      batch.in_batch + " facts in " + batch.groups.length + " groups; " + batch.waiting + " proposals wait in all."),
  );
  const items = [];
  for (const group of batch.groups) {
    const card = el("section", { class: "card group", "data-group": group.number });
    const inGroup = group.facts.map((f) => f.id);
    // a group's answer is for its facts not decided yet: one decided on this page stays as it was
    const open = () => items.filter((item) => inGroup.includes(item.id) && !item.done).map((item) => item.id);
    put(card, 
      el(
        "h3",
        {},
        group.number + ". " + group.title + " ",
        el("span", { class: "muted" }, "(" + group.facts.length + (group.facts.length === 1 ? " fact)" : " facts)")),
        " ",
        el("button", { class: "confirm", onclick: () => decide(open(), "confirm") }, "confirm group"),
        " ",
        el("button", { class: "reject", onclick: () => decide(open(), "reject") }, "reject group"),
      ),
    );
    if (group.known && group.known.length) put(card, el("p", { class: "known" }, "Already known: " + group.known.join("; ")));
    for (const fact of group.facts) {
      const outcome = el("span", { class: "outcome" });
      const row = el(
        "div",
        {
          class: "item", tabindex: "0", role: "group", "aria-label": fact.label + ": " + fact.sentence,
          "data-fact": fact.id, "data-label": fact.label,
        },
        el("span", { class: "label" }, fact.label),
        el("span", { class: "sentence" }, factLink(fact.id, fact.sentence)),
        outcome,
        el("button", { class: "confirm", onclick: () => decide([fact.id], "confirm") }, "confirm"),
        el("button", { class: "reject", onclick: () => decide([fact.id], "reject") }, "reject"),
        el("button", { class: "defer", onclick: () => decide([fact.id], "defer") }, "defer"),
      );
      const item = { id: fact.id, row, outcome, done: false };
      // decided on this tab and still so, it says what this tab did; decided otherwise since, elsewhere
      const here = decidedHere(fact.id);
      if (fact.status && fact.status !== "proposed") mark(item, here === fact.status ? here : "elsewhere", fact.status);
      row.addEventListener("click", () => select(items.indexOf(item)));
      row.addEventListener("focus", () => select(items.indexOf(item), false)); // the keys act on the row in focus
      items.push(item);
      put(card, row);
    }
    put(holder, card);
  }
  let selected = -1;

  function select(index, focus = true) {
    if (index < 0 || index >= items.length) return;
    if (selected >= 0) items[selected].row.classList.remove("selected");
    selected = index;
    items[index].row.classList.add("selected");
    if (focus) items[index].row.focus({ preventScroll: false });
  }

  function mark(item, how, status) {
    item.done = true;
    item.row.classList.add("decided");
    item.row.dataset.outcome = how;
    item.outcome.textContent = OUTCOME[how] + (how === "elsewhere" && status ? " (" + status + ")" : "");
    for (const button of item.row.querySelectorAll("button")) button.disabled = true;
  }

  function hold(asked, held) {
    // a fact asked about waits for its answer: a second key or click on it asks nothing more
    for (const item of asked) {
      item.done = held;
      for (const button of item.row.querySelectorAll("button")) button.disabled = held;
    }
  }

  async function decide(ids, decision) {
    const asked = items.filter((item) => ids.includes(item.id) && !item.done);
    if (!asked.length) return; // (a group whose every fact is decided already, or waits for an answer)
    ids = asked.map((item) => item.id);
    hold(asked, true);
    let answer, result;
    try {
      answer = await fetch(href("/review/decide"), {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-KG-CSRF": CSRF },
        body: JSON.stringify({ facts: ids, decision }),
      });
      result = await answer.json();
    } catch (error) {
      hold(asked, false);
      holder.prepend(el("p", { class: "error", role: "alert" }, "The console did not answer: " + error.message));
      return;
    }
    if (!answer.ok) {
      hold(asked, false);
      // with its way out, and each fact named as the page names it: by its label (1a), not its id
      let said = result.message + (result.hint ? " (" + result.hint + ")" : "");
      for (const item of items) said = said.split(item.id).join(item.row.dataset.label);
      holder.prepend(el("p", { class: "error", role: "alert" }, said));
      return;
    }
    const how = { confirm: "confirmed", reject: "rejected", defer: "deferred" }[decision];
    for (const item of asked) {
      if (result.changed_since_printed.includes(item.id)) mark(item, "elsewhere");
      else {
        mark(item, how);
        try {
          sessionStorage.setItem(DECIDED_HERE + item.id, how);
        } catch (error) {
          // (storage refused: come back to, it shows as decided elsewhere)
        }
      }
    }
    if (result.answered) holder.prepend(el("p", { class: "card", id: "review-answered" }, "The batch is answered."));
    const next = items.findIndex((item, index) => index > selected && !item.done);
    select(next >= 0 ? next : items.findIndex((item) => !item.done));
  }

  document.addEventListener("keydown", (event) => {
    if (event.target.closest && event.target.closest("input, select, textarea")) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const open = () => items.findIndex((item) => !item.done); // (none selected yet: the first key goes there)
    const keys = {
      j: () => select(selected < 0 ? open() : Math.min(selected + 1, items.length - 1)),
      k: () => select(selected < 0 ? open() : Math.max(selected - 1, 0)),
    };
    for (const [key, decision] of [["c", "confirm"], ["r", "reject"], ["d", "defer"]]) {
      keys[key] = () => {
        // on the fact in focus alone: a key pressed while none is (a stray one on the Briefing) decides nothing
        const item = items[selected];
        if (item && !item.done && item.row.contains(document.activeElement)) decide([item.id], decision);
      };
    }
    if (keys[event.key]) {
      event.preventDefault();
      keys[event.key]();
    }
  });
}

function searchPage(doc, main) {
  put(main, el("h1", {}, "Search"));
  const named = (list, how) => list.map((e) => el("li", {}, entityLink(e.id, e.name), badge(e.type, "type"), el("span", { class: "meta" }, " " + how + " (" + e.matched + ")")));
  if (doc.identified.length || doc.suggested.length) {
    put(main, el("ul", { class: "facts card", id: "identified" }, named(doc.identified, "is called “" + doc.text + "”"), named(doc.suggested, "maybe")));
  }
  put(main, el("p", { class: "muted" }, doc.results.length + " found for “" + doc.text + "”"));
  const list = el("ul", { class: "facts card", id: "results" });
  for (const hit of doc.results) {
    const how = (hit.matched || []).map((m) => (m.how === "name" ? "name" : m.how + " “" + m.label + "”")).join(", ");
    put(list, el("li", {}, entityLink(hit.id, hit.name), badge(hit.type, "type"), el("div", { class: "meta" }, how)));
  }
  put(main, list);
}

// A form's GET replaces the query string: it carries whose knowledge and as whom along.
function keptView() {
  const here = new URLSearchParams(location.search);
  return ["p", "as"].filter((name) => here.get(name)).map((name) => el("input", { type: "hidden", name, value: here.get(name) }));
}

function timeTravel(doc) {
  const form = el("form", { class: "timetravel card", id: "timetravel", method: "get", action: "" }, keptView());
  put(form, 
    el("label", {}, "true in the world on (as of)", el("input", { type: "date", name: "as_of", id: "as-of", value: day(doc.view.as_of) || null })),
    el("label", {}, "as the knowledge base held it on (known at)", el("input", { type: "date", name: "known_at", id: "known-at", value: day(doc.view.known_at) || null })),
    el(
      "label",
      {},
      "neighbourhood",
      el("select", { name: "hops", id: "hops" },
        el("option", { value: "1", selected: doc.view.hops === 1 }, "one hop"),
        el("option", { value: "2", selected: doc.view.hops === 2 }, "two hops")),
    ),
    el("button", { type: "submit" }, "show"),
    el("a", { href: href(location.pathname, { as_of: null, known_at: null }) }, "now"),
  );
  return form;
}

function entityPage(doc, main) {
  const entity = doc.entity;
  put(main, 
    el("h1", { id: "entity-name" }, entity.name, badge(entity.type, "type")),
    entity.aliases && entity.aliases.length ? el("p", { class: "aliases", id: "aliases" }, "also: " + entity.aliases.join(", ")) : null,
    entity.weak_aliases && entity.weak_aliases.length ? el("p", { class: "aliases", id: "weak-aliases" }, "related: " + entity.weak_aliases.join(", ")) : null,
    entity.summary ? el("p", { id: "summary" }, entity.summary) : null,
    doc.note ? el("p", { class: "note", id: "person-note" }, doc.note) : null,
    showingAs(doc),
    timeTravel(doc),
  );
  if (doc.view.as_of || doc.view.known_at) {
    const said = [doc.view.as_of ? "true on " + day(doc.view.as_of) : null, doc.view.known_at ? "as held on " + day(doc.view.known_at) : null];
    put(main, el("p", { class: "note", id: "travelling" }, "Facts " + said.filter(Boolean).join(", ") + "."));
  }
  if (doc.flow) put(main, el("h2", {}, "Flow"), flow(doc.flow));
  if (doc.digest) put(main, el("h2", {}, "Digest"), digest(doc.digest));
  const left = el("div", {});
  const right = el("div", {});
  put(main, el("div", { class: "cols" }, left, right));
  put(left, el("h2", {}, "Facts"));
  if (!doc.groups.length) put(left, el("p", { class: "muted" }, "No current facts."));
  for (const group of doc.groups) {
    put(left, el("section", { class: "card predicate", "data-predicate": group.predicate }, el("h3", {}, group.label), el("ul", { class: "facts" }, group.facts.map(factRow))));
  }
  if (doc.superseded.length) {
    put(left, 
      el("h2", {}, "Superseded"),
      el(
        "ul",
        { class: "facts card superseded", id: "superseded" },
        doc.superseded.map((fact) =>
          el("li", { "data-fact": fact.id }, factLink(fact.id, fact.sentence), el("div", { class: "meta" }, "replaced by ", factLink(fact.replaced_by.id, fact.replaced_by.sentence || fact.replaced_by.id), validTime(fact) ? " · " + validTime(fact) : ""))),
      ),
    );
  }
  put(left, el("h2", {}, "Pointing here"));
  put(left, doc.backlinks.length ? el("ul", { class: "facts card", id: "backlinks" }, doc.backlinks.map(factRow)) : el("p", { class: "muted" }, "Nothing points here."));
  put(right, el("h2", {}, "Neighbourhood"), neighbourhood(doc.neighbourhood, doc.axes));
}

// An organization's digest (kg org digest's parts): attributes with conflicting values side by side.
function digest(doc) {
  const holder = el("div", { class: "card", id: "digest" });
  const byKey = {};
  for (const fact of doc.attributes) (byKey[fact.attribute_key || fact.predicate] = byKey[fact.attribute_key || fact.predicate] || []).push(fact);
  const attributes = el("div", { class: "attributes", id: "digest-attributes" });
  for (const [key, facts] of Object.entries(byKey)) {
    const conflicting = facts.length > 1 || facts.some((f) => f.conflicting && f.conflicting.length);
    put(attributes, el("div", { class: "attribute" + (conflicting ? " conflict" : ""), "data-key": key },
      el("div", { class: "meta" }, key, conflicting ? badge("conflicting") : null),
      el("div", { class: "values" }, facts.map((f) => el("div", { class: "value" }, factLink(f.id, f.value), el("div", { class: "meta" }, sources(f.sources), f.said_by_name ? " · said by " + f.said_by_name : ""))))));
  }
  const list = (id, title, facts, text) => facts.length
    ? [el("h3", {}, title), el("ul", { class: "facts", id }, facts.map((f) => el("li", {}, text ? text(f) : factLink(f.id, f.sentence))))]
    : null;
  put(holder,
    doc.attributes.length ? [el("h3", {}, "Attributes"), attributes] : null,
    list("digest-relations", "Relations", doc.relations),
    list("digest-people", "People", doc.people),
    list("digest-other", "Also", doc.other),
    list("digest-claims", "Claims (unverified: someone said so)", doc.claims, (f) => [factLink(f.id, f.value), f.claimed_role ? ", " + f.claimed_role : "", badge("unverified", "proposed")]),
    doc.proposed.length ? el("p", { class: "meta" }, doc.proposed.length + (doc.proposed.length === 1 ? " more proposed fact waits" : " more proposed facts wait") + " for review.") : null,
  );
  return holder;
}

function flow(doc) {
  const row = el("div", { class: "flow", id: "flow" });
  const names = (list) => (list || []).map((x, i) => [i ? ", " : "", x.entity ? entityLink(x.entity, x.name) : x.name]);
  if (doc.entry_points.length) put(row, el("div", { class: "step entry" }, el("div", { class: "role" }, "starts in"), names(doc.entry_points)));
  doc.steps.forEach((step) => {
    if (row.childNodes.length) put(row, el("span", { class: "arrow" }, "→"));
    put(row, 
      el(
        "div",
        { class: "step" },
        entityLink(step.step, step.name),
        step.actor ? el("div", { class: "role" }, "by ", names(step.actor)) : null,
        step.gated_by ? el("div", { class: "role" }, "gated by ", names(step.gated_by)) : null,
        step.uses ? el("div", { class: "role" }, "uses ", names(step.uses)) : null,
      ),
    );
  });
  const extra = el("div", { class: "meta" });
  if (doc.gates.length) put(extra, "gated by ", ...names(doc.gates), ". ");
  if (doc.systems.length) put(extra, "uses ", ...names(doc.systems), ". ");
  if (doc.posts_to.length) put(extra, "announced in ", ...names(doc.posts_to), ".");
  return el("div", { class: "card" }, row, extra);
}

// The one- or two-hop neighbourhood, drawn by hand: rings by distance, the entity in the middle.
function neighbourhood(doc, axes) {
  const width = 560, height = 416, cx = width / 2, cy = height / 2;
  const picture = svg("svg", { class: "graph", id: "neighbourhood", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "Neighbourhood" });
  const rings = {};
  for (const node of doc.nodes) (rings[node.distance] = rings[node.distance] || []).push(node);
  const at = {};
  for (const [distance, nodes] of Object.entries(rings)) {
    const far = Math.max(...Object.keys(rings).map(Number));
    const radius = Number(distance) === 1 ? (far === 1 ? 150 : 95) : 185;
    nodes.forEach((node, index) => {
      const angle = (2 * Math.PI * index) / nodes.length - Math.PI / 2 + Number(distance) * 0.3;
      at[node.id] = [cx + radius * Math.cos(angle), cy + radius * Math.sin(angle) * 0.82];
    });
  }
  for (const edge of doc.edges) {
    const [a, b] = [at[edge.from], at[edge.to]];
    if (a && b) picture.append(svg("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1] }, svg("title", {}, edge.predicate)));
  }
  for (const node of doc.nodes) {
    const [x, y] = at[node.id];
    const colour = AXIS_COLOURS[(axes || {})[node.type]] || "var(--other)";
    const link = svg("a", { href: href("/e/" + node.id), class: "node" });
    const circle = svg("circle", { cx: x, cy: y, r: node.distance ? 7 : 11 });
    circle.style.fill = colour;
    link.append(circle, svg("text", { x: x + 10, y: y + 4 }, node.name), svg("title", {}, node.name + " (" + node.type + ")"));
    picture.append(link);
  }
  const holder = el("div", {}, picture);
  if (doc.total > doc.nodes.length) put(holder, el("p", { class: "meta" }, "the " + doc.nodes.length + " nearest of " + doc.total));
  return holder;
}

function factPage(doc, main) {
  const fact = doc.fact;
  const target = fact.object ? entityLink(fact.object, fact.object_name) : el("q", {}, fact.value);
  put(main, 
    el("h1", { id: "fact-sentence" }, fact.sentence),
    el(
      "p",
      {},
      badge(fact.status),
      fact.authority ? badge(fact.authority, "authority") : null,
      " about ", entityLink(fact.subject, fact.subject_name), " · ", fact.predicate, " · ", target,
    ),
    doc.note ? el("p", { class: "note" }, doc.note) : null,
  );
  const rows = [
    ["valid time", validTime(fact) || "always"],
    ["recorded", fact.recorded_at],
    ["retired", fact.retired_at],
    ["last observed", fact.observed_at],
    ["observations", fact.observations],
    ["last confirmed", fact.last_confirmed_at],
    ["reviewed by", fact.reviewed_by],
    ["sensitivity", fact.sensitivity],
    ["audiences", (fact.audiences || []).join(", ")],
    ["superseded by", fact.superseded_by ? factLink(fact.superseded_by, fact.superseded_by) : null],
    ["sources", fact.sources && fact.sources.length ? el("span", {}, sources(fact.sources)) : null],
  ];
  put(main, el("table", { class: "card", id: "provenance" }, rows.filter((r) => r[1] !== null && r[1] !== undefined && r[1] !== "").map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))));
  put(main, el("h2", {}, "Who said it"));
  const heard = el("ul", { class: "facts card", id: "hearings" });
  for (const hearing of fact.hearings || []) {
    put(heard, 
      el(
        "li",
        {},
        hearing.said_by_name || hearing.said_by ? ["said by ", hearing.said_by ? entityLink(hearing.said_by, hearing.said_by_name) : hearing.said_by_name] : "heard",
        hearing.speaker_affiliation_name ? [" (of ", entityLink(hearing.speaker_affiliation, hearing.speaker_affiliation_name), " then)"] : "",
        " in ", hearing.audience, hearing.message ? [" · message ", hearing.message] : "", " · ", day(hearing.heard_at),
        el("div", { class: "meta" }, sources(hearing.sources)),
      ),
    );
  }
  put(main, heard, el("h2", {}, "History"));
  const table = el("table", { class: "card", id: "history" }, el("tr", {}, el("th", {}, "when"), el("th", {}, "what"), el("th", {}, "before → after")));
  for (const event of doc.history) {
    const changes = Object.entries(event.changes || {}).map(([name, change]) =>
      el("div", {}, name + ": ", change.added ? "added " + change.added.join(", ") : (change.before || []).join(", ") + " → " + (change.after || []).join(", ")));
    put(table, el("tr", {}, el("td", {}, event.at), el("td", {}, event.action, event.reason ? el("div", { class: "meta" }, event.reason) : null), el("td", {}, changes)));
  }
  put(main, table, el("h2", {}, "Told to"));
  put(main, 
    doc.disclosures.length
      ? el("ul", { class: "facts card", id: "disclosures" }, doc.disclosures.map((d) => el("li", {}, d.audience || d.told_to, " · ", d.message || d.told_in || "", " · ", day(d.at || d.told_at))))
      : el("p", { class: "muted", id: "disclosures" }, "Not recorded as told to anyone."),
  );
}

const PAGES = { home, constellation: constellationPage, raw: rawPage, review: reviewPage, search: searchPage, entity: entityPage, fact: factPage };

function twin() {
  const path = location.pathname === "/" ? "/index" : location.pathname.replace(/\/$/, "");
  return path + ".json" + location.search;
}

function setUpBar(doc) {
  const params = new URLSearchParams(location.search);
  document.getElementById("search").value = params.get("q") || "";
  document.getElementById("nav-review").setAttribute("href", href("/review"));
  document.getElementById("nav-knowledge").setAttribute("href", href("/"));
  document.getElementById("home-link").setAttribute("href", href("/"));
  const showAs = document.getElementById("show-as");
  showAs.value = params.get("as") || "";
  const chooser = document.getElementById("perspective");
  const known = doc.perspectives || [doc.view.perspective];
  for (const name of known) chooser.append(el("option", { value: name, selected: name === doc.view.perspective }, name));
  const form = document.getElementById("view-form");
  const go = () => {
    location.href = href(location.pathname, { as: showAs.value.trim(), p: chooser.value, q: params.get("q") });
  };
  showAs.addEventListener("change", go);
  chooser.addEventListener("change", go);
  form.addEventListener("submit", (event) => { event.preventDefault(); go(); });
  const search = document.getElementById("search-form");
  search.addEventListener("submit", (event) => {
    event.preventDefault();
    location.href = href("/search", { q: document.getElementById("search").value });
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "/" && !(event.target.closest && event.target.closest("input, select, textarea"))) {
      event.preventDefault();
      document.getElementById("search").focus();
    }
  });
}

async function start() {
  const main = document.getElementById("main");
  let doc;
  try {
    const answer = await fetch(twin(), { credentials: "same-origin", headers: { Accept: "application/json" } });
    doc = await answer.json();
    if (!answer.ok) throw new Error(doc.message + (doc.hint ? " (" + doc.hint + ")" : ""));
  } catch (error) {
    main.replaceChildren(el("p", { class: "error", id: "error", role: "alert" }, error.message));
    return;
  }
  setUpBar(doc);
  main.replaceChildren();
  PAGES[doc.page](doc, main);
  document.title = (document.querySelector("h1") || {}).textContent + " · kgrdf console";
  document.body.dataset.ready = doc.page;
}

start();
