//! How to open a transport: where the queue lives and how it behaves. Setters validate
//! their value at once, so a bad option fails where it is set, not later at `open`.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::types::Retry;
use crate::validate;

/// "Now" as epoch seconds. Injected so tests move time instead of sleeping.
pub type Clock = Arc<dyn Fn() -> f64 + Send + Sync>;

pub fn system_clock() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// SQLite's `synchronous` setting for a local file (WAL journal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    /// fsync at every commit but a claim's (a lease dies with its worker anyway: README,
    /// "Durability"): a committed publish, ack or nack survives power loss. The default.
    Full,
    /// fsync at checkpoints only: safe against process crashes, and faster, but the last
    /// commits can be lost if the machine loses power.
    Normal,
}

/// How long an idempotency key is remembered unless set otherwise: a day, in seconds
/// (`Options::key_retention`, `harel_options_set_key_retention`).
pub const DEFAULT_KEY_RETENTION: f64 = 86_400.0;

#[derive(Clone)]
pub struct Options {
    pub(crate) prefix: String,
    pub(crate) create_schema: bool,
    pub(crate) schema_as_is: bool,
    pub(crate) sync_url: Option<String>,
    /// A sharded queue's primaries, one per shard: its shards are embedded replicas.
    pub(crate) sync_urls: Vec<String>,
    pub(crate) auth_token: Option<String>,
    pub(crate) sync_interval: Option<Duration>,
    pub(crate) busy_timeout: Duration,
    pub(crate) synchronous: Synchronous,
    pub(crate) clock: Clock,
    pub(crate) max_attempts: u32,
    /// How long an idempotency key is remembered, in seconds.
    pub(crate) key_retention: f64,
    /// How long an acked message is kept in the archive, in seconds; None: not archived.
    pub(crate) archive: Option<f64>,
    /// The queue's retry policy, applied by this transport's claims; None: none.
    pub(crate) retry: Option<Retry>,
    /// Whether open refuses a file this process holds a lock on that no transport of ours
    /// holds (other_sqlite.rs). Set by the C ABI only: in a Rust program the `libsql`
    /// crate shares this library's SQLite, whose own connections are no hazard.
    pub(crate) refuse_other_sqlite: bool,
    /// Spans around publishes and leases (docs/tracing.md): none unless a tracer is given.
    pub(crate) tracing: Option<crate::telemetry::Tracing>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            prefix: "harel".into(),
            create_schema: true,
            schema_as_is: false,
            sync_url: None,
            sync_urls: Vec::new(),
            auth_token: None,
            sync_interval: None,
            busy_timeout: Duration::from_secs(5),
            synchronous: Synchronous::Full,
            clock: Arc::new(system_clock),
            max_attempts: 0,
            key_retention: DEFAULT_KEY_RETENTION,
            archive: None,
            retry: None,
            refuse_other_sqlite: false,
            tracing: None,
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("prefix", &self.prefix)
            .field("create_schema", &self.create_schema)
            .field("schema_as_is", &self.schema_as_is)
            .field("sync_url", &self.sync_url)
            .field("sync_urls", &self.sync_urls)
            .field("auth_token", &self.auth_token.as_ref().map(|_| "<set>"))
            .field("sync_interval", &self.sync_interval)
            .field("busy_timeout", &self.busy_timeout)
            .field("synchronous", &self.synchronous)
            .field("max_attempts", &self.max_attempts)
            .field("archive", &self.archive)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl Options {
    pub fn new() -> Self {
        Self::default()
    }

    /// Traces with `tracer` (docs/tracing.md): each publish makes a PRODUCER span whose
    /// context goes into its messages' `traceparent` and `tracestate` headers, each lease a
    /// CONSUMER span linked to it, ended by the lease's ack, nack, dead letter or loss.
    /// `as_parent`: the lease's span is the producer's child instead of linked to it. A
    /// tracer from a provider: `BoxedTracer::new(Box::new(provider.tracer("harel")))`.
    #[cfg(feature = "opentelemetry")]
    pub fn tracer(&mut self, tracer: opentelemetry::global::BoxedTracer, as_parent: bool) -> &mut Self {
        self.tracing = Some(crate::telemetry::Tracing { tracer: std::sync::Arc::new(tracer), as_parent });
        self
    }

    /// Table names start with `prefix` (default `harel`): an identifier of at most 30 characters.
    pub fn prefix(&mut self, prefix: &str) -> Result<&mut Self> {
        validate::prefix(prefix)?;
        self.prefix = prefix.to_owned();
        Ok(self)
    }

    /// On (default): create the tables idempotently and upgrade a harel 0.9 schema.
    /// Off: create nothing; a missing table fails `open`.
    pub fn create_schema(&mut self, on: bool) -> &mut Self {
        self.create_schema = on;
        self
    }

    /// On: open the tables as they are, for looking inside (the ops CLI): nothing is created
    /// or upgraded, whatever `create_schema` says. harel's two tables must be there; what a
    /// harel 0.9 file lacks of ours (the columns `attempts`, `enqueued_at`, `routing_key`,
    /// the dead-letter table) the looks read around, `Transport::absent` names, and every
    /// operation that writes is refused while anything is absent. Off (default): as
    /// `create_schema` says.
    pub fn schema_as_is(&mut self, on: bool) -> &mut Self {
        self.schema_as_is = on;
        self
    }

    /// Makes the path an embedded replica of the libSQL server at `url` (`None` unsets).
    pub fn sync_url(&mut self, url: Option<&str>) -> Result<&mut Self> {
        if let Some(u) = url {
            validate::non_empty("url", u)?;
        }
        self.sync_url = url.map(str::to_owned);
        Ok(self)
    }

    /// Makes the paths of a sharded queue embedded replicas, of the libSQL server at
    /// `urls[i]` for shard `i` (`open_shards` takes as many paths as URLs; empty unsets).
    /// The other options (`auth_token`, `sync_interval`) hold for every shard.
    pub fn sync_urls(&mut self, urls: &[&str]) -> Result<&mut Self> {
        for (i, u) in urls.iter().enumerate() {
            validate::non_empty(&format!("urls[{i}]"), u)?;
            if let Some(j) = urls[..i].iter().position(|v| v == u) {
                return Err(Error::Argument(format!("urls[{i}] repeats urls[{j}] ({u})")));
            }
        }
        self.sync_urls = urls.iter().map(|u| (*u).to_owned()).collect();
        Ok(self)
    }

    /// The token for a libSQL server, remote or as a replica's primary (`None` unsets).
    pub fn auth_token(&mut self, token: Option<&str>) -> &mut Self {
        self.auth_token = token.map(str::to_owned);
        self
    }

    /// How often an embedded replica pulls from its primary, in seconds (> 0).
    pub fn sync_interval(&mut self, seconds: f64) -> Result<&mut Self> {
        validate::positive_seconds("sync_interval", seconds)?;
        self.sync_interval = Some(validate::duration("sync_interval", seconds)?);
        Ok(self)
    }

    /// How long a local write waits for the lock before `Error::Busy`, in seconds (>= 0).
    pub fn busy_timeout(&mut self, seconds: f64) -> Result<&mut Self> {
        validate::non_negative_seconds("busy_timeout", seconds)?;
        self.busy_timeout = validate::duration("busy_timeout", seconds)?;
        Ok(self)
    }

    pub fn synchronous(&mut self, synchronous: Synchronous) -> &mut Self {
        self.synchronous = synchronous;
        self
    }

    /// How many times a message may be claimed: a claim that would hand it out once more
    /// moves it to the dead-letter table instead, and its group goes on with the next
    /// message. 0 (the default): no limit.
    pub fn max_attempts(&mut self, max_attempts: u32) -> &mut Self {
        self.max_attempts = max_attempts;
        self
    }

    /// How long an idempotency key is remembered after its publish, in seconds (> 0, at
    /// most ten years; default a day): within it a publish with the same key stores nothing.
    /// A day outlasts any retry loop of a producer and the outages it rides out (a
    /// connection lost for hours, a deploy rolled back overnight) while the keys of a
    /// day's publishes stay a small table; SQS FIFO keeps 5 minutes, too short for a
    /// producer that retries after an outage.
    pub fn key_retention(&mut self, seconds: f64) -> Result<&mut Self> {
        self.key_retention = validate::retention("key_retention", seconds)?;
        Ok(self)
    }

    /// Keeps each acked message in the archive table for `retention_seconds` after its
    /// ack (> 0, at most ten years; docs/queue.md, "The archive"): its seq, group, event,
    /// headers, claims, the worker, and when it was published, claimed and acked. Each ack
    /// copies its message in its own transaction and prunes a bounded number of rows older
    /// than the retention. Off by default: an ack deletes, and the table is left as it is.
    pub fn archive(&mut self, retention_seconds: f64) -> Result<&mut Self> {
        self.archive = Some(validate::retention("archive_retention", retention_seconds)?);
        Ok(self)
    }

    /// The queue's retry policy (docs/queue.md, "Retries"): a message whose claim ends in a
    /// nack without a delay, or in a lease that lapses, waits the policy's backoff before
    /// its next delivery. A message published with its own policy (`Delivery::retry`)
    /// follows that one. Applied by this transport's claims, which draw each claim's
    /// backoff; every claim still counts toward `max_attempts`. None (the default): a
    /// nack without a delay frees the message at once, and a lapsed lease is claimable
    /// at its end.
    pub fn retry(&mut self, policy: Option<Retry>) -> Result<&mut Self> {
        if let Some(r) = &policy {
            validate::retry("retry", r)?;
        }
        self.retry = policy;
        Ok(self)
    }

    /// Where "now" comes from (epoch seconds); the system clock by default.
    pub fn clock(&mut self, clock: impl Fn() -> f64 + Send + Sync + 'static) -> &mut Self {
        self.clock = Arc::new(clock);
        self
    }

    pub fn system_clock(&mut self) -> &mut Self {
        self.clock = Arc::new(system_clock);
        self
    }

    pub fn get_prefix(&self) -> &str {
        &self.prefix
    }
}
