'use strict';
// Finding the library (HAREL_TRANSPORT_LIB, the repository's build, the installed one) and
// loading the package as CommonJS and as an ES module.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { test } = require('node:test');
const { ROOT, scratch } = require('./helpers');

const run = promisify(execFile);
const PACKAGE = path.resolve(__dirname, '..');
const box = scratch();
const REPO_BUILD = path.join(ROOT, 'target', 'release', 'libharel_transport.so');

/** Runs a CommonJS snippet in a fresh node with `env` added; resolves its stdout as JSON. */
async function probe(code, env = {}) {
  const { stdout } = await run(process.execPath, ['-e', code], { cwd: PACKAGE, env: { ...process.env, ...env } });
  return JSON.parse(stdout);
}

const INFO = `
const harel = require('harel-transport');
harel.Transport.open(':memory:').then(
  async (t) => { await t.close(); console.log(JSON.stringify(harel.libraryInfo())); },
  (e) => console.log(JSON.stringify({ error: e.code, message: e.message, isHarel: e instanceof harel.HarelError })),
);`;

test('without HAREL_TRANSPORT_LIB the repository build is used', async () => {
  const env = { HAREL_TRANSPORT_LIB: '' };
  const info = await probe(INFO, env);
  assert.equal(info.path, REPO_BUILD);
  assert.match(info.version, /^\d+\.\d+\.\d+$/);
});

test('HAREL_TRANSPORT_LIB names the library file', async () => {
  const info = await probe(INFO, { HAREL_TRANSPORT_LIB: REPO_BUILD });
  assert.equal(info.path, REPO_BUILD);
});

test('a HAREL_TRANSPORT_LIB that does not load is an error (no silent fallback), at first use', async () => {
  const missing = path.join(PACKAGE, 'no-such-dir', 'libharel_transport.so');
  const result = await probe(INFO, { HAREL_TRANSPORT_LIB: missing });
  assert.equal(result.error, 'HAREL_ERR_LOAD');
  assert.equal(result.isHarel, true);
  assert.ok(result.message.includes(missing), result.message);
  assert.match(result.message, /HAREL_TRANSPORT_LIB/);
});

test('without the repository build, the installed soname libharel_transport.so.1 is loaded by the dynamic loader', async () => {
  // The package alone, away from the repository (no target/release two directories up);
  // koffi from this package's node_modules; the loader's path has `make lib`'s soname link.
  const copy = path.join(box.dir, 'a', 'b', 'harel-transport');
  fs.mkdirSync(copy, { recursive: true });
  for (const file of ['index.js', 'package.json']) fs.copyFileSync(path.join(PACKAGE, file), path.join(copy, file));
  fs.cpSync(path.join(PACKAGE, 'lib'), path.join(copy, 'lib'), { recursive: true });
  const code = INFO.replace("require('harel-transport')", `require(${JSON.stringify(copy)})`);
  const info = await probe(code, {
    HAREL_TRANSPORT_LIB: '',
    NODE_PATH: path.join(PACKAGE, 'node_modules'),
    LD_LIBRARY_PATH: path.dirname(REPO_BUILD),
  });
  assert.equal(info.path, 'libharel_transport.so.1', JSON.stringify(info));
  assert.match(info.version, /^\d+\.\d+\.\d+$/);
});

test('the package loads as an ES module with named exports', async () => {
  const code = `
    import { Transport, HarelError, version } from 'harel-transport';
    const t = await Transport.open(':memory:');
    await t.publish('g', { kind: 'esm' });
    const lease = await t.claim('w');
    await t.ack(lease);
    await t.close();
    const e = await t.claim('w').catch((e) => e);
    console.log(JSON.stringify({ kind: lease.event.kind, closed: e instanceof HarelError && e.code, version: version() }));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], { cwd: PACKAGE });
  const out = JSON.parse(stdout);
  assert.deepEqual([out.kind, out.closed], ['esm', 'HAREL_ERR_CLOSED']);
  assert.match(out.version, /^\d+\.\d+\.\d+$/);
});

test("the README's first example runs as written", async () => {
  const readme = fs.readFileSync(path.join(PACKAGE, 'README.md'), 'utf8');
  const example = /```js\n([\s\S]*?)```/.exec(readme)[1];
  assert.match(example, /'queue\.db'/);
  const db = box.db();
  const code = example.replace("'queue.db'", JSON.stringify(db));
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], { cwd: PACKAGE });
  assert.equal(stdout, 'order-17 order.placed\norder-17 order.paid\n', 'in order, one batch after the other');
});
