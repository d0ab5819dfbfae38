//! A chain (chain.rs) as one Hrana batch (pipeline.rs): `BEGIN IMMEDIATE`, the
//! operation's statements, each run only if the one before it succeeded, `COMMIT` if the
//! last one did, and `ROLLBACK` unless the COMMIT succeeded. The server runs the batch
//! without waiting for the client, so its write lock is held for the statements alone,
//! with nothing of the network inside it. A statement that fails stops the chain, and
//! nothing of it is kept (the ROLLBACK, and in any case the stream's close).

use libsql_hrana::proto::{self, Batch, BatchCond, BatchResult, BatchStep, Stmt, StmtResult};

use crate::chain::{lease_lost, Chain, Done, Row};
use crate::error::{Error, Result};
use crate::sql::LEASE_LOST;

/// What the server made of a chain.
#[derive(Debug)]
pub enum Outcome {
    /// Committed (or, by a batch that keeps its transaction open, all run): each
    /// statement's result, in order.
    Committed(Vec<Done>),
    /// `BEGIN IMMEDIATE` failed: nothing ran.
    NotBegun(proto::Error),
    /// A statement or the COMMIT failed, or a guard found its lease lost (`Error::LeaseLost`):
    /// nothing was kept.
    Failed(Failed),
}

#[derive(Debug)]
pub enum Failed {
    Server(proto::Error),
    Lost(Error),
}

/// How a chain's batch begins and ends: an operation's both begins and commits; the
/// requests of an application's open transaction (open_transaction.rs) begin it, go on
/// with it, or commit it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub begin: bool,
    pub commit: bool,
}

/// An operation: BEGIN IMMEDIATE, its statements, COMMIT.
const OPERATION: Shape = Shape { begin: true, commit: true };

/// The batch of an operation (`OPERATION`).
pub fn batch(chain: &Chain) -> Result<Batch> {
    shaped(chain, OPERATION)
}

/// The batch: BEGIN IMMEDIATE (when `shape.begin`) first, the statements in order, each
/// only if the step before it succeeded, COMMIT (when `shape.commit`) if the last one
/// did, and ROLLBACK unless the last step before it succeeded.
pub fn shaped(chain: &Chain, shape: Shape) -> Result<Batch> {
    let mut steps = Vec::with_capacity(chain.links().len() + 3);
    let after = |steps: &Vec<BatchStep>| steps.len().checked_sub(1).map(|step| BatchCond::Ok { step: step as u32 });
    if shape.begin {
        steps.push(BatchStep { condition: None, stmt: Stmt::new("BEGIN IMMEDIATE", false) });
    }
    for link in chain.links() {
        let mut stmt = Stmt::new(link.sql.as_ref(), link.rows);
        for param in &link.params {
            stmt.bind(value(param.clone())?);
        }
        steps.push(BatchStep { condition: after(&steps), stmt });
    }
    if shape.commit {
        steps.push(BatchStep { condition: after(&steps), stmt: Stmt::new("COMMIT", false) });
    }
    let done = after(&steps).ok_or_else(|| Error::Database("an empty batch was about to be sent".into()))?;
    steps.push(BatchStep {
        condition: Some(BatchCond::Not { cond: Box::new(done) }),
        stmt: Stmt::new("ROLLBACK", false),
    });
    Ok(Batch { steps, replication_index: None })
}

/// Reads the server's result of an operation's batch (`OPERATION`).
pub fn outcome(chain: &Chain, result: BatchResult) -> Outcome {
    outcome_of(chain, OPERATION, result)
}

