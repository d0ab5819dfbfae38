//! The command line, as clap reads it: global options (which queue, how to reach it, how to
//! print) usable before or after the command, and one command.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use harel_transport::{GroupState, Limit, PauseTarget, Rate, MAX_PAGE};

const ABOUT: &str = "Look inside a harel-transport queue and repair it";

const LONG_ABOUT: &str = "\
Look inside a harel-transport queue and repair it: counts, groups, a group's messages, dead
letters, the archive of acked messages, pauses, limits; purge, redrive, release; pause and
resume a group, a routing key or the whole queue; limit a routing key's concurrency and rate;
serve /metrics and a web console.

The queue is a local file or a libSQL server's URL (libsql://, http://, https://), given with
--database or HAREL_DATABASE. A sharded queue is given as its databases, each with -d, in
their shard order. It is opened as it is: nothing is created, and a file without the queue's
tables (of --prefix) is refused.

A server's token comes from HAREL_AUTH_TOKEN or from --auth-token-file FILE (which wins),
never from an argument: every user of the machine sees the command line (ps).";

const AFTER_HELP: &str = "\
Output: readable tables; with --json one JSON document per command (for --watch, one line
per refresh). Exit status: 0 done, 1 the queue or the library failed (the message on
stderr), 2 a usage error.

Examples:
  harel-transport -d queue.db stats
  HAREL_DATABASE=queue.db harel-transport stats --watch 5
  harel-transport -d queue.db groups --state leased
  harel-transport -d queue.db pause --routing-key eu
  harel-transport -d queue.db limit set --routing-key payments --concurrency 5
  harel-transport -d queue.db archive --group orders-7
  HAREL_AUTH_TOKEN=... harel-transport -d https://queue.example.com dead list --json";

const STATS_EXAMPLES: &str = "\
Examples:
  harel-transport -d queue.db stats
  harel-transport -d queue.db stats --watch
  harel-transport -d queue.db stats --watch 10 --json";

const GROUPS_EXAMPLES: &str = "\
Examples:
  harel-transport -d queue.db groups --state leased
  harel-transport -d queue.db groups --all --json";

const ARCHIVE_ABOUT: &str = "\
The archive: the messages acked while the archive was on, in seq order (a sharded queue's
shard after shard), one line each: seq, group, attempts (claims, the acked one included), the
worker that acked it, when it was published, when the acked claim took it, when it was acked,
its headers (when a message of the page has any) and its event (cut at 60 characters in the
table; --json has it whole, as the exact text stored). With --group, that group's history, in
order.

An ack archives only when the transport that makes it was opened with the archive option (a
retention in seconds: Options::archive, harel_options_set_archive); it is off by default, and
then an ack only deletes. Archived messages are kept for the retention, then pruned by later
acks. Only acks archive: a lost lease's ack, a dead letter, an expired or purged message do not.";

const ARCHIVE_EXAMPLES: &str = "\
Examples:
  harel-transport -d queue.db archive
  harel-transport -d queue.db archive --group orders-7 --all
  harel-transport -d queue.db archive --limit 20 --json";

const REDRIVE_EXAMPLES: &str = "\
One of --all, --group, --seq is required.

Examples:
  harel-transport -d queue.db dead redrive --seq 17 18
  harel-transport -d queue.db dead redrive --group orders-7";

const DEAD_PURGE_EXAMPLES: &str = "\
One of --all, --group, --seq is required.

Examples:
  harel-transport -d queue.db dead purge --seq 17
  harel-transport -d queue.db dead purge --all";

const PAUSE_EXAMPLES: &str = "\
One of --group, --routing-key, --queue is required.

Examples:
  harel-transport -d queue.db pause --group orders-7
  harel-transport -d queue.db pause --routing-key eu
  harel-transport -d queue.db pause --queue";

const RESUME_EXAMPLES: &str = "\
One of --group, --routing-key, --queue is required.

Examples:
  harel-transport -d queue.db resume --group orders-7
  harel-transport -d queue.db resume --queue";

const LIMIT_ABOUT: &str = "\
Limits on a routing key's groups (the key they were published with), for every worker of every
process: a concurrency (at most N of their messages leased at once) and a rate (a token bucket:
R leases a second, at most B kept, so a key idle for a while may take B at once). A claim
passes over a group whose key has no room, holds it, and serves the others; the held groups
are served again when the key has room (an ack, a nack, a lease ending, a token due, a larger
limit, or the limit removed). Stored in the queue: every process sees a change at its next
claim, and limits outlive restarts. On a sharded queue each shard holds the limit for its own
groups (a key's ceiling is the limit times the shards), and `limit list` sums their use.
harel 0.9's Python workers know nothing of limits.";

const LIMIT_SET_ABOUT: &str = "\
Set a routing key's limits (--routing-key K): a concurrency (--concurrency N: at most N of its
groups' messages leased at once, 1 to 1000000), a rate (--rate R --burst B: R leases a second,
above 0 and at most 1000000, with at most B tokens kept, 1 to 1000000), or both. They replace
the key's limits: a kind not given is off. In force at every process's next claim.";

