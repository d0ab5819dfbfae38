//! Opening and closing a queue from C: `harel_transport_open` and
//! `harel_transport_open_shards` (docs/queue.md, "Sharded queues"), `harel_transport_close`;
//! the library's version, and the schema's SQL for migration tools.
//!
//! The version is Cargo.toml's MAJOR.MINOR.PATCH, one for everything (docs/abi.md,
//! "Versioning"). `harel_version()` returns it at run time; the header carries the same
//! numbers as `HAREL_TRANSPORT_VERSION_MAJOR`, `_MINOR` and `_PATCH` (and the string as
//! `HAREL_TRANSPORT_VERSION`), written by build.rs from the same Cargo.toml fields: cbindgen
//! cannot evaluate the constants below, whose values come from `env!`.

use std::ffi::{c_char, CString};

use super::boundary::boundary_out;
use super::unwind::boundary_value;
use super::error::harel_error;
use super::handle::harel_transport;
use super::options::harel_options;
use super::ownership::{free_c_string, ref_from_ptr, take_from_ptr, to_boxed_mut_ptr, to_c_string};
use super::status::harel_status::{self, HAREL_OK};
use super::args;
use crate::error::Error;
use crate::{Options, Transport};

/// Opens the queue at `database`: a file path (a local libSQL file, WAL journal),
/// ":memory:", a "libsql://", "http://" or "https://" URL (a libSQL server), or a path
/// with `harel_options_set_sync_url` (an embedded replica of that server). `options` may
/// be NULL for the defaults; it is only read during the call.
///
/// On HAREL_OK `*out` is a new handle the caller owns (free it with
/// `harel_transport_close`); on error `*out` is NULL and, when `err` is not NULL, `*err`
/// is the error (see harel_error).
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (database or out NULL, database empty or not
/// UTF-8); HAREL_ERR_DATABASE (the file can't be opened or isn't a database, a table is
/// missing with create_schema off); HAREL_ERR_BUSY (another process held the write lock
/// past the busy timeout while the schema was set up); HAREL_ERR_CONNECT (a server can't
/// be reached within seconds or refused the token).
#[no_mangle]
pub extern "C" fn harel_transport_open(
    database: *const c_char,
    options: *const harel_options,
    out: *mut *mut harel_transport,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary_out(out, err, |out| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let database = unsafe { args::string(database, "database") }?;
        *out = to_boxed_mut_ptr(Transport::open(database, &unsafe { c_options(options) })?);
        Ok(HAREL_OK)
    })
}

/// The options an open through the C ABI runs with: `options`' (NULL: the defaults), and
/// the other-SQLite check, since this library's SQLite is its own there (its symbols are
/// hidden): a lock of this process on the file that no transport holds is another copy's.
///
/// # Safety
/// `options` is NULL or a live `harel_options`.
pub(crate) unsafe fn c_options(options: *const harel_options) -> Options {
    let mut options = unsafe { ref_from_ptr(options) }.map_or_else(Options::new, Options::clone);
    options.refuse_other_sqlite = true;
    options
}

/// Closes the connection and frees the handle; closing cannot fail. Never use `t` again,
/// and never close a handle while another thread is using it. NULL does nothing. Its
/// transactions still open are rolled back; their handles then refuse every call but
/// harel_tx_rollback and harel_tx_free.
#[no_mangle]
pub extern "C" fn harel_transport_close(t: *mut harel_transport) {
    boundary_value((), || {
        // SAFETY: NULL or from harel_transport_open, closed once (this function's contract).
        // Its transactions end first, while it is where they point.
        if let Some(transport) = unsafe { ref_from_ptr(t) } {
            super::transactions::end_transactions_of(transport);
        }
        // SAFETY: as above.
        if let Some(t) = unsafe { take_from_ptr(t) } {
            t.close();
        }
    })
}

/// Opens one queue sharded over the `n_databases` databases of `databases` (1..256 file
/// paths or server URLs, each as `harel_transport_open` takes it, or paths of embedded
/// replicas with `harel_options_set_sync_urls` naming each one's primary; the same
/// `options` otherwise), in their shard order.
/// Each group lives on the shard `harel_shard_of` names: publishes, acks and nacks go
/// there, claims serve the shards in turn, waits and watches cover all of them, and
/// stats and listings add them up (docs/queue.md, "Sharded queues"). Each database is an
/// unchanged queue that harel's own workers can serve.
///
/// The first open of a list of empty databases makes them a set: each records the queue's
/// id, its index and the number of shards. Every later open must pass the same list in
/// the same order. A list of one is a queue that is not sharded, as `harel_transport_open`
/// opens it. The handle is freed with `harel_transport_close`.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (databases or out NULL, n_databases 0 or above
/// 256, an element NULL, empty, not UTF-8 or repeated (also as another path to the same
/// file); sync_urls of another count than n_databases, or set beside sync_url; sync_url
/// with n_databases above 1; the list does not match the
/// databases' records: a database missing, one extra, the order changed, another queue's
/// database, a database that holds messages but belongs to no set, a path that names no
/// file yet beside a set's databases — the message names the database as "databases[i]
/// (its text)", and no file is made; a transaction begun on a sharded queue is refused at
/// its first call); otherwise as `harel_transport_open`, the message naming the database
/// that failed. On error nothing is left open and `*out` is NULL.
#[no_mangle]
pub extern "C" fn harel_transport_open_shards(
    databases: *const *const c_char,
    n_databases: usize,
    options: *const harel_options,
    out: *mut *mut harel_transport,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary_out(out, err, |out| {
        // The count first: the array is read only once it is known to be of a size allowed.
        if !(1..=crate::MAX_SHARDS).contains(&n_databases) {
            let allowed = crate::MAX_SHARDS;
            return Err(Error::Argument(format!("databases has {n_databases} entries; it must have 1..{allowed}")));
        }
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let databases = unsafe { args::strings(databases, n_databases, "databases") }?;
        *out = to_boxed_mut_ptr(Transport::open_shards(&databases, &unsafe { c_options(options) })?);
        Ok(HAREL_OK)
    })
}

