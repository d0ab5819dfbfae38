//! One checked request per operation. Each is built only through its constructor, which
//! checks the arguments (validate.rs), so an operation in `queue` never sees an unchecked
//! value. The async face (async_transport.rs) builds each call's request once and passes
//! it down: the router (shards/) and the queue (queue/) take it as it is.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::types::{DeadLetters, Delivery, Lease, Limit, Message, PauseTarget, MAX_PAGE};
use crate::validate;

/// The transport's clock, checked.
pub type Now<'a> = &'a (dyn Fn() -> Result<f64> + Send + Sync);

/// Messages to append, in order, each checked.
pub struct Publish<'m, 'a> {
    messages: Cow<'m, [Message<'a>]>,
}

impl<'m, 'a> Publish<'m, 'a> {
    /// One message; errors name the field as `publish` does ("group_id is empty").
    pub fn one(message: Message<'a>) -> Result<Publish<'m, 'a>> {
        validate::message(&message)?;
        Ok(Publish { messages: Cow::Owned(vec![message]) })
    }

    /// A batch; errors name the message by index ("messages[3].event_json ...").
    pub fn many(messages: &'m [Message<'a>]) -> Result<Publish<'m, 'a>> {
        validate::messages(messages)?;
        Ok(Publish { messages: Cow::Borrowed(messages) })
    }

    /// Messages already checked: the batches that group commit puts together.
    pub(crate) fn checked(messages: &'m [Message<'a>]) -> Publish<'m, 'a> {
        Publish { messages: Cow::Borrowed(messages) }
    }

    pub fn messages(&self) -> &[Message<'a>] {
        &self.messages
    }
}

/// Messages to append with their delivery options (`publish_with`), each checked.
pub struct Deliver<'m, 'a> {
    items: Cow<'m, [(Message<'a>, Delivery<'a>)]>,
    /// From `publish_many_with`: errors name the message by index.
    batch: bool,
}

impl<'m, 'a> Deliver<'m, 'a> {
    /// One message; errors name the field ("key is empty").
    pub fn one(message: Message<'a>, delivery: Delivery<'a>) -> Result<Deliver<'m, 'a>> {
        validate::message(&message)?;
        validate::delivery("", &delivery)?;
        Ok(Deliver { items: Cow::Owned(vec![(message, delivery)]), batch: false })
    }

    /// A batch; errors name the message by index ("messages[3].key is empty").
    pub fn many(items: &'m [(Message<'a>, Delivery<'a>)]) -> Result<Deliver<'m, 'a>> {
        let messages: Vec<Message<'a>> = items.iter().map(|(m, _)| *m).collect();
        validate::messages(&messages)?;
        for (i, (_, d)) in items.iter().enumerate() {
            validate::delivery(&format!("messages[{i}]."), d)?;
        }
        Ok(Deliver { items: Cow::Borrowed(items), batch: true })
    }

    /// Messages checked already, one by one as an application's transaction queued them;
    /// alone, as `one` names their fields.
    pub(crate) fn checked(items: Vec<(Message<'a>, Delivery<'a>)>) -> Deliver<'m, 'a> {
        Deliver { items: Cow::Owned(items), batch: false }
    }

    /// `request`'s messages with the headers a traced publish gave them (telemetry/).
    pub(crate) fn traced(request: &Deliver<'_, '_>, items: Vec<(Message<'a>, Delivery<'a>)>) -> Deliver<'m, 'a> {
        Deliver { items: Cow::Owned(items), batch: request.batch }
    }

    /// A checked batch's part (a shard's): errors name its messages by their index in it.
    pub(crate) fn checked_batch(items: Vec<(Message<'a>, Delivery<'a>)>) -> Deliver<'m, 'a> {
        Deliver { items: Cow::Owned(items), batch: true }
    }

    pub fn items(&self) -> &[(Message<'a>, Delivery<'a>)] {
        &self.items
    }

    /// How an error names message `i`'s fields: "messages[3]." in a batch, "" alone.
    pub fn at(&self, i: usize) -> String {
        if self.batch {
            format!("messages[{i}].")
        } else {
            String::new()
        }
    }

    pub fn has_keys(&self) -> bool {
        self.items.iter().any(|(_, d)| d.key.is_some())
    }
}

/// Which groups a claim or a watch may serve: priority >= `min_priority` and, when any are
/// given, one of `routing_keys`.
#[derive(Clone, Copy)]
pub struct Filter<'a> {
    pub min_priority: i32,
    pub routing_keys: &'a [&'a str],
}

