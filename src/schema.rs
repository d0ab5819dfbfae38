//! Making sure the tables are there at `open`: created and upgraded in place, or, with
//! `create_schema` off, checked so a missing table or column fails early with a clear message.

use crate::db::Db;
use crate::error::{Error, Result};
use crate::sql::Statements;

pub async fn prepare(db: &mut Db, sql: &Statements, create: bool) -> Result<()> {
    if create {
        // One write transaction: two processes starting at once cannot both run an ALTER.
        db.write_transaction(async |db| {
            for statement in sql.tables() {
                db.execute(&statement, ()).await?;
            }
            for (table, column, alter) in sql.added_columns() {
                if !has_column(db, table, column).await? {
                    db.execute(&alter, ()).await?;
                }
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

/// Every table and column a queue needs, or one error naming each that is missing.
async fn check(db: &mut Db, sql: &Statements) -> Result<()> {
    let tables = [&sql.messages_table, &sql.groups_table, &sql.dead_table];
    let mut missing = Vec::new();
    for table in tables {
        if db.query_one(&Statements::has_table(table), (), |_| Ok(())).await?.is_none() {
            missing.push(format!("the table {table}"));
        }
    }
    for (table, column, _) in sql.added_columns() {
        if !missing.iter().any(|m| m.ends_with(table)) && !has_column(db, table, column).await? {
            missing.push(format!("the column {table}.{column}"));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::Database(format!(
        "create_schema is off, and {} missing (a harel 0.9 or older harel-transport file lacks some): \
         open once with create_schema on, or run harel_schema_sql's statements (a new file) or \
         harel_schema_upgrade_sql's (an older one)",
        match missing.as_slice() {
            [one] => format!("{one} is"),
            many => format!("{} are", many.join(", ")),
        }
    )))
}

async fn has_column(db: &mut Db, table: &str, column: &str) -> Result<bool> {
    Ok(db.query_one(&Statements::has_column(table, column), (), |_| Ok(())).await?.is_some())
}