const LIMIT_SET_EXAMPLES: &str = "\
One of --concurrency, --rate (with --burst) is required; both may be given.

Examples:
  harel-transport -d queue.db limit set --routing-key payments --concurrency 5
  harel-transport -d queue.db limit set --routing-key email --rate 10 --burst 20
  harel-transport -d queue.db limit set --routing-key eu --concurrency 2 --rate 0.5 --burst 1";

const LIMIT_LIST_ABOUT: &str = "\
The limits in force, one line per routing key, by key: its concurrency and the leases of its
groups' messages running now (IN USE), its rate, burst and the tokens in its bucket now, and
how many of its groups a claim holds until the key has room (HELD). \"-\" where the key has no
such limit.";

const LIMIT_REMOVE_ABOUT: &str = "\
Remove a routing key's limits (--routing-key K): the groups held for it are served again at
once. A key without a limit is refused (exit 1).";

const SERVE_ABOUT: &str = "\
Serve the queue over HTTP until stopped: /metrics in Prometheus' text format (counts per
priority and state, paused, held and retrying groups among them, dead letters and the expired
among them, the oldest ready message's age, the oldest overdue lease; each limited routing
key's use) and a web console at / (stats, pauses, limits, groups, a group's messages, dead
letters, the archive; redrive, purge, release, pause, resume, set and remove a limit). It
prints the address it listens on, then one audit line on stderr per change.

Looks are open to whoever reaches the address, so it listens on loopback unless told
otherwise. Every change needs the admin token, from HAREL_ADMIN_TOKEN or --admin-token-file
FILE (never an argument): without one the console only looks.";

const SERVE_EXAMPLES: &str = "\
Examples:
  HAREL_ADMIN_TOKEN=$(cat token) harel-transport -d queue.db serve
  harel-transport -d queue.db serve --listen 0.0.0.0:9464 --admin-token-file /etc/harel/admin-token";

#[derive(Debug, Parser)]
#[command(
    name = "harel-transport",
    version = harel_transport::VERSION,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The queue: a file, or a libSQL server's URL (libsql://, http://, https://); a sharded
    /// queue's databases, one -d each, in shard order
    #[arg(short = 'd', long, global = true, env = "HAREL_DATABASE", value_name = "DATABASE")]
    pub database: Vec<String>,

    /// The tables' prefix: <PREFIX>_transport_messages, ...
    #[arg(long, global = true, default_value = "harel", value_name = "PREFIX")]
    pub prefix: String,

    /// Read the server's token from FILE (its first line); else HAREL_AUTH_TOKEN is used
    #[arg(long, global = true, value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,

    /// Print JSON instead of tables
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Counts: messages, groups by state, dead letters, per priority
    #[command(long_about = "\
Counts at one instant: messages, groups (ready, leased, parked, delayed, paused; held: those a
routing key's limit holds; retrying: those whose lapsed lease waits its retry backoff), dead letters
(and of them the expired, when any: messages whose ttl or expires_at passed undelivered), the age of
the oldest ready message, the soonest end of a lease or park, and the groups per priority.",
        after_help = STATS_EXAMPLES)]
    Stats(StatsArgs),

    /// The groups, one line each: state, depth, head age, holder, lease end, ...
    #[command(long_about = "\
The groups, one line each, in group id order: the head's state (ready, leased to a worker,
parked by a nack with a delay, delayed at its publish), paused (a pause names the group),
held (a limit of its routing key has no room) or retrying (a lapsed lease's backoff), how
many messages, the head's age, who holds it and when the lease or park ends, the
priority, routing key and the head's attempts.",
        after_help = GROUPS_EXAMPLES)]
    Groups(GroupsArgs),

    /// A group's messages, oldest (the head) first
    #[command(long_about = "\
A group's messages, oldest (the head) first: seq, attempts, the holder of the head's lease,
when it ends, when each was published, the backoff its last claim drew under a retry policy
(RETRY, \"retry in 6.0 s\", when a message of the page has one: its nack without a delay, or
its lease's lapse, waits that long before the next claim), and the event (cut at 100
characters in the table; --json has it whole, as the exact text stored).")]
    Peek(PeekArgs),

    /// Dead letters: list them, redrive them into their groups, purge them
    #[command(subcommand)]
    Dead(DeadCommand),

    /// The archive of acked messages, in seq order (a group's history with --group)
    #[command(long_about = ARCHIVE_ABOUT, after_help = ARCHIVE_EXAMPLES)]
    Archive(ArchiveArgs),

    /// Delete a group's messages (--group), or every message and group (--all)
    #[command(long_about = "\
