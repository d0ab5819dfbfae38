//! One libSQL connection with what every operation needs around it: prepared statements
//! kept for reuse (local modes), and write transactions that always end in COMMIT or an
//! explicit ROLLBACK.

use std::collections::HashMap;

use libsql::params::IntoParams;
use libsql::{Connection, Row, Statement};

use crate::error::{Error, Result};

pub struct Db {
    conn: Connection,
    statements: Option<HashMap<String, Statement>>,
}

impl Db {
    pub fn new(conn: Connection, cache_statements: bool) -> Db {
        Db { conn, statements: cache_statements.then(HashMap::new) }
    }

    async fn statement(&mut self, sql: &str) -> libsql::Result<Option<&Statement>> {
        let Some(cache) = self.statements.as_mut() else { return Ok(None) };
        if !cache.contains_key(sql) {
            let prepared = self.conn.prepare(sql).await?;
            cache.insert(sql.to_owned(), prepared);
        }
        Ok(cache.get(sql))
    }

    /// Runs a statement that returns no rows; the number of rows it changed.
    pub async fn execute(&mut self, sql: &str, params: impl IntoParams) -> Result<u64> {
        let result = match self.statement(sql).await? {
            Some(stmt) => {
                let n = stmt.execute(params).await.map(|n| n as u64);
                stmt.reset();
                n
            }
            None => self.conn.execute(sql, params).await,
        };
        Ok(result?)
    }

    /// The first row of a query, read by `read` before the statement is reset.
    pub async fn query_one<T>(
        &mut self,
        sql: &str,
        params: impl IntoParams,
        read: impl FnOnce(&Row) -> libsql::Result<T>,
    ) -> Result<Option<T>> {
        let result = match self.statement(sql).await? {
            Some(stmt) => {
                let value = first_row(stmt.query(params).await, read).await;
                stmt.reset();
                value
            }
            None => first_row(self.conn.query(sql, params).await, read).await,
        };
        Ok(result?)
    }

    /// Runs `work` inside `BEGIN IMMEDIATE`: the write lock is taken before anything is
    /// read, so what `work` reads is still true when it writes. COMMIT on success; on any
    /// error an explicit ROLLBACK, so nothing half-done is ever kept.
    pub async fn write_transaction<T>(&mut self, work: impl AsyncFnOnce(&mut Db) -> Result<T>) -> Result<T> {
        if !self.conn.is_autocommit() {
            // An earlier call was cancelled mid-transaction (its future dropped).
            self.rollback().await;
        }
        self.execute("BEGIN IMMEDIATE", ()).await?;
        let outcome = match work(self).await {
            Ok(value) => self.execute("COMMIT", ()).await.map(|_| value),
            Err(e) => Err(e),
        };
        if outcome.is_err() {
            self.rollback().await;
        }
        outcome
    }

    async fn rollback(&mut self) {
        // Its own failure ("no transaction is active") only means there is nothing to undo.
        let _ = self.conn.execute("ROLLBACK", ()).await;
    }

    /// Drops cached statements before the connection goes.
    pub fn close(&mut self) {
        self.statements = None;
    }
}

async fn first_row<T>(
    rows: libsql::Result<libsql::Rows>,
    read: impl FnOnce(&Row) -> libsql::Result<T>,
) -> libsql::Result<Option<T>> {
    match rows?.next().await? {
        Some(row) => read(&row).map(Some),
        None => Ok(None),
    }
}

impl From<libsql::Error> for Error {
    fn from(e: libsql::Error) -> Error {
        Error::from_libsql("database", e)
    }
}
