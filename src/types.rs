//! The values the library hands out and takes: a lease, a message to publish, and what
//! a look inside the queue returns (counts, pages of groups, of messages, of dead letters).

use crate::headers::Headers;

/// The lease on one message. `ack` and `nack` read only `seq`, `group_id` and `worker_id`,
/// so a lease rebuilt from those (say, by a binding that copied them) works too.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    /// The message's seq: FIFO order and the lease handle.
    pub seq: i64,
    pub group_id: String,
    /// The event, JSON text byte for byte as published.
    pub event: String,
    /// Who holds the lease.
    pub worker_id: String,
    /// Epoch seconds the lease runs to.
    pub lock_expiry: f64,
    /// How many times the message has been claimed, this claim included (1 on its first).
    /// Claims by harel's Python transports are not counted. Not read by ack and nack.
    pub attempts: i64,
    /// The headers it was published with, in order (none for a message harel published).
    /// Not read by ack and nack.
    pub headers: Headers,
}

/// One message for `publish_many`: the arguments of `publish`, borrowed for the call.
/// The rules are `publish`'s: `group_id` not empty, `event_json` any valid JSON text
/// (stored byte for byte), `priority` 0..4, `routing_key` not empty when given. The
/// message that creates a group (earlier in the batch or before it) fixes the group's
/// priority and routing key; later ones leave both as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    /// The group whose FIFO the message joins.
    pub group_id: &'a str,
    /// The event, JSON text.
    pub event_json: &'a str,
    /// The group's priority (0..4), if this message creates the group.
    pub priority: i32,
    /// The group's routing key, if this message creates the group; `None`: no key.
    pub routing_key: Option<&'a str>,
    /// Its headers (checked when built), handed back with it on every lease and look.
    pub headers: Option<&'a Headers>,
}

/// What a producer may ask of a message's delivery (`publish_with`): the default is a
/// plain publish.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Delivery<'a> {
    /// An idempotency key: a second publish with a key seen within the queue's retention
    /// (`Options::key_retention`) stores nothing and reports the first message's seq.
    pub key: Option<&'a str>,
    /// Seconds from the publish (the transport's clock) before which the message is not
    /// delivered; 0: at once.
    pub delay: f64,
    /// An instant (epoch seconds, the transport's clock) before which the message is not
    /// delivered; with `delay`, the later of the two.
    pub not_before: Option<f64>,
    /// A unique key: while a message of the queue with that key is pending (not yet acked,
    /// dead-lettered or purged), a publish with it stores nothing. Not with `key`.
    pub unique: Option<Unique<'a>>,
    /// Seconds from the publish after which the message, if no worker has it by then,
    /// expires: it moves to the dead letters with the reason `expired` (docs/queue.md,
    /// "Expiry"). None: never.
    pub ttl: Option<f64>,
    /// An instant (epoch seconds, the transport's clock) at which it expires; with `ttl`,
    /// the earlier of the two.
    pub expires_at: Option<f64>,
    /// Its own retry policy, in place of the queue's (`Options::retry`); None: the queue's.
    pub retry: Option<Retry>,
}

/// How long a message that failed waits before its next delivery (docs/queue.md,
/// "Retries"): after its claim number n ends in a nack without a delay or in a lapsed
/// lease, `min(cap, base * factor^(n-1))` seconds, jittered. Drawn at the claim, so the
/// message shows it while it is held (`MessageInfo::retry_delay`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    /// The first backoff, seconds: 0.001..=`MAX_DELAY`.
    pub base: f64,
    /// Each next one's growth: 1 (constant) ..= 16.
    pub factor: f64,
    /// The longest, seconds: base..=`MAX_DELAY`.
    pub cap: f64,
    pub jitter: Jitter,
}

/// How a backoff `d` is spread, so that the workers of messages that failed together do not
/// come back together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Jitter {
    /// `d` exactly.
    None,
    /// Uniform in [0, d): the widest spread.
    #[default]
    Full,
    /// Uniform in [d/2, d): never less than half.
    Equal,
}

/// A unique key (1..256 bytes) and what a publish does when a message with it is pending
/// (docs/queue.md, "Unique keys").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unique<'a> {
    pub key: &'a str,
    pub mode: UniqueMode,
}

/// What a publish with a unique key does to the pending message with that key.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum UniqueMode {
    /// Keeps it: the publish stores nothing and reports it as the duplicate.
    #[default]
    Keep,
    /// Gives it the new event and headers, in its place in its group's FIFO, unless a
    /// worker holds its lease (then it is kept).
    Replace,
    /// As `Replace`, and it is due `delay` seconds from now, never later than `max_delay`
    /// seconds after its first publish; a new message is due `delay` seconds from now.
    Debounce { delay: f64, max_delay: f64 },
}

