'use strict';
// The poll addon (src/poll.c, lib/poll.js) on its own, on a FIFO: readability and its
// callback (promise jobs run right after it), stop/start, close (final; a second close does
// nothing), ref/unref (an unref'd watch does not keep the process alive), a libuv error
// delivered as a negative status, an exception thrown by the callback, a worker thread
// that ends with a watch open, its argument errors, and the loading rules (an unloadable
// HAREL_TRANSPORT_POLL fails waiting claims, and only them, with HAREL_ERR_LOAD).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { test } = require('node:test');
const poll = require('../lib/poll');
const { scratch } = require('./helpers');

const box = scratch();
const PACKAGE = path.resolve(__dirname, '..');
const { O_RDONLY, O_WRONLY, O_NONBLOCK } = fs.constants;

/** A FIFO's two ends, non-blocking: { read, write, close() }. */
function fifo() {
  const file = path.join(box.dir, `fifo-${Math.random().toString(36).slice(2)}`);
  execFileSync('mkfifo', [file]);
  const read = fs.openSync(file, O_RDONLY | O_NONBLOCK);
  const write = fs.openSync(file, O_WRONLY | O_NONBLOCK);
  return {
    read,
    write,
    close() {
      for (const fd of [this.read, this.write]) {
        try {
          fs.closeSync(fd);
        } catch {
          // closed by the test
        }
      }
    },
  };
}

/** Runs `code` in a fresh node; its exit status, stdout and stderr. */
function node(code, { env = {}, timeout = 10_000 } = {}) {
  const r = spawnSync(process.execPath, ['-e', code], { env: { ...process.env, ...env }, encoding: 'utf8', timeout });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

test('a watch calls back while its descriptor is readable and started; promise jobs run right after', async () => {
  const { watch } = poll.load();
  const f = fifo();
  const calls = [];
  let handle;
  const fired = new Promise((resolve) => {
    handle = watch(f.read, (status) => {
      calls.push(`callback ${status}`);
      Promise.resolve().then(() => calls.push('promise job'));
      process.nextTick(() => calls.push('tick'));
      handle.stop(); // level-triggered: it would call back on every turn while readable
      setImmediate(resolve);
    });
  });
  handle.start();
  await sleep(50);
  assert.deepEqual(calls, [], 'nothing while the FIFO is empty');
  fs.writeSync(f.write, 'x');
  await fired;
  assert.deepEqual(calls, ['callback 0', 'tick', 'promise job']);
  await sleep(50);
  assert.equal(calls.length, 3, 'stopped: no more calls, though still readable');
  handle.start(); // readable still: calls back again
  await new Promise((resolve) => setImmediate(resolve));
  await sleep(20);
  assert.equal(calls.filter((c) => c.startsWith('callback')).length, 2);
  handle.close();
  handle.close(); // a second close does nothing
  for (const method of ['start', 'stop', 'ref', 'unref']) {
    assert.throws(() => handle[method](), { code: 'ERR_WATCH_CLOSED', message: 'the watch handle is closed' }, method);
  }
  // closed: the descriptor left the loop's poll set at once, so closing it now is safe
  f.close();
});

test("the addon's argument errors", () => {
  const { watch } = poll.load();
  assert.throws(() => watch(), { code: 'ERR_INVALID_ARG_TYPE', message: /two arguments/ });
  assert.throws(() => watch(0), { code: 'ERR_INVALID_ARG_TYPE', message: /two arguments/ });
  assert.throws(() => watch(-1, () => {}), { code: 'ERR_INVALID_ARG_TYPE', message: /fd must be a descriptor/ });
  assert.throws(() => watch('3', () => {}), { code: 'ERR_INVALID_ARG_TYPE', message: /fd must be a descriptor/ });
  assert.throws(() => watch(0, 'f'), { code: 'ERR_INVALID_ARG_TYPE', message: /callback must be a function/ });
  // epoll refuses a regular file: uv_poll_init's error, with its name as the code
  const file = fs.openSync(__filename, 'r');
  try {
    assert.throws(() => watch(file, () => {}), { code: 'EPERM', message: /^uv_poll_init: operation not permitted/ });
  } finally {
    fs.closeSync(file);
  }
  const f = fifo();
  const handle = watch(f.read, () => {});
  assert.throws(() => handle.start.call({}), { code: 'ERR_INVALID_THIS' });
  assert.throws(() => handle.close.call({}), { code: 'ERR_INVALID_THIS' });
  handle.close();
  f.close();
});

test('a libuv error reaches the callback as a negative status', async () => {
  const { watch } = poll.load();
  const f = fifo();
  const statuses = [];
  // The write end of a FIFO whose read end is closed: epoll reports EPOLLERR, which libuv
  // hands over as UV_EBADF (and stops the handle).
  fs.closeSync(f.read);
  const handle = watch(f.write, (status) => statuses.push(status));
  handle.start();
  await sleep(50);
  handle.close();
  f.close();
  assert.ok(statuses.length >= 1 && statuses[0] < 0, `statuses ${statuses}`);
});

test('ref and unref: an active watch keeps the process alive unless unref()ed', () => {
  const script = (unref) => `
    const fs = require('node:fs');
    const { watch } = require(${JSON.stringify(path.join(PACKAGE, 'lib', 'poll.js'))}).load();
    const fd = fs.openSync(${JSON.stringify(path.join(box.dir, 'keep-fifo'))}, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    const handle = watch(fd, () => {});
    handle.start();
    handle.unref();
    ${unref ? '' : 'handle.ref();'}
    setTimeout(() => console.log('alive'), 300).unref();
  `;
  execFileSync('mkfifo', [path.join(box.dir, 'keep-fifo')]);
  const unrefd = node(script(true));
  assert.equal(unrefd.status, 0, unrefd.stderr);
  assert.equal(unrefd.stdout, '', "unref'd: the process ended at once");
  const refd = node(script(false), { timeout: 1500 });
  assert.equal(refd.signal, 'SIGTERM', 'ref: still running when killed');
  assert.equal(refd.stdout, 'alive\n');
});

test('an exception thrown by the callback is an uncaught exception of the process', () => {
  const r = node(`
    const fs = require('node:fs');
    const { execFileSync } = require('node:child_process');
    const { watch } = require(${JSON.stringify(path.join(PACKAGE, 'lib', 'poll.js'))}).load();
    const file = ${JSON.stringify(path.join(box.dir, 'throw-fifo'))};
    execFileSync('mkfifo', [file]);
    const r = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    const w = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    process.on('uncaughtException', (e) => { console.log('caught ' + e.message); process.exit(3); });
    const handle = watch(r, () => { throw new Error('from the callback'); });
    handle.start();
    fs.writeSync(w, 'x');
  `);
  assert.equal(r.status, 3, r.stderr);
  assert.equal(r.stdout, 'caught from the callback\n');
});

test('a worker thread that ends with a watch started leaves the process sound', () => {
  const r = node(`
    const { Worker } = require('node:worker_threads');
    const code = \`
      const fs = require('node:fs');
      const { execFileSync } = require('node:child_process');
      const { watch } = require(${JSON.stringify(path.join(PACKAGE, 'lib', 'poll.js'))}).load();
      const file = ${JSON.stringify(path.join(box.dir, 'worker-fifo'))};
      execFileSync('mkfifo', [file]);
      const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
      watch(fd, () => {}).start();
      require('node:worker_threads').parentPort.postMessage('watching');
    \`;
    const worker = new Worker(code, { eval: true });
    worker.once('message', async () => {
      console.log('exit ' + (await worker.terminate()));
      setTimeout(() => console.log('main goes on'), 50);
    });
  `);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'exit 1\nmain goes on\n');
});

