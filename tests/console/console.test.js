// The console of `harel-transport serve` in a real browser: headless Chromium (the system's,
// CHROMIUM, never a downloaded one) through puppeteer-core, against a live queue built to
// known counts by the example `console_queue` (HAREL_FIXTURE) and served by the CLI
// (HAREL_BIN). The queue is read here only through the CLI (`stats --json`, `dead list
// --json`), never through another SQLite in this process. With SCREENSHOT set, the console
// is saved there as a PNG (docs/console.png).
"use strict";

const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const { execFileSync, spawn } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const readline = require("node:readline");
const puppeteer = require("puppeteer-core");

const BIN = process.env.HAREL_BIN;
const FIXTURE = process.env.HAREL_FIXTURE;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const TOKEN = "console-test-token";
// What tests/console_queue puts in the queue as data that must stay text.
const SCRIPT_EVENT = '{"html":"<script>window.__xss=1;alert(1)</script>"}';
const MARKUP_GROUP = '<img src=x onerror="window.__xss=1">';
// The dead letter's headers, in order: a value with a <script>, a name and a value of markup.
const POISON_HEADERS = [
  ["traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"],
  ["x-note", "<script>window.__xss=2;alert(2)</script>"],
  ["<b>bold</b>", "<i onmouseover=alert(3)>x</i>"],
];

// The archived group's two messages (acked by ARCHIVE_WORKER, the first after a nack), in
// order, and the first one's headers.
const ARCHIVED_EVENTS = ['{"done":"<script>window.__xss=3;alert(4)</script>"}', '{"done":2}'];
const ARCHIVED_HEADERS = [
  ["traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
  ["x-html", "<u>under</u>"],
];
const ARCHIVE_WORKER = "worker-archive";

let dir, queue, serve, serveErr = "", address, browser, page, deadSeq;
const dialogs = [];

function cli(...args) {
  return JSON.parse(execFileSync(BIN, ["-d", queue, ...args, "--json"], { encoding: "utf8" }));
}

before(async () => {
  assert.ok(BIN && FIXTURE, "HAREL_BIN and HAREL_FIXTURE name the CLI and the example console_queue");
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "harel-console-"));
  queue = path.join(dir, "queue.db");
  deadSeq = Number(execFileSync(FIXTURE, [queue], { encoding: "utf8" }).trim());
  const env = { ...process.env, HAREL_ADMIN_TOKEN: TOKEN };
  serve = spawn(BIN, ["-d", queue, "serve", "--listen", "127.0.0.1:0"], { env, stdio: ["ignore", "pipe", "pipe"] });
  serve.stderr.on("data", (chunk) => { serveErr += chunk; });
  const first = await new Promise((resolve, reject) => {
    readline.createInterface({ input: serve.stdout }).once("line", resolve);
    serve.once("exit", (code) => reject(new Error(`serve exited ${code}: ${serveErr}`)));
  });
  address = first.replace("listening on ", "");
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.on("dialog", async (dialog) => { dialogs.push(dialog.message()); await dialog.dismiss(); });
  await page.goto(`${address}/`);
});

