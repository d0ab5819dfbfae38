'use strict';
// A lease's bytes whole: a group id and an event written by another program may hold NUL
// bytes. The binding reads them with the lease's lengths, and passes a lease's group id
// back (ack, nack, ackAndClaim) as its UTF-8 bytes with group_id_len. The rows are written
// by another process (python3's sqlite3), after the binding created the schema.

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Transport } = require('..');
const { scratch, runPython } = require('./helpers');

const box = scratch();

// Inserts the messages of stdin's JSON [[group_id, event], ...] as the library would (the
// message, and its group if new) in one transaction; prints the seqs.
const INSERT = `
import json, sqlite3, sys
rows = json.load(sys.stdin)
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
seqs = []
for group_id, event in rows:
    seqs.append(db.execute("INSERT INTO harel_transport_messages (group_id, event) VALUES (?, ?)", (group_id, event)).lastrowid)
    db.execute("INSERT OR IGNORE INTO harel_transport_groups (group_id, priority, routing_key) VALUES (?, 0, NULL)", (group_id,))
db.execute("COMMIT")
db.close()
print(json.dumps(seqs))
`;

// Prints the number of rows of both tables.
const COUNT = `
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
messages = db.execute("SELECT count(*) FROM harel_transport_messages").fetchone()[0]
groups = db.execute("SELECT count(*) FROM harel_transport_groups").fetchone()[0]
db.close()
print(json.dumps([messages, groups]))
`;

const GROUP = 'tenant\0north-é';
const EVENTS = ['{"kind":"a","note":"x\0y"}', '{"kind":"b"}\0trailing', '\0{"kind":"c"}'];

test('a group id and events holding NUL bytes, written by another process, come back whole and are acked', async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const seqs = await runPython(INSERT, db, EVENTS.map((event) => [GROUP, event]));
  assert.equal(seqs.length, 3);

  const first = await t.claim('w');
  assert.equal(first.seq, seqs[0]);
  assert.equal(first.groupId, GROUP, 'the group id with its NUL and what follows');
  assert.equal(first.eventJson, EVENTS[0], 'the event text with its NUL and what follows');
  assert.equal(first.event, undefined, 'a raw NUL is not JSON JavaScript parses');
  await t.nack(first); // the group id reaches nack whole ...
  const again = await t.claim('w');
  assert.equal(again.seq, seqs[0]);
  const second = await t.ackAndClaim(again, 'w'); // ... and ackAndClaim ...
  assert.deepEqual([second.seq, second.groupId, second.eventJson], [seqs[1], GROUP, EVENTS[1]]);
  const third = await t.ackAndClaim(second, 'w');
  assert.deepEqual([third.seq, third.groupId, third.eventJson], [seqs[2], GROUP, EVENTS[2]]);
  await t.ack(third); // ... and ack
  assert.equal(await t.claim('w'), null);
  await t.close();
  assert.deepEqual(await runPython(COUNT, db), [0, 0], 'the queue ends empty: no message, no group row');
});

test("a lease's group id reaches ack whole: a NUL does not cut it short", async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const [seq] = await runPython(INSERT, db, [[GROUP, '{}']]);
  await t.claim('w'); // leased to w, whatever the claim read
  const forged = { seq, workerId: 'w' };
  await assert.rejects(t.ack({ ...forged, groupId: 'tenant' }), (e) => e.code === 'HAREL_ERR_LEASE_LOST', 'cut at the NUL: another group');
  await assert.rejects(t.ack({ ...forged, groupId: 'tenant\0north' }), (e) => e.code === 'HAREL_ERR_LEASE_LOST');
  await t.ack({ ...forged, groupId: GROUP });
  assert.equal(await t.claim('w'), null);
  await t.close();
  assert.deepEqual(await runPython(COUNT, db), [0, 0]);
});
