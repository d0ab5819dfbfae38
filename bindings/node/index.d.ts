// Type declarations for harel-transport (CommonJS; `import { Transport } from 'harel-transport'`
// works from TypeScript and from ES modules).

/** The codes a HarelError can carry: the library's harel_status names, and the binding's own. */
export type HarelErrorCode =
  | 'HAREL_ERR_ARGUMENT'
  | 'HAREL_ERR_DATABASE'
  | 'HAREL_ERR_BUSY'
  | 'HAREL_ERR_LEASE_LOST'
  | 'HAREL_ERR_CONNECT'
  /** A waiting claim ended by Transport.interrupt() or close() (an aborted signal rejects with its reason instead). */
  | 'HAREL_ERR_INTERRUPTED'
  | 'HAREL_ERR_PANIC'
  /** The binding's: a call on a Transport after close() was called. */
  | 'HAREL_ERR_CLOSED'
  /** The binding's: libharel_transport could not be found or loaded. */
  | 'HAREL_ERR_LOAD'
  /** A status this binding doesn't know (a newer library). */
  | 'HAREL_UNKNOWN';

/** Every error this package throws or rejects with. */
export declare class HarelError extends Error {
  constructor(code: HarelErrorCode, message: string, extra?: { status?: number; cause?: unknown });
  readonly name: 'HarelError';
  /** What went wrong, for programs: e.g. 'HAREL_ERR_LEASE_LOST'. */
  readonly code: HarelErrorCode;
  /** The library's harel_status (negative); undefined for HAREL_ERR_CLOSED and HAREL_ERR_LOAD. */
  readonly status: number | undefined;
}

/** The library's status codes (harel_status). */
export declare const STATUS: Readonly<{
  HAREL_OK: 0;
  HAREL_EMPTY: 1;
  HAREL_ERR_ARGUMENT: -1;
  HAREL_ERR_DATABASE: -2;
  HAREL_ERR_BUSY: -3;
  HAREL_ERR_LEASE_LOST: -4;
  HAREL_ERR_CONNECT: -5;
  HAREL_ERR_INTERRUPTED: -6;
  HAREL_ERR_PANIC: -99;
}>;

/** The visibility a claim uses when none is given: 30 seconds. */
export declare const DEFAULT_VISIBILITY: 30;

/** The limit a listing (groups, peek, deadLetters, archive) uses when none is given. */
export declare const DEFAULT_LIMIT: 100;

/** The largest limit a listing takes. */
export declare const MAX_PAGE: 10000;

/** The most leases one claimMany or ackAndClaimMany hands out. */
export declare const MAX_CLAIM: 1000;

/** The most of a limit's numbers (Transport.setLimit: a concurrency, a rate, a burst). */
export declare const MAX_LIMIT: 1000000;

/**
 * A message header: a name (1..128 bytes of visible ASCII, 0x21..0x7e, without '=') and a
 * value (UTF-8 without NUL characters). A message carries at most 64 of them, 16384 bytes of
 * names and values in all; names may repeat, and the order is kept. The library checks these
 * rules (HAREL_ERR_ARGUMENT naming the header, nothing written); the binding refuses a NUL
 * character or a lone surrogate itself, as in any string it passes.
 */
export type Header = readonly [name: string, value: string];

/**
 * An OpenTelemetry TracerProvider (from @opentelemetry/api, an optional peer dependency of
 * this package; an SDK's BasicTracerProvider or NodeTracerProvider, say): what the binding
 * uses of it, so these declarations need no @opentelemetry/api.
 */
export interface TracerProviderLike {
  getTracer(name: string, version?: string, options?: object): unknown;
}

export interface OpenOptions {
  /** Table-name prefix: a letter or '_', then letters, digits or '_', at most 30. Default 'harel'. */
  prefix?: string;
  /** Create the tables (and upgrade a harel 0.9 schema) at open. Default true. */
  createSchema?: boolean;
  /** Make `path` an embedded replica of the libSQL server at this URL. */
  syncUrl?: string | null;
  /**
   * Transport.openShards: make its paths embedded replicas, `syncUrls[i]` the primary of
   * shard i (as many URLs as paths; not beside syncUrl). [] unsets.
   */
  syncUrls?: readonly string[];
  /** The token for a libSQL server (a remote URL or a replica's primary). */
  authToken?: string | null;
  /** How often an embedded replica pulls from its primary, in seconds (> 0). */
  syncInterval?: number;
  /** How long a write waits for the write lock before HAREL_ERR_BUSY, in seconds. Default 5. */
  busyTimeout?: number;
  /** Local files: durable commits but a claim's (synchronous FULL, the default: a lease dies with its worker anyway) or faster NORMAL (false). */
  synchronousFull?: boolean;
  /**
   * How many times a message may be claimed (0..2^32-1; 0, the default: no limit): a claim
   * that would hand it out once more moves it to the dead letters, and its group goes on.
   */
  maxAttempts?: number;
  /**
   * How long an idempotency key (publishWith's `key`) is remembered after its publish, in
   * seconds (> 0, at most ten years). Default 86400, a day.
   */
  keyRetention?: number;
  /**
   * Keep each message this transport acks (ack, ackMany, ackAndClaim, ackAndClaimMany) in
   * the archive for this many seconds after its ack (> 0, at most ten years): Transport.archive
   * lists them. Each ack copies its message in its own transaction and deletes up to 100
   * archived messages acked longer ago. Absent (the default): an ack deletes, nothing is
   * archived. With createSchema false the archive table must be there, or open fails.
   */
  archiveRetention?: number;
  /**
   * The queue's retry policy, as this transport's claims apply it (see RetryOptions): a
   * message they hand out whose attempt ends in a nack with delay 0, or whose lease lapses,
   * waits the backoff drawn at its claim before its next delivery. A message published with
   * a `retry` of its own follows that one instead. Another transport on the same queue
   * without it retries its own claims' messages at once. Absent or null (the default): no
   * policy, a nack with delay 0 frees the message at once. A bad value fails open with
   * HAREL_ERR_ARGUMENT naming it ('retry.factor is 17; it must be finite, 1..16').
   */
  retry?: RetryOptions | null;
  /**
   * "Now" as epoch seconds (not milliseconds), for tests that move time. Called on the main
   * thread at open and just before each call that asks the library for the time (publish,
   * publishMany, publishWith, publishManyWith, claim, ack, nack, ackAndClaim, deadLetter,
   * redrive, release, pause, resume, setLimit, stats, groups, limits); those calls then run
   * one at a time on this transport, in call order. Default: the system clock, and every
   * call concurrent.
   */
  clock?: () => number;
  /**
   * OpenTelemetry tracing (needs @opentelemetry/api installed): every publish makes a
   * PRODUCER span "publish <prefix>", a child of the active context, whose context the
   * messages carry in their `traceparent` (and `tracestate`) headers; every lease handed
   * out gets a CONSUMER span "process <prefix>", linked to the producer's context (see
   * traceAsParent), which ack, nack, deadLetter and a lost lease end (leaseSpan(lease)
   * gives it). A TracerProvider, or 'global' for the API's global one. Absent or null:
   * tracing off (no span, no header written).
   */
  tracerProvider?: TracerProviderLike | 'global' | null;
  /**
   * With tracerProvider: make a lease's CONSUMER span a child of the producer's context its
   * headers carry, instead of a new root linked to it (the default, false).
   */
  traceAsParent?: boolean;
}

