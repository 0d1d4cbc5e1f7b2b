// The trace viewer: a table of episodes (paged and filtered by the server), one episode's steps and
// turns with logprob shading, and the run's curves as plain SVG. Routes: #/ and #/episode/<id>.
"use strict";

const $ = (sel) => document.querySelector(sel);
const PAGE = 50;
const view = { offset: 0, total: 0 };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  return node;
}

function pretty(value) { return typeof value === "string" ? value : JSON.stringify(value, null, 2); }
function fmt(x) { return x === null || x === undefined ? "–" : typeof x === "number" ? String(Math.round(x * 1e4) / 1e4) : String(x); }

function showError(message) { const e = $("#error"); e.hidden = !message; e.textContent = message || ""; }

async function api(path) {
  const reply = await fetch(path);
  const body = await reply.json();
  if (!reply.ok) throw new Error(body.detail || `HTTP ${reply.status}`);
  return body;
}

// -- table ------------------------------------------------------------------------------------------
function filterQuery() {
  const q = new URLSearchParams();
  const add = (k, v) => { if (v !== "") q.set(k, v); };
  add("env", $("#filter-env").value);
  add("ok", $("#filter-ok").value);
  add("min_reward", $("#filter-min").value);
  add("max_reward", $("#filter-max").value);
  add("group", $("#filter-group").value.trim());
  return q;
}

async function loadTable() {
  const q = filterQuery();
  q.set("offset", view.offset);
  q.set("limit", PAGE);
  document.body.dataset.loading = "1";
  try {
    const page = await api(`api/episodes?${q}`);
    view.total = page.total;
    const body = $("#episodes tbody");
    body.replaceChildren();
    for (const e of page.episodes) {
      const row = el("tr", { class: "episode-row", dataset: { id: e.id } },
        el("td", {}, e.index), el("td", {}, el("a", { href: `#/episode/${encodeURIComponent(e.id)}` }, e.episode_id || e.id)),
        el("td", {}, e.group_id || ""), el("td", {}, e.env || ""), el("td", { class: "reward" }, fmt(e.reward)),
        el("td", { class: e.ok ? "good" : "bad" }, e.ok ? "ok" : "failed"), el("td", {}, e.done ? "yes" : "no"),
        el("td", {}, [e.model, e.policy_version].filter((x) => x !== null && x !== undefined).join(" @") || ""),
        el("td", { class: "bad" }, e.error || ""));
      row.addEventListener("click", (ev) => { if (ev.target.tagName !== "A") location.hash = `#/episode/${encodeURIComponent(e.id)}`; });
      body.append(row);
    }
    const last = Math.min(view.offset + PAGE, view.total);
    $("#page-info").textContent = view.total ? `${view.offset + 1}–${last} of ${view.total}` : "no episodes match";
    $("#prev").disabled = view.offset === 0;
    $("#next").disabled = last >= view.total;
    showError("");
  } catch (e) { showError(`cannot load episodes: ${e.message}`); }
  delete document.body.dataset.loading;
  document.body.dataset.tableLoaded = String(Number(document.body.dataset.tableLoaded || 0) + 1);
}

