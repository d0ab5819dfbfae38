//! Opening a queue in a local file (WAL, the chosen `synchronous`) or in memory.

use std::sync::Arc;
use std::time::Duration;

use libsql::{Builder, Connection};

use super::durability::Durability;
use super::lock::LocalLock;
use super::other_sqlite::FileWatch;
use super::statement_cache::StatementCache;
use super::Local;
use crate::backend::connect::{check_not_mixed, sqlite_busy_timeout};
use crate::backend::lock_wait::LockWait;
use crate::error::{Error, Result};
use crate::metrics::Counter;
use crate::options::{Options, Synchronous};

impl Local {
    /// The queue file at `path`. Its watch is taken before the file is opened (see
    /// other_sqlite.rs).
    pub async fn file(path: &str, options: &Options, busy_retries: Arc<Counter>) -> Result<Local> {
        check_directory(path)?;
        check_not_mixed(path, false)?;
        let watch = FileWatch::open(path, options.refuse_other_sqlite)?;
        let (database, conn) = connect(path).await?;
        configure(path, &conn, options, Some(&busy_retries)).await?;
        let lock = LocalLock::file(path, options.busy_timeout);
        Ok(Local {
            conn,
            statements: StatementCache::new(),
            lock,
            durability: Durability::new(options.synchronous),
            busy_retries,
            watch: Some(watch),
            open: None,
            _database: database,
        })
    }

    /// A database of this connection's own, gone at close.
    pub async fn memory(options: &Options, busy_retries: Arc<Counter>) -> Result<Local> {
        let (database, conn) = connect(":memory:").await?;
        configure(":memory:", &conn, options, None).await?;
        let lock = LocalLock::memory(options.busy_timeout);
        Ok(Local {
            conn,
            statements: StatementCache::new(),
            lock,
            // Nothing in memory is ever synced: no level to switch between.
            durability: Durability::new(Synchronous::Normal),
            busy_retries,
            watch: None,
            open: None,
            _database: database,
        })
    }
}

async fn connect(path: &str) -> Result<(libsql::Database, Connection)> {
    let fail = |e| Error::from_libsql(&format!("open {path:?}"), e);
    let database = Builder::new_local(path).build().await.map_err(fail)?;
    let conn = database.connect().map_err(fail)?;
    Ok((database, conn))
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

async fn journal_mode(conn: &Connection, pragma: &str) -> libsql::Result<String> {
    let mut rows = conn.query(pragma, ()).await?;
    let row = rows.next().await?.ok_or(libsql::Error::QueryReturnedNoRows)?;
    row.get::<String>(0)
}

/// `file`: a file's busy retries counter (a file is switched to WAL, memory is not).
async fn configure(database: &str, conn: &Connection, options: &Options, file: Option<&Counter>) -> Result<()> {
    let what = format!("open {database:?}");
    let fail = |e| Error::from_libsql(&what, e);
    sqlite_busy_timeout(conn, options.busy_timeout).map_err(fail)?;
    if let Some(busy_retries) = file {
        // WAL lets readers proceed while a claim holds the write lock. Switching to it
        // needs the database to itself, and SQLite answers "locked" at once instead of
        // waiting when another process is opening it too, so wait here.
        if journal_mode(conn, "PRAGMA journal_mode").await.map_err(fail)? != "wal" {
            let mut waiting = LockWait::local(options.busy_timeout, busy_retries);
            loop {
                match journal_mode(conn, "PRAGMA journal_mode = WAL").await.map_err(fail) {
                    Err(Error::Busy(_)) => std::thread::sleep(waiting.next_pause()?),
                    other => break other.map(drop)?,
                }
            }
        }
        conn.execute(Durability::pragma(options.synchronous), ()).await.map_err(fail)?;
    }
    // From here on the transactions wait for the write lock themselves (see lock.rs).
    conn.busy_timeout(Duration::ZERO).map_err(fail)?;
    Ok(())
}
