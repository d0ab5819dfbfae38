//! An application's transaction kept open between calls (transaction/): begun by its first
//! read with our processes' slot and `BEGIN IMMEDIATE`, as every write transaction here,
//! and held until its COMMIT or ROLLBACK. Any error rolls it back: what was run of it is
//! never kept.

use super::durability::Commit;
use super::Local;
use crate::chain::{Chain, Done};
use crate::error::Result;

impl Local {
    /// Runs the chain `build` makes inside the open transaction, beginning it first when
    /// none is open; it stays open. `build` reads the clock, so it runs once the lock is held.
    pub async fn run_open<'c, T>(&mut self, build: impl FnOnce() -> Result<(Chain<'c>, T)>) -> Result<(Vec<Done>, T)> {
        if self.open.is_none() {
            if !self.conn.is_autocommit() {
                self.rollback().await;
            }
            self.open = Some(self.begin(Commit::Durable).await?);
        }
        let outcome = match build() {
            Ok((chain, extra)) => self.run_chain(chain).await.map(|done| (done, extra)),
            Err(e) => Err(e),
        };
        if outcome.is_err() {
            self.rollback_open().await;
        }
        outcome
    }

    /// Runs `chain`, then COMMIT, in the open transaction; rolled back on any error.
    pub async fn commit_open(&mut self, chain: Chain<'_>) -> Result<Vec<Done>> {
        let outcome = match self.run_chain(chain).await {
            Ok(done) => match self.statements.execute(&self.conn, "COMMIT", ()).await {
                Ok(_) => self.check_wal(true).map(|()| done),
                Err(e) => Err(e.into()),
            },
            Err(e) => Err(e),
        };
        match outcome.is_err() {
            true => self.rollback_open().await,
            false => self.open = None,
        }
        outcome
    }

    /// Ends the open transaction, keeping nothing of it; nothing when none is open.
    pub async fn rollback_open(&mut self) {
        if self.open.take().is_some() {
            self.rollback().await;
        }
    }
}
