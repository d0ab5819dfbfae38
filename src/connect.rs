//! Opening the libSQL connection for each place a queue can live: an in-memory database,
//! a local file, a libSQL server (remote), or an embedded replica of one.

use std::time::Duration;

use libsql::{Builder, Connection, Database};

use crate::error::{Error, Result};
use crate::lock_wait::LockWait;
use crate::mode::Mode;
use crate::options::{Options, Synchronous};
use crate::server_ops::OneRequest;

/// How long `open` may spend reaching a server before it reports `Error::Connect`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Connected {
    /// Kept alive with the connection: a replica's background sync lives in it.
    pub database: Database,
    pub connection: Connection,
    pub mode: Mode,
    /// On a server: where the worker's operations go, one request each.
    pub one_request: Option<OneRequest>,
}

pub async fn connect(database: &str, options: &Options, mode: Mode) -> Result<Connected> {
    let token = options.auth_token.clone().unwrap_or_default();
    if mode == Mode::File {
        check_directory(database)?;
    }
    if matches!(mode, Mode::File | Mode::Replica) {
        check_not_mixed(database, mode)?;
    }
    let opened = match mode {
        Mode::Memory | Mode::File => Builder::new_local(database).build().await,
        Mode::Remote => Builder::new_remote(database.to_owned(), token).build().await,
        Mode::Replica => {
            let url = options.sync_url.clone().unwrap_or_default();
            let mut builder = Builder::new_remote_replica(database, url, token).read_your_writes(false);
            if let Some(interval) = options.sync_interval {
                builder = builder.sync_interval(interval);
            }
            within_connect_timeout(database, builder.build()).await
        }
    };
    let db = match opened {
        Ok(db) => db,
        Err(e) => return Err(explained_open_error(database, options, mode, e).await),
    };
    let conn = db.connect().map_err(|e| open_error(database, mode, e))?;
    match mode {
        Mode::Memory | Mode::File => configure_local(database, &conn, options, mode).await?,
        Mode::Remote => within_connect_timeout(database, async { conn.query("SELECT 1", ()).await.map(drop) })
            .await
            .map_err(|e| open_error(database, mode, e))?,
        Mode::Replica => {
            sqlite_busy_timeout(&conn, options.busy_timeout).map_err(|e| Error::from_libsql("open", e))?;
            if let Err(e) = within_connect_timeout(database, async { db.sync().await.map(drop) }).await {
                return Err(explained_open_error(database, options, mode, e).await);
            }
        }
    }
    let token = options.auth_token.as_deref().unwrap_or_default();
    let one_request = match mode {
        _ if !options.one_request => None,
        Mode::Remote => Some(OneRequest::new(database, token, options.busy_timeout)?),
        Mode::Replica => {
            // Its writes go to the primary: the replica is kept for reads.
            let url = options.sync_url.as_deref().unwrap_or_default();
            Some(OneRequest::new(url, token, options.busy_timeout)?)
        }
        Mode::Memory | Mode::File => None,
    };
    Ok(Connected { database: db, connection: conn, mode, one_request })
}

async fn journal_mode(conn: &Connection, pragma: &str) -> libsql::Result<String> {
    let mut rows = conn.query(pragma, ()).await?;
    let row = rows.next().await?.ok_or(libsql::Error::QueryReturnedNoRows)?;
    row.get::<String>(0)
}

/// What libsql 0.10 keeps beside an embedded replica's file: its position in the
/// primary's log.
const REPLICA_MARKER: &str = "-client_wal_index";

/// A file is either a local queue or an embedded replica, never both. Written to locally,
/// a replica would hold messages the server never sees (and lose them at the next sync)
/// and hand out leases the server's other workers know nothing of; libsql itself opens it
/// as a plain file without a word. The other way round, libsql refuses a plain file as a
/// replica with a message about its "wal_index"; this one names the mistake.
fn check_not_mixed(database: &str, mode: Mode) -> Result<()> {
    let is_replica = std::path::Path::new(&format!("{database}{REPLICA_MARKER}")).exists();
    let has_data = std::fs::metadata(database).is_ok_and(|m| m.len() > 0);
    match mode {
        Mode::File if is_replica => Err(Error::Argument(format!(
            "open {database:?}: this file is an embedded replica of a libSQL server (it has \
             {database}{REPLICA_MARKER}): open it with sync_url; written to as a local file, it \
             would part from the server's queue"
        ))),
        Mode::Replica if has_data && !is_replica => Err(Error::Argument(format!(
            "open {database:?}: this is a local queue file, not an embedded replica: a replica \
             needs a path of its own (a new file, which open fills from the server)"
        ))),
        _ => Ok(()),
    }
}

