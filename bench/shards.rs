//! Part 11 (issue #28, points 1 and 3): a queue sharded over several databases against one.
//!
//! - On sqld: 16 workers (threads, each with a transport of its own) in `ack_and_claim`
//!   loops over 1, 2 and 4 shards, each shard a sqld of its own on loopback, reached
//!   directly and through proxies adding 2 ms to every round trip (one per server, as a
//!   network would); and on one server through the proxy, 1 and 8 workers. Part 10's
//!   workers and backlog (bench/server_limit.rs), a fresh prefix (a new set) per figure.
//!   Targets: through the proxy, 8 workers ≥ 4× one; 2 shards ≥ 1.7× and 4 shards ≥ 3×
//!   one shard with 16 workers. Then shards that are embedded replicas (each transport's
//!   files of its own, each shard's primary behind its proxy): 8 workers over 1 and 2.
//! - On local files at synchronous FULL: 4 and 8 worker processes (part 3's worker) draining
//!   one file, then a queue sharded over 4 files, each from a backlog of its own, in
//!   alternating runs.

use std::path::Path;
use std::time::{Duration, Instant};

use harel_transport::{Options, Synchronous, Transport};
use harel_transport_testkit::http_proxy::CountingProxy;
use harel_transport_testkit::sqld::Sqld;
use serde_json::{json, Value};

use crate::server_limit::{drain, timed, top_up, Figure, Loop};
use crate::{backlog, procs};

const LATENCY: Duration = Duration::from_millis(2);
const SPAN: Duration = Duration::from_secs(2);
const MAX_SHARDS: usize = 4;
/// (shards, workers, through the proxy)
const FIGURES: [(usize, usize, bool); 8] = [
    (1, 1, true),
    (1, 8, true),
    (1, 16, true),
    (2, 16, true),
    (4, 16, true),
    (1, 16, false),
    (2, 16, false),
    (4, 16, false),
];
/// Shards that are embedded replicas, through the proxy: (shards, workers).
const REPLICA_FIGURES: [(usize, usize); 2] = [(1, 8), (2, 8)];
/// Local files: the backlog of each run, its groups, how long it runs.
const FILE_BACKLOG: usize = 40_000;
const FILE_GROUPS: usize = 2_000;
const FILE_SECS: f64 = 3.0;
const FILE_SHARDS: usize = 4;

pub fn run(binary: Option<&Path>, work: &Path) -> Value {
    let servers = match binary {
        Some(binary) => sqld_figures(binary, work),
        None => json!({"skipped": "no sqld"}),
    };
    let files = file_figures(work);
    print(&servers, &files);
    json!({"sqld": servers, "files": files})
}

fn sqld_figures(binary: &Path, work: &Path) -> Value {
    crate::progress("shards: 4 sqld servers, each behind a proxy adding 2 ms");
    let servers: Vec<Sqld> = (0..MAX_SHARDS).map(|_| Sqld::start(binary, false)).collect();
    let proxies: Vec<CountingProxy> = servers.iter().map(|s| CountingProxy::start(s.port(), LATENCY)).collect();
    let direct = FIGURES.iter().map(|&(shards, workers, proxied)| (shards, workers, proxied, false));
    let replicas = REPLICA_FIGURES.iter().map(|&(shards, workers)| (shards, workers, true, true));
    let figures: Vec<Value> = direct
        .chain(replicas)
        .enumerate()
        .map(|(i, (shards, workers, proxied, replica))| {
            let what = if replica { " of embedded replicas" } else { "" };
            crate::progress(&format!("shards: {workers} worker(s) over {shards} shard(s){what}{}", via(proxied)));
            let urls: Vec<String> = match proxied {
                true => proxies[..shards].iter().map(CountingProxy::url).collect(),
                false => servers[..shards].iter().map(Sqld::url).collect(),
            };
            let replicas = replica.then(|| work.join(format!("replicas{i}")));
            let figure = sqld_figure(&urls, replicas.as_deref(), &format!("shards{i}"), workers);
            let mut about = json!({"shards": shards, "workers": workers, "proxy": proxied, "replica": replica});
            let result = match figure {
                Ok(f) => json!({"per_s": f.rate(), "cpu_machine": f.cpu.machine, "cpu_clients": f.cpu.bench,
                    "busy": f.busy, "dry": f.dry, "slowest_ms": f.slowest.as_secs_f64() * 1000.0}),
                Err(e) => json!({"error": e}),
            };
            if let (Value::Object(about), Value::Object(result)) = (&mut about, result) {
                about.extend(result);
            }
            about
        })
        .collect();
    json!(figures)
}

fn via(proxied: bool) -> &'static str {
    if proxied {
        " through the proxy"
    } else {
        ", directly"
    }
}

