//! Making sure the tables are there at `open`: created and upgraded in place, or, with
//! `create_schema` off, checked so a missing table fails early with a clear message.

use crate::db::Db;
use crate::error::{Error, Result};
use crate::sql::Statements;

pub async fn prepare(db: &mut Db, sql: &Statements, create: bool) -> Result<()> {
    if create {
        // One write transaction: two processes starting at once cannot both run the ALTER.
        db.write_transaction(async |db| {
            for statement in sql.tables() {
                db.execute(&statement, ()).await?;
            }
            if !has_routing_key(db, sql).await? {
                db.execute(&sql.add_routing_key(), ()).await?;
            }
            for statement in sql.indexes() {
                db.execute(&statement, ()).await?;
            }
            Ok(())
        })
        .await
    } else {
        check(db, sql).await
    }
}

async fn check(db: &mut Db, sql: &Statements) -> Result<()> {
    let tables = db.query_one(&sql.count_tables, (), |row| row.get::<i64>(0)).await?;
    if tables != Some(2) {
        return Err(Error::Database(format!(
            "the tables {} and {} must both exist when create_schema is off \
             (create them with harel_schema_sql's statements, or open with create_schema on)",
            sql.messages_table, sql.groups_table
        )));
    }
    if !has_routing_key(db, sql).await? {
        return Err(Error::Database(format!(
            "{} has no routing_key column (a harel 0.9 schema): run harel_schema_upgrade_sql's \
             statements once, or open with create_schema on",
            sql.groups_table
        )));
    }
    Ok(())
}

async fn has_routing_key(db: &mut Db, sql: &Statements) -> Result<bool> {
    Ok(db.query_one(&sql.has_routing_key, (), |_| Ok(())).await?.is_some())
}
