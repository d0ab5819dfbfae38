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
  // The pauses first: the groups' pause and resume buttons follow them.
  await loadPauses();
  await Promise.all([refreshStats(), loadLimits(), groups.load(), dead.load()]);
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
    // held: groups a routing key's limit holds; retrying: groups whose lapsed lease waits its
    // retry backoff. Neither is in ready.
    for (const key of ["messages", "groups", "ready", "leased", "parked", "delayed", "paused", "held", "retrying"]) {
      $(`stat-${key}`).textContent = String(s[key]);
    }
    $("stat-dead").textContent = s.dead === null ? "- (no dead-letter table)" : String(s.dead);
    // Of the dead letters, those whose ttl or expires_at passed undelivered.
    $("stat-expired").textContent = s.expired === null ? "-" : String(s.expired);
    $("stat-oldest-ready").textContent = seconds(s.oldest_ready_age);
    $("stat-overdue").textContent = seconds(s.oldest_overdue_lease);
    const body = document.querySelector("#priorities tbody");
    body.replaceChildren();
    // Paused, held and retrying groups per level are shown when there are any, as `stats`
    // prints them.
    const shown = ["paused", "held", "retrying"].filter((state) => {
      $(`priority-${state}`).hidden = s[state] === 0;
      return s[state] > 0;
    });
    for (const p of s.by_priority) {
      const row = document.createElement("tr");
      for (const value of [p.priority, p.groups, p.ready, p.leased, p.parked, p.delayed]) cell(row, value);
      for (const state of shown) cell(row, p[state]);
      body.appendChild(row);
    }
    status.textContent = `updated ${new Date(s.now * 1000).toLocaleTimeString()}`;
    status.className = "";
  } catch (e) {
    status.textContent = `stats failed: ${e.message}`;
    status.className = "error";
  }
}

// The pauses in force ({kind, name}: kind "queue", "group" or "routing_key", name "" for the
// queue), as last read: the groups' buttons pause or resume by them.
let pausesInForce = [];

function isPaused(kind, name) {
  return pausesInForce.some((p) => p.kind === kind && p.name === name);
}

// What a pause or resume names, for the notices.
function pauseTarget(kind, name) {
  if (kind === "queue") return "the queue";
  return `${kind === "group" ? "group" : "routing key"} ${name}`;
}

// The body of /api/pause and /api/resume for a target.
function pauseBody(kind, name) {
  return kind === "queue" ? { queue: true } : { [kind]: name };
}

function pause(kind, name) {
  return change("/api/pause", pauseBody(kind, name), (a) =>
    a.paused ? `paused ${pauseTarget(a.kind, a.name)}` : `${pauseTarget(a.kind, a.name)} was already paused`);
}

function resume(kind, name) {
  return change("/api/resume", pauseBody(kind, name), (a) =>
    a.resumed
      ? `resumed ${pauseTarget(a.kind, a.name)}`
      : `${pauseTarget(a.kind, a.name)}: no such pause, nothing changed`);
}

async function loadPauses() {
  try {
    const page = await look("/api/pauses");
    pausesInForce = page.pauses;
    const table = document.querySelector("#pauses table");
    const body = table.querySelector("tbody");
    body.replaceChildren();
    for (const p of page.pauses) {
      const row = document.createElement("tr");
      row.dataset.kind = p.kind;
      cell(row, p.kind);
      cell(row, p.kind === "queue" ? "(every group)" : p.name);
      cell(row, new Date(p.paused_at * 1000).toLocaleString());
      const actions = cell(row, "", "actions");
      button(actions, "resume", () => resume(p.kind, p.name));
      body.appendChild(row);
    }
    table.hidden = page.pauses.length === 0;
    $("pauses-none").hidden = page.pauses.length > 0;
  } catch (e) {
    show(`pauses: ${e.message}`, true);
  }
}

// A bucket's tokens as the table shows them: at most two decimals ("3", "0.25").
function amount(n) {
  return n === null || n === undefined ? "-" : String(Number(n.toFixed(2)));
}

// A limit as the notices say it: its concurrency and its rate, each or "none".
function limitText(l) {
  const concurrency = l.concurrency === null ? "no concurrency limit" : `concurrency ${l.concurrency}`;
  const rate = l.rate === null ? "no rate limit" : `rate ${l.rate}/s (burst ${l.burst})`;
  return `${concurrency}, ${rate}`;
}

// The body of /api/limits/set: the key, and each kind the form was given.
function setLimit(body) {
  return change("/api/limits/set", body, (a) => `limited routing key ${a.routing_key}: ${limitText(a)}`);
}

function removeLimit(key) {
  return change("/api/limits/remove", { routing_key: key }, (a) =>
    `removed the limits of routing key ${a.routing_key}: its held groups are served again`);
}