export interface PublishOptions {
  /** 0..4; the first publish into a group fixes it. Default 0. */
  priority?: number;
  /** The group's routing key; the first publish into a group fixes it. Default none. */
  routingKey?: string | null;
  /** The message's headers, in order: [name, value] pairs. Absent, null or []: none. */
  headers?: readonly Header[] | null;
}

/** A message's delivery options: publishWith's, and each element's of publishManyWith. */
export interface DeliveryOptions {
  /**
   * An idempotency key, 1..256 bytes of UTF-8 (the library checks). A key seen within the
   * queue's keyRetention stores nothing: the outcome is the first message's seq, with
   * duplicate true (also after that message was acked). Absent or null: none.
   */
  key?: string | null;
  /** Not delivered before now + this many seconds (0..315360000). Default 0. */
  delay?: number;
  /**
   * Not delivered before this instant: epoch seconds (not milliseconds; for a Date,
   * `date.getTime() / 1000`), by the transport's clock, at most ten years ahead. With
   * `delay`, the later of the two. Absent or null: none.
   */
  notBefore?: number | null;
  /**
   * A unique key: while a message of the queue with `unique.key` is pending (ready,
   * delayed, leased or parked: not yet acked, dead-lettered or purged), the publish stores
   * nothing new and its outcome is that message's seq, duplicate true. Not with `key`.
   * Absent or null: none.
   */
  unique?: UniqueOptions | null;
  /**
   * A time to live: seconds from the publish (> 0, at most 315360000), by the transport's
   * clock. A message no worker has by then (ready, parked, delayed, or its lease lapsed;
   * never one a worker holds, which finishes it) expires: a claim moves it to the dead
   * letters with the reason 'expired' (Stats.expired) and its group goes on behind it. With
   * `expiresAt`, the earlier of the two. An expiry not after the message is due (`delay`,
   * `notBefore`, a debounce) is refused. Absent or null: none (0 is refused).
   */
  ttl?: number | null;
  /**
   * When the message expires, as `ttl`: epoch seconds (not milliseconds; for a Date,
   * `date.getTime() / 1000`), by the transport's clock, after now. Absent or null: none.
   */
  expiresAt?: number | null;
  /**
   * The message's own retry policy (see RetryOptions), in place of the queue's (the open
   * option `retry`), whichever transport claims it. Absent or null: the claiming
   * transport's, if any. A bad value is HAREL_ERR_ARGUMENT naming it ('retry.base is -1;
   * ...', in a batch 'messages[1].retry.base is -1; ...'), nothing written.
   */
  retry?: RetryOptions | null;
}

/**
 * How a retry policy spreads its backoff d: 'full' draws it uniformly in [0, d) (the widest
 * spread, the default), 'equal' in [d/2, d) (never sooner than half), 'none' waits d.
 */
export type Jitter = 'full' | 'equal' | 'none';

/**
 * A retry policy (the open option `retry`, and DeliveryOptions.retry): how long a message
 * waits after a failed attempt, a nack with delay 0 or a lease that lapses, before its next
 * delivery. Claim number n of a message (Lease.attempts) draws the backoff
 * d = min(cap, base * factor^(n-1)), spread by `jitter`, and stores it on the message
 * (MessageInfo.retryDelay). A nack with delay 0 then parks the message for it (its group
 * blocked, Stats.parked); a lapsed lease makes the next claim find it only that long after
 * the lease's end (extend moves both). A nack with a delay > 0 waits the worker's delay
 * instead. Every claim still counts toward maxAttempts. All in seconds, by the transport's
 * clock.
 */
export interface RetryOptions {
  /** The first backoff (after the first claim): 0.001..315360000 seconds (0 is refused). */
  base: number;
  /** Each next backoff's growth, 1..16 (1 keeps it constant). Default 2. */
  factor?: number;
  /** The longest backoff, from `base` to 315360000 seconds. Default an hour, or `base` if longer. */
  cap?: number;
  /** Default 'full'. */
  jitter?: Jitter;
}

/**
 * What a publish with a unique key does when a message with that key is pending: 'keep'
 * it (a duplicate); 'replace' its event and headers, in its place in its group's FIFO
 * (replaced true), unless a worker holds its lease (then kept, a duplicate); 'debounce':
 * replace it and make it due `delay` seconds from now, never later than `maxDelay` seconds
 * after its first publish (a new message is due `delay` seconds from now).
 */
export type UniqueMode = 'keep' | 'replace' | 'debounce';

/** DeliveryOptions.unique: a unique key and its mode. */
export interface UniqueOptions {
  /** 1..256 bytes of UTF-8 (the library checks). Freed when its message is acked, dead-lettered or purged. */
  key: string;
  /** Default 'keep'. */
  mode?: UniqueMode;
  /** Mode 'debounce' only: seconds (0..315360000). Default 0. */
  delay?: number;
  /**
   * Mode 'debounce' only: seconds after the message's first publish past which no publish
   * moves its due time (>= delay, at most 315360000). Default: no cap (315360000).
   */
  maxDelay?: number;
}

