//! A claim on a server: the chains of sql/claim.rs (mark the group, lease its head with
//! `UPDATE … RETURNING`, stamp its turn), as many as leases are wanted, in the request of
//! what comes first (an ack's statements). Two cases take a further request: a claim that
//! finds more heads over `max_attempts` than one chain buries (`BURY_ROUNDS`), and a head
//! that is not UTF-8 (written by another program) or has expired: it was leased before it
//! could be read, so the next request buries it (counted as before that claim; its group
//! goes on at once, as after an ack) and claims again. The first request sweeps other
//! expired messages out first (sql/expiry.rs).

use libsql::Value;

use super::Server;
use crate::chain::{Before, Chain, Claimed, Done};
use crate::error::{Error, Result};
use crate::headers::Headers;
use crate::request::{Claim, Now};
use crate::sql::{Statements, EXPIRED};
use crate::types::Lease;

/// A head the last chain leased and cannot hand out.
struct Undeliverable {
    seq: i64,
    lock_expiry: f64,
    reason: String,
}

/// What a claim's request found.
enum Found {
    Lease(Lease),
    Nothing,
    /// Heads over max_attempts, or groups whose key has no room, are still next: the
    /// next request buries or holds them.
    More,
    Undeliverable(Undeliverable),
}

impl Server {
    /// Claims up to `want` leases after `before`'s statements, in one request unless heads
    /// are to be buried.
    pub async fn claim<'a>(
        &mut self,
        sql: &'a Statements,
        (c, want): (&Claim<'_>, usize),
        now: Now<'_>,
        before: Option<Before<'_, 'a>>,
    ) -> Result<Claimed> {
        let mut before_changed: Option<Vec<u64>> = None;
        let mut leases = Vec::new();
        let (mut buried, mut held) = (0, 0);
        let mut undeliverable: Vec<Undeliverable> = Vec::new();
        loop {
            let (results, (marked, claims, (burials, holds), (now, lock_expiry))) = self
                .run(|| {
                    let now = now()?;
                    let mut chain = Chain::new();
                    let mut marked = Vec::new();
                    if let (Some(before), None) = (before, &before_changed) {
                        (chain, marked) = before(chain, now)?;
                    }
                    // Each INSERT into the dead letters changed a row if it buried a head;
                    // the first request sweeps expired messages out (sql/expiry.rs) too.
                    let mut burials = Vec::new();
                    if before_changed.is_none() {
                        burials.push(chain.links().len());
                        for (statement, params) in sql.expiry.sweep(now) {
                            chain.push(statement, params);
                        }
                    }
                    for u in &undeliverable {
                        burials.push(chain.links().len());
                        chain = push_bury_claimed(chain, sql, u, c.worker_id, now);
                    }
                    let lock_expiry = now + c.visibility;
                    let (mut claims, mut holds) = (Vec::new(), Vec::new());
                    for _ in leases.len()..want {
                        let statements = sql.claim_chain(
                            now,
                            (c.min_priority, c.routing_keys),
                            (c.max_attempts, c.retry),
                            (c.worker_id, lock_expiry),
                        );
                        let at: Vec<usize> = statements
                            .statements
                            .into_iter()
                            .map(|(statement, params)| chain.query(statement, params))
                            .collect();
                        burials.extend(statements.buried.iter().map(|&i| at[i]));
                        holds.extend(statements.holds.iter().map(|&i| at[i]));
                        claims.push((at[statements.lease], at[statements.more]));
                    }
                    Ok((chain, (marked, claims, (burials, holds), (now, lock_expiry))))
                })
                .await?;
            before_changed.get_or_insert_with(|| marked.iter().map(|&i| results[i].changed).collect());
            buried += burials.iter().map(|&i| results[i].changed).sum::<u64>();
            held += holds.iter().map(|&i| results[i].changed).sum::<u64>();
            undeliverable.clear();
            let mut again = false;
            // Every claim of the chain was committed: each lease is kept, whatever came before it.
            for (lease_at, more_at) in claims {
                match found(&results[lease_at], &results[more_at], c.worker_id, (now, lock_expiry))? {
                    Found::Lease(lease) => leases.push(lease),
                    Found::Nothing => {}
                    Found::More => again = true,
                    Found::Undeliverable(u) => undeliverable.push(u),
                }
            }
            if leases.len() >= want || (!again && undeliverable.is_empty()) {
                return Ok(Claimed { before: before_changed.unwrap_or_default(), leases, buried, held });
            }
        }
    }
}

/// The undeliverable head into the dead-letter table, if this worker still holds it.
fn push_bury_claimed<'a>(
    mut chain: Chain<'a>,
    sql: &'a Statements,
    u: &Undeliverable,
    worker_id: &str,
    now: f64,
) -> Chain<'a> {
    let statements = [
        sql.bury_claimed(u.seq, (worker_id, u.lock_expiry), &u.reason, now),
        sql.delete_buried(u.seq),
        sql.requeue_buried_group(u.seq, now),
        sql.drop_buried_group_if_empty(u.seq),
    ];
    for (statement, params) in statements {
        chain.push(statement, params);
    }
    chain
}