/// What a `publish_with` did with one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    /// The message's seq; for a duplicate, the first message's with that key (which may
    /// have been delivered and acked since).
    pub seq: i64,
    /// Its key was seen within the retention, or a message with its unique key is
    /// pending: nothing new was stored.
    pub duplicate: bool,
    /// A duplicate by its unique key whose pending message took this publish's event and
    /// headers (`UniqueMode::Replace` or `Debounce`, and no worker held it).
    pub replaced: bool,
}

/// Exact counts at one instant (`now`, the transport's clock).
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// When the counts were taken, epoch seconds.
    pub now: f64,
    pub messages: u64,
    pub groups: u64,
    /// Groups whose head can be claimed now.
    pub ready: u64,
    /// Groups whose head is leased to a worker.
    pub leased: u64,
    /// Groups whose head is parked by a nack with a delay.
    pub parked: u64,
    /// Groups whose head was published with a delay that has not passed (`publish_with`).
    pub delayed: u64,
    /// The soonest due time of such a head, epoch seconds; None when none is delayed.
    pub next_due_at: Option<f64>,
    /// Messages in the dead-letter table.
    pub dead: u64,
    /// Of those, the messages that expired undelivered (`Delivery::ttl`, reason `expired`).
    pub expired: u64,
    /// Seconds since the oldest message of a ready group was published; None when no group
    /// is ready, or that message was published by a writer that does not stamp the time
    /// (harel's Python transports).
    pub oldest_ready_age: Option<f64>,
    /// The seq of that message (the oldest of a ready group), whether or not its writer
    /// stamped the time; None when no group is ready.
    pub oldest_ready_seq: Option<i64>,
    /// The soonest end of a lease, a park or a delay, epoch seconds; None when nothing is in flight.
    pub next_release_at: Option<f64>,
    /// Seconds since the oldest lease that lapsed while its worker still holds it ended (a
    /// worker that died or hung; the next claim takes the head over); None when there is
    /// none. A park that ended is not a lease and is not counted.
    pub oldest_overdue_lease: Option<f64>,
    /// The group counts per priority level, for every level that has groups, lowest first.
    pub by_priority: Vec<PriorityStats>,
    /// Groups a pause names (`Transport::pause`); they are in none of ready, leased,
    /// parked and delayed.
    pub paused: u64,
    /// Groups a limit holds (docs/queue.md, "Limits"): their routing key had no room when a
    /// claim met them; they are in none of the counts above.
    pub held: u64,
    /// Groups whose head's lease lapsed and waits the backoff of a retry policy before its
    /// next claim (docs/queue.md, "Retries"); in none of the counts above.
    pub retrying: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityStats {
    pub priority: i32,
    pub groups: u64,
    pub ready: u64,
    pub leased: u64,
    pub parked: u64,
    pub delayed: u64,
    pub paused: u64,
    pub held: u64,
    pub retrying: u64,
}

/// Where a group stands, from its head (oldest message): only a head is ever leased.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupState {
    /// A claim would take its head now.
    Ready,
    Leased,
    Parked,
    /// Its head was published with a delay that has not passed.
    Delayed,
    /// A pause names it (`Transport::pause`): no claim takes its head, whatever the head's
    /// state; a lease in hand finishes.
    Paused,
    /// Its head is free, but a concurrency or rate limit of its routing key has no room:
    /// claims pass it until a slot or token frees (docs/queue.md, "Limits").
    Held,
    /// Its head is free, but its lease lapsed and it waits the retry policy's backoff
    /// (docs/queue.md, "Retries").
    Retrying,
}

impl GroupState {
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Ready => "ready",
            GroupState::Leased => "leased",
            GroupState::Parked => "parked",
            GroupState::Delayed => "delayed",
            GroupState::Paused => "paused",
            GroupState::Held => "held",
            GroupState::Retrying => "retrying",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupInfo {
    pub group_id: String,
    pub state: GroupState,
    /// How many messages the group holds.
    pub depth: u64,
    pub head_seq: i64,
    /// Seconds since the head was published (None: its writer does not stamp the time).
    pub head_age: Option<f64>,
    /// The worker holding the head's lease (None when ready or parked); a paused group's
    /// too, while a lease taken before the pause lasts.
    pub holder: Option<String>,
    /// When the lease or park ends (None when ready, held or retrying).
    pub lock_expiry: Option<f64>,
    pub priority: i32,
    pub routing_key: Option<String>,
    /// How many times the head has been claimed.
    pub head_attempts: i64,
    /// The shard it was found on (0 unless the queue is sharded).
    pub shard: usize,
}

/// One message of a group, as `peek` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageInfo {
    pub seq: i64,
    pub event: String,
    pub attempts: i64,
    /// The worker holding it, or "__parked__"; None when free.
    pub locked_by: Option<String>,
    pub lock_expiry: Option<f64>,
    /// When it was published (None: its writer does not stamp the time).
    pub published_at: Option<f64>,
    pub headers: Headers,
    /// The backoff its last claim drew (`Retry`): how long it waits after that claim's
    /// nack without a delay or after its lease's end. None: no policy, or never claimed.
    pub retry_delay: Option<f64>,
}

