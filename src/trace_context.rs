//! W3C Trace Context, Level 1 (<https://www.w3.org/TR/trace-context/>, version `00`): the
//! `traceparent` and `tracestate` values a message's headers carry from its producer to its
//! workers. Reading never fails a worker: a value that is not valid is `None`, and is to be
//! ignored, as the spec asks of a receiver ("vendors MUST ignore the traceparent"; a
//! tracestate that cannot be parsed MAY be discarded whole). Writing checks what it writes.

use crate::error::{Error, Result};

/// The header name of the trace's parent (`00-<trace-id>-<parent-id>-<trace-flags>`).
pub const TRACEPARENT: &str = "traceparent";
/// The header name of the vendors' list of `key=value` entries.
pub const TRACESTATE: &str = "tracestate";
/// The length of a version-00 `traceparent` value, in characters ("00-", 32 hex digits,
/// "-", 16, "-", 2); a C buffer for one (`harel_traceparent_format`'s) holds this many and a NUL.
pub const TRACEPARENT_LEN: usize = 55;

/// The trace-flags bit "sampled": the caller may have recorded trace data.
const SAMPLED: u8 = 0x01;
/// The most list-members (key/value pairs) a tracestate holds.
const MAX_MEMBERS: usize = 32;

/// A `traceparent`: the trace's id, the id of the span (the spec's `parent-id`) a message was
/// sent from, and the trace-flags. Always written as version 00.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub flags: u8,
}

impl TraceParent {
    /// A traceparent of these ids and flags; `None` when either id is all zero bytes, which
    /// the spec forbids. `flags` is kept as given: bit 0 is "sampled", and the spec asks a
    /// sender to leave the other bits 0.
    pub fn new(trace_id: [u8; 16], span_id: [u8; 8], flags: u8) -> Option<TraceParent> {
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceParent { trace_id, span_id, flags })
    }

    /// Reads a traceparent value; `None` when it is not valid, to be ignored (a new trace
    /// started). Version 00 is exactly `00-<32 hex>-<16 hex>-<2 hex>`, lower-case hex only,
    /// neither id all zero. A higher version (`01`..`fe`) is read as the spec says: its first
    /// 55 characters as version 00, followed by nothing or by `-` and fields of its own (not
    /// read), and of its flags only the sampled bit, the one this version knows. Version `ff`
    /// is invalid.
    pub fn parse(value: &str) -> Option<TraceParent> {
        // An HTTP field value's surrounding OWS is not part of it (RFC 7230, 3.2.4), and the
        // W3C test suite expects it ignored (test_traceparent_ows_handling): spaces and tabs only.
        let b = value.trim_matches(is_ows).as_bytes();
        if b.len() < TRACEPARENT_LEN {
            return None;
        }
        let version = hex_byte(&b[0..2])?;
        let rest = &b[TRACEPARENT_LEN..];
        let rest_ok = match version {
            0x00 => rest.is_empty(),
            0xff => false,
            _ => rest.first().is_none_or(|&c| c == b'-'),
        };
        if !rest_ok || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let mut trace_id = [0; 16];
        let mut span_id = [0; 8];
        hex_into(&b[3..35], &mut trace_id)?;
        hex_into(&b[36..52], &mut span_id)?;
        let flags = hex_byte(&b[53..55])?;
        TraceParent::new(trace_id, span_id, if version == 0 { flags } else { flags & SAMPLED })
    }

    /// The version-00 value, lower-case: `00-<trace-id>-<parent-id>-<trace-flags>`.
    pub fn to_header(&self) -> String {
        let mut s = String::with_capacity(TRACEPARENT_LEN);
        s.push_str("00-");
        push_hex(&mut s, &self.trace_id);
        s.push('-');
        push_hex(&mut s, &self.span_id);
        s.push('-');
        push_hex(&mut s, &[self.flags]);
        s
    }

    /// Whether the sampled flag (bit 0) is set.
    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }
}

/// A `tracestate`: at most 32 `key=value` entries, each key once, the most recently
/// updated first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceState {
    entries: Vec<(String, String)>,
}