/// Reads the lease's UPDATE ... RETURNING (and the check for more to bury), made at `now`.
fn found(lease: &Done, more: &Done, worker_id: &str, (now, lock_expiry): (f64, f64)) -> Result<Found> {
    let Some(row) = lease.rows.first() else {
        return Ok(if more.rows.is_empty() { Found::Nothing } else { Found::More });
    };
    let (seq, group_id, event, attempts, headers, expires_at) = match row.as_slice() {
        [Value::Integer(seq), Value::Blob(group_id), Value::Blob(event), Value::Integer(attempts), headers, e] => {
            (*seq, group_id, event, *attempts, headers, e)
        }
        _ => return Err(Error::Database(format!("a claim's lease came back as an unexpected row: {row:?}"))),
    };
    let undeliverable = |reason| Found::Undeliverable(Undeliverable { seq, lock_expiry, reason });
    if matches!(expires_at, Value::Real(at) if *at <= now) {
        return Ok(undeliverable(EXPIRED.to_owned()));
    }
    Ok(match (String::from_utf8(group_id.to_vec()), String::from_utf8(event.to_vec()), Headers::from_column(headers)) {
        (Ok(group_id), Ok(event), Ok(headers)) => {
            let worker_id = worker_id.to_owned();
            Found::Lease(Lease { seq, group_id, event, worker_id, lock_expiry, attempts, headers })
        }
        (Err(_), _, _) => undeliverable("its group_id is not valid UTF-8 (written by another program)".into()),
        (_, Err(_), _) => undeliverable("its event is not valid UTF-8 (written by another program)".into()),
        (_, _, Err(why)) => undeliverable(why),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rows: Vec<Vec<Value>>) -> Done {
        Done { rows, changed: 0 }
    }

    fn head(group_id: &[u8], event: &[u8], headers: Value) -> Done {
        expiring(group_id, event, headers, Value::Null)
    }

    fn expiring(group_id: &[u8], event: &[u8], headers: Value, expires_at: Value) -> Done {
        rows(vec![vec![
            Value::Integer(7),
            Value::Blob(group_id.to_vec()),
            Value::Blob(event.to_vec()),
            Value::Integer(2),
            headers,
            expires_at,
        ]])
    }

    #[test]
    fn a_leased_head_is_a_lease() {
        let headers = Value::Text(r#"[["a","1"]]"#.into());
        let leased = found(&head(b"g", b"{}", headers), &rows(vec![]), "w", (1000.0, 1030.0)).unwrap();
        let Found::Lease(lease) = leased else { panic!() };
        assert_eq!((lease.seq, lease.group_id.as_str(), lease.event.as_str(), lease.attempts), (7, "g", "{}", 2));
        assert_eq!((lease.worker_id.as_str(), lease.lock_expiry, lease.headers.get("a")), ("w", 1030.0, Some("1")));
    }

    #[test]
    fn a_head_that_is_not_utf8_is_buried_by_the_next_transaction() {
        let cases = [
            (&b"\xff"[..], &b"{}"[..], Value::Null, "group_id"),
            (b"g", b"\xc3(", Value::Null, "event"),
            (b"g", b"{}", Value::Text("{}".into()), "headers"),
        ];
        for (group_id, event, headers, what) in cases {
            let leased = found(&head(group_id, event, headers), &rows(vec![]), "w", (1000.0, 1030.0)).unwrap();
            let Found::Undeliverable(u) = leased else { panic!() };
            assert_eq!((u.seq, u.lock_expiry), (7, 1030.0));
            assert!(u.reason.contains(what), "{}", u.reason);
        }
    }

    #[test]
    fn an_expired_head_is_buried_by_the_next_transaction() {
        for (expires_at, expired) in [(999.0, true), (1000.0, true), (1000.5, false)] {
            let leased = expiring(b"g", b"{}", Value::Null, Value::Real(expires_at));
            match found(&leased, &rows(vec![]), "w", (1000.0, 1030.0)).unwrap() {
                Found::Undeliverable(u) => assert!(expired && u.reason == EXPIRED, "{expires_at}: {}", u.reason),
                Found::Lease(_) => assert!(!expired, "{expires_at}"),
                _ => panic!(),
            }
        }
    }

    #[test]
    fn no_lease_is_nothing_or_more_to_bury_or_hold() {
        let none = rows(vec![]);
        assert!(matches!(found(&none, &rows(vec![]), "w", (0.0, 1.0)).unwrap(), Found::Nothing));
        let next = rows(vec![vec![Value::Integer(1)]]);
        assert!(matches!(found(&none, &next, "w", (0.0, 1.0)).unwrap(), Found::More));
    }

    #[test]
    fn an_unexpected_row_is_a_database_error() {
        let text = rows(vec![vec![Value::Text("7".into())]]);
        assert!(matches!(found(&text, &rows(vec![]), "w", (0.0, 1.0)), Err(Error::Database(_))));
    }
}
