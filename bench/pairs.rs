//! A measured cost against its yardstick in the same run (`make bench-headers`, `make
//! bench-rules`): alternating rounds (A, B, A, B, ...), the median round of each side
//! compared, so a burst of the shared machine's noise lands on both sides.

use std::time::Duration;

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