/// A message moved out of its group because it kept failing.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    /// Its seq in the queue before it died.
    pub seq: i64,
    pub group_id: String,
    pub event: String,
    /// How many times it had been claimed.
    pub attempts: i64,
    /// The worker whose lease it was under when it moved (a worker's dead_letter, or a
    /// lease that lapsed); None when it was free or parked then (a nack clears the holder).
    pub last_worker: Option<String>,
    pub reason: String,
    /// When it was moved, epoch seconds.
    pub dead_at: f64,
    /// The shard it was found on (0 unless the queue is sharded).
    pub shard: usize,
    /// Its headers, kept through a redrive.
    pub headers: Headers,
}

/// A message that was acked, as the archive keeps it (`Options::archive`).
#[derive(Debug, Clone, PartialEq)]
pub struct Archived {
    /// Its seq in the queue: a group's history reads in seq order.
    pub seq: i64,
    pub group_id: String,
    pub event: String,
    pub headers: Headers,
    /// How many times it had been claimed, the acked claim included.
    pub attempts: i64,
    /// The worker that acked it.
    pub worker_id: String,
    /// When it was published (None: its writer does not stamp the time).
    pub published_at: Option<f64>,
    /// When the claim that was acked took it (None: a claim before the archive's column).
    pub claimed_at: Option<f64>,
    /// When it was acked, epoch seconds.
    pub acked_at: f64,
    /// The shard it was found on (0 unless the queue is sharded).
    pub shard: usize,
}

/// The limits on a routing key's groups (docs/queue.md, "Limits"): at most `concurrency`
/// of their messages leased at once, and leases taken at most at `rate`, across every
/// worker of every process. At least one of the two.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Limit {
    /// At most this many leased at once (1..=1,000,000); None: no such limit.
    pub concurrency: Option<u32>,
    /// A token bucket: a lease takes a token; None: no such limit.
    pub rate: Option<Rate>,
}

/// A token bucket: `per_second` tokens a second, at most `burst` kept (a key idle for a
/// while may take `burst` leases at once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens a second: finite, > 0, at most 1,000,000.
    pub per_second: f64,
    /// Tokens kept at most: finite, >= 1, at most 1,000,000.
    pub burst: f64,
}

/// A limit in force, and how much of it is used now.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitInfo {
    pub routing_key: String,
    pub limit: Limit,
    /// Leases of the key's messages running now (with a concurrency limit; else 0).
    pub in_use: u64,
    /// The bucket's tokens now (with a rate limit).
    pub tokens: Option<f64>,
    /// How many of the key's groups a claim holds until the key has room.
    pub held: u64,
}

/// One page of a listing, and the cursor of the next one (None: this was the last).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

/// Which dead letters a redrive or purge takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadLetters<'a> {
    All,
    Group(&'a str),
    Seqs(&'a [i64]),
}

/// What a pause or a resume names (docs/queue.md, "Pause and resume").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseTarget<'a> {
    /// Every group, and every group made while the pause lasts.
    Queue,
    /// One group by id, whether or not it has messages now.
    Group(&'a str),
    /// Every group published with this routing key.
    RoutingKey(&'a str),
}

impl PauseTarget<'_> {
    pub fn kind(&self) -> PauseKind {
        match self {
            PauseTarget::Queue => PauseKind::Queue,
            PauseTarget::Group(_) => PauseKind::Group,
            PauseTarget::RoutingKey(_) => PauseKind::RoutingKey,
        }
    }

    /// The group id or routing key; empty for the queue.
    pub fn name(&self) -> &str {
        match self {
            PauseTarget::Queue => "",
            PauseTarget::Group(name) | PauseTarget::RoutingKey(name) => name,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PauseKind {
    Queue = 0,
    Group = 1,
    RoutingKey = 2,
}

impl PauseKind {
    /// As the pauses table stores it: queue, group, routing_key.
    pub fn name(self) -> &'static str {
        match self {
            PauseKind::Queue => "queue",
            PauseKind::Group => "group",
            PauseKind::RoutingKey => "routing_key",
        }
    }

    pub fn from_name(name: &str) -> Option<PauseKind> {
        [PauseKind::Queue, PauseKind::Group, PauseKind::RoutingKey].into_iter().find(|k| k.name() == name)
    }
}

/// A pause in force, as `Transport::pauses` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pause {
    pub kind: PauseKind,
    /// The group id or routing key; empty for the queue.
    pub name: String,
    /// When it was paused, epoch seconds.
    pub paused_at: f64,
}

/// The largest page a listing hands out.
pub const MAX_PAGE: usize = 10_000;
