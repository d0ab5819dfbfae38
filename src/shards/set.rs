//! Which databases make one sharded queue. Each records, in its own table, the queue's id,
//! its index and how many shards there are; `open_shards` reads them all and refuses a list
//! that does not match them: a database missing, one too many, the order changed, or a
//! database of another queue. A set whose making was cut short (no message in it yet) is
//! completed; a file not made yet is never one of its databases, since a set's making
//! makes every file before it records any. A queue over one database keeps no record, and
//! a database that has one is refused when opened alone, since a transport over it alone
//! would serve and take the groups of every shard.

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetRecord {
    pub queue_id: String,
    pub shard: usize,
    pub shards: usize,
}

/// What opening a list needs to write.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// One database, no record: nothing.
    Alone,
    /// A new set (no database has a record, none holds a message): records for all.
    New,
    /// The set of `queue_id`: records for these indexes, databases of the set left empty
    /// when its creation was cut short.
    Complete { queue_id: String, missing: Vec<usize> },
}

/// What a list of databases must be, from what each says of itself (its record, whether it
/// holds messages) and which are files not made yet (`new`: no record, no message).
/// `Error::Argument` naming the database and the mismatch.
pub fn check_set(found: &[(Option<SetRecord>, bool)], new: &[bool], databases: &[&str]) -> Result<Plan> {
    let n = databases.len();
    let name = |i: usize| match n {
        1 => format!("database {}", databases[0]),
        _ => format!("databases[{i}] ({})", databases[i]),
    };
    if n == 1 {
        return match &found[0].0 {
            Some(r) if r.shards > 1 => Err(Error::Argument(format!(
                "{} is shard {} of {} of the sharded queue {}: open it with the list of all {} of its \
                 databases (open_shards), in their order; a transport over one shard alone would take \
                 the other shards' groups",
                name(0),
                r.shard,
                r.shards,
                r.queue_id,
                r.shards
            ))),
            _ => Ok(Plan::Alone),
        };
    }
    let Some((first, record)) = found.iter().enumerate().find_map(|(i, (r, _))| r.as_ref().map(|r| (i, r))) else {
        if let Some(i) = found.iter().position(|(_, holds)| *holds) {
            return Err(Error::Argument(format!(
                "{} holds messages and belongs to no shard set: its groups were placed without the shards' \
                 hash, so a sharded queue starts on empty databases (drain this one first, or keep it a \
                 queue of its own)",
                name(i)
            )));
        }
        return Ok(Plan::New);
    };
    let queue_id = &record.queue_id;
    let mut missing = Vec::new();
    for (i, (r, holds)) in found.iter().enumerate() {
        match r {
            Some(r) if r.queue_id != *queue_id => {
                return Err(Error::Argument(format!(
                    "{} belongs to another sharded queue ({}) than {} ({queue_id}): the list mixes two queues' \
                     databases",
                    name(i),
                    r.queue_id,
                    name(first)
                )))
            }
            Some(r) if r.shards != n => {
                let (what, how) = if r.shards > n { ("missing", r.shards - n) } else { ("extra", n - r.shards) };
                return Err(Error::Argument(format!(
                    "the list has {n} databases, and {} is shard {} of {} of queue {queue_id}: {how} database{} \
                     {what}; list all {} of its databases in their order (changing the number of shards is a \
                     drain and switch to a new set: docs/queue.md, \"Sharded queues\")",
                    name(i),
                    r.shard,
                    r.shards,
                    if how == 1 { " is" } else { "s are" },
                    r.shards
                )));
            }
            Some(r) if r.shard != i => {
                return Err(Error::Argument(format!(
                    "{} is shard {} of queue {queue_id}, not shard {i}: the list is reordered; list the \
                     databases in their shard order (a group's shard is its hash, so the order is part of \
                     the queue)",
                    name(i),
                    r.shard
                )))
            }
            Some(_) => {}
            // The set's own messages may all be on the shard this path should have named,
            // so that none of the list holds one: a new file is told by itself.
            None if new[i] => {
                return Err(Error::Argument(format!(
                    "{} does not exist, and the list's other databases are shards of queue {queue_id}: a \
                     set's making makes all its files before it records any, so this is not one of them (a \
                     wrong path?); nothing was created",
                    name(i)
                )))
            }
            None if *holds => {
                return Err(Error::Argument(format!(
                    "{} holds messages and is not a shard of queue {queue_id} (it has no record of the set): \
                     another queue's database?",
                    name(i)
                )))
            }
            None => missing.push(i),
        }
    }
    // A set whose making was cut short holds no message yet: a database without a record
    // beside a set in use is a wrong path, not the rest of the set.
    if let (Some(&i), true) = (missing.first(), found.iter().any(|(r, holds)| r.is_some() && *holds)) {
        return Err(Error::Argument(format!(
            "{} is not a shard of queue {queue_id} (it has no record of the set, and the set is in use): \
             a wrong path, or another database than the shard's?",
            name(i)
        )));
    }
    Ok(Plan::Complete { queue_id: queue_id.clone(), missing })
}

