//! The statements of the archive (docs/queue.md, "The archive"): with `Options::archive`
//! on, an ack copies the message into `<prefix>_transport_archive` in the DELETE's own
//! transaction, and prunes up to `PRUNE` rows older than the retention. Off, neither runs:
//! the table stays as it is.

use super::{leased, Bound};
use crate::types::Lease;

/// The most rows one ack prunes: more than the one it adds, so the archive keeps up with
/// its retention, and never a long stall of the ack that finds a backlog.
const PRUNE: usize = 100;

/// The archive: the message as it was acked (seq, group, event, headers, claims), which
/// worker acked it, when it was published, claimed (the claim that was acked) and acked.
/// A seq is never reused (the messages table's AUTOINCREMENT; a redrive takes a new one).
pub(super) fn table(a: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {a} (seq INTEGER PRIMARY KEY, group_id TEXT NOT NULL, event TEXT NOT NULL, \
         headers TEXT, attempts INTEGER NOT NULL, worker TEXT NOT NULL, enqueued_at REAL, claimed_at REAL, \
         acked_at REAL NOT NULL)"
    )
}

/// A group's history in order (`archive --group`), and the prune's range.
pub(super) fn indexes(a: &str) -> [String; 2] {
    [
        format!("CREATE INDEX IF NOT EXISTS {a}_by_group ON {a} (group_id, seq)"),
        format!("CREATE INDEX IF NOT EXISTS {a}_by_acked ON {a} (acked_at)"),
    ]
}

#[derive(Debug, Clone, Default)]
pub struct ArchiveSql {
    copy: String,
    prune: String,
    /// A page of every group's archived messages, and one of a group's.
    pages: [String; 2],
}

impl ArchiveSql {
    pub(super) fn new(m: &str, a: &str) -> ArchiveSql {
        let page = |group: bool| {
            let only_group = if group { " AND group_id = ?3" } else { "" };
            format!(
                "SELECT seq, CAST(group_id AS BLOB), CAST(event AS BLOB), headers, attempts, worker, enqueued_at, \
                 claimed_at, acked_at FROM {a} WHERE seq > ?1{only_group} ORDER BY seq LIMIT ?2 + 1"
            )
        };
        ArchiveSql {
            // ?1 seq, ?2 group_id, ?3 worker_id (the lease), ?4 now. OR REPLACE: an ack never
            // fails on the archive (a seq is not reused, unless the messages table was
            // made again beside an older archive).
            copy: format!(
                "INSERT OR REPLACE INTO {a} (seq, group_id, event, headers, attempts, worker, enqueued_at, \
                 claimed_at, acked_at) \
                 SELECT seq, group_id, event, headers, attempts, locked_by, enqueued_at, claimed_at, ?4 FROM {m} \
                 WHERE seq = ?1 AND group_id = ?2 AND locked_by = ?3"
            ),
            prune: format!(
                "DELETE FROM {a} WHERE seq IN (SELECT seq FROM {a} WHERE acked_at < ?1 ORDER BY acked_at LIMIT {PRUNE})"
            ),
            pages: [page(false), page(true)],
        }
    }

    /// The message of `lease`, if still leased to its worker, into the archive as acked at
    /// `now`: before the ack's DELETE, which takes the same row.
    pub fn copy(&self, lease: &Lease, now: f64) -> Bound<'_> {
        (&self.copy, leased(lease, [now.into()]))
    }

    /// Up to `PRUNE` archived messages acked before `before` deleted, oldest first.
    pub fn prune(&self, before: f64) -> Bound<'_> {
        (&self.prune, vec![before.into()])
    }

    /// A page of archived messages in seq order after seq `after` (?1), `limit` + 1 rows
    /// (?2: one more than the page, to know whether another follows); with `group_id`,
    /// only that group's (?3).
    pub fn page(&self, group_id: Option<&str>, after: i64, limit: i64) -> Bound<'_> {
        let mut values = vec![after.into(), limit.into()];
        values.extend(group_id.map(Into::into));
        (&self.pages[usize::from(group_id.is_some())], values)
    }
}
