//! Prepared statements kept for reuse, by SQL text: the connection compiles them in this
//! process, once each.

use libsql::params::IntoParams;
use libsql::{Connection, Row, Statement};
use rustc_hash::FxHashMap;

pub struct StatementCache {
    /// None once cleared: the connection is closing.
    prepared: Option<FxHashMap<String, Statement>>,
}

impl StatementCache {
    pub fn new() -> StatementCache {
        StatementCache { prepared: Some(FxHashMap::default()) }
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
        read: impl FnMut(&Row) -> libsql::Result<T>,
    ) -> libsql::Result<Vec<T>> {
        self.query(conn, sql, params, usize::MAX, read).await
    }

    /// The first row of a query, read by `read`: the statement is reset without stepping
    /// on (one step fewer than reading to its end).
    pub async fn query_first<T>(
        &mut self,
        conn: &Connection,
        sql: &str,
        params: impl IntoParams,
        read: impl FnMut(&Row) -> libsql::Result<T>,
    ) -> libsql::Result<Option<T>> {
        Ok(self.query(conn, sql, params, 1, read).await?.pop())
    }

    async fn query<T>(
        &mut self,
        conn: &Connection,
        sql: &str,
        params: impl IntoParams,
        limit: usize,
        mut read: impl FnMut(&Row) -> libsql::Result<T>,
    ) -> libsql::Result<Vec<T>> {
        let rows = match self.prepared(conn, sql).await? {
            Some(statement) => {
                let read = read_rows(statement.query(params).await, limit, &mut read).await;
                statement.reset();
                return read;
            }
            None => conn.query(sql, params).await,
        };
        read_rows(rows, limit, &mut read).await
    }

    /// Drops the statements before their connection goes.
    pub fn clear(&mut self) {
        self.prepared = None;
    }
}

async fn read_rows<T>(
    rows: libsql::Result<libsql::Rows>,
    limit: usize,
    read: &mut impl FnMut(&Row) -> libsql::Result<T>,
) -> libsql::Result<Vec<T>> {
    let mut rows = rows?;
    let mut found = Vec::new();
    while found.len() < limit {
        let Some(row) = rows.next().await? else { break };
        found.push(read(&row)?);
    }
    Ok(found)
}
