//! The history harness's Rust client (tests/history, `make test-history`): random
//! operations on one queue file through the Rust API, each call logged as a JSON line when
//! invoked and again when it returns (tests/history/hist/record.go has the format), until
//! its time is up; then it acks the leases it holds and exits. The harness runs several,
//! beside Go clients and harel 0.9 workers, kills some with SIGKILL and checks the history.
//!
//!     history_client -db queue.db -log rust1.0.jsonl -id rust1.0 -seconds 30 [-seed N] [-groups 10]

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::thread::sleep;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harel_transport::{Delivery, Error, Lease, Message, Options, Transport, Value, Wait};
use serde_json::{json, Value as Json};

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64)
}

fn now_s() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// xorshift64*: the client's dice (no crate for it).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Log {
    file: File,
    client: String,
    n: u64,
}

impl Log {
    fn write(&mut self, mut rec: Json) {
        rec["client"] = json!(self.client);
        rec["lang"] = json!("rust");
        let mut line = serde_json::to_vec(&rec).expect("a record is JSON");
        line.push(b'\n');
        self.file.write_all(&line).expect("write the log");
    }
    fn invoke(&mut self, op: &str, mut args: Json) -> u64 {
        let i = self.n;
        self.n += 1;
        args["i"] = json!(i);
        args["type"] = json!("invoke");
        args["op"] = json!(op);
        args["at"] = json!(now_ns());
        self.write(args);
        i
    }
    fn complete<T>(&mut self, i: u64, result: &harel_transport::Result<T>, mut res: Json) {
        if res.is_null() {
            res = json!({});
        }
        res["i"] = json!(i);
        res["at"] = json!(now_ns());
        match result {
            Ok(_) => res["type"] = json!("ok"),
            Err(e) => {
                let (kind, status) = sort(e);
                res["type"] = json!(kind);
                res["status"] = json!(status);
                res["err"] = json!(e.message());
            }
        }
        self.write(res);
    }
}

/// The status of an error, and whether it is a definite failure (nothing changed) or an
/// unknown outcome.
fn sort(e: &Error) -> (&'static str, &'static str) {
    match e {
        Error::Argument(_) => ("fail", "HAREL_ERR_ARGUMENT"),
        Error::Database(_) => ("fail", "HAREL_ERR_DATABASE"),
        Error::Busy(_) => ("fail", "HAREL_ERR_BUSY"),
        Error::LeaseLost(_) => ("fail", "HAREL_ERR_LEASE_LOST"),
        Error::Interrupted(_) => ("fail", "HAREL_ERR_INTERRUPTED"),
        Error::Connect(_) => ("info", "HAREL_ERR_CONNECT"),
        _ => ("info", "HAREL_UNKNOWN"),
    }
}

fn event_id(event: &str) -> String {
    serde_json::from_str::<Json>(event).ok().and_then(|v| v["id"].as_str().map(str::to_owned)).unwrap_or_default()
}

fn event(id: &str) -> String {
    json!({"kind": "h", "id": id, "data": {}}).to_string()
}

fn lease_ref(l: &Lease) -> Json {
    json!({"s": l.seq, "g": l.group_id, "w": l.worker_id, "e": event_id(&l.event)})
}

fn got(ls: &[Lease]) -> Json {
    Json::Array(
        ls.iter()
            .map(|l| {
                json!({"s": l.seq, "g": l.group_id, "e": event_id(&l.event), "w": l.worker_id,
                       "exp": l.lock_expiry, "att": l.attempts})
            })
            .collect(),
    )
}

fn outcomes(acked: &[harel_transport::Result<()>]) -> Json {
    Json::Array(acked.iter().map(|a| json!(a.as_ref().map_or_else(|e| sort(e).1, |_| "ok"))).collect())
}

struct Client {
    t: Transport,
    log: Log,
    id: String,
    rng: Rng,
    groups: u64,
    start: f64,
    held: Vec<Lease>,
    n: u64,
    keys: u64,
    txs: u64,
}

impl Client {
    fn group(&mut self) -> String {
        format!("g{}", self.rng.below(self.groups))
    }
    fn event_id(&mut self) -> String {
        self.n += 1;
        format!("{}-e{}", self.id, self.n)
    }
    fn visibility(&mut self) -> f64 {
        [0.25, 0.5, 1.0, 2.0][self.rng.below(4) as usize]
    }

