//! harel-transport: a durable, group-ordered message queue stored in libSQL.
//!
//! Events are published into *groups*. Within a group delivery is FIFO and at most one
//! message is in flight at a time; groups are served round-robin, can be filtered by a
//! priority floor and by routing keys. A claim is a lease that lapses if the worker dies;
//! `nack` returns a message now or parks it for a delay. The tables are those of harel's
//! Python `SqliteTransport`/`LibsqlTransport`, so both can share one queue file.
//!
//! [`Transport`] is the blocking face (what the C ABI wraps); [`AsyncTransport`] is the
//! same queue as `async fn`. Both run the operations of `queue`, written once, on the
//! backend chosen at open (`backend`: a local file, or a libSQL server); docs/architecture.md
//! follows a claim from the C call to the SQL and back.

mod async_transport;
mod backend;
mod chain;
mod cursor;
mod error;
pub mod ffi;
mod group_commit;
mod headers;
mod metrics;
mod mode;
mod options;
mod queue;
mod request;
mod shards;
mod sql;
mod telemetry;
pub mod trace_context;
mod transaction;
mod transport;
mod types;
mod validate;
mod waiting;

pub use async_transport::AsyncTransport;
pub use error::{Error, Result};
pub use headers::{Headers, MAX_HEADERS, MAX_HEADERS_BYTES, MAX_HEADER_NAME_LEN};
pub use metrics::{Histogram, Latency, Metrics, LATENCY_BOUNDS, LATENCY_BUCKETS};
pub use mode::Mode;
pub use options::{system_clock, Clock, Options, Synchronous, DEFAULT_KEY_RETENTION};
pub use libsql::Value;
pub use trace_context::{TraceParent, TraceState, TRACEPARENT, TRACESTATE};
pub use transaction::{AsyncTx, Tx};
pub use transport::Transport;
pub use types::{
    Archived, DeadLetter, DeadLetters, Delivery, GroupInfo, GroupState, Jitter, Lease, Limit, LimitInfo, Message,
    MessageInfo, Page, Pause, PauseKind, PauseTarget, PriorityStats, Published, Rate, Retry, Stats, Unique, UniqueMode,
    MAX_PAGE,
};
pub use validate::{
    DELAYED, MAX_CLAIM, MAX_DELAY, MAX_KEY_LEN, MAX_PREFIX_LEN, MAX_PRIORITY, MAX_RETRY_FACTOR, MIN_RETRY_BASE,
    MISPLACED, PARKED,
};
pub use request::MAX_LIMIT;
pub use waiting::wait::{Cancel, Wait};
pub use shards::{shard_of, Watch, MAX_SHARDS};

/// The statements that create a fresh schema under `prefix`, for a migration tool:
/// idempotent, one per line, each ending in ';'.
pub fn schema_sql(prefix: &str) -> Result<String> {
    validate::prefix(prefix)?;
    Ok(sql::as_script(&sql::Statements::new(prefix).schema()))
}

/// The statements that upgrade a groups table made without `routing_key` (harel 0.9).
/// Not idempotent: run them once.
pub fn schema_upgrade_sql(prefix: &str) -> Result<String> {
    validate::prefix(prefix)?;
    Ok(sql::as_script(&sql::Statements::new(prefix).upgrade()))
}

/// The library's version, "MAJOR.MINOR.PATCH".
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
