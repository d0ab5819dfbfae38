//! Reading and writing a database's record of the shard set it belongs to (set.rs decides
//! what a list of databases must look like).

use crate::backend::Backend;
use crate::chain::Chain;
use crate::error::{Error, Result};
use super::set::SetRecord;
use crate::sql::Statements;

/// The database's record, if it has one, and whether it holds messages.
pub async fn read(backend: &mut Backend, sql: &Statements) -> Result<(Option<SetRecord>, bool)> {
    let sql = &sql.shard;
    let has_table = Statements::has_table(&sql.table);
    let found = backend.read(&[(has_table.as_str(), Vec::new()), (sql.holds_messages.as_str(), Vec::new())]).await?;
    let holds = found[1].first().and_then(|row| row.first()).is_some_and(|v| matches!(v, libsql::Value::Integer(1)));
    if found[0].is_empty() {
        return Ok((None, holds));
    }
    let rows = backend.read(&[(sql.read_record.as_str(), Vec::new())]).await?;
    Ok((rows[0].first().map(|row| record(&sql.table, row)).transpose()?, holds))
}

/// Writes `wanted` unless the database has one already; the record it has now.
pub async fn write(backend: &mut Backend, sql: &Statements, wanted: &SetRecord) -> Result<SetRecord> {
    let sql = &sql.shard;
    let (done, read) = backend
        .run(|| {
            let mut chain = Chain::new();
            chain.push(&sql.create_table, Vec::new());
            let (insert, params) = sql.insert_record(&wanted.queue_id, wanted.shard, wanted.shards);
            chain.push(insert, params);
            let read = chain.query(&sql.read_record, Vec::new());
            Ok((chain, read))
        })
        .await?;
    let row = done.into_iter().nth(read).and_then(|d| d.rows.into_iter().next());
    record(&sql.table, &row.ok_or_else(|| Error::Database(format!("{}: the record written is not there", sql.table)))?)
}

fn record(table: &str, row: &[libsql::Value]) -> Result<SetRecord> {
    use libsql::Value::{Integer, Text};
    match row {
        [Text(queue_id), Integer(shard), Integer(shards)] if *shard >= 0 && *shards > 0 => {
            Ok(SetRecord { queue_id: queue_id.clone(), shard: *shard as usize, shards: *shards as usize })
        }
        _ => Err(Error::Database(format!("{table} holds a record this library cannot read: {row:?}"))),
    }
}