impl<'a> Filter<'a> {
    pub fn new(min_priority: i32, routing_keys: &'a [&'a str]) -> Result<Filter<'a>> {
        validate::priority("min_priority", min_priority)?;
        validate::routing_keys(routing_keys)?;
        Ok(Filter { min_priority, routing_keys })
    }
}

/// What a claim asks for, and the transport's `max_attempts` (0: no limit). `max`: how
/// many leases at most (1 for `claim`).
pub struct Claim<'a> {
    pub worker_id: &'a str,
    pub visibility: f64,
    pub min_priority: i32,
    pub routing_keys: &'a [&'a str],
    pub max_attempts: u32,
    pub max: usize,
    /// The claiming transport's retry policy (`sql::stored_retry`), or None.
    pub retry: Option<&'a str>,
}

impl<'a> Claim<'a> {
    pub fn new(
        worker_id: &'a str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &'a [&'a str],
        max_attempts: u32,
    ) -> Result<Claim<'a>> {
        validate::worker_id(worker_id)?;
        validate::positive_seconds("visibility", visibility)?;
        Filter::new(min_priority, routing_keys)?;
        Ok(Claim { worker_id, visibility, min_priority, routing_keys, max_attempts, max: 1, retry: None })
    }

    /// The same claim drawing backoffs under `retry` (a policy as `sql::stored_retry`
    /// writes it, already checked) where a message has no policy of its own.
    pub fn with_retry(self, retry: Option<&'a str>) -> Claim<'a> {
        Claim { retry, ..self }
    }

    /// The same claim for up to `max` leases (1..=MAX_CLAIM).
    pub fn up_to(self, max: usize) -> Result<Claim<'a>> {
        validate::claim_max(max)?;
        Ok(Claim { max, ..self })
    }
}

/// The lease an ack or nack finishes: `seq`, `group_id` and `worker_id` are what it reads.
#[derive(Clone, Copy)]
pub struct Finish<'a> {
    pub lease: &'a Lease,
}

impl<'a> Finish<'a> {
    pub fn new(lease: &'a Lease) -> Result<Finish<'a>> {
        validate::non_empty("lease.group_id", &lease.group_id)?;
        validate::worker_id(&lease.worker_id).map_err(|e| Error::Argument(format!("lease.{e}")))?;
        Ok(Finish { lease })
    }
}

/// Leases to finish in one transaction, each checked; an error names the lease by index
/// ("leases[2].worker_id is empty").
pub struct FinishMany<'a> {
    pub leases: &'a [Lease],
}

impl<'a> FinishMany<'a> {
    pub fn new(leases: &'a [Lease]) -> Result<FinishMany<'a>> {
        for (i, lease) in leases.iter().enumerate() {
            Finish::new(lease)
                .map_err(|e| Error::Argument(format!("leases[{i}].{}", e.message().trim_start_matches("lease."))))?;
        }
        Ok(FinishMany { leases })
    }

    /// Leases checked already: a sharded batch's part.
    pub(crate) fn checked(leases: &'a [Lease]) -> FinishMany<'a> {
        FinishMany { leases }
    }
}

/// An extension: the lease, and how long from now it is to run.
pub struct Extend<'a> {
    pub finish: Finish<'a>,
    pub visibility: f64,
}

impl<'a> Extend<'a> {
    pub fn new(lease: &'a Lease, visibility: f64) -> Result<Extend<'a>> {
        let finish = Finish::new(lease)?;
        validate::positive_seconds("visibility", visibility)?;
        Ok(Extend { finish, visibility })
    }
}

/// A dead letter a worker makes: the lease, and why.
pub struct Bury<'a> {
    pub finish: Finish<'a>,
    pub reason: &'a str,
}

impl<'a> Bury<'a> {
    pub fn new(lease: &'a Lease, reason: &'a str) -> Result<Bury<'a>> {
        let finish = Finish::new(lease)?;
        validate::non_empty("reason", reason)?;
        Ok(Bury { finish, reason })
    }
}

/// A group named by a look or an administrator's call: not empty.
#[derive(Clone, Copy)]
pub struct Group<'a>(pub &'a str);

impl<'a> Group<'a> {
    pub fn new(group_id: &'a str) -> Result<Group<'a>> {
        validate::non_empty("group_id", group_id)?;
        Ok(Group(group_id))
    }
}

/// What a pause or resume names, checked: a group id or routing key is not empty.
#[derive(Clone, Copy)]
pub struct Paused<'a>(pub PauseTarget<'a>);

