//! A look inside the queue from C: `harel_transport_stats` and the pages of groups, of a
//! group's messages and of dead letters, each one allocation freed by its own function.

use std::ffi::c_char;

use super::boundary::boundary_out;
use super::unwind::boundary_value;
use super::error::harel_error;
use super::handle::harel_transport;
use super::headers::{harel_headers, HeadersOut};
use super::ownership::{free_box, to_boxed_mut_ptr_keeping, try_ref_from_ptr, Boxed, Castable};
use super::status::harel_status::{self, HAREL_OK};
use super::strings_out::{or_minus_one, Strings};
use super::args;
use crate::error::{Error, Result};
use crate::{GroupState, Page, PauseKind, Transport};
use super::admin::harel_pause_kind;

/// The counts of one priority level (see harel_stats). A group whose head is delayed
/// (HAREL_GROUP_DELAYED) or that is paused (HAREL_GROUP_PAUSED) is in `groups` but in none
/// of ready, leased and parked: harel_stats' `delayed` and `paused` count them, over every
/// level (this struct's size is fixed).
#[repr(C)]
pub struct harel_priority_stats {
    pub priority: i32,
    pub groups: u64,
    /// Groups whose head can be claimed now.
    pub ready: u64,
    /// Groups whose head is leased.
    pub leased: u64,
    /// Groups whose head is parked.
    pub parked: u64,
}

/// Exact counts of the queue at one instant, from `harel_transport_stats`; free with
/// `harel_stats_free`.
#[repr(C)]
pub struct harel_stats {
    /// When the counts were taken, epoch seconds.
    pub now: f64,
    pub messages: u64,
    pub groups: u64,
    pub ready: u64,
    pub leased: u64,
    pub parked: u64,
    /// Messages in the dead-letter table.
    pub dead: u64,
    /// Seconds since the oldest message of a ready group was published; -1 when no group
    /// is ready or that message's writer does not stamp the time (harel's Python transports).
    pub oldest_ready_age: f64,
    /// The soonest end of a lease, park or delay, epoch seconds; -1 when nothing is in flight.
    pub next_release_at: f64,
    /// One entry per priority level that has groups, lowest first.
    pub by_priority: *const harel_priority_stats,
    pub n_priorities: usize,
    /// The seq of the oldest message of a ready group, whether or not its writer stamped
    /// the time (`oldest_ready_age` is then -1); -1 when no group is ready. Added after 0.4.0:
    /// fields are only ever added at the end of this struct, which the library allocates.
    pub oldest_ready_seq: i64,
    /// Groups whose head was published with a delay that has not passed (harel_transport_publish_with);
    /// they are not in `leased`. Added after 0.4.0, at the end.
    pub delayed: u64,
    /// The soonest due time of such a head, epoch seconds; -1 when none is delayed.
    pub next_due_at: f64,
    /// Groups a pause names (harel_transport_pause); they are in none of ready, leased,
    /// parked and delayed, here and per level. Added after 0.4.0, at the end.
    pub paused: u64,
    /// `n_priorities` counts: `paused_by_priority[i]` is how many of `by_priority[i]`'s
    /// groups are paused (an array of its own: `harel_priority_stats` keeps its size).
    pub paused_by_priority: *const u64,
    /// Of `dead`, the messages that expired undelivered (harel_delivery's `ttl`,
    /// `expires_at`; reason "expired"). Added after 0.4.0, at the end.
    pub expired: u64,
    /// Groups a limit holds: their routing key had no room when a claim met them
    /// (docs/queue.md, "Limits"). Added after 0.4.0, at the end.
    pub held: u64,
    /// Groups whose head's lease lapsed and waits its retry policy's backoff (docs/queue.md,
    /// "Retries"). Added after 0.4.0, at the end. `ready`, `leased`, `parked`, `delayed`,
    /// `paused`, `held` and `retrying` add up to `groups`.
    pub retrying: u64,
}

