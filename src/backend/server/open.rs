//! Opening a queue on a libSQL server: the server is asked once that it answers; an
//! embedded replica is then built (libsql keeps its file synced from the primary) and
//! synced before the first call.

use std::sync::Arc;
use std::time::Duration;

use libsql::Builder;
use libsql_hrana::proto::{Batch, BatchStep, Stmt};

use super::pipeline::Pipeline;
use super::sync::{sync, SyncFailed};
use super::{Replica, Server};
use crate::backend::connect::{check_not_mixed, sqlite_busy_timeout, within_connect_timeout, NO_ANSWER};
use crate::error::{Error, Result};
use crate::metrics::Counter;
use crate::options::Options;

impl Server {
    /// A remote queue at `url`.
    pub async fn remote(url: &str, options: &Options, busy_retries: Arc<Counter>) -> Result<Server> {
        let server = Server::new(url, options, busy_retries, None)?;
        match within_connect_timeout(url, server.probe()).await {
            Ok(()) => Ok(server),
            Err(e) => Err(Error::Connect(format!("open {url:?}: the libSQL server could not be used: {e}"))),
        }
    }

    /// An embedded replica at `path` of the primary at `options.sync_url`: its writes go
    /// to the primary, its local copy serves looks.
    pub async fn replica(path: &str, options: &Options, busy_retries: Arc<Counter>) -> Result<Server> {
        check_not_mixed(path, true)?;
        let url = options.sync_url.clone().unwrap_or_default();
        let token = options.auth_token.clone().unwrap_or_default();
        let mut builder = Builder::new_remote_replica(path, url.clone(), token).read_your_writes(false);
        if let Some(interval) = options.sync_interval {
            builder = builder.sync_interval(interval);
        }
        let server = Server::new(&url, options, busy_retries, None)?;
        // Asked first, the primary says at once why it cannot be used (refused, a bad
        // token), and one that answers has shown it is there before the download below.
        if let Err(e) = within_connect_timeout(&url, server.probe()).await {
            return Err(Error::Connect(format!("open {path:?}: the libSQL server at {url} could not be used: {e}")));
        }
        let built = within_connect_timeout(path, async { builder.build().await.map_err(|e| e.to_string()) }).await;
        let database = match built {
            Ok(database) => database,
            Err(e) => return Err(server.explained(path, &url, e).await),
        };
        let fail = |e: libsql::Error| Error::Connect(format!("open {path:?}: the replica could not be opened: {e}"));
        let conn = database.connect().map_err(fail)?;
        sqlite_busy_timeout(&conn, options.busy_timeout).map_err(fail)?;
        // The first sync downloads the whole database: the primary has answered, so it has
        // as long as any call (busy timeout + 20 s), not 10 s.
        let limit = server.answer_limit();
        let synced = match sync(&database, limit).await {
            Ok(()) => Ok(()),
            Err(SyncFailed::Error(e)) => Err(e),
            Err(SyncFailed::NoAnswer) => Err(format!("{path}: the first sync got {NO_ANSWER} {} s", limit.as_secs())),
        };
        if let Err(e) = synced {
            return Err(server.explained(path, &url, e).await);
        }
        Ok(Server { replica: Some(Replica { database, conn }), ..server })
    }

    fn new(url: &str, options: &Options, busy_retries: Arc<Counter>, replica: Option<Replica>) -> Result<Server> {
        let token = options.auth_token.as_deref().unwrap_or_default();
        let pipeline = Pipeline::new(url, token).map_err(Error::Connect)?;
        Ok(Server { pipeline, busy_timeout: options.busy_timeout, busy_retries, replica, open: false })
    }

    /// One request that reads nothing: the server answers and takes the token.
    async fn probe(&self) -> std::result::Result<(), String> {
        let step = BatchStep { condition: None, stmt: Stmt::new("SELECT 1", true) };
        let batch = Batch { steps: vec![step], replication_index: None };
        match self.pipeline.run(batch).await {
            Ok(result) => match result.step_errors.into_iter().flatten().next() {
                Some(e) => Err(super::server_error(e).message().to_owned()),
                None => Ok(()),
            },
            Err(e) => Err(super::failed_request(e).message().to_owned()),
        }
    }

    /// An embedded replica that cannot reach its primary says only "Timeout performing
    /// handshake with primary", whether the server is down or refused the token. Asking
    /// the server once ourselves gives the reason (401 "The JWT is invalid", connection
    /// refused, ...). Only on the failure path: a good open costs nothing more.
    async fn explained(&self, path: &str, url: &str, replica: String) -> Error {
        if replica.contains(NO_ANSWER) {
            // Nothing more to learn from a server that does not answer, and no time left to ask.
            return Error::Connect(format!("open {path:?}: the libSQL server could not be used: {replica}"));
        }
        let reason = match tokio::time::timeout(Duration::from_secs(3), self.probe()).await {
            Ok(Err(reason)) => format!("{reason} (replica: {replica})"),
            _ => replica,
        };
        Error::Connect(format!("open {path:?}: the libSQL server at {url} could not be used: {reason}"))
    }
}