export interface PublishWithOptions extends PublishOptions, DeliveryOptions {}

/** What became of one message of publishWith or publishManyWith. A frozen object. */
export interface Published {
  /**
   * The message's seq; a duplicate's is the first message's, or the pending message's with
   * its unique key (a bigint only past 2^53 - 1).
   */
  readonly seq: number | bigint;
  /**
   * True when nothing new was stored: the key had been seen (within the retention, or
   * earlier in the batch), or a message with the unique key is pending (replaced or not).
   */
  readonly duplicate: boolean;
  /**
   * True when the pending message with the unique key took this publish's event and
   * headers (mode 'replace' or 'debounce'); duplicate is true too.
   */
  readonly replaced: boolean;
}

/** One message of publishMany: publish's arguments as one object. */
export interface Message {
  groupId: string;
  /** An object to JSON.stringify, or a JSON text (stored byte for byte). */
  event: unknown;
  /** 0..4; the first message into a group fixes it. Default 0. */
  priority?: number;
  /** The group's routing key; the first message into a group fixes it. Default none. */
  routingKey?: string | null;
  /** The message's headers, in order: [name, value] pairs. Absent, null or []: none. */
  headers?: readonly Header[] | null;
}

/** One message of publishManyWith: publishWith's arguments as one object. */
export interface MessageWith extends Message, DeliveryOptions {}

export interface ClaimOptions {
  /** How long the lease lasts, in seconds (> 0). Default 30. */
  visibility?: number;
  /** Only groups with at least this priority (0..4). Default 0. */
  minPriority?: number;
  /** Only groups with one of these routing keys; empty or absent: any group. */
  routingKeys?: readonly string[] | null;
}

export interface WaitOptions {
  /**
   * How long to wait for something deliverable, in seconds (finite, >= 0). Default 0: look
   * once. The claim resolves as soon as it has claimed; a commit by any Transport of this
   * process wakes it at once, another process's commit to a local file within a few ms.
   */
  wait?: number;
  /**
   * Ends the wait: the claim rejects with `signal.reason` (an AbortError by default) if it
   * had claimed nothing, and resolves what it claimed otherwise. Already aborted: rejects at
   * once, calling nothing.
   */
  signal?: AbortSignal | null;
}

export interface WaitingClaimOptions extends ClaimOptions, WaitOptions {}

export interface ClaimManyOptions extends WaitingClaimOptions {
  /** At most this many leases, each the head of a different group: 1..1000. */
  max: number;
}

export interface AckAndClaimManyOptions extends ClaimOptions {
  /** At most this many new leases: 1..1000. */
  max: number;
}

/** One lease's outcome in ackMany and ackAndClaimMany, in the order of the leases given. */
export type AckOutcome<L extends LeaseRef = LeaseRef> =
  | { readonly lease: L; readonly ok: true; readonly error: null }
  /** Not acked: `error.code` is 'HAREL_ERR_LEASE_LOST' (acked or nacked already, or lapsed and claimed by another). */
  | { readonly lease: L; readonly ok: false; readonly error: HarelError };

export interface AckAndClaimManyResult<L extends LeaseRef = LeaseRef, E = unknown> {
  readonly acked: readonly AckOutcome<L>[];
  /** The new leases; empty when nothing is deliverable. */
  readonly leases: Lease<E>[];
}

export interface KeepAliveOptions {
  /** Each extend makes the lease run to now + this many seconds. Default 30. */
  visibility?: number;
  /** Seconds between extends (> 0). Default visibility / 3. */
  every?: number;
  /** Stops the beats when it aborts (as stop() does). */
  signal?: AbortSignal | null;
}

/** The handle of Transport.keepAlive: `using alive = t.keepAlive(lease)` stops it at the end of the scope. */
export interface KeepAlive {
  /** Aborts, with the HarelError as its reason, when the lease is lost or can no longer be extended. */
  readonly signal: AbortSignal;
  /** True once stopped: by stop(), by the options' signal, or because the lease was lost. */
  readonly stopped: boolean;
  /** Stops extending; an extend already on its way lands, and its outcome is ignored. */
  stop(): void;
  [Symbol.dispose](): void;
}

export interface NackOptions {
  /**
   * 0 (the default): claimable at once, or under a retry policy parked for the backoff its
   * claim drew (peek's MessageInfo.retryDelay); > 0: parked (its group blocked) for this
   * many seconds.
   */
  delay?: number;
}

/** A claimed message. A copy: the library's memory is already freed. */
export interface Lease<E = unknown> {
  /** The message's seq (FIFO order and the lease handle): a number, a bigint only past 2^53 - 1. */
  readonly seq: number | bigint;
  /** The group, whole: it may hold NUL characters if another program stored them. */
  readonly groupId: string;
  /** JSON.parse(eventJson); undefined when that text isn't JSON JavaScript parses. */
  readonly event: E;
  /** The event's JSON text, byte for byte as published (NUL characters included). */
  readonly eventJson: string;
  /** Who holds the lease. */
  readonly workerId: string;
  /** Epoch seconds the lease runs to; Transport.extend moves it. */
  readonly lockExpiry: number;
  /** How many times the message has been claimed, this claim included (1 on its first). */
  readonly attempts: number;
  /** The headers it was published with, in order, byte for byte ([] for none). Frozen. */
  readonly headers: readonly Header[];
}

/**
 * Which dead letters redrive and purgeDead take: exactly one of these (the library checks).
 * On a sharded queue (Transport.openShards) `seqs` is refused with HAREL_ERR_ARGUMENT.
 */
export type DeadLetterSelection =
  | { readonly all: true }
  | { readonly groupId: string }
  | { readonly seqs: readonly (number | bigint)[] };

/**
 * A group's state, from its head; 'paused' when a pause names it, whatever its head; 'held'
 * when its head is free but a limit of its routing key has no room; 'retrying' when its
 * head's lease lapsed and it waits its retry backoff.
 */