Delete a group's messages (--group G), or every message and group of the queue (--all).
Dead letters are kept (see `dead purge`). A worker holding a lease on a deleted message
gets a lost lease at its ack or nack.")]
    Purge(PurgeArgs),

    /// Free a group's head now: end its lease or park
    #[command(long_about = "\
Free a group's head now: end the lease of the worker holding it (a stuck or dead worker) or
the park of a nack with a delay, so the next claim can take it. The holder's ack or nack then
finds its lease lost. Prints whether anything was held.")]
    Release(ReleaseArgs),

    /// Pause a group, a routing key or the whole queue: no claim takes their messages
    #[command(long_about = "\
Pause a group (--group G, whether or not it has messages now), every group published with a
routing key (--routing-key K), or the whole queue (--queue: every group, and every group made
while the pause lasts). No claim takes a paused group's messages, which stay in order;
publishes go on, into paused groups too; a lease taken before the pause finishes (ack, nack,
extend). The pause is stored in the queue: every process sees it, and it lasts, restarts
included, until `resume`. Prints whether the pause is new or was there already.",
        after_help = PAUSE_EXAMPLES)]
    Pause(PauseArgs),

    /// End a pause: its groups are served again, unless another pause names them
    #[command(long_about = "\
End the pause of a group (--group G), of a routing key (--routing-key K) or of the whole
queue (--queue). The groups it named that no other pause names are served again at once,
each from its head; a group paused on its own stays paused when the queue is resumed, and
vice versa. Prints whether there was such a pause.",
        after_help = RESUME_EXAMPLES)]
    Resume(PauseArgs),

    /// The pauses in force: kind (queue, group, routing_key), name, since when
    #[command(long_about = "\
The pauses in force, one line each: its kind (queue, group or routing_key), the group id or
routing key it names (\"-\" for the queue), and since when. The queue's pause first, then by
kind and name. `groups --state paused` lists the groups they hold.")]
    Pauses,

    /// Limits on a routing key: set one (concurrency, rate), list them with their use, remove one
    #[command(subcommand, long_about = LIMIT_ABOUT)]
    Limit(LimitCommand),

    /// Serve /metrics (Prometheus) and a web console over HTTP
    #[command(long_about = SERVE_ABOUT, after_help = SERVE_EXAMPLES)]
    Serve(ServeArgs),
}

#[derive(Debug, Subcommand)]
pub enum LimitCommand {
    /// Set a routing key's limits: a concurrency, a rate (with its burst), or both
    #[command(long_about = LIMIT_SET_ABOUT, after_help = LIMIT_SET_EXAMPLES)]
    Set(LimitSetArgs),

    /// The limits in force: key, concurrency, in use, rate, burst, tokens, held groups
    #[command(long_about = LIMIT_LIST_ABOUT)]
    List,

    /// Remove a routing key's limits: its held groups are served again at once
    #[command(long_about = LIMIT_REMOVE_ABOUT)]
    Remove(LimitKeyArgs),
}

/// What `limit set` sets: a concurrency, a rate with its burst, or both; never neither. The
/// numbers' ranges are the library's to check (its refusal names the value).
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("kind").required(true).multiple(true).args(["concurrency", "rate"])))]
pub struct LimitSetArgs {
    /// The routing key whose groups are limited
    #[arg(long, value_name = "KEY")]
    pub routing_key: String,

    /// At most N of its groups' messages leased at once (1 to 1000000)
    #[arg(long, value_name = "N")]
    pub concurrency: Option<u32>,

    /// At most R leases a second (a token bucket; above 0, at most 1000000); needs --burst
    #[arg(long, value_name = "R", requires = "burst", allow_negative_numbers = true)]
    pub rate: Option<f64>,

    /// With --rate: at most B tokens kept, taken at once by a key idle for a while (1 to 1000000)
    #[arg(long, value_name = "B", requires = "rate", allow_negative_numbers = true)]
    pub burst: Option<f64>,
}

impl LimitSetArgs {
    pub fn limit(&self) -> Limit {
        let rate = self.rate.zip(self.burst).map(|(per_second, burst)| Rate { per_second, burst });
        Limit { concurrency: self.concurrency, rate }
    }
}

#[derive(Debug, Args)]
pub struct LimitKeyArgs {
    /// The routing key whose limits are removed
    #[arg(long, value_name = "KEY")]
    pub routing_key: String,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Print them again every SECONDS (default 2) until Ctrl-C
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "2", value_parser = positive_seconds)]
    pub watch: Option<f64>,

    /// With --watch: stop after N refreshes
    #[arg(long, value_name = "N", requires = "watch", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
}

