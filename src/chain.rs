//! An operation's statements as the queue writes them once for every backend (queue/):
//! run in order inside one write transaction, all or nothing, with no value from the
//! client between two of them; what one statement found, the next finds again in the
//! database (sql/claim.rs). A local file runs the chain under its write lock
//! (backend/local), a server as one request (backend/server).

use std::borrow::Cow;

use libsql::Value;

use crate::error::{Error, Result};
use crate::sql::LEASE_GUARD;
use crate::types::Lease;

/// A row a statement returned, column by column.
pub type Row = Vec<Value>;

/// What one statement of a committed chain did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Done {
    pub rows: Vec<Row>,
    pub changed: u64,
}

/// Its statements borrow the queue's SQL (`Statements`) and the leases they guard: a worker
/// operation builds one per call, so nothing of it is copied that need not be.
#[derive(Default)]
pub struct Chain<'a> {
    links: Vec<Link<'a>>,
}

pub struct Link<'a> {
    pub sql: Cow<'a, str>,
    pub params: Vec<Value>,
    /// Whether its rows are wanted (`query`); otherwise only the rows it changed.
    pub rows: bool,
    /// It changes nothing when the statement before it changed a row (`push_unless_changed`).
    pub unless_changed: bool,
    /// A guard (`LEASE_GUARD`): the chain fails with `Error::LeaseLost` for this lease,
    /// and nothing of it is kept, when the statement before it changed no row.
    pub lost: Option<&'a Lease>,
}

impl<'a> Chain<'a> {
    pub fn new() -> Chain<'a> {
        Chain::default()
    }

    /// Appends a statement whose changed rows are wanted; its index (`Done`s come back in
    /// this order, guards included).
    pub fn push(&mut self, sql: impl Into<Cow<'a, str>>, params: Vec<Value>) -> usize {
        self.links.push(Link { sql: sql.into(), params, rows: false, unless_changed: false, lost: None });
        self.links.len() - 1
    }

    /// Appends a statement that changes nothing when the one before it changed a row (its
    /// SQL says so itself: a group's removal after the UPDATE that found it not empty), so
    /// that a backend that sees each result may skip it; its index.
    pub fn push_unless_changed(&mut self, sql: impl Into<Cow<'a, str>>, params: Vec<Value>) -> usize {
        let at = self.push(sql, params);
        self.links[at].unless_changed = true;
        at
    }

    /// Appends a statement whose rows are wanted (`RETURNING`, a `SELECT`); its index.
    pub fn query(&mut self, sql: impl Into<Cow<'a, str>>, params: Vec<Value>) -> usize {
        self.links.push(Link { sql: sql.into(), params, rows: true, unless_changed: false, lost: None });
        self.links.len() - 1
    }

    /// Appends the guard of `lease` (`LEASE_GUARD`), which fails the chain with
    /// `Error::LeaseLost` when the statement before it changed no row.
    pub fn guard(&mut self, lease: &'a Lease) {
        self.links.push(Link {
            sql: LEASE_GUARD.into(),
            params: Vec::new(),
            rows: false,
            unless_changed: false,
            lost: Some(lease),
        });
    }

    pub fn links(&self) -> &[Link<'a>] {
        &self.links
    }

    pub fn into_links(self) -> Vec<Link<'a>> {
        self.links
    }
}

/// The error of an operation on `lease` that found it no longer leased.
pub fn lease_lost(lease: &Lease) -> Error {
    Error::LeaseLost(format!(
        "message {} of group {:?} is no longer leased to worker {:?}: it was acked or nacked \
         already, or its lease lapsed and another worker claimed it",
        lease.seq, lease.group_id, lease.worker_id
    ))
}

/// A libsql row as values (what a local connection and a replica's copy return).
pub fn row_values(row: &libsql::Row) -> libsql::Result<Row> {
    (0..row.column_count()).map(|i| row.get_value(i)).collect()
}

/// What a claim's transaction did: the rows `before`'s marked statements changed, the
/// leases, how many heads it moved to the dead letters instead of handing them out, and how
/// many groups it held because their routing key had no room (sql/limits.rs).
#[derive(Debug, Default)]
pub struct Claimed {
    pub before: Vec<u64>,
    pub leases: Vec<Lease>,
    pub buried: u64,
    pub held: u64,
}

/// What comes first in a claim's transaction (an ack's statements), given "now": the chain
/// so far, and the indexes of the statements whose changed rows the caller wants back.
pub type Before<'f, 'a> = &'f (dyn Fn(Chain<'a>, f64) -> Result<(Chain<'a>, Vec<usize>)> + Sync);
