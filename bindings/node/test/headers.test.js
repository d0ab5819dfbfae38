'use strict';
// Message headers (issue 37): every publish form takes them ([name, value] pairs), and
// every lease, peeked message and dead letter hands them back, in order and byte for byte;
// a redrive keeps them. The rules (64 pairs, 16 KiB, names of visible ASCII without '=',
// values without NUL) are the library's: each refusal rejects with HAREL_ERR_ARGUMENT, the
// queue left as it was. The binding refuses only what koffi would change (a NUL, a lone
// surrogate) and what is not a list of pairs.

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Transport } = require('..');
const { scratch, rejectsWith } = require('./helpers');

const box = scratch();

// Repeated names, '=' in values, every kind of UTF-8 (2, 3 and 4 bytes, a combining mark),
// control characters, an empty value; in this order.
const SAMPLE = Object.freeze([
  ['content-type', 'application/json'],
  ['x-eq', 'a=b==c='],
  ['x-unicode', 'é漢字🦀 e\u0301'],
  ['x-eq', 'second of the name'],
  ['empty', ''],
  ['controls', '\t\n\r\u007f\u0001'],
  ['!#$%&*+-.^_`|~', 'visible ASCII but = in a name'],
]);

/** 64 pairs: the most a message carries. */
const SIXTY_FOUR = Array.from({ length: 64 }, (_, i) => [`h${String(i).padStart(2, '0')}`, `value ${i} ü`]);

/** One header of exactly 16384 bytes of name and value (the most), in 2-byte characters. */
const SIXTEEN_KIB = [['big', 'é'.repeat(8190) + 'x']];

function utf8(pairs) {
  return pairs.map(([name, value]) => [Buffer.from(name, 'utf8').toString('hex'), Buffer.from(value, 'utf8').toString('hex')]);
}

/** Asserts `headers` are `expected` exactly: frozen pairs, the same bytes, in order. */
function sameHeaders(headers, expected, what) {
  assert.ok(Object.isFrozen(headers), `${what}: a frozen list`);
  assert.ok(headers.every((pair) => Object.isFrozen(pair) && Array.isArray(pair) && pair.length === 2), `${what}: frozen pairs`);
  assert.deepEqual(headers.map((pair) => [...pair]), expected.map((pair) => [...pair]), what);
  assert.deepEqual(utf8(headers), utf8(expected), `${what}: byte for byte`);
}

test('SIXTEEN_KIB is 16384 bytes of name and value', () => {
  const [[name, value]] = SIXTEEN_KIB;
  assert.equal(Buffer.byteLength(name) + Buffer.byteLength(value), 16384);
});

test('every publish form carries headers to the lease, in order and byte for byte', async () => {
  const t = await Transport.open(box.db());
  await t.publish('plain', { n: 1 }, { headers: SAMPLE });
  await t.publishWith('with', { n: 2 }, { headers: SIXTY_FOUR, key: 'k-with', priority: 1 });
  await t.publishMany([
    { groupId: 'many-a', event: { n: 3 }, headers: SIXTEEN_KIB },
    { groupId: 'many-b', event: { n: 4 } },
    { groupId: 'many-c', event: { n: 5 }, headers: [['only', 'one']] },
  ]);
  const outcomes = await t.publishManyWith([
    { groupId: 'mw-a', event: { n: 6 }, headers: [['a', '1'], ['b', '2']], key: 'k-mw' },
    { groupId: 'mw-b', event: { n: 7 }, headers: [] },
    { groupId: 'mw-c', event: { n: 8 }, headers: null, delay: 0 },
  ]);
  assert.deepEqual(outcomes.map((o) => o.duplicate), [false, false, false]);
  const { published } = await t.transaction(async (tx) => {
    await tx.publish('tx-a', { n: 9 }, { headers: [['tx', 'publish']] });
    await tx.publishWith('tx-b', { n: 10 }, { headers: [['tx', 'publishWith'], ['x-eq', '=']], key: 'k-tx' });
  });
  assert.equal(published.length, 2);

  const expected = {
    plain: SAMPLE,
    with: SIXTY_FOUR,
    'many-a': SIXTEEN_KIB,
    'many-b': [],
    'many-c': [['only', 'one']],
    'mw-a': [['a', '1'], ['b', '2']],
    'mw-b': [],
    'mw-c': [],
    'tx-a': [['tx', 'publish']],
    'tx-b': [['tx', 'publishWith'], ['x-eq', '=']],
  };
  // The peek of each group first, then each lease.
  for (const [group, headers] of Object.entries(expected)) {
    const [message] = (await t.peek(group)).messages;
    sameHeaders(message.headers, headers, `peek ${group}`);
  }
  const seen = {};
  for (let lease = await t.claim('w'); lease; lease = await t.ackAndClaim(lease, 'w')) {
    sameHeaders(lease.headers, expected[lease.groupId], `lease of ${lease.groupId}`);
    seen[lease.groupId] = true;
  }
  assert.deepEqual(Object.keys(seen).sort(), Object.keys(expected).sort(), 'every message claimed once');
  await t.close();
});

