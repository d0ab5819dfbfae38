//! Making sure the tables are there at `open`: created and upgraded in place, or, with
//! `create_schema` off, checked so a missing table or column fails early with a clear message.

use crate::backend::Backend;
use crate::chain::Chain;
use crate::error::{Error, Result};
use crate::sql::{Lacks, Statements};

/// `archive`: `Options::archive` is on, so the archive table must be there.
pub async fn prepare(backend: &mut Backend, sql: &mut Statements, create: bool, archive: bool) -> Result<()> {
    if !create {
        return check(backend, sql, archive).await;
    }
    // One write transaction. SQLite has no ADD COLUMN IF NOT EXISTS: the columns a file
    // lacks are read first; when another process added one in between, the ALTER fails
    // ("duplicate column name"), nothing of the transaction is kept, and a second look
    // finds it there.
    let mut tries = 0;
    loop {
        let (_, lacking) = missing(backend, sql).await?;
        let created = backend
            .run(|| {
                let mut chain = Chain::new();
                for statement in sql.tables() {
                    chain.push(statement, Vec::new());
                }
                for (_, _, alter) in sql.added_columns().into_iter().filter(|(t, c, _)| lacking.contains(&(*t, *c))) {
                    chain.push(alter, Vec::new());
                }
                for statement in sql.indexes() {
                    chain.push(statement, Vec::new());
                }
                Ok((chain, ()))
            })
            .await;
        match created {
            Err(Error::Database(m)) if m.contains("duplicate column") && tries == 0 => tries += 1,
            other => return other.map(drop),
        }
    }
}

/// The queue as it is (`Options::schema_as_is`): harel's two tables must be there; what a
/// harel 0.9 file lacks of ours is read around (`Lacks`), and named, each as "the table T"
/// or "the column T.C", for `AsyncTransport::absent`. Nothing is created or checked beyond.
pub async fn as_is(backend: &mut Backend, sql: &mut Statements) -> Result<Vec<String>> {
    let (tables, columns) = missing(backend, sql).await?;
    let harels: Vec<&str> = tables.iter().copied().filter(|t| !sql.is_ours(t)).collect();
    if !harels.is_empty() {
        return Err(Error::Database(format!(
            "{} missing: not a queue (opened as it is, nothing is created)",
            match harels.as_slice() {
                [one] => format!("the table {one} is"),
                many => format!("the tables {} are", many.join(", ")),
            }
        )));
    }
    let lacking = |table: &str, column: &str| columns.contains(&(table, column));
    let (m, g, d) = (sql.messages_table.as_str(), sql.groups_table.as_str(), sql.dead_table.as_str());
    let lacks = Lacks {
        attempts: lacking(m, "attempts"),
        enqueued_at: lacking(m, "enqueued_at"),
        routing_key: lacking(g, "routing_key"),
        dead: tables.contains(&d),
        keys: tables.contains(&sql.keys_table.as_str()),
        headers: lacking(m, "headers"),
        dead_headers: lacking(d, "headers"),
        expires_at: lacking(m, "expires_at"),
        pauses: lacks_pauses(sql, &tables),
        archive: tables.contains(&sql.archive_table.as_str()),
        limits: tables.contains(&sql.limits_table.as_str()) || lacking(m, "limited_key"),
        retry: lacking(m, "retry_delay"),
    };
    let mut absent: Vec<String> =
        columns.iter().map(|(table, column)| format!("the column {table}.{column}")).collect();
    let is_trigger = |t: &str| sql.pause_triggers().contains(&t) || sql.limit_triggers().contains(&t);
    let what = |t: &str| if is_trigger(t) { "trigger" } else { "table" };
    absent.extend(tables.iter().map(|t| format!("the {} {t}", what(t))));
    sql.read_around(lacks);
    Ok(absent)
}

/// Whether the pauses table or one of its triggers is missing (`tables` as `missing`'s).
fn lacks_pauses(sql: &Statements, tables: &[&str]) -> bool {
    tables.iter().any(|t| *t == sql.pauses_table || sql.pause_triggers().contains(t))
}

/// Every table and column a queue needs, or one error naming each that is missing. The
/// keys table (added after 0.4.0) is optional: without it only a keyed publish is refused;
/// so are the pauses table and its triggers: without them pause and resume are refused;
/// so is the archive table, unless `archive` (the option) is on.
async fn check(backend: &mut Backend, sql: &mut Statements, archive: bool) -> Result<()> {
    let (tables, columns) = missing(backend, sql).await?;
    let keys = sql.keys_table.as_str();
    let (lacks_keys, lacks_pauses) = (tables.contains(&keys), lacks_pauses(sql, &tables));
    let lacks_archive = tables.contains(&sql.archive_table.as_str());
    let what = |t: &str| if sql.limit_triggers().contains(&t) { "trigger" } else { "table" };
    let optional = |t: &str| {
        t == keys || t == sql.pauses_table || sql.pause_triggers().contains(&t) || (t == sql.archive_table && !archive)
    };
    let mut missing: Vec<String> =
        tables.iter().filter(|t| !optional(t)).map(|t| format!("the {} {t}", what(t))).collect();
    missing.extend(columns.iter().map(|(table, column)| format!("the column {table}.{column}")));
    if missing.is_empty() {
        sql.read_around(Lacks { keys: lacks_keys, pauses: lacks_pauses, archive: lacks_archive, ..sql.lacks() });
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

/// The tables (and the pauses' triggers) that are missing, and the columns of ours that
/// the tables there lack, in one read.
async fn missing<'s>(
    backend: &mut Backend,
    sql: &'s Statements,
) -> Result<(Vec<&'s str>, Vec<(&'s str, &'static str)>)> {
    let [p0, p1] = sql.pause_triggers();
    let [l0, l1] = sql.limit_triggers();
    let triggers = [p0, p1, l0, l1];
    let tables = [
        sql.messages_table.as_str(),
        sql.groups_table.as_str(),
        sql.dead_table.as_str(),
        sql.keys_table.as_str(),
        sql.pauses_table.as_str(),
        sql.archive_table.as_str(),
        sql.limits_table.as_str(),
        p0,
        p1,
        l0,
        l1,
    ];
    let added = sql.added_columns();
    let statements: Vec<String> = tables
        .iter()
        .map(|t| if triggers.contains(t) { Statements::has_trigger(t) } else { Statements::has_table(t) })
        .chain(added.iter().map(|(table, column, _)| Statements::has_column(table, column)))
        .collect();
    let reads: Vec<(&str, Vec<libsql::Value>)> = statements.iter().map(|s| (s.as_str(), Vec::new())).collect();
    let found = backend.read(&reads).await?;
    let (tables_found, columns_found) = found.split_at(tables.len());
    let gone: Vec<&str> =
        tables.iter().zip(tables_found).filter(|(_, rows)| rows.is_empty()).map(|(t, _)| *t).collect();
    let lacking = added
        .into_iter()
        .zip(columns_found)
        .filter(|((table, _, _), rows)| rows.is_empty() && !gone.contains(table))
        .map(|((table, column, _), _)| (table, column))
        .collect();
    Ok((gone, lacking))
}