export type GroupState = 'ready' | 'leased' | 'parked' | 'delayed' | 'paused' | 'held' | 'retrying';

/**
 * The counts of one priority level of Stats (a paused group counts at its own priority):
 * `ready + leased + parked + delayed + paused` is `groups`.
 */
export interface PriorityStats {
  readonly priority: number;
  readonly groups: number;
  readonly ready: number;
  readonly leased: number;
  readonly parked: number;
  /**
   * `groups - ready - leased - parked - paused`: the level's groups whose head is delayed,
   * with its groups a limit holds and those waiting a retry's backoff (the library counts
   * these apart over the whole queue only: Stats.delayed, held and retrying).
   */
  readonly delayed: number;
  /** Groups a pause names (Transport.pause), whatever their head. */
  readonly paused: number;
}

/** Exact counts of the queue at one instant. A frozen copy. */
export interface Stats {
  /** When they were taken: epoch seconds, by the transport's clock. */
  readonly now: number;
  readonly messages: number;
  readonly groups: number;
  /** Groups whose head can be claimed now (not those a limit holds, nor those retrying). */
  readonly ready: number;
  /** Groups whose head is leased. */
  readonly leased: number;
  /** Groups whose head is parked (a nack with a delay). */
  readonly parked: number;
  /** Groups whose head was published with a delay or notBefore that has not passed. */
  readonly delayed: number;
  /** Groups a pause names (Transport.pause), whatever their head; in none of ready, leased, parked and delayed. */
  readonly paused: number;
  /**
   * Groups a limit holds (Transport.setLimit): their routing key had no room when a claim
   * met them; in none of the counts above. LimitInfo.held counts them by key.
   */
  readonly held: number;
  /**
   * Groups whose head's lease lapsed and waits its retry policy's backoff (the `retry`
   * option) before its next claim; in none of the counts above. `ready + leased + parked +
   * delayed + paused + held + retrying` is `groups`.
   */
  readonly retrying: number;
  /** Messages in the dead letters. */
  readonly dead: number;
  /** Of `dead`, the messages that expired undelivered (`ttl`, `expiresAt`): the reason 'expired'. */
  readonly expired: number;
  /** Seconds since the oldest message of a ready group was published; null when none is ready or its writer stamps no time. */
  readonly oldestReadyAge: number | null;
  /** The seq of the oldest message of a ready group, also when its age is not known; null when none is ready. */
  readonly oldestReadySeq: number | null;
  /** The soonest end of a lease, a park or a delay, epoch seconds; null when there is none. */
  readonly nextReleaseAt: number | null;
  /** The soonest due time of a delayed head, epoch seconds; null when no group is delayed. */
  readonly nextDueAt: number | null;
  /** One entry per priority level that has groups, lowest first. */
  readonly byPriority: readonly PriorityStats[];
}

/**
 * One operation's calls by duration, cumulative as Prometheus histograms are. Failed calls
 * count; calls refused for a bad argument do not.
 */
export interface Histogram {
  /** The buckets' upper bounds, seconds, the same for every histogram: 0.0001 .. 10 (16). */
  readonly bounds: readonly number[];
  /** `buckets[i]`: the calls that took at most `bounds[i]` seconds. */
  readonly buckets: readonly number[];
  /** Every call (the `+Inf` bucket). */
  readonly count: number;
  /** Their total, seconds. */
  readonly sum: number;
}

/**
 * A histogram per operation, of the library's C calls. `claimWait` holds the C claims that
 * wait, which this binding never makes (its waiting claims wait on the event loop and make
 * claims without waiting, in `claim`): 0 here, kept for the other bindings' shape.
 */
export interface Latency {
  /** publish, publishMany, publishWith and publishManyWith; publishes that shared a commit are one call. */
  readonly publish: Histogram;
  readonly claim: Histogram;
  readonly claimWait: Histogram;
  /** ack and ackMany. */
  readonly ack: Histogram;
  /** ackAndClaim and ackAndClaimMany. */
  readonly ackAndClaim: Histogram;
  readonly nack: Histogram;
  readonly extend: Histogram;
  readonly deadLetter: Histogram;
}

/** What one transport counted since it was opened; counters only go up. A frozen copy. */
export interface Metrics {
  /** Messages committed by publish, publishMany, publishWith and publishManyWith (messages, not calls; not duplicates). */
  readonly published: number;
  /** Leases handed out, by every kind of claim. */
  readonly claimed: number;
  /** Messages acked (ack, ackMany, the acks of ackAndClaim*). */
  readonly acked: number;
  /** Nacks that gave the message back at once (delay 0). */
  readonly nacked: number;
  /** Nacks that parked the message (delay > 0). */
  readonly parked: number;
  /** Messages a worker moved to the dead letters (deadLetter). */
  readonly deadLettered: number;
  /** Heads a claim moved to the dead letters instead of handing them out (over maxAttempts, or not UTF-8). */
  readonly deadLetteredByClaim: number;
  /** Acks, nacks, extends and dead letters refused with HAREL_ERR_LEASE_LOST. */
  readonly lostLeases: number;
  /** Pauses after the database answered busy, before trying again. */
  readonly busyRetries: number;
  /**
   * Groups a claim passed over and held because their routing key had no room under its
   * limit (setLimit), each time one is held.
   */
  readonly limitHolds: number;
  readonly latency: Latency;
}

/** One group of a groups() page. */
export interface GroupInfo {
  readonly groupId: string;
  readonly state: GroupState;
  /** How many messages it holds. */
  readonly depth: number;
  readonly headSeq: number | bigint;
  /** Seconds since the head was published; null when its writer stamps no time. */
  readonly headAge: number | null;
  /** The worker holding the head's lease (also when paused, a lease taken before the pause); null otherwise. */
  readonly holder: string | null;
  /** When the lease or park ends, or the delayed head is due, epoch seconds; null when ready. */
  readonly lockExpiry: number | null;
  readonly priority: number;
  readonly routingKey: string | null;
  /** How many times the head has been claimed. */
  readonly headAttempts: number;
  /** The shard the group was found on (Transport.openShards); 0 when the queue is not sharded. */
  readonly shard: number;
}

