//! A loopback proxy in front of a libSQL server that counts the requests it forwards and
//! can stand for a slower network: tests/server.rs counts requests per operation with it,
//! and the benchmark's part 5 adds 2 ms to every round trip.
//!
//! It counts HTTP/1.1 requests (Hrana's pipeline and cursor) and HTTP/2 streams (an
//! embedded replica's sync, gRPC), each once, however its bytes arrive. `latency` holds
//! every client-to-server byte that long before it is forwarded, without holding up the
//! bytes behind it (a longer wire, not a queue): each round trip takes `latency` more.
//! `lose_next_answer` lets the next request reach the server and cuts the connection
//! before its answer reaches the client.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sqld::relay;

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub struct CountingProxy {
    port: u16,
    shared: Arc<Shared>,
}

struct Shared {
    requests: AtomicUsize,
    lose_next_answer: AtomicBool,
    stop: AtomicBool,
    latency: Duration,
}

impl CountingProxy {
    pub fn start(upstream: u16, latency: Duration) -> CountingProxy {
        let shared = Arc::new(Shared {
            requests: AtomicUsize::new(0),
            lose_next_answer: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            latency,
        });
        let (watched, serving) = (shared.clone(), shared.clone());
        let port = relay(
            upstream,
            move || watched.stop.load(Ordering::SeqCst),
            move |client, server| {
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let h2 = Arc::new(AtomicBool::new(false));
                let requests = (client.try_clone().unwrap(), server.try_clone().unwrap());
                forward_requests(requests, serving.clone(), h2.clone());
                forward_answers(server, client, serving.clone(), h2);
            },
        );
        CountingProxy { port, shared }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests forwarded so far.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// The next answer to an HTTP/1.1 request is dropped, and its connection cut (HTTP/2,
    /// a replica's sync, is left alone).
    pub fn lose_next_answer(&self) {
        self.shared.lose_next_answer.store(true, Ordering::SeqCst);
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
    }
}

/// Client to server: counted, and delayed by the latency on a thread of its own. `h2` is
/// raised when the client speaks HTTP/2.
fn forward_requests((mut from, to): (TcpStream, TcpStream), shared: Arc<Shared>, h2: Arc<AtomicBool>) {
    let (send, delayed) = mpsc::channel::<(Instant, Vec<u8>)>();
    let latency = shared.latency;
    let mut to_writer = to.try_clone().unwrap();
    std::thread::spawn(move || {
        for (due, bytes) in delayed {
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if to_writer.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = to_writer.shutdown(Shutdown::Write);
    });
    std::thread::spawn(move || {
        let mut counter = RequestCounter::default();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            shared.requests.fetch_add(counter.feed(&buf[..n]), Ordering::SeqCst);
            h2.store(counter.is_h2(), Ordering::SeqCst);
            if send.send((Instant::now() + latency, buf[..n].to_vec())).is_err() {
                break;
            }
        }
        drop(to);
    });
}

/// Server to client, unless the answer is to be lost.
fn forward_answers(mut from: TcpStream, mut to: TcpStream, shared: Arc<Shared>, h2: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if !h2.load(Ordering::SeqCst) && shared.lose_next_answer.swap(false, Ordering::SeqCst) {
                let _ = to.shutdown(Shutdown::Both);
                let _ = from.shutdown(Shutdown::Both);
                return;
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// Finds where requests begin in a client's byte stream.
#[derive(Default)]
pub struct RequestCounter {
    buffer: Vec<u8>,
    state: State,
}

#[derive(Default)]
enum State {
    /// Nothing read yet: HTTP/1.1 or HTTP/2's preface.
    #[default]
    Start,
    /// HTTP/1.1, before a request's head.
    Head,
    /// HTTP/1.1, inside a body: bytes left.
    Body(usize),
    /// HTTP/1.1, a chunked body: at a chunk's size line.
    ChunkSize,
    /// Inside a chunk: bytes left, its CRLF included.
    Chunk(usize),
    /// After the last chunk, until the empty line.
    Trailer,
    /// HTTP/2 frames; the highest stream a client opened.
    Frames(u32),
}

impl RequestCounter {
    /// Whether the client speaks HTTP/2.
    pub fn is_h2(&self) -> bool {
        matches!(self.state, State::Frames(_))
    }

    /// Takes the next bytes; how many requests began in them.
    pub fn feed(&mut self, bytes: &[u8]) -> usize {
        self.buffer.extend_from_slice(bytes);
        let mut began = 0;
        loop {
            let (used, next, request) = match self.state {
                State::Start if self.buffer.len() < H2_PREFACE.len() && H2_PREFACE.starts_with(&self.buffer) => break,
                State::Start if self.buffer.starts_with(H2_PREFACE) => (H2_PREFACE.len(), State::Frames(0), false),
                State::Start => (0, State::Head, false),
                State::Head => {
                    let Some(end) = find(&self.buffer, b"\r\n\r\n") else { break };
                    let head = String::from_utf8_lossy(&self.buffer[..end]).to_ascii_lowercase();
                    let header = |name: &str| {
                        head.lines()
                            .find_map(|l| l.strip_prefix(name).map(|v| v.trim_start_matches(':').trim().to_owned()))
                    };
                    let next = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
                        State::ChunkSize
                    } else {
                        match header("content-length").and_then(|v| v.parse().ok()) {
                            Some(0) | None => State::Head,
                            Some(n) => State::Body(n),
                        }
                    };
                    (end + 4, next, true)
                }
                State::Body(left) => {
                    let used = left.min(self.buffer.len());
                    if used == 0 {
                        break;
                    }
                    (used, if used == left { State::Head } else { State::Body(left - used) }, false)
                }
                State::ChunkSize => {
                    let Some(end) = find(&self.buffer, b"\r\n") else { break };
                    let line = String::from_utf8_lossy(&self.buffer[..end]);
                    let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
                    (end + 2, if size == 0 { State::Trailer } else { State::Chunk(size + 2) }, false)
                }
                State::Chunk(left) => {
                    let used = left.min(self.buffer.len());
                    if used == 0 {
                        break;
                    }
                    (used, if used == left { State::ChunkSize } else { State::Chunk(left - used) }, false)
                }
                State::Trailer => {
                    let Some(end) = find(&self.buffer, b"\r\n") else { break };
                    (end + 2, if end == 0 { State::Head } else { State::Trailer }, false)
                }
                State::Frames(highest) => {
                    if self.buffer.len() < 9 {
                        break;
                    }
                    let length = u32::from_be_bytes([0, self.buffer[0], self.buffer[1], self.buffer[2]]) as usize;
                    if self.buffer.len() < 9 + length {
                        break;
                    }
                    let stream = u32::from_be_bytes([self.buffer[5], self.buffer[6], self.buffer[7], self.buffer[8]])
                        & 0x7fff_ffff;
                    // A HEADERS frame (type 1) on a stream the client had not opened yet.
                    let opens = self.buffer[3] == 1 && stream > highest;
                    (9 + length, State::Frames(if opens { stream } else { highest }), opens)
                }
            };
            self.buffer.drain(..used);
            self.state = next;
            began += usize::from(request);
        }
        began
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