/// A group's state, from its head (see harel_group_info).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum harel_group_state {
    HAREL_GROUP_READY = 0,
    HAREL_GROUP_LEASED = 1,
    HAREL_GROUP_PARKED = 2,
    /// Its head was published with a delay that has not passed (added after 0.4.0).
    HAREL_GROUP_DELAYED = 3,
    /// A pause names it (harel_transport_pause): no claim takes its head, whatever the
    /// head's state; a lease taken before still shows its holder (added after 0.4.0).
    HAREL_GROUP_PAUSED = 4,
    /// Its head is free, but a limit of its routing key has no room (harel_stats' `held`;
    /// docs/queue.md, "Limits"). Added after 0.4.0: the enum grows only at its end.
    HAREL_GROUP_HELD = 5,
    /// Its head's lease lapsed and it waits its retry policy's backoff (harel_stats'
    /// `retrying`; docs/queue.md, "Retries"). Added after 0.4.0, at the end.
    HAREL_GROUP_RETRYING = 6,
}

/// One group of a `harel_group_page`. Its strings live as long as the page.
#[repr(C)]
pub struct harel_group_info {
    /// `group_id_len` bytes of UTF-8, then a NUL.
    pub group_id: *const c_char,
    pub group_id_len: usize,
    pub state: harel_group_state,
    /// How many messages the group holds.
    pub depth: u64,
    pub head_seq: i64,
    /// Seconds since the head was published; -1 when its writer does not stamp the time.
    pub head_age: f64,
    /// The worker holding the head's lease; NULL when ready, parked, delayed, held or retrying.
    pub holder: *const c_char,
    /// When the lease, park or delay ends, epoch seconds; -1 when ready, held or retrying.
    pub lock_expiry: f64,
    pub priority: i32,
    /// NULL: none.
    pub routing_key: *const c_char,
    /// How many times the head has been claimed.
    pub head_attempts: i64,
}

/// A page of groups from `harel_transport_groups`; free with `harel_group_page_free`.
#[repr(C)]
pub struct harel_group_page {
    pub groups: *const harel_group_info,
    pub n_groups: usize,
    /// Pass it to the next call for the next page; NULL when this is the last.
    pub next_cursor: *const c_char,
    /// `n_groups` shard indexes: `shards[i]` is the shard `groups[i]` was found on (all 0
    /// unless the queue is sharded: `harel_transport_open_shards`).
    pub shards: *const usize,
}

/// One message of a `harel_message_page`.
#[repr(C)]
pub struct harel_message_info {
    pub seq: i64,
    /// `event_len` bytes, then a NUL.
    pub event: *const c_char,
    pub event_len: usize,
    pub attempts: i64,
    /// The worker holding it, or "__parked__"; NULL when free.
    pub locked_by: *const c_char,
    /// When its lease or park ends; -1 when free.
    pub lock_expiry: f64,
    /// When it was published, epoch seconds; -1 when its writer does not stamp the time.
    pub published_at: f64,
}

/// A page of a group's messages from `harel_transport_peek`; free with
/// `harel_message_page_free`.
#[repr(C)]
pub struct harel_message_page {
    pub messages: *const harel_message_info,
    pub n_messages: usize,
    /// NULL when this is the last page.
    pub next_cursor: *const c_char,
    /// `n_messages` header lists: `headers[i]` holds `messages[i]`'s (added after 0.4.0;
    /// `harel_message_info`, an array item, keeps its size).
    pub headers: *const harel_headers,
    /// `n_messages` backoffs: `retry_delays[i]` is the one `messages[i]`'s last claim drew
    /// under a retry policy (harel_options_set_retry), seconds, which its nack with delay 0
    /// or its lapsed lease waits; -1 when none (no policy, or never claimed). Added after
    /// 0.4.0, at the end.
    pub retry_delays: *const f64,
}

/// One message of a `harel_dead_page`.
#[repr(C)]
pub struct harel_dead_letter {
    /// Its seq in the queue before it died.
    pub seq: i64,
    pub group_id: *const c_char,
    pub group_id_len: usize,
    pub event: *const c_char,
    pub event_len: usize,
    /// How many times it had been claimed.
    pub attempts: i64,
    /// The worker whose lease it was under when it moved (a worker's dead_letter, or a
    /// lease that lapsed); NULL when it was free or parked then (a nack clears the holder).
    pub last_worker: *const c_char,
    pub reason: *const c_char,
    /// When it was moved, epoch seconds.
    pub dead_at: f64,
}