    fn step(&mut self) {
        let r = self.rng.unit();
        let held = self.held.len();
        if (held == 0 && r < 0.35) || (held > 0 && r < 0.15) {
            self.publish_some();
        } else if held == 0 || (held < 4 && r < 0.4) {
            self.claim_some();
        } else {
            self.finish_some();
        }
    }

    fn publish_some(&mut self) {
        let r = self.rng.unit();
        if r < 0.3 {
            let (g, e) = (self.group(), self.event_id());
            let i = self.log.invoke("publish", json!({"msgs": [{"g": g, "e": e}]}));
            let res = self.t.publish(&g, &event(&e), 0, None);
            self.log.complete(i, &res, Json::Null);
        } else if r < 0.45 {
            self.keys += 1;
            let key = format!("{}-k{}", self.id, self.keys);
            let g = self.group();
            for _ in 0..1 + self.rng.below(2) {
                self.publish_keyed(&g, &key);
            }
        } else if r < 0.6 {
            let w = (now_s() - self.start).max(0.0) as u64;
            let key = format!("shared-{}", w * 4 + self.rng.below(8));
            let g = format!("g{}", (w * 4 + self.rng.below(8)) % self.groups);
            self.publish_keyed(&g, &key);
        } else if r < 0.75 {
            self.publish_many();
        } else {
            self.transaction();
        }
    }

    fn publish_keyed(&mut self, g: &str, key: &str) {
        let e = self.event_id();
        let i = self.log.invoke("publish", json!({"msgs": [{"g": g, "e": e, "k": key}]}));
        let text = event(&e);
        let message = Message { group_id: g, event_json: &text, priority: 0, routing_key: None, headers: None };
        let res = self.t.publish_with(message, Delivery { key: Some(key), ..Delivery::default() });
        let out = match &res {
            Ok(p) => json!({"pub": [{"s": p.seq, "dup": p.duplicate}]}),
            Err(_) => Json::Null,
        };
        self.log.complete(i, &res, out);
    }

    fn publish_many(&mut self) {
        let n = 2 + self.rng.below(3) as usize;
        let keyed = self.rng.below(3) == 0;
        let mut msgs: Vec<(String, String, Option<String>)> = Vec::new();
        for j in 0..n {
            let (g, e) = (self.group(), self.event_id());
            let key = if !keyed {
                None
            } else if j > 0 && self.rng.below(3) == 0 {
                msgs[j - 1].2.clone()
            } else {
                self.keys += 1;
                Some(format!("{}-k{}", self.id, self.keys))
            };
            msgs.push((g, e, key));
        }
        let listed: Vec<Json> = msgs
            .iter()
            .map(|(g, e, k)| match k {
                Some(k) => json!({"g": g, "e": e, "k": k}),
                None => json!({"g": g, "e": e}),
            })
            .collect();
        let i = self.log.invoke("publish_many", json!({ "msgs": listed }));
        let texts: Vec<String> = msgs.iter().map(|(_, e, _)| event(e)).collect();
        let batch: Vec<Message<'_>> = msgs
            .iter()
            .zip(&texts)
            .map(|((g, _, _), text)| Message { group_id: g, event_json: text, priority: 0, routing_key: None, headers: None })
            .collect();
        if !keyed {
            let res = self.t.publish_many(&batch);
            self.log.complete(i, &res, Json::Null);
            return;
        }
        let items: Vec<(Message<'_>, Delivery<'_>)> = batch
            .iter()
            .zip(&msgs)
            .map(|(m, (_, _, k))| (*m, Delivery { key: k.as_deref(), ..Delivery::default() }))
            .collect();
        let res = self.t.publish_many_with(&items);
        let out = match &res {
            Ok(ps) => json!({"pub": ps.iter().map(|p| json!({"s": p.seq, "dup": p.duplicate})).collect::<Vec<_>>()}),
            Err(_) => Json::Null,
        };
        self.log.complete(i, &res, out);
    }