impl TraceState {
    /// Reads a tracestate value; `None` when it is not valid, to be ignored whole. It is a
    /// comma-separated list of `key=value` members with optional spaces and tabs around each;
    /// empty and blank members are allowed and skipped (so the empty value is a valid, empty
    /// tracestate). Invalid: a member whose key or value breaks the spec's grammar (see
    /// [`TraceState::insert`]), a key given twice, more than 32 members.
    pub fn parse(value: &str) -> Option<TraceState> {
        let mut entries: Vec<(String, String)> = Vec::new();
        for member in value.split(',') {
            let member = member.trim_matches(is_ows);
            if member.is_empty() {
                continue;
            }
            let (key, value) = member.split_once('=')?;
            if !valid_key(key) || !valid_value(value) || entries.len() == MAX_MEMBERS {
                return None;
            }
            if entries.iter().any(|(k, _)| k == key) {
                return None;
            }
            entries.push((key.to_owned(), value.to_owned()));
        }
        Some(TraceState { entries })
    }

    /// The entries, first (most recently updated) first.
    pub fn entries(&self) -> &[(String, String)] {
        &self.entries
    }

    /// The value of `key`, if it has an entry.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Sets `key` to `value` and moves the entry to the front, as the spec has a vendor do
    /// with an entry it adds or updates. When a new key makes 33 entries, the last one (the
    /// right-most) is dropped: the spec's rule for truncating a tracestate removes whole
    /// entries from its end (Level 2 says so of the 32-entry limit in as many words).
    ///
    /// A key is a simple key, a lower-case letter then at most 255 of `a-z 0-9 _ - * /`, or a
    /// multi-tenant key, a tenant id (`a-z` or `0-9`, then at most 240 of those) `@` a system
    /// id (a lower-case letter, then at most 13). A value is 1 to 256 printable ASCII
    /// characters (0x20-0x7E) other than `,` and `=`, not ending in a space.
    /// `Error::Argument` naming `key` or `value` when either is not so; nothing changed then.
    pub fn insert(&mut self, key: &str, value: &str) -> Result<()> {
        if !valid_key(key) {
            return Err(Error::Argument(format!(
                "tracestate key {key:?} is not a key: a lower-case letter, then at most 255 of a-z, 0-9, \
                 '_', '-', '*', '/'; or a tenant id (a-z or 0-9, then at most 240 of those), '@' and a \
                 system id (a lower-case letter, then at most 13 of those)"
            )));
        }
        if !valid_value(value) {
            return Err(Error::Argument(format!(
                "tracestate value {value:?} (of key {key:?}) is not a value: 1 to 256 printable ASCII \
                 characters (0x20-0x7E) other than ',' and '=', not ending in a space"
            )));
        }
        self.entries.retain(|(k, _)| k != key);
        self.entries.insert(0, (key.to_owned(), value.to_owned()));
        self.entries.truncate(MAX_MEMBERS);
        Ok(())
    }

    /// Removes the entry of `key`; its value, if it had one.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// The value: the entries as `key=value`, joined by "," without spaces ("" when empty).
    pub fn to_header(&self) -> String {
        let mut s = String::new();
        for (i, (k, v)) in self.entries.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s
    }
}

/// OWS (RFC 7230, 3.2.3): a space or a horizontal tab.
fn is_ows(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// A character of a key after its first: `a-z 0-9 _ - * /`.
fn key_char(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'-' | b'*' | b'/')
}

/// `first` then at most `max_rest` key characters.
fn id(s: &[u8], first: impl Fn(u8) -> bool, max_rest: usize) -> bool {
    match s.split_first() {
        Some((&c, rest)) => first(c) && rest.len() <= max_rest && rest.iter().all(|&c| key_char(c)),
        None => false,
    }
}

/// simple-key = lcalpha 0*255(keychar); multi-tenant-key = tenant-id "@" system-id, with
/// tenant-id = (lcalpha / DIGIT) 0*240(keychar) and system-id = lcalpha 0*13(keychar).
fn valid_key(key: &str) -> bool {
    let lower = |c: u8| c.is_ascii_lowercase();
    match key.split_once('@') {
        None => id(key.as_bytes(), lower, 255),
        Some((tenant, system)) => {
            id(tenant.as_bytes(), |c| lower(c) || c.is_ascii_digit(), 240) && id(system.as_bytes(), lower, 13)
        }
    }
}

