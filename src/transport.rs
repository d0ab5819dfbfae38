//! The blocking face, for threads and the C ABI: each call drives the async
//! implementation to completion on a runtime owned by the transport. It is `Send + Sync`;
//! calls on one value run one at a time, except that publishes from several threads share
//! commits (group_commit.rs). Do not call it from async code (use `AsyncTransport` there).

use tokio::runtime::Runtime;

use crate::async_transport::{with_headers, AsyncTransport};
use crate::backend::Backend;
use crate::error::Result;
use crate::group_commit::GroupCommit;
use crate::metrics::Metrics;
use crate::mode::Mode;
use crate::options::Options;
use crate::request::Publish;
use crate::shards::Watch;
use crate::types::{
    Archived, DeadLetter, DeadLetters, Delivery, GroupInfo, GroupState, Lease, Limit, LimitInfo, Message, MessageInfo, Page, Pause,
    PauseTarget, Published, Stats,
};
use crate::waiting::wait::Wait;

pub struct Transport {
    /// Always `Some` until `close` or drop takes it.
    inner: Option<AsyncTransport>,
    runtime: Runtime,
    commits: GroupCommit,
}

impl Transport {
    /// See [`AsyncTransport::open`].
    pub fn open(database: &str, options: &Options) -> Result<Transport> {
        Self::open_shards(&[database], options)
    }

    /// See [`AsyncTransport::open_shards`].
    pub fn open_shards(databases: &[&str], options: &Options) -> Result<Transport> {
        let each = AsyncTransport::options_of_each(databases, options)?;
        let runtime = Backend::runtime(databases, &each)?;
        let inner = runtime.block_on(AsyncTransport::open_each(databases, &each))?;
        Ok(Transport { inner: Some(inner), runtime, commits: GroupCommit::default() })
    }

    /// See [`AsyncTransport::shard_count`].
    pub fn shard_count(&self) -> usize {
        self.inner().shard_count()
    }

    /// See [`AsyncTransport::shard_of`].
    pub fn shard_of(&self, group_id: &str) -> usize {
        self.inner().shard_of(group_id)
    }

    /// See [`AsyncTransport::shard_stats`].
    pub fn shard_stats(&self) -> Result<Vec<Stats>> {
        self.runtime.block_on(self.inner().shard_stats())
    }

    /// See [`AsyncTransport::redrive_on`].
    pub fn redrive_on(&self, shard: usize, which: DeadLetters<'_>) -> Result<u64> {
        self.runtime.block_on(self.inner().redrive_on(shard, which))
    }

    /// See [`AsyncTransport::purge_dead_on`].
    pub fn purge_dead_on(&self, shard: usize, which: DeadLetters<'_>) -> Result<u64> {
        self.runtime.block_on(self.inner().purge_dead_on(shard, which))
    }

    pub(crate) fn inner(&self) -> &AsyncTransport {
        self.inner.as_ref().expect("a Transport is live until close or drop")
    }

    /// Drives `call` to completion on the transport's runtime.
    pub(crate) fn block_on<F: std::future::Future>(&self, call: F) -> F::Output {
        self.runtime.block_on(call)
    }

    pub fn mode(&self) -> Mode {
        self.inner().mode()
    }

    /// See [`AsyncTransport::metrics`].
    pub fn metrics(&self) -> Metrics {
        self.inner().metrics()
    }

    /// See [`AsyncTransport::absent`].
    pub fn absent(&self) -> &[String] {
        self.inner().absent()
    }

    /// See [`AsyncTransport::publish`]. Called from several threads at once, the
    /// publishes that arrive while another commits are written together in the next
    /// transaction (one commit for all); each call still returns its own result, once its
    /// own message is committed.
    pub fn publish(&self, group_id: &str, event_json: &str, priority: i32, routing_key: Option<&str>) -> Result<()> {
        let request = Publish::one(Message { group_id, event_json, priority, routing_key, headers: None })?;
        self.appended(&request, "publish")
    }

