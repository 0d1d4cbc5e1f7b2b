// The env playground: one /ws session per page; the action form is built from GET /schema
// (or, for MCP envs, from tools/list), and every reply is shown as it comes.
"use strict";

const $ = (sel) => document.querySelector(sel);
const base = new URL("../", location.href);  // the server root, whatever prefix it sits under
const state = { ws: null, pending: [], schema: null, tools: [], mcp: false, steps: 0, history: 0, rpcId: 0,
                hidden: [], lastState: null };

function show(el, value) { el.textContent = JSON.stringify(value, null, 2); }

function setStatus(kind, text) {
  const el = $("#status");
  el.dataset.state = kind;
  el.textContent = text;
  const open = kind === "open";
  $("#reset").disabled = !open;
  $("#step").disabled = !open;
  for (const button of document.querySelectorAll("#action-buttons button")) button.disabled = !open;
  $("#reconnect").hidden = open || kind === "connecting";
}

function showError(message) {
  const el = $("#error");
  el.hidden = !message;
  el.textContent = message || "";
}

// -- the WebSocket session: strictly one reply per request, in order ---------------------------
function connect() {
  const url = new URL("ws", base);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  setStatus("connecting", "connecting…");
  const ws = new WebSocket(url);
  state.ws = ws;
  ws.onopen = () => { setStatus("open", "connected"); refreshState(); };
  ws.onmessage = (event) => {
    let msg;
    try { msg = JSON.parse(event.data); } catch (e) { showError("server sent a frame that is not JSON"); return; }
    const waiter = state.pending.shift();
    if (waiter) waiter.resolve(msg);
    else if (msg.type === "error") showError(`${msg.data.code}: ${msg.data.message}`);
  };
  ws.onclose = (event) => {
    setStatus("closed", `disconnected (${event.code}${event.reason ? " " + event.reason : ""})`);
    for (const waiter of state.pending.splice(0)) waiter.reject(new Error("the session closed"));
  };
}

function request(msg) {
  return new Promise((resolve, reject) => {
    if (!state.ws || state.ws.readyState !== WebSocket.OPEN) { reject(new Error("not connected")); return; }
    state.pending.push({ resolve, reject });
    state.ws.send(JSON.stringify(msg));
  });
}

function errorText(msg) {
  const data = msg.data || {};
  let text = `${data.code || "ERROR"}: ${data.message || ""}`;
  for (const err of data.errors || []) text += `\n  ${(err.loc || []).join(".")}: ${err.msg}`;
  return text;
}

// The State panel shows what a player may see: the env's hidden fields (info.json's hidden_state, e.g.
// Wordle's secret) only while "show hidden" is ticked.
function showState() {
  const data = state.lastState;
  if (data === null) return;
  const showHidden = $("#show-hidden").checked;
  const visible = {};
  for (const [key, value] of Object.entries(data)) {
    if (showHidden || !state.hidden.includes(key)) visible[key] = value;
  }
  show($("#state"), visible);
}

async function refreshState() {
  const reply = await request({ type: "state" }).catch(() => null);
  if (reply && reply.type === "state") { state.lastState = reply.data || {}; showState(); }
}

// -- the action form from a JSON schema ---------------------------------------------------------
function resolve(schema, root) {
  let s = schema || {};
  while (s.$ref && root) {
    const name = s.$ref.split("/").pop();
    s = Object.assign({}, ((root.$defs || root.definitions || {})[name]) || {}, s.description ? { description: s.description } : {});
  }
  if (s.anyOf || s.oneOf) {
    const options = (s.anyOf || s.oneOf).filter((o) => o.type !== "null");
    if (options.length === 1) return Object.assign({ nullable: true, default: s.default, description: s.description, title: s.title }, resolve(options[0], root));
  }
  return s;
}

function kindOf(s) {
  if (s.enum) return "enum";
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
  return ["string", "integer", "number", "boolean"].includes(t) ? t : "json";
}

