//! Keeping a connection to a libSQL server (remote, or an embedded replica's primary)
//! usable across what goes wrong on a network.
//!
//! The connection can go bad under us: its server-side stream expires after 10 s idle
//! (`STREAM_EXPIRED`), a restarted server no longer knows its baton (`Received an invalid
//! baton`), sqld rolls back a transaction held over 5 s while another writer waits
//! (`TRANSACTION_TIMEOUT`), the network drops a request. libsql keeps the broken stream
//! and fails every later statement the same way, so such a failure marks the session
//! stale, and the next transaction first opens a new connection from the `Database`. A
//! `BEGIN IMMEDIATE` that failed has done nothing, so it is tried again at once on a new
//! connection, and on `SQLITE_BUSY` (which sqld returns under write contention long before
//! its own lock wait is over) until the busy timeout.

use std::time::Duration;

use libsql::{Connection, Database};

use crate::connect;
use crate::error::{is_connection_error, Error, Result};
use crate::lock_wait::LockWait;
use crate::mode::Mode;
use crate::server_ops::OneRequest;

/// How long a transaction on a server may take, `BEGIN` to `COMMIT`, beyond the busy
/// timeout: past it the call fails with `Error::Connect` instead of hanging on a server
/// that stopped answering. (sqld ends a transaction held 5 s while another writer waits.)
pub(crate) const SERVER_ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

pub struct ServerSession {
    /// What connections come from. It also keeps a replica's background sync alive.
    database: Database,
    mode: Mode,
    busy_timeout: Duration,
    /// The connection may be unusable: re-opened before the next transaction.
    stale: bool,
    /// The worker's operations, which do not use the connection (None: the benchmark's
    /// comparison with the statement-per-round-trip transactions).
    one_request: Option<OneRequest>,
}

impl ServerSession {
    pub fn new(
        database: Database,
        mode: Mode,
        busy_timeout: Duration,
        one_request: Option<OneRequest>,
    ) -> ServerSession {
        // A remote connection's reads outside a transaction (open's checks) leave a server
        // stream open, which expires after 10 s idle: the first transaction starts on a
        // new connection.
        ServerSession { database, mode, busy_timeout, stale: mode == Mode::Remote, one_request }
    }

    pub fn one_request(&self) -> Option<&OneRequest> {
        self.one_request.as_ref()
    }

    /// Notes a failure that leaves the connection unusable.
    pub fn note(&mut self, e: &libsql::Error) {
        if is_connection_error(e) {
            self.stale = true;
        }
    }

    /// The connection is in an unknown state (a failed transaction it could not roll back).
    pub fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// How long a whole transaction may wait for the server's answers.
    pub fn answer_limit(&self) -> Duration {
        self.busy_timeout.saturating_add(SERVER_ANSWER_TIMEOUT)
    }

    /// The error of a transaction that got no answer within `answer_limit`. Whatever the
    /// server still holds of it, it rolls back when the stream expires; the next call
    /// starts on a new connection.
    pub fn no_answer(&mut self) -> Error {
        self.stale = true;
        Error::Connect(format!(
            "the libSQL server did not answer within {} s (if it was the COMMIT that got no \
             answer, it may have been applied); the connection is re-opened at the next call",
            self.answer_limit().as_secs()
        ))
    }

    /// Before a look inside the queue: an embedded replica reads its local copy, which
    /// lags the primary until its next sync, so it pulls the primary's latest frames first
    /// (one round trip; the look itself stays local). A remote connection reads the server.
    pub async fn catch_up(&mut self) -> Result<()> {
        if self.mode != Mode::Replica {
            return Ok(());
        }
        match tokio::time::timeout(self.answer_limit(), self.database.sync()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(Error::Connect(format!("the replica could not sync from the libSQL server: {e}"))),
            Err(_) => Err(Error::Connect(format!(
                "the replica's sync got no answer within {} s",
                self.answer_limit().as_secs()
            ))),
        }
    }

    /// BEGIN IMMEDIATE on a usable connection: again after a pause on SQLITE_BUSY, and once
    /// on a new connection when the server's had gone bad (a failed BEGIN has done nothing).
    pub async fn begin(&mut self, conn: &mut Connection) -> Result<()> {
        if self.stale {
            self.reopen(conn)?;
        }
        let mut waiting = LockWait::server(self.busy_timeout);
        let mut reopened = false;
        loop {
            let begun = conn.execute("BEGIN IMMEDIATE", ()).await.map_err(|e| {
                self.note(&e);
                Error::from(e)
            });
            match begun {
                Err(Error::Busy(_)) => tokio::time::sleep(waiting.next_pause()?).await,
                Err(_) if self.stale && !reopened => {
                    self.reopen(conn)?;
                    reopened = true;
                }
                other => return other.map(drop),
            }
        }
    }

    /// A new connection to the same server (for a replica: a new session on the primary).
    fn reopen(&mut self, conn: &mut Connection) -> Result<()> {
        let fresh = self
            .database
            .connect()
            .map_err(|e| Error::Connect(format!("could not re-open the connection to the libSQL server: {e}")))?;
        if self.mode == Mode::Replica {
            connect::sqlite_busy_timeout(&fresh, self.busy_timeout)?;
        }
        *conn = fresh;
        self.stale = false;
        Ok(())
    }
}