/// A new queue id: 16 random bytes, hex.
pub fn new_queue_id() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::Database(format!("open_shards: could not read /dev/urandom for a queue id: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, shard: usize, shards: usize) -> Option<SetRecord> {
        Some(SetRecord { queue_id: id.into(), shard, shards })
    }

    fn refused(found: &[(Option<SetRecord>, bool)], says: &str) {
        refused_new(found, &vec![false; found.len()], says)
    }

    fn refused_new(found: &[(Option<SetRecord>, bool)], new: &[bool], says: &str) {
        let dbs: Vec<String> = (0..found.len()).map(|i| format!("q{i}.db")).collect();
        let dbs: Vec<&str> = dbs.iter().map(String::as_str).collect();
        match check_set(found, new, &dbs) {
            Err(Error::Argument(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_list_is_checked_against_the_records() {
        let ok = |found: &[(Option<SetRecord>, bool)]| {
            let dbs: Vec<&str> = vec!["x"; found.len()];
            check_set(found, &vec![false; found.len()], &dbs).unwrap()
        };
        assert_eq!(ok(&[(None, true)]), Plan::Alone);
        assert_eq!(ok(&[(None, false), (None, false)]), Plan::New);
        assert_eq!(
            ok(&[(rec("a", 0, 3), false), (rec("a", 1, 3), false), (None, false)]),
            Plan::Complete { queue_id: "a".into(), missing: vec![2] }
        );
        refused(&[(rec("a", 0, 3), true), (rec("a", 1, 3), false), (None, false)], "the set is in use");
        refused(&[(rec("a", 1, 3), false)], "database q0.db is shard 1 of 3 of the sharded queue a");
        refused(&[(None, false), (None, true)], "databases[1] (q1.db) holds messages and belongs to no shard set");
        refused(&[(rec("a", 0, 3), false), (rec("a", 1, 3), false)], "1 database is missing");
        refused(&[(rec("a", 0, 2), false), (rec("a", 1, 2), false), (None, false)], "1 database is extra");
        refused(&[(rec("a", 1, 2), false), (rec("a", 0, 2), false)], "is shard 1 of queue a, not shard 0");
        refused(&[(rec("a", 0, 2), false), (rec("b", 1, 2), false)], "belongs to another sharded queue (b)");
        refused(&[(rec("a", 0, 2), false), (None, true)], "another queue's database?");
        let new = [false, false, true];
        refused_new(&[(rec("a", 0, 3), false), (rec("a", 1, 3), false), (None, false)], &new, "q2.db) does not exist");
        let all_new = check_set(&[(None, false), (None, false)], &[true, true], &["x", "y"]).unwrap();
        assert_eq!(all_new, Plan::New);
    }
}
