//! Times as people read them in a table: spans ("12.3s", "4m05s", "2h03m", "3d04h"),
//! instants relative to now ("in 12.3s", "4m05s ago"), and UTC timestamps.

/// A span of seconds, short: tenths under a minute, then two units.
pub fn seconds(s: f64) -> String {
    let s = s.max(0.0);
    if s < 60.0 {
        // 59.96 would print as "60.0s".
        return if s < 59.95 { format!("{s:.1}s") } else { "1m00s".to_owned() };
    }
    let whole = s as u64;
    let (d, h, m, sec) = (whole / 86_400, whole / 3_600 % 24, whole / 60 % 60, whole % 60);
    if whole < 3_600 {
        format!("{m}m{sec:02}s")
    } else if whole < 86_400 {
        format!("{h}h{m:02}m")
    } else {
        format!("{d}d{h:02}h")
    }
}

/// An instant against now: "in 12.3s", or "12.3s ago" once it has passed.
pub fn relative(at: f64, now: f64) -> String {
    if at >= now {
        format!("in {}", seconds(at - now))
    } else {
        format!("{} ago", seconds(now - at))
    }
}

/// Epoch seconds as "YYYY-MM-DD HH:MM:SS UTC".
pub fn utc(epoch: f64) -> String {
    let secs = epoch.max(0.0) as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, mo, d) = civil_from_days(days);
    format!("{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02} UTC", rest / 3_600, rest / 60 % 60, rest % 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_instants() {
        assert_eq!(seconds(0.0), "0.0s");
        assert_eq!(seconds(12.34), "12.3s");
        assert_eq!(seconds(59.97), "1m00s");
        assert_eq!(seconds(245.0), "4m05s");
        assert_eq!(seconds(7_380.0), "2h03m");
        assert_eq!(seconds(3.0 * 86_400.0 + 4.0 * 3_600.0), "3d04h");
        assert_eq!(relative(112.3, 100.0), "in 12.3s");
        assert_eq!(relative(100.0, 112.3), "12.3s ago");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400.0), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_735_689_599.0), "2024-12-31 23:59:59 UTC");
    }
}
