//! Pulling the primary's latest frames into an embedded replica. A replica behind the
//! primary's compacted log needs its new snapshot, and sqld answers "snapshot not found"
//! (Unavailable) until it has written it, for up to seconds (libsql issue #1310). libsql's
//! replicator waits for a snapshot it is told is pending, but libsql 0.10 passes this
//! answer on as an error, so the sync is tried again here, within the call's limit.

use std::time::{Duration, Instant};

use libsql::Database;

/// What sqld says while the snapshot a replica needs is being written.
const SNAPSHOT_PENDING: &str = "snapshot not found";
/// The pause between two tries while the snapshot is pending.
const PAUSE: Duration = Duration::from_millis(100);

pub(super) enum SyncFailed {
    /// The server's answer (a snapshot still pending at the limit too), or the replica's own error.
    Error(String),
    /// No answer within the limit.
    NoAnswer,
}

/// Syncs `database` from its primary, trying again while the snapshot it needs is pending,
/// all within `limit`.
pub(super) async fn sync(database: &Database, limit: Duration) -> Result<(), SyncFailed> {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let e = match tokio::time::timeout(left, database.sync()).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => return Err(SyncFailed::NoAnswer),
        };
        if !e.contains(SNAPSHOT_PENDING) || Instant::now() + PAUSE >= deadline {
            return Err(SyncFailed::Error(e));
        }
        tokio::time::sleep(PAUSE).await;
    }
}
