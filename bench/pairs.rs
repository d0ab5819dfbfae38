//! A measured cost against its yardstick in the same run (`make bench-headers`, `make
//! bench-rules`): alternating rounds (A, B, A, B, ...), the median round of each side
//! compared, so a burst of the shared machine's noise lands on both sides.

use std::path::Path;
use std::time::Duration;

use harel_transport_testkit::sqld::Sqld;

pub const ROUNDS: usize = 9;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Microseconds per message of `a` and of `b` over `n` messages, median of alternating rounds.
pub fn pair(n: usize, mut a: impl FnMut(usize) -> Duration, mut b: impl FnMut(usize) -> Duration) -> (f64, f64) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        xs.push(a(n).as_secs_f64() * 1e6 / n as f64);
        ys.push(b(n).as_secs_f64() * 1e6 / n as f64);
    }
    (median(xs), median(ys))
}

pub fn header() {
    let head = ("backend", "measured against its yardstick", "yardstick", "measured", "ratio");
    println!("{:<18} {:<52} {:>9} {:>9} {:>7}", head.0, head.1, head.2, head.3, head.4);
    println!("{:<18} {:<52} {:>9} {:>9}", "", "", "µs/msg", "µs/msg");
}

/// One line: the yardstick, the measured, their ratio against `target`.
pub fn row(name: &str, what: &str, (yardstick, measured): (f64, f64), target: f64) {
    let ratio = measured / yardstick;
    let verdict = if ratio <= target { "ok" } else { "over" };
    println!("{name:<18} {what:<52} {yardstick:>9.1} {measured:>9.1} {ratio:>6.2}x (<= {target}x: {verdict})");
}

/// Where a pair is measured: a file at synchronous FULL (the library's default), memory
/// (the work without a sync) and, when HAREL_SQLD names one, a server; `n` messages a round.
pub struct Place {
    pub name: &'static str,
    pub url: Box<dyn Fn(&str) -> String>,
    pub n: usize,
}

/// The places, files under `dir`; one queue per measurement, by prefix, on the server.
pub fn places(dir: &Path, sqld: Option<&Sqld>) -> Vec<Place> {
    let dir = dir.to_owned();
    let mut places = vec![
        Place {
            name: "file, FULL",
            url: Box::new(move |name| dir.join(format!("{name}.db")).to_string_lossy().into_owned()),
            n: 300,
        },
        Place { name: "memory (CPU)", url: Box::new(|_| ":memory:".to_owned()), n: 2000 },
    ];
    if let Some(server) = sqld {
        let url = server.url();
        places.push(Place { name: "sqld", url: Box::new(move |_| url.clone()), n: 200 });
    }
    places
}
