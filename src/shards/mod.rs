//! A queue over several databases (docs/queue.md, "Sharded queues"): each group lives on
//! the shard its id hashes to (`shard_of`), and each database is an unchanged queue of its
//! own (queue/database.rs). Opening a list (open.rs) gives each database its options
//! (options.rs) and checks the set it belongs to (set.rs) against each database's record
//! of it (record.rs); the router (router.rs) sends every call where it goes, merging the
//! looks of several (merge.rs); a sharded watch polls every shard's (watch.rs).

mod merge;
mod open;
mod options;
mod record;
mod router;
mod set;
mod watch;

pub(crate) use self::open::{open_each, options_of_each};
pub(crate) use self::router::Router;
pub use self::watch::Watch;

/// At most this many databases in one queue.
pub const MAX_SHARDS: usize = 256;

/// The shard (0..`shards`) that holds `group_id`: FNV-1a, 64-bit, over the id's UTF-8
/// bytes, modulo the number of shards. Stable across versions, platforms and languages:
/// docs/queue.md gives it for any program that publishes to one shard directly.
pub fn shard_of(group_id: &str, shards: usize) -> usize {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = group_id.bytes().fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    (hash % shards.max(1) as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::shard_of;

    /// The values docs/queue.md prints: a change here moves every group of every sharded queue.
    #[test]
    fn the_hash_is_fnv1a_64_of_the_ids_bytes() {
        assert_eq!(shard_of("", 1_000_003), (0xcbf2_9ce4_8422_2325u64 % 1_000_003) as usize);
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c; of "order-42" 0x7d1deb86a05662d4.
        assert_eq!(shard_of("a", 1 << 32), 0x8601_ec8c);
        assert_eq!((shard_of("order-42", 3), shard_of("order-42", 4)), (2, 0));
        let spread: Vec<usize> =
            (0..3).map(|s| (0..3000).filter(|i| shard_of(&format!("g{i}"), 3) == s).count()).collect();
        assert!(spread.iter().all(|&n| (900..=1100).contains(&n)), "{spread:?}");
    }
}
