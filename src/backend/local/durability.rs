//! Which commits wait for the disk. At synchronous FULL every commit is synced before its
//! call returns, except a claim's: a lease only matters while its worker lives, and the
//! power loss that would take the commit away takes the worker on this machine with it, so
//! the message is delivered again as it would be once the lease lapsed (the one trace: that
//! claim is not counted in its `attempts`). The claim's frames reach the disk with the next
//! synced commit of any connection, which syncs the whole WAL before it. At FULL a
//! claim-then-ack loop thus waits for one sync per message instead of two.
//!
//! SQLite reads the setting when a statement setting it is compiled, outside a
//! transaction, so each change is a fresh `PRAGMA synchronous` before `BEGIN`, made only
//! when the next transaction wants another level than the last one.

use libsql::Connection;

use crate::error::{Error, Result};
use crate::options::Synchronous;

pub struct Durability {
    /// What the queue was opened with.
    chosen: Synchronous,
    /// What the connection is set to now.
    set: Synchronous,
}

/// What a transaction's commit needs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// Synced at FULL, as every commit but a claim's.
    Durable,
    /// A claim's alone: never synced for itself.
    Lease,
}

impl Durability {
    pub fn new(chosen: Synchronous) -> Durability {
        Durability { chosen, set: chosen }
    }

    /// The pragma `chosen` needs, set once at open.
    pub fn pragma(chosen: Synchronous) -> &'static str {
        match chosen {
            Synchronous::Full => "PRAGMA synchronous = FULL",
            Synchronous::Normal => "PRAGMA synchronous = NORMAL",
        }
    }

    /// Sets the connection for the next transaction's `commit`, outside any transaction.
    pub async fn prepare(&mut self, conn: &Connection, commit: Commit) -> Result<()> {
        let wanted = match commit {
            Commit::Durable => self.chosen,
            Commit::Lease => Synchronous::Normal,
        };
        if wanted != self.set {
            conn.execute(Durability::pragma(wanted), ()).await.map_err(|e| Error::from_libsql("set synchronous", e))?;
            self.set = wanted;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn level(conn: &Connection) -> i64 {
        let mut rows = conn.query("PRAGMA synchronous", ()).await.unwrap();
        rows.next().await.unwrap().unwrap().get::<i64>(0).unwrap()
    }

    #[tokio::test]
    async fn each_transaction_gets_the_level_its_commit_needs() {
        let dir = tempfile::tempdir().unwrap();
        let db = libsql::Builder::new_local(dir.path().join("q.db")).build().await.unwrap();
        let conn = db.connect().unwrap();
        conn.execute(Durability::pragma(Synchronous::Full), ()).await.unwrap();
        let mut durability = Durability::new(Synchronous::Full);
        // SQLite's levels: 1 NORMAL, 2 FULL. Asked again, each switch must take (a pragma
        // statement kept prepared would not set it again).
        for _ in 0..2 {
            durability.prepare(&conn, Commit::Lease).await.unwrap();
            assert_eq!(level(&conn).await, 1, "a claim's commit is not synced");
            durability.prepare(&conn, Commit::Durable).await.unwrap();
            assert_eq!(level(&conn).await, 2, "every other commit is, at FULL");
        }
        let mut normal = Durability::new(Synchronous::Normal);
        conn.execute(Durability::pragma(Synchronous::Normal), ()).await.unwrap();
        normal.prepare(&conn, Commit::Durable).await.unwrap();
        assert_eq!(level(&conn).await, 1, "NORMAL stays NORMAL");
    }
}