/// A page of dead letters from `harel_transport_dead_letters`; free with
/// `harel_dead_page_free`.
#[repr(C)]
pub struct harel_dead_page {
    pub letters: *const harel_dead_letter,
    pub n_letters: usize,
    /// NULL when this is the last page.
    pub next_cursor: *const c_char,
    /// `n_letters` shard indexes: `shards[i]` is the shard `letters[i]` is on (all 0 unless
    /// the queue is sharded, where redrive and purge by seq are refused: a seq is one
    /// shard's; the CLI's `dead redrive --seq S --shard N` names the shard).
    pub shards: *const usize,
    /// `n_letters` header lists: `headers[i]` holds `letters[i]`'s, as it was published
    /// (added after 0.4.0; `harel_dead_letter`, an array item, keeps its size).
    pub headers: *const harel_headers,
}

/// A look's result is boxed with its items, the strings they point to, its items' shards
/// and, for pages of messages, their headers (a Vec's buffer stays where it is when the
/// Vec moves into the box).
pub(super) type Looked<Item, Extra = ()> = Boxed<(Vec<Item>, Strings, Vec<usize>, Extra)>;
type PageHeaders = (HeadersOut, Vec<harel_headers>);

impl Castable for harel_stats {
    type Ownership = Looked<harel_priority_stats, Vec<u64>>;
    type RustType = harel_stats;
}

impl Castable for harel_group_page {
    type Ownership = Looked<harel_group_info>;
    type RustType = harel_group_page;
}

impl Castable for harel_message_page {
    type Ownership = Looked<harel_message_info, (PageHeaders, Vec<f64>)>;
    type RustType = harel_message_page;
}

impl Castable for harel_dead_page {
    type Ownership = Looked<harel_dead_letter, PageHeaders>;
    type RustType = harel_dead_page;
}

/// `head` made with its items' pointer and count, handed to the caller with them.
pub(super) fn hand_out<Head, Item>(
    items: Vec<Item>,
    strings: Strings,
    head: impl FnOnce(*const Item, usize) -> Head,
) -> *mut Head
where
    Head: Castable<Ownership = Looked<Item>, RustType = Head>,
{
    hand_out_sharded(items, strings, Vec::new(), (), |items, n, _| head(items, n))
}

/// `hand_out`, with each item's shard and what else the page keeps (`extra`).
fn hand_out_sharded<Head, Item, Extra>(
    items: Vec<Item>,
    strings: Strings,
    shards: Vec<usize>,
    extra: Extra,
    head: impl FnOnce(*const Item, usize, *const usize) -> Head,
) -> *mut Head
where
    Head: Castable<Ownership = Looked<Item, Extra>, RustType = Head>,
{
    to_boxed_mut_ptr_keeping(head(items.as_ptr(), items.len(), shards.as_ptr()), (items, strings, shards, extra))
}

/// Sets `*out` to NULL, then runs a look on handle `t` that hands out `*out`.
pub(super) fn look<Out>(
    t: *mut harel_transport,
    out: *mut *mut Out,
    err: *mut *mut harel_error,
    body: impl FnOnce(&Transport) -> Result<*mut Out>,
) -> harel_status {
    boundary_out(out, err, |out| {
        *out = body(try_ref_from_ptr!(t))?;
        Ok(HAREL_OK)
    })
}

