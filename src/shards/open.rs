//! Opening a queue over a list of databases: the list checked, each database opened with
//! its options (options.rs), and the set's records read, checked (set.rs) and written
//! where missing (record.rs). A list of one is a queue of one database.

use std::sync::Arc;

use super::router::Router;
use super::set::{check_set, new_queue_id, Plan, SetRecord};
use super::{record, MAX_SHARDS};
use crate::backend::{Backend, FileAt};
use crate::error::{Error, Result};
use crate::metrics::Meters;
use crate::options::Options;
use crate::queue::database::Queue;
use crate::validate;

/// The options each of `databases` opens with, once the list itself is checked: of
/// 1..=`MAX_SHARDS` databases, none empty or repeated, and `options` fit for it.
pub fn options_of_each(databases: &[&str], options: &Options) -> Result<Vec<Options>> {
    let n = databases.len();
    if !(1..=MAX_SHARDS).contains(&n) {
        return Err(Error::Argument(format!("databases has {n} entries; it must have 1..{MAX_SHARDS}")));
    }
    for (i, database) in databases.iter().enumerate() {
        validate::non_empty(&if n == 1 { "database".to_owned() } else { format!("databases[{i}]") }, database)?;
        if let Some(j) = databases[..i].iter().position(|d| d == database) {
            return Err(Error::Argument(format!("databases[{i}] repeats databases[{j}] ({database})")));
        }
    }
    super::options::of_each(databases, options)
}

/// Opens a checked list, each database with its options (`options_of_each`), counting
/// into `meters`: the router over them.
pub async fn open_each(databases: &[&str], each: &[Options], meters: &Arc<Meters>) -> Result<Router> {
    let n = databases.len();
    one_file_each(databases, each)?;
    // A file not made yet is made once the list is known to fit the set: a refused open
    // creates nothing. (Alone, a database has no set to fit.)
    let not_made = |i: usize| n > 1 && matches!(Backend::file_at(databases[i], &each[i]), Some(FileAt::New { .. }));
    let mut opened: Vec<Option<Queue>> = (0..n).map(|_| None).collect();
    let plan = loop {
        for (i, queue) in opened.iter_mut().enumerate().filter(|(i, q)| q.is_none() && !not_made(*i)) {
            *queue = Some(open_one(databases, each, i, meters).await?);
        }
        let found = set_records(&opened).await.map_err(|e| e.during("open"))?;
        // A file made meanwhile is another open making this set (it makes every file
        // before it records any): read it too.
        if (0..n).all(|i| opened[i].is_some() || not_made(i)) {
            let new: Vec<bool> = opened.iter().map(Option::is_none).collect();
            break check_set(&found, &new, databases).map_err(|e| e.during("open"))?;
        }
    };
    for (i, queue) in opened.iter_mut().enumerate().filter(|(_, q)| q.is_none()) {
        *queue = Some(open_one(databases, each, i, meters).await?);
    }
    let queues: Vec<Queue> = opened.into_iter().flatten().collect();
    join_set(&queues, plan, databases).await.map_err(|e| e.during("open"))?;
    Ok(Router::new(queues))
}

/// Writes the records `plan` says a new set (or one whose making was cut short) lacks:
/// shard 0's first, so that of two openers making a set at once, both take the queue id
/// that shard 0 kept.
async fn join_set(queues: &[Queue], plan: Plan, databases: &[&str]) -> Result<()> {
    let n = queues.len();
    let (mut queue_id, missing) = match plan {
        Plan::Alone => return Ok(()),
        Plan::New => (new_queue_id()?, (0..n).collect()),
        Plan::Complete { queue_id, missing } => (queue_id, missing),
    };
    for i in missing {
        let wanted = SetRecord { queue_id: queue_id.clone(), shard: i, shards: n };
        let kept = record::write(&mut *queues[i].writer().await?, queues[i].sql(), &wanted).await?;
        if i == 0 {
            queue_id = kept.queue_id.clone();
        } else if kept != (SetRecord { queue_id: queue_id.clone(), ..wanted }) {
            return Err(Error::Argument(format!(
                "databases[{i}] ({}) was made shard {} of {} of queue {} by another open meanwhile",
                databases[i], kept.shard, kept.shards, kept.queue_id
            )));
        }
    }
    Ok(())
}

/// Two spellings of one file are one database: refused before anything is opened or made.
fn one_file_each(databases: &[&str], each: &[Options]) -> Result<()> {
    let files: Vec<_> = databases.iter().zip(each).map(|(d, o)| Backend::file_at(d, o)).collect();
    for (i, file) in files.iter().enumerate().filter(|(_, f)| f.is_some()) {
        if let Some(j) = files[..i].iter().position(|f| f == file) {
            return Err(Error::Argument(format!(
                "databases[{i}] ({}) is the file databases[{j}] ({}) is",
                databases[i], databases[j]
            )));
        }
    }
    Ok(())
}

/// Opens `databases[i]` with its options; an error names it when there are several.
async fn open_one(databases: &[&str], each: &[Options], i: usize, meters: &Arc<Meters>) -> Result<Queue> {
    let queue = Queue::open(databases[i], &each[i], Arc::clone(meters)).await;
    queue.map_err(|e| match databases.len() {
        1 => e,
        _ => e.during(&format!("databases[{i}] ({})", databases[i])),
    })
}

/// Each database's record of its set and whether it holds messages; a database not opened
/// (a file not made yet) has neither.
async fn set_records(opened: &[Option<Queue>]) -> Result<Vec<(Option<SetRecord>, bool)>> {
    let mut found = Vec::with_capacity(opened.len());
    for queue in opened {
        found.push(match queue {
            Some(queue) => record::read(&mut *queue.connection().await?, queue.sql()).await?,
            None => (None, false),
        });
    }
    Ok(found)
}
