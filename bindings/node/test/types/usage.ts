// Type-checked (never run) by `tsc --noEmit -p test/types`: the README's usage, typed,
// plus calls the declarations must refuse (@ts-expect-error fails the check if they don't).

import {
  Transport,
  HarelError,
  STATUS,
  DEFAULT_VISIBILITY,
  DEFAULT_LIMIT,
  MAX_PAGE,
  MAX_CLAIM,
  MAX_LIMIT,
  version,
  libraryInfo,
  schemaSql,
  schemaUpgradeSql,
  shardOf,
  type Lease,
  type LeaseRef,
  type OpenOptions,
  type HarelErrorCode,
  type Message,
  type UniqueMode,
  type UniqueOptions,
  type Stats,
  type Metrics,
  type Histogram,
  type GroupInfo,
  type GroupPage,
  type GroupState,
  type MessagePage,
  type MessageInfo,
  type RetryOptions,
  type Jitter,
  type DeadLetter,
  type DeadLetterPage,
  type DeadLetterSelection,
  type Archived,
  type ArchivePage,
  type ArchiveOptions,
  type AckOutcome,
  type AckAndClaimManyResult,
  type ClaimManyOptions,
  type KeepAlive,
  type PublishWithOptions,
  type DeliveryOptions,
  type MessageWith,
  type Published,
  type PriorityStats,
  type PauseTarget,
  type PauseKind,
  type Pause,
  type Limit,
  type Rate,
  type LimitInfo,
  Tx,
  type SqlParam,
  type SqlValue,
  type TransactionResult,
  type Header,
  type TracerProviderLike,
  leaseSpan,
} from 'harel-transport';
import { context, trace, type Span } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

interface OrderPlaced {
  kind: 'order.placed';
  id: string;
  data: { total: number };
}

