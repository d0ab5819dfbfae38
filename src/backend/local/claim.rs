//! A claim on a local file: inside the transaction, a look (the `SELECT` of the best heads,
//! as many as the claim wants, `Statements::claim`) and, with what it found, each group's
//! turn and lease; a claim of ten is one look, not ten. A head that cannot be handed out
//! (expired, sql/expiry.rs; claimed `max_attempts` times already, 0 meaning no limit; or
//! text another program stored that is not UTF-8) moves to the dead-letter table instead,
//! and the claim looks again: that group's next message (which keeps the group's place) or
//! another group's is served, and the queue is never blocked behind it. Before the look, a
//! bounded sweep moves other expired messages out.
//!
//! The server's chain (sql/claim.rs) would serve here too, but it costs a local claim
//! more (docs/architecture.md, "One claim algorithm?", has the figures): a look that finds
//! nothing is one statement here and three there, and with no network to wait on, the
//! statements are the whole price of a claim.

use libsql::Value;

use super::durability::Commit;
use super::Local;
use crate::chain::{row_values, Before, Chain, Claimed};
use crate::error::Result;
use crate::headers::Headers;
use crate::request::{Claim, Now};
use crate::sql::{Bound, Statements, EXPIRED};
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
            claimed.buried += local.sweep_expired(sql, now).await?;
            local.claim_up_to(sql, c, now, want, &mut claimed).await?;
            Ok(claimed)
        })
        .await
    }

    /// Moves up to a sweep's worth of expired messages to the dead letters (sql/expiry.rs),
    /// after one look that finds none in the usual case; how many it moved.
    async fn sweep_expired(&mut self, sql: &Statements, now: f64) -> Result<u64> {
        let (any, params) = sql.expiry.any(now);
        if self.statements.query_all(&self.conn, any, params, row_values).await?.is_empty() {
            return Ok(0);
        }
        let [bury, rest @ ..] = sql.expiry.sweep(now);
        let moved = self.execute(bury).await?;
        for statement in rest {
            self.execute(statement).await?;
        }
        Ok(moved)
    }

    /// Leases up to `want` heads into `claimed`, in serving order, from one look for as
    /// many as are still wanted; a head it cannot hand out is buried (and counted), and the
    /// look is made again for the rest: that group's next message keeps the group's place.
    /// A group whose routing key has no room (sql/limits.rs) is held, and one with a limit
    /// that has room is leased with the key's slot or token taken: the look is made again
    /// after either, since the key's room changed. Each look comes after the held groups
    /// whose keys have room again are given back.
    async fn claim_up_to(
        &mut self,
        sql: &Statements,
        c: &Claim<'_>,
        now: f64,
        want: usize,
        claimed: &mut Claimed,
    ) -> Result<()> {
        loop {
            let wanted = want - claimed.leases.len();
            if wanted == 0 {
                return Ok(());
            }
            self.execute(sql.limit.give_back(now)).await?;
            let (look, params) = sql.claim(now, c.min_priority, c.routing_keys, wanted);
            let heads = self.statements.query_all(&self.conn, &look, params, row_values).await?;
            let found = heads.len();
            let mut look_again = false;
            for head in heads {
                let (seq, group_id, event, attempts, headers, expires_at, room) = match <[Value; 7]>::try_from(head) {
                    Ok([Value::Integer(seq), Value::Blob(g), Value::Blob(event), Value::Integer(n), h, e, room]) => {
                        (seq, g, event, n, h, e, Room::of(room)?)
                    }
                    Ok(other) => return Err(unexpected(&other)),
                    Err(other) => return Err(unexpected(&other)),
                };
                let read = (String::from_utf8(group_id), String::from_utf8(event), Headers::from_column(&headers));
                let undeliverable = match read {
                    _ if matches!(expires_at, Value::Real(at) if at <= now) => EXPIRED.to_owned(),
                    _ if c.max_attempts > 0 && attempts >= i64::from(c.max_attempts) => {
                        format!("claimed {attempts} times: max_attempts is {}", c.max_attempts)
                    }
                    (Ok(group_id), Ok(_), Ok(_)) if room == Room::Full => {
                        claimed.held += self.execute(sql.limit.hold(&group_id, now)).await?;
                        look_again = true;
                        break;
                    }
                    (Ok(group_id), Ok(event), Ok(headers)) => {
                        let lock_expiry = now + c.visibility;
                        let limited_key = match &room {
                            Room::For(key) => Some(key.as_str()),
                            _ => None,
                        };
                        let times = (now, lock_expiry);
                        self.execute(sql.lease_message(seq, c.worker_id, times, (c.retry, limited_key))).await?;
                        self.execute(sql.retry.stamp_leased(&group_id, lock_expiry, seq)).await?;
                        if let Some(key) = limited_key {
                            self.execute(sql.limit.take_token(key, now)).await?;
                        }
                        let limited = limited_key.is_some();
                        let worker_id = c.worker_id.to_owned();
                        claimed.leases.push(Lease {
                            seq,
                            group_id,
                            event,
                            worker_id,
                            lock_expiry,
                            attempts: attempts + 1,
                            headers,
                        });
                        if limited {
                            look_again = true;
                            break;
                        }
                        continue;
                    }
                    (Err(_), _, _) => "its group_id is not valid UTF-8 (written by another program)".to_owned(),
                    (_, Err(_), _) => "its event is not valid UTF-8 (written by another program)".to_owned(),
                    (_, _, Err(why)) => why,
                };
                self.execute(sql.bury_head(seq, &undeliverable, now)).await?;
                self.execute(sql.delete_message(seq)).await?;
                self.execute(sql.drop_buried_group_if_empty(seq)).await?;
                claimed.buried += 1;
                look_again = true;
                break;
            }
            if !look_again && found < wanted {
                return Ok(());
            }
        }
    }

    async fn execute(&mut self, (sql, params): Bound<'_>) -> Result<u64> {
        Ok(self.statements.execute(&self.conn, sql, params).await?)
    }
}

/// A head's key's room, as the look reads it (sql/limits.rs).
#[derive(PartialEq, Eq)]
enum Room {
    /// Its key has no limit.
    Unlimited,
    /// Its key's limit has room for one more lease: the key.
    For(String),
    /// Its key's limit has none.
    Full,
}

impl Room {
    fn of(value: Value) -> Result<Room> {
        match value {
            Value::Null => Ok(Room::Unlimited),
            Value::Text(key) => Ok(Room::For(key)),
            Value::Integer(0) => Ok(Room::Full),
            other => Err(unexpected(&[other])),
        }
    }
}

fn unexpected(row: &[Value]) -> crate::error::Error {
    crate::error::Error::Database(format!("a claim's look came back as an unexpected row: {row:?}"))
}
