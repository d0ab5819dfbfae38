//! A real libSQL server (sqld) for the tests of tests/server.rs: found through `HAREL_SQLD`
//! (the path to the binary) or `sqld` on `PATH`, started on a loopback port of the test's
//! choosing with a database directory of its own, killed and restarted at will, and stopped
//! when the test ends. Also: a plain libsql connection to look at what the server holds, and
//! a TCP proxy that can hold back one request to stall a client mid-transaction.
//!
//! sqld is not in any package registry; build it from the public `tursodatabase/libsql`
//! repository (package `libsql-server`, binary `sqld`) and point `HAREL_SQLD` at it.
//! Without it every test of tests/server.rs passes as skipped and says so on stderr.
//! The benchmark's part 5 (bench/server.rs) starts its server with this too. At the end,
//! what the server test files share: one test at a time, the skip, and how a transport
//! reaches the server (remote or replica).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use harel_transport::{Options, Transport};

/// An Ed25519 public key (raw, URL-safe base64) that sqld takes with `--auth-jwt-key-file`,
/// and tokens for it. The private key was thrown away: these are test fixtures, good only
/// against a server started by these tests. The claims are `{"a":"rw"}`, with no expiry.
pub const JWT_PUBLIC_KEY: &str = "gsewOen8YfQnmiDN6fsbQjpjRtbOrIgqYXUT5H3_GSo";
pub const GOOD_TOKEN: &str = "eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9.eyJhIjoicncifQ.\
NAeWNIm63uvnc1aYbCtNblqzz8Rsqz-oJwzEBgrXI1ZszPEVoJHRj67TDSMJ1jxoWfRnSbcahMO0LU5lQe0eBA";
/// The same claims signed by another key: a well-formed token the server must refuse.
pub const WRONG_TOKEN: &str = "eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9.eyJhIjoicncifQ.\
cKA3onAE0f7pC3tbZFN48PXSCqmw_SkBAGTcskAiDP7dPlvwnEodtr1rMoTiGsuxQydx2t8sToLGe2x_7jE5BQ";

/// Writes straight to the process's stderr, past libtest's output capture, so a skip is
/// seen in a plain `cargo test` run too.
pub fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

/// The sqld binary to test against: `HAREL_SQLD`, else `sqld` on `PATH`.
pub fn binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("HAREL_SQLD").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() { Ok(path) } else { Err(format!("HAREL_SQLD={} is not a file", path.display())) };
    }
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).map(|dir| dir.join("sqld")).find(|p| p.is_file()));
    on_path.flatten().ok_or_else(|| "no sqld: set HAREL_SQLD to the sqld binary or put sqld on PATH".to_owned())
}

/// The sqld binary, or `None` after a one-line skip notice naming the test.
pub fn binary_or_skip(test: &str) -> Option<PathBuf> {
    match binary() {
        Ok(path) => Some(path),
        Err(reason) => {
            let ci = if std::env::var_os("CI").is_some() { " (CI runs without sqld)" } else { "" };
            say(&format!("skipped: {test}: {reason}{ci}"));
            None
        }
    }
}

/// A loopback port nobody listens on right now, and none this process handed out before:
/// the system may give a port back as soon as it is released, before the server it was
/// meant for binds it, and a second server then took the same port (a test of three
/// servers got two URLs alike; seen under load).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// One sqld process serving one database directory on one loopback port. Killing and
/// starting it again keeps both, as a crashed and restarted server would.
pub struct Sqld {
    binary: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    auth: bool,
    /// More command-line arguments, e.g. a log compaction schedule.
    args: Vec<String>,
    child: Option<Child>,
    starts: usize,
}

impl Sqld {
    /// Starts sqld and waits until it answers `/health`. With `auth`, it accepts only
    /// tokens signed for [`JWT_PUBLIC_KEY`] (use [`GOOD_TOKEN`]).
    pub fn start(binary: &Path, auth: bool) -> Sqld {
        Sqld::start_with(binary, auth, &[])
    }