/// Clear messages for the common mistakes, before SQLite reports "unable to open" (and
/// before libsql 0.10, which leaks the half-opened handle on that path, is asked).
fn check_directory(database: &str) -> Result<()> {
    let path = std::path::Path::new(database);
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    match parent {
        Some(dir) if !dir.is_dir() => {
            Err(Error::Database(format!("open {database:?}: the directory {} does not exist", dir.display())))
        }
        _ if path.is_dir() => Err(Error::Database(format!("open {database:?}: it is a directory, not a file"))),
        _ => Ok(()),
    }
}

async fn configure_local(database: &str, conn: &Connection, options: &Options, mode: Mode) -> Result<()> {
    let what = format!("open {database:?}");
    let fail = |e| Error::from_libsql(&what, e);
    sqlite_busy_timeout(conn, options.busy_timeout).map_err(fail)?;
    if mode == Mode::File {
        // WAL lets readers proceed while a claim holds the write lock. Switching to it
        // needs the database to itself, and SQLite answers "locked" at once instead of
        // waiting when another process is opening it too, so wait here.
        if journal_mode(conn, "PRAGMA journal_mode").await.map_err(fail)? != "wal" {
            let mut waiting = LockWait::local(options.busy_timeout);
            loop {
                match journal_mode(conn, "PRAGMA journal_mode = WAL").await.map_err(fail) {
                    Err(Error::Busy(_)) => std::thread::sleep(waiting.next_pause()?),
                    other => break other.map(drop)?,
                }
            }
        }
        let sync = match options.synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        conn.execute(&format!("PRAGMA synchronous = {sync}"), ()).await.map_err(fail)?;
    }
    // From here on `Db` waits for the write lock itself (see local_lock.rs).
    conn.busy_timeout(Duration::ZERO).map_err(fail)?;
    Ok(())
}

async fn within_connect_timeout<T>(
    database: &str,
    work: impl std::future::Future<Output = libsql::Result<T>>,
) -> libsql::Result<T> {
    match tokio::time::timeout(CONNECT_TIMEOUT, work).await {
        Ok(result) => result,
        Err(_) => Err(libsql::Error::ConnectionFailed(format!(
            "{database}: no answer within {} s",
            CONNECT_TIMEOUT.as_secs()
        ))),
    }
}

/// An embedded replica that cannot reach its primary says only "Timeout performing
/// handshake with primary", whether the server is down or refused the token. Asking the
/// same server once as a remote client gives the reason (401 "The JWT is invalid",
/// connection refused, ...). Only on the failure path: a good open costs nothing more.
async fn explained_open_error(database: &str, options: &Options, mode: Mode, e: libsql::Error) -> Error {
    let timed_out = matches!(&e, libsql::Error::ConnectionFailed(m) if m.contains("no answer within"));
    if mode != Mode::Replica || timed_out {
        // Nothing more to learn from a server that does not answer, and no time left to ask.
        return open_error(database, mode, e);
    }
    let url = options.sync_url.clone().unwrap_or_default();
    let token = options.auth_token.clone().unwrap_or_default();
    let probe = async {
        let db = Builder::new_remote(url.clone(), token).build().await?;
        let conn = db.connect()?;
        conn.query("SELECT 1", ()).await.map(drop)
    };
    match tokio::time::timeout(Duration::from_secs(3), probe).await {
        Ok(Err(reason)) => Error::Connect(format!(
            "open {database:?}: the libSQL server at {url} could not be used: {reason} (replica: {e})"
        )),
        _ => open_error(database, mode, e),
    }
}

/// SQLite's own busy timeout. libsql takes it as i32 milliseconds; a longer one would
/// wrap around.
pub fn sqlite_busy_timeout(conn: &Connection, wait: Duration) -> libsql::Result<()> {
    conn.busy_timeout(wait.min(Duration::from_millis(i32::MAX as u64)))
}

fn open_error(database: &str, mode: Mode, e: libsql::Error) -> Error {
    if mode.is_networked() {
        Error::Connect(format!("open {database:?}: the libSQL server could not be used: {e}"))
    } else {
        Error::from_libsql(&format!("open {database:?}"), e)
    }
}
