//! `harel-transport`: the ops CLI of the queue. It opens a queue (a file, or a libSQL
//! server's URL) as it is (`schema_as_is`), so it never makes tables in a file that is not a
//! queue nor upgrades a harel 0.9 one (whose looks show what its columns hold), runs one command through the library's inspection and repair calls, and prints a
//! table (or, with `--json`, one JSON document); or, with `serve`, keeps it open and serves
//! /metrics and a web console over HTTP (serve/). Exit codes: 0 done, 1 the queue or the
//! library failed (the message on stderr), 2 a usage error (clap's).

mod args;
mod output;
mod secret;
mod serve;
mod time;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use harel_transport::{DeadLetters, Error, Options, Page, Transport};

use args::{Cli, Command, DeadCommand, Global, LimitCommand, Listing, PurgeArgs, Selector, StatsArgs};
use output::Out;

/// What the binary prints before every message of its own.
pub const NAME: &str = "harel-transport";

fn main() -> ExitCode {
    refuse_token_flag();
    let cli = Cli::parse();
    let mut out = Out::new(cli.global.json);
    match run(&cli, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // stdout first: a table half printed before the failure stays in order.
            let _ = std::io::stdout().flush();
            eprintln!("{NAME}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A token on the command line is seen by every user of the machine (`ps`, /proc): the flag
/// does not exist, and asking for it says where a token goes instead (a usage error, 2).
fn refuse_token_flag() {
    for arg in std::env::args_os().skip(1) {
        let arg = arg.to_string_lossy();
        if arg == "--" {
            return;
        }
        let is = |flag: &str| arg == flag || arg.strip_prefix(flag).is_some_and(|rest| rest.starts_with('='));
        let whose = if is("--admin-token") {
            "set HAREL_ADMIN_TOKEN, or pass --admin-token-file FILE"
        } else if is("--auth-token") || is("--token") {
            "set HAREL_AUTH_TOKEN, or pass --auth-token-file FILE"
        } else {
            continue;
        };
        Cli::command()
            .error(
                ErrorKind::UnknownArgument,
                format!(
                    "a token is not taken on the command line, where every user of the machine sees it (ps): {whose}"
                ),
            )
            .exit();
    }
}

fn run(cli: &Cli, out: &mut Out) -> Result<(), String> {
    let databases: Vec<&str> = cli.global.database.iter().map(String::as_str).collect();
    let database = match databases.as_slice() {
        [d, ..] if !d.is_empty() => &databases,
        _ => Cli::command()
            .error(
                ErrorKind::MissingRequiredArgument,
                "no queue given: pass --database DATABASE (a file or a libsql://, http:// or https:// URL), \
                 or set HAREL_DATABASE",
            )
            .exit(),
    };
    if let Command::Serve(a) = &cli.command {
        // The token first: a server that cannot take changes as asked does not start.
        let admin = serve::AdminToken::load(a.admin_token_file.as_deref())?;
        let transport = open(database, &cli.global)?;
        return serve::run(transport, admin, a, &cli.global.prefix);
    }
    let transport = open(database, &cli.global)?;
    out.absent = transport.absent().to_vec();
    out.shards = transport.shard_count();
    let result = match &cli.command {
        Command::Stats(a) => stats(&transport, a, out),
        Command::Groups(a) => {
            let state = a.state.map(args::StateArg::state);
            let page = list(&a.page, "groups", |cursor, limit| transport.groups(state, cursor, limit))?;
            out.groups(&page, a.state.map(|s| s.state().name()));
            Ok(())
        }
        Command::Peek(a) => {
            let page = list(&a.page, "peek", |cursor, limit| transport.peek(&a.group, cursor, limit))?;
            out.peek(&a.group, &page);
            Ok(())
        }
        Command::Dead(DeadCommand::List(a)) => {
            let group = a.group.as_deref();
            let page = list(&a.page, "dead list", |cursor, limit| transport.dead_letters(group, cursor, limit))?;
            out.dead_letters(&page, group);
            Ok(())
        }
        Command::Archive(a) => {
            let group = a.group.as_deref();
            let page = list(&a.page, "archive", |cursor, limit| transport.archive(group, cursor, limit))?;
            out.archive(&page, group);
            Ok(())
        }
        Command::Dead(DeadCommand::Redrive(s)) => {
            let n = with_selector(s, |which| match s.shard {
                Some(shard) => transport.redrive_on(shard, which),
                None => transport.redrive(which),
            })
            .map_err(|e| failed("dead redrive", &e))?;
            out.redriven(n, s);
            Ok(())
        }
        Command::Dead(DeadCommand::Purge(s)) => {
            let n = with_selector(s, |which| match s.shard {
                Some(shard) => transport.purge_dead_on(shard, which),
                None => transport.purge_dead(which),
            })
            .map_err(|e| failed("dead purge", &e))?;
            out.dead_purged(n, s);
            Ok(())
        }
        Command::Purge(PurgeArgs { group: Some(g), .. }) => {
            let n = transport.purge_group(g).map_err(|e| failed("purge", &e))?;
            out.purged(n, Some(g));
            Ok(())
        }
        Command::Purge(PurgeArgs { group: None, all, .. }) => {
            assert!(*all, "clap requires --group or --all");
            let n = transport.purge().map_err(|e| failed("purge", &e))?;
            out.purged(n, None);
            Ok(())
        }
        Command::Release(a) => {
            let released = transport.release(&a.group).map_err(|e| failed("release", &e))?;
            out.released(&a.group, released);
            Ok(())
        }
        Command::Pause(a) => {
            let paused = transport.pause(a.target()).map_err(|e| failed("pause", &e))?;
            out.paused(a.target(), paused);
            Ok(())
        }
        Command::Resume(a) => {
            let resumed = transport.resume(a.target()).map_err(|e| failed("resume", &e))?;
            out.resumed(a.target(), resumed);
            Ok(())
        }
        Command::Pauses => {
            let pauses = transport.pauses().map_err(|e| failed("pauses", &e))?;
            out.pauses(&pauses);
            Ok(())
        }
        Command::Limit(LimitCommand::Set(a)) => {
            let limit = a.limit();
            transport.set_limit(&a.routing_key, limit).map_err(|e| failed("limit set", &e))?;
            out.limit_set(&a.routing_key, limit);
            Ok(())
        }
        Command::Limit(LimitCommand::List) => {
            let limits = transport.limits().map_err(|e| failed("limit list", &e))?;
            out.limits(&limits);
            Ok(())
        }
        Command::Limit(LimitCommand::Remove(a)) => {
            transport.remove_limit(&a.routing_key).map_err(|e| failed("limit remove", &e))?;
            out.limit_removed(&a.routing_key);
            Ok(())
        }
        Command::Serve(_) => unreachable!("serve returned above"),
    };
    transport.close();
    result
}

/// Opens the queue as it is, creating and upgrading nothing: a path that does not exist is
/// refused here (libSQL would make an empty file), a file without harel's tables by the
/// library; a harel 0.9 file opens, and the library refuses every change to it.
fn open(databases: &[&str], global: &Global) -> Result<Transport, String> {
    let what = match databases {
        [database] => format!("open {database:?}"),
        _ => format!("open the {} shards", databases.len()),
    };
    let is_url = |d: &str| ["libsql://", "http://", "https://"].iter().any(|s| d.starts_with(s));
    for database in databases {
        if !is_url(database) && *database != ":memory:" && !std::path::Path::new(database).exists() {
            return Err(format!(
                "open {database:?}: no such file (this tool opens existing queues and creates none: check the \
                 path, or give a server's URL)"
            ));
        }
    }
    let token = secret::read(global.auth_token_file.as_deref(), "--auth-token-file", "HAREL_AUTH_TOKEN")?;
    let mut options = Options::new();
    options.prefix(&global.prefix).map_err(|e| format!("--prefix: {e}"))?;
    options.schema_as_is(true);
    if databases.iter().any(|d| is_url(d)) {
        options.auth_token(token.as_deref());
    }
    Transport::open_shards(databases, &options).map_err(|e| {
        let message = e.message();
        let message = match message.strip_prefix("open: ") {
            _ if message.starts_with(&what) => message.to_owned(),
            Some(rest) => format!("{what}: {rest}"),
            None => format!("{what}: {message}"),
        };
        match e {
            // harel's tables are missing: often the prefix is not the queue's.
            Error::Database(_) if message.contains("not a queue") => {
                let prefix = &global.prefix;
                format!("{message}: this tool creates no tables (is it a queue of prefix {prefix:?}? see --prefix)")
            }
            _ => message,
        }
    })
}

/// The library's message, with the command named first unless it already is.
pub fn failed(command: &str, e: &Error) -> String {
    let message = e.message();
    let verb = command.rsplit(' ').next().unwrap_or(command);
    if message.starts_with(command) || message.starts_with(verb) {
        message.to_owned()
    } else {
        format!("{command}: {message}")
    }
}

/// One page from `--cursor`, or with `--all` every page from there to the end (then `next`
/// is None).
fn list<T>(
    page: &Listing,
    command: &str,
    mut fetch: impl FnMut(Option<&str>, usize) -> harel_transport::Result<Page<T>>,
) -> Result<Page<T>, String> {
    let first = fetch(page.cursor.as_deref(), page.limit).map_err(|e| failed(command, &e))?;
    if !page.all {
        return Ok(first);
    }
    let Page { mut items, mut next } = first;
    while let Some(cursor) = next.take() {
        let more = fetch(Some(&cursor), page.limit).map_err(|e| failed(command, &e))?;
        items.extend(more.items);
        next = more.next;
    }
    Ok(Page { items, next: None })
}

fn with_selector<T>(s: &Selector, call: impl FnOnce(DeadLetters<'_>) -> T) -> T {
    if let Some(group) = &s.group {
        call(DeadLetters::Group(group))
    } else if !s.seq.is_empty() {
        call(DeadLetters::Seqs(&s.seq))
    } else {
        assert!(s.all, "clap requires one of --all, --group, --seq");
        call(DeadLetters::All)
    }
}

/// Once, or with `--watch` every N seconds until Ctrl-C (or `--count` refreshes). A busy
/// or unreachable queue during a watch is reported on stderr and tried again at the next
/// refresh; any other failure ends it.
fn stats(transport: &Transport, a: &StatsArgs, out: &Out) -> Result<(), String> {
    let Some(every) = a.watch else {
        let stats = transport.stats().map_err(|e| failed("stats", &e))?;
        let shards = match transport.shard_count() {
            1 => Vec::new(),
            _ => transport.shard_stats().map_err(|e| failed("stats", &e))?,
        };
        out.stats(&stats, &shards);
        return Ok(());
    };
    let clear = !out.json && std::io::stdout().is_terminal();
    let mut shown = 0u64;
    loop {
        match transport.stats() {
            Ok(stats) => out.watched_stats(&stats, every, shown, clear),
            Err(e @ (Error::Busy(_) | Error::Connect(_))) => {
                eprintln!("{NAME}: {} (trying again in {})", failed("stats", &e), time::seconds(every));
            }
            Err(e) => return Err(failed("stats", &e)),
        }
        shown += 1;
        if a.count.is_some_and(|n| shown >= n) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs_f64(every));
    }
}
