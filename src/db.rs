//! One libSQL connection with what every operation needs around it: prepared statements
//! kept for reuse (local modes), the wait for the write lock, and write transactions that
//! always end in COMMIT or an explicit ROLLBACK.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use libsql::params::IntoParams;
use libsql::{Connection, Row, Statement};

use crate::error::{Error, Result};

/// The longest pause between two tries for the write lock.
const MAX_LOCK_PAUSE: Duration = Duration::from_millis(1);

pub struct Db {
    conn: Connection,
    statements: Option<HashMap<String, Statement>>,
    /// Local files: how long BEGIN IMMEDIATE keeps trying for the write lock (SQLite's
    /// own busy handler is off). None: the server decides.
    lock_wait: Option<Duration>,
}

impl Db {
    /// `lock_wait` set means a local database whose connection has SQLite's busy timeout
    /// at 0, so that this type does the waiting.
    pub fn new(conn: Connection, cache_statements: bool, lock_wait: Option<Duration>) -> Db {
        Db { conn, statements: cache_statements.then(HashMap::new), lock_wait }
    }

    async fn statement(&mut self, sql: &str) -> libsql::Result<Option<&Statement>> {
        let Some(cache) = self.statements.as_mut() else { return Ok(None) };
        if !cache.contains_key(sql) {
            let prepared = self.conn.prepare(sql).await?;
            cache.insert(sql.to_owned(), prepared);
        }
        Ok(cache.get(sql))
    }

    /// Runs a statement that returns no rows; the number of rows it changed.
    pub async fn execute(&mut self, sql: &str, params: impl IntoParams) -> Result<u64> {
        let result = match self.statement(sql).await? {
            Some(stmt) => {
                let n = stmt.execute(params).await.map(|n| n as u64);
                stmt.reset();
                n
            }
            None => self.conn.execute(sql, params).await,
        };
        Ok(result?)
    }

    /// The first row of a query, read by `read` before the statement is reset.
    pub async fn query_one<T>(
        &mut self,
        sql: &str,
        params: impl IntoParams,
        read: impl FnOnce(&Row) -> libsql::Result<T>,
    ) -> Result<Option<T>> {
        let result = match self.statement(sql).await? {
            Some(stmt) => {
                let value = first_row(stmt.query(params).await, read).await;
                stmt.reset();
                value
            }
            None => first_row(self.conn.query(sql, params).await, read).await,
        };
        Ok(result?)
    }

    /// Runs `work` inside `BEGIN IMMEDIATE`: the write lock is taken before anything is
    /// read, so what `work` reads is still true when it writes. COMMIT on success; on any
    /// error an explicit ROLLBACK, so nothing half-done is ever kept.
    pub async fn write_transaction<T>(&mut self, work: impl AsyncFnOnce(&mut Db) -> Result<T>) -> Result<T> {
        if !self.conn.is_autocommit() {
            // An earlier call was cancelled mid-transaction (its future dropped).
            self.rollback().await;
        }
        self.begin_immediate().await?;
        let outcome = match work(self).await {
            Ok(value) => self.execute("COMMIT", ()).await.map(|_| value),
            Err(e) => Err(e),
        };
        if outcome.is_err() {
            self.rollback().await;
        }
        outcome
    }

    /// Takes the write lock: BEGIN IMMEDIATE, retried after [`LockWait`]'s pauses on local
    /// files, where SQLite's own busy handler is off.
    async fn begin_immediate(&mut self) -> Result<()> {
        let Some(wait) = self.lock_wait else {
            return self.execute("BEGIN IMMEDIATE", ()).await.map(drop);
        };
        let mut waiting = LockWait::new(wait);
        loop {
            match self.execute("BEGIN IMMEDIATE", ()).await {
                Err(Error::Busy(_)) => waiting.pause_or_give_up()?,
                other => return other.map(drop),
            }
        }
    }

    async fn rollback(&mut self) {
        // Its own failure ("no transaction is active") only means there is nothing to undo.
        let _ = self.conn.execute("ROLLBACK", ()).await;
    }

    /// Drops cached statements before the connection goes.
    pub fn close(&mut self) {
        self.statements = None;
    }
}

/// Waiting for a lock that SQLite reported busy. SQLite's busy handler sleeps ever longer
/// between tries (up to 100 ms), so under contention a process that once missed the lock
/// keeps sleeping through the short gaps between other processes' transactions and
/// starves; short, jittered pauses give every process its share.
pub struct LockWait {
    wait: Duration,
    started: Instant,
    tries: u64,
    jitter: RandomState,
}

impl LockWait {
    pub fn new(wait: Duration) -> LockWait {
        LockWait { wait, started: Instant::now(), tries: 0, jitter: RandomState::new() }
    }

    /// After a busy answer: pauses before the next try, or gives up once `wait` is over.
    pub fn pause_or_give_up(&mut self) -> Result<()> {
        if self.started.elapsed() >= self.wait {
            return Err(Error::Busy(format!(
                "another connection held the database's lock for longer than the busy timeout ({} s)",
                self.wait.as_secs_f64()
            )));
        }
        self.tries += 1;
        // 20..1000 µs, growing with the tries, jittered so waiters spread out.
        let cap = (20u64 << self.tries.min(6)).min(MAX_LOCK_PAUSE.as_micros() as u64);
        let pause = cap / 2 + self.jitter.hash_one(self.tries) % (cap / 2 + 1);
        // The local engine is synchronous anyway: every libsql call on a local file
        // already runs on the calling thread.
        std::thread::sleep(Duration::from_micros(pause));
        Ok(())
    }
}

async fn first_row<T>(
    rows: libsql::Result<libsql::Rows>,
    read: impl FnOnce(&Row) -> libsql::Result<T>,
) -> libsql::Result<Option<T>> {
    match rows?.next().await? {
        Some(row) => read(&row).map(Some),
        None => Ok(None),
    }
}

impl From<libsql::Error> for Error {
    fn from(e: libsql::Error) -> Error {
        Error::from_libsql("database", e)
    }
}