async function usage(): Promise<void> {
  const options: OpenOptions = {
    prefix: 'shop',
    createSchema: true,
    busyTimeout: 5,
    synchronousFull: false,
    maxAttempts: 5,
    keyRetention: 7 * 86400,
    archiveRetention: 30 * 86400,
    retry: { base: 1, factor: 2, cap: 300, jitter: 'equal' },
    clock: () => Date.now() / 1000,
  };
  const t: Transport = await Transport.open('queue.db', options);
  await t.publish('order-17', { kind: 'order.placed', id: 'e1', data: { total: 12 } });
  await t.publish('order-17', '{"kind":"order.paid"}', { priority: 2, routingKey: 'eu' });
  const batch: Message[] = [
    { groupId: 'order-18', event: { kind: 'order.placed', id: 'e2', data: { total: 3 } } },
    { groupId: 'order-19', event: '{}', priority: 4, routingKey: null },
  ];
  await t.publishMany(batch);
  await t.publishMany([]);

  // producers: idempotency keys and delays
  const withOptions: PublishWithOptions = { priority: 1, routingKey: 'eu', key: 'order-17/e3', delay: 30, notBefore: null };
  const published: Published = await t.publishWith('order-17', { kind: 'order.shipped' }, withOptions);
  const publishedSeq: number | bigint = published.seq;
  const duplicate: boolean = published.duplicate;
  void [publishedSeq, duplicate];
  await t.publishWith('order-17', '{}');
  await t.publishWith('order-17', {}, { notBefore: new Date('2030-01-01').getTime() / 1000 });
  const delivery: DeliveryOptions = { key: null, delay: 0 };
  const batchWith: MessageWith[] = [
    { groupId: 'order-20', event: {}, key: 'a', ...delivery },
    { groupId: 'order-20', event: '{}', priority: 2, routingKey: null, delay: 5, notBefore: Date.now() / 1000 + 60 },
  ];
  const outcomesWith: Published[] = await t.publishManyWith(batchWith);
  const fresh: number = outcomesWith.filter((o) => !o.duplicate).length;
  void fresh;
  await t.publishManyWith(batch); // a plain Message is a MessageWith
  await t.publishManyWith([]);

  // unique keys
  const mode: UniqueMode = 'debounce';
  const unique: UniqueOptions = { key: 'reindex-42', mode, delay: 5, maxDelay: 60 };
  const debounced: Published = await t.publishWith('search', { kind: 'reindex' }, { unique });
  const replaced: boolean = debounced.replaced;
  void replaced;
  await t.publishWith('search', {}, { unique: { key: 'reindex-42' }, headers: [['x', 'y']] });
  await t.publishWith('search', {}, { unique: null });
  const uniqueBatch: Published[] = await t.publishManyWith([
    { groupId: 'search', event: {}, unique: { key: 'a', mode: 'replace' } },
    { groupId: 'search', event: {}, unique: { key: 'b', mode: 'keep' }, delay: 10 },
  ]);
  void uniqueBatch.filter((o) => o.replaced);

  // expiry
  const expiring: DeliveryOptions = { ttl: 60, expiresAt: null };
  await t.publishWith('quotes', { price: 1 }, expiring);
  await t.publishWith('quotes', { price: 2 }, { expiresAt: new Date('2030-01-01').getTime() / 1000, ttl: null });
  const expiringBatch: Published[] = await t.publishManyWith([
    { groupId: 'quotes', event: {}, ttl: 0.5 },
    { groupId: 'quotes', event: {}, expiresAt: Date.now() / 1000 + 60, delay: 5, unique: { key: 'q' } },
  ]);
  void expiringBatch;

  // retries: the queue's policy at open, a message's own at its publish
  const jitter: Jitter = 'none';
  const policy: RetryOptions = { base: 0.5, jitter };
  const retrying: Transport = await Transport.open('retries.db', { retry: policy });
  await Transport.open('plain.db', { retry: null });
  await retrying.publishWith('emails/42', {}, { retry: { base: 1, factor: 3, cap: 60, jitter: 'full' } });
  await retrying.publishWith('emails/42', {}, { retry: null, ttl: 3600 });
  const retryingBatch: Published[] = await retrying.publishManyWith([
    { groupId: 'emails/43', event: {}, retry: { base: 2 } },
    { groupId: 'emails/44', event: {}, retry: policy, delay: 5 },
  ]);
  void retryingBatch;
  await retrying.transaction((tx) => tx.publishWith('emails/45', {}, { retry: { base: 10, cap: 10 } }));
  const peeked: MessageInfo | undefined = (await retrying.peek('emails/42')).messages[0];
  const backoff: number | null | undefined = peeked?.retryDelay;
  void backoff;

  // publishing inside the application's transaction
  const result: TransactionResult<number> = await t.transaction(async (tx) => {
    await tx.execute('INSERT INTO orders (id, total) VALUES (?, ?)', ['o-17', 12]);
    await tx.publish('order-17', { kind: 'order.placed', id: 'e1', data: { total: 12 } }, { priority: 1 });
    await tx.publishWith('order-17', {}, { key: 'o-17/placed', delay: 5, notBefore: null });
    await tx.publishWith('order-17', {}, { unique: { key: 'o-17/summary', mode: 'replace' } });
    await tx.publishWith('order-17', {}, { ttl: 3600 });
    const rows: SqlValue[][] = await tx.query('SELECT count(*) FROM orders WHERE total > ?1', [10n]);
    return Number(rows[0][0]);
  });
  const count: number = result.value;
  const txOutcomes: Published[] = result.published;
  void [count, txOutcomes];
  const syncResult: TransactionResult<string> = await t.transaction(() => 'no await needed');
  void syncResult;
  const params: SqlParam[] = [null, undefined, true, 1.5, 2n, 'text', Buffer.from('blob'), new Uint8Array(2)];
  const tx: Tx = t.begin();
  try {
    await tx.execute('UPDATE orders SET total = ?2 WHERE id = ?1', params);
    await tx.execute('DELETE FROM orders');
    const cell: SqlValue = (await tx.query('SELECT 1'))[0][0];
    if (Buffer.isBuffer(cell)) void cell.length;
    const committed: Published[] = await tx.commit();
    void committed;
  } finally {
    await tx.rollback();
  }
  {
    await using scoped = t.begin();
    await scoped.execute('DELETE FROM orders');
  }

  const lease = await t.claim<OrderPlaced>('worker-1', { visibility: 30, minPriority: 0, routingKeys: ['eu'] });
  if (lease !== null) {
    const total: number = lease.event.data.total;
    const seq: number | bigint = lease.seq;
    const text: string = lease.eventJson;
    const until: number = lease.lockExpiry;
    void [total, seq, text, until, lease.groupId, lease.workerId];
    try {
      await t.ack(lease);
    } catch (e) {
      if (e instanceof HarelError && e.code === 'HAREL_ERR_LEASE_LOST') {
        const status: number | undefined = e.status;
        void status;
      }
    }
    const ref: LeaseRef = { seq: 1n, groupId: 'g', workerId: 'w' };
    await t.nack(ref, { delay: 5 });
  }
  const untyped: Lease | null = await t.claim('worker-2');
  if (untyped !== null) {
    const next: Lease<OrderPlaced> | null = await t.ackAndClaim<OrderPlaced>(untyped, 'worker-2', { routingKeys: ['eu'] });
    void next;
  }
  const unknownEvent: unknown = untyped?.event;
  void unknownEvent;

  // the worker loop: waiting claims, batches, extend, keepAlive, interrupt
  const controller = new AbortController();
  const waited: Lease<OrderPlaced> | null = await t.claim<OrderPlaced>('worker-4', { wait: 5, signal: controller.signal });
  if (waited !== null) {
    const until: number = await t.extend(waited, 60);
    const moved: number = waited.lockExpiry;
    void [until, moved];
  }
  const manyOptions: ClaimManyOptions = { max: 10, wait: 30, signal: controller.signal, visibility: 60, routingKeys: ['eu'] };
  let batch2: Lease<OrderPlaced>[] = await t.claimMany<OrderPlaced>('worker-4', manyOptions);
  for (const leased of batch2) {
    using alive: KeepAlive = t.keepAlive(leased, { visibility: 60, every: 20, signal: controller.signal });
    const lost: AbortSignal = alive.signal;
    const stopped: boolean = alive.stopped;
    void [lost, stopped, leased.event.data.total];
    alive.stop();
  }
  const outcomes: AckOutcome<Lease<OrderPlaced>>[] = await t.ackMany(batch2);
  for (const o of outcomes) {
    if (!o.ok) {
      const lostCode: HarelErrorCode = o.error.code;
      const lostSeq: number | bigint = o.lease.seq;
      void [lostCode, lostSeq];
    } else {
      const none: null = o.error;
      void none;
    }
  }
  const next2: AckAndClaimManyResult<Lease<OrderPlaced>, OrderPlaced> = await t.ackAndClaimMany<Lease<OrderPlaced>, OrderPlaced>(batch2, 'worker-4', { max: MAX_CLAIM });
  batch2 = next2.leases;
  const acked: boolean[] = next2.acked.map((o) => o.ok);
  const refs: AckOutcome[] = await t.ackMany([{ seq: 1, groupId: 'g', workerId: 'w' }]);
  void [acked, refs];
  t.interrupt();
  const interrupted: -6 = STATUS.HAREL_ERR_INTERRUPTED;
  const interruptedCode: HarelErrorCode = 'HAREL_ERR_INTERRUPTED';
  void [interrupted, interruptedCode];

  // when a message keeps failing
  const failing = await t.claim<OrderPlaced>('worker-3');
  if (failing !== null) {
    const attempts: number = failing.attempts;
    void attempts;
    await t.deadLetter(failing, 'total is negative');
  }
  const selections: DeadLetterSelection[] = [{ all: true }, { groupId: 'order-17' }, { seqs: [1, 2n] }];
  for (const which of selections) {
    const moved: number = await t.redrive(which);
    const purged: number = await t.purgeDead(which);
    void [moved, purged];
  }
  const purgedGroup: number = await t.purgeGroup('order-18');
  const purgedAll: number = await t.purge();
  const released: boolean = await t.release('order-19');
  void [purgedGroup, purgedAll, released];

  const stats: Stats = await t.stats();
  const age: number | null = stats.oldestReadyAge;
  const oldestSeq: number | null = stats.oldestReadySeq;
  const nextRelease: number | null = stats.nextReleaseAt;
  const levels: number[] = stats.byPriority.map((p) => p.priority + p.ready + p.leased + p.parked + p.groups);
  const delayedGroups: number = stats.delayed;
  const nextDue: number | null = stats.nextDueAt;
  const expiredLetters: number = stats.expired;
  const heldGroups: number = stats.held;
  const retryingGroups: number = stats.retrying;
  void [expiredLetters, heldGroups, retryingGroups];
  const level: PriorityStats | undefined = stats.byPriority[0];
  const delayedAtLevel: number | undefined = level?.delayed;
  void [stats.now, stats.messages, stats.dead, age, oldestSeq, nextRelease, levels, delayedGroups, nextDue, delayedAtLevel];
  const delayedPage: GroupPage = await t.groups({ state: 'delayed' });
  const delayedState: GroupState = 'delayed';
  const heldPage: GroupPage = await t.groups({ state: 'held' });
  const waitingStates: GroupState[] = ['held', 'retrying'];
  void [delayedPage, delayedState, heldPage, waitingStates];

  // pause and resume: the queue, a group, a routing key
  const targets: PauseTarget[] = [{ queue: true }, { groupId: 'order-17' }, { routingKey: 'eu' }];
  for (const target of targets) {
    const paused: boolean = await t.pause(target);
    const resumed: boolean = await t.resume(target);
    void [paused, resumed];
  }
  const pauses: readonly Pause[] = await t.pauses();
  for (const p of pauses) {
    const kind: PauseKind = p.kind;
    const name: string = p.name;
    const pausedAt: number = p.pausedAt;
    const queueWide: boolean = p.kind === 'queue' && p.name === '';
    void [kind, name, pausedAt, queueWide];
  }
  const pausedGroups: number = stats.paused;
  const pausedAtLevel: number | undefined = level?.paused;
  const pausedPage: GroupPage = await t.groups({ state: 'paused' });
  const pausedState: GroupState = 'paused';
  void [pausedGroups, pausedAtLevel, pausedPage, pausedState];

  // limits per routing key: a concurrency, a rate, both; listed with their use; removed
  const set: void = await t.setLimit('payments', { concurrency: 10 });
  void set;
  const rate: Rate = { perSecond: 50, burst: 100 };
  await t.setLimit('email', { rate });
  const both: Limit = { concurrency: MAX_LIMIT, rate: { perSecond: 0.5, burst: 1 } };
  await t.setLimit('reports', both);
  await t.setLimit('reports', { concurrency: 2, rate: null });
  const limits: readonly LimitInfo[] = await t.limits();
  for (const l of limits) {
    const key: string = l.routingKey;
    const concurrency: number | null = l.concurrency;
    const perSecond: number | undefined = l.rate?.perSecond;
    const tokens: number | null = l.tokens;
    const counts: number = l.inUse + l.held;
    await t.setLimit(l.routingKey, { concurrency: l.concurrency, rate: l.rate }); // a listed limit set again
    void [key, concurrency, perSecond, tokens, counts];
  }
  const removed: void = await t.removeLimit('payments');
  void removed;

  const metrics: Metrics = t.metrics(); // synchronous: no Promise
  const claims: Histogram = metrics.latency.claimWait;
  const slow: number = claims.count - claims.buckets[claims.bounds.indexOf(1)];
  const holds: number = metrics.limitHolds;
  void [metrics.published, metrics.deadLetteredByClaim, metrics.busyRetries, holds, claims.sum, slow];
  // @ts-expect-error: metrics() is no Promise
  void metrics.then;
  // @ts-expect-error: a frozen copy
  metrics.latency.ack.buckets[0] = 1;

  let cursor: string | null = null;
  do {
    const page: GroupPage = await t.groups({ state: 'leased', cursor, limit: MAX_PAGE });
    for (const g of page.groups) {
      const state: GroupState = g.state;
      const holder: string | null = g.holder;
      const until: number | null = g.lockExpiry;
      const key: string | null = g.routingKey;
      const headSeq: number | bigint = g.headSeq;
      void [state, holder, until, key, headSeq, g.depth, g.headAge, g.priority, g.headAttempts, g.groupId];
    }
    cursor = page.next;
  } while (cursor !== null);
  const all: GroupInfo[] = [...(await t.groups()).groups, ...(await t.groups({ state: null, limit: DEFAULT_LIMIT })).groups];
  const messages: MessagePage<OrderPlaced> = await t.peek<OrderPlaced>('order-17', { limit: 10 });
  for (const m of messages.messages) {
    const total: number = m.event.data.total;
    const lockedBy: string | null = m.lockedBy;
    const publishedAt: number | null = m.publishedAt;
    const retryDelay: number | null = m.retryDelay;
    void [total, lockedBy, publishedAt, retryDelay, m.seq, m.eventJson, m.attempts, m.lockExpiry];
  }
  const dead: DeadLetterPage = await t.deadLetters({ groupId: 'order-17', cursor: messages.next, limit: 5 });
  const letter: DeadLetter | undefined = dead.letters[0];
  const lastWorker: string | null | undefined = letter?.lastWorker;
  const reasons: string[] = (await t.deadLetters()).letters.map((d) => `${d.reason} ${d.deadAt} ${d.attempts}`);
  void [all, lastWorker, reasons];
  const look: ArchiveOptions = { groupId: 'order-17', cursor: dead.next, limit: 50 };
  const history: ArchivePage<OrderPlaced> = await t.archive<OrderPlaced>(look);
  for (const a of history.messages) {
    const total: number = a.event.data.total;
    const workerId: string = a.workerId;
    const times: [number | null, number | null, number] = [a.publishedAt, a.claimedAt, a.ackedAt];
    const pairs: readonly Header[] = a.headers;
    void [total, workerId, times, pairs, a.seq, a.groupId, a.eventJson, a.attempts, a.shard];
  }
  const first: Archived | undefined = (await t.archive()).messages[0];
  const nextArchived: string | null = (await t.archive({ groupId: null, cursor: null })).next;
  void [first, nextArchived];

  const closed: boolean = t.closed;
  const where: string = t.path;
  void [closed, where];
  await t.close();

  // A queue sharded over three databases: the same options as open.
  const databases: readonly string[] = ['q0.db', 'q1.db', 'q2.db'];
  const sharded: Transport = await Transport.openShards(databases, options);
  const shards: number = sharded.shardCount; // synchronous: no Promise
  const home: number = shardOf('order-42', shards);
  const groupShard: number | undefined = (await sharded.groups()).groups[0]?.shard;
  const letterShard: number | undefined = (await sharded.deadLetters()).letters[0]?.shard;
  const archivedShard: number | undefined = (await sharded.archive()).messages[0]?.shard;
  void [home, groupShard, letterShard, archivedShard];
  await sharded.close();

  {
    await using scoped = await Transport.open(':memory:');
    await scoped.publish('g', {});
  }

  const code: HarelErrorCode = 'HAREL_ERR_CLOSED';
  const err = new HarelError(code, 'message');
  const ok: 0 = STATUS.HAREL_OK;
  const visibility: 30 = DEFAULT_VISIBILITY;
  const info: { path: string; version: string } = libraryInfo();
  const texts: string[] = [version(), schemaSql(), schemaSql('shop'), schemaUpgradeSql('shop')];
  void [err, ok, visibility, info, texts];

  // What the declarations refuse:
  // @ts-expect-error the constructor is private: use Transport.open
  new Transport();
  // @ts-expect-error priority is a number
  await t.publish('g', {}, { priority: 'high' });
  // @ts-expect-error unknown option
  await t.claim('w', { visiblity: 5 });
  // @ts-expect-error a message needs a groupId
  await t.publishMany([{ event: {} }]);
  // @ts-expect-error publishMany takes an array
  await t.publishMany({ groupId: 'g', event: {} });
  // @ts-expect-error routingKeys is an array
  await t.claim('w', { routingKeys: 'eu' });
  // @ts-expect-error a lease needs seq, groupId and workerId
  await t.ack({ seq: 1 });
  // @ts-expect-error the clock returns a number
  await Transport.open('q.db', { clock: () => new Date() });
  // @ts-expect-error not a known code
  const bad: HarelErrorCode = 'HAREL_ERR_NOPE';
  void bad;
  // @ts-expect-error a selection is one of { all: true }, { groupId }, { seqs }
  await t.redrive({ all: false });
  // @ts-expect-error seqs are numbers or bigints
  await t.purgeDead({ seqs: ['1'] });
  // @ts-expect-error not a group state
  await t.groups({ state: 'stuck' });
  // @ts-expect-error a pause names exactly one of queue, groupId and routingKey
  await t.pause({ groupId: 'g', routingKey: 'k' });
  // @ts-expect-error the queue is { queue: true }
  await t.pause({ queue: false });
  // @ts-expect-error a target is an object, not the kind's name
  await t.pause('queue');
  // @ts-expect-error a group is named by groupId
  await t.resume({ group: 'g' });
  // @ts-expect-error resume needs a target
  await t.resume();
  // @ts-expect-error setLimit needs the limit
  await t.setLimit('k');
  // @ts-expect-error a concurrency is a number
  await t.setLimit('k', { concurrency: '5' });
  // @ts-expect-error a rate is { perSecond, burst }
  await t.setLimit('k', { rate: 5 });
  // @ts-expect-error a rate needs its burst
  await t.setLimit('k', { rate: { perSecond: 5 } });
  // @ts-expect-error the limit is an object
  await t.setLimit('k', 5);
  // @ts-expect-error removeLimit takes the routing key
  await t.removeLimit({ routingKey: 'k' });
  // @ts-expect-error the limits are read only
  (await t.limits()).push(limits[0]);
  // @ts-expect-error a listed limit is read only
  limits[0].held = 0;
  // @ts-expect-error expiresAt is epoch seconds, not a Date
  await t.publishWith('g', {}, { expiresAt: new Date() });
  // @ts-expect-error ttl is seconds as a number
  await t.publishWith('g', {}, { ttl: '60s' });
  // @ts-expect-error publish takes no delivery option
  await t.publish('g', {}, { ttl: 60 });
  // @ts-expect-error a retry policy needs its base
  await t.publishWith('g', {}, { retry: { factor: 2 } });
  // @ts-expect-error a jitter is one of three names
  await Transport.open('q.db', { retry: { base: 1, jitter: 'half' } });
  // @ts-expect-error a jitter is a name, not the C number
  await t.publishWith('g', {}, { retry: { base: 1, jitter: 1 } });
  // @ts-expect-error base is seconds as a number
  await t.publishWith('g', {}, { retry: { base: '1s' } });
  // @ts-expect-error publish takes no retry policy
  await t.publish('g', {}, { retry: { base: 1 } });
  // @ts-expect-error unknown field of a retry policy
  await t.publishWith('g', {}, { retry: { base: 1, max: 60 } });
  // @ts-expect-error a message's backoff is read only
  peeked!.retryDelay = 1;
  // @ts-expect-error the expired count is a number, never null
  const expiredCount: Stats['expired'] = null;
  void expiredCount;
  // @ts-expect-error a level's paused count is a number, never null
  const pausedCount: PriorityStats['paused'] = null;
  void pausedCount;
  // @ts-expect-error the pauses are read only
  (await t.pauses()).push(pauses[0]);
  // @ts-expect-error peek takes the group id first
  await t.peek({ groupId: 'g' });
  // @ts-expect-error the reason is a string
  await t.deadLetter({ seq: 1, groupId: 'g', workerId: 'w' }, 42);
  // @ts-expect-error maxAttempts is a number
  await Transport.open('q.db', { maxAttempts: '5' });
  // @ts-expect-error claimMany needs max
  await t.claimMany('w', { wait: 5 });
  // @ts-expect-error wait is in seconds, a number
  await t.claim('w', { wait: '5s' });
  // @ts-expect-error signal is an AbortSignal
  await t.claim('w', { wait: 1, signal: true });
  // @ts-expect-error ackAndClaimMany does not wait
  await t.ackAndClaimMany([], 'w', { max: 1, wait: 5 });
  // @ts-expect-error ackMany takes an array
  await t.ackMany({ seq: 1, groupId: 'g', workerId: 'w' });
  // @ts-expect-error extend needs the visibility
  await t.extend({ seq: 1, groupId: 'g', workerId: 'w' });
  // @ts-expect-error a lease's lockExpiry is read only (extend moves it)
  if (waited !== null) waited.lockExpiry = 0;
  // @ts-expect-error keepAlive returns its handle, not a promise
  await t.keepAlive({ seq: 1, groupId: 'g', workerId: 'w' }).then(() => {});
  // @ts-expect-error a page's items are read only
  (await t.groups()).groups.push(all[0]);
  // @ts-expect-error publish resolves nothing: publishWith resolves the outcome
  const nothing: Published = await t.publish('g', {});
  void nothing;
  // @ts-expect-error the key is a string
  await t.publishWith('g', {}, { key: 42 });
  // @ts-expect-error delay is in seconds, a number
  await t.publishWith('g', {}, { delay: '10s' });
  // @ts-expect-error notBefore is epoch seconds, not a Date
  await t.publishWith('g', {}, { notBefore: new Date() });
  // @ts-expect-error unknown option
  await t.publishWith('g', {}, { idempotencyKey: 'k' });
  // @ts-expect-error publishManyWith takes an array
  await t.publishManyWith({ groupId: 'g', event: {} });
  // @ts-expect-error a message needs a groupId
  await t.publishManyWith([{ event: {}, key: 'k' }]);
  // @ts-expect-error an outcome is frozen
  published.duplicate = true;
  // @ts-expect-error replaced too
  published.replaced = false;
  // @ts-expect-error a unique key needs its key
  await t.publishWith('g', {}, { unique: { mode: 'keep' } });
  // @ts-expect-error a mode is one of three names
  await t.publishWith('g', {}, { unique: { key: 'k', mode: 'dedupe' } });
  // @ts-expect-error unique is an object, not the key itself
  await t.publishWith('g', {}, { unique: 'k' });
  // @ts-expect-error maxDelay is in seconds, a number
  await t.publishManyWith([{ groupId: 'g', event: {}, unique: { key: 'k', mode: 'debounce', maxDelay: '1m' } }]);
  // @ts-expect-error a parameter is a SQL value, not an object
  await tx.execute('SELECT ?', [{}]);
  // @ts-expect-error params are an array
  await tx.query('SELECT ?', 1);
  // @ts-expect-error a transaction's publish resolves nothing: commit resolves the outcomes
  const queued: Published = await tx.publishWith('g', {});
  void queued;
  // @ts-expect-error the body takes the tx
  await t.transaction(async (tx: Transport) => tx);
  // @ts-expect-error begin is synchronous: a Tx, not a promise
  await t.begin().then(() => {});
  // @ts-expect-error a Tx is made by begin()
  new Tx();
  // @ts-expect-error keyRetention is a number of seconds
  await Transport.open('q.db', { keyRetention: '1d' });
  // @ts-expect-error archiveRetention is a number of seconds
  await Transport.open('q.db', { archiveRetention: '30d' });
  // @ts-expect-error archive takes an options object, not a group id
  await t.archive('order-17');
  // @ts-expect-error an archived message is read only
  (await t.archive()).messages[0].workerId = 'w';
  // @ts-expect-error the archive's page holds messages, not letters
  void (await t.archive()).letters;
  // @ts-expect-error openShards takes an array of databases
  await Transport.openShards('q0.db');
  const replicas: Transport = await Transport.openShards(['r0.db', 'r1.db'], { syncUrls: ['http://a:8080', 'http://b:8080'] });
  await replicas.close();
  // @ts-expect-error syncUrls is an array of URLs
  await Transport.openShards(['r0.db'], { syncUrls: 'http://a:8080' });
  // @ts-expect-error unknown option
  await Transport.openShards(['q0.db'], { shards: 3 });
  // @ts-expect-error shardCount is a number, not a method
  t.shardCount();
  // @ts-expect-error shardCount is read only
  t.shardCount = 2;
  // @ts-expect-error shardOf takes the number of shards
  shardOf('order-42');
  // @ts-expect-error shardOf is synchronous: a number, not a promise
  await shardOf('order-42', 3).then(() => {});
  // @ts-expect-error a group's shard is read only
  all[0].shard = 1;
}

