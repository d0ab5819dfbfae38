//! A queue over one database (database.rs) and its operations, written once for every
//! backend: the worker's (work.rs), the looks inside (looks.rs), administration
//! (admin.rs) and the schema at open (schema.rs). Each writes its statements (sql/) as a
//! chain or a read, and the backend (backend/) runs them where the queue lives.

pub mod admin;
pub(crate) mod database;
pub mod looks;
pub mod schema;
pub mod work;