/// Exact counts of the queue now: messages, groups ready, leased and parked, dead letters,
/// the oldest ready message's age, the next release, the same per priority level. One read
/// that takes no write lock and holds up no claim.
///
/// On HAREL_OK `*out` is the caller's (free it with `harel_stats_free`); on error NULL.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or out NULL); HAREL_ERR_DATABASE;
/// HAREL_ERR_CONNECT (a libSQL server).
#[no_mangle]
pub extern "C" fn harel_transport_stats(
    t: *mut harel_transport,
    out: *mut *mut harel_stats,
    err: *mut *mut harel_error,
) -> harel_status {
    look(t, out, err, |t| {
        let s = t.stats()?;
        let levels: Vec<harel_priority_stats> = s
            .by_priority
            .iter()
            .map(|p| harel_priority_stats {
                priority: p.priority,
                groups: p.groups,
                ready: p.ready,
                leased: p.leased,
                parked: p.parked,
            })
            .collect();
        let paused: Vec<u64> = s.by_priority.iter().map(|p| p.paused).collect();
        let paused_by_priority = paused.as_ptr();
        let strings = Strings::default();
        Ok(hand_out_sharded(levels, strings, Vec::new(), paused, |by_priority, n_priorities, _| harel_stats {
            now: s.now,
            messages: s.messages,
            groups: s.groups,
            ready: s.ready,
            leased: s.leased,
            parked: s.parked,
            dead: s.dead,
            oldest_ready_age: or_minus_one(s.oldest_ready_age),
            next_release_at: or_minus_one(s.next_release_at),
            by_priority,
            n_priorities,
            oldest_ready_seq: s.oldest_ready_seq.unwrap_or(-1),
            delayed: s.delayed,
            next_due_at: or_minus_one(s.next_due_at),
            paused: s.paused,
            paused_by_priority,
            expired: s.expired,
            held: s.held,
            retrying: s.retrying,
        }))
    })
}

/// Frees what `harel_transport_stats` handed out. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_stats_free(stats: *mut harel_stats) {
    // SAFETY: NULL or from harel_transport_stats, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(stats) })
}

fn state_of(state: i32) -> Result<Option<GroupState>> {
    match state {
        -1 => Ok(None),
        0 => Ok(Some(GroupState::Ready)),
        1 => Ok(Some(GroupState::Leased)),
        2 => Ok(Some(GroupState::Parked)),
        3 => Ok(Some(GroupState::Delayed)),
        4 => Ok(Some(GroupState::Paused)),
        5 => Ok(Some(GroupState::Held)),
        6 => Ok(Some(GroupState::Retrying)),
        other => Err(Error::Argument(format!(
            "state is {other}; it must be -1 (any), HAREL_GROUP_READY, HAREL_GROUP_LEASED, HAREL_GROUP_PARKED, \
             HAREL_GROUP_DELAYED, HAREL_GROUP_PAUSED, HAREL_GROUP_HELD or HAREL_GROUP_RETRYING"
        ))),
    }
}

fn c_state(state: GroupState) -> harel_group_state {
    match state {
        GroupState::Ready => harel_group_state::HAREL_GROUP_READY,
        GroupState::Leased => harel_group_state::HAREL_GROUP_LEASED,
        GroupState::Parked => harel_group_state::HAREL_GROUP_PARKED,
        GroupState::Delayed => harel_group_state::HAREL_GROUP_DELAYED,
        GroupState::Paused => harel_group_state::HAREL_GROUP_PAUSED,
        GroupState::Held => harel_group_state::HAREL_GROUP_HELD,
        GroupState::Retrying => harel_group_state::HAREL_GROUP_RETRYING,
    }
}

pub(super) fn next_cursor<T>(page: &Page<T>, strings: &mut Strings) -> *const c_char {
    strings.add_optional(page.next.as_deref())
}

