//! Who may change the queue through `serve`: a request from the console's own origin that
//! brings the admin token. The token comes from `--admin-token-file` or `HAREL_ADMIN_TOKEN`,
//! never from the command line or a query string, and travels in `Authorization: Bearer`,
//! a header no other site's page can send here without a CORS preflight, which is never
//! granted.

use std::path::Path;

use subtle::ConstantTimeEq;
use tiny_http::Request;

use super::http::{header, Reply};
use crate::secret;

pub struct AdminToken(Option<String>);

impl AdminToken {
    pub fn load(file: Option<&Path>) -> Result<AdminToken, String> {
        secret::read(file, "--admin-token-file", "HAREL_ADMIN_TOKEN").map(AdminToken)
    }

    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// Whether `request` may make a change; the refusal says why. Cross-site requests are
    /// refused first, whatever they bring.
    pub fn admit(&self, request: &Request) -> Result<(), Reply> {
        same_origin(request)?;
        let Some(expected) = &self.0 else {
            return Err(Reply::error(
                403,
                "changes are off: this server has no admin token (start it with HAREL_ADMIN_TOKEN set, \
                 or with --admin-token-file FILE)",
            ));
        };
        let given = header(request, "Authorization").and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
        match given {
            None | Some("") => Err(Reply::error(401, "this change needs the admin token (Authorization: Bearer)")),
            // Compared in constant time: how long a wrong guess takes tells nothing.
            Some(token) if bool::from(token.as_bytes().ct_eq(expected.as_bytes())) => Ok(()),
            Some(_) => Err(Reply::error(403, "wrong admin token")),
        }
    }
}

/// Refuses a request another site's page sent: the browser's `Sec-Fetch-Site` when it says
/// so, an `Origin` that is not this server's, and a body that is not JSON (a plain form
/// could be posted cross-site without a preflight).
fn same_origin(request: &Request) -> Result<(), Reply> {
    let refused = |why: String| Err(Reply::error(403, format!("cross-site request refused: {why}")));
    if let Some(site) = header(request, "Sec-Fetch-Site") {
        if !matches!(site, "same-origin" | "none") {
            return refused(format!("Sec-Fetch-Site is {site:?}"));
        }
    }
    if let Some(origin) = header(request, "Origin") {
        let host = header(request, "Host").unwrap_or("");
        if origin != format!("http://{host}") {
            return refused(format!("Origin {origin:?} is not this server's (http://{host})"));
        }
    }
    let json = header(request, "Content-Type").is_some_and(|t| t.trim().starts_with("application/json"));
    if !json {
        return Err(Reply::error(415, "a change is a JSON body (Content-Type: application/json)"));
    }
    Ok(())
}
