//! Hostile input (issue #7): strings no identifier, quote or parser should be trusted
//! with, for group ids, worker ids, routing keys and events; tests/hostile_input.rs sends
//! them through a local file and the C ABI, tests/server.rs through a libSQL server.

/// Strings no identifier, quote or parser should be trusted with.
pub fn strings() -> Vec<String> {
    let mut s: Vec<String> = [
        "'",
        "\"",
        "''",
        "\\",
        "`",
        "'; DROP TABLE harel_transport_messages; --",
        "\"; DROP TABLE harel_transport_groups; --",
        "x' OR '1'='1",
        "') ; DELETE FROM harel_transport_groups WHERE ('1'='1",
        "1; UPDATE harel_transport_messages SET locked_by = NULL; --",
        "*/ SELECT 1; /*",
        "%",
        "_",
        "?1",
        ":name",
        "$x",
        "@y",
        "NULL",
        "null",
        " ",
        "  padded  ",
        "harel_transport_messages",
        "__parked__ ",
        "__PARKED__",
        "\u{1}\u{2}\u{3}\t\n\r\u{b}\u{c}\u{1b}[31mred\u{1b}[0m\u{7f}",
        "line1\nline2\r\n",
        "🦀",
        "👩\u{200d}👩\u{200d}👧\u{200d}👦 family, 👍🏽 toned",
        "\u{202e}reversed\u{202c}",
        "\u{feff}bom",
        "e\u{301} combining",
        "𝄞 four bytes",
        "\u{fffd} replacement",
        "\u{10ffff} the last code point",
        "日本語のグループ",
        "\\u0000 not a NUL, six characters",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let every_control: String = (1u8..32).map(char::from).collect();
    s.push(every_control);
    s.push("a".repeat(64 * 1024));
    s.push("🦀".repeat(16 * 1024)); // 64 KB of 4-byte characters
    s.push("'\"\\;--".repeat(64 * 1024 / 6));
    s
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// An event carrying `s` as a value and as a key, with odd but valid JSON spacing.
pub fn event_with(s: &str, n: usize) -> String {
    format!(
        "{{ \"kind\" : \"hostile\",\"id\":\"h{n}\" ,\n\t\"data\":{{{}:{} , \"n\":{n}}} }}",
        json_string(s),
        json_string(s)
    )
}