/// A page of groups in group id order, without claiming anything: each group's state,
/// depth, head (seq, age, attempts), holder and lease end, priority and routing key.
/// `state`: -1 for every group, or a harel_group_state to list only those. `cursor`: NULL
/// for the first page, else the `next_cursor` of the page before (copied; the page it came
/// from may be freed). `limit`: 1..10000 groups.
///
/// On HAREL_OK `*out` is the caller's (free it with `harel_group_page_free`); on error NULL.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or out NULL, state not -1..6, cursor not one
/// this listing handed out or not UTF-8, limit outside 1..10000); HAREL_ERR_DATABASE;
/// HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_groups(
    t: *mut harel_transport,
    state: i32,
    cursor: *const c_char,
    limit: usize,
    out: *mut *mut harel_group_page,
    err: *mut *mut harel_error,
) -> harel_status {
    look(t, out, err, |t| {
        // SAFETY: NULL or a NUL-terminated string, per this function's contract.
        let cursor = unsafe { args::optional_string(cursor, "cursor") }?;
        let page = t.groups(state_of(state)?, cursor, limit)?;
        let mut strings = Strings::default();
        let items: Vec<harel_group_info> = page
            .items
            .iter()
            .map(|g| {
                let (group_id, group_id_len) = strings.add(&g.group_id);
                harel_group_info {
                    group_id,
                    group_id_len,
                    state: c_state(g.state),
                    depth: g.depth,
                    head_seq: g.head_seq,
                    head_age: or_minus_one(g.head_age),
                    holder: strings.add_optional(g.holder.as_deref()),
                    lock_expiry: or_minus_one(g.lock_expiry),
                    priority: g.priority,
                    routing_key: strings.add_optional(g.routing_key.as_deref()),
                    head_attempts: g.head_attempts,
                }
            })
            .collect();
        let next_cursor = next_cursor(&page, &mut strings);
        let shards = page.items.iter().map(|g| g.shard).collect();
        Ok(hand_out_sharded(items, strings, shards, (), |groups, n_groups, shards| harel_group_page {
            groups,
            n_groups,
            next_cursor,
            shards,
        }))
    })
}

/// Frees what `harel_transport_groups` handed out. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_group_page_free(page: *mut harel_group_page) {
    // SAFETY: NULL or from harel_transport_groups, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(page) })
}

/// A page of `group_id`'s messages, oldest first, without claiming them: seq, event,
/// attempts, lock. `cursor` and `limit` as for harel_transport_groups.
///
/// On HAREL_OK `*out` is the caller's (free it with `harel_message_page_free`); on error NULL.
///
/// Returns HAREL_OK (an unknown group gives an empty page); HAREL_ERR_ARGUMENT (t,
/// group_id or out NULL, group_id empty or not UTF-8, a bad cursor or limit);
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_peek(
    t: *mut harel_transport,
    group_id: *const c_char,
    cursor: *const c_char,
    limit: usize,
    out: *mut *mut harel_message_page,
    err: *mut *mut harel_error,
) -> harel_status {
    look(t, out, err, |t| {
        // SAFETY: NULL or NUL-terminated strings, per this function's contract.
        let (group_id, cursor) =
            unsafe { (args::string(group_id, "group_id")?, args::optional_string(cursor, "cursor")?) };
        let page = t.peek(group_id, cursor, limit)?;
        let mut strings = Strings::default();
        let items: Vec<harel_message_info> = page
            .items
            .iter()
            .map(|m| {
                let (event, event_len) = strings.add(&m.event);
                harel_message_info {
                    seq: m.seq,
                    event,
                    event_len,
                    attempts: m.attempts,
                    locked_by: strings.add_optional(m.locked_by.as_deref()),
                    lock_expiry: or_minus_one(m.lock_expiry),
                    published_at: or_minus_one(m.published_at),
                }
            })
            .collect();
        let next_cursor = next_cursor(&page, &mut strings);
        let (kept, lists) = HeadersOut::of_many(page.items.iter().map(|m| &m.headers));
        let headers = lists.as_ptr();
        let delays: Vec<f64> = page.items.iter().map(|m| or_minus_one(m.retry_delay)).collect();
        let retry_delays = delays.as_ptr();
        let extra = ((kept, lists), delays);
        Ok(hand_out_sharded(items, strings, Vec::new(), extra, |messages, n_messages, _| harel_message_page {
            messages,
            n_messages,
            next_cursor,
            headers,
            retry_delays,
        }))
    })
}

/// Frees what `harel_transport_peek` handed out. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_message_page_free(page: *mut harel_message_page) {
    // SAFETY: NULL or from harel_transport_peek, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(page) })
}

