//! A sharded queue's record of its set, one row in each of its databases (shards/set.rs):
//! which queue the database belongs to, its index, and how many shards there are.

use super::Bound;

#[derive(Debug, Clone)]
pub struct ShardSql {
    pub table: String,
    pub create_table: String,
    insert_record: String,
    pub read_record: String,
    /// One row, 1 if the database holds a message.
    pub holds_messages: String,
}

impl ShardSql {
    pub fn new(prefix: &str, messages_table: &str) -> ShardSql {
        let t = format!("{prefix}_transport_shard");
        ShardSql {
            create_table: format!(
                "CREATE TABLE IF NOT EXISTS {t} (queue_id TEXT NOT NULL, shard INTEGER NOT NULL, \
                 shards INTEGER NOT NULL)"
            ),
            insert_record: format!(
                "INSERT INTO {t} (queue_id, shard, shards) SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM {t})"
            ),
            read_record: format!("SELECT queue_id, shard, shards FROM {t} LIMIT 1"),
            holds_messages: format!("SELECT EXISTS (SELECT 1 FROM {messages_table})"),
            table: t,
        }
    }

    /// Writes the record (`queue_id`, `shard` of `shards`) unless one is there: of two
    /// openers creating a set at once, the first one's stays, and both read it back.
    pub fn insert_record(&self, queue_id: &str, shard: usize, shards: usize) -> Bound<'_> {
        (&self.insert_record, vec![queue_id.into(), (shard as i64).into(), (shards as i64).into()])
    }
}
