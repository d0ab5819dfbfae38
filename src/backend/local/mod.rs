//! A queue in a local file or in memory: a libsql connection in this process, statements
//! kept prepared, and write transactions that take the write lock first (lock.rs: shared
//! fairly among our processes and other SQLite programs), check that the WAL is still the
//! one this connection writes to (other_sqlite.rs), and always end in COMMIT or an
//! explicit ROLLBACK.

mod claim;
mod durability;
pub mod file_identity;
mod lock;
mod open;
mod open_transaction;
pub mod other_sqlite;
mod slot_file;
mod statement_cache;

use std::sync::Arc;

use libsql::{Connection, Database, Value};

use self::durability::{Commit, Durability};
use self::lock::{Held, LocalLock};
use self::other_sqlite::FileWatch;
use self::statement_cache::StatementCache;
use crate::backend::lock_wait::LockWait;
use crate::chain::{lease_lost, row_values, Chain, Done, Row};
use crate::error::{Error, Result};
use crate::metrics::Counter;

pub struct Local {
    conn: Connection,
    statements: StatementCache,
    lock: LocalLock,
    durability: Durability,
    busy_retries: Arc<Counter>,
    /// A file's watch (other_sqlite.rs); None in memory. Declared after the connection and
    /// the statements, so it drops last, once nothing of ours has the file open.
    watch: Option<FileWatch>,
    /// The application's transaction this connection holds open (open_transaction.rs): our
    /// processes' slot, until its COMMIT or ROLLBACK.
    open: Option<Held>,
    /// Lives as long as its connection.
    _database: Database,
}

impl Local {
    /// Runs the chain `build` makes as one write transaction (see `transaction`).
    pub async fn run<'c, T>(&mut self, build: impl FnOnce() -> Result<(Chain<'c>, T)>) -> Result<(Vec<Done>, T)> {
        self.transaction(Commit::Durable, async |local| {
            let (chain, extra) = build()?;
            Ok((local.run_chain(chain).await?, extra))
        })
        .await
    }

    /// Runs `work` inside `BEGIN IMMEDIATE`: the write lock is taken before anything is
    /// read ("now" included, which `work` reads), so what it reads is still true when it
    /// writes. COMMIT on success, synced as `commit` needs (durability.rs); on any error an
    /// explicit ROLLBACK, so nothing half-done is ever kept.
    async fn transaction<T>(&mut self, commit: Commit, work: impl AsyncFnOnce(&mut Local) -> Result<T>) -> Result<T> {
        if !self.conn.is_autocommit() {
            // An earlier call was cancelled mid-transaction (its future dropped), or an
            // application's transaction was dropped where it could not be rolled back.
            self.open = None;
            self.rollback().await;
        }
        let _slot: Held = self.begin(commit).await?;
        let outcome = match work(self).await {
            Ok(value) => match self.statements.execute(&self.conn, "COMMIT", ()).await {
                Ok(_) => self.check_wal(true).map(|()| value),
                Err(e) => Err(e.into()),
            },
            Err(e) => Err(e),
        };
        if outcome.is_err() {
            self.rollback().await;
        }
        outcome
    }

    /// Begins a write transaction whose commit needs `commit`: the WAL still ours, the sync
    /// level set, our processes' slot and SQLite's write lock taken (held until the guard
    /// drops).
    async fn begin(&mut self, commit: Commit) -> Result<Held> {
        self.check_wal(false)?;
        self.durability.prepare(&self.conn, commit).await?;
        self.lock.begin(&self.conn, &mut self.statements, &self.busy_retries).await
    }

    /// The chain's statements in order, inside a transaction; a guard reads the changes of
    /// the statement before it here instead of asking SQLite, and a statement that would
    /// change nothing after a change is skipped.
    async fn run_chain(&mut self, chain: Chain<'_>) -> Result<Vec<Done>> {
        let mut done: Vec<Done> = Vec::with_capacity(chain.links().len());
        for link in chain.into_links() {
            let before_changed = done.last().is_some_and(|before| before.changed > 0);
            if let Some(lease) = link.lost {
                if !before_changed {
                    return Err(lease_lost(lease));
                }
                done.push(Done::default());
                continue;
            }
            if link.unless_changed && before_changed {
                done.push(Done::default());
                continue;
            }
            done.push(match link.rows {
                true => {
                    let rows = self.statements.query_all(&self.conn, &link.sql, link.params, row_values).await?;
                    Done { rows, changed: self.conn.changes() }
                }
                false => Done {
                    rows: Vec::new(),
                    changed: self.statements.execute(&self.conn, &link.sql, link.params).await?,
                },
            });
        }
        Ok(done)
    }

    /// The rows of each statement, each its own read (no write lock). A read can still meet
    /// a brief "busy" (another process recovering the WAL as it opens the file, or switching
    /// a harel 0.9 file to WAL), and the connection's own busy timeout is zero (see lock.rs),
    /// so the reads are tried again within the busy timeout.
    pub async fn read(&mut self, reads: &[(&str, Vec<Value>)]) -> Result<Vec<Vec<Row>>> {
        let retries = Arc::clone(&self.busy_retries);
        let mut waiting = LockWait::local(self.lock.busy_timeout(), &retries);
        loop {
            match self.read_once(reads).await {
                Err(Error::Busy(_)) => std::thread::sleep(waiting.next_pause()?),
                other => return other,
            }
        }
    }

    async fn read_once(&mut self, reads: &[(&str, Vec<Value>)]) -> Result<Vec<Vec<Row>>> {
        let mut all = Vec::with_capacity(reads.len());
        for (sql, params) in reads {
            all.push(self.statements.query_all(&self.conn, sql, params.clone(), row_values).await?);
        }
        Ok(all)
    }

    /// `PRAGMA data_version`: changes once another connection's commit is visible.
    pub async fn data_version(&mut self) -> Result<Option<i64>> {
        Ok(self.statements.query_first(&self.conn, "PRAGMA data_version", (), |row| row.get::<i64>(0)).await?)
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