/// A page of dead letters in the order they had in the queue: `group_id`'s only, or all
/// when NULL. `cursor` and `limit` as for harel_transport_groups.
///
/// On HAREL_OK `*out` is the caller's (free it with `harel_dead_page_free`); on error NULL.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or out NULL, group_id empty or not UTF-8, a
/// bad cursor or limit); HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_dead_letters(
    t: *mut harel_transport,
    group_id: *const c_char,
    cursor: *const c_char,
    limit: usize,
    out: *mut *mut harel_dead_page,
    err: *mut *mut harel_error,
) -> harel_status {
    look(t, out, err, |t| {
        // SAFETY: NULL or NUL-terminated strings, per this function's contract.
        let (group_id, cursor) =
            unsafe { (args::optional_string(group_id, "group_id")?, args::optional_string(cursor, "cursor")?) };
        let page = t.dead_letters(group_id, cursor, limit)?;
        let mut strings = Strings::default();
        let items: Vec<harel_dead_letter> = page
            .items
            .iter()
            .map(|d| {
                let (group_id, group_id_len) = strings.add(&d.group_id);
                let (event, event_len) = strings.add(&d.event);
                harel_dead_letter {
                    seq: d.seq,
                    group_id,
                    group_id_len,
                    event,
                    event_len,
                    attempts: d.attempts,
                    last_worker: strings.add_optional(d.last_worker.as_deref()),
                    reason: strings.add(&d.reason).0,
                    dead_at: d.dead_at,
                }
            })
            .collect();
        let next_cursor = next_cursor(&page, &mut strings);
        let shards = page.items.iter().map(|d| d.shard).collect();
        let (kept, lists) = HeadersOut::of_many(page.items.iter().map(|d| &d.headers));
        let headers = lists.as_ptr();
        Ok(hand_out_sharded(items, strings, shards, (kept, lists), |letters, n_letters, shards| harel_dead_page {
            letters,
            n_letters,
            next_cursor,
            shards,
            headers,
        }))
    })
}

/// Frees what `harel_transport_dead_letters` handed out. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_dead_page_free(page: *mut harel_dead_page) {
    // SAFETY: NULL or from harel_transport_dead_letters, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(page) })
}

/// One pause of a `harel_pause_list`.
#[repr(C)]
pub struct harel_pause {
    pub kind: harel_pause_kind,
    /// The group id or routing key, `name_len` bytes then a NUL; "" for the queue.
    pub name: *const c_char,
    pub name_len: usize,
    /// When it was paused, epoch seconds.
    pub paused_at: f64,
}

/// The pauses in force, from `harel_transport_pauses`; free with `harel_pause_list_free`.
#[repr(C)]
pub struct harel_pause_list {
    pub pauses: *const harel_pause,
    pub n_pauses: usize,
}

impl Castable for harel_pause_list {
    type Ownership = Looked<harel_pause>;
    type RustType = harel_pause_list;
}

/// The pauses in force (harel_transport_pause), the queue's first, then by kind and name.
/// A queue opened with create_schema off that lacks the pauses table has none.
///
/// On HAREL_OK `*out` is the caller's (free it with `harel_pause_list_free`); on error NULL.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or out NULL); HAREL_ERR_DATABASE;
/// HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_pauses(
    t: *mut harel_transport,
    out: *mut *mut harel_pause_list,
    err: *mut *mut harel_error,
) -> harel_status {
    look(t, out, err, |t| {
        let mut strings = Strings::default();
        let pauses = t
            .pauses()?
            .iter()
            .map(|p| {
                let (name, name_len) = strings.add(&p.name);
                let kind = match p.kind {
                    PauseKind::Queue => harel_pause_kind::HAREL_PAUSE_QUEUE,
                    PauseKind::Group => harel_pause_kind::HAREL_PAUSE_GROUP,
                    PauseKind::RoutingKey => harel_pause_kind::HAREL_PAUSE_ROUTING_KEY,
                };
                harel_pause { kind, name, name_len, paused_at: p.paused_at }
            })
            .collect();
        Ok(hand_out(pauses, strings, |pauses, n_pauses| harel_pause_list { pauses, n_pauses }))
    })
}

/// Frees what `harel_transport_pauses` handed out. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_pause_list_free(list: *mut harel_pause_list) {
    // SAFETY: NULL or from harel_transport_pauses, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(list) })
}