    /// See [`AsyncTransport::publish_many`]. Shares commits as `publish` does; the batch
    /// stays all or none.
    pub fn publish_many(&self, messages: &[Message<'_>]) -> Result<()> {
        let request = Publish::many(messages)?;
        if messages.is_empty() {
            return Ok(());
        }
        self.appended(&request, "publish_many")
    }

    /// A publish (`name`) through group commit, in a span when traced.
    fn appended(&self, request: &Publish<'_, '_>, name: &str) -> Result<()> {
        let telemetry = &self.inner().telemetry;
        let Some((span, headers)) = telemetry.publishing(request.messages()) else {
            return self.append(request).map_err(|e| e.during(name));
        };
        let traced = with_headers(request.messages(), &headers);
        let appended = self.append(&Publish::checked(&traced)).map_err(|e| e.during(name));
        telemetry.published(Some(span), &appended, &[]);
        appended
    }

    /// See [`AsyncTransport::publish_with`]. Not through group commit: each call is its own
    /// transaction, so its outcome is its own.
    pub fn publish_with(&self, message: Message<'_>, delivery: Delivery<'_>) -> Result<Published> {
        self.runtime.block_on(self.inner().publish_with(message, delivery))
    }

    /// See [`AsyncTransport::publish_many_with`].
    pub fn publish_many_with(&self, items: &[(Message<'_>, Delivery<'_>)]) -> Result<Vec<Published>> {
        self.runtime.block_on(self.inner().publish_many_with(items))
    }

    /// Through group commit: `batch` may hold other threads' messages too.
    fn append(&self, request: &Publish<'_, '_>) -> Result<()> {
        let commit = |batch: &[Message<'_>]| self.runtime.block_on(self.inner().append(&Publish::checked(batch)));
        self.commits.publish(request.messages(), &commit)
    }

    /// See [`AsyncTransport::claim`].
    pub fn claim(
        &self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>> {
        self.runtime.block_on(self.inner().claim(worker_id, visibility, min_priority, routing_keys))
    }

    /// See [`AsyncTransport::claim_wait`]. While it waits, other threads' calls on this
    /// transport go ahead.
    pub fn claim_wait(
        &self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
        wait: &Wait,
    ) -> Result<Option<Lease>> {
        self.runtime.block_on(self.inner().claim_wait(worker_id, visibility, min_priority, routing_keys, wait))
    }

    /// See [`AsyncTransport::claim_many`].
    pub fn claim_many(
        &self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
        max: usize,
        wait: &Wait,
    ) -> Result<Vec<Lease>> {
        self.runtime.block_on(self.inner().claim_many(worker_id, visibility, min_priority, routing_keys, max, wait))
    }

    /// See [`AsyncTransport::interrupt`]; from any thread.
    pub fn interrupt(&self) {
        self.inner().interrupt()
    }

    /// See [`AsyncTransport::ack`].
    pub fn ack(&self, lease: &Lease) -> Result<()> {
        self.runtime.block_on(self.inner().ack(lease))
    }

    /// See [`AsyncTransport::ack_many`].
    pub fn ack_many(&self, leases: &[Lease]) -> Result<Vec<Result<()>>> {
        self.runtime.block_on(self.inner().ack_many(leases))
    }

    /// See [`AsyncTransport::ack_and_claim_many`].
    pub fn ack_and_claim_many(
        &self,
        leases: &[Lease],
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
        max: usize,
    ) -> Result<(Vec<Result<()>>, Vec<Lease>)> {
        let inner = self.inner();
        self.runtime.block_on(inner.ack_and_claim_many(leases, worker_id, visibility, min_priority, routing_keys, max))
    }

    /// See [`AsyncTransport::extend`].
    pub fn extend(&self, lease: &mut Lease, visibility: f64) -> Result<()> {
        self.runtime.block_on(self.inner().extend(lease, visibility))
    }

    /// See [`AsyncTransport::ack_and_claim`].
    pub fn ack_and_claim(
        &self,
        lease: &Lease,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>> {
        self.runtime.block_on(self.inner().ack_and_claim(lease, worker_id, visibility, min_priority, routing_keys))
    }

    /// See [`AsyncTransport::nack`].
    pub fn nack(&self, lease: &Lease, delay: f64) -> Result<()> {
        self.runtime.block_on(self.inner().nack(lease, delay))
    }

    /// See [`AsyncTransport::dead_letter`].
    pub fn dead_letter(&self, lease: &Lease, reason: &str) -> Result<()> {
        self.runtime.block_on(self.inner().dead_letter(lease, reason))
    }

    /// See [`AsyncTransport::stats`].
    pub fn stats(&self) -> Result<Stats> {
        self.runtime.block_on(self.inner().stats())
    }

    /// See [`AsyncTransport::groups`].
    pub fn groups(&self, state: Option<GroupState>, cursor: Option<&str>, limit: usize) -> Result<Page<GroupInfo>> {
        self.runtime.block_on(self.inner().groups(state, cursor, limit))
    }

    /// See [`AsyncTransport::peek`].
    pub fn peek(&self, group_id: &str, cursor: Option<&str>, limit: usize) -> Result<Page<MessageInfo>> {
        self.runtime.block_on(self.inner().peek(group_id, cursor, limit))
    }

    /// See [`AsyncTransport::dead_letters`].
    pub fn dead_letters(&self, group_id: Option<&str>, cursor: Option<&str>, limit: usize) -> Result<Page<DeadLetter>> {
        self.runtime.block_on(self.inner().dead_letters(group_id, cursor, limit))
    }

    /// See [`AsyncTransport::archive`].
    pub fn archive(&self, group_id: Option<&str>, cursor: Option<&str>, limit: usize) -> Result<Page<Archived>> {
        self.runtime.block_on(self.inner().archive(group_id, cursor, limit))
    }

    /// See [`AsyncTransport::redrive`].
    pub fn redrive(&self, which: DeadLetters<'_>) -> Result<u64> {
        self.runtime.block_on(self.inner().redrive(which))
    }

    /// See [`AsyncTransport::purge_dead`].
    pub fn purge_dead(&self, which: DeadLetters<'_>) -> Result<u64> {
        self.runtime.block_on(self.inner().purge_dead(which))
    }

    /// See [`AsyncTransport::purge_group`].
    pub fn purge_group(&self, group_id: &str) -> Result<u64> {
        self.runtime.block_on(self.inner().purge_group(group_id))
    }

    /// See [`AsyncTransport::purge`].
    pub fn purge(&self) -> Result<u64> {
        self.runtime.block_on(self.inner().purge())
    }

    /// See [`AsyncTransport::release`].
    pub fn release(&self, group_id: &str) -> Result<bool> {
        self.runtime.block_on(self.inner().release(group_id))
    }

    /// See [`AsyncTransport::pause`].
    pub fn pause(&self, target: PauseTarget<'_>) -> Result<bool> {
        self.runtime.block_on(self.inner().pause(target))
    }

    /// See [`AsyncTransport::resume`].
    pub fn resume(&self, target: PauseTarget<'_>) -> Result<bool> {
        self.runtime.block_on(self.inner().resume(target))
    }

    /// See [`AsyncTransport::pauses`].
    pub fn pauses(&self) -> Result<Vec<Pause>> {
        self.runtime.block_on(self.inner().pauses())
    }

    /// See [`AsyncTransport::set_limit`].
    pub fn set_limit(&self, routing_key: &str, limit: Limit) -> Result<()> {
        self.runtime.block_on(self.inner().set_limit(routing_key, limit))
    }

    /// See [`AsyncTransport::remove_limit`].
    pub fn remove_limit(&self, routing_key: &str) -> Result<()> {
        self.runtime.block_on(self.inner().remove_limit(routing_key))
    }

    /// See [`AsyncTransport::limits`].
    pub fn limits(&self) -> Result<Vec<LimitInfo>> {
        self.runtime.block_on(self.inner().limits())
    }

    /// See [`AsyncTransport::watch`].
    pub fn watch(&self, min_priority: i32, routing_keys: &[&str]) -> Result<Watch> {
        self.inner().watch(min_priority, routing_keys)
    }

    /// See [`AsyncTransport::rearm`].
    pub fn rearm(&self, watch: &Watch) -> Result<bool> {
        self.runtime.block_on(self.inner().rearm(watch))
    }

    /// Closes the connection; it cannot fail. Dropping the transport does the same.
    pub fn close(mut self) {
        if let Some(inner) = self.inner.take() {
            self.runtime.block_on(inner.close());
        }
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            self.runtime.block_on(inner.close());
        }
    }
}