/** One message of a peek() page. */
export interface MessageInfo<E = unknown> {
  readonly seq: number | bigint;
  /** JSON.parse(eventJson); undefined when that text isn't JSON JavaScript parses. */
  readonly event: E;
  readonly eventJson: string;
  readonly attempts: number;
  /** The worker holding it, '__parked__', or '__delayed__' (published with a delay); null when free. */
  readonly lockedBy: string | null;
  /** When its lease or park ends, or it is due, epoch seconds; null when free. */
  readonly lockExpiry: number | null;
  /** When it was published, epoch seconds; null when its writer stamps no time. */
  readonly publishedAt: number | null;
  /** The headers it was published with, in order ([] for none). */
  readonly headers: readonly Header[];
  /**
   * The backoff its last claim drew under a retry policy (the open option `retry`, or its
   * own), seconds: what a nack with delay 0 or its lapsed lease waits. null when none (no
   * policy, or never claimed).
   */
  readonly retryDelay: number | null;
}

/**
 * A message moved out of its group: it kept failing (a worker's deadLetter, maxAttempts),
 * or it expired undelivered (reason 'expired').
 */
export interface DeadLetter<E = unknown> {
  /** Its seq in the queue before it died. */
  readonly seq: number | bigint;
  readonly groupId: string;
  readonly event: E;
  readonly eventJson: string;
  /** How many times it had been claimed. */
  readonly attempts: number;
  /** The worker that held it last; null when it was parked or never claimed. */
  readonly lastWorker: string | null;
  readonly reason: string;
  /** When it was moved, epoch seconds. */
  readonly deadAt: number;
  /**
   * The shard it is on (Transport.openShards); 0 when the queue is not sharded. On a
   * sharded queue redrive and purgeDead take no seqs (a seq names a letter of one shard).
   */
  readonly shard: number;
  /** The headers it was published with, in order ([] for none); a redrive keeps them. */
  readonly headers: readonly Header[];
}

/**
 * An acked message, as the archive keeps it (Transport.archive): what a transport opened
 * with archiveRetention copied at its ack. A frozen object.
 */
export interface Archived<E = unknown> {
  /** Its seq in the queue (of its shard, when the queue is sharded): a group's history reads in seq order. */
  readonly seq: number | bigint;
  readonly groupId: string;
  readonly event: E;
  readonly eventJson: string;
  /** The headers it was published with, in order ([] for none). */
  readonly headers: readonly Header[];
  /** How many times it had been claimed, the acked claim included. */
  readonly attempts: number;
  /** The worker that acked it. */
  readonly workerId: string;
  /** When it was published, epoch seconds; null when its writer stamps no time. */
  readonly publishedAt: number | null;
  /** When the claim that was acked took it, epoch seconds; null when unknown. */
  readonly claimedAt: number | null;
  /** When it was acked, epoch seconds. */
  readonly ackedAt: number;
  /** The shard it is on (Transport.openShards); 0 when the queue is not sharded. */
  readonly shard: number;
}

export interface PageOptions {
  /** The `next` of the page before; absent or null for the first page. */
  cursor?: string | null;
  /** At most this many items, 1..10000. Default 100. */
  limit?: number;
}

export interface GroupsOptions extends PageOptions {
  /** Only the groups in this state; absent, null or 'any': every group. */
  state?: GroupState | 'any' | null;
}

export interface DeadLettersOptions extends PageOptions {
  /** Only this group's dead letters; absent or null: every group's. */
  groupId?: string | null;
}

export interface ArchiveOptions extends PageOptions {
  /** Only this group's archived messages (its history); absent or null: every group's. */
  groupId?: string | null;
}

/** A page of a listing: its items, and the cursor of the next page (null on the last). */
export interface GroupPage {
  readonly groups: readonly GroupInfo[];
  readonly next: string | null;
}
export interface MessagePage<E = unknown> {
  readonly messages: readonly MessageInfo<E>[];
  readonly next: string | null;
}
export interface DeadLetterPage<E = unknown> {
  readonly letters: readonly DeadLetter<E>[];
  readonly next: string | null;
}
export interface ArchivePage<E = unknown> {
  readonly messages: readonly Archived<E>[];
  readonly next: string | null;
}

/**
 * What Transport.pause and resume name, exactly one of: the whole queue (every group, and
 * every group made while the pause lasts), one group by id (whether or not it has
 * messages now), or every group published with a routing key (new ones too). Any other
 * shape rejects with HAREL_ERR_ARGUMENT before any call; an empty group id or routing key
 * too, from the library.
 */
export type PauseTarget =
  | { readonly queue: true; readonly groupId?: never; readonly routingKey?: never }
  | { readonly groupId: string; readonly queue?: never; readonly routingKey?: never }
  | { readonly routingKey: string; readonly queue?: never; readonly groupId?: never };

/** What a pause names: PauseTarget's key, 'group' for `groupId`. */
export type PauseKind = 'queue' | 'group' | 'routingKey';

/** One pause in force (Transport.pauses). A frozen object. */
export type Pause =
  | { readonly kind: 'queue'; readonly name: ''; readonly pausedAt: number }
  | {
      readonly kind: 'group' | 'routingKey';
      /** The group id or the routing key. */
      readonly name: string;
      /** When it was paused: epoch seconds, by the clock of the transport that paused. */
      readonly pausedAt: number;
    };

/**
 * A rate limit (Transport.setLimit): a token bucket of `perSecond` tokens a second (> 0),
 * keeping at most `burst` (>= 1), each at most MAX_LIMIT; each lease of the key takes a
 * token. A key idle for a while may take `burst` leases at once, then one per 1/perSecond s.
 */
export interface Rate {
  readonly perSecond: number;
  readonly burst: number;
}

/**
 * What Transport.setLimit sets on a routing key: either kind or both (a kind absent or
 * null is off; neither rejects with HAREL_ERR_ARGUMENT, from the library).
 */