/// value = 0*255(chr) nblk-chr, chr = 0x20-0x7E but ',' and '=', nblk-chr the same but space.
fn valid_value(value: &str) -> bool {
    let b = value.as_bytes();
    (1..=256).contains(&b.len())
        && b.iter().all(|&c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
        && b[b.len() - 1] != b' '
}

/// A lower-case hex digit's value.
fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Two lower-case hex digits' byte.
fn hex_byte(two: &[u8]) -> Option<u8> {
    Some((hex_digit(two[0])? << 4) | hex_digit(two[1])?)
}

/// Lower-case hex digits (twice `out`'s length) into `out`.
fn hex_into(digits: &[u8], out: &mut [u8]) -> Option<()> {
    for (byte, two) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = hex_byte(two)?;
    }
    Some(())
}

fn push_hex(s: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE_ID: [u8; 16] = [
        0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36,
    ];
    const SPAN_ID: [u8; 8] = [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7];
    /// The spec's examples.
    const SAMPLED_VALUE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const NOT_SAMPLED_VALUE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    /// The test suite's ids (test/test.py).
    const SUITE_TRACE: &str = "12345678901234567890123456789012";

    fn suite_trace_id() -> [u8; 16] {
        let mut id = [0; 16];
        hex_into(SUITE_TRACE.as_bytes(), &mut id).unwrap();
        id
    }

    #[test]
    fn the_specs_traceparent_examples_parse() {
        let p = TraceParent::parse(SAMPLED_VALUE).unwrap();
        assert_eq!((p.trace_id, p.span_id, p.flags, p.sampled()), (TRACE_ID, SPAN_ID, 1, true));
        let p = TraceParent::parse(NOT_SAMPLED_VALUE).unwrap();
        assert_eq!((p.trace_id, p.span_id, p.flags, p.sampled()), (TRACE_ID, SPAN_ID, 0, false));
        let p = TraceParent::parse("00-12345678901234567890123456789012-1234567890123456-01").unwrap();
        assert_eq!(p.trace_id, suite_trace_id());
        assert_eq!(p.span_id, [0x12, 0x34, 0x56, 0x78, 0x90, 0x12, 0x34, 0x56]);
    }

    #[test]
    fn traceparent_round_trips() {
        let p = TraceParent::new(TRACE_ID, SPAN_ID, 1).unwrap();
        assert_eq!(p.to_header(), SAMPLED_VALUE);
        assert_eq!(p.to_header().len(), TRACEPARENT_LEN);
        assert_eq!(TraceParent::parse(&p.to_header()), Some(p));
        let all = TraceParent::new([0xff; 16], [0xff; 8], 0xff).unwrap();
        assert_eq!(all.to_header(), format!("00-{}-{}-ff", "f".repeat(32), "f".repeat(16)));
        assert_eq!(TraceParent::parse(&all.to_header()), Some(all));
        // Flags other than sampled are kept in version 00, masked by the sampled bit.
        let other = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02").unwrap();
        assert_eq!((other.flags, other.sampled()), (2, false));
        assert!(TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09").unwrap().sampled());
    }

    #[test]
    fn new_refuses_all_zero_ids() {
        assert_eq!(TraceParent::new([0; 16], SPAN_ID, 1), None);
        assert_eq!(TraceParent::new(TRACE_ID, [0; 8], 1), None);
        let mut one = [0; 16];
        one[15] = 1;
        assert!(TraceParent::new(one, [0, 0, 0, 0, 0, 0, 0, 1], 0).is_some());
    }

    #[test]
    fn surrounding_spaces_and_tabs_are_ignored() {
        // test_traceparent_ows_handling
        for v in [
            " 00-12345678901234567890123456789012-1234567890123456-01",
            "\t00-12345678901234567890123456789012-1234567890123456-01",
            "00-12345678901234567890123456789012-1234567890123456-01 ",
            "00-12345678901234567890123456789012-1234567890123456-01\t",
            "\t 00-12345678901234567890123456789012-1234567890123456-01 \t",
        ] {
            assert_eq!(TraceParent::parse(v).map(|p| p.trace_id), Some(suite_trace_id()), "{v:?}");
        }
        // Other whitespace is not OWS.
        assert_eq!(TraceParent::parse("\n00-12345678901234567890123456789012-1234567890123456-01"), None);
        assert_eq!(TraceParent::parse("00-12345678901234567890123456789012-1234567890123456-01\r\n"), None);
    }

    #[test]
    fn a_higher_version_is_read_as_far_as_version_00_goes() {
        // test_traceparent_version_0xcc
        for v in [
            "cc-12345678901234567890123456789012-1234567890123456-01",
            "cc-12345678901234567890123456789012-1234567890123456-01-what-the-future-will-be-like",
            "01-12345678901234567890123456789012-1234567890123456-01-",
            "fe-12345678901234567890123456789012-1234567890123456-01-x",
        ] {
            let p = TraceParent::parse(v).unwrap_or_else(|| panic!("{v:?} is valid"));
            assert_eq!((p.trace_id, p.flags), (suite_trace_id(), 1), "{v:?}");
            // Written back as version 00.
            assert_eq!(p.to_header(), "00-12345678901234567890123456789012-1234567890123456-01");
        }
        // Of a higher version's flags, only the sampled bit is known.
        assert_eq!(TraceParent::parse("cc-12345678901234567890123456789012-1234567890123456-ff").unwrap().flags, 1);
        assert_eq!(TraceParent::parse("cc-12345678901234567890123456789012-1234567890123456-fe").unwrap().flags, 0);
        for v in [
            "cc-12345678901234567890123456789012-1234567890123456-01.what-the-future-will-be-like",
            "cc-12345678901234567890123456789012-1234567890123456-011",
            "cc-12345678901234567890123456789012-1234567890123456-0",
            "cc-1234567890123456789012345678901-1234567890123456-01-",
            "cc-00000000000000000000000000000000-1234567890123456-01",
            "cc-12345678901234567890123456789012-0000000000000000-01",
            "cc-12345678901234567890123456789012-1234567890123456-0X",
            "CC-12345678901234567890123456789012-1234567890123456-01",
        ] {
            assert_eq!(TraceParent::parse(v), None, "{v:?}");
        }
    }

    #[test]
    fn invalid_traceparents_are_none() {
        let long_trace = "00-123456789012345678901234567890123-1234567890123456-01";
        let invalid = [
            // test_traceparent_version_0x00: version 00 has nothing after its flags
            "00-12345678901234567890123456789012-1234567890123456-01.",
            "00-12345678901234567890123456789012-1234567890123456-01-what-the-future-will-be-like",
            "00-12345678901234567890123456789012-1234567890123456-01-",
            // version ff, illegal characters, too long, too short
            "ff-12345678901234567890123456789012-1234567890123456-01",
            ".0-12345678901234567890123456789012-1234567890123456-01",
            "0.-12345678901234567890123456789012-1234567890123456-01",
            "000-12345678901234567890123456789012-1234567890123456-01",
            "0000-12345678901234567890123456789012-1234567890123456-01",
            "0-12345678901234567890123456789012-1234567890123456-01",
            // trace-id: all zero, illegal characters, too long, too short
            "00-00000000000000000000000000000000-1234567890123456-01",
            "00-.2345678901234567890123456789012-1234567890123456-01",
            "00-1234567890123456789012345678901.-1234567890123456-01",
            long_trace,
            "00-1234567890123456789012345678901-1234567890123456-01",
            // parent-id
            "00-12345678901234567890123456789012-0000000000000000-01",
            "00-12345678901234567890123456789012-.234567890123456-01",
            "00-12345678901234567890123456789012-123456789012345.-01",
            "00-12345678901234567890123456789012-12345678901234567-01",
            "00-12345678901234567890123456789012-123456789012345-01",
            // trace-flags
            "00-12345678901234567890123456789012-1234567890123456-.0",
            "00-12345678901234567890123456789012-1234567890123456-0.",
            "00-12345678901234567890123456789012-1234567890123456-001",
            "00-12345678901234567890123456789012-1234567890123456-1",
            // upper-case hex anywhere
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
            "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // separators
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
            "00 4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 01",
            "004bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            // OWS inside, and empty
            "00- 4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "",
            " \t ",
            // not ASCII: a multi-byte character where a hex digit goes
            "00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01",
        ];
        for v in invalid {
            assert_eq!(TraceParent::parse(v), None, "{v:?}");
        }
    }

    fn members(n: usize) -> String {
        (1..=n).map(|i| format!("bar{i:02}={i:02}")).collect::<Vec<_>>().join(",")
    }

    #[test]
    fn the_specs_tracestate_examples_parse_and_round_trip() {
        let examples =
            ["congo=t61rcWkgMzE", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", "congo=ucfJifl5GOE,rojo=00f067aa0ba902b7"];
        for v in examples {
            let s = TraceState::parse(v).unwrap();
            assert_eq!(s.to_header(), v);
            assert_eq!(TraceState::parse(&s.to_header()), Some(s));
        }
        let s = TraceState::parse("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE").unwrap();
        assert_eq!(s.get("rojo"), Some("00f067aa0ba902b7"));
        assert_eq!(s.get("congo"), Some("t61rcWkgMzE"));
        assert_eq!(s.get("other"), None);
        assert_eq!(
            s.entries(),
            [("rojo".to_owned(), "00f067aa0ba902b7".to_owned()), ("congo".to_owned(), "t61rcWkgMzE".to_owned())]
        );
    }

    #[test]
    fn ows_and_empty_members_are_skipped() {
        // test_tracestate_ows_handling, test_tracestate_empty_header
        for v in ["foo=1 \t , \t bar=2, \t baz=3", "foo=1\t \t,\t \tbar=2,\t \tbaz=3", "foo=1,,bar=2, ,\t,baz=3,"] {
            assert_eq!(TraceState::parse(v).unwrap().to_header(), "foo=1,bar=2,baz=3", "{v:?}");
        }
        for v in [" foo=1", "\tfoo=1", "foo=1 ", "foo=1\t", "\t foo=1 \t", ",foo=1", "foo=1,", " , foo=1 , "] {
            assert_eq!(TraceState::parse(v).unwrap().to_header(), "foo=1", "{v:?}");
        }
        for v in ["", " ", "\t", ",", " , ,\t, "] {
            assert_eq!(TraceState::parse(v), Some(TraceState::default()), "{v:?}");
        }
        assert_eq!(TraceState::default().to_header(), "");
        // A value keeps its leading spaces (a trailing space is OWS).
        assert_eq!(TraceState::parse("foo=  a b").unwrap().get("foo"), Some("  a b"));
        // Headers joined by "," (RFC 7230's combining) read as one.
        assert_eq!(TraceState::parse(&["foo=1", "", "bar=2"].join(",")).unwrap().to_header(), "foo=1,bar=2");
    }

    #[test]
    fn at_most_32_members() {
        // test_tracestate_member_count_limit
        let s = TraceState::parse(&members(32)).unwrap();
        assert_eq!((s.entries().len(), s.get("bar01"), s.get("bar32")), (32, Some("01"), Some("32")));
        assert_eq!(TraceState::parse(&members(33)), None);
        // Empty members do not count.
        assert!(TraceState::parse(&format!(",,{},, ,", members(32))).is_some());
    }

    #[test]
    fn a_duplicated_key_is_invalid() {
        // test_tracestate_duplicated_keys
        for v in ["foo=1,foo=1", "foo=1,foo=2", "foo=1,bar=2,foo=3", "a@b=1,a@b=2"] {
            assert_eq!(TraceState::parse(v), None, "{v:?}");
        }
        assert!(TraceState::parse("foo=1,foo@bar=2,x@foo=3").is_some());
    }

    #[test]
    fn keys_follow_the_grammar() {
        // test_tracestate_all_allowed_characters
        let simple = "abcdefghijklmnopqrstuvwxyz0123456789_-*/";
        let tenant = format!("{simple}@a-z0-9_-*/");
        let value: String = (0x20u8..=0x7e).filter(|&c| c != b',' && c != b'=').map(char::from).collect();
        for key in [simple, tenant.as_str()] {
            let s = TraceState::parse(&format!("{key}={value}")).unwrap();
            assert_eq!(s.get(key), Some(value.as_str()));
        }
        // test_tracestate_key_length_limit: 256 / 257 characters; tenant 241 / 242; system 14 / 15
        let valid = ["z".repeat(256), format!("{}@{}", "t".repeat(241), "v".repeat(14)), "0@a".into(), "9a@z9".into()];
        for key in valid {
            assert!(TraceState::parse(&format!("foo=1,{key}=1")).is_some(), "{key:?}");
        }
        let invalid = [
            "z".repeat(257),
            format!("{}@v", "t".repeat(242)),
            format!("t@{}", "v".repeat(15)),
            // test_tracestate_key_illegal_characters
            "foo ".into(),
            "FOO".into(),
            "Foo".into(),
            "foo.bar".into(),
            // a simple key starts with a letter; a system id too
            "0foo".into(),
            "_foo".into(),
            "t@0v".into(),
            // test_tracestate_key_illegal_vendor_format
            "foo@".into(),
            "@foo".into(),
            "foo@@bar".into(),
            "foo@bar@baz".into(),
            "".into(),
            "fo\to".into(),
            "é".into(),
        ];
        for key in invalid {
            assert_eq!(TraceState::parse(&format!("{key}=1,bar=2")), None, "{key:?}");
        }
    }

    #[test]
    fn values_follow_the_grammar() {
        assert!(TraceState::parse(&format!("foo={}", "v".repeat(256))).is_some());
        assert!(TraceState::parse("foo=!~ \"#$%&'()*+-./:;<>?@[\\]^_`{|}").is_some());
        // test_tracestate_value_illegal_characters, and more
        let invalid = [
            "foo=bar=baz".to_owned(),
            "foo=,bar=3".into(),
            "foo=".into(),
            "foo".into(),
            "foo=a\tb".into(),
            "foo=a\nb".into(),
            "foo=\u{7f}".into(),
            "foo=é".into(),
            format!("foo={}", "v".repeat(257)),
            "=1".into(),
        ];
        for v in invalid {
            assert_eq!(TraceState::parse(&v), None, "{v:?}");
        }
    }

    #[test]
    fn insert_moves_the_entry_to_the_front() {
        let mut s = TraceState::parse("congo=t61rcWkgMzE").unwrap();
        s.insert("rojo", "00f067aa0ba902b7").unwrap();
        assert_eq!(s.to_header(), "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
        s.insert("congo", "ucfJifl5GOE").unwrap();
        assert_eq!(s.to_header(), "congo=ucfJifl5GOE,rojo=00f067aa0ba902b7");
        // The spec's example of a vendor's reentry.
        let mut s = TraceState::parse("rojo=rojosFirstPosition,congo=congosFirstPosition").unwrap();
        s.insert("congo", "congosSecondPosition").unwrap();
        assert_eq!(s.to_header(), "congo=congosSecondPosition,rojo=rojosFirstPosition");
        let mut empty = TraceState::default();
        empty.insert("a@b", "1").unwrap();
        assert_eq!(empty.to_header(), "a@b=1");
    }

    #[test]
    fn insert_past_32_drops_the_last_entry() {
        let mut s = TraceState::parse(&members(32)).unwrap();
        s.insert("new", "1").unwrap();
        assert_eq!(s.entries().len(), 32);
        assert_eq!((s.entries()[0].0.as_str(), s.get("bar31"), s.get("bar32")), ("new", Some("31"), None));
        // Updating a key of a full list drops nothing.
        let mut s = TraceState::parse(&members(32)).unwrap();
        s.insert("bar32", "x").unwrap();
        assert_eq!((s.entries().len(), s.entries()[0].0.as_str(), s.get("bar31")), (32, "bar32", Some("31")));
        assert_eq!(TraceState::parse(&s.to_header()), Some(s));
    }

    #[test]
    fn insert_refuses_a_bad_key_or_value() {
        let mut s = TraceState::parse("foo=1").unwrap();
        for key in ["", "FOO", "foo bar", "@x", "x@", "x@y@z", "0x"] {
            match s.insert(key, "1") {
                Err(Error::Argument(m)) => assert!(m.contains("tracestate key"), "{m}"),
                other => panic!("{key:?}: {other:?}"),
            }
        }
        let long = "v".repeat(257);
        for value in ["", "a,b", "a=b", "trailing ", "tab\t", "é", long.as_str()] {
            match s.insert("bar", value) {
                Err(Error::Argument(m)) => assert!(m.contains("tracestate value"), "{m}"),
                other => panic!("{value:?}: {other:?}"),
            }
        }
        assert_eq!(s.to_header(), "foo=1");
        s.insert("bar", " leading").unwrap();
        assert_eq!(s.get("bar"), Some(" leading"));
    }

    #[test]
    fn remove_takes_the_entry_out() {
        let mut s = TraceState::parse("a=1,b=2,c=3").unwrap();
        assert_eq!(s.remove("b"), Some("2".to_owned()));
        assert_eq!(s.remove("b"), None);
        assert_eq!(s.to_header(), "a=1,c=3");
        assert_eq!(s.remove("a"), Some("1".to_owned()));
        assert_eq!(s.remove("c"), Some("3".to_owned()));
        assert_eq!((s.to_header(), s.entries().len()), (String::new(), 0));
    }
}
