//! What an application's transaction was asked to do and has not sent yet, owned (the
//! caller's strings are gone by the time it runs), and the chain that sends it: the
//! application's statements as they are, each publish as `publish_with` writes it.

use libsql::Value;

use crate::chain::Chain;
use crate::error::{Error, Result};
use crate::headers::Headers;
use crate::queue::work;
use crate::request::Deliver;
use crate::sql::Statements;
use crate::types::{Delivery, Message, Retry, Unique, UniqueMode};
use crate::validate;

pub enum Queued {
    Statement { sql: String, params: Vec<Value> },
    Publish(OwnedPublish),
}

pub struct OwnedPublish {
    group_id: String,
    event_json: String,
    priority: i32,
    routing_key: Option<String>,
    headers: Option<Headers>,
    key: Option<String>,
    delay: f64,
    not_before: Option<f64>,
    unique: Option<(String, UniqueMode)>,
    ttl: Option<f64>,
    expires_at: Option<f64>,
    retry: Option<Retry>,
}

impl OwnedPublish {
    pub fn of(m: &Message<'_>, d: &Delivery<'_>) -> OwnedPublish {
        OwnedPublish {
            group_id: m.group_id.to_owned(),
            event_json: m.event_json.to_owned(),
            priority: m.priority,
            routing_key: m.routing_key.map(str::to_owned),
            headers: m.headers.cloned(),
            key: d.key.map(str::to_owned),
            delay: d.delay,
            not_before: d.not_before,
            unique: d.unique.map(|u| (u.key.to_owned(), u.mode)),
            ttl: d.ttl,
            expires_at: d.expires_at,
            retry: d.retry,
        }
    }

    fn borrow(&self) -> (Message<'_>, Delivery<'_>) {
        let message = Message {
            group_id: &self.group_id,
            event_json: &self.event_json,
            priority: self.priority,
            routing_key: self.routing_key.as_deref(),
            headers: self.headers.as_ref(),
        };
        let unique = self.unique.as_ref().map(|(key, mode)| Unique { key, mode: *mode });
        let delivery = Delivery {
            key: self.key.as_deref(),
            delay: self.delay,
            not_before: self.not_before,
            unique,
            ttl: self.ttl,
            expires_at: self.expires_at,
            retry: self.retry,
        };
        (message, delivery)
    }
}

/// An application statement, checked: SQL that is not empty, and parameters a server can
/// carry too (JSON has no infinities, so a float that is not finite is refused on every
/// backend alike).
pub fn statement(sql: &str, params: Vec<Value>) -> Result<Queued> {
    validate::non_empty("sql", sql)?;
    for (i, param) in params.iter().enumerate() {
        if let Value::Real(x) = param {
            if !x.is_finite() {
                return Err(Error::Argument(format!(
                    "params[{i}] is {x}: a parameter must be a finite number (a libSQL server cannot carry it)"
                )));
            }
        }
    }
    Ok(Queued::Statement { sql: sql.to_owned(), params })
}

/// Where a flush's results are in its chain: each publish's `published` read, and the
/// read the flush ends with.
pub struct Reads {
    pub published: Vec<work::PublishRead>,
    pub query: Option<usize>,
}

/// `queued` in order, then `query` (whose rows are wanted), as one chain written at `now`.
/// Consecutive publishes go in as one `publish_many_with` would write them.
pub fn chain<'c>(
    queued: &[Queued],
    query: Option<&Queued>,
    sql: &'c Statements,
    retention: f64,
    now: f64,
) -> Result<(Chain<'c>, Reads)> {
    let mut chain = Chain::new();
    let mut reads = Reads { published: Vec::new(), query: None };
    let mut publishes = Vec::new();
    for item in queued {
        match item {
            Queued::Publish(p) => publishes.push(p.borrow()),
            Queued::Statement { sql: text, params } => {
                flush_publishes(&mut chain, &mut publishes, &mut reads, sql, retention, now)?;
                chain.push(text.clone(), params.clone());
            }
        }
    }
    flush_publishes(&mut chain, &mut publishes, &mut reads, sql, retention, now)?;
    if let Some(Queued::Statement { sql: text, params }) = query {
        reads.query = Some(chain.query(text.clone(), params.clone()));
    }
    Ok((chain, reads))
}

fn flush_publishes<'c>(
    chain: &mut Chain<'c>,
    publishes: &mut Vec<(Message<'_>, Delivery<'_>)>,
    reads: &mut Reads,
    sql: &'c Statements,
    retention: f64,
    now: f64,
) -> Result<()> {
    if publishes.is_empty() {
        return Ok(());
    }
    let request = Deliver::checked(std::mem::take(publishes));
    reads.published.extend(work::push_deliveries(chain, sql, &request, retention, now)?);
    Ok(())
}
