//! The one error type of the crate. Its variants map one-to-one onto the C ABI's
//! negative status codes (see `ffi::status`), so every layer reports the same five kinds.

use std::fmt;

/// What went wrong, with a message for people. Programs match on the variant.
/// New kinds may come in minor versions (as new statuses do in the C ABI).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A bad argument; the message names the parameter. Nothing was changed.
    Argument(String),
    /// The database failed (I/O, corruption, missing schema, any other SQL error).
    Database(String),
    /// The write lock was not had within the busy timeout.
    Busy(String),
    /// `ack`/`nack`: the message is gone or no longer leased to this worker.
    LeaseLost(String),
    /// A libSQL server could not be reached or refused the token.
    Connect(String),
    /// A waiting claim was cancelled (its `Cancel` fired) or its transport interrupted;
    /// it claimed nothing.
    Interrupted(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn message(&self) -> &str {
        match self {
            Error::Argument(m)
            | Error::Database(m)
            | Error::Busy(m)
            | Error::LeaseLost(m)
            | Error::Connect(m)
            | Error::Interrupted(m) => m,
        }
    }

    /// The same error with the operation that met it named first ("claim: ...").
    pub(crate) fn during(self, operation: &str) -> Error {
        let prefixed = |m: String| format!("{operation}: {m}");
        match self {
            Error::Argument(m) => Error::Argument(prefixed(m)),
            Error::Database(m) => Error::Database(prefixed(m)),
            Error::Busy(m) => Error::Busy(prefixed(m)),
            Error::LeaseLost(m) => Error::LeaseLost(prefixed(m)),
            Error::Connect(m) => Error::Connect(prefixed(m)),
            Error::Interrupted(m) => Error::Interrupted(prefixed(m)),
        }
    }

    /// Wraps a libsql error met while doing `what` ("claim", "open", ...), sorting
    /// lock contention into `Busy`, a libSQL server that could not be reached or dropped
    /// the session into `Connect`, and everything else into `Database`.
    pub(crate) fn from_libsql(what: &str, e: libsql::Error) -> Error {
        let text = e.to_string();
        let message = format!("{what}: {text}");
        if is_busy(&e, &text) {
            Error::Busy(format!("{message} (the write lock was not had within the busy timeout)"))
        } else if is_transaction_timeout(&text) {
            Error::Database(format!(
                "{message} (the libSQL server rolled the transaction back: it was held over 5 s \
                 while another writer waited; nothing of it was applied)"
            ))
        } else if is_connection_error(&e) {
            Error::Connect(format!(
                "{message} (the libSQL server could not be reached or dropped the session; the \
                 connection is re-opened at the next call)"
            ))
        } else {
            Error::Database(message)
        }
    }
}

impl Error {
    /// An error a libSQL server reported for a statement of a one-request operation
    /// (backend/server), sorted as `from_libsql` sorts them; the code is SQLite's name for
    /// it (`SQLITE_BUSY`, ...) or sqld's (`TRANSACTION_TIMEOUT`, ...).
    pub(crate) fn from_server(code: &str, message: &str) -> Error {
        let text = format!("{message} ({code})");
        if code.contains("SQLITE_BUSY") || code.contains("SQLITE_LOCKED") || text.contains("database is locked") {
            Error::Busy(format!("{text} (the write lock was not had within the busy timeout)"))
        } else if is_transaction_timeout(&text) {
            Error::Database(format!(
                "{text} (the libSQL server rolled the transaction back: it was held over 5 s while \
                 another writer waited; nothing of it was applied)"
            ))
        } else {
            Error::Database(text)
        }
    }
}

/// sqld's 5 s rule: a write transaction held that long while another writer waits is rolled
/// back, and the next statement on its connection fails with this.
fn is_transaction_timeout(text: &str) -> bool {
    text.contains("TRANSACTION_TIMEOUT")
        || text.contains("Transaction timed-out")
        || text.contains("Transaction timed out")
}

/// A failure of the connection to a libSQL server rather than of the SQL: the server could
/// not be reached, closed the request, expired the stream (`STREAM_EXPIRED`, 10 s idle),
/// no longer knows its baton (it restarted), or timed the transaction out; or the client's
/// own view of the session went wrong. libsql keeps such a connection's stream and fails
/// every later statement on it, so it must be re-opened. SQL errors (constraint, syntax,
/// busy) are not connection errors.
fn is_connection_error(e: &libsql::Error) -> bool {
    let text = e.to_string();
    match e {
        // Remote (Hrana over HTTP): SQL errors come as "stream error" (execute) or "cursor
        // error: error at step" (query) with a SQLite code; the rest is the transport or the stream.
        libsql::Error::Hrana(_) => {
            let sql_error = text.contains("stream error") || text.contains("error at step");
            !sql_error || text.contains("STREAM_EXPIRED") || is_transaction_timeout(&text)
        }
        // Embedded replica: the gRPC call to the primary failed.
        // (Not ConnectionFailed: libsql reports a local file it cannot open with it too.)
        libsql::Error::WriteDelegation(_)
        | libsql::Error::InvalidParserState(_)
        | libsql::Error::Replication(_)
        | libsql::Error::Sync(_) => true,
        libsql::Error::RemoteSqliteFailure(..) => is_transaction_timeout(&text),
        _ => false,
    }
}

/// SQLITE_BUSY (5) and SQLITE_LOCKED (6), in their extended forms too; a server reports
/// them as text.
fn is_busy(e: &libsql::Error, text: &str) -> bool {
    match e {
        libsql::Error::SqliteFailure(code, _) => matches!(code & 0xff, 5 | 6),
        libsql::Error::RemoteSqliteFailure(code, ext, _) => matches!(code & 0xff, 5 | 6) || matches!(ext & 0xff, 5 | 6),
        _ => text.contains("SQLITE_BUSY") || text.contains("database is locked"),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

impl From<libsql::Error> for Error {
    fn from(e: libsql::Error) -> Error {
        Error::from_libsql("database", e)
    }
}
