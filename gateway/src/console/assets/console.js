// The operator's console of mcp-tasks-gateway. Every value that a client or
// a tool chose is written with textContent, never as markup.
"use strict";

const api = "/console/api";
const NEW_ROWS = 200; // rows the feed may add above a page
const CONTROL = /[\u0000-\u001f\u007f]/g;

const state = {
  csrf: "",
  filter: { status: "", tool: "", owner: "" },
  cursor: "", // the current page's cursor ("" is the first)
  previous: [], // cursors of the pages before
  next: null,
  scanned: 0, // tasks the last page's read went through
  rows: new Map(), // id -> { row, tr }
  asking: new Map(), // id -> the action whose confirmation is shown
  skew: 0, // server time minus this browser's
  loadedAt: 0, // server time of the page's read: tasks made after it are new
};

const $ = (id) => document.getElementById(id);

// Control characters shown as their visible symbols.
function visible(text) {
  return String(text).replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    return String.fromCharCode(code === 0x7f ? 0x2421 : 0x2400 + code);
  });
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = visible(text);
  return node;
}

function duration(ms) {
  if (ms < 1000) return ms + " ms";
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + (s % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

function notice(text) {
  $("notice").textContent = visible(text);
}

async function request(path, options) {
  const response = await fetch(api + path, Object.assign({ credentials: "same-origin" }, options));
  if (response.status === 401) {
    location.reload();
    throw new Error("signed out");
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || "HTTP " + response.status);
  return body;
}

function post(path) {
  return request(path, { method: "POST", headers: { "X-Console-Csrf": state.csrf } });
}

// ---- the table ----

function matches(row) {
  const f = state.filter;
  if (f.status && row.status !== f.status) return false;
  if (f.tool && !(row.tool || "").includes(f.tool)) return false;
  if (f.owner && !(row.owner || "").includes(f.owner)) return false;
  return true;
}

// Fills a row's cells: built once, then only their text and values change,
// so that a button under the operator's pointer stays the same element.
function cells(tr, row) {
  if (!tr.firstChild) {
    for (const name of ["id", "tool", "owner", "status", "age", "run", "attempt"]) tr.append(el("td", name));
    const progress = el("td", "progress");
    progress.append(document.createElement("progress"), el("span", "message"));
    tr.append(progress, el("td", "actions"));
  }
  tr.dataset.id = row.id;
  tr.dataset.status = row.status;
  tr.className = "status-" + row.status + (tr.classList.contains("new") ? " new" : "");
  const set = (name, text) => {
    const cell = tr.querySelector("." + name);
    const shown = visible(text);
    if (cell.textContent !== shown) cell.textContent = shown;
  };
  set("id", row.id.slice(0, 8));
  tr.querySelector(".id").title = row.id;
  set("tool", row.tool === null ? "?" : row.tool);
  set("owner", row.owner === null ? "(none)" : row.owner);
  set("status", row.status);
  set("attempt", row.attempt);
  set("message", row.message === null ? "" : row.message);
  const bar = tr.querySelector("progress");
  bar.max = 1;
  if (row.progress !== null) bar.value = row.progress;
  else if (row.finished) bar.value = 0;
  else bar.removeAttribute("value");
  let asked = state.asking.get(row.id);
  if (asked && (asked === "cancel") === row.finished) {
    state.asking.delete(row.id);
    asked = undefined;
  }
  const mode = asked ? "ask-" + asked : row.finished ? "delete" : "cancel";
  if (tr.dataset.mode !== mode) {
    tr.dataset.mode = mode;
    const actions = tr.querySelector(".actions");
    if (asked) actions.replaceChildren(...question(tr, asked));
    else if (row.finished) actions.replaceChildren(button("Delete", "delete", () => confirm(tr, "delete")));
    else actions.replaceChildren(button("Cancel", "cancel", () => confirm(tr, "cancel")));
  }
  tick(tr, row);
}

function tick(tr, row) {
  const now = Date.now() + state.skew;
  tr.querySelector(".age").textContent = duration(Math.max(0, now - row.createdMs));
  const run = row.finished ? row.runMs : Math.max(row.runMs, now - row.createdMs);
  tr.querySelector(".run").textContent = duration(run);
}

function button(label, className, onClick) {
  const b = el("button", className, label);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

// The confirmation stays while the feed redraws the row.
function confirm(tr, action) {
  state.asking.set(tr.dataset.id, action);
  const known = state.rows.get(tr.dataset.id);
  if (known) cells(tr, known.row);
}

function question(tr, action) {
  return [
    el("span", "ask", action === "cancel" ? "Cancel this task?" : "Delete this task?"),
    button("Yes", "confirm-yes", () => act(tr, action)),
    button("No", "confirm-no", () => {
      state.asking.delete(tr.dataset.id);
      const known = state.rows.get(tr.dataset.id);
      if (known) cells(tr, known.row);
    }),
  ];
}

async function act(tr, action) {
  const id = tr.dataset.id;
  state.asking.delete(id);
  try {
    const answer = await post("/tasks/" + encodeURIComponent(id) + "/" + action);
    if (answer.row) upsert(answer.row);
    else remove(id);
    notice(action === "cancel" ? "cancelled " + id : "deleted " + id);
  } catch (error) {
    notice(action + " " + id + ": " + error.message);
    const known = state.rows.get(id);
    if (known) cells(tr, known.row);
  }
}

function upsert(row, fromFeed) {
  const known = state.rows.get(row.id);
  if (known) {
    known.row = row;
    cells(known.tr, row);
    return;
  }
  // A task of another page that changed stays there; one made since the
  // page was read is shown above it.
  if (!fromFeed || !matches(row) || row.createdMs < state.loadedAt) return;
  const tr = el("tr", "new");
  cells(tr, row);
  tr.classList.add("new");
  $("rows").prepend(tr);
  state.rows.set(row.id, { row, tr });
  const added = $("rows").querySelectorAll("tr.new");
  for (let i = NEW_ROWS; i < added.length; i++) remove(added[i].dataset.id);
  counted();
}

// Says how many rows the table shows and how far the store was read.
function counted() {
  $("paging").textContent =
    state.rows.size + " shown, " + state.scanned + " read" + (state.next ? "" : ", end of the list");
}

function remove(id) {
  const known = state.rows.get(id);
  if (!known) return;
  known.tr.remove();
  state.rows.delete(id);
  state.asking.delete(id);
  counted();
}

async function load(cursor) {
  const query = new URLSearchParams(state.filter);
  if (cursor) query.set("cursor", cursor);
  const page = await request("/tasks?" + query.toString());
  state.skew = page.now - Date.now();
  state.loadedAt = page.now - 2000;
  state.cursor = cursor || "";
  state.next = page.next;
  state.rows.clear();
  const body = $("rows");
  body.replaceChildren();
  for (const row of page.rows) {
    const tr = el("tr");
    cells(tr, row);
    body.append(tr);
    state.rows.set(row.id, { row, tr });
  }
  $("next").disabled = !page.next;
  $("first").disabled = !state.cursor;
  state.scanned = page.scanned;
  counted();
}

// ---- the change feed ----

function follow() {
  const feed = new EventSource(api + "/feed");
  let polling = null;
  feed.addEventListener("ready", () => {
    $("live").textContent = "live";
    $("live").className = "live on";
  });
  feed.addEventListener("rows", (event) => {
    const batch = JSON.parse(event.data);
    state.skew = batch.now - Date.now();
    for (const row of batch.rows) upsert(row, true);
    for (const id of batch.gone) remove(id);
  });
  feed.addEventListener("resync", () => load(state.cursor).catch((e) => notice(e.message)));
  feed.addEventListener("nofeed", () => {
    $("live").textContent = "reading every 3 s";
    polling = setInterval(() => load(state.cursor).catch((e) => notice(e.message)), 3000);
  });
  feed.onerror = () => {
    $("live").textContent = "reconnecting…";
    $("live").className = "live";
    if (polling) clearInterval(polling);
  };
}

// ---- the overview ----

function dl(target, pairs) {
  target.replaceChildren();
  for (const [name, value] of pairs) {
    target.append(el("dt", "", name), el("dd", "", value === null || value === undefined ? "–" : value));
  }
}

function sparkline(values, className) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 120 30");
  svg.setAttribute("class", "spark " + className);
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? 120 / (values.length - 1) : 0;
  const points = values.map((v, i) => (i * step).toFixed(1) + "," + (29 - (v / max) * 28).toFixed(1));
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", points.join(" "));
  svg.append(line);
  return svg;
}

function ms(value) {
  if (value === null || value === undefined) return "–";
  return value < 10 ? value.toFixed(2) + " ms" : duration(Math.round(value));
}

async function overview() {
  const o = await request("/overview");
  const s = o.store;
  // Counted in the background: nothing until the first count ends.
  const c = s.counts || {};
  const counted = s.total !== null && s.total !== undefined;
  const held = (value) => (counted ? value || 0 : "counting…");
  dl($("store"), [
    ["kind", s.kind],
    ["reachable", !counted ? "counting…" : s.reachable ? "yes" : "no: " + (s.error || "")],
    ["tasks held", held(s.total)],
    ["working", held(c.working)],
    ["input required", held(c.input_required)],
    ["re-runs pending", s.rerunsPending],
    ["finished", held((c.completed || 0) + (c.failed || 0) + (c.cancelled || 0))],
    ["consoles open", o.consoles],
  ]);
  const u = o.upstream;
  if (u) {
    dl($("upstream"), [
      ["kind", u.kind],
      ["target", u.target],
      ["reachable", u.reachable === null ? "no request yet" : u.reachable ? "yes" : "no"],
      ["latency p50", ms(u.latencyP50Ms)],
      ["in flight", u.inFlight],
      ["connections", u.connections],
      ["failures", u.failures],
      ["restarts", u.restarts],
    ]);
  }
  const slots = o.tools[0] ? o.tools[0].slots.length : 0;
  $("window").textContent = slots
    ? "(last " + Math.round((o.slotSeconds * slots) / 60) + " min)"
    : "(no calls yet)";
  const tools = $("tools");
  tools.replaceChildren();
  for (const t of o.tools) {
    const card = el("div", "card tool-card");
    card.dataset.tool = t.tool;
    card.append(el("h3", "tool", t.tool));
    const total = t.total;
    const parked = total.calls ? Math.round((100 * total.parked) / total.calls) + "%" : "–";
    const facts = el("dl");
    dl(facts, [
      ["calls", total.calls],
      ["parked", parked],
      ["failed", total.failed],
      ["p50", ms(total.p50_ms)],
      ["p95", ms(total.p95_ms)],
      ["p99", ms(total.p99_ms)],
    ]);
    card.append(facts);
    card.append(el("span", "legend", "calls"), sparkline(t.slots.map((x) => x.calls), "calls"));
    card.append(el("span", "legend", "p95"), sparkline(t.slots.map((x) => x.p95_ms || 0), "p95"));
    tools.append(card);
  }
}

// ---- start ----

async function start() {
  const session = await request("/session");
  state.csrf = session.csrf;
  $("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    state.filter = {
      status: $("f-status").value,
      tool: $("f-tool").value,
      owner: $("f-owner").value,
    };
    state.previous = [];
    load("").catch((e) => notice(e.message));
  });
  $("next").addEventListener("click", () => {
    if (!state.next) return;
    state.previous.push(state.cursor);
    load(state.next).catch((e) => notice(e.message));
  });
  $("first").addEventListener("click", () => {
    state.previous = [];
    load("").catch((e) => notice(e.message));
  });
  $("signout").addEventListener("click", async () => {
    await fetch("/console/logout", { method: "POST", headers: { "X-Console-Csrf": state.csrf } });
    location.reload();
  });
  await load("");
  follow();
  overview().catch((e) => notice(e.message));
  setInterval(() => overview().catch((e) => notice(e.message)), 5000);
  setInterval(() => {
    for (const { row, tr } of state.rows.values()) if (!row.finished) tick(tr, row);
  }, 1000);
}

start().catch((error) => notice(error.message));