    fn transaction(&mut self) {
        self.txs += 1;
        let tx_id = format!("{}-t{}", self.id, self.txs);
        let r = self.rng.unit();
        let mode = if r < 0.15 {
            "rollback"
        } else if r < 0.3 {
            "fail"
        } else {
            "commit"
        };
        let n = 1 + self.rng.below(3);
        let msgs: Vec<(String, String)> = (0..n).map(|_| (self.group(), self.event_id())).collect();
        let listed: Vec<Json> = msgs.iter().map(|(g, e)| json!({"g": g, "e": e})).collect();
        let i = self.log.invoke("tx", json!({"msgs": listed, "tx": tx_id, "txmode": mode}));
        let read_first = self.rng.below(3) == 0;
        let mut tx = self.t.begin();
        let steps = (|| {
            if read_first {
                tx.query("SELECT count(*) FROM hist_app", [])?;
            }
            tx.execute(
                "INSERT INTO hist_app (id, client) VALUES (?1, ?2)",
                [Value::Text(tx_id.clone()), Value::Text(self.id.clone())],
            )?;
            for (g, e) in &msgs {
                let text = event(e);
                tx.publish(Message { group_id: g, event_json: &text, priority: 0, routing_key: None, headers: None })?;
            }
            if mode == "fail" {
                tx.execute("INSERT INTO hist_app (id, client) VALUES ('seed', ?1)", [Value::Text(self.id.clone())])?;
            }
            Ok(())
        })();
        if let Err(e) = steps {
            drop(tx);
            self.log.complete::<()>(i, &Err(e), Json::Null);
            return;
        }
        if mode == "rollback" {
            tx.rollback();
            self.log.complete(i, &Ok(()), Json::Null);
            return;
        }
        let res = tx.commit();
        let out = match &res {
            Ok(ps) => json!({"pub": ps.iter().map(|p| json!({"s": p.seq, "dup": p.duplicate})).collect::<Vec<_>>()}),
            Err(_) => Json::Null,
        };
        self.log.complete(i, &res, out);
    }

    fn claim_some(&mut self) {
        let vis = self.visibility();
        let id = self.id.clone();
        let r = self.rng.unit();
        let max = if r < 0.6 { 1 } else { 1 + self.rng.below(4) as usize };
        let i = self.log.invoke("claim", json!({"worker": id, "vis": vis, "max": max}));
        let res = if r < 0.3 {
            self.t.claim(&id, vis, 0, &[]).map(|l| l.into_iter().collect::<Vec<_>>())
        } else if r < 0.6 {
            let wait = Wait::up_to(Duration::from_millis(20 + self.rng.below(180)));
            self.t.claim_wait(&id, vis, 0, &[], &wait).map(|l| l.into_iter().collect())
        } else {
            let wait = Wait::up_to(Duration::from_millis(self.rng.below(60)));
            self.t.claim_many(&id, vis, 0, &[], max, &wait)
        };
        self.complete_claim(i, res);
    }

    fn complete_claim(&mut self, i: u64, res: harel_transport::Result<Vec<Lease>>) {
        let out = match &res {
            Ok(ls) => json!({ "got": got(ls) }),
            Err(_) => Json::Null,
        };
        self.log.complete(i, &res, out);
        if let Ok(ls) = res {
            self.held.extend(ls);
        }
    }

