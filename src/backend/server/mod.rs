//! A queue on a libSQL server (remote), or in an embedded replica of one. Everything the
//! library sends to the server goes one way, through one client (pipeline.rs): each
//! operation's chain as one request (batch.rs), so the server's write lock is held for the
//! statements alone, never across the network; looks and schema checks as one request of
//! reads. One answer timeout, one busy policy and one error mapping, here. A replica sends
//! its writes to its primary the same way and keeps its local copy for looks, synced first.
//!
//! "Now" is read from the clock as each request is made, since the lock is taken on the
//! server; a `BEGIN IMMEDIATE` that finds the lock taken has run nothing, and the request
//! is made again (with a new "now") after a pause, until the busy timeout.

mod batch;
mod claim;
mod open;
mod open_transaction;
mod pipeline;
mod sync;

use std::sync::Arc;
use std::time::Duration;

use libsql::{Connection, Database, Value};
use libsql_hrana::proto::{self, Batch, BatchStep, Stmt};

use self::batch::{Failed, Outcome};
use self::pipeline::{Failure, Pipeline};
use crate::backend::lock_wait::LockWait;
use crate::chain::{row_values, Chain, Done, Row};
use crate::error::{Error, Result};
use crate::metrics::Counter;

/// How long one request may wait for the server's answer beyond the busy timeout: past
/// it the call fails with `Error::Connect` instead of hanging on a server that stopped
/// answering.
const SERVER_ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Server {
    pipeline: Pipeline,
    busy_timeout: Duration,
    busy_retries: Arc<Counter>,
    /// An embedded replica's local copy; None: a remote queue.
    replica: Option<Replica>,
    /// An application's transaction is open on the pipeline's stream (open_transaction.rs).
    open: bool,
}

/// The replica's file, which the `Database` keeps synced from the primary (its background
/// sync lives in it), and the connection looks read it through.
struct Replica {
    database: Database,
    conn: Connection,
}

impl Server {
    /// How long one operation may wait for the server, busy pauses included.
    fn answer_limit(&self) -> Duration {
        self.busy_timeout.saturating_add(SERVER_ANSWER_TIMEOUT)
    }

    /// Runs the chain `build` makes (with what it wants back once the chain has run) as one
    /// request; made again while BEGIN finds the write lock taken.
    pub async fn run<'c, T>(&mut self, build: impl FnMut() -> Result<(Chain<'c>, T)>) -> Result<(Vec<Done>, T)> {
        let limit = self.answer_limit();
        match tokio::time::timeout(limit, self.run_until_begun(build)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Error::Connect(format!(
                "the libSQL server did not answer within {} s: the operation may have been applied",
                limit.as_secs()
            ))),
        }
    }

    async fn run_until_begun<'c, T>(
        &self,
        mut build: impl FnMut() -> Result<(Chain<'c>, T)>,
    ) -> Result<(Vec<Done>, T)> {
        let mut waiting = LockWait::server(self.busy_timeout, &self.busy_retries);
        loop {
            let (chain, extra) = build()?;
            let result = self.pipeline.run(batch::batch(&chain)?).await.map_err(failed_request)?;
            match batch::outcome(&chain, result) {
                Outcome::Committed(results) => return Ok((results, extra)),
                Outcome::NotBegun(e) => match server_error(e) {
                    Error::Busy(_) => tokio::time::sleep(waiting.next_pause()?).await,
                    other => return Err(other),
                },
                Outcome::Failed(Failed::Lost(lost)) => return Err(lost),
                Outcome::Failed(Failed::Server(e)) => return Err(server_error(e)),
            }
        }
    }

    /// The rows of each statement, read without the write lock: on a remote queue in one
    /// request, on a replica from its local copy after a sync.
    pub async fn read(&mut self, reads: &[(&str, Vec<Value>)]) -> Result<Vec<Vec<Row>>> {
        if let Some(replica) = &self.replica {
            return replica.read(reads, self.answer_limit()).await;
        }
        let mut steps = Vec::with_capacity(reads.len());
        for (sql, params) in reads {
            let mut stmt = Stmt::new(*sql, true);
            for param in params {
                stmt.bind(batch::value(param.clone())?);
            }
            steps.push(BatchStep { condition: None, stmt });
        }
        let limit = self.answer_limit();
        let answered = tokio::time::timeout(limit, self.pipeline.run(Batch { steps, replication_index: None })).await;
        let result = answered
            .map_err(|_| Error::Connect(format!("the libSQL server did not answer within {} s", limit.as_secs())))?
            .map_err(failed_request)?;
        let mut errors = result.step_errors.into_iter();
        result
            .step_results
            .into_iter()
            .map(|step| match (step, errors.next().flatten()) {
                (_, Some(e)) => Err(server_error(e)),
                (Some(done), None) => Ok(batch::done(done).rows),
                (None, None) => Err(Error::Database("the libSQL server answered a read without its rows".into())),
            })
            .collect()
    }
}