export interface Limit {
  /** At most this many of the key's messages leased at once, across every worker of every process (1..MAX_LIMIT). */
  readonly concurrency?: number | null;
  /** Leases of the key's messages taken at most at this rate. */
  readonly rate?: Rate | null;
}

/** One limit in force and its use now (Transport.limits). A frozen object. */
export interface LimitInfo {
  readonly routingKey: string;
  /** The concurrency limit; null when none is set. */
  readonly concurrency: number | null;
  /** The rate limit (a frozen Rate); null when none is set. */
  readonly rate: Rate | null;
  /** The key's leases running now (with a concurrency limit; else 0). */
  readonly inUse: number;
  /** The bucket's tokens now (with a rate limit); null without one. */
  readonly tokens: number | null;
  /** How many of the key's groups claims hold until the key has room. */
  readonly held: number;
}

/** What ack and nack need of a lease (a Lease, or the same fields copied elsewhere). */
export interface LeaseRef {
  readonly seq: number | bigint;
  /** Passed whole, as its UTF-8 bytes with their length: NUL characters included. */
  readonly groupId: string;
  readonly workerId: string;
}

/**
 * A parameter of Tx.execute and Tx.query: null or undefined (NULL), a boolean (INTEGER 0 or
 * 1), a number (INTEGER when integral and within int64, else REAL; NaN and the infinities
 * are refused), a bigint within int64 (INTEGER), a string without NUL characters (TEXT), a
 * Buffer or Uint8Array (BLOB).
 */
export type SqlParam = null | undefined | boolean | number | bigint | string | Uint8Array;

/**
 * A column of a row Tx.query resolves: null, a number (an INTEGER, a bigint only past
 * 2^53 - 1; a REAL), a string (TEXT) or a Buffer (BLOB, a copy).
 */
export type SqlValue = null | number | bigint | string | Buffer;

/** What Transport.transaction resolves: what the body returned, and each publish's outcome in order. */
export interface TransactionResult<T> {
  value: T;
  published: Published[];
}

/**
 * An application's transaction on the queue's database (Transport.begin): its statements
 * and its publishes, committed together or not at all. execute and publish queue their
 * work, sent in order with the next query or with the commit; the first query begins the
 * transaction, which from then holds the transport's connection and the write lock until
 * commit or rollback: keep it short. Its calls run on the thread pool one after another,
 * in call order. Any database error of a query or the commit ends it, rolled back; after
 * it ended every call rejects with HAREL_ERR_ARGUMENT naming why, but rollback, which
 * resolves.
 */
export declare class Tx {
  private constructor();

  /**
   * Queues one statement (no rows wanted: its rows-changed count is not reported; query it
   * with RETURNING when it matters) with its parameters (`?1`, `?2`, ... or `?`). Its error
   * fails the next query or the commit. A bad argument rejects with HAREL_ERR_ARGUMENT and
   * the transaction goes on.
   */
  execute(sql: string, params?: readonly SqlParam[] | null): Promise<void>;

  /** Sends what was queued and runs `sql` (a SELECT, or a write with RETURNING): its rows. */
  query(sql: string, params?: readonly SqlParam[] | null): Promise<SqlValue[][]>;

  /**
   * Queues a publish, with Transport.publish's arguments (checked now; its headers too, by
   * the library); its outcome comes from commit. With tracing, its PRODUCER span ends when
   * the commit returns (an error status if it failed, or on rollback).
   */
  publish(groupId: string, event: unknown, options?: PublishOptions): Promise<void>;

  /**
   * Queues a publish, with Transport.publishWith's arguments and delivery options (checked
   * now; an expiry not after now or not after the message is due, by the commit's own now
   * at the latest, which then fails). A unique key's duplicate is not an error: commit's
   * outcome for it says so.
   */
  publishWith(groupId: string, event: unknown, options?: PublishWithOptions): Promise<void>;

  /**
   * Sends what was queued and commits: all of it or, on any error, nothing. Resolves each
   * publish's outcome, in publish order. The transaction ends either way.
   */
  commit(): Promise<Published[]>;

  /** Ends the transaction keeping nothing of it; resolves at once on one that has ended. */
  rollback(): Promise<void>;

  /** `await using tx = t.begin()`: rollback() at the end of the scope, unless committed. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A durable, group-ordered queue in a libSQL database. Its calls run on the libuv thread
 * pool, concurrently (calls in flight together take effect in no set order; await one to
 * order the next), except the clock-reading calls of a transport with a JS clock.
 */
export declare class Transport {
  private constructor();

  /**
   * Opens (and by default creates) the queue at `path`: a file, ':memory:', or a libsql://,
   * http:// or https:// URL. Runs on the thread pool: the event loop goes on while it waits
   * (for the write lock, a server).
   */
  static open(path: string, options?: OpenOptions): Promise<Transport>;

  /**
   * Opens one queue sharded over `databases` (1..256 paths or URLs, each as open takes it,
   * or paths of embedded replicas with `syncUrls` naming each one's primary, in shard
   * order; the same options for each otherwise): a group lives on the shard shardOf(its id,
   * databases.length) names, claims serve the shards in turn, stats and listings add them
   * up. The first open of empty databases makes them a set; every later open must pass the
   * same list in the same order. Rejects with HAREL_ERR_ARGUMENT, the library's message
   * naming the database ("databases[i] (...)"), for an empty list or one over 256, an empty
   * or repeated entry, or a list that does not match the set (a database missing, one
   * extra, the order changed, another queue's, a database with messages that is in no
   * set). On a sharded queue a transaction (begin, transaction) is refused at its first
   * call, redrive and purgeDead by seqs are refused, and publishMany commits one
   * transaction per shard. Runs on the thread pool, as open does.
   */
  static openShards(databases: readonly string[], options?: OpenOptions): Promise<Transport>;

  /** The path or URL it was opened with (openShards: its first database). */
  readonly path: string;
  /**
   * How many databases its queue is sharded over: 1 when opened with open. Synchronous
   * (read in memory); throws HAREL_ERR_CLOSED after close().
   */
  readonly shardCount: number;
  /** True once close() has been called. */
  readonly closed: boolean;