/// Reads the server's result of `chain`'s batch of `shape`: `Committed` when its last step
/// before the ROLLBACK succeeded (the COMMIT, or the last statement of a batch that keeps
/// the transaction open).
pub fn outcome_of(chain: &Chain, shape: Shape, result: BatchResult) -> Outcome {
    let BatchResult { mut step_results, step_errors, .. } = result;
    let links = chain.links();
    let n = links.len();
    let first = usize::from(shape.begin);
    let last = (first + n + usize::from(shape.commit)).saturating_sub(1);
    if step_results.get(last).is_some_and(Option::is_some) {
        let results: Option<Vec<Done>> = step_results.drain(first..first + n).map(|r| r.map(done)).collect();
        if let Some(results) = results {
            return Outcome::Committed(results);
        }
    }
    let first_error = step_errors.into_iter().take(last + 1).enumerate().find_map(|(step, e)| Some((step, e?)));
    match first_error {
        Some((0, error)) if shape.begin => Outcome::NotBegun(error),
        Some((step, error)) => {
            let lost = step.checked_sub(first).and_then(|i| links.get(i)).and_then(|link| link.lost.as_ref());
            match lost {
                Some(lease) if error.message.contains(LEASE_LOST) => Outcome::Failed(Failed::Lost(lease_lost(lease))),
                _ => Outcome::Failed(Failed::Server(error)),
            }
        }
        None => Outcome::Failed(Failed::Server(proto::Error {
            message: "the libSQL server ran the batch without a COMMIT and without an error".into(),
            code: "UNEXPECTED".into(),
        })),
    }
}

/// A statement's result as the queue reads it.
pub fn done(result: StmtResult) -> Done {
    let rows = result.rows.into_iter().map(|row| row.values.into_iter().map(from_server).collect::<Row>()).collect();
    Done { rows, changed: result.affected_row_count }
}

fn from_server(v: proto::Value) -> libsql::Value {
    match v {
        proto::Value::Null | proto::Value::None => libsql::Value::Null,
        proto::Value::Integer { value } => libsql::Value::Integer(value),
        proto::Value::Float { value } => libsql::Value::Real(value),
        proto::Value::Text { value } => libsql::Value::Text(value.to_string()),
        proto::Value::Blob { value } => libsql::Value::Blob(value.to_vec()),
    }
}

