// Type-checked (never run) by `tsc --noEmit -p test/types`: the README's usage, typed,
// plus calls the declarations must refuse (@ts-expect-error fails the check if they don't).

import {
  Transport,
  HarelError,
  STATUS,
  DEFAULT_VISIBILITY,
  version,
  libraryInfo,
  schemaSql,
  schemaUpgradeSql,
  type Lease,
  type LeaseRef,
  type OpenOptions,
  type HarelErrorCode,
  type Message,
} from 'harel-transport';

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

  const closed: boolean = t.closed;
  const where: string = t.path;
  void [closed, where];
  await t.close();

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
}

void usage;