  /**
   * Appends `event` (an object to JSON.stringify, or a JSON text) to the group's FIFO.
   * Publishes in flight together that reach the library while another commits share its
   * next commit (the library's group commit; not on a transport with a JS clock, whose
   * publishes go one at a time: see OpenOptions.clock); each promise settles with its own
   * outcome.
   * No NUL character in groupId, event or routingKey (the C call takes NUL-terminated text).
   */
  publish(groupId: string, event: unknown, options?: PublishOptions): Promise<void>;

  /**
   * Appends `messages` in order, each as publish would, in one transaction: all of them or
   * none (one bad message rejects the batch with HAREL_ERR_ARGUMENT naming its index), with
   * one commit for the batch. Within a group the batch's order is the FIFO order. An empty
   * array does nothing. On a sharded queue (openShards): one transaction per shard.
   */
  publishMany(messages: readonly Message[]): Promise<void>;

  /**
   * publish with delivery options: an idempotency `key` (a key seen within the
   * keyRetention stores nothing and resolves the first message's seq, duplicate true: a
   * publish that failed with HAREL_ERR_CONNECT is safe to retry with its key), a `delay`
   * and a `notBefore` (the message keeps its place in its group's FIFO: the group's later
   * messages wait behind it), a `unique` key (a message with it pending stores nothing new:
   * kept, replaced or debounced by its mode), a `ttl` or an `expiresAt` (a message no worker
   * has by then is moved to the dead letters with the reason 'expired'), a `retry` policy of
   * its own (in place of the queue's). Its own transaction: no shared commits.
   */
  publishWith(groupId: string, event: unknown, options?: PublishWithOptions): Promise<Published>;

  /**
   * publishMany with publishWith's options per message, in one transaction: every message
   * stored or found a duplicate, or nothing written (a bad message rejects the batch with
   * HAREL_ERR_ARGUMENT naming its index). A key or unique key met earlier in the batch
   * makes the later message a duplicate of the earlier one (a unique key's, replaced by its
   * mode). Resolves an outcome per message, in order.
   * On a sharded queue (openShards): one transaction per shard.
   */
  publishManyWith(messages: readonly MessageWith[]): Promise<Published[]>;

  /**
   * Leases the next deliverable message to `workerId`, or resolves null when there is none
   * (with `wait`: when none came within it). See WaitOptions for `wait` and `signal`.
   */
  claim<E = unknown>(workerId: string, options?: WaitingClaimOptions): Promise<Lease<E> | null>;

  /**
   * Leases up to `max` messages, each the head of a different group, in serving order, in
   * one transaction; waits up to `wait` seconds while there is none. Resolves them, an empty
   * array when nothing came within the wait.
   */
  claimMany<E = unknown>(workerId: string, options: ClaimManyOptions): Promise<Lease<E>[]>;

  /**
   * Acks every lease in one transaction (one commit), with an outcome per lease: a lost one
   * (ok false, HAREL_ERR_LEASE_LOST) does not stop the others. Rejects, acking none, for a
   * lease the library refuses (HAREL_ERR_ARGUMENT naming its index) or a failed transaction.
   */
  ackMany<L extends LeaseRef>(leases: readonly L[]): Promise<AckOutcome<L>[]>;

  /**
   * ackMany, then claimMany without waiting, in one transaction: a batch worker's loop with
   * one commit per batch. A lost lease does not stop the claim.
   */
  ackAndClaimMany<L extends LeaseRef, E = unknown>(
    leases: readonly L[],
    workerId: string,
    options: AckAndClaimManyOptions,
  ): Promise<AckAndClaimManyResult<L, E>>;

  /**
   * Makes the lease run to now + `visibility` seconds; resolves that time, which a Lease
   * from a claim then reads as its lockExpiry too. HAREL_ERR_LEASE_LOST if it was acked,
   * nacked, or lapsed and claimed by another worker (a lapsed lease no one claimed since is
   * still yours and is extended).
   */
  extend(lease: LeaseRef, visibility: number): Promise<number>;

  /**
   * Extends `lease` while its handler runs, until stop(): by `visibility` seconds, every
   * `every` seconds, the first time once half of what is left of the lease has passed (so a
   * quick handler costs nothing). Watch the handle's `signal`: it aborts if the lease is
   * lost. HAREL_ERR_BUSY and HAREL_ERR_CONNECT are retried at the next beat.
   */
  keepAlive(lease: LeaseRef, options?: KeepAliveOptions): KeepAlive;

  /**
   * Ends the waits of the claims made so far on this transport: each rejects with
   * HAREL_ERR_INTERRUPTED, or resolves what it had claimed. Later claims wait as usual.
   */
  interrupt(): void;

  /** Deletes the leased message. Rejects with HAREL_ERR_LEASE_LOST if it is no longer this worker's. */
  ack(lease: LeaseRef): Promise<void>;

  /**
   * Acks `lease` and leases the next message to `workerId` in one transaction (one commit
   * instead of two): the worker loop's fast path. Resolves null when the ack succeeded and
   * nothing is deliverable; if the ack fails (HAREL_ERR_LEASE_LOST), nothing is claimed.
   */
  ackAndClaim<E = unknown>(lease: LeaseRef, workerId: string, options?: ClaimOptions): Promise<Lease<E> | null>;

  /** Gives the message back, at once or after `delay` seconds. Same HAREL_ERR_LEASE_LOST rule. */
  nack(lease: LeaseRef, options?: NackOptions): Promise<void>;

  /**
   * Moves the leased message to the dead letters with `reason` (not empty): the worker's
   * verdict that it will never succeed. Its group goes on at once. Same HAREL_ERR_LEASE_LOST rule.
   */
  deadLetter(lease: LeaseRef, reason: string): Promise<void>;

  /**
   * Moves dead letters back into their groups as the newest messages (claimed 0 times, the
   * group remade with its old priority and routing key). Resolves how many moved.
   */
  redrive(which: DeadLetterSelection): Promise<number>;

  /** Deletes dead letters. Resolves how many. */
  purgeDead(which: DeadLetterSelection): Promise<number>;

  /** Deletes a group's messages and the group (a lease on one is lost). Resolves how many messages. */
  purgeGroup(groupId: string): Promise<number>;