after(async () => {
  if (browser) await browser.close();
  if (serve) serve.kill();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const text = (selector) => page.$eval(selector, (e) => e.textContent);
// The [name, value] pairs a headers cell shows, each read from its own text.
const shownHeaders = (selector) => page.$eval(selector, (td) =>
  [...td.querySelectorAll(".header")].map((h) =>
    [h.querySelector(".header-name").textContent, h.querySelector(".header-value").textContent]));
const deadRows = () => page.$$eval("#dead tbody tr", (rows) => rows.map((r) => r.dataset.seq));

// Waits until the page's stats show what the library counts, then checks every figure.
async function statsMatchTheLibrary() {
  const s = cli("stats");
  await page.waitForFunction(
    (m, d) => document.getElementById("stat-messages").textContent === m && document.getElementById("stat-dead").textContent === d,
    { timeout: 10000 }, String(s.messages), String(s.dead));
  for (const key of ["messages", "groups", "ready", "leased", "parked", "delayed", "dead", "expired"]) {
    assert.equal(await text(`#stat-${key}`), String(s[key]), key);
  }
  const levels = await page.$$eval("#priorities tbody tr", (rows) =>
    rows.map((r) => [...r.cells].map((c) => Number(c.textContent))));
  assert.deepEqual(levels, s.by_priority.map((p) => [p.priority, p.groups, p.ready, p.leased, p.parked, p.delayed]));
  return s;
}

test("the numbers shown are the library's", async () => {
  const s = await statsMatchTheLibrary();
  assert.deepEqual([s.messages, s.dead, s.groups, s.delayed], [8, 1, 6, 1], "the queue console_queue builds");
});

test("group ids, events and headers are shown as text, never run", async (t) => {
  await page.waitForSelector("#groups tbody tr");
  const groups = await page.$$eval("#groups tbody button.link", (bs) => bs.map((b) => b.textContent));
  assert.ok(groups.includes(MARKUP_GROUP), `the group id as written: ${groups}`);
  await page.waitForSelector("#dead tbody tr");
  assert.equal(await text("#dead tbody td.event"), SCRIPT_EVENT);
  assert.deepEqual(await shownHeaders("#dead tbody td.headers"), POISON_HEADERS, "the headers, in order, as text");
  assert.equal(await text("#dead tbody td.headers"), POISON_HEADERS.map(([n, v]) => `${n}=${v}`).join(""));
  assert.equal(await page.$("main img, main script, main b, main i"), null, "no element came from the data");
  assert.equal(await page.evaluate(() => window.__xss), undefined, "no script of the data ran");
  assert.deepEqual(dialogs, []);
  if (process.env.SCREENSHOT) {
    await page.screenshot({ path: process.env.SCREENSHOT, fullPage: true });
    t.diagnostic(`screenshot: ${process.env.SCREENSHOT}`);
  }
});

test("a redrive without the token fails and changes nothing", async () => {
  await page.click(`#dead tbody tr[data-seq="${deadSeq}"] button`);
  await page.waitForFunction(() => document.getElementById("notice").className === "error");
  assert.match(await text("#notice"), /needs the admin token/);
  assert.deepEqual(await deadRows(), [String(deadSeq)]);
  assert.equal(cli("dead", "list").dead_letters.length, 1);
});

test("with the token the dead letter goes back into its group", async () => {
  await page.type("#token", TOKEN);
  await page.click("#token-form button[type=submit]");
  await page.click(`#dead tbody tr[data-seq="${deadSeq}"] button`);
  await page.waitForFunction(() => /redrove 1/.test(document.getElementById("notice").textContent));
  assert.deepEqual(await deadRows(), []);
  assert.equal(cli("dead", "list").dead_letters.length, 0);
  const peek = cli("peek", "poison");
  assert.deepEqual(peek.messages.map((m) => m.event), [SCRIPT_EVENT]);
  const s = await statsMatchTheLibrary();
  assert.deepEqual([s.messages, s.dead], [9, 0]);

  // The group's messages, opened from its row: the event is still text.
  // The ready groups only, then the poison group's button, found and clicked in one step
  // (a refresh may replace the rows between two).
  await page.select("#group-state", "ready");
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll("#groups tbody tr")];
    return rows.every((r) => r.cells[1].textContent === "ready") && rows.some((r) => r.cells[0].textContent === "poison");
  });
  await page.$$eval("#groups tbody button.link", (bs) => bs.find((b) => b.textContent === "poison").click());
  await page.waitForFunction(() => document.querySelector("#messages td.event"));
  assert.equal(await text("#messages td.event"), SCRIPT_EVENT);
  assert.deepEqual(await shownHeaders("#messages td.headers"), POISON_HEADERS, "kept by the redrive, shown as text");
  assert.equal(await text("#messages td.retry"), "-", "no retry policy: no backoff");
  assert.equal(await page.$("main img, main script, main b, main i"), null);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.deepEqual(dialogs, []);
});

// The archive's rows as shown: each row's cells' text, and its seq.
const archiveRows = () => page.$$eval("#archive tbody tr", (rows) =>
  rows.map((r) => ({ seq: r.dataset.seq, cells: [...r.cells].map((c) => c.textContent) })));