impl Replica {
    /// The replica's copy lags the primary until its next sync, so a look pulls the
    /// primary's latest frames first (one round trip; the look itself stays local).
    async fn read(&self, reads: &[(&str, Vec<Value>)], limit: Duration) -> Result<Vec<Vec<Row>>> {
        match sync::sync(&self.database, limit).await {
            Ok(()) => {}
            Err(sync::SyncFailed::Error(e)) => {
                return Err(Error::Connect(format!("the replica could not sync from the libSQL server: {e}")))
            }
            Err(sync::SyncFailed::NoAnswer) => {
                return Err(Error::Connect(format!("the replica's sync got no answer within {} s", limit.as_secs())))
            }
        }
        let mut all = Vec::with_capacity(reads.len());
        for (sql, params) in reads {
            let mut rows = self.conn.query(sql, params.clone()).await?;
            let mut found = Vec::new();
            while let Some(row) = rows.next().await? {
                found.push(row_values(&row)?);
            }
            all.push(found);
        }
        Ok(all)
    }
}

fn server_error(e: proto::Error) -> Error {
    Error::from_server(&e.code, &e.message)
}

fn failed_request(failure: Failure) -> Error {
    match failure {
        Failure::Unreached(m) => {
            Error::Connect(format!("the libSQL server could not be reached: {m} (nothing was applied)"))
        }
        Failure::AnswerLost(m) => {
            Error::Connect(format!("the libSQL server's answer was lost: {m} (the operation may have been applied)"))
        }
        Failure::Status(status @ (401 | 403), body) => {
            Error::Connect(format!("the libSQL server refused the token (HTTP {status}): {body}"))
        }
        Failure::Status(status, body) => Error::Connect(format!("the libSQL server answered HTTP {status}: {body}")),
        Failure::Stream { code, message } => Error::from_server(&code, &message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_request_says_whether_it_may_have_been_applied() {
        let connect = |f| match failed_request(f) {
            Error::Connect(m) => m,
            other => panic!("{other:?}"),
        };
        assert!(connect(Failure::Unreached("refused".into())).contains("nothing was applied"));
        assert!(connect(Failure::AnswerLost("reset".into())).contains("may have been applied"));
        assert!(connect(Failure::Status(401, "The JWT is invalid".into())).contains("refused the token"));
        assert!(connect(Failure::Status(503, "".into())).contains("HTTP 503"));
        let timeout = Failure::Stream { code: "TRANSACTION_TIMEOUT".into(), message: "Transaction timed-out".into() };
        assert!(matches!(failed_request(timeout), Error::Database(m) if m.contains("5 s")));
        let busy = Failure::Stream { code: "SQLITE_BUSY".into(), message: "database is locked".into() };
        assert!(matches!(failed_request(busy), Error::Busy(_)));
    }
}
