//! Strings the library hands out: the schema's SQL for migration tools (the version is
//! version.rs's).

use std::ffi::{c_char, CString};

use super::args;
use super::error::harel_error;
use super::ownership::{free_c_string, to_c_string};
use super::status::harel_status::{self, HAREL_OK};
use super::{boundary_out, boundary_value};

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
