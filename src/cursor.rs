//! The cursor of a listing's page: where the next page goes on, as text the caller hands
//! back unchanged.

use crate::error::{Error, Result};

/// A cursor: where a listing goes on, as text the caller hands back unchanged. Kinds:
/// "g" (groups, after a group id), "m" (a group's messages, after a seq), "d" (dead
/// letters, after a seq), "a" (archived messages, after a seq); a sharded queue's "D" and
/// "A" wrap a shard's own (shards/merge.rs).
pub fn cursor(kind: char, after: &[u8]) -> String {
    let hex: String = after.iter().map(|b| format!("{b:02x}")).collect();
    format!("{kind}1.{hex}")
}

/// What a cursor of `kind` says, or an argument error for text this library did not make.
pub fn parse_cursor(kind: char, text: &str) -> Result<Vec<u8>> {
    let bad = || {
        Error::Argument(format!(
            "cursor {text:?} is not a cursor of this listing: pass back the `next` of the previous page unchanged"
        ))
    };
    let hex = text.strip_prefix(kind).and_then(|rest| rest.strip_prefix("1.")).ok_or_else(bad)?;
    if hex.len() % 2 != 0 {
        return Err(bad());
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).ok_or_else(bad)?, 16).map_err(|_| bad()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_text_is_refused() {
        for after in [&b""[..], b"g", b"a\0b", "é".as_bytes()] {
            assert_eq!(parse_cursor('g', &cursor('g', after)).unwrap(), after);
        }
        for bad in ["", "g", "g1", "g1.x", "g1.abc", "m1.00", "g2.00", "zz"] {
            assert!(matches!(parse_cursor('g', bad), Err(Error::Argument(_))), "{bad:?}");
        }
    }
}