test("the archive shows the acked messages, as text, by group", async () => {
  const library = cli("archive").archived;
  assert.deepEqual(library.map((a) => a.event), ARCHIVED_EVENTS, "the queue console_queue builds");
  await page.waitForFunction((n) => document.querySelectorAll("#archive tbody tr").length === n, {}, library.length);
  const rows = await archiveRows();
  assert.deepEqual(rows.map((r) => r.seq), library.map((a) => String(a.seq)), "in seq order");
  for (const [i, row] of rows.entries()) {
    const a = library[i];
    // seq, group, attempts, worker, published, claimed, acked, headers, event
    assert.deepEqual(row.cells.slice(0, 4), [String(a.seq), "archived", String(a.attempts), ARCHIVE_WORKER]);
    // The three times, as the browser writes them in its own locale and time zone.
    const times = await page.evaluate((ats) => ats.map((at) => new Date(at * 1000).toLocaleString()),
      [a.published_at, a.claimed_at, a.acked_at]);
    assert.deepEqual(row.cells.slice(4, 7), times, `published, claimed, acked of ${a.seq}`);
    assert.equal(row.cells[8], ARCHIVED_EVENTS[i]);
  }
  assert.deepEqual(library.map((a) => a.attempts), [2, 1]);
  assert.deepEqual(await shownHeaders("#archive tbody tr:first-child td.headers"), ARCHIVED_HEADERS, "as text");
  assert.equal(await text("#archive tbody tr:last-child td.headers"), "-");
  assert.equal(await page.$eval("#archive-none", (e) => e.hidden), true);
  assert.equal(await page.$eval("#archive-next", (b) => b.disabled), true, "one page");
  assert.equal(await page.$("main img, main script, main b, main i, main u"), null, "no element came from the data");
  assert.equal(await page.evaluate(() => window.__xss), undefined, "no script of the data ran");

  // The group filter: another group has nothing archived; the archived group its history.
  const filter = async (group) => {
    await page.$eval("#archive-group", (input, g) => { input.value = g; }, group);
    await page.click("#archive-form button[type=submit]");
  };
  await filter("ready-a");
  await page.waitForFunction(() => !document.getElementById("archive-none").hidden);
  assert.deepEqual(await archiveRows(), []);
  assert.match(await text("#archive-none"), /nothing archived/);
  await filter("archived");
  await page.waitForFunction(() => document.querySelectorAll("#archive tbody tr").length === 2);
  assert.deepEqual((await archiveRows()).map((r) => r.cells[8]), ARCHIVED_EVENTS, "its history, in order");
  assert.equal(await page.$eval("#archive-none", (e) => e.hidden), true);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.deepEqual(dialogs, []);
});

// The limits' rows as shown: each key and its cells (key, in use / concurrency, rate,
// tokens / burst, held).
const limitRows = () => page.$$eval("#limits tbody tr", (rows) =>
  rows.map((r) => [...r.cells].slice(0, 5).map((c) => c.textContent)));
const waitForLimits = (keys) => page.waitForFunction((want) =>
  JSON.stringify([...document.querySelectorAll("#limits tbody tr")].map((r) => r.dataset.key)) === want,
{ timeout: 10000 }, JSON.stringify(keys));
// The limit form, filled as a person would (an empty field is a kind left off), then sent.
async function setLimitInPage(fields) {
  for (const kind of ["key", "concurrency", "rate", "burst"]) {
    await page.$eval(`#limit-${kind}`, (input, v) => { input.value = v; }, String(fields[kind] ?? ""));
  }
  await page.click("#limit-form button[type=submit]");
}
// A row's button, found and clicked in one step (a refresh may replace the rows between two).
const clickLimitButton = (key, className) => page.$$eval(`#limits tbody button.${className}`, (bs, k) =>
  bs.find((b) => b.closest("tr").dataset.key === k).click(), key);
const noticeSays = (pattern) => page.waitForFunction((p) =>
  new RegExp(p).test(document.getElementById("notice").textContent), { timeout: 10000 }, pattern);

