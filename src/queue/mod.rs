//! The queue's operations, written once for every backend: the worker's (work.rs), the
//! looks inside (looks.rs), administration (admin.rs), the schema at open (schema.rs) and a sharded queue's
//! record of its set (shard_set.rs).
//! Each writes its statements (sql/) as a chain or a read, and the backend (backend/) runs
//! them where the queue lives.

pub mod admin;
pub mod looks;
pub mod schema;
pub mod shard_set;
pub mod work;