// The limits in force, each key's use against its limit: leases in use of its concurrency,
// tokens of its burst, its held groups. Read again with the stats.
async function loadLimits() {
  try {
    const page = await look("/api/limits");
    const table = document.querySelector("#limits table");
    const body = table.querySelector("tbody");
    body.replaceChildren();
    for (const l of page.limits) {
      const row = document.createElement("tr");
      row.dataset.key = l.routing_key;
      cell(row, l.routing_key, "key");
      cell(row, l.concurrency === null ? null : `${l.in_use} / ${l.concurrency}`, "number in-use");
      cell(row, l.rate === null ? null : `${l.rate}/s`, "number rate");
      cell(row, l.rate === null ? null : `${amount(l.tokens)} / ${l.burst}`, "number tokens");
      cell(row, l.held, "number held");
      const actions = cell(row, "", "actions");
      button(actions, "edit", () => {
        $("limit-key").value = l.routing_key;
        $("limit-concurrency").value = l.concurrency === null ? "" : String(l.concurrency);
        $("limit-rate").value = l.rate === null ? "" : String(l.rate);
        $("limit-burst").value = l.burst === null ? "" : String(l.burst);
      }, "edit-limit");
      button(actions, "remove", () => removeLimit(l.routing_key), "remove-limit");
      body.appendChild(row);
    }
    table.hidden = page.limits.length === 0;
    $("limits-none").hidden = page.limits.length > 0;
  } catch (e) {
    show(`limits: ${e.message}`, true);
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
      for (const value of [g.state, g.depth, seconds(g.head_age), g.holder, g.priority, g.routing_key]) {
        cell(row, value);
      }
      const actions = cell(row, "", "actions");
      // Only a head with a lease, park or delay has something to release; a ready, held or
      // retrying head is free (a paused one shows its lease's end while it lasts).
      if (g.lock_expiry !== null) {
        button(actions, "release", () =>
          change("/api/release", { group: g.group_id }, (a) =>
            a.released ? `released ${a.group_id}` : `${a.group_id}: nothing to release`));
      }
      if (isPaused("group", g.group_id)) {
        button(actions, "resume", () => resume("group", g.group_id), "resume-group");
      } else {
        button(actions, "pause", () => pause("group", g.group_id), "pause-group");
      }
      if (g.routing_key !== null) {
        if (isPaused("routing_key", g.routing_key)) {
          button(actions, "resume key", () => resume("routing_key", g.routing_key), "resume-key");
        } else {
          button(actions, "pause key", () => pause("routing_key", g.routing_key), "pause-key");
        }
      }
      body.appendChild(row);
    }
  },
);

// A message's retry backoff (the one its last claim drew under a retry policy: its nack
// without a delay, or its lapsed lease, waits it): "retry in 6.0 s"; "-" when none.
function retryIn(seconds) {
  return seconds === null || seconds === undefined ? null : `retry in ${seconds.toFixed(1)} s`;
}

let shownGroup = null;
const messages = pager(
  "messages",
  (cursor) => look("/api/peek", { group: shownGroup, cursor, limit: PAGE }),
  (page, body) => {
    for (const m of page.messages) {
      const row = document.createElement("tr");
      for (const value of [m.seq, m.attempts, m.locked_by]) cell(row, value);
      cell(row, retryIn(m.retry_delay), "retry");
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

// An instant of the archive, in the browser's time zone; "-" when unknown (a writer that
// stamps no publish time, a claim made before the archive's column).
function when(epoch) {
  return epoch === null || epoch === undefined ? "-" : new Date(epoch * 1000).toLocaleString();
}

// The archive (acked messages, in seq order), every group's or the history of the group
// the filter last asked for ("": every group's): a look only, nothing to change.
let archiveGroup = "";
const archive = pager(
  "archive",
  (cursor) => look("/api/archive", { group: archiveGroup, cursor, limit: PAGE }),
  (page, body) => {
    for (const a of page.archived) {
      const row = document.createElement("tr");
      row.dataset.seq = String(a.seq);
      for (const value of [a.seq, a.group_id, a.attempts, a.worker_id]) cell(row, value);
      for (const at of [a.published_at, a.claimed_at, a.acked_at]) cell(row, when(at), "time");
      headersCell(row, a.headers);
      cell(row, a.event, "event");
      body.appendChild(row);
    }
    $("archive-none").hidden = page.archived.length > 0;
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
  $("pause-kind").addEventListener("change", () => {
    const kind = $("pause-kind").value;
    $("pause-name").disabled = kind === "queue";
    $("pause-name").placeholder = { group: "group id", routing_key: "routing key", queue: "" }[kind];
  });
  $("pause-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const kind = $("pause-kind").value;
    const name = $("pause-name").value;
    if (kind !== "queue" && name === "") {
      show(`pause: a ${kind === "group" ? "group id" : "routing key"} is needed`, true);
      return;
    }
    pause(kind, name);
  });
  $("limit-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("limit-key").value;
    if (key === "") {
      show("limit: a routing key is needed", true);
      return;
    }
    // The kinds given (a field left empty is off); the server checks the numbers.
    const body = { routing_key: key };
    for (const kind of ["concurrency", "rate", "burst"]) {
      const value = $(`limit-${kind}`).value.trim();
      if (value !== "") body[kind] = Number(value);
    }
    setLimit(body);
  });
  $("groups-first").addEventListener("click", () => groups.first());
  $("dead-first").addEventListener("click", () => dead.first());
  $("archive-form").addEventListener("submit", (event) => {
    event.preventDefault();
    archiveGroup = $("archive-group").value;
    archive.first();
  });
  $("archive-first").addEventListener("click", () => archive.first());
  refreshStats();
  loadLimits();
  loadPauses().then(() => groups.load());
  dead.load();
  archive.load();
  setInterval(() => {
    refreshStats();
    loadLimits();
  }, REFRESH_MS);
}

start();
