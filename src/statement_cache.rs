//! Prepared statements kept for reuse, by SQL text, where the connection compiles them in
//! this process (memory and local files). On a server there is nothing to keep: each
//! statement is sent as text.

use std::collections::HashMap;

use libsql::params::IntoParams;
use libsql::{Connection, Row, Statement};

pub struct StatementCache {
    /// None: statements are not kept (a server).
    prepared: Option<HashMap<String, Statement>>,
}

impl StatementCache {
    pub fn new(prepares: bool) -> StatementCache {
        StatementCache { prepared: prepares.then(HashMap::new) }
    }

    /// Whether statements are kept prepared (see `Statements::publish_rows`).
    pub fn prepares(&self) -> bool {
        self.prepared.is_some()
    }

    async fn prepared(&mut self, conn: &Connection, sql: &str) -> libsql::Result<Option<&Statement>> {
        let Some(cache) = self.prepared.as_mut() else {
            return Ok(None);
        };
        if !cache.contains_key(sql) {
            let statement = conn.prepare(sql).await?;
            cache.insert(sql.to_owned(), statement);
        }
        Ok(cache.get(sql))
    }

    /// Runs a statement that returns no rows; the number of rows it changed.
    pub async fn execute(&mut self, conn: &Connection, sql: &str, params: impl IntoParams) -> libsql::Result<u64> {
        match self.prepared(conn, sql).await? {
            Some(statement) => {
                let changed = statement.execute(params).await.map(|n| n as u64);
                statement.reset();
                changed
            }
            None => conn.execute(sql, params).await,
        }
    }

    /// The first row of a query, read by `read` before the statement is reset.
    pub async fn query_one<T>(
        &mut self,
        conn: &Connection,
        sql: &str,
        params: impl IntoParams,
        read: impl FnOnce(&Row) -> libsql::Result<T>,
    ) -> libsql::Result<Option<T>> {
        match self.prepared(conn, sql).await? {
            Some(statement) => {
                let value = first_row(statement.query(params).await, read).await;
                statement.reset();
                value
            }
            None => first_row(conn.query(sql, params).await, read).await,
        }
    }

    /// Every row of a query, each read by `read`, before the statement is reset.
    pub async fn query_all<T>(
        &mut self,
        conn: &Connection,
        sql: &str,
        params: impl IntoParams,
        mut read: impl FnMut(&Row) -> libsql::Result<T>,
    ) -> libsql::Result<Vec<T>> {
        let rows = match self.prepared(conn, sql).await? {
            Some(statement) => {
                let all = all_rows(statement.query(params).await, &mut read).await;
                statement.reset();
                return all;
            }
            None => conn.query(sql, params).await,
        };
        all_rows(rows, &mut read).await
    }

    /// Drops the statements before their connection goes.
    pub fn clear(&mut self) {
        self.prepared = None;
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

async fn all_rows<T>(
    rows: libsql::Result<libsql::Rows>,
    read: &mut impl FnMut(&Row) -> libsql::Result<T>,
) -> libsql::Result<Vec<T>> {
    let mut rows = rows?;
    let mut all = Vec::new();
    while let Some(row) = rows.next().await? {
        all.push(read(&row)?);
    }
    Ok(all)
}