test('every lease-returning call hands the headers out: claim (waiting or not), claimMany (waiting or not), ackAndClaim, ackAndClaimMany', async () => {
  const t = await Transport.open(box.db());
  const headersOf = (i) => [['i', String(i)], ['x-unicode', `🦀${i}`], ['i', `=${i}=`]];
  const publishAll = async (from, n) => {
    for (let i = from; i < from + n; i++) await t.publish(`g${i}`, { i }, { headers: headersOf(i) });
  };
  const check = (lease, what) => sameHeaders(lease.headers, headersOf(lease.event.i), `${what} (message ${lease.event.i})`);

  await publishAll(0, 2);
  const claimed = await t.claim('w');
  check(claimed, 'claim');
  const waited = await t.claim('w', { wait: 5 });
  check(waited, 'claim with wait');
  await t.ackMany([claimed, waited]);

  await publishAll(2, 3);
  const many = await t.claimMany('w', { max: 3 });
  assert.equal(many.length, 3);
  for (const lease of many) check(lease, 'claimMany');
  await t.ackMany(many);

  // A waiting claimMany that the publish wakes.
  const waiting = t.claimMany('w', { max: 2, wait: 10 });
  await new Promise((resolve) => setTimeout(resolve, 50));
  await publishAll(5, 1);
  const woken = await waiting;
  assert.equal(woken.length, 1);
  check(woken[0], 'claimMany with wait');

  await publishAll(6, 1);
  const next = await t.ackAndClaim(woken[0], 'w');
  check(next, 'ackAndClaim');

  await publishAll(7, 2);
  const { acked, leases } = await t.ackAndClaimMany([next], 'w', { max: 5 });
  assert.deepEqual(acked.map((o) => o.ok), [true]);
  assert.equal(leases.length, 2);
  for (const lease of leases) check(lease, 'ackAndClaimMany');
  await t.ackMany(leases);
  await t.close();
});

test('dead letters keep the headers; a redrive brings them back with the message', async () => {
  const t = await Transport.open(box.db(), { maxAttempts: 1 });
  await t.publish('a', { n: 1 }, { headers: SAMPLE });
  await t.publish('b', { n: 2 }, { headers: SIXTY_FOUR });
  const lease = await t.claim('w');
  assert.equal(lease.groupId, 'a');
  await t.deadLetter(lease, 'a verdict');
  // b: claimed once and nacked; the next claim finds it over maxAttempts and moves it.
  const b = await t.claim('w');
  await t.nack(b);
  assert.equal(await t.claim('w'), null, 'b was moved to the dead letters by the claim');

  const { letters } = await t.deadLetters();
  assert.deepEqual(letters.map((d) => d.groupId), ['a', 'b']);
  sameHeaders(letters[0].headers, SAMPLE, 'a dead letter moved by deadLetter');
  sameHeaders(letters[1].headers, SIXTY_FOUR, 'a dead letter moved by a claim');
  sameHeaders((await t.deadLetters({ groupId: 'b' })).letters[0].headers, SIXTY_FOUR, 'one group\'s dead letters');

  assert.equal(await t.redrive({ groupId: 'a' }), 1);
  assert.equal(await t.redrive({ seqs: [letters[1].seq] }), 1);
  sameHeaders((await t.peek('a')).messages[0].headers, SAMPLE, 'peek after a redrive');
  const redriven = await t.claimMany('w', { max: 2 });
  assert.deepEqual(redriven.map((l) => l.groupId).sort(), ['a', 'b']);
  for (const l of redriven) sameHeaders(l.headers, l.groupId === 'a' ? SAMPLE : SIXTY_FOUR, `a redriven lease of ${l.groupId}`);
  await t.close();
});

test('a sharded queue carries headers through publishManyWith, leases and dead letters', async () => {
  const t = await Transport.openShards([box.db('shard'), box.db('shard'), box.db('shard')]);
  const messages = Array.from({ length: 6 }, (_, i) => ({ groupId: `g${i}`, event: { i }, headers: [['i', String(i)], ['s', 'é']] }));
  await t.publishManyWith(messages);
  await t.publishMany([{ groupId: 'h', event: { i: 6 }, headers: [['i', '6'], ['s', 'é']] }]);
  const leases = await t.claimMany('w', { max: 7 });
  assert.equal(leases.length, 7);
  for (const lease of leases) sameHeaders(lease.headers, [['i', String(lease.event.i)], ['s', 'é']], `lease ${lease.event.i}`);
  for (const lease of leases) await t.deadLetter(lease, 'r');
  const { letters } = await t.deadLetters();
  assert.equal(letters.length, 7);
  for (const d of letters) sameHeaders(d.headers, [['i', String(d.event.i)], ['s', 'é']], `dead letter ${d.event.i} on shard ${d.shard}`);
  await t.close();
});