    /// As `start`, with more arguments for sqld.
    pub fn start_with(binary: &Path, auth: bool, args: &[&str]) -> Sqld {
        let dir = tempfile::tempdir().expect("tempdir for sqld");
        if auth {
            std::fs::write(dir.path().join("jwt.key"), JWT_PUBLIC_KEY).unwrap();
        }
        let args = args.iter().map(|a| (*a).to_owned()).collect();
        let mut sqld = Sqld { binary: binary.to_owned(), dir, port: free_port(), auth, args, child: None, starts: 0 };
        sqld.launch();
        sqld
    }

    /// `http://127.0.0.1:PORT`: the URL of a remote connection, and a replica's `sync_url`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The token to connect with: `Some(GOOD_TOKEN)` when the server checks tokens.
    pub fn token(&self) -> Option<&'static str> {
        self.auth.then_some(GOOD_TOKEN)
    }

    /// A scratch directory that lives as long as the server (replica files, logs).
    pub fn scratch(&self) -> &Path {
        self.dir.path()
    }

    /// SIGKILL: no shutdown, nothing flushed beyond what sqld already made durable.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and database directory.
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// SIGSTOP: the server keeps its sockets open and answers nothing (a hung host).
    pub fn pause(&mut self) {
        assert!(self.signal("-STOP"), "kill -STOP sqld");
        // kill returns once the signal is sent, and each of sqld's threads stops as it next
        // runs: on a loaded machine a request sent at once could still be answered.
        let pid = self.child.as_ref().map(Child::id).expect("a running sqld");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !all_threads_stopped(pid) {
            assert!(Instant::now() < deadline, "sqld's threads did not all stop within 10 s of SIGSTOP");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// SIGCONT after `pause`.
    pub fn resume(&mut self) {
        assert!(self.signal("-CONT"), "kill -CONT sqld");
    }

    fn signal(&self, signal: &str) -> bool {
        let Some(child) = self.child.as_ref() else {
            return false;
        };
        let status = Command::new("kill").args([signal, &child.id().to_string()]).stderr(Stdio::null()).status();
        matches!(status, Ok(s) if s.success())
    }

    fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// The last lines of every log this server wrote, for a failure message.
    pub fn log_tail(&self) -> String {
        let mut out = String::new();
        for n in 0..self.starts {
            let text = std::fs::read_to_string(self.log_path(n)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            out.push_str(&format!("--- sqld run {n}\n"));
            for line in &lines[lines.len().saturating_sub(20)..] {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    fn log_path(&self, n: usize) -> PathBuf {
        self.dir.path().join(format!("sqld-{n}.log"))
    }

    fn launch(&mut self) {
        let log = std::fs::File::create(self.log_path(self.starts)).expect("sqld log file");
        let mut command = Command::new(&self.binary);
        command
            .arg("--db-path")
            .arg(self.dir.path().join("data.sqld"))
            .arg("--http-listen-addr")
            .arg(format!("127.0.0.1:{}", self.port))
            .arg("--no-welcome")
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        if self.auth {
            command.arg("--auth-jwt-key-file").arg(self.dir.path().join("jwt.key"));
        }
        // What the caller's environment says about sqld must not change the server under test.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("SQLD_") {
                command.env_remove(key);
            }
        }
        self.child = Some(command.spawn().unwrap_or_else(|e| panic!("start {}: {e}", self.binary.display())));
        self.starts += 1;
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if !self.is_running() {
                panic!("sqld exited at start\n{}", self.log_tail());
            }
            if health(self.port) {
                return;
            }
            if Instant::now() > deadline {
                panic!("sqld did not answer /health within 30 s\n{}", self.log_tail());
            }
            // Short: tests start a server per check, and sqld is up in tens of milliseconds.
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Sqld {
    fn drop(&mut self) {
        if std::thread::panicking() {
            say(&format!("the test failed; the server's log:\n{}", self.log_tail()));
        }
        self.signal("-CONT"); // a paused server would not die of SIGKILL any sooner, but be sure
        self.kill();
    }
}

/// Every thread of process `pid` is stopped by a signal (state `T` in /proc).
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|task| {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // The state comes after the command name, which is in parentheses.
        stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
    })
}

/// `GET /health` answered 200.
fn health(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200")
}

/// A plain libsql remote connection to the server, to see what it holds: not the
/// transport's connection, and opened anew for every question (a remote stream left idle
/// for 10 s expires).
pub struct ServerSql {
    url: String,
    token: String,
    rt: tokio::runtime::Runtime,
}

impl ServerSql {
    pub fn new(url: &str, token: Option<&str>) -> ServerSql {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        ServerSql { url: url.to_owned(), token: token.unwrap_or_default().to_owned(), rt }
    }

    pub fn try_rows(&self, sql: &str) -> libsql::Result<Vec<Vec<String>>> {
        self.rt.block_on(async {
            let db = libsql::Builder::new_remote(self.url.clone(), self.token.clone()).build().await?;
            let conn = db.connect()?;
            let mut rows = conn.query(sql, ()).await?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().await? {
                let mut values = Vec::new();
                for i in 0..row.column_count() {
                    values.push(match row.get_value(i)? {
                        libsql::Value::Null => "NULL".to_owned(),
                        libsql::Value::Integer(n) => n.to_string(),
                        libsql::Value::Real(r) => r.to_string(),
                        libsql::Value::Text(s) => s,
                        libsql::Value::Blob(b) => format!("{b:?}"),
                    });
                }
                out.push(values);
            }
            Ok(out)
        })
    }

    pub fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        self.try_rows(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    pub fn count(&self, sql: &str) -> i64 {
        self.rows(sql)[0][0].parse().unwrap_or_else(|e| panic!("{sql}: not a number: {e}"))
    }

    pub fn execute(&self, sql: &str) {
        self.rt
            .block_on(async {
                let db = libsql::Builder::new_remote(self.url.clone(), self.token.clone()).build().await?;
                db.connect()?.execute(sql, ()).await
            })
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

/// A loopback listener on a port of its own (returned) that connects each client to
/// `upstream` and hands both streams (the client's made blocking) to `serve`, until
/// `stopped()`: the proxies' shared front.
pub fn relay(
    upstream: u16,
    stopped: impl Fn() -> bool + Send + 'static,
    serve: impl Fn(TcpStream, TcpStream) + Send + 'static,
) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        while !stopped() {
            match listener.accept() {
                Ok((client, _)) => {
                    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                        let _ = client.shutdown(Shutdown::Both);
                        continue;
                    };
                    let _ = client.set_nonblocking(false);
                    serve(client, server);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    });
    port
}

/// A loopback TCP proxy in front of a server. It forwards bytes as they come, except that
/// it can be told to hold back the next client-to-server chunk containing some text (the
/// SQL of one statement) for a while: a client stalled in the middle of a transaction.
pub struct StallProxy {
    port: u16,
    stall: Armed,
    stalled: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl StallProxy {
    pub fn start(upstream: u16) -> StallProxy {
        let stall: Armed = Arc::new(Mutex::new(None));
        let stalled = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (stall2, stalled2, stop2) = (stall.clone(), stalled.clone(), stop.clone());
        let port = relay(
            upstream,
            move || stop2.load(Ordering::SeqCst),
            move |client, server| {
                pipe(
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    Some((stall2.clone(), stalled2.clone())),
                );
                pipe(server, client, None);
            },
        );
        StallProxy { port, stall, stalled, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Holds back the next request that contains `text` for `delay`, once.
    pub fn stall_next(&self, text: &str, delay: Duration) {
        self.stalled.store(false, Ordering::SeqCst);
        *self.stall.lock().unwrap() = Some((text.as_bytes().to_vec(), delay));
    }

    /// Whether a stall armed by `stall_next` has begun.
    pub fn has_stalled(&self) -> bool {
        self.stalled.load(Ordering::SeqCst)
    }
}

impl Drop for StallProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The text a proxied request must contain to be held back, and for how long; taken by
/// the first request that matches.
type Armed = Arc<Mutex<Option<(Vec<u8>, Duration)>>>;
/// What a client-to-server pipe watches: the armed stall and the flag it raises.
type Stall = (Armed, Arc<AtomicBool>);

fn pipe(mut from: TcpStream, mut to: TcpStream, stall: Option<Stall>) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if let Some((armed, stalled)) = &stall {
                let delay = {
                    let mut armed = armed.lock().unwrap();
                    match armed.as_ref() {
                        Some((text, delay)) if contains(&buf[..n], text) => {
                            let delay = *delay;
                            *armed = None;
                            Some(delay)
                        }
                        _ => None,
                    }
                };
                if let Some(delay) = delay {
                    stalled.store(true, Ordering::SeqCst);
                    std::thread::sleep(delay);
                }
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

// ---------------------------------------------------------------------------------------
// What the server tests of each file share (tests/server.rs, tests/server_requests.rs)

static SERIAL: RwLock<()> = RwLock::new(());

/// One test of a file at a time (they share the cores with sqld, and some measure); a failed
/// one does not stop the others.
pub fn serial() -> RwLockWriteGuard<'static, ()> {
    SERIAL.write().unwrap_or_else(|e| e.into_inner())
}

/// For a test that spends its time waiting out a clock (sqld's 5 s and 10 s rules, a
/// stall, a timeout) and barely uses the cores: it may run beside another such test, never
/// beside a `serial` one. Their waits then overlap instead of adding up.
pub fn mostly_waiting() -> RwLockReadGuard<'static, ()> {
    SERIAL.read().unwrap_or_else(|e| e.into_inner())
}

/// The sqld binary, or a skip notice and a return from the test.
#[macro_export]
macro_rules! sqld_or_skip {
    ($test:expr) => {
        match $crate::sqld::binary_or_skip($test) {
            Some(binary) => binary,
            None => return,
        }
    };
}

/// The two ways a transport reaches a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `http://127.0.0.1:PORT` opened as a remote database.
    Remote,
    /// A local file of its own with `sync_url` = `http://127.0.0.1:PORT`.
    Replica,
}

impl Via {
    pub const BOTH: [Via; 2] = [Via::Remote, Via::Replica];

    pub fn name(self) -> &'static str {
        match self {
            Via::Remote => "remote",
            Via::Replica => "replica",
        }
    }

    pub fn parse(s: &str) -> Via {
        match s {
            "remote" => Via::Remote,
            "replica" => Via::Replica,
            other => panic!("unknown mode {other}"),
        }
    }
}

/// Numbers the replica files of this process: every `open` of a replica, by any client,
/// gets a file of its own.
static REPLICAS: AtomicUsize = AtomicUsize::new(0);

/// How clients of one test reach its server (directly or through a proxy's URL).
pub struct Client {
    pub via: Via,
    url: String,
    token: Option<String>,
    dir: PathBuf,
}

impl Client {
    pub fn new(via: Via, url: &str, token: Option<&str>, dir: &Path) -> Client {
        Client { via, url: url.to_owned(), token: token.map(str::to_owned), dir: dir.to_owned() }
    }

    pub fn of(via: Via, server: &Sqld) -> Client {
        Client::new(via, &server.url(), server.token(), server.scratch())
    }

    /// A path for a replica file of its own.
    pub fn next_replica_path(&self) -> String {
        let n = REPLICAS.fetch_add(1, Ordering::SeqCst);
        self.dir.join(format!("replica-{}-{n}.db", std::process::id())).to_str().unwrap().to_owned()
    }

    /// Opens a transport with `options` plus this client's server, token and mode.
    pub fn try_open(&self, options: &Options) -> harel_transport::Result<Transport> {
        let mut o = options.clone();
        o.auth_token(self.token.as_deref());
        match self.via {
            Via::Remote => Transport::open(&self.url, &o),
            Via::Replica => {
                o.sync_url(Some(&self.url)).unwrap();
                Transport::open(&self.next_replica_path(), &o)
            }
        }
    }

    pub fn open(&self, options: &Options) -> Transport {
        self.try_open(options).unwrap_or_else(|e| panic!("open ({}): {e:?}", self.via.name()))
    }

    /// A transport on tables under `prefix`, with `options` otherwise.
    pub fn with_prefix(&self, prefix: &str, options: &Options) -> Transport {
        let mut o = options.clone();
        o.prefix(prefix).unwrap();
        self.open(&o)
    }
}
