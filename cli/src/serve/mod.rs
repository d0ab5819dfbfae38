//! `harel-transport serve`: one transport shared by a few threads of a small synchronous
//! HTTP server, answering `/metrics` (metrics.rs), the console's page (assets.rs) and its
//! JSON API (api.rs; changes admitted by auth.rs). Each answer is one read or one change of
//! the library, so serving never holds the queue for long.

mod api;
mod assets;
mod auth;
mod http;
mod metrics;

use std::io::Write;
use std::net::TcpListener;
use std::sync::Arc;

use harel_transport::Transport;
use tiny_http::{Method, Server};

pub use auth::AdminToken;
use http::{target, Reply};

use crate::args::ServeArgs;
use crate::output::Out;

/// Threads answering requests: a scrape, a page refresh and a change at once, and a spare.
const THREADS: usize = 4;

pub struct Console {
    transport: Transport,
    out: Out,
    admin: AdminToken,
    prefix: String,
}

/// Serves until the process is stopped; returns only when it cannot start.
pub fn run(transport: Transport, admin: AdminToken, args: &ServeArgs, prefix: &str) -> Result<(), String> {
    let listener = TcpListener::bind(&args.listen).map_err(|e| format!("--listen {:?}: {e}", args.listen))?;
    let address = listener.local_addr().map_err(|e| format!("--listen {:?}: {e}", args.listen))?;
    let server = Server::from_listener(listener, None).map_err(|e| format!("--listen {:?}: {e}", args.listen))?;
    let mut out = Out::new(true);
    out.absent = transport.absent().to_vec();
    let changes = if admin.is_set() { "changes need the admin token" } else { "no admin token: looks only" };
    let console = Arc::new(Console { transport, out, admin, prefix: prefix.to_owned() });
    // The address first and alone on stdout: port 0 picks one, and whoever started us reads it.
    println!("listening on http://{address}");
    let _ = std::io::stdout().flush();
    eprintln!("{}: serving /metrics and the console at http://{address}/ ({changes})", crate::NAME);
    let server = Arc::new(server);
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (server, console) = (Arc::clone(&server), Arc::clone(&console));
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    answer(&console, request);
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
    Err("the HTTP server stopped".to_owned())
}

fn answer(console: &Console, mut request: tiny_http::Request) {
    let (path, query) = target(&request);
    let reply = match request.method() {
        Method::Get | Method::Head if path == "/metrics" => metrics(console),
        Method::Get | Method::Head => assets::asset(&path).or_else(|| api::look(console, &path, &query)),
        Method::Post => api::change(console, &mut request, &path),
        _ => Some(Reply::error(405, format!("{} is not served", request.method()))),
    };
    let reply = reply.unwrap_or_else(|| Reply::error(404, format!("{path}: no such page")));
    // A client that went away before its answer is its own business.
    let _ = reply.send(request);
}

/// One scrape: the stats, then the limits; a failure of either is `harel_transport_up 0`.
fn metrics(console: &Console) -> Option<Reply> {
    let t = &console.transport;
    let read = t
        .stats()
        .map_err(|e| crate::failed("stats", &e))
        .and_then(|stats| t.limits().map(|limits| (stats, limits)).map_err(|e| crate::failed("limits", &e)));
    if let Err(message) = &read {
        eprintln!("{}: /metrics: {message}", crate::NAME);
    }
    let has_dead = !console.out.absent.iter().any(|a| a.ends_with("_dead"));
    let read = read.as_ref().ok().map(|(stats, limits)| (stats, limits.as_slice()));
    Some(metrics::exposition(&console.prefix, read, has_dead))
}
