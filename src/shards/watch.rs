//! A watch of a sharded queue: one descriptor for the event loop, readable when any
//! shard's watch is (an epoll set of theirs); its rearm looks only at the shards whose
//! watch is readable, since the others found nothing at their last look and heard nothing since.

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

use crate::error::{Error, Result};
use crate::waiting;

/// A descriptor (`AsRawFd`) that becomes readable when a claim with its filter may find
/// work (see `AsyncTransport::watch` and docs/abi.md, "Watching for work").
pub struct Watch {
    parts: Vec<waiting::Watch>,
    /// The epoll set of the parts' descriptors, when there is more than one.
    all: Option<OwnedFd>,
}

impl Watch {
    pub(crate) fn of(parts: Vec<waiting::Watch>) -> Result<Watch> {
        let all = match parts.len() {
            1 => None,
            _ => {
                let members: Vec<_> = parts.iter().map(|p| p.as_fd()).collect();
                Some(waiting::epoll_of(&members).map_err(|e| Error::Database(format!("epoll failed: {e}")))?)
            }
        };
        Ok(Watch { parts, all })
    }

    pub fn min_priority(&self) -> i32 {
        self.parts[0].min_priority()
    }

    pub fn routing_keys(&self) -> Vec<&str> {
        self.parts[0].routing_keys()
    }

    /// Each shard's watch, and whether it is readable now.
    pub(crate) fn parts(&self) -> impl Iterator<Item = (&waiting::Watch, bool)> {
        let single = self.parts.len() == 1;
        self.parts.iter().map(move |p| (p, single || waiting::is_readable(p.as_fd())))
    }
}

impl AsRawFd for Watch {
    /// The descriptor to poll for readability; it lives as long as the watch.
    fn as_raw_fd(&self) -> RawFd {
        self.all.as_ref().map_or_else(|| self.parts[0].as_raw_fd(), AsRawFd::as_raw_fd)
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("fd", &self.as_raw_fd())
            .field("shards", &self.parts.len())
            .field("min_priority", &self.min_priority())
            .field("routing_keys", &self.routing_keys())
            .finish_non_exhaustive()
    }
}