/** What the queue holds, to compare before and after a refusal. */
async function snapshot(t) {
  const stats = await t.stats();
  return { messages: stats.messages, groups: stats.groups, published: t.metrics().published };
}

// The refusals, each header list with what its error names.
const BAD = [
  ['a name with =', [['ok', 'v'], ['a=b', 'v']], /headers\[1\]\.name .*0x3d/],
  ['an empty name', [['', 'v']], /headers\[0\]\.name/],
  ['a name with a space', [['a b', 'v']], /headers\[0\]\.name/],
  ['a name that is not ASCII', [['é', 'v']], /headers\[0\]\.name/],
  ['a name of 129 bytes', [['n'.repeat(129), 'v']], /headers\[0\]\.name/],
  ['a NUL in a value', [['a', 'b'], ['nul', 'x\0y']], /headers\[1\]\.value must not contain a NUL/],
  ['a NUL in a name', [['a\0', 'b']], /headers\[0\]\.name must not contain a NUL/],
  ['a lone surrogate', [['a', '\ud800']], /headers\[0\]\.value is not valid Unicode/],
  ['65 pairs', [...SIXTY_FOUR, ['h64', 'one too many']], /65|64/],
  ['16385 bytes', [['big', 'é'.repeat(8190) + 'xy']], /16384|16385/],
  ['not a list', { a: 'b' }, /headers must be an array of \[name, value\] pairs/],
  ['a pair of one', [['a']], /headers\[0\] must be a \[name, value\] pair/],
  ['an object pair', [{ name: 'a', value: 'b' }], /headers\[0\] must be a \[name, value\] pair/],
  ['a number value', [['a', 1]], /headers\[0\]\.value must be a string/],
];

test('each refusal rejects with HAREL_ERR_ARGUMENT, naming the header, for every publish form; the queue is unchanged', async () => {
  const t = await Transport.open(box.db());
  await t.publish('before', {}, { headers: [['kept', 'yes']] });
  const before = await snapshot(t);
  for (const [what, headers, pattern] of BAD) {
    const forms = [
      ['publish', () => t.publish('g', {}, { headers })],
      ['publishWith', () => t.publishWith('g', {}, { headers, key: `k-${what}` })],
      ['publishMany', () => t.publishMany([{ groupId: 'g', event: {} }, { groupId: 'g', event: {}, headers }])],
      ['publishManyWith', () => t.publishManyWith([{ groupId: 'g', event: {}, key: `m-${what}` }, { groupId: 'g', event: {}, headers }])],
    ];
    for (const [form, publish] of forms) {
      const e = await rejectsWith(assert, publish(), 'HAREL_ERR_ARGUMENT', pattern);
      if (form.startsWith('publishMany')) assert.match(e.message, /messages\[1\]/, `${form}, ${what}: names the message`);
      assert.deepEqual(await snapshot(t), before, `${form}, ${what}: nothing written`);
    }
  }
  // The keys of the refused publishes were not taken.
  assert.equal((await t.publishWith('g', {}, { key: 'k-65 pairs' })).duplicate, false);
  await t.close();
});

test('a refused header in a transaction queues nothing, and the transaction goes on', async () => {
  const t = await Transport.open(box.db());
  const tx = t.begin();
  await tx.publish('g', { n: 1 }, { headers: [['a', '1']] });
  for (const [what, headers, pattern] of BAD) {
    await rejectsWith(assert, tx.publish('g', {}, { headers }), 'HAREL_ERR_ARGUMENT', pattern);
    await rejectsWith(assert, tx.publishWith('g', {}, { headers, key: 'k' }), 'HAREL_ERR_ARGUMENT', pattern);
    void what;
  }
  await tx.publishWith('g', { n: 2 }, { headers: [['b', '2']], key: 'k' });
  const published = await tx.commit();
  assert.equal(published.length, 2, 'the two good publishes, and only them');
  assert.deepEqual((await t.peek('g')).messages.map((m) => [m.event.n, m.headers.map((p) => [...p])]), [
    [1, [['a', '1']]],
    [2, [['b', '2']]],
  ]);
  await t.close();
});

test('the caller\'s list is copied when the call is made: changing it afterwards changes nothing', async () => {
  const t = await Transport.open(box.db());
  const headers = [['a', '1']];
  const pending = t.publish('g', {}, { headers });
  headers[0][1] = 'changed';
  headers.push(['b', '2']);
  await pending;
  sameHeaders((await t.claim('w')).headers, [['a', '1']], 'as they were at the call');
  await t.close();
});
