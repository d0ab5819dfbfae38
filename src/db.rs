//! One libSQL connection with what every operation needs around it: prepared statements
//! kept for reuse (local modes), the wait for the write lock, and write transactions that
//! always end in COMMIT or an explicit ROLLBACK.
//!
//! On a server (remote or embedded replica) the connection can go bad under us: its
//! server-side stream expires after 10 s idle (`STREAM_EXPIRED`), a restarted server no
//! longer knows its baton (`Received an invalid baton`), sqld rolls back a transaction
//! held over 5 s while another writer waits (`TRANSACTION_TIMEOUT`), the network drops a
//! request. libsql keeps the broken stream and fails every later statement the same way,
//! so such a failure marks the connection stale, and the next transaction first opens a
//! new one from the `Database`. A `BEGIN IMMEDIATE` that failed has done nothing, so it is
//! tried again at once on a new connection, and on `SQLITE_BUSY` (which sqld returns under
//! write contention long before its own lock wait is over) until the busy timeout.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use libsql::params::IntoParams;
use libsql::{Connection, Database, Row, Statement};

use crate::connect::{self, Connected, Mode};
use crate::error::{is_connection_error, Error, Result};
use crate::lock_sharing::LockSharing;

/// How long a transaction on a server may take, `BEGIN` to `COMMIT`, beyond the busy
/// timeout: past it the call fails with `Error::Connect` instead of hanging on a server
/// that stopped answering. (sqld ends a transaction held 5 s while another writer waits.)
const SERVER_ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Db {
    conn: Connection,
    /// What `conn` came from: a server connection that went bad is re-opened from it.
    /// It also keeps a replica's background sync alive.
    database: Database,
    mode: Mode,
    statements: Option<HashMap<String, Statement>>,
    /// How long BEGIN IMMEDIATE keeps trying for the write lock: local connections have
    /// SQLite's own busy handler off, and sqld answers SQLITE_BUSY under contention long
    /// before its own lock wait is over.
    busy_timeout: Duration,
    /// A server connection that may be unusable: re-opened before the next transaction.
    stale: bool,
    /// Local files: see lock_sharing.rs.
    sharing: LockSharing,
}

impl Db {
    pub fn new(connected: Connected, mode: Mode, busy_timeout: Duration) -> Db {
        Db {
            conn: connected.connection,
            database: connected.database,
            sharing: connected.sharing,
            mode,
            statements: mode.caches_statements().then(HashMap::new),
            busy_timeout,
            // A remote connection's reads outside a transaction (open's checks) leave a
            // server stream open, which expires after 10 s idle: the first transaction
            // starts on a new connection.
            stale: mode == Mode::Remote,
        }
    }

    /// Whether statements are kept prepared (local databases) or sent as text each time.
    pub fn prepares_statements(&self) -> bool {
        self.statements.is_some()
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
        let result = match self.statement(sql).await {
            Ok(Some(stmt)) => {
                let n = stmt.execute(params).await.map(|n| n as u64);
                stmt.reset();
                n
            }
            Ok(None) => self.conn.execute(sql, params).await,
            Err(e) => Err(e),
        };
        result.map_err(|e| self.failed(e))
    }

    /// The first row of a query, read by `read` before the statement is reset.
    pub async fn query_one<T>(
        &mut self,
        sql: &str,
        params: impl IntoParams,
        read: impl FnOnce(&Row) -> libsql::Result<T>,
    ) -> Result<Option<T>> {
        let result = match self.statement(sql).await {
            Ok(Some(stmt)) => {
                let value = first_row(stmt.query(params).await, read).await;
                stmt.reset();
                value
            }
            Ok(None) => first_row(self.conn.query(sql, params).await, read).await,
            Err(e) => Err(e),
        };
        result.map_err(|e| self.failed(e))
    }

    /// Converts a libsql error, noting one that leaves a server connection unusable.
    fn failed(&mut self, e: libsql::Error) -> Error {
        if self.mode.is_networked() && is_connection_error(&e) {
            self.stale = true;
        }
        Error::from(e)
    }

    /// Runs `work` inside `BEGIN IMMEDIATE`: the write lock is taken before anything is
    /// read, so what `work` reads is still true when it writes. COMMIT on success; on any
    /// error an explicit ROLLBACK, so nothing half-done is ever kept. On a server, a call
    /// that gets no answer in time fails with `Error::Connect`.
    pub async fn write_transaction<T>(&mut self, work: impl AsyncFnOnce(&mut Db) -> Result<T>) -> Result<T> {
        if !self.mode.is_networked() {
            return self.transaction(work).await;
        }
        let limit = self.busy_timeout.saturating_add(SERVER_ANSWER_TIMEOUT);
        match tokio::time::timeout(limit, self.transaction(work)).await {
            Ok(outcome) => outcome,
            Err(_) => {
                // Whatever the server still holds of this transaction it rolls back when
                // the stream expires; the next call starts on a new connection.
                self.stale = true;
                Err(Error::Connect(format!(
                    "the libSQL server did not answer within {} s (if it was the COMMIT that \
                     got no answer, it may have been applied); the connection is re-opened at \
                     the next call",
                    limit.as_secs()
                )))
            }
        }
    }