// The README's worker loop, typed.
async function workerLoop(queue: Transport, handle: (event: OrderPlaced, signal: AbortSignal) => Promise<void>): Promise<void> {
  const controller = new AbortController();
  process.once('SIGTERM', () => controller.abort());
  const { signal } = controller;
  let leases: Lease<OrderPlaced>[] = [];
  while (!signal.aborted) {
    if (leases.length === 0) {
      try {
        leases = await queue.claimMany<OrderPlaced>('worker-1', { max: 20, wait: 30, visibility: 60, signal });
      } catch (e) {
        if (signal.aborted) break;
        throw e;
      }
      continue;
    }
    const done: Lease<OrderPlaced>[] = [];
    for (const lease of leases) {
      const alive = queue.keepAlive(lease, { visibility: 60 });
      try {
        await handle(lease.event, alive.signal);
        done.push(lease);
      } catch {
        await queue.nack(lease, { delay: 10 }).catch(() => {});
      } finally {
        alive.stop();
      }
    }
    const next = await queue.ackAndClaimMany<Lease<OrderPlaced>, OrderPlaced>(done, 'worker-1', { max: 20, visibility: 60 });
    for (const { ok, error } of next.acked) if (!ok) console.warn(error.message);
    leases = next.leases;
  }
  for (const lease of leases) await queue.nack(lease);
  await queue.close();
}