function buildForm(schema) {
  const form = $("#action-form");
  form.innerHTML = "";
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  for (const [name, raw] of Object.entries(props)) {
    if (name === "metadata") continue;
    const s = resolve(raw, schema);
    const kind = kindOf(s);
    const field = document.createElement("div");
    field.className = "field";
    const label = document.createElement("label");
    label.htmlFor = `field-${name}`;
    label.textContent = name + (required.has(name) ? " *" : "") + ` (${kind})`;
    let input;
    if (kind === "enum") {
      input = document.createElement("select");
      for (const v of s.enum) { const o = document.createElement("option"); o.value = JSON.stringify(v); o.textContent = String(v); input.append(o); }
      if (s.default !== undefined) input.value = JSON.stringify(s.default);
    } else if (kind === "boolean") {
      input = document.createElement("input");
      input.type = "checkbox";
      input.checked = Boolean(s.default);
    } else if (kind === "json") {
      input = document.createElement("textarea");
      input.placeholder = "JSON";
      if (s.default !== undefined) input.value = JSON.stringify(s.default);
    } else {
      input = document.createElement("input");
      input.type = kind === "string" ? "text" : "number";
      if (kind === "integer") input.step = "1";
      if (s.default !== undefined && s.default !== null) input.value = s.default;
    }
    input.id = `field-${name}`;
    input.name = name;
    input.dataset.kind = kind;
    input.dataset.required = required.has(name) ? "1" : "";
    field.append(label, input);
    if (s.description) { const help = document.createElement("div"); help.className = "help"; help.textContent = s.description; field.append(help); }
    form.append(field);
  }
  if (!form.children.length) form.textContent = "(this action has no fields)";
}

function readForm() {
  const values = {};
  for (const input of $("#action-form").querySelectorAll("[data-kind]")) {
    const { kind, required } = input.dataset;
    const name = input.name;
    if (kind === "boolean") { values[name] = input.checked; continue; }
    if (kind === "enum") { values[name] = JSON.parse(input.value); continue; }
    const text = input.value;
    if (text === "" && kind !== "string") {
      if (required) throw new Error(`${name} is required`);
      continue;
    }
    if (kind === "integer") values[name] = parseInt(text, 10);
    else if (kind === "number") values[name] = parseFloat(text);
    else if (kind === "json") {
      try { values[name] = JSON.parse(text); } catch (e) { throw new Error(`${name}: not valid JSON (${e.message})`); }
    } else values[name] = text;
  }
  return values;
}

// -- MCP envs: pick a tool, fill its arguments ---------------------------------------------------
async function loadTools() {
  state.rpcId += 1;
  const reply = await request({ type: "mcp", data: { jsonrpc: "2.0", id: state.rpcId, method: "tools/list", params: {} } });
  const result = reply.data && reply.data.result;
  if (!result) { showError(`tools/list failed: ${JSON.stringify(reply.data && reply.data.error)}`); return; }
  state.tools = result.tools || [];
  const select = $("#tool");
  select.innerHTML = "";
  for (const tool of state.tools) { const o = document.createElement("option"); o.value = tool.name; o.textContent = tool.name; select.append(o); }
  $("#tool-picker").hidden = false;
  $("#action-title").textContent = "Tool call";
  pickTool();
}

function pickTool() {
  const tool = state.tools.find((t) => t.name === $("#tool").value);
  buildForm(tool ? (tool.inputSchema || tool.input_schema || {}) : {});
}

// -- reset / step ---------------------------------------------------------------------------------
// The env's human view (Environment.render_observation), rendered by the server, above the JSON.
async function showHumanView(observation) {
  const box = $("#human-view");
  const seq = (state.viewSeq = (state.viewSeq || 0) + 1);
  let html = null;
  try {
    const url = new URL("web/render", base);
    url.searchParams.set("observation", JSON.stringify(observation ?? {}));
    const reply = await fetch(url);
    if (reply.ok) html = (await reply.json()).html;
  } catch (e) { html = null; }
  if (seq !== state.viewSeq) return;  // a later observation is already on its way
  box.innerHTML = html || "";  // a fragment the env built with its texts escaped
  box.hidden = !html;
  box.dataset.rendered = String(seq);
}

