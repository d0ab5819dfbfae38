//! A message's headers: an ordered list of (name, value) text pairs a producer sends beside
//! the event (a trace context, a content type), checked once when built and stored as one
//! JSON text (`[["name","value"],...]`) in a column harel 0.9 neither writes nor reads.

use libsql::Value;

use crate::error::{Error, Result};

/// The most pairs a message carries.
pub const MAX_HEADERS: usize = 64;
/// The most bytes of names and values, all pairs together.
pub const MAX_HEADERS_BYTES: usize = 16 * 1024;
/// The longest name, in bytes.
pub const MAX_HEADER_NAME_LEN: usize = 128;

/// Headers, checked: at most `MAX_HEADERS` pairs and `MAX_HEADERS_BYTES` bytes of names
/// and values in all; a name 1..=`MAX_HEADER_NAME_LEN` bytes of visible ASCII without
/// `=`; a value any UTF-8 without NUL. Names may repeat; order is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    pairs: Vec<(String, String)>,
    /// What is stored: None when there are no pairs (the column stays NULL).
    stored: Option<String>,
}

impl Headers {
    /// Checks `pairs`; an error names the first bad one ("headers[2].name ...").
    pub fn new<N: AsRef<str>, V: AsRef<str>>(pairs: &[(N, V)]) -> Result<Headers> {
        let pairs: Vec<(String, String)> =
            pairs.iter().map(|(n, v)| (n.as_ref().to_owned(), v.as_ref().to_owned())).collect();
        check(&pairs)?;
        Ok(Headers::of(pairs))
    }

    /// No headers, as a constant.
    pub const fn none() -> Headers {
        Headers { pairs: Vec::new(), stored: None }
    }

    fn of(pairs: Vec<(String, String)>) -> Headers {
        let stored = (!pairs.is_empty()).then(|| serde_json::to_string(&pairs).expect("text pairs serialize"));
        Headers { pairs, stored }
    }

    /// The headers a stored column holds (NULL: none). Written by another program, the value
    /// may not be ours: an error says so, as the reason a claim buries its message.
    pub(crate) fn from_column(value: &Value) -> std::result::Result<Headers, String> {
        let text = match value {
            Value::Null => return Ok(Headers::default()),
            Value::Text(text) => Some(text.as_str()),
            Value::Blob(bytes) => std::str::from_utf8(bytes).ok(),
            _ => None,
        };
        let pairs: Option<Vec<(String, String)>> = text.and_then(|t| serde_json::from_str(t).ok());
        match (text, pairs) {
            (Some(text), Some(pairs)) => match check(&pairs) {
                Ok(()) => Ok(Headers { pairs, stored: Some(text.to_owned()) }),
                Err(e) => Err(format!("its headers break the rules: {} (written by another program)", e.message())),
            },
            _ => Err("its headers are not a JSON array of [name, value] text pairs (written by another program)"
                .into()),
        }
    }

    /// The text stored for these headers; None when there are none.
    pub(crate) fn stored(&self) -> Option<&str> {
        self.stored.as_deref()
    }

    /// The pairs, in order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The value of the first pair named `name` (names compare byte for byte).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// These headers with `name` set to `value`: its first pair's value replaced, its later
    /// pairs dropped, or a pair added at the end; checked as `new` checks.
    pub fn with(&self, name: &str, value: &str) -> Result<Headers> {
        let mut pairs = Vec::with_capacity(self.pairs.len() + 1);
        let mut set = false;
        for (n, v) in &self.pairs {
            if n != name {
                pairs.push((n.clone(), v.clone()));
            } else if !set {
                pairs.push((n.clone(), value.to_owned()));
                set = true;
            }
        }
        if !set {
            pairs.push((name.to_owned(), value.to_owned()));
        }
        check(&pairs)?;
        Ok(Headers::of(pairs))
    }
}