  /** Deletes every message and group; dead letters stay. Resolves how many messages. */
  purge(): Promise<number>;

  /** Ends the lease or park on a group's head now. Resolves false when nothing was held. */
  release(groupId: string): Promise<boolean>;

  /**
   * Pauses `target`: no claim takes the groups it names (their messages stay in order; a
   * lease taken before finishes; publishes go on). Stored in the database: every process
   * sees it, and it outlives restarts, until resume. On a sharded queue, on every shard.
   * Resolves true when the pause is new, false when it was there already.
   */
  pause(target: PauseTarget): Promise<boolean>;

  /**
   * Ends the pause `target` names: the groups it paused that no other pause names are
   * served again, each from its head, at once (a group paused on its own stays paused when
   * the queue is resumed, and the other way round). Resolves false when there was no such
   * pause (nothing changed).
   */
  resume(target: PauseTarget): Promise<boolean>;

  /**
   * The pauses in force, the queue's first, then by kind and name (a queue opened with
   * createSchema false whose database lacks the pauses table: none). A frozen array.
   */
  pauses(): Promise<readonly Pause[]>;

  /**
   * Limits the groups of `routingKey` (the key they were published with), for every worker
   * of every process (not harel 0.9's Python workers): at most `concurrency` of their
   * messages leased at once, leases taken at most at `rate`. A claim passes over a group
   * whose key has no room and holds it; the next claims give the held groups back, the one
   * served longest ago first, once the key has room (an ack, nack or dead letter, a lease
   * lapsing, a token due, a larger limit). Replaces the key's limits (a kind not given is
   * off); stored in the database, in force at every process's next claim, until removed.
   * On a sharded queue every shard holds it for its own groups: the key's ceiling over the
   * queue is the limit times the shards. Bad input rejects with HAREL_ERR_ARGUMENT, the
   * queue unchanged.
   */
  setLimit(routingKey: string, limit: Limit): Promise<void>;

  /**
   * Removes `routingKey`'s limits: its held groups are served again at once. A key without
   * a limit rejects with HAREL_ERR_ARGUMENT. On a sharded queue, on every shard.
   */
  removeLimit(routingKey: string): Promise<void>;

  /**
   * The limits in force in routing key order, each with its use now (a sharded queue's
   * summed over its shards). A frozen array.
   */
  limits(): Promise<readonly LimitInfo[]>;

  /** Exact counts of the queue now: one read without the write lock. */
  stats(): Promise<Stats>;

  /**
   * What this transport counted since it was opened. Synchronous: it reads counters in
   * memory, no database, no lock. Throws HAREL_ERR_CLOSED after close().
   */
  metrics(): Metrics;

  /** A page of groups in group id order, claiming nothing. */
  groups(options?: GroupsOptions): Promise<GroupPage>;

  /** A page of a group's messages, oldest first, claiming nothing (an unknown group: empty). */
  peek<E = unknown>(groupId: string, options?: PageOptions): Promise<MessagePage<E>>;

  /** A page of dead letters in the order they had in the queue. */
  deadLetters<E = unknown>(options?: DeadLettersOptions): Promise<DeadLetterPage<E>>;

  /**
   * A page of the archive in seq order: one group's history with `groupId`, or every
   * group's (a sharded queue's shard after shard). It holds what was acked by a transport
   * opened with archiveRetention, for that long; an empty page when nothing is archived.
   */
  archive<E = unknown>(options?: ArchiveOptions): Promise<ArchivePage<E>>;

  /**
   * Begins a transaction (synchronous: nothing is sent, no lock taken before its first query
   * or its commit). A transport runs one transaction at a time: while one holds the
   * connection (after a query), the transport's other calls and another transaction's query
   * or commit wait up to the busy timeout, then reject with HAREL_ERR_BUSY. On a sharded
   * queue (openShards) its first call rejects with HAREL_ERR_ARGUMENT: a transaction runs
   * on one database.
   */
  begin(): Tx;

  /**
   * Runs `body(tx)` in a new transaction and commits when it resolves; when it throws or
   * rejects, rolls back and rejects with the same error. Inside `body` this transport's own
   * calls (and begin) are refused at once with HAREL_ERR_BUSY: use the tx's.
   */
  transaction<T>(body: (tx: Tx) => T | PromiseLike<T>): Promise<TransactionResult<Awaited<T>>>;

  /**
   * Closes once the calls already made have finished (a handle is never closed under a call),
   * interrupting the claims that wait first (HAREL_ERR_INTERRUPTED); later calls reject with
   * HAREL_ERR_CLOSED. Its open transactions are rolled back: their calls then reject with
   * HAREL_ERR_ARGUMENT, but rollback. Again: the same promise.
   */
  close(): Promise<void>;

  /** `await using t = await Transport.open(...)`: close() at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The library's version, "MAJOR.MINOR.PATCH". */
export declare function version(): string;

/** Which library file was loaded, and its version. */
export declare function libraryInfo(): { path: string; version: string };

/** The idempotent CREATE statements of a fresh schema under `prefix` (default 'harel'). */
export declare function schemaSql(prefix?: string): string;

/** The statements that upgrade a harel 0.9 groups table (adds routing_key). Not idempotent. */
export declare function schemaUpgradeSql(prefix?: string): string;

/**
 * The shard (0..shards-1) that holds `groupId` in a queue sharded over `shards` databases
 * (1..256): FNV-1a 64 of the id's UTF-8 bytes, modulo `shards` (the library computes it).
 * Synchronous, no transport. An empty id or `shards` outside 1..256 throws HAREL_ERR_ARGUMENT.
 */
export declare function shardOf(groupId: string, shards: number): number;

/**
 * The CONSUMER span of a lease handed out by a Transport opened with tracerProvider, until
 * ack, nack, deadLetter or a lost lease ends it; undefined otherwise. An OpenTelemetry Span:
 * `leaseSpan<Span>(lease)`, and `trace.setSpan(context.active(), span)` to run the handler's
 * spans under it.
 */
export declare function leaseSpan<S = unknown>(lease: LeaseRef): S | undefined;
