//! Where a queue lives, decided once, at open: `Local` (a file or memory: write
//! transactions under our lock, in this process) or `Server` (a libSQL server or an
//! embedded replica of one: one request per operation). The queue's operations (queue/)
//! are written once, as chains of statements (chain.rs) and reads, and call the backend
//! to run them; only the claim's algorithm is the backend's own (a look and two UPDATEs
//! under the lock locally, one chain per lease on a server). This file is the one place
//! that matches on the kind.

mod connect;
mod local;
mod lock_wait;
mod server;

use std::sync::Arc;

use libsql::Value;
use tokio::runtime::{Builder, Runtime};

use self::local::{file_identity, Local};
use self::server::Server;
use crate::chain::{Before, Chain, Claimed, Done, Row};
use crate::error::{Error, Result};
use crate::metrics::Counter;
use crate::mode::Mode;
use crate::options::Options;
use crate::request::{Claim, Now};
use crate::sql::Statements;
use crate::waiting::wake::{self, Signal};
use crate::waiting::Polling;

pub enum Backend {
    Local(Local),
    Server(Server),
}

/// A local file: one that exists, by its (device, inode); one not made yet, by its
/// directory's and its name (a path's spelling aside, the file it would be made as).
#[derive(Debug, PartialEq, Eq)]
pub enum FileAt {
    Existing((u64, u64)),
    New { dir: (u64, u64), name: std::ffi::OsString },
}

/// An opened backend, and how claims on it wait.
pub struct Opened {
    pub backend: Backend,
    pub mode: Mode,
    /// What wakes this queue's waiting claims in this process (shared with its other
    /// transports here).
    pub wake: Arc<Signal>,
    pub polling: Polling,
}

impl Backend {
    /// Opens the queue at `database` as `Mode::of` reads it; each pause after a busy answer
    /// is counted in `busy_retries`.
    pub async fn open(database: &str, options: &Options, busy_retries: Arc<Counter>) -> Result<Opened> {
        let mode = Mode::of(database, options);
        let (backend, wake, polling) = match mode {
            Mode::Memory => (Backend::Local(Local::memory(options, busy_retries).await?), wake::own(), Polling::Local),
            Mode::File => {
                let local = Local::file(database, options, busy_retries).await?;
                // By device and inode, whatever the path to the file.
                let key = file_identity::at(database)
                    .map_or_else(|_| database.to_owned(), |(dev, ino)| format!("file:{dev}:{ino}"));
                (Backend::Local(local), wake::shared(key, Some(format!("{database}-wal").into())), Polling::Local)
            }
            Mode::Remote => {
                let server = Server::remote(database, options, busy_retries).await?;
                (Backend::Server(server), wake::shared(database.to_owned(), None), Polling::Server)
            }
            Mode::Replica => {
                let server = Server::replica(database, options, busy_retries).await?;
                let primary = options.sync_url.clone().unwrap_or_default();
                (Backend::Server(server), wake::shared(primary, None), Polling::Server)
            }
        };
        Ok(Opened { backend, mode, wake, polling })
    }

    /// The local file `database` names, as what tells two paths to one file from two files;
    /// None for memory, a server or a replica, and for a path whose directory cannot be read
    /// (opening it says why).
    pub fn file_at(database: &str, options: &Options) -> Option<FileAt> {
        if Mode::of(database, options) != Mode::File {
            return None;
        }
        match file_identity::at(database) {
            Ok(file) => Some(FileAt::Existing(file)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let path = std::path::Path::new(database);
                let dir = path.parent().and_then(|d| d.to_str()).filter(|d| !d.is_empty()).unwrap_or(".");
                let name = path.file_name()?.to_owned();
                file_identity::at(dir).ok().map(|dir| FileAt::New { dir, name })
            }
            Err(_) => None,
        }
    }

