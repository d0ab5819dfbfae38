//! The archive's look from C (docs/queue.md, "The archive"): a page of acked messages,
//! one allocation freed by its own function. The archive is kept with
//! `harel_options_set_archive`.

use std::ffi::c_char;

use super::args;
use super::error::harel_error;
use super::handle::harel_transport;
use super::headers::{harel_headers, HeadersOut};
use super::looks::{look, next_cursor};
use super::ownership::{free_box, to_boxed_mut_ptr_keeping, Boxed, Castable};
use super::status::harel_status;
use super::strings_out::{or_minus_one, Strings};
use super::unwind::boundary_value;

/// One acked message of a `harel_archive_page`, as the archive keeps it.
#[repr(C)]
pub struct harel_archived {
    /// Its seq in the queue: a group's history reads in seq order.
    pub seq: i64,
    /// `group_id_len` bytes, then a NUL.
    pub group_id: *const c_char,
    pub group_id_len: usize,
    /// `event_len` bytes, then a NUL.
    pub event: *const c_char,
    pub event_len: usize,
    /// Its headers, as it was published (none: `n` 0).
    pub headers: harel_headers,
    /// How many times it had been claimed, the acked claim included.
    pub attempts: i64,
    /// The worker that acked it.
    pub worker_id: *const c_char,
    /// When it was published, epoch seconds; -1 when its writer does not stamp the time.
    pub published_at: f64,
    /// When the claim that was acked took it; -1 for a claim made before the archive existed.
    pub claimed_at: f64,
    /// When it was acked, epoch seconds.
    pub acked_at: f64,
    /// The shard it is on (0 unless the queue is sharded).
    pub shard: usize,
}

/// A page of archived messages from `harel_transport_archive`; free with
/// `harel_archive_page_free`.
#[repr(C)]
pub struct harel_archive_page {
    pub messages: *const harel_archived,
    pub n_messages: usize,
    /// Pass it to the next call for the next page; NULL when this is the last.
    pub next_cursor: *const c_char,
}

impl Castable for harel_archive_page {
    type Ownership = Boxed<(Vec<harel_archived>, Strings, HeadersOut)>;
    type RustType = harel_archive_page;
}

/// A page of the archive in seq order: `group_id`'s history only, or every group's when
/// NULL (a sharded queue's shard after shard). `cursor`: NULL for the first page, else the
/// `next_cursor` of the page before (copied; that page may be freed). `limit`: 1..10000.
/// The archive holds what was acked while a transport kept it (`harel_options_set_archive`),
/// for its retention; an empty page when nothing is there.
///
/// On HAREL_OK `*out` is the caller's (free it with `harel_archive_page_free`); on error NULL.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or out NULL, group_id empty or not UTF-8, a
/// bad cursor or limit); HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_archive(
    t: *mut harel_transport,
    group_id: *const c_char,
    cursor: *const c_char,
    limit: usize,
    out: *mut *mut harel_archive_page,
    err: *mut *mut harel_error,
) -> harel_status {
    look(t, out, err, |t| {
        // SAFETY: NULL or NUL-terminated strings, per this function's contract.
        let (group_id, cursor) =
            unsafe { (args::optional_string(group_id, "group_id")?, args::optional_string(cursor, "cursor")?) };
        let page = t.archive(group_id, cursor, limit)?;
        let mut strings = Strings::default();
        let (kept, lists) = HeadersOut::of_many(page.items.iter().map(|a| &a.headers));
        let messages: Vec<harel_archived> = page
            .items
            .iter()
            .zip(lists)
            .map(|(a, headers)| {
                let (group_id, group_id_len) = strings.add(&a.group_id);
                let (event, event_len) = strings.add(&a.event);
                harel_archived {
                    seq: a.seq,
                    group_id,
                    group_id_len,
                    event,
                    event_len,
                    headers,
                    attempts: a.attempts,
                    worker_id: strings.add(&a.worker_id).0,
                    published_at: or_minus_one(a.published_at),
                    claimed_at: or_minus_one(a.claimed_at),
                    acked_at: a.acked_at,
                    shard: a.shard,
                }
            })
            .collect();
        let next_cursor = next_cursor(&page, &mut strings);
        let head = harel_archive_page { messages: messages.as_ptr(), n_messages: messages.len(), next_cursor };
        Ok(to_boxed_mut_ptr_keeping(head, (messages, strings, kept)))
    })
}

/// Frees what `harel_transport_archive` handed out. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_archive_page_free(page: *mut harel_archive_page) {
    // SAFETY: NULL or from harel_transport_archive, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(page) })
}
