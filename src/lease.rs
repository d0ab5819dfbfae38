//! A claimed message: what a worker handles, then acks or nacks.

/// The lease on one message. `ack` and `nack` read only `seq`, `group_id` and `worker_id`,
/// so a lease rebuilt from those (say, by a binding that copied them) works too.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    /// The message's seq: FIFO order and the lease handle.
    pub seq: i64,
    pub group_id: String,
    /// The event, JSON text byte for byte as published.
    pub event: String,
    /// Who holds the lease.
    pub worker_id: String,
    /// Epoch seconds the lease runs to.
    pub lock_expiry: f64,
    /// How many times the message has been claimed, this claim included (1 on its first).
    /// Claims by harel's Python transports are not counted. Not read by ack and nack.
    pub attempts: i64,
}