test('HAREL_TRANSPORT_POLL: a path that does not load fails waiting claims with HAREL_ERR_LOAD, and only them', () => {
  const r = node(
    `
    const { Transport } = require(${JSON.stringify(PACKAGE)});
    (async () => {
      const t = await Transport.open(':memory:');
      await t.publish('g', {});
      const out = { plain: (await t.claim('w')).groupId };
      out.look = await t.claimMany('w', { max: 1, wait: 0, signal: new AbortController().signal }); // wait 0: no watch
      try {
        await t.claim('w', { wait: 1 });
      } catch (e) {
        out.code = e.code;
        out.message = e.message;
      }
      await t.close();
      console.log(JSON.stringify(out));
    })();
  `,
    { env: { HAREL_TRANSPORT_POLL: path.join(box.dir, 'missing.node') } },
  );
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual([out.plain, out.look, out.code], ['g', [], 'HAREL_ERR_LOAD']);
  assert.match(out.message, /harel_transport_poll\.node, which waiting claims need, could not be loaded .*missing\.node: /);
});

test('the addon is found in the repository build unless HAREL_TRANSPORT_POLL is set', () => {
  const saved = process.env.HAREL_TRANSPORT_POLL;
  try {
    delete process.env.HAREL_TRANSPORT_POLL;
    assert.equal(poll.addonCandidates().at(-1), path.join(PACKAGE, '..', '..', 'build', 'node', 'harel_transport_poll.node'));
    process.env.HAREL_TRANSPORT_POLL = '/elsewhere/p.node';
    assert.deepEqual(poll.addonCandidates(), ['/elsewhere/p.node']);
  } finally {
    if (saved === undefined) delete process.env.HAREL_TRANSPORT_POLL;
    else process.env.HAREL_TRANSPORT_POLL = saved;
  }
});
