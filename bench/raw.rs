//! The statement-for-statement limit: the SPEC's exact statements through the `libsql`
//! crate, each prepared once and reused, driven the way harel's transports drive them
//! (publish = two autocommit statements; claim = the SPEC's SELECT and two UPDATEs under
//! BEGIN IMMEDIATE; ack = two DELETEs under BEGIN IMMEDIATE; nack(0) = one autocommit
//! UPDATE). Same connection setup as ours: WAL, busy timeout 5 s, the given synchronous.
//! Nothing else: no validation, no statement cache lookup, no error wrapping.

use std::time::Duration;

use harel_transport::{system_clock, Lease, Synchronous};
use libsql::{Connection, Database, Statement};
use tokio::runtime::Runtime;

use crate::measure::Queue;
use crate::states::Style;

const M: &str = "harel_transport_messages";
const G: &str = "harel_transport_groups";

/// the SPEC's claim, verbatim (params: min_priority, now); with routing keys, the SPEC's
/// "AND g.routing_key IN (?, …)" after the priority filter (params: min_priority, key, now).
fn spec_claim(routed: bool) -> String {
    let routing = if routed { " AND g.routing_key IN (?)" } else { "" };
    format!(
        "SELECT m.seq, m.group_id, m.event FROM {G} g \
         JOIN {M} m ON m.seq = (SELECT MIN(seq) FROM {M} WHERE group_id = g.group_id) \
         WHERE g.priority >= ?{routing} AND NOT EXISTS ( \
           SELECT 1 FROM {M} x WHERE x.group_id = g.group_id \
           AND x.locked_by IS NOT NULL AND x.lock_expiry >= ?) \
         ORDER BY g.last_claimed_at, g.rowid LIMIT 1"
    )
}

struct Statements {
    begin: Statement,
    commit: Statement,
    claim: Statement,
    claim_routed: Statement,
    stamp_group: Statement,
    lease_message: Statement,
    insert_message: Statement,
    insert_group: Statement,
    delete_message: Statement,
    delete_group: Statement,
    free_message: Statement,
}

pub struct Raw {
    rt: Runtime,
    conn: Connection,
    s: Statements,
    _db: Database,
}

impl Raw {
    /// Opens `path` (a template copy, or a new file when `create_schema`).
    pub fn open(path: &str, synchronous: Synchronous, create_schema: bool) -> Result<Raw, String> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let (db, conn, s) = rt
            .block_on(async {
                let db = libsql::Builder::new_local(path).build().await?;
                let conn = db.connect()?;
                conn.busy_timeout(Duration::from_secs(5))?;
                conn.query("PRAGMA journal_mode = WAL", ()).await?.next().await?;
                let sync = if synchronous == Synchronous::Full { "FULL" } else { "NORMAL" };
                conn.execute(&format!("PRAGMA synchronous = {sync}"), ()).await?;
                if create_schema {
                    conn.execute_batch(&Style::Spec.schema_script()).await?;
                }
                let s = Statements {
                    begin: conn.prepare("BEGIN IMMEDIATE").await?,
                    commit: conn.prepare("COMMIT").await?,
                    claim: conn.prepare(&spec_claim(false)).await?,
                    claim_routed: conn.prepare(&spec_claim(true)).await?,
                    stamp_group: conn
                        .prepare(&format!("UPDATE {G} SET last_claimed_at = ? WHERE group_id = ?"))
                        .await?,
                    lease_message: conn
                        .prepare(&format!("UPDATE {M} SET locked_by = ?, lock_expiry = ? WHERE seq = ?"))
                        .await?,
                    insert_message: conn.prepare(&format!("INSERT INTO {M} (group_id, event) VALUES (?, ?)")).await?,
                    insert_group: conn
                        .prepare(&format!("INSERT OR IGNORE INTO {G} (group_id, priority) VALUES (?, ?)"))
                        .await?,
                    delete_message: conn.prepare(&format!("DELETE FROM {M} WHERE seq = ?")).await?,
                    delete_group: conn
                        .prepare(&format!(
                            "DELETE FROM {G} WHERE group_id = ? AND NOT EXISTS \
                             (SELECT 1 FROM {M} WHERE group_id = ?)"
                        ))
                        .await?,
                    free_message: conn
                        .prepare(&format!("UPDATE {M} SET locked_by = NULL, lock_expiry = NULL WHERE seq = ?"))
                        .await?,
                };
                Ok::<_, libsql::Error>((db, conn, s))
            })
            .map_err(|e| format!("raw open: {e}"))?;
        Ok(Raw { rt, conn, s, _db: db })
    }

    /// `work` between BEGIN IMMEDIATE and COMMIT; ROLLBACK on error.
    fn transaction<T>(&mut self, work: impl AsyncFnOnce(&Statements) -> libsql::Result<T>) -> Result<T, String> {
        let (s, conn) = (&self.s, &self.conn);
        self.rt
            .block_on(async {
                exec(&s.begin, ()).await?;
                match work(s).await {
                    Ok(v) => {
                        exec(&s.commit, ()).await?;
                        Ok(v)
                    }
                    Err(e) => {
                        let _ = conn.execute("ROLLBACK", ()).await;
                        Err(e)
                    }
                }
            })
            .map_err(|e| e.to_string())
    }
}

async fn exec(stmt: &Statement, params: impl libsql::params::IntoParams) -> libsql::Result<usize> {
    let n = stmt.execute(params).await;
    stmt.reset();
    n
}

impl Queue for Raw {
    fn publish(&mut self, group_id: &str, event_json: &str) -> Result<(), String> {
        let s = &self.s;
        self.rt
            .block_on(async {
                exec(&s.insert_message, (group_id, event_json)).await?;
                exec(&s.insert_group, (group_id, 0)).await
            })
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn claim(
        &mut self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>, String> {
        let now = system_clock();
        let key = routing_keys.first().copied();
        assert!(routing_keys.len() <= 1, "the raw loop claims by at most one routing key");
        self.transaction(async |s| {
            let head = {
                let (stmt, rows) = match key {
                    None => (&s.claim, s.claim.query((min_priority, now)).await),
                    Some(k) => (&s.claim_routed, s.claim_routed.query((min_priority, k, now)).await),
                };
                let row = match rows {
                    Ok(mut rows) => rows.next().await.and_then(|r| {
                        r.map(|r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?, r.get::<String>(2)?))).transpose()
                    }),
                    Err(e) => Err(e),
                };
                stmt.reset();
                row?
            };
            let Some((seq, group_id, event)) = head else {
                return Ok(None);
            };
            exec(&s.stamp_group, (now, group_id.as_str())).await?;
            exec(&s.lease_message, (worker_id, now + visibility, seq)).await?;
            Ok(Some(Lease {
                seq,
                group_id,
                event,
                worker_id: worker_id.to_owned(),
                lock_expiry: now + visibility,
                attempts: 0,
                headers: Default::default(),
            }))
        })
    }

    fn ack(&mut self, lease: &Lease) -> Result<(), String> {
        self.transaction(async |s| {
            exec(&s.delete_message, [lease.seq]).await?;
            exec(&s.delete_group, (lease.group_id.as_str(), lease.group_id.as_str())).await?;
            Ok(())
        })
    }

    fn nack_now(&mut self, lease: &Lease) -> Result<(), String> {
        let s = &self.s;
        self.rt.block_on(exec(&s.free_message, [lease.seq])).map(drop).map_err(|e| e.to_string())
    }
}
