// The console of `harel-transport serve`: it reads the JSON API and writes what it gets into
// the page as text only (textContent, createElement; never innerHTML), since events, headers
// and group ids are whatever producers stored.
"use strict";

const REFRESH_MS = 2000;
const PAGE = 50;
const TOKEN_KEY = "harel-admin-token";

const $ = (id) => document.getElementById(id);

function show(message, isError) {
  const notice = $("notice");
  notice.textContent = message;
  notice.className = isError ? "error" : "";
  notice.hidden = false;
}

async function look(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== null && value !== undefined && value !== "") query.set(key, value);
  }
  const response = await fetch(`${path}?${query}`, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `${path}: HTTP ${response.status}`);
  return body;
}

// A change: the token from this tab's storage, in the Authorization header. Its outcome is
// shown once the page has been read again, so what it says and what is shown agree.
async function change(path, body, done) {
  const token = sessionStorage.getItem(TOKEN_KEY) || "";
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  let outcome;
  try {
    const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error || `HTTP ${response.status}`);
    outcome = [done(answer), false];
  } catch (e) {
    outcome = [`${path}: ${e.message}`, true];
  }
  await Promise.all([refreshStats(), groups.load(), dead.load()]);
  show(...outcome);
}

function cell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "-" : String(text);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

// A message's headers ([[name, value], ...], in order) in one cell: a line per pair, its
// name and its value each as text; "-" when there are none.
function headersCell(row, headers) {
  if (!headers || headers.length === 0) return cell(row, null, "headers");
  const td = cell(row, "", "headers");
  for (const [name, value] of headers) {
    const line = document.createElement("div");
    line.className = "header";
    const n = document.createElement("span");
    n.className = "header-name";
    n.textContent = name;
    const v = document.createElement("span");
    v.className = "header-value";
    v.textContent = value;
    line.append(n, "=", v);
    td.appendChild(line);
  }
  return td;
}

function button(parent, label, onClick, className) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  if (className) b.className = className;
  b.addEventListener("click", onClick);
  parent.appendChild(b);
  return b;
}

function seconds(s) {
  if (s === null || s === undefined) return "-";
  return s < 60 ? `${s.toFixed(1)}s` : `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, "0")}s`;
}

async function refreshStats() {
  const status = $("status");
  try {
    const s = await look("/api/stats");
    for (const key of ["messages", "groups", "ready", "leased", "parked", "delayed"]) $(`stat-${key}`).textContent = String(s[key]);
    $("stat-dead").textContent = s.dead === null ? "- (no dead-letter table)" : String(s.dead);
    $("stat-oldest-ready").textContent = seconds(s.oldest_ready_age);
    $("stat-overdue").textContent = seconds(s.oldest_overdue_lease);
    const body = document.querySelector("#priorities tbody");
    body.replaceChildren();
    for (const p of s.by_priority) {
      const row = document.createElement("tr");
      for (const value of [p.priority, p.groups, p.ready, p.leased, p.parked, p.delayed]) cell(row, value);
      body.appendChild(row);
    }
    status.textContent = `updated ${new Date(s.now * 1000).toLocaleTimeString()}`;
    status.className = "";
  } catch (e) {
    status.textContent = `stats failed: ${e.message}`;
    status.className = "error";
  }
}

// A paged listing: `cursors` are the pages seen so far, so "first page" goes back.
function pager(section, fetchPage, render) {
  const state = { cursor: null, next: null };
  const list = {
    async load() {
      try {
        const page = await fetchPage(state.cursor);
        const body = $(section).querySelector("tbody");
        body.replaceChildren();
        render(page, body);
        state.next = page.next;
        $(`${section}-next`).disabled = !page.next;
      } catch (e) {
        show(`${section}: ${e.message}`, true);
      }
    },
    first() {
      state.cursor = null;
      return list.load();
    },
    next() {
      state.cursor = state.next;
      return list.load();
    },
  };
  $(`${section}-next`).addEventListener("click", () => list.next());
  return list;
}

const groups = pager(
  "groups",
  (cursor) => look("/api/groups", { state: $("group-state").value, cursor, limit: PAGE }),
  (page, body) => {
    for (const g of page.groups) {
      const row = document.createElement("tr");
      const name = document.createElement("td");
      button(name, g.group_id, () => showMessages(g.group_id), "link");
      row.appendChild(name);
      for (const value of [g.state, g.depth, seconds(g.head_age), g.holder, g.priority]) cell(row, value);
      const actions = cell(row, "", "actions");
      if (g.state !== "ready") {
        button(actions, "release", () =>
          change("/api/release", { group: g.group_id }, (a) =>
            a.released ? `released ${a.group_id}` : `${a.group_id}: nothing to release`));
      }
      body.appendChild(row);
    }
  },
);

let shownGroup = null;
const messages = pager(
  "messages",
  (cursor) => look("/api/peek", { group: shownGroup, cursor, limit: PAGE }),
  (page, body) => {
    for (const m of page.messages) {
      const row = document.createElement("tr");
      for (const value of [m.seq, m.attempts, m.locked_by]) cell(row, value);
      headersCell(row, m.headers);
      cell(row, m.event, "event");
      body.appendChild(row);
    }
  },
);

function showMessages(group) {
  shownGroup = group;
  $("messages-group").textContent = group;
  $("messages").hidden = false;
  return messages.first();
}

const dead = pager(
  "dead",
  (cursor) => look("/api/dead", { cursor, limit: PAGE }),
  (page, body) => {
    for (const d of page.dead_letters) {
      const row = document.createElement("tr");
      row.dataset.seq = String(d.seq);
      for (const value of [d.seq, d.group_id, d.attempts, d.reason]) cell(row, value);
      headersCell(row, d.headers);
      cell(row, d.event, "event");
      const actions = cell(row, "", "actions");
      button(actions, "redrive", () =>
        change("/api/dead/redrive", { seqs: [d.seq] }, (a) => `redrove ${a.redriven} (seq ${d.seq})`));
      button(actions, "purge", () =>
        change("/api/dead/purge", { seqs: [d.seq] }, (a) => `purged ${a.purged} (seq ${d.seq})`));
      button(actions, "redrive group", () =>
        change("/api/dead/redrive", { group: d.group_id }, (a) => `redrove ${a.redriven} of ${d.group_id}`));
      body.appendChild(row);
    }
  },
);

function start() {
  $("token").value = sessionStorage.getItem(TOKEN_KEY) || "";
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    show("admin token set for this tab", false);
  });
  $("token-forget").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    $("token").value = "";
    show("admin token forgotten", false);
  });
  $("group-state").addEventListener("change", () => groups.first());
  $("groups-first").addEventListener("click", () => groups.first());
  $("dead-first").addEventListener("click", () => dead.first());
  refreshStats();
  groups.load();
  dead.load();
  setInterval(refreshStats, REFRESH_MS);
}

start();
