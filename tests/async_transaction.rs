//! The async face of an application's transaction (`AsyncTransport::begin`, `transaction`):
//! the shared contract runs the blocking face on every backend; here, what only the async
//! one does: a transaction dropped after its query, where a drop cannot wait, is rolled
//! back on the runtime, so the lock is free for the next writer at once.

use harel_transport_testkit as common;

use std::time::{Duration, Instant};

use common::{event, temp_db};
use harel_transport::{AsyncTransport, Error, Message, Options, Value};

fn msg<'a>(group_id: &'a str, event_json: &'a str) -> Message<'a> {
    Message { group_id, event_json, priority: 0, routing_key: None, headers: None }
}

async fn count(t: &AsyncTransport) -> i64 {
    let (rows, _) = t.transaction(async |tx| tx.query("SELECT count(*) FROM orders", []).await).await.unwrap();
    match rows[0][0] {
        Value::Integer(n) => n,
        ref other => panic!("count(*) is {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_transaction_commits_together_and_a_dropped_one_keeps_nothing() {
    let (_dir, path) = temp_db();
    let t = AsyncTransport::open(&path, &Options::new()).await.unwrap();
    let other = AsyncTransport::open(&path, &Options::new()).await.unwrap();
    t.transaction(async |tx| tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)", [])).await.unwrap();
    let e = event(1);
    let (seen, published) = t
        .transaction(async |tx| {
            tx.execute("INSERT INTO orders (id) VALUES (?1)", [Value::Integer(1)])?;
            tx.publish(msg("g", &e))?;
            tx.query("SELECT id FROM orders", []).await
        })
        .await
        .unwrap();
    assert_eq!((seen, published.len()), (vec![vec![Value::Integer(1)]], 1));
    assert_eq!(other.claim("w", 30.0, 0, &[]).await.unwrap().unwrap().seq, published[0].seq);

    let failed: Result<((), _), Error> = t
        .transaction(async |tx| {
            tx.execute("INSERT INTO orders (id) VALUES (2)", [])?;
            tx.publish(msg("h", &e))?;
            tx.query("SELECT 1", []).await?;
            Err(Error::Argument("the application changed its mind".into()))
        })
        .await;
    assert!(failed.is_err());
    assert_eq!(count(&t).await, 1, "the failed transaction's row is gone");

    {
        let mut tx = t.begin();
        tx.execute("INSERT INTO orders (id) VALUES (3)", []).unwrap();
        tx.publish(msg("h", &e)).unwrap();
        tx.query("SELECT 1", []).await.expect("holds the lock from here");
    }
    // Rolled back on the runtime: another connection writes at once, not after a timeout.
    let started = Instant::now();
    other.publish("after", &event(2), 0, None).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "the dropped transaction held the lock");
    assert_eq!(count(&t).await, 1, "nothing of the dropped transaction");
    let lease = other.claim("w", 30.0, 0, &[]).await.unwrap().unwrap();
    assert_eq!(lease.group_id, "after", "the dropped transaction's message is not there");
}
