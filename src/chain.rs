//! An operation's statements as the queue writes them once for every backend (queue/):
//! run in order inside one write transaction, all or nothing, with no value from the
//! client between two of them; what one statement found, the next finds again in the
//! database (sql/claim.rs). A local file runs the chain under its write lock
//! (backend/local), a server as one request (backend/server).

use libsql::Value;

use crate::error::Error;

/// A row a statement returned, column by column.
pub type Row = Vec<Value>;

/// What one statement of a committed chain did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Done {
    pub rows: Vec<Row>,
    pub changed: u64,
}

#[derive(Default)]
pub struct Chain {
    links: Vec<Link>,
    /// (after link, lease link): see `end_if_empty`.
    ends: Vec<(usize, usize)>,
}

pub struct Link {
    pub sql: String,
    pub params: Vec<Value>,
    /// A guard (`Statements::lease_guard`): the chain fails with this error, and nothing
    /// of it is kept, when the statement before it changed no row.
    pub lost: Option<Error>,
}

impl Chain {
    pub fn new() -> Chain {
        Chain::default()
    }

    /// Appends a statement; its index (`Done`s come back in this order, guards included).
    pub fn push(&mut self, sql: &str, params: Vec<Value>) -> usize {
        self.links.push(Link { sql: sql.to_owned(), params, lost: None });
        self.links.len() - 1
    }

    /// Appends `guard` (`Statements::lease_guard`), which fails the chain with `lost` when
    /// the statement before it changed no row.
    pub fn guard(&mut self, guard: &str, lost: Error) {
        self.links.push(Link { sql: guard.to_owned(), params: Vec::new(), lost: Some(lost) });
    }

    /// Where what follows only tries again what statement `at` found nothing for (the
    /// next claims of a batch): a backend may stop here when `at` returned no row. The
    /// statements it skips report no rows and no changes.
    pub fn end_if_empty(&mut self, at: usize) {
        self.ends.push((self.links.len().saturating_sub(1), at));
    }

    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Whether a backend may stop after link `i`, given what the links before found.
    pub fn ends_after(&self, i: usize, done: &[Done]) -> bool {
        self.ends.iter().any(|&(after, at)| after == i && done.get(at).is_some_and(|d| d.rows.is_empty()))
    }
}

/// A libsql row as values (what a local connection and a replica's copy return).
pub fn row_values(row: &libsql::Row) -> libsql::Result<Row> {
    (0..row.column_count()).map(|i| row.get_value(i)).collect()
}