// -- curves -----------------------------------------------------------------------------------------
function chart(series, xLabel) {
  const W = 440, H = 150, L = 40, B = 20, T = 8, R = 8;
  let pts = series.points;
  if (pts.length > 2000) { const stride = Math.ceil(pts.length / 2000); pts = pts.filter((_, i) => i % stride === 0); }
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(0, ...ys), y1 = Math.max(...ys, y0 + 1e-9);
  const sx = (x) => L + (x1 === x0 ? 0.5 : (x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - B - T);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", H); svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const add = (tag, attrs, text) => { const n = document.createElementNS(ns, tag); for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v); if (text !== undefined) n.textContent = text; svg.append(n); return n; };
  add("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B });
  add("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B });
  add("text", { x: 2, y: T + 8 }, fmt(y1));
  add("text", { x: 2, y: H - B }, fmt(y0));
  add("text", { x: L, y: H - 4 }, `${xLabel} ${fmt(x0)}`);
  add("text", { x: W - R, y: H - 4, "text-anchor": "end" }, fmt(x1));
  if (pts.length === 1) add("circle", { cx: sx(xs[0]), cy: sy(ys[0]), r: 3, fill: "#2f6fde" });
  add("polyline", { class: "line", points: pts.map((p) => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(" ") });
  return el("figure", { class: "curve", dataset: { name: series.name, points: String(series.points.length) } },
    el("figcaption", {}, `${series.name} (${series.points.length} points)`), svg);
}

// Reward, win rate and loss first (the server orders them and marks them primary); series whose value never
// changes are folded into one line; every other series can be picked.
async function loadCurves() {
  try {
    const curves = await api("api/curves");
    $("#curve-source").textContent = `from ${curves.source}`;
    const box = $("#curves");
    box.replaceChildren();
    const series = curves.series.filter((s) => s.points.length);
    const moving = series.filter((s) => !s.flat), flat = series.filter((s) => s.flat);
    let shown = moving.filter((s) => s.primary);
    if (!shown.length) shown = moving.slice(0, 4);
    const charts = el("div", { class: "charts" });
    for (const s of shown) charts.append(chart(s, curves.x));
    box.append(charts);
    const others = moving.filter((s) => !shown.includes(s));
    if (others.length) {
      const picker = el("details", { id: "curve-picker" }, el("summary", {}, `${others.length} more series`));
      for (const s of others) {
        const box2 = el("input", { type: "checkbox", value: s.name });
        box2.addEventListener("change", () => {
          const old = charts.querySelector(`figure[data-name="${CSS.escape(s.name)}"]`);
          if (box2.checked && !old) charts.append(chart(s, curves.x));
          if (!box2.checked && old) old.remove();
        });
        picker.append(el("label", { class: "pick" }, box2, " ", s.name));
      }
      box.append(picker);
    }
    if (flat.length) {
      box.append(el("details", { id: "curve-flat" }, el("summary", {}, `${flat.length} series that never change`),
        el("p", { class: "flat" }, flat.map((s) => `${s.name} = ${fmt(s.points[0][1])}`).join(" · "))));
    }
    if (!series.length) box.textContent = "no rewards to plot yet";
  } catch (e) { showError(`cannot load curves: ${e.message}`); }
}

// The env's human view of a recorded observation (its render_observation, run by the server), above the JSON.
function observationNode(s) {
  const json = el("pre", { class: "json" }, pretty(s.observation));
  if (!s.view) return el("td", {}, json);
  const view = el("div", { class: "human-view" });
  view.innerHTML = s.view;  // a fragment the env built with its texts escaped
  return el("td", {}, view, json);
}

// -- one episode --------------------------------------------------------------------------------------
function messageNode(m) {
  const content = Array.isArray(m.content) ? m.content.map((part) => part.text ?? JSON.stringify(part)).join("") : m.content;
  const node = el("div", { class: "message", dataset: { role: m.role || "?" } }, el("span", { class: "role" }, m.role + (m.name ? ` · ${m.name}` : "")), content || "");
  for (const call of m.tool_calls || []) {
    const fn = call.function || {};
    node.append(el("div", { class: "tool-call" }, `${fn.name}(${fn.arguments || ""})`));
  }
  return node;
}

function tokensNode(c) {
  const box = el("div", { class: "tokens", dataset: { source: c.source } });
  c.ids.forEach((id, i) => {
    const logp = c.logps[i];
    const text = c.texts ? c.texts[i] : `⟨${id}⟩`;
    const span = el("span", { class: c.texts ? "tok" : "tok id", dataset: { id: String(id) } }, text);
    if (logp !== undefined && logp !== null) {
      const p = Math.exp(logp);
      span.style.backgroundColor = `rgba(220, 38, 38, ${(0.85 * (1 - p)).toFixed(3)})`;
      span.dataset.logp = String(logp);
      span.title = `id ${id} · logp ${logp.toFixed(4)} · p ${p.toFixed(3)}`;
    } else span.title = `id ${id}`;
    if (c.mask.length && c.mask[i] === 0) span.classList.add("masked");
    box.append(span);
  });
  return box;
}

function turnNode(t, k) {
  const meta = t.metadata || {};
  const head = el("div", { class: "turn-head" }, `turn ${k} · ${t.node_id} · ${t.prompt_tokens} prompt tokens · ` +
    `${t.completion.ids.length} completion tokens · finish ${meta.finish_reason ?? "?"}` + (meta.rollout_type ? ` · ${meta.rollout_type}` : ""));
  const node = el("div", { class: "turn", dataset: { node: t.node_id } }, head);
  for (const m of t.new_messages) node.append(messageNode(m));
  for (const choice of t.choices) if (choice.message) node.append(messageNode(choice.message));
  if (t.completion.ids.length) {
    const label = { row: "token text stored in the row", tokenizer: "decoded with the local tokenizer", ids: "token ids (no tokenizer found locally)" }[t.completion.source];
    node.append(el("div", { class: "legend" }, `completion tokens: ${label}`), tokensNode(t.completion));
  }
  return node;
}

// The calls as a tree (the server's call_graph, by position): each line a list of calls, each continuing the one
// above it; a branch that forks from a call is nested under it; a line that continues no call (a side call, a
// rewritten context) starts at the top with its prefix break.
function callTreeNode(ep, graph) {
  const breaks = new Map(graph.breaks.map((b) => [b.index, b]));
  const name = (i) => `#${i} ${ep.turns[i].node_id ?? ""}`;
  const select = (i) => {
    for (const n of document.querySelectorAll("#call-tree .call.selected")) n.classList.remove("selected");
    document.querySelector(`#call-tree .call[data-index="${i}"]`).classList.add("selected");
    const t = ep.turns[i];  // what the call added to the call it continues (a root: its whole prompt)
    $("#call-detail").replaceChildren(turnNode({ ...t, new_messages: t.messages.slice(graph.nodes[i].new_from) }, i));
    $("#call-detail").dataset.index = String(i);
  };
  const lineNode = (line) => {
    const first = line.calls[0];
    const label = line.main ? "main line" : line.parent === null ? "branch · continues no earlier call" : `branch · forks from ${name(line.parent)}`;
    const list = el("ol", { class: `call-line ${line.main ? "main" : "branch"}`, dataset: { line: String(line.index) } },
      el("li", { class: "line-label" }, label));
    for (const i of line.calls) {
      const t = ep.turns[i];
      const reply = ((t.choices[0] || {}).message || {}).content;
      const text = typeof reply === "string" ? reply.slice(0, 60) : "";
      const button = el("button", { type: "button", class: "call", dataset: { index: String(i), node: String(t.node_id) } },
        el("b", {}, name(i)), ` · ${t.prompt_tokens} + ${t.completion.ids.length} tokens`, text ? ` · ${text}` : null);
      button.addEventListener("click", () => select(i));
      const item = el("li", { class: "call-item" }, button);
      const brk = i === first ? breaks.get(i) : undefined;
      if (brk) {
        item.append(el("div", { class: "prefix-break", dataset: { common: String(brk.common) } },
          brk.closest === null ? `prefix break: no earlier call with token ids (${brk.rerendered} tokens)` :
          `prefix break (${brk.kind}): ids first differ from ${name(brk.closest)} at token ${brk.common}; ` +
          `${brk.rerendered} tokens after it rendered anew, ${brk.dropped} of ${name(brk.closest)} not kept`));
      }
      for (const fork of graph.lines.filter((l) => l.parent === i)) item.append(lineNode(fork));
      list.append(item);
    }
    return list;
  };
  return graph.lines.filter((l) => l.parent === null).map(lineNode);
}

function fill(tbody, rows) { tbody.replaceChildren(...rows); }

async function loadEpisode(id) {
  try {
    const ep = await api(`api/episode/${encodeURIComponent(id)}`);
    $("#ep-title").textContent = `episode ${ep.episode_id || ep.id} · ${(ep.env && ep.env.name) || ""}`;
    $("#ep-reward").textContent = fmt(ep.reward);
    $("#ep-ok").textContent = ep.ok ? "ok" : "failed";
    $("#ep-ok").className = ep.ok ? "good" : "bad";
    $("#ep-done").textContent = String(ep.done);
    $("#ep-truncated").textContent = String(ep.truncated);
    $("#ep-group").textContent = ep.group_id || "–";
    $("#ep-policy").textContent = ep.policy ? `${ep.policy.model ?? "?"} @${ep.policy.version ?? "?"}` : "–";
    $("#ep-error").hidden = !ep.error;
    $("#ep-error").textContent = ep.error ? `${ep.error.type}: ${ep.error.message}` : "";
    fill($("#components tbody"), Object.entries(ep.rewards || {}).map(([k, v]) => el("tr", { dataset: { name: k } }, el("th", {}, k), el("td", {}, fmt(v)))));
    $("#ep-task").textContent = pretty(ep.task);
    $("#ep-timings").textContent = pretty(ep.timings);
    fill($("#steps tbody"), ep.steps.map((s, i) => el("tr", { class: "step" }, el("td", {}, i + 1),
      el("td", {}, el("pre", { class: "json" }, pretty(s.action))), observationNode(s),
      el("td", { class: "reward" }, fmt(s.reward)), el("td", {}, s.done ? "yes" : "no"), el("td", {}, fmt(s.seconds)))));
    const graph = ep.call_graph;
    $("#call-graph-panel").hidden = !graph;
    $("#call-tree").replaceChildren(...(graph ? callTreeNode(ep, graph) : []));
    $("#call-detail").replaceChildren();
    delete $("#call-detail").dataset.index;
    $("#turns").replaceChildren(...(ep.turns.length ? ep.turns.map(turnNode) : [el("p", {}, "no model turns in this row")]));
    document.body.dataset.episode = ep.id;
    showError("");
  } catch (e) { showError(`cannot load episode ${id}: ${e.message}`); }
}

// -- routing ------------------------------------------------------------------------------------------
function route() {
  const match = location.hash.match(/^#\/episode\/(.+)$/);
  $("#table-view").hidden = Boolean(match);
  $("#episode-view").hidden = !match;
  if (match) { delete document.body.dataset.episode; loadEpisode(decodeURIComponent(match[1])); window.scrollTo(0, 0); }
}

async function main() {
  const info = await api("api/info");
  $("#source").textContent = `${info.source} · ${info.rows} episodes`;
  for (const env of info.envs) $("#filter-env").append(el("option", { value: env }, env));
  for (const g of info.groups) $("#groups").append(el("option", { value: g }));
  $("#filters").addEventListener("submit", (e) => { e.preventDefault(); view.offset = 0; loadTable(); });
  for (const id of ["#filter-env", "#filter-ok"]) $(id).addEventListener("change", () => { view.offset = 0; loadTable(); });
  $("#clear").addEventListener("click", () => { $("#filters").reset(); view.offset = 0; loadTable(); });
  $("#prev").addEventListener("click", () => { view.offset = Math.max(0, view.offset - PAGE); loadTable(); });
  $("#next").addEventListener("click", () => { view.offset += PAGE; loadTable(); });
  window.addEventListener("hashchange", route);
  route();
  await Promise.all([loadTable(), loadCurves()]);
  document.body.dataset.ready = "1";
}

main().catch((e) => showError(`cannot start the viewer: ${e.message}`));
