//! The async face: the queue's operations as `async fn` over libsql's native async API.
//! Calls on one value run one at a time (one connection, and claims serialize on the
//! database's write lock anyway).

use tokio::sync::Mutex;

use crate::connect::{self, Mode};
use crate::db::Db;
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::message::Message;
use crate::options::{Clock, Options};
use crate::queue::{self, Claim};
use crate::schema;
use crate::sql::Sql;
use crate::validate;

pub struct AsyncTransport {
    /// The connection and the `Database` it came from (a replica's background sync lives
    /// in it; a server connection that went bad is re-opened from it), one call at a time.
    db: Mutex<Db>,
    sql: Sql,
    clock: Clock,
    mode: Mode,
}

impl AsyncTransport {
    /// Opens the queue at `database`: a file path, `":memory:"`, a `libsql://` or
    /// `http(s)://` URL (remote), or a path with `Options::sync_url` (embedded replica).
    pub async fn open(database: &str, options: &Options) -> Result<AsyncTransport> {
        validate::non_empty("database", database)?;
        let mode = Mode::of(database, options);
        let connected = connect::connect(database, options, mode).await?;
        let mut db = Db::new(connected, mode, options.busy_timeout);
        let sql = Sql::new(&options.prefix);
        schema::prepare(&mut db, &sql, options.create_schema).await.map_err(|e| e.during("open"))?;
        Ok(AsyncTransport {
            db: Mutex::new(db),
            sql,
            clock: options.clock.clone(),
            mode,
        })
    }

    /// Where the queue lives: a local file, memory, a server, or a replica of one.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Appends `event_json` to `group_id`'s FIFO. The first publish into a group fixes its
    /// `priority` (0..4) and `routing_key`. One transaction: the message and its group, or neither.
    pub async fn publish(
        &self,
        group_id: &str,
        event_json: &str,
        priority: i32,
        routing_key: Option<&str>,
    ) -> Result<()> {
        let message = Message { group_id, event_json, priority, routing_key };
        validate::message(&message)?;
        self.append(std::slice::from_ref(&message)).await.map_err(|e| e.during("publish"))
    }

    /// Appends `messages` in order (within a group, FIFO order is the batch's order), each
    /// as `publish` would, in one transaction: all of them or none, with one commit for the
    /// batch. Every message is checked before anything is written; an `Error::Argument`
    /// names the bad one by index (`messages[3].event_json ...`). An empty batch does nothing.
    pub async fn publish_many(&self, messages: &[Message<'_>]) -> Result<()> {
        validate::messages(messages)?;
        self.append(messages).await.map_err(|e| e.during("publish_many"))
    }

    /// The write of `publish` and `publish_many` (and of the blocking face's group
    /// commits), arguments already checked.
    pub(crate) async fn append(&self, messages: &[Message<'_>]) -> Result<()> {
        let mut db = self.db.lock().await;
        queue::publish_many(&mut db, &self.sql, messages).await
    }

    /// Leases the head of the group that has waited longest among those with nothing in
    /// flight, priority >= `min_priority` and (when any are given) one of `routing_keys`,
    /// to `worker_id` for `visibility` seconds. `None` when nothing is deliverable.
    pub async fn claim(
        &self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>> {
        validate_claim(worker_id, visibility, min_priority, routing_keys)?;
        let mut db = self.db.lock().await;
        let request = Claim { worker_id, visibility, min_priority, routing_keys };
        queue::claim(&mut db, &self.sql, &request, &|| self.now()).await.map_err(|e| e.during("claim"))
    }

    /// Deletes the leased message (and its group when it was the last). `Error::LeaseLost`
    /// if it is gone or leased to another worker; then nothing changes.
    pub async fn ack(&self, lease: &Lease) -> Result<()> {
        validate_lease(lease)?;
        let mut db = self.db.lock().await;
        queue::ack(&mut db, &self.sql, lease, &|| self.now()).await.map_err(|e| e.during("ack"))
    }

    /// Acks `lease` and claims the next message for `worker_id`, in one transaction: a
    /// worker's loop with one commit per message instead of two. If the ack fails
    /// (`Error::LeaseLost`, ...) nothing is claimed. Arguments as for `ack` and `claim`.
    pub async fn ack_and_claim(
        &self,
        lease: &Lease,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>> {
        validate_lease(lease)?;
        validate_claim(worker_id, visibility, min_priority, routing_keys)?;
        let mut db = self.db.lock().await;
        let request = Claim { worker_id, visibility, min_priority, routing_keys };
        queue::ack_and_claim(&mut db, &self.sql, lease, &request, &|| self.now())
            .await
            .map_err(|e| e.during("ack_and_claim"))
    }

    /// Gives the message back: claimable at once with `delay` 0, parked (its group
    /// blocked) for `delay` seconds otherwise. Same `Error::LeaseLost` rule as `ack`.
    pub async fn nack(&self, lease: &Lease, delay: f64) -> Result<()> {
        validate_lease(lease)?;
        validate::non_negative_seconds("delay", delay)?;
        let mut db = self.db.lock().await;
        queue::nack(&mut db, &self.sql, lease, delay, &|| self.now())
            .await
            .map_err(|e| e.during("nack"))
    }

    /// Closes the connection. Dropping the transport does the same.
    pub async fn close(self) -> Result<()> {
        self.db.into_inner().close();
        Ok(())
    }

    fn now(&self) -> Result<f64> {
        let now = (self.clock)();
        if !now.is_finite() || now < 0.0 {
            return Err(Error::Argument(format!("the clock returned {now}; it must return finite epoch seconds")));
        }
        Ok(now)
    }
}

fn validate_claim(worker_id: &str, visibility: f64, min_priority: i32, routing_keys: &[&str]) -> Result<()> {
    validate::worker_id(worker_id)?;
    validate::positive_seconds("visibility", visibility)?;
    validate::priority("min_priority", min_priority)?;
    validate::routing_keys(routing_keys)
}

fn validate_lease(lease: &Lease) -> Result<()> {
    validate::non_empty("lease.group_id", &lease.group_id)?;
    validate::worker_id(&lease.worker_id).map_err(|e| Error::Argument(format!("lease.{e}")))
}