/// A parameter as Hrana sends it. JSON has no infinities: a float that is not finite is
/// refused here (serde would send it as null).
pub fn value(v: libsql::Value) -> Result<proto::Value> {
    Ok(match v {
        libsql::Value::Null => proto::Value::Null,
        libsql::Value::Integer(value) => proto::Value::Integer { value },
        libsql::Value::Real(value) if value.is_finite() => proto::Value::Float { value },
        libsql::Value::Real(value) => {
            return Err(Error::Argument(format!(
                "a time of {value} s cannot be stored on a libSQL server (now + visibility or now + delay \
                 must be a finite number)"
            )))
        }
        libsql::Value::Text(s) => proto::Value::Text { value: s.into() },
        libsql::Value::Blob(b) => proto::Value::Blob { value: b.into() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headers::Headers;
    use crate::types::Lease;

    fn ok(rows: usize) -> Option<StmtResult> {
        Some(StmtResult {
            cols: vec![],
            rows: vec![proto::Row { values: vec![proto::Value::Null] }; rows],
            affected_row_count: rows as u64,
            last_insert_rowid: None,
            replication_index: None,
            rows_read: 0,
            rows_written: 0,
            query_duration_ms: 0.0,
        })
    }

    fn error(message: &str) -> Option<proto::Error> {
        Some(proto::Error { message: message.into(), code: "SQLITE_ERROR".into() })
    }

    fn result(step_results: Vec<Option<StmtResult>>, step_errors: Vec<Option<proto::Error>>) -> BatchResult {
        BatchResult { step_results, step_errors, replication_index: None }
    }

    /// Two statements and a guard: steps BEGIN, 0, guard, 1, COMMIT, ROLLBACK.
    static LEASE: Lease = Lease {
        seq: 7,
        group_id: String::new(),
        event: String::new(),
        worker_id: String::new(),
        lock_expiry: 0.0,
        attempts: 1,
        headers: Headers::none(),
    };

    fn chain() -> Chain<'static> {
        let mut chain = Chain::new();
        chain.push("DELETE FROM t WHERE id = ?1", vec![1.into()]);
        chain.guard(&LEASE);
        chain.push("UPDATE u SET n = ?1", vec![2.5.into()]);
        chain
    }

    #[test]
    fn each_step_runs_only_after_the_one_before_and_rollback_unless_committed() {
        let batch = batch(&chain()).unwrap();
        let sql: Vec<_> = batch.steps.iter().map(|s| s.stmt.sql.clone().unwrap()).collect();
        assert_eq!(sql[0], "BEGIN IMMEDIATE");
        assert_eq!(&sql[4..], ["COMMIT", "ROLLBACK"]);
        let conditions: Vec<String> =
            batch.steps.iter().map(|s| serde_json::to_string(&s.condition).unwrap()).collect();
        assert_eq!(conditions[0], "null");
        for (step, condition) in conditions.iter().enumerate().take(5).skip(1) {
            assert_eq!(*condition, format!(r#"{{"type":"ok","step":{}}}"#, step - 1));
        }
        assert_eq!(conditions[5], r#"{"type":"not","cond":{"type":"ok","step":4}}"#);
    }

    #[test]
    fn a_committed_chain_gives_each_statements_result() {
        let outcome = outcome(&chain(), result(vec![ok(0), ok(1), ok(0), ok(3), ok(0), None], vec![None; 6]));
        let Outcome::Committed(results) = outcome else { panic!("{outcome:?}") };
        assert_eq!(results.iter().map(|r| r.rows.len()).collect::<Vec<_>>(), [1, 0, 3]);
        assert_eq!(results[2].changed, 3);
    }

    #[test]
    fn a_failed_begin_ran_nothing() {
        let outcome = outcome(
            &chain(),
            result(vec![None; 5].into_iter().chain([ok(0)]).collect(), {
                let mut errors = vec![None; 6];
                errors[0] = error("database is locked");
                errors
            }),
        );
        assert!(matches!(outcome, Outcome::NotBegun(e) if e.message == "database is locked"));
    }

    #[test]
    fn a_guard_that_fires_is_the_lost_lease_and_another_failure_is_the_servers() {
        let failing_at = |step: usize, message: &str| {
            let mut results = vec![ok(0); step];
            results.extend([None, None, None, None, None, ok(0)].into_iter().take(6 - step));
            let mut errors = vec![None; 6];
            errors[step] = error(message);
            outcome(&chain(), result(results, errors))
        };
        let guard_message = format!("bad JSON path: '{LEASE_LOST}'");
        assert!(
            matches!(failing_at(2, &guard_message), Outcome::Failed(Failed::Lost(Error::LeaseLost(m))) if m.starts_with("message 7 "))
        );
        // The guard's step failing for another reason, or another step with the guard's text.
        assert!(
            matches!(failing_at(2, "interrupted"), Outcome::Failed(Failed::Server(e)) if e.message == "interrupted")
        );
        assert!(matches!(failing_at(1, &guard_message), Outcome::Failed(Failed::Server(_))));
        assert!(
            matches!(failing_at(4, "disk I/O error"), Outcome::Failed(Failed::Server(e)) if e.message == "disk I/O error")
        );
    }

    #[test]
    fn a_batch_with_neither_commit_nor_error_is_a_failure() {
        let outcome = outcome(&chain(), result(vec![ok(0), ok(1), None, None, None, ok(0)], vec![None; 6]));
        assert!(matches!(outcome, Outcome::Failed(Failed::Server(e)) if e.code == "UNEXPECTED"));
    }

    #[test]
    fn only_finite_floats_are_sent() {
        for bad in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            let mut chain = Chain::new();
            chain.push("SELECT ?1", vec![bad.into()]);
            assert!(matches!(batch(&chain), Err(Error::Argument(_))));
        }
        let mut chain = Chain::new();
        chain.push("SELECT ?1, ?2, ?3", vec![libsql::Value::Null, "x".into(), vec![0u8].into()]);
        assert_eq!(batch(&chain).unwrap().steps[1].stmt.args.len(), 3);
    }
}