    fn finish_some(&mut self) {
        let j = self.rng.below(self.held.len() as u64) as usize;
        let r = self.rng.unit();
        let id = self.id.clone();
        if r < 0.33 {
            let l = self.held.remove(j);
            self.ack(&l, false);
        } else if r < 0.43 {
            let ls = std::mem::take(&mut self.held);
            let refs: Vec<Json> = ls.iter().map(lease_ref).collect();
            let i = self.log.invoke("ack_many", json!({ "leases": refs }));
            let res = self.t.ack_many(&ls);
            let out = match &res {
                Ok(acked) => json!({ "outcomes": outcomes(acked) }),
                Err(_) => Json::Null,
            };
            self.log.complete(i, &res, out);
        } else if r < 0.53 {
            let l = self.held.remove(j);
            let vis = self.visibility();
            let i = self.log.invoke("ack_and_claim", json!({"leases": [lease_ref(&l)], "worker": id, "vis": vis}));
            let res = self.t.ack_and_claim(&l, &id, vis, 0, &[]).map(|n| n.into_iter().collect());
            self.complete_claim(i, res);
        } else if r < 0.58 {
            let ls = std::mem::take(&mut self.held);
            let refs: Vec<Json> = ls.iter().map(lease_ref).collect();
            let vis = self.visibility();
            let max = 1 + self.rng.below(3) as usize;
            let i =
                self.log.invoke("ack_and_claim_many", json!({"leases": refs, "worker": id, "vis": vis, "max": max}));
            let res = self.t.ack_and_claim_many(&ls, &id, vis, 0, &[], max);
            let out = match &res {
                Ok((acked, next)) => json!({"outcomes": outcomes(acked), "got": got(next)}),
                Err(_) => Json::Null,
            };
            self.log.complete(i, &res, out);
            if let Ok((_, next)) = res {
                self.held.extend(next);
            }
        } else if r < 0.68 {
            let l = self.held.remove(j);
            let i = self.log.invoke("nack", json!({ "leases": [lease_ref(&l)] }));
            let res = self.t.nack(&l, 0.0);
            self.log.complete(i, &res, Json::Null);
        } else if r < 0.76 {
            let l = self.held.remove(j);
            let delay = (50 + self.rng.below(250)) as f64 / 1000.0;
            let i = self.log.invoke("nack", json!({"leases": [lease_ref(&l)], "delay": delay}));
            let res = self.t.nack(&l, delay);
            self.log.complete(i, &res, Json::Null);
        } else if r < 0.86 {
            let vis = self.visibility();
            let i = self.log.invoke("extend", json!({"leases": [lease_ref(&self.held[j])], "vis": vis}));
            let res = self.t.extend(&mut self.held[j], vis);
            let out = match &res {
                Ok(()) => json!({ "exp": self.held[j].lock_expiry }),
                Err(_) => Json::Null,
            };
            self.log.complete(i, &res, out);
            if res.is_err() {
                self.held.remove(j);
            }
        } else if r < 0.89 {
            let l = self.held.remove(j);
            let i = self.log.invoke("dead_letter", json!({ "leases": [lease_ref(&l)] }));
            let res = self.t.dead_letter(&l, "history: dead-lettered on purpose");
            self.log.complete(i, &res, Json::Null);
        } else if r < 0.95 {
            // The stale ack: past the lease's end (the checker decides from the history
            // whether it had to be refused).
            let l = self.held.remove(j);
            let left = l.lock_expiry - now_s();
            if left < 0.4 {
                sleep(Duration::from_secs_f64(left.max(0.0) + (30 + self.rng.below(120)) as f64 / 1000.0));
            }
            self.ack(&l, left < 0.4);
        } else {
            self.held.remove(j); // abandoned: it lapses
        }
    }

    fn ack(&mut self, l: &Lease, stale: bool) {
        let args = match stale {
            true => json!({"leases": [lease_ref(l)], "stale": true}),
            false => json!({ "leases": [lease_ref(l)] }),
        };
        let i = self.log.invoke("ack", args);
        let res = self.t.ack(l);
        self.log.complete(i, &res, Json::Null);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let (Some(db), Some(log_path), Some(id)) = (arg("-db"), arg("-log"), arg("-id")) else {
        return Err("usage: history_client -db FILE -log FILE -id ID [-seconds S] [-seed N] [-groups N]".into());
    };
    let seconds: f64 = arg("-seconds").map_or(Ok(10.0), |s| s.parse())?;
    let mut seed: u64 = arg("-seed").map_or(Ok(0), |s| s.parse::<i64>().map(|v| v as u64))?;
    if seed == 0 {
        seed = now_ns() as u64 | 1;
    }
    let groups: u64 = arg("-groups").map_or(Ok(10), |s| s.parse())?;
    let start: i64 = arg("-start").map_or(Ok(0), |s| s.parse())?;
    let mut options = Options::new();
    options.busy_timeout(10.0)?;
    let t = Transport::open(&db, &options)?;
    let file = OpenOptions::new().create(true).append(true).open(&log_path)?;
    let mut c = Client {
        t,
        log: Log { file, client: id.clone(), n: 0 },
        id,
        rng: Rng(seed),
        groups,
        start: if start == 0 { now_s() } else { start as f64 / 1e9 },
        held: Vec::new(),
        n: 0,
        keys: 0,
        txs: 0,
    };
    let deadline = now_s() + seconds;
    while now_s() < deadline {
        c.step();
        sleep(Duration::from_micros(c.rng.below(3000)));
    }
    while let Some(l) = c.held.pop() {
        c.ack(&l, false);
    }
    c.t.close();
    Ok(())
}
