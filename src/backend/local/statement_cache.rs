//! Prepared statements kept for reuse, by SQL text: the connection compiles them in this
//! process, once each.

use std::collections::HashMap;

use libsql::params::IntoParams;
use libsql::{Connection, Row, Statement};

pub struct StatementCache {
    /// None once cleared: the connection is closing.
    prepared: Option<HashMap<String, Statement>>,
}

impl StatementCache {
    pub fn new() -> StatementCache {
        StatementCache { prepared: Some(HashMap::new()) }
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
