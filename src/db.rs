//! One libSQL connection with what every operation needs around it: statements through
//! the cache, and write transactions that take the write lock first and always end in
//! COMMIT or an explicit ROLLBACK. How the lock is taken depends on where the queue lives:
//! a local file shares it among processes (local_lock.rs); a server connection may need
//! re-opening first (server_session.rs).

use std::time::Duration;

use libsql::params::IntoParams;
use libsql::{Connection, Database, Row};

use crate::connect::Connected;
use crate::error::{Error, Result};
use crate::local_lock::{Held, LocalLock};
use crate::mode::Mode;
use crate::other_sqlite::FileWatch;
use crate::server_ops::OneRequest;
use crate::server_session::ServerSession;
use crate::statement_cache::StatementCache;

pub struct Db {
    conn: Connection,
    statements: StatementCache,
    place: Place,
}

// One per connection, made once: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Place {
    /// Memory or a local file (`watch`: see other_sqlite.rs). The `Database` lives as
    /// long as its connection.
    /// (Fields drop in this order: the watch last, once nothing of ours has the file open.)
    Local { _database: Database, lock: LocalLock, watch: Option<FileWatch> },
    Server(ServerSession),
}

impl Db {
    /// The connection to `path` (a file, ":memory:", a URL) that `connect` opened; a
    /// local file's `watch` was taken before it was opened.
    pub fn new(connected: Connected, path: &str, busy_timeout: Duration, watch: Option<FileWatch>) -> Db {
        let Connected { database, connection, mode, one_request } = connected;
        let place = match mode {
            Mode::File => Place::Local { lock: LocalLock::file(path, busy_timeout), watch, _database: database },
            Mode::Memory => Place::Local { lock: LocalLock::memory(busy_timeout), watch: None, _database: database },
            Mode::Remote | Mode::Replica => {
                Place::Server(ServerSession::new(database, mode, busy_timeout, one_request))
            }
        };
        Db { conn: connection, statements: StatementCache::new(mode.prepares_statements()), place }
    }

    /// Whether statements are kept prepared (local databases) or sent as text each time.
    pub fn prepares_statements(&self) -> bool {
        self.statements.prepares()
    }

    /// Runs a statement that returns no rows; the number of rows it changed.
    pub async fn execute(&mut self, sql: &str, params: impl IntoParams) -> Result<u64> {
        let outcome = self.statements.execute(&self.conn, sql, params).await;
        outcome.map_err(|e| self.failed(e))
    }

    /// The first row of a query, read by `read` before the statement is reset.
    pub async fn query_one<T>(
        &mut self,
        sql: &str,
        params: impl IntoParams,
        read: impl FnOnce(&Row) -> libsql::Result<T>,
    ) -> Result<Option<T>> {
        let outcome = self.statements.query_one(&self.conn, sql, params, read).await;
        outcome.map_err(|e| self.failed(e))
    }

    /// Every row of a query, each read by `read`.
    pub async fn query_all<T>(
        &mut self,
        sql: &str,
        params: impl IntoParams,
        read: impl FnMut(&Row) -> libsql::Result<T>,
    ) -> Result<Vec<T>> {
        let outcome = self.statements.query_all(&self.conn, sql, params, read).await;
        outcome.map_err(|e| self.failed(e))
    }

    /// On a server: the worker's operations as one request each (server_ops.rs).
    pub fn one_request(&self) -> Option<&OneRequest> {
        match &self.place {
            Place::Server(session) => session.one_request(),
            Place::Local { .. } => None,
        }
    }

    /// Before a look inside the queue (see ServerSession::catch_up).
    pub async fn catch_up(&mut self) -> Result<()> {
        match &mut self.place {
            Place::Server(session) => session.catch_up().await,
            Place::Local { .. } => Ok(()),
        }
    }

    /// Converts a libsql error, noting one that leaves a server connection unusable.
    fn failed(&mut self, e: libsql::Error) -> Error {
        if let Place::Server(session) = &mut self.place {
            session.note(&e);
        }
        Error::from(e)
    }

    /// Runs `work` inside `BEGIN IMMEDIATE`: the write lock is taken before anything is
    /// read, so what `work` reads is still true when it writes. COMMIT on success; on any
    /// error an explicit ROLLBACK, so nothing half-done is ever kept. On a server, a call
    /// that gets no answer in time fails with `Error::Connect`.
    pub async fn write_transaction<T>(&mut self, work: impl AsyncFnOnce(&mut Db) -> Result<T>) -> Result<T> {
        let Place::Server(session) = &self.place else {
            return self.transaction(work).await;
        };
        let limit = session.answer_limit();
        match tokio::time::timeout(limit, self.transaction(work)).await {
            Ok(outcome) => outcome,
            Err(_) => match &mut self.place {
                Place::Server(session) => Err(session.no_answer()),
                Place::Local { .. } => unreachable!("a Db does not change places"),
            },
        }
    }

    async fn transaction<T>(&mut self, work: impl AsyncFnOnce(&mut Db) -> Result<T>) -> Result<T> {
        if !self.conn.is_autocommit() {
            // An earlier call was cancelled mid-transaction (its future dropped). Rolled
            // back here: a replica's dropped transaction would keep the primary's write
            // lock until sqld's 5 s timeout.
            self.rollback().await;
        }
        self.check_wal(false)?;
        let _slot = self.begin_immediate().await?;
        let outcome = match work(self).await {
            Ok(value) => match self.execute("COMMIT", ()).await {
                Ok(_) => self.check_wal(true).map(|()| value),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        if outcome.is_err() {
            self.rollback().await;
            if let Place::Server(session) = &mut self.place {
                if !self.conn.is_autocommit() {
                    session.mark_stale();
                }
            }
        }
        outcome
    }

    /// A local file: the WAL must still be the one this connection writes to.
    fn check_wal(&mut self, committed: bool) -> Result<()> {
        match &mut self.place {
            Place::Local { watch: Some(watch), .. } => watch.check_wal(committed),
            _ => Ok(()),
        }
    }

    /// Takes the write lock. On a local file the guard holds our processes' slot until
    /// the transaction is over.
    async fn begin_immediate(&mut self) -> Result<Option<Held>> {
        let Db { conn, statements, place } = self;
        match place {
            Place::Local { lock, .. } => lock.begin(conn, statements).await.map(Some),
            Place::Server(session) => session.begin(conn).await.map(|()| None),
        }
    }

    async fn rollback(&mut self) {
        // Its own failure ("no transaction is active") only means there is nothing to undo;
        // on a server, one that left the connection unusable marks it stale.
        if let Err(e) = self.conn.execute("ROLLBACK", ()).await {
            self.failed(e);
        }
    }

    /// Drops cached statements before the connection goes.
    pub fn close(&mut self) {
        self.statements.clear();
    }
}
