//! The console's page, script and style, built into the binary: nothing is fetched from
//! elsewhere, and there is nothing to build or install beside it.

use super::http::Reply;

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");

/// The asset at `path`, if it is one.
pub fn asset(path: &str) -> Option<Reply> {
    let (content_type, text) = match path {
        "/" | "/index.html" => ("text/html; charset=utf-8", INDEX),
        "/console.js" => ("text/javascript; charset=utf-8", SCRIPT),
        "/console.css" => ("text/css; charset=utf-8", STYLE),
        _ => return None,
    };
    Some(Reply::new(200, content_type, text))
}