    /// The runtime a blocking transport drives its calls on: the caller's thread for a
    /// local queue (libsql's local calls run on it anyway), one I/O thread of its own for
    /// a server's network (any shard's). Without it a remote server's requests save two
    /// thread wake-ups (2-4% of an `ack_and_claim` on loopback), but nothing reads the
    /// connections between calls: under sqld 0.24's write-queue stalls (bench part 11, 16
    /// workers on shards) calls then failed in three runs of three (no answer in 50 s, or a
    /// transaction the server timed out), and in none of two with the thread.
    pub fn runtime(databases: &[&str], each: &[Options]) -> Result<Runtime> {
        let network = databases.iter().zip(each).any(|(d, o)| matches!(Mode::of(d, o), Mode::Remote | Mode::Replica));
        let mut builder = match network {
            true => {
                let mut b = Builder::new_multi_thread();
                b.worker_threads(1).thread_name("harel-transport");
                b
            }
            false => Builder::new_current_thread(),
        };
        builder.enable_all().build().map_err(|e| Error::Database(format!("open: could not start the I/O runtime: {e}")))
    }

    /// Runs the chain `build` makes as one write transaction, all or nothing: the result
    /// of each statement, and what `build` wants back. `build` reads the clock, so it runs
    /// once the write lock is held (and again for each try on a server).
    pub async fn run<'c, T>(&mut self, build: impl FnMut() -> Result<(Chain<'c>, T)>) -> Result<(Vec<Done>, T)> {
        self.rollback_open().await;
        match self {
            Backend::Local(local) => local.run(build).await,
            Backend::Server(server) => server.run(build).await,
        }
    }

    /// Runs the chain `build` makes inside an application's open transaction, beginning it
    /// (BEGIN IMMEDIATE, after a busy answer made again within the busy timeout) when none
    /// is open; the transaction stays open, and holds the write lock, until `commit_open`
    /// or `rollback_open`. Any error rolls it back. `build` reads the clock.
    pub async fn run_open<'c, T>(&mut self, build: impl FnMut() -> Result<(Chain<'c>, T)>) -> Result<(Vec<Done>, T)> {
        match self {
            Backend::Local(local) => local.run_open(build).await,
            Backend::Server(server) => server.run_open(build).await,
        }
    }

    /// Runs `chain` and COMMIT in the open transaction; any error rolls it back.
    pub async fn commit_open(&mut self, chain: Chain<'_>) -> Result<Vec<Done>> {
        match self {
            Backend::Local(local) => local.commit_open(chain).await,
            Backend::Server(server) => server.commit_open(chain).await,
        }
    }

    /// Rolls the open transaction back; nothing when none is open. Every other call on the
    /// backend does so first: an application's transaction dropped where it could not be
    /// rolled back (no runtime to run the ROLLBACK on) must not hold the lock, nor take in
    /// the next operation's statements.
    pub async fn rollback_open(&mut self) {
        match self {
            Backend::Local(local) => local.rollback_open().await,
            Backend::Server(server) => server.rollback_open().await,
        }
    }

    /// Up to `want` leases for the claim `c`, after `before`'s statements (an ack's) in the
    /// same transaction. The one operation whose algorithm each backend chooses
    /// (docs/architecture.md).
    pub async fn claim<'a>(
        &mut self,
        sql: &'a Statements,
        claim: (&Claim<'_>, usize),
        now: Now<'_>,
        before: Option<Before<'_, 'a>>,
    ) -> Result<Claimed> {
        self.rollback_open().await;
        match self {
            Backend::Local(local) => local.claim(sql, claim, now, before).await,
            Backend::Server(server) => server.claim(sql, claim, now, before).await,
        }
    }

    /// The rows of each statement, read without the write lock.
    pub async fn read(&mut self, reads: &[(&str, Vec<Value>)]) -> Result<Vec<Vec<Row>>> {
        self.rollback_open().await;
        match self {
            Backend::Local(local) => local.read(reads).await,
            Backend::Server(server) => server.read(reads).await,
        }
    }

    /// A number that changes when another connection's commit becomes visible, where the
    /// database offers one (a local file); a waiting claim uses it to know when the commit
    /// it heard of can be seen.
    pub async fn data_version(&mut self) -> Result<Option<i64>> {
        match self {
            Backend::Local(local) => local.data_version().await,
            Backend::Server(_) => Ok(None),
        }
    }

    pub fn close(&mut self) {
        if let Backend::Local(local) = self {
            local.close();
        }
    }
}
