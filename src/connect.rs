//! Opening the libSQL connection for each place a queue can live: an in-memory database,
//! a local file, a libSQL server (remote), or an embedded replica of one.

use std::time::Duration;

use libsql::{Builder, Connection, Database};

use crate::db::LockWait;
use crate::error::{Error, Result};
use crate::options::{Options, Synchronous};

/// How long `open` may spend reaching a server before it reports `Error::Connect`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Memory,
    File,
    Remote,
    Replica,
}

impl Mode {
    pub fn of(database: &str, options: &Options) -> Mode {
        let is_url = ["libsql://", "http://", "https://"].iter().any(|s| database.starts_with(s));
        match (is_url, &options.sync_url) {
            (true, _) => Mode::Remote,
            (false, Some(_)) => Mode::Replica,
            (false, None) if database == ":memory:" => Mode::Memory,
            (false, None) => Mode::File,
        }
    }

    /// On a server every call is a round trip anyway; statements are cached only where
    /// SQLite compiles them in this process.
    pub fn caches_statements(self) -> bool {
        matches!(self, Mode::Memory | Mode::File)
    }

    /// Local databases wait for the write lock in `Db`, not in SQLite's busy handler.
    pub fn waits_for_lock_itself(self) -> bool {
        matches!(self, Mode::Memory | Mode::File)
    }

    pub fn is_networked(self) -> bool {
        matches!(self, Mode::Remote | Mode::Replica)
    }
}

pub struct Connected {
    /// Kept alive with the connection: a replica's background sync lives in it.
    pub database: Database,
    pub connection: Connection,
}

pub async fn connect(database: &str, options: &Options, mode: Mode) -> Result<Connected> {
    let token = options.auth_token.clone().unwrap_or_default();
    if mode == Mode::File {
        check_directory(database)?;
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
    let db = opened.map_err(|e| open_error(database, mode, e))?;
    let conn = db.connect().map_err(|e| open_error(database, mode, e))?;
    match mode {
        Mode::Memory | Mode::File => configure_local(database, &conn, options, mode).await?,
        Mode::Remote => {
            within_connect_timeout(database, async { conn.query("SELECT 1", ()).await.map(drop) })
                .await
                .map_err(|e| open_error(database, mode, e))?
        }
        Mode::Replica => {
            let sqlite_wait = options.busy_timeout.min(Duration::from_millis(i32::MAX as u64));
            conn.busy_timeout(sqlite_wait).map_err(|e| Error::from_libsql("open", e))?;
            within_connect_timeout(database, async { db.sync().await.map(drop) })
                .await
                .map_err(|e| open_error(database, mode, e))?
        }
    }
    Ok(Connected { database: db, connection: conn })
}

async fn journal_mode(conn: &Connection, pragma: &str) -> libsql::Result<String> {
    let mut rows = conn.query(pragma, ()).await?;
    let row = rows.next().await?.ok_or(libsql::Error::QueryReturnedNoRows)?;
    row.get::<String>(0)
}

/// Clear messages for the common mistakes, before SQLite reports "unable to open" (and
/// before libsql 0.10, which leaks the half-opened handle on that path, is asked).
fn check_directory(database: &str) -> Result<()> {
    let path = std::path::Path::new(database);
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    match parent {
        Some(dir) if !dir.is_dir() => Err(Error::Database(format!(
            "open {database:?}: the directory {} does not exist",
            dir.display()
        ))),
        _ if path.is_dir() => Err(Error::Database(format!("open {database:?}: it is a directory, not a file"))),
        _ => Ok(()),
    }
}

async fn configure_local(database: &str, conn: &Connection, options: &Options, mode: Mode) -> Result<()> {
    let what = format!("open {database:?}");
    let fail = |e| Error::from_libsql(&what, e);
    // libsql takes the timeout as i32 milliseconds; a longer one would wrap around.
    let sqlite_wait = options.busy_timeout.min(Duration::from_millis(i32::MAX as u64));
    conn.busy_timeout(sqlite_wait).map_err(fail)?;
    if mode == Mode::File {
        // WAL lets readers proceed while a claim holds the write lock. Switching to it
        // needs the database to itself, and SQLite answers "locked" at once instead of
        // waiting when another process is opening it too, so wait here.
        if journal_mode(conn, "PRAGMA journal_mode").await.map_err(fail)? != "wal" {
            let mut waiting = LockWait::new(options.busy_timeout);
            loop {
                match journal_mode(conn, "PRAGMA journal_mode = WAL").await.map_err(fail) {
                    Err(Error::Busy(_)) => waiting.pause_or_give_up()?,
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
    // From here on `Db` waits for the write lock itself (see Db::begin_immediate).
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

fn open_error(database: &str, mode: Mode, e: libsql::Error) -> Error {
    if mode.is_networked() {
        Error::Connect(format!("open {database:?}: the libSQL server could not be used: {e}"))
    } else {
        Error::from_libsql(&format!("open {database:?}"), e)
    }
}