/// Messages a second that `workers` `ack_and_claim` loops ack over `SPAN` on the sharded
/// queue at `urls` (or on embedded replicas of them, files under `replicas`), from a
/// backlog topped up first.
fn sqld_figure(urls: &[String], replicas: Option<&Path>, prefix: &str, workers: usize) -> Result<Figure, String> {
    let list: Vec<&str> = urls.iter().map(String::as_str).collect();
    let mut options = Options::new();
    options.prefix(prefix).map_err(|e| format!("{e:?}"))?;
    options.busy_timeout(30.0).map_err(|e| format!("{e:?}"))?;
    if let Some(dir) = replicas {
        options.sync_urls(&list).map_err(|e| format!("{e:?}"))?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let open = |n: usize| match replicas {
        None => Transport::open_shards(&list, &options).map_err(|e| format!("open: {e:?}")),
        Some(dir) => {
            let files: Vec<String> =
                (0..list.len()).map(|s| dir.join(format!("t{n}-s{s}.db")).to_string_lossy().into_owned()).collect();
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            Transport::open_shards(&files, &options).map_err(|e| format!("open a replica: {e:?}"))
        }
    };
    top_up(&open(workers)?, &mut 0)?;
    let transports = (0..workers).map(open).collect::<Result<Vec<_>, _>>()?;
    timed(workers, SPAN, |w, deadline| drain(&transports[w], w, deadline, Loop::AckAndClaim))
}

/// One file against `FILE_SHARDS` files, with 4 and 8 processes, alternating.
fn file_figures(work: &Path) -> Value {
    let mut figures = Vec::new();
    for k in [4, 8] {
        for shards in [1, FILE_SHARDS, 1, FILE_SHARDS] {
            crate::progress(&format!("shards: {k} processes draining {shards} file(s) at FULL"));
            let paths: Vec<String> =
                (0..shards).map(|i| work.join(format!("shard{i}.db")).to_string_lossy().into_owned()).collect();
            let run =
                file_backlog(&paths).and_then(|()| procs::run(&paths.join("\n"), Synchronous::Full, k, FILE_SECS));
            for path in &paths {
                crate::states::remove_db(Path::new(path));
            }
            figures.push(json!({"processes": k, "files": shards, "run": run.unwrap_or_else(|e| json!({"error": e}))}));
        }
    }
    json!(figures)
}

fn file_backlog(paths: &[String]) -> Result<(), String> {
    let list: Vec<&str> = paths.iter().map(String::as_str).collect();
    let t = Transport::open_shards(&list, &Options::new()).map_err(|e| format!("open: {e:?}"))?;
    let started = Instant::now();
    backlog::fill(&t, 0, FILE_BACKLOG, FILE_GROUPS, 500, None)?;
    crate::progress(&format!("shards: backlog in {:.1} s", started.elapsed().as_secs_f64()));
    Ok(())
}

fn per_s(v: &Value) -> Option<f64> {
    v.get("per_s").and_then(Value::as_f64)
}

fn print(servers: &Value, files: &Value) {
    println!();
    println!(
        "11. Sharded queues (issue #28): 16 worker threads in ack_and_claim loops over 1, 2 and 4 sqld shards \
         (each a server of its own; a proxy adds {} ms per round trip), {} s a figure; local files at FULL: \
         worker processes over one file and over {FILE_SHARDS}, {FILE_SECS} s a run, two runs each",
        LATENCY.as_millis(),
        SPAN.as_secs_f64()
    );
    let find_of = |shards: usize, workers: usize, proxy: bool, replica: bool| {
        servers.as_array().and_then(|a| {
            a.iter().find(|f| {
                f["shards"] == json!(shards)
                    && f["workers"] == json!(workers)
                    && f["proxy"] == json!(proxy)
                    && f["replica"] == json!(replica)
            })
        })
    };
    let find = |shards: usize, workers: usize, proxy: bool| find_of(shards, workers, proxy, false);
    let cell = |f: Option<&Value>| match f {
        Some(f) => per_s(f).map_or_else(
            || format!("failed: {}", f["error"]),
            |r| {
                let cpu = f["cpu_machine"].as_f64().unwrap_or(0.0) * 100.0;
                let slowest = f["slowest_ms"].as_f64().unwrap_or(0.0);
                format!("{r:.0} msg/s [cpu {cpu:.0}%, slowest {slowest:.0} ms]")
            },
        ),
        None => "-".into(),
    };
    let ratio = |a: Option<&Value>, b: Option<&Value>| match (a.and_then(per_s), b.and_then(per_s)) {
        (Some(a), Some(b)) if b > 0.0 => format!("×{:.2}", a / b),
        _ => "-".into(),
    };
    if servers.get("skipped").is_some() {
        println!("  sqld: skipped (no sqld)");
    } else {
        let one = find(1, 1, true);
        let eight = find(1, 8, true);
        println!(
            "  one server through the proxy: 1 worker {}, 8 workers {} ({}; target ×4)",
            cell(one),
            cell(eight),
            ratio(eight, one)
        );
        for proxy in [true, false] {
            let base = find(1, 16, proxy);
            let row: Vec<String> = [1, 2, 4]
                .iter()
                .map(|&s| format!("{} shard(s) {} ({})", s, cell(find(s, 16, proxy)), ratio(find(s, 16, proxy), base)))
                .collect();
            let target = if proxy { "; targets ×1.7 and ×3" } else { "" };
            println!("  16 workers{}: {}{target}", via(proxy), row.join(", "));
        }
        let (one, two) = (find_of(1, 8, true, true), find_of(2, 8, true, true));
        println!(
            "  8 workers on embedded replicas through the proxy: 1 shard {} ({} of remote), 2 shards {} ({})",
            cell(one),
            ratio(one, eight),
            cell(two),
            ratio(two, one)
        );
    }
    for k in [4, 8] {
        let runs = |shards: usize| -> Vec<f64> {
            files
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| f["processes"] == json!(k) && f["files"] == json!(shards))
                .filter_map(|f| per_s(&f["run"]))
                .collect()
        };
        let (one, many) = (runs(1), runs(FILE_SHARDS));
        let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
        println!(
            "  {k} processes at FULL: one file {:?} msg/s, {FILE_SHARDS} files {:?} msg/s (×{:.2})",
            one.iter().map(|r| r.round()).collect::<Vec<_>>(),
            many.iter().map(|r| r.round()).collect::<Vec<_>>(),
            mean(&many) / mean(&one)
        );
    }
}