// message headers and OpenTelemetry (issue 37)
async function headersAndTracing(): Promise<void> {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const asLike: TracerProviderLike = provider;
  const t = await Transport.open('queue.db', { tracerProvider: provider, traceAsParent: true });
  await Transport.open('queue.db', { tracerProvider: 'global' });
  await Transport.open('queue.db', { tracerProvider: trace.getTracerProvider(), traceAsParent: false });
  await Transport.open('queue.db', { tracerProvider: null });
  void asLike;

  const headers: Header[] = [['content-type', 'application/json'], ['x-tenant', 'acme']];
  await t.publish('order-17', {}, { headers });
  await t.publish('order-17', {}, { headers: [['a', 'b'], ['a', 'c']], priority: 1 });
  await t.publish('order-17', {}, { headers: null });
  await t.publishMany([{ groupId: 'g', event: {}, headers }, { groupId: 'g', event: {} }]);
  const out: Published = await t.publishWith('g', {}, { headers, key: 'k1' });
  await t.publishManyWith([{ groupId: 'g', event: {}, headers: [['h', 'v']], delay: 5 }]);
  await t.transaction(async (tx) => {
    await tx.publish('g', {}, { headers });
    await tx.publishWith('g', {}, { headers, key: 'k2' });
  });
  void out;

  const lease = await t.claim('w');
  if (lease) {
    const pairs: readonly Header[] = lease.headers;
    for (const [name, value] of lease.headers) console.log(name.length, value.length);
    const first: string | undefined = lease.headers[0]?.[1];
    const span = leaseSpan<Span>(lease);
    if (span) await context.with(trace.setSpan(context.active(), span), () => t.ack(lease));
    void [pairs, first];
    // @ts-expect-error a lease's headers are read only
    lease.headers.push(['a', 'b']);
  }
  const peeked: readonly Header[] = (await t.peek('g')).messages[0].headers;
  const dead: readonly Header[] = (await t.deadLetters()).letters[0].headers;
  void [peeked, dead];

  // @ts-expect-error headers are [name, value] pairs, not an object
  await t.publish('g', {}, { headers: { a: 'b' } });
  // @ts-expect-error a header is a pair of strings
  await t.publish('g', {}, { headers: [['a', 1]] });
  // @ts-expect-error a header is a pair, not a name alone
  await t.publishMany([{ groupId: 'g', event: {}, headers: [['a']] }]);
  // @ts-expect-error traceAsParent is a boolean
  await Transport.open('queue.db', { tracerProvider: provider, traceAsParent: 'yes' });
  // @ts-expect-error a tracer provider, 'global' or null
  await Transport.open('queue.db', { tracerProvider: 'local' });
}

void usage;
void workerLoop;
void headersAndTracing;
