//! The HTTP side of `serve`: an answer (`Reply`) with the headers every answer carries, JSON
//! answers and errors, and what a request brings (its query, a header, a bounded body).

use std::collections::HashMap;
use std::io::{Read, Write};

use percent_encoding::percent_decode_str;
use serde::Serialize;
use tiny_http::{Method, Request, StatusCode};

/// The largest body a change takes: its selector is a few seqs or one group id.
const MAX_BODY: u64 = 64 * 1024;

/// The page loads its own script and style and nothing else; no page may frame it, and no
/// answer is sniffed into another type or leaks the address in a Referer.
const SECURITY_HEADERS: [(&str, &str); 5] = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cache-Control", "no-store"),
];

pub struct Reply {
    pub status: u16,
    content_type: &'static str,
    body: Vec<u8>,
}

impl Reply {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Reply {
        Reply { status, content_type, body: body.into() }
    }

    pub fn json(status: u16, document: &impl Serialize) -> Reply {
        let body = serde_json::to_vec(document).expect("a document serializes");
        Reply::new(status, "application/json", body)
    }

    /// `{"error": message}`: the page shows the message as it is.
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        #[derive(Serialize)]
        struct Failed {
            error: String,
        }
        Reply::json(status, &Failed { error: message.into() })
    }

    /// The status and body as one line, for the audit.
    pub fn summary(&self) -> String {
        format!("{} {}", self.status, String::from_utf8_lossy(&self.body))
    }

    /// Answers `request`, saying `Connection: close` so that the client ends the connection:
    /// the head is written here since tiny_http's `Response` drops a `Connection` header.
    /// tiny_http 0.12 serves each kept-alive connection on a thread of its pool for as long as
    /// the client keeps it, and its pool can leave a connection that arrives among several at
    /// once queued while every thread serves a kept-alive one: a browser opening connections
    /// to load the console had a request wait until one of its idle connections closed,
    /// minutes later. One connection a request costs a connect on loopback.
    pub fn send(self, request: Request) -> std::io::Result<()> {
        let head_only = *request.method() == Method::Head;
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, StatusCode(self.status).default_reason_phrase());
        for (name, value) in SECURITY_HEADERS.iter().chain([&("Content-Type", self.content_type)]) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", self.body.len()));
        let mut out = request.into_writer();
        out.write_all(head.as_bytes())?;
        if !head_only {
            out.write_all(&self.body)?;
        }
        out.flush()
    }
}

/// The request's path and its query's parameters, decoded (`+` is a space).
pub fn target(request: &Request) -> (String, HashMap<String, String>) {
    let url = request.url();
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let decode = |s: &str| percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
    let params = query.split('&').filter(|p| !p.is_empty()).map(|p| {
        let (key, value) = p.split_once('=').unwrap_or((p, ""));
        (decode(key), decode(value))
    });
    (path.to_owned(), params.collect())
}

pub fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.headers().iter().find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name)).map(|h| h.value.as_str())
}

/// The body, at most `MAX_BODY` bytes.
pub fn body(request: &mut Request) -> Result<Vec<u8>, Reply> {
    let mut bytes = Vec::new();
    request
        .as_reader()
        .take(MAX_BODY + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Reply::error(400, format!("reading the body: {e}")))?;
    if bytes.len() as u64 > MAX_BODY {
        return Err(Reply::error(413, format!("the body is over {MAX_BODY} bytes")));
    }
    Ok(bytes)
}