impl<'a> Paused<'a> {
    pub fn new(target: PauseTarget<'a>) -> Result<Paused<'a>> {
        match target {
            PauseTarget::Queue => {}
            PauseTarget::Group(group_id) => validate::non_empty("group_id", group_id)?,
            PauseTarget::RoutingKey(key) => validate::non_empty("routing_key", key)?,
        }
        Ok(Paused(target))
    }
}

/// The most of a limit's numbers (a concurrency, a rate, a burst): far above any real
/// fleet's, low enough that a typo (an extra zero or three) is caught.
pub const MAX_LIMIT: f64 = 1_000_000.0;

/// A limit on a routing key, checked: the key not empty, at least one limit, each number
/// in range.
#[derive(Clone, Copy)]
pub struct Limited<'a> {
    pub routing_key: &'a str,
    pub limit: Limit,
}

impl<'a> Limited<'a> {
    pub fn new(routing_key: &'a str, limit: Limit) -> Result<Limited<'a>> {
        validate::non_empty("routing_key", routing_key)?;
        if limit.concurrency.is_none() && limit.rate.is_none() {
            return Err(Error::Argument("the limit has neither a concurrency nor a rate".into()));
        }
        if let Some(n) = limit.concurrency {
            if n == 0 || f64::from(n) > MAX_LIMIT {
                return Err(Error::Argument(format!("concurrency is {n}; it must be 1..{MAX_LIMIT}")));
            }
        }
        if let Some(rate) = limit.rate {
            for (name, value, least) in [("rate", rate.per_second, 0.0), ("burst", rate.burst, 1.0)] {
                let fits = if least == 0.0 { value > 0.0 } else { value >= least };
                if !value.is_finite() || !fits || value > MAX_LIMIT {
                    let from = if least == 0.0 { "> 0" } else { ">= 1" };
                    return Err(Error::Argument(format!(
                        "{name} is {value}; it must be a finite number {from}, at most {MAX_LIMIT}"
                    )));
                }
            }
        }
        Ok(Limited { routing_key, limit })
    }
}

/// A nack: the lease, and how long to park its message (0: free it now).
pub struct Nack<'a> {
    pub finish: Finish<'a>,
    pub delay: f64,
}

impl<'a> Nack<'a> {
    pub fn new(lease: &'a Lease, delay: f64) -> Result<Nack<'a>> {
        let finish = Finish::new(lease)?;
        validate::non_negative_seconds("delay", delay)?;
        Ok(Nack { finish, delay })
    }
}

/// Which dead letters a redrive or purge takes, checked.
pub struct DeadSelection<'a> {
    pub which: DeadLetters<'a>,
}

impl<'a> DeadSelection<'a> {
    pub fn new(which: DeadLetters<'a>) -> Result<DeadSelection<'a>> {
        match which {
            DeadLetters::Group(group_id) => validate::non_empty("group_id", group_id)?,
            DeadLetters::Seqs([]) => {
                return Err(Error::Argument("seqs is empty: name at least one dead letter".into()))
            }
            DeadLetters::All | DeadLetters::Seqs(_) => {}
        }
        Ok(DeadSelection { which })
    }
}

/// A listing's page as asked: the cursor (None: the first page; else the `next` of the page
/// before) and at most how many items, checked to be 1..=MAX_PAGE.
#[derive(Clone, Copy)]
pub struct Listing<'a> {
    pub cursor: Option<&'a str>,
    pub limit: usize,
}

impl<'a> Listing<'a> {
    pub fn new(cursor: Option<&'a str>, limit: usize) -> Result<Listing<'a>> {
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(Error::Argument(format!("limit is {limit}; it must be 1..{MAX_PAGE}")));
        }
        Ok(Listing { cursor, limit })
    }
}

/// A page of one database's listing: where it starts and how long it is.
pub struct PageRequest {
    /// What the cursor says (its kind checked), or None for the first page.
    pub after: Option<Vec<u8>>,
    pub limit: usize,
}

impl PageRequest {
    /// `kind`: the listing's cursor kind (see cursor.rs).
    pub fn of(kind: char, listing: &Listing<'_>) -> Result<PageRequest> {
        let after = listing.cursor.map(|c| crate::cursor::parse_cursor(kind, c)).transpose()?;
        Ok(PageRequest { after, limit: listing.limit })
    }
}