// An env whose observations name their actions (Atari's action_meanings, OpenEnv's atari_env shape) and whose
// action has an action_id field gets a button per action: a click steps with that action_id.
function showActionButtons(observation) {
  const box = $("#action-buttons");
  const fields = (state.schema && state.schema.action && state.schema.action.properties) || {};
  const meanings = observation && Array.isArray(observation.action_meanings) ? observation.action_meanings : [];
  const usable = !state.mcp && "action_id" in fields && meanings.length > 0;
  const legal = observation && Array.isArray(observation.legal_actions) ? observation.legal_actions : [];
  const ids = legal.length === meanings.length ? legal : meanings.map((_, i) => i);
  const key = usable ? JSON.stringify([meanings, ids]) : "";
  if (box.dataset.key === key) return;  // the same actions as the last step: keep the buttons
  box.dataset.key = key;
  box.innerHTML = "";
  box.hidden = !usable;
  if (!usable) return;
  meanings.forEach((meaning, i) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = String(meaning);
    button.dataset.actionId = String(ids[i]);
    button.addEventListener("click", () => stepWith(ids[i]));
    box.append(button);
  });
}

async function stepWith(actionId) {
  const field = $("#field-action_id");
  if (field) field.value = String(actionId);
  await doStep();
}

function showObservation(data) {
  show($("#observation"), data.observation);
  showHumanView(data.observation);
  showActionButtons(data.observation);
  $("#reward").textContent = data.reward === null || data.reward === undefined ? "null" : String(data.reward);
  $("#done").textContent = String(Boolean(data.done));
}

function addHistory(kind, action, data) {
  state.history += 1;
  const row = document.createElement("tr");
  if (data && data.done) row.className = "done";
  const cells = [String(state.history), kind, action === null ? "" : JSON.stringify(action),
    data ? String(data.reward) : "", data ? String(Boolean(data.done)) : ""];
  cells.forEach((text, i) => { const td = document.createElement("td"); td.textContent = text; if (i === 2) td.className = "action"; row.append(td); });
  $("#history tbody").append(row);
}

async function run(kind, message, action) {
  showError("");
  let reply;
  try { reply = await request(message); } catch (e) { showError(e.message); return; }
  if (reply.type === "error") { showError(errorText(reply)); addHistory(kind + " (error)", action, null); return; }
  if (kind === "reset") state.steps = 0; else state.steps += 1;
  $("#step-count").textContent = String(state.steps);
  showObservation(reply.data);
  addHistory(kind, action, reply.data);
  await refreshState();
}

async function doReset() {
  const seed = $("#seed").value;
  const data = seed === "" ? {} : { seed: parseInt(seed, 10) };
  await run("reset", { type: "reset", data }, Object.keys(data).length ? data : null);
}

async function doStep() {
  let action;
  try { action = readForm(); } catch (e) { showError(e.message); return; }
  if (state.mcp) action = { type: "call_tool", tool_name: $("#tool").value, arguments: action };
  await run("step", { type: "step", data: action }, action);
}

async function main() {
  const [info, schema] = await Promise.all([
    fetch(new URL("web/info.json", base)).then((r) => r.json()),
    fetch(new URL("schema", base)).then((r) => r.json()),
  ]);
  $("#env-name").textContent = info.name;
  $("#env-description").textContent = info.description || "";
  document.title = `${info.name} · openenv-train playground`;
  state.mcp = Boolean(info.mcp);
  state.hidden = info.hidden_state || [];
  $("#hidden-toggle").hidden = state.hidden.length === 0;
  $("#hidden-names").textContent = state.hidden.join(", ");
  $("#show-hidden").addEventListener("change", showState);
  state.schema = schema;
  if (!state.mcp) buildForm(schema.action);
  $("#reset").addEventListener("click", doReset);
  $("#step").addEventListener("click", doStep);
  $("#tool").addEventListener("change", pickTool);
  $("#reconnect").addEventListener("click", connect);
  $("#action-form").addEventListener("submit", (e) => { e.preventDefault(); doStep(); });
  connect();
  if (state.mcp) {
    await new Promise((ok) => state.ws.addEventListener("open", ok, { once: true }));
    await loadTools();
  }
  document.body.dataset.ready = "1";
}

main().catch((e) => showError(`cannot load the playground: ${e.message}`));