test("the limits show each key's use against its limit, set and removed from the page", async () => {
  // console_queue's: "leased" at most 1 at once, its lease using it; "delayed" 2 a second,
  // burst 5, its bucket full.
  const library = cli("limit", "list").limits;
  assert.deepEqual(library.map((l) => [l.routing_key, l.concurrency, l.in_use, l.rate, l.burst, l.tokens, l.held]),
    [["delayed", null, 0, 2, 5, 5, 0], ["leased", 1, 1, null, null, null, 0]]);
  await waitForLimits(["delayed", "leased"]);
  assert.deepEqual(await limitRows(), [["delayed", "-", "2/s", "5 / 5", "0"], ["leased", "1 / 1", "-", "-", "0"]]);
  assert.equal(await page.$eval("#limits-none", (e) => e.hidden), true);

  // Set from the form (the token is in the tab since the redrive): a new key, both kinds.
  await setLimitInPage({ key: "a", concurrency: 2, rate: 0.5, burst: 4 });
  await noticeSays("limited routing key a: concurrency 2, rate 0.5/s \\(burst 4\\)");
  assert.equal(await page.$eval("#notice", (e) => e.className), "");
  await waitForLimits(["a", "delayed", "leased"]);
  assert.deepEqual((await limitRows())[0], ["a", "0 / 2", "0.5/s", "4 / 4", "0"]);
  const a = cli("limit", "list").limits[0];
  assert.deepEqual([a.routing_key, a.concurrency, a.rate, a.burst, a.tokens], ["a", 2, 0.5, 4, 4]);

  // Edit fills the form with a key's limits; set anew, it replaces them.
  await clickLimitButton("leased", "edit-limit");
  const form = await page.$$eval("#limit-form input", (inputs) => inputs.map((i) => i.value));
  assert.deepEqual(form, ["leased", "1", "", ""]);
  await page.$eval("#limit-concurrency", (input) => { input.value = "3"; });
  await page.click("#limit-form button[type=submit]");
  await noticeSays("limited routing key leased: concurrency 3, no rate limit");
  await page.waitForFunction(() =>
    document.querySelector('#limits tbody tr[data-key="leased"]')?.cells[1].textContent === "1 / 3");
  assert.equal(cli("limit", "list").limits.find((l) => l.routing_key === "leased").concurrency, 3);

  // Bad input: the library's refusal, shown; nothing changed.
  await setLimitInPage({ key: "a", concurrency: 0 });
  await page.waitForFunction(() => document.getElementById("notice").className === "error");
  assert.match(await text("#notice"), /concurrency is 0; it must be 1\.\.1000000/);
  await setLimitInPage({ key: "a", rate: 1 });
  await noticeSays("rate and burst go together");
  assert.equal(cli("limit", "list").limits[0].concurrency, 2, "unchanged");

  // A key of markup is shown as text.
  await setLimitInPage({ key: "<i>key</i>", concurrency: 1 });
  await waitForLimits(["<i>key</i>", "a", "delayed", "leased"]);
  assert.equal(await page.$("main img, main script, main b, main i, main u"), null, "no element came from the data");

  // Removed: the rows go; the library has the fixture's two again.
  await clickLimitButton("<i>key</i>", "remove-limit");
  await noticeSays("removed the limits of routing key <i>key</i>");
  await clickLimitButton("a", "remove-limit");
  await noticeSays("removed the limits of routing key a: its held groups are served again");
  await waitForLimits(["delayed", "leased"]);
  assert.deepEqual(cli("limit", "list").limits.map((l) => l.routing_key), ["delayed", "leased"]);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.deepEqual(dialogs, []);
});

test("each change left an audit line, without the token", () => {
  const audit = serveErr.split("\n").filter((l) => l.includes(": audit "));
  assert.equal(audit.length, 2 + 7, serveErr);
  assert.match(audit[0], /action=redrive target="-" result="401 /);
  assert.match(audit[1], new RegExp(`action=redrive target="seqs \\[${deadSeq}\\]" result="200 `));
  const limits = [
    /action=set-limit target="routing_key a" result="200 /,
    /action=set-limit target="routing_key leased" result="200 /,
    /action=set-limit target="routing_key a" result="400 .*concurrency is 0/,
    /action=set-limit target="routing_key a" result="400 .*rate and burst go together/,
    /action=set-limit target="routing_key <i>key<\/i>" result="200 /,
    /action=remove-limit target="routing_key <i>key<\/i>" result="200 /,
    /action=remove-limit target="routing_key a" result="200 /,
  ];
  limits.forEach((pattern, i) => assert.match(audit[2 + i], pattern));
  assert.ok(!serveErr.includes(TOKEN));
});
