// Type declarations for harel-transport (CommonJS; `import { Transport } from 'harel-transport'`
// works from TypeScript and from ES modules).

/** The codes a HarelError can carry: the library's harel_status names, and the binding's own. */
export type HarelErrorCode =
  | 'HAREL_ERR_ARGUMENT'
  | 'HAREL_ERR_DATABASE'
  | 'HAREL_ERR_BUSY'
  | 'HAREL_ERR_LEASE_LOST'
  | 'HAREL_ERR_CONNECT'
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
  HAREL_ERR_PANIC: -99;
}>;

/** The visibility a claim uses when none is given: 30 seconds. */
export declare const DEFAULT_VISIBILITY: 30;

export interface OpenOptions {
  /** Table-name prefix: a letter or '_', then letters, digits or '_', at most 30. Default 'harel'. */
  prefix?: string;
  /** Create the tables (and upgrade a harel 0.9 schema) at open. Default true. */
  createSchema?: boolean;
  /** Make `path` an embedded replica of the libSQL server at this URL. */
  syncUrl?: string | null;
  /** The token for a libSQL server (a remote URL or a replica's primary). */
  authToken?: string | null;
  /** How often an embedded replica pulls from its primary, in seconds (> 0). */
  syncInterval?: number;
  /** How long a write waits for the write lock before HAREL_ERR_BUSY, in seconds. Default 5. */
  busyTimeout?: number;
  /** Local files: durable commits (synchronous FULL, the default) or faster NORMAL (false). */
  synchronousFull?: boolean;
  /**
   * "Now" as epoch seconds (not milliseconds), for tests that move time. Called on the main
   * thread at open and just before each claim, ack, nack and ackAndClaim; those calls then
   * run one at a time on this transport, in call order (publishes stay concurrent). Default:
   * the system clock, and every call concurrent.
   */
  clock?: () => number;
}

export interface PublishOptions {
  /** 0..4; the first publish into a group fixes it. Default 0. */
  priority?: number;
  /** The group's routing key; the first publish into a group fixes it. Default none. */
  routingKey?: string | null;
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
}

export interface ClaimOptions {
  /** How long the lease lasts, in seconds (> 0). Default 30. */
  visibility?: number;
  /** Only groups with at least this priority (0..4). Default 0. */
  minPriority?: number;
  /** Only groups with one of these routing keys; empty or absent: any group. */
  routingKeys?: readonly string[] | null;
}

export interface NackOptions {
  /** 0 (the default): claimable at once; > 0: parked (its group blocked) for this many seconds. */
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
  /** Epoch seconds the lease runs to. */
  readonly lockExpiry: number;
  /** How many times the message has been claimed, this claim included (1 on its first). */
  readonly attempts: number;
}

/** What ack and nack need of a lease (a Lease, or the same fields copied elsewhere). */
export interface LeaseRef {
  readonly seq: number | bigint;
  /** Passed whole, as its UTF-8 bytes with their length: NUL characters included. */
  readonly groupId: string;
  readonly workerId: string;
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

  /** The path or URL it was opened with. */
  readonly path: string;
  /** True once close() has been called. */
  readonly closed: boolean;

  /**
   * Appends `event` (an object to JSON.stringify, or a JSON text) to the group's FIFO.
   * Publishes in flight together that reach the library while another commits share its
   * next commit (the library's group commit); each promise settles with its own outcome.
   * No NUL character in groupId, event or routingKey (the C call takes NUL-terminated text).
   */
  publish(groupId: string, event: unknown, options?: PublishOptions): Promise<void>;

  /**
   * Appends `messages` in order, each as publish would, in one transaction: all of them or
   * none (one bad message rejects the batch with HAREL_ERR_ARGUMENT naming its index), with
   * one commit for the batch. Within a group the batch's order is the FIFO order. An empty
   * array does nothing.
   */
  publishMany(messages: readonly Message[]): Promise<void>;

  /** Leases the next deliverable message to `workerId`, or resolves null when there is none. */
  claim<E = unknown>(workerId: string, options?: ClaimOptions): Promise<Lease<E> | null>;

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
   * Closes once the calls already made have finished (a handle is never closed under a call);
   * later calls reject with HAREL_ERR_CLOSED. Again: the same promise.
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
