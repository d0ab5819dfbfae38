//! A queue in a local file or in memory: a libsql connection in this process, statements
//! kept prepared, and write transactions that take the write lock first (lock.rs: shared
//! fairly among our processes and other SQLite programs), check that the WAL is still the
//! one this connection writes to (other_sqlite.rs), and always end in COMMIT or an
//! explicit ROLLBACK.

pub mod file_identity;
mod lock;
mod open;
pub mod other_sqlite;
mod statement_cache;

use libsql::{Connection, Database, Value};

use self::lock::{Held, LocalLock};
use self::other_sqlite::FileWatch;
use self::statement_cache::StatementCache;
use crate::chain::{row_values, Chain, Done, Row};
use crate::error::Result;

pub struct Local {
    conn: Connection,
    statements: StatementCache,
    lock: LocalLock,
    /// A file's watch (other_sqlite.rs); None in memory. Declared after the connection and
    /// the statements, so it drops last, once nothing of ours has the file open.
    watch: Option<FileWatch>,
    /// Lives as long as its connection.
    _database: Database,
}

impl Local {
    /// Runs the chain `build` makes inside `BEGIN IMMEDIATE`: the write lock is taken
    /// before anything is read ("now" included, which `build` reads), so what the chain
    /// reads is still true when it writes. COMMIT when every statement succeeded and every
    /// guard held; otherwise an explicit ROLLBACK, so nothing half-done is ever kept.
    pub async fn run<T>(&mut self, build: impl FnOnce() -> Result<(Chain, T)>) -> Result<(Vec<Done>, T)> {
        if !self.conn.is_autocommit() {
            // An earlier call was cancelled mid-transaction (its future dropped).
            self.rollback().await;
        }
        self.check_wal(false)?;
        let _slot: Held = self.lock.begin(&self.conn, &mut self.statements).await?;
        let outcome = match self.run_chain(build).await {
            Ok(done) => match self.statements.execute(&self.conn, "COMMIT", ()).await {
                Ok(_) => self.check_wal(true).map(|()| done),
                Err(e) => Err(e.into()),
            },
            Err(e) => Err(e),
        };
        if outcome.is_err() {
            self.rollback().await;
        }
        outcome
    }

    /// The chain's statements in order; a guard reads the changes of the statement before
    /// it here instead of asking SQLite. Stops where the chain allows it (`end_if_empty`).
    async fn run_chain<T>(&mut self, build: impl FnOnce() -> Result<(Chain, T)>) -> Result<(Vec<Done>, T)> {
        let (chain, extra) = build()?;
        let links = chain.links();
        let mut done: Vec<Done> = Vec::with_capacity(links.len());
        for (i, link) in links.iter().enumerate() {
            if let Some(lost) = &link.lost {
                if done.last().is_none_or(|before| before.changed == 0) {
                    return Err(lost.clone());
                }
                done.push(Done::default());
                continue;
            }
            let params = link.params.clone();
            let rows = self.statements.query_all(&self.conn, &link.sql, params, row_values).await?;
            done.push(Done { rows, changed: self.conn.changes() });
            if chain.ends_after(i, &done) {
                break;
            }
        }
        done.resize_with(links.len(), Done::default);
        Ok((done, extra))
    }

    /// The rows of each statement, each its own read (no write lock).
    pub async fn read(&mut self, reads: &[(&str, Vec<Value>)]) -> Result<Vec<Vec<Row>>> {
        let mut all = Vec::with_capacity(reads.len());
        for (sql, params) in reads {
            all.push(self.statements.query_all(&self.conn, sql, params.clone(), row_values).await?);
        }
        Ok(all)
    }

    /// `PRAGMA data_version`: changes once another connection's commit is visible.
    pub async fn data_version(&mut self) -> Result<Option<i64>> {
        let rows = self.statements.query_all(&self.conn, "PRAGMA data_version", (), |row| row.get::<i64>(0)).await?;
        Ok(rows.first().copied())
    }

    /// A local file: the WAL must still be the one this connection writes to.
    fn check_wal(&mut self, committed: bool) -> Result<()> {
        match &mut self.watch {
            Some(watch) => watch.check_wal(committed),
            None => Ok(()),
        }
    }

    async fn rollback(&mut self) {
        // Its own failure ("no transaction is active") only means there is nothing to undo.
        let _ = self.conn.execute("ROLLBACK", ()).await;
    }

    /// Drops the prepared statements before the connection goes.
    pub fn close(&mut self) {
        self.statements.clear();
    }
}
