//! Each shard's options: the list's own, with its shard's primary when the shards are
//! embedded replicas (`Options::sync_urls`).

use crate::error::{Error, Result};
use crate::options::Options;

/// The options `databases[i]` opens with, checked against the list.
pub(crate) fn of_each(databases: &[&str], options: &Options) -> Result<Vec<Options>> {
    let n = databases.len();
    if options.sync_urls.is_empty() {
        if n > 1 && options.sync_url.is_some() {
            return Err(Error::Argument(format!(
                "sync_url names one primary, and a list of {n} databases has one per shard: give each shard's \
                 primary, in the list's order, with sync_urls"
            )));
        }
        return Ok(vec![options.clone(); n]);
    }
    if options.sync_url.is_some() {
        return Err(Error::Argument(
            "sync_url and sync_urls are both set: give a queue's primaries one way, sync_urls for a list".into(),
        ));
    }
    let urls = options.sync_urls.len();
    if urls != n {
        return Err(Error::Argument(format!(
            "sync_urls has {urls} URLs and databases {n} paths: each shard, an embedded replica, needs its primary"
        )));
    }
    let each = |url: &String| {
        let mut o = options.clone();
        o.sync_urls = Vec::new();
        o.sync_url = Some(url.clone());
        o
    };
    Ok(options.sync_urls.iter().map(each).collect())
}