fn check(pairs: &[(String, String)]) -> Result<()> {
    if pairs.len() > MAX_HEADERS {
        return Err(arg(format!("headers has {} pairs; at most {MAX_HEADERS}", pairs.len())));
    }
    let mut bytes = 0;
    for (i, (name, value)) in pairs.iter().enumerate() {
        if name.is_empty() || name.len() > MAX_HEADER_NAME_LEN {
            return Err(arg(format!("headers[{i}].name is {} bytes; it must be 1..{MAX_HEADER_NAME_LEN}", name.len())));
        }
        if let Some(c) = name.bytes().find(|&b| !b.is_ascii_graphic() || b == b'=') {
            return Err(arg(format!(
                "headers[{i}].name {:?} holds byte 0x{c:02x}: a name is visible ASCII (0x21..0x7e) without '='",
                name.escape_debug().to_string()
            )));
        }
        if value.contains('\0') {
            return Err(arg(format!("headers[{i}].value (of {name:?}) holds a NUL byte")));
        }
        bytes += name.len() + value.len();
    }
    if bytes > MAX_HEADERS_BYTES {
        return Err(arg(format!("headers hold {bytes} bytes of names and values; at most {MAX_HEADERS_BYTES}")));
    }
    Ok(())
}

fn arg(message: String) -> Error {
    Error::Argument(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(pairs: &[(&str, &str)]) -> String {
        Headers::new(pairs).expect_err("refused").message().to_owned()
    }

    #[test]
    fn kept_in_order_and_stored_as_json_pairs() {
        let h = Headers::new(&[("b", "2"), ("a", "x\"y\n\u{e9}"), ("b", "3")]).unwrap();
        assert_eq!(h.get("b"), Some("2"));
        assert_eq!(h.stored(), Some("[[\"b\",\"2\"],[\"a\",\"x\\\"y\\n\u{e9}\"],[\"b\",\"3\"]]"));
        let back = Headers::from_column(&Value::Text(h.stored().unwrap().into())).unwrap();
        assert_eq!(back, h);
        assert_eq!(Headers::new::<&str, &str>(&[]).unwrap().stored(), None);
        assert_eq!(Headers::from_column(&Value::Null).unwrap(), Headers::default());
    }

    #[test]
    fn with_replaces_the_first_and_drops_the_rest() {
        let h = Headers::new(&[("a", "1"), ("t", "old"), ("t", "older")]).unwrap();
        let set = h.with("t", "new").unwrap();
        assert_eq!(set.pairs(), &[("a".to_owned(), "1".to_owned()), ("t".to_owned(), "new".to_owned())]);
        assert_eq!(h.with("z", "9").unwrap().len(), 4);
        assert!(h.with("bad name", "1").is_err());
    }

    #[test]
    fn every_limit_is_named() {
        assert!(refused(&[("", "v")]).starts_with("headers[0].name is 0 bytes"));
        assert!(refused(&[("a", "v"), (&"n".repeat(129), "v")]).starts_with("headers[1].name is 129 bytes"));
        assert!(Headers::new(&[("n".repeat(128), "v")]).is_ok());
        for bad in ["a b", "a=b", "a\tb", "caf\u{e9}", "a\u{7f}"] {
            assert!(refused(&[(bad, "v")]).contains("visible ASCII"), "{bad:?}");
        }
        assert!(refused(&[("a", "x\0y")]).starts_with("headers[0].value (of \"a\") holds a NUL"));
        let many: Vec<(String, String)> = (0..65).map(|i| (format!("h{i}"), String::new())).collect();
        assert_eq!(Headers::new(&many).unwrap_err().message(), "headers has 65 pairs; at most 64");
        assert_eq!(Headers::new(&many[..64]).unwrap().len(), 64);
        let big = "v".repeat(MAX_HEADERS_BYTES - 1);
        assert!(Headers::new(&[("a", big.as_str())]).is_ok());
        assert!(refused(&[("ab", big.as_str())]).starts_with("headers hold 16385 bytes"));
    }

    #[test]
    fn a_stored_text_not_ours_is_named() {
        for bad in ["{}", "[[1,2]]", "[[\"a\"]]", "not json"] {
            assert!(Headers::from_column(&Value::Text(bad.into())).is_err(), "{bad}");
        }
        assert!(Headers::from_column(&Value::Integer(1)).is_err());
        let nul = Headers::from_column(&Value::Text(r#"[["a","x\u0000"]]"#.into())).unwrap_err();
        assert!(nul.starts_with("its headers break the rules: headers[0].value"), "{nul}");
        assert!(Headers::from_column(&Value::Blob(vec![0xff])).is_err());
    }
}
