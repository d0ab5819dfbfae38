use harel_transport::{Delivery, Message, Options, Synchronous, Transport, Value};
use std::time::Instant;
#[test]
fn probe() {
    for sync in [Synchronous::Full, Synchronous::Normal] {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    let t = Transport::open(path.to_str().unwrap(), Options::new().synchronous(sync)).unwrap();
    t.transaction(|tx| tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)", [])).unwrap();
    let ev = r#"{"kind":"tick","id":"e","data":{"n":1}}"#;
    let n = 1000;
    let time = |name: &str, f: &mut dyn FnMut(usize)| { let s = Instant::now(); for i in 0..n { f(i) } println!("{sync:?} {name}: {:.1} us", s.elapsed().as_secs_f64()*1e6/n as f64); };
    time("publish", &mut |i| t.publish(&format!("a{i}"), ev, 0, None).unwrap());
    time("publish_with", &mut |i| { t.publish_with(Message{group_id:&format!("b{i}"),event_json:ev,priority:0,routing_key:None}, Delivery::default()).unwrap(); });
    time("tx insert", &mut |i| { t.transaction(|tx| tx.execute("INSERT INTO orders (id, total) VALUES (?1, ?2)", [Value::Integer(i as i64), Value::Real(1.0)])).unwrap(); });
    time("tx publish", &mut |i| { t.transaction(|tx| tx.publish(Message{group_id:&format!("c{i}"),event_json:ev,priority:0,routing_key:None})).unwrap(); });
    time("tx insert+publish", &mut |i| { t.transaction(|tx| { tx.execute("INSERT INTO orders (id, total) VALUES (?1, ?2)", [Value::Integer(100000+i as i64), Value::Real(1.0)])?; tx.publish(Message{group_id:&format!("d{i}"),event_json:ev,priority:0,routing_key:None}) }).unwrap(); });
    }
}