/// Frees a string the library handed out (`harel_schema_sql`, `harel_schema_upgrade_sql`).
/// NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_string_free(s: *mut c_char) {
    // SAFETY: NULL or a string this library handed out, freed once (this function's contract).
    boundary_value((), || unsafe { free_c_string(s) })
}

/// Hands the caller a new string made from `prefix`: HAREL_OK with `*out` set.
fn string_out(
    prefix: *const c_char,
    out: *mut *mut c_char,
    err: *mut *mut harel_error,
    make: fn(&str) -> crate::Result<String>,
) -> harel_status {
    boundary_out(out, err, |out| {
        // SAFETY: the caller passes NULL or valid pointers, per the function's contract.
        let text = make(unsafe { args::string(prefix, "prefix") }?)?;
        // SQL built from a validated identifier holds no NUL.
        *out = to_c_string(CString::new(text).unwrap_or_default());
        Ok(HAREL_OK)
    })
}

/// The idempotent CREATE statements of a fresh schema under `prefix`, one per line, each
/// ending in ';', for a migration tool that owns the schema (open with create_schema off).
///
/// On HAREL_OK `*out` is a string the caller owns (free it with `harel_string_free`);
/// on error it is NULL.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (prefix or out NULL, prefix not an identifier).
#[no_mangle]
pub extern "C" fn harel_schema_sql(
    prefix: *const c_char,
    out: *mut *mut c_char,
    err: *mut *mut harel_error,
) -> harel_status {
    string_out(prefix, out, err, crate::schema_sql)
}

/// The statements that upgrade a groups table made without `routing_key` (harel 0.9),
/// one per line, each ending in ';'. Not idempotent: run them once.
///
/// On HAREL_OK `*out` is a string the caller owns (free it with `harel_string_free`);
/// on error it is NULL.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (prefix or out NULL, prefix not an identifier).
#[no_mangle]
pub extern "C" fn harel_schema_upgrade_sql(
    prefix: *const c_char,
    out: *mut *mut c_char,
    err: *mut *mut harel_error,
) -> harel_status {
    string_out(prefix, out, err, crate::schema_upgrade_sql)
}

/// The major version, Cargo.toml's.
/// cbindgen:ignore
pub const HAREL_TRANSPORT_VERSION_MAJOR: u32 = number(env!("CARGO_PKG_VERSION_MAJOR"));

/// The minor version, Cargo.toml's.
/// cbindgen:ignore
pub const HAREL_TRANSPORT_VERSION_MINOR: u32 = number(env!("CARGO_PKG_VERSION_MINOR"));

/// The patch version, Cargo.toml's.
/// cbindgen:ignore
pub const HAREL_TRANSPORT_VERSION_PATCH: u32 = number(env!("CARGO_PKG_VERSION_PATCH"));

/// A decimal number of a version's part, at compile time (a part that is not one fails the
/// build).
const fn number(digits: &str) -> u32 {
    let bytes = digits.as_bytes();
    assert!(!bytes.is_empty(), "a version part is a decimal number");
    let mut value: u32 = 0;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "a version part is a decimal number");
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

/// The library's version, "MAJOR.MINOR.PATCH"; the header's HAREL_TRANSPORT_VERSION_MAJOR,
/// _MINOR and _PATCH are the numbers of the version it was generated with. Static: never
/// free it.
#[no_mangle]
pub extern "C" fn harel_version() -> *const c_char {
    boundary_value(std::ptr::null(), || concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn the_numbers_are_the_run_time_version() {
        // SAFETY: harel_version returns a static NUL-terminated string.
        let version = unsafe { CStr::from_ptr(harel_version()) }.to_str().unwrap();
        let numbers =
            format!("{HAREL_TRANSPORT_VERSION_MAJOR}.{HAREL_TRANSPORT_VERSION_MINOR}.{HAREL_TRANSPORT_VERSION_PATCH}");
        assert_eq!(version, numbers);
        assert_eq!(version, crate::VERSION);
    }

    #[test]
    fn the_checked_in_header_defines_the_same_numbers() {
        let header = include_str!("../../../include/harel_transport.h");
        for (name, value) in [
            ("HAREL_TRANSPORT_VERSION_MAJOR", HAREL_TRANSPORT_VERSION_MAJOR),
            ("HAREL_TRANSPORT_VERSION_MINOR", HAREL_TRANSPORT_VERSION_MINOR),
            ("HAREL_TRANSPORT_VERSION_PATCH", HAREL_TRANSPORT_VERSION_PATCH),
        ] {
            let line = format!("#define {name} {value}\n");
            assert!(header.contains(&line), "include/harel_transport.h lacks `{}`", line.trim_end());
        }
        let string = format!("#define HAREL_TRANSPORT_VERSION \"{}\"\n", crate::VERSION);
        assert!(header.contains(&string), "include/harel_transport.h lacks `{}`", string.trim_end());
    }

    #[test]
    fn number_reads_decimal_digits() {
        assert_eq!(number("0"), 0);
        assert_eq!(number("42"), 42);
        assert_eq!(number("2024"), 2024);
    }
}