/// Paging, shared by every listing.
#[derive(Debug, Args)]
pub struct Listing {
    /// At most N per page (1 to 10000)
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = page_size)]
    pub limit: usize,

    /// Go on from a page's "next" cursor
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,

    /// Every page, from --cursor (or the start) to the end
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct GroupsArgs {
    /// Only the groups in this state
    #[arg(long, value_enum, value_name = "STATE")]
    pub state: Option<StateArg>,

    #[command(flatten)]
    pub page: Listing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StateArg {
    /// Its head can be claimed now
    Ready,
    /// Its head is leased to a worker
    Leased,
    /// Its head is parked by a nack with a delay
    Parked,
    /// Its head was published with a delay that has not passed
    Delayed,
    /// A pause names it (its group id, its routing key or the queue): no claim takes it
    Paused,
    /// Its head is free, but a limit of its routing key has no room
    Held,
    /// Its head's lease lapsed and it waits its retry policy's backoff
    Retrying,
}

impl StateArg {
    pub fn state(self) -> GroupState {
        match self {
            StateArg::Ready => GroupState::Ready,
            StateArg::Leased => GroupState::Leased,
            StateArg::Parked => GroupState::Parked,
            StateArg::Delayed => GroupState::Delayed,
            StateArg::Paused => GroupState::Paused,
            StateArg::Held => GroupState::Held,
            StateArg::Retrying => GroupState::Retrying,
        }
    }
}

#[derive(Debug, Args)]
pub struct PeekArgs {
    /// The group's id
    pub group: String,

    #[command(flatten)]
    pub page: Listing,
}

#[derive(Debug, Subcommand)]
pub enum DeadCommand {
    /// The dead letters, oldest first: seq, group, attempts, last worker, reason, event
    List(DeadListArgs),

    /// Move dead letters back into their groups, as each group's newest messages
    #[command(after_help = REDRIVE_EXAMPLES)]
    Redrive(Selector),

    /// Delete dead letters for good
    #[command(after_help = DEAD_PURGE_EXAMPLES)]
    Purge(Selector),
}

#[derive(Debug, Args)]
pub struct DeadListArgs {
    /// Only the dead letters of this group
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,

    #[command(flatten)]
    pub page: Listing,
}

#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// Only the archived messages of this group: its history, in order
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,

    #[command(flatten)]
    pub page: Listing,
}

/// Which dead letters: exactly one selector, never a default, since both commands change
/// the queue.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("which").required(true).multiple(false).args(["all", "group", "seq"])))]
pub struct Selector {
    /// Every dead letter
    #[arg(long)]
    pub all: bool,

    /// The dead letters of this group
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,

    /// These dead letters, by seq (as `dead list` shows them)
    #[arg(long, value_name = "SEQ", num_args = 1.., value_delimiter = ',')]
    pub seq: Vec<i64>,

    /// On a sharded queue: the shard the seqs are on (`dead list` shows it)
    #[arg(long, value_name = "SHARD", requires = "seq")]
    pub shard: Option<usize>,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("which").required(true).multiple(false).args(["all", "group"])))]
pub struct PurgeArgs {
    /// Delete this group's messages
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,

    /// Delete every message and group (dead letters are kept)
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Listen on ADDRESS, host:port (port 0: any free port; the address taken is printed)
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:9464")]
    pub listen: String,

    /// Read the console's admin token from FILE (its first line); else HAREL_ADMIN_TOKEN is used
    #[arg(long, value_name = "FILE")]
    pub admin_token_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The group's id
    pub group: String,
}

/// What `pause` and `resume` name: exactly one target, never a default, since both change
/// the queue.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).multiple(false).args(["group", "routing_key", "queue"])))]
pub struct PauseArgs {
    /// A group, by its id (whether or not it has messages now)
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,

    /// Every group published with this routing key
    #[arg(long, value_name = "KEY")]
    pub routing_key: Option<String>,

    /// The whole queue: every group, and every group made while the pause lasts
    #[arg(long)]
    pub queue: bool,
}

impl PauseArgs {
    pub fn target(&self) -> PauseTarget<'_> {
        match (&self.group, &self.routing_key) {
            (Some(group), _) => PauseTarget::Group(group),
            (None, Some(key)) => PauseTarget::RoutingKey(key),
            (None, None) => {
                assert!(self.queue, "clap requires one of --group, --routing-key, --queue");
                PauseTarget::Queue
            }
        }
    }
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(s),
        _ => Err("expected seconds, a number above 0 and at most 86400".to_owned()),
    }
}

fn page_size(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
        _ => Err(format!("expected a page size from 1 to {MAX_PAGE}")),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