    async fn transaction<T>(&mut self, work: impl AsyncFnOnce(&mut Db) -> Result<T>) -> Result<T> {
        if !self.conn.is_autocommit() {
            // An earlier call was cancelled mid-transaction (its future dropped). Rolled
            // back here: a replica's dropped transaction would keep the primary's write
            // lock until sqld's 5 s timeout.
            self.rollback().await;
        }
        if self.stale {
            self.reopen()?;
        }
        self.begin_immediate().await?;
        let outcome = match work(self).await {
            Ok(value) => self.execute("COMMIT", ()).await.map(|_| value),
            Err(e) => Err(e),
        };
        if outcome.is_err() {
            self.rollback().await;
            if self.mode.is_networked() && !self.conn.is_autocommit() {
                self.stale = true;
            }
        }
        self.sharing.leave();
        outcome
    }

    /// Takes the write lock: BEGIN IMMEDIATE, tried again after [`LockWait`]'s pauses while
    /// the database is busy.
    async fn begin_immediate(&mut self) -> Result<()> {
        if self.mode.is_networked() {
            self.begin_on_server().await
        } else {
            self.begin_locally().await
        }
    }

    /// Local files: our processes' turn first (lock_sharing.rs), then SQLite's lock. The
    /// engine is synchronous anyway (every libsql call on a local file runs on the calling
    /// thread), and tokio's timer counts whole milliseconds: the pauses are thread sleeps.
    async fn begin_locally(&mut self) -> Result<()> {
        let mut waiting = LockWait::local(self.busy_timeout);
        while !self.sharing.try_enter() {
            match waiting.next_pause() {
                Ok(pause) => std::thread::sleep(self.sharing.pause(pause)),
                Err(e) => {
                    self.sharing.leave();
                    return Err(e);
                }
            }
        }
        let begun = loop {
            match self.execute("BEGIN IMMEDIATE", ()).await {
                Err(Error::Busy(_)) => match waiting.next_pause() {
                    Ok(pause) => {
                        self.sharing.other_program_holds_lock();
                        std::thread::sleep(pause);
                    }
                    Err(e) => break Err(e),
                },
                other => break other.map(drop),
            }
        };
        if begun.is_err() {
            self.sharing.leave();
        }
        begun
    }

    /// A server: BEGIN IMMEDIATE again on SQLITE_BUSY (sqld answers it under write
    /// contention long before its own lock wait is over), and once on a new connection
    /// when the server's had gone bad (a failed BEGIN has done nothing).
    async fn begin_on_server(&mut self) -> Result<()> {
        let mut waiting = LockWait::server(self.busy_timeout);
        let mut reopened = false;
        loop {
            match self.execute("BEGIN IMMEDIATE", ()).await {
                Err(Error::Busy(_)) => tokio::time::sleep(waiting.next_pause()?).await,
                Err(_) if self.stale && !reopened => {
                    self.reopen()?;
                    reopened = true;
                }
                other => return other.map(drop),
            }
        }
    }

    /// A new connection to the same server (for a replica: a new session on the primary).
    fn reopen(&mut self) -> Result<()> {
        let conn = self.database.connect().map_err(|e| {
            self.stale = true;
            Error::Connect(format!("could not re-open the connection to the libSQL server: {e}"))
        })?;
        if self.mode == Mode::Replica {
            connect::sqlite_busy_timeout(&conn, self.busy_timeout)?;
        }
        self.conn = conn;
        self.stale = false;
        Ok(())
    }

    async fn rollback(&mut self) {
        self.sharing.leave();
        // Its own failure ("no transaction is active") only means there is nothing to undo;
        // on a server, one that left the connection unusable marks it stale.
        if let Err(e) = self.conn.execute("ROLLBACK", ()).await {
            self.failed(e);
        }
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
    tries: u32,
    jitter: RandomState,
    first_pause: Duration,
    max_pause: Duration,
}

impl LockWait {
    /// A local file: 20 µs .. 1 ms between tries.
    pub fn local(wait: Duration) -> LockWait {
        LockWait::new(wait, Duration::from_micros(20), Duration::from_millis(1))
    }

    /// A server, where each try is a round trip: 1 .. 50 ms.
    pub fn server(wait: Duration) -> LockWait {
        LockWait::new(wait, Duration::from_millis(1), Duration::from_millis(50))
    }

    fn new(wait: Duration, first_pause: Duration, max_pause: Duration) -> LockWait {
        LockWait { wait, started: Instant::now(), tries: 0, jitter: RandomState::new(), first_pause, max_pause }
    }

    /// After a busy answer: how long to pause before the next try, or `Error::Busy` once
    /// `wait` is over.
    pub fn next_pause(&mut self) -> Result<Duration> {
        if self.started.elapsed() >= self.wait {
            return Err(Error::Busy(format!(
                "another connection held the database's lock for longer than the busy timeout ({} s)",
                self.wait.as_secs_f64()
            )));
        }
        self.tries += 1;
        // Growing with the tries up to the cap, jittered between half and all of it so
        // waiters spread out.
        let cap = (self.first_pause * (1 << self.tries.min(6))).min(self.max_pause).as_micros() as u64;
        Ok(Duration::from_micros(cap / 2 + self.jitter.hash_one(self.tries) % (cap / 2 + 1)))
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
