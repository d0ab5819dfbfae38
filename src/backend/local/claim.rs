//! A claim on a local file: inside the transaction, a look (the `SELECT` of the best head,
//! `Statements::claim`) and, with what it found, the group's turn and the lease. A head
//! that cannot be handed out (claimed `max_attempts` times already, 0 meaning no limit; or
//! text another program stored that is not UTF-8) moves to the dead-letter table instead,
//! and the claim looks again: that group's next message (which keeps the group's place) or
//! another group's is served, and the queue is never blocked behind it.
//!
//! The server's chain (sql/claim.rs) would serve here too, but it costs a local claim
//! 1.4–1.9× as much at NORMAL (docs/architecture.md, "One claim algorithm?"): a look that
//! finds nothing is one statement here and three there, and with no network to wait on,
//! the statements are the whole price of a claim.

use libsql::Value;

use super::durability::Commit;
use super::Local;
use crate::chain::{row_values, Before, Chain, Claimed};
use crate::error::Result;
use crate::request::{Claim, Now};
use crate::sql::Statements;
use crate::types::Lease;

impl Local {
    /// Up to `want` leases after `before`'s statements, in one transaction.
    pub async fn claim<'a>(
        &mut self,
        sql: &'a Statements,
        (c, want): (&Claim<'_>, usize),
        now: Now<'_>,
        before: Option<Before<'_, 'a>>,
    ) -> Result<Claimed> {
        // A claim alone commits a lease only; after an ack it commits the ack too.
        let commit = if before.is_some() { Commit::Durable } else { Commit::Lease };
        self.transaction(commit, async |local| {
            let now = now()?;
            let mut claimed = Claimed::default();
            if let Some(before) = before {
                let (chain, marked) = before(Chain::new(), now)?;
                let done = local.run_chain(chain).await?;
                claimed.before = marked.iter().map(|&i| done[i].changed).collect();
            }
            while claimed.leases.len() < want {
                match local.claim_one(sql, c, now, &mut claimed.buried).await? {
                    Some(lease) => claimed.leases.push(lease),
                    None => break,
                }
            }
            Ok(claimed)
        })
        .await
    }

    /// The next lease, after burying (and counting in `buried`) the heads it cannot hand out.
    async fn claim_one(
        &mut self,
        sql: &Statements,
        c: &Claim<'_>,
        now: f64,
        buried: &mut u64,
    ) -> Result<Option<Lease>> {
        loop {
            let (claim, params) = sql.claim(now, c.min_priority, c.routing_keys);
            let Some(row) = self.statements.query_first(&self.conn, &claim, params, row_values).await? else {
                return Ok(None);
            };
            let (seq, group_id, event, attempts) = match <[Value; 4]>::try_from(row) {
                Ok([Value::Integer(seq), Value::Blob(group_id), Value::Blob(event), Value::Integer(attempts)]) => {
                    (seq, group_id, event, attempts)
                }
                Ok(other) => return Err(unexpected(&other)),
                Err(other) => return Err(unexpected(&other)),
            };
            let undeliverable = match (String::from_utf8(group_id), String::from_utf8(event)) {
                _ if c.max_attempts > 0 && attempts >= i64::from(c.max_attempts) => {
                    format!("claimed {attempts} times: max_attempts is {}", c.max_attempts)
                }
                (Ok(group_id), Ok(event)) => {
                    let lock_expiry = now + c.visibility;
                    self.execute(&sql.set_group_ready_at, vec![group_id.as_str().into(), lock_expiry.into()]).await?;
                    self.execute(&sql.lease_message, vec![seq.into(), c.worker_id.into(), lock_expiry.into()]).await?;
                    let worker_id = c.worker_id.to_owned();
                    return Ok(Some(Lease { seq, group_id, event, worker_id, lock_expiry, attempts: attempts + 1 }));
                }
                (Err(_), _) => "its group_id is not valid UTF-8 (written by another program)".to_owned(),
                (_, Err(_)) => "its event is not valid UTF-8 (written by another program)".to_owned(),
            };
            self.execute(&sql.bury_head, vec![seq.into(), undeliverable.into(), now.into()]).await?;
            self.execute(&sql.delete_message, vec![seq.into()]).await?;
            self.execute(&sql.drop_buried_group_if_empty, vec![seq.into()]).await?;
            *buried += 1;
        }
    }

    async fn execute(&mut self, sql: &str, params: Vec<Value>) -> Result<u64> {
        Ok(self.statements.execute(&self.conn, sql, params).await?)
    }
}

fn unexpected(row: &[Value]) -> crate::error::Error {
    crate::error::Error::Database(format!("a claim's look came back as an unexpected row: {row:?}"))
}
