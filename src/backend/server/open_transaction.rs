//! An application's transaction kept open between requests (transaction/), on the
//! pipeline's stream: begun by the request of its first read (BEGIN IMMEDIATE, the
//! statements queued before the read, the read), committed by its last. Between those
//! requests the server's write lock is held across the network, and sqld's rule applies:
//! a transaction that has held it for 5 s while another writer waits is rolled back by
//! the server, and its next request fails (`Error::Database`, naming the rule). A
//! transaction with no read before its commit never comes here: it is one request
//! (`Server::run`), its lock held for its statements alone.

use libsql_hrana::proto::{Batch, BatchStep, Stmt};

use super::batch::{self, Failed, Outcome, Shape};
use super::pipeline::Failure;
use super::{failed_request, server_error, Server};
use crate::backend::lock_wait::LockWait;
use crate::chain::{Chain, Done};
use crate::error::{Error, Result};

impl Server {
    /// Runs the chain `build` makes inside the open transaction, beginning it first when
    /// none is open (made again, with a new "now", while BEGIN finds the lock taken); it
    /// stays open. Any failure rolls it back.
    pub async fn run_open<'c, T>(
        &mut self,
        mut build: impl FnMut() -> Result<(Chain<'c>, T)>,
    ) -> Result<(Vec<Done>, T)> {
        let shape = Shape { begin: !self.open, commit: false };
        let retries = std::sync::Arc::clone(&self.busy_retries);
        let mut waiting = LockWait::server(self.busy_timeout, &retries);
        loop {
            let (chain, extra) = match build() {
                Ok(built) => built,
                Err(e) => return Err(self.abandon(e).await),
            };
            match self.send(&chain, shape).await {
                Ok(Outcome::Committed(done)) => {
                    self.open = true;
                    return Ok((done, extra));
                }
                Ok(Outcome::NotBegun(e)) => match server_error(e) {
                    Error::Busy(_) => tokio::time::sleep(waiting.next_pause()?).await,
                    other => return Err(other),
                },
                Ok(Outcome::Failed(failed)) => {
                    // The batch's own ROLLBACK ended it.
                    self.open = false;
                    return Err(failure(failed));
                }
                Err(e) => return Err(self.abandon(e).await),
            }
        }
    }

    /// Runs `chain`, then COMMIT, in the open transaction; rolled back on any failure.
    pub async fn commit_open(&mut self, chain: Chain<'_>) -> Result<Vec<Done>> {
        match self.send(&chain, Shape { begin: false, commit: true }).await {
            Ok(Outcome::Committed(done)) => {
                self.open = false;
                Ok(done)
            }
            Ok(Outcome::NotBegun(e)) => Err(self.abandon(server_error(e)).await),
            Ok(Outcome::Failed(failed)) => {
                self.open = false;
                Err(failure(failed))
            }
            Err(e) => Err(self.abandon(e).await),
        }
    }

    /// Ends the open transaction, keeping nothing of it; nothing when none is open. A
    /// failure to say so is not reported: the server rolls back a transaction whose stream
    /// it closes (idle for 10 s).
    pub async fn rollback_open(&mut self) {
        if std::mem::take(&mut self.open) {
            let rollback = BatchStep { condition: None, stmt: Stmt::new("ROLLBACK", false) };
            let limit = self.answer_limit();
            let batch = Batch { steps: vec![rollback], replication_index: None };
            let _ = tokio::time::timeout(limit, self.pipeline.run_on_stream(batch)).await;
        }
    }

    /// `e`, once the open transaction is rolled back.
    async fn abandon(&mut self, e: Error) -> Error {
        self.rollback_open().await;
        e
    }

    /// One request of the transaction: on the stream it is open on, or, to begin it, on
    /// any.
    async fn send(&self, chain: &Chain<'_>, shape: Shape) -> Result<Outcome> {
        let batch = batch::shaped(chain, shape)?;
        let limit = self.answer_limit();
        let sent = async {
            match shape.begin {
                true => self.pipeline.run(batch).await,
                false => self.pipeline.run_on_stream(batch).await,
            }
        };
        match tokio::time::timeout(limit, sent).await {
            Err(_) => Err(Error::Connect(format!(
                "the libSQL server did not answer within {} s: the transaction is rolled back{}",
                limit.as_secs(),
                if shape.commit { " unless its COMMIT was applied" } else { "" }
            ))),
            Ok(Err(Failure::Stream { code, .. })) if code == "STREAM_EXPIRED" => Err(Error::Connect(
                "the transaction's stream on the libSQL server is gone (idle for over 10 s, or the server \
                 restarted): the server rolled the transaction back, nothing of it was applied"
                    .into(),
            )),
            Ok(Err(failure)) => Err(failed_request(failure)),
            Ok(Ok(result)) => Ok(batch::outcome_of(chain, shape, result)),
        }
    }
}

fn failure(failed: Failed) -> Error {
    match failed {
        Failed::Server(e) => server_error(e),
        Failed::Lost(e) => e,
    }
}
