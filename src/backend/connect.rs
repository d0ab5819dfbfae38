//! What opening any backend shares: the bound on reaching a server, the check that a file
//! is used as what it is (a local queue or an embedded replica, never both), and SQLite's
//! busy timeout as libsql takes it.

use std::future::Future;
use std::time::Duration;

use libsql::Connection;

use crate::error::{Error, Result};

/// How long `open` may spend reaching a server before it reports `Error::Connect`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The words of the error `within_connect_timeout` gives when the time ran out.
pub const NO_ANSWER: &str = "no answer within";

pub async fn within_connect_timeout<T>(
    what: &str,
    work: impl Future<Output = std::result::Result<T, String>>,
) -> std::result::Result<T, String> {
    match tokio::time::timeout(CONNECT_TIMEOUT, work).await {
        Ok(result) => result,
        Err(_) => Err(format!("{what}: {NO_ANSWER} {} s", CONNECT_TIMEOUT.as_secs())),
    }
}

/// What libsql 0.10 keeps beside an embedded replica's file: its position in the
/// primary's log.
const REPLICA_MARKER: &str = "-client_wal_index";

/// A file is either a local queue or an embedded replica, never both. Written to locally,
/// a replica would hold messages the server never sees (and lose them at the next sync)
/// and hand out leases the server's other workers know nothing of; libsql itself opens it
/// as a plain file without a word. The other way round, libsql refuses a plain file as a
/// replica with a message about its "wal_index"; this one names the mistake.
pub fn check_not_mixed(database: &str, as_replica: bool) -> Result<()> {
    let is_replica = std::path::Path::new(&format!("{database}{REPLICA_MARKER}")).exists();
    let has_data = std::fs::metadata(database).is_ok_and(|m| m.len() > 0);
    match as_replica {
        false if is_replica => Err(Error::Argument(format!(
            "open {database:?}: this file is an embedded replica of a libSQL server (it has \
             {database}{REPLICA_MARKER}): open it with sync_url; written to as a local file, it \
             would part from the server's queue"
        ))),
        true if has_data && !is_replica => Err(Error::Argument(format!(
            "open {database:?}: this is a local queue file, not an embedded replica: a replica \
             needs a path of its own (a new file, which open fills from the server)"
        ))),
        _ => Ok(()),
    }
}

/// SQLite's own busy timeout. libsql takes it as i32 milliseconds; a longer one would
/// wrap around.
pub fn sqlite_busy_timeout(conn: &Connection, wait: Duration) -> libsql::Result<()> {
    conn.busy_timeout(wait.min(Duration::from_millis(i32::MAX as u64)))
}
