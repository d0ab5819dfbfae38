//! Builds the queue of tests/console_queue (known counts, a `<script>` dead letter, a group
//! id with markup, two archived messages) in a new file, for the browser test of the console
//! (tests/console): `console_queue PATH`. Prints the dead letter's seq.

#[path = "../tests/console_queue/mod.rs"]
mod console_queue;

use harel_transport::Transport;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: console_queue PATH (a queue file to create)");
        std::process::exit(2);
    };
    if std::path::Path::new(&path).exists() {
        eprintln!("console_queue: {path:?} exists; it builds a new queue");
        std::process::exit(1);
    }
    let t = Transport::open(&path, &console_queue::options())
        .unwrap_or_else(|e| panic!("open {path:?}: {}", e.message()));
    println!("{}", console_queue::build(&t));
    t.close();
}
