//! Turning C arguments into Rust values: one call per argument, each failing with an
//! `Error::Argument` that names the parameter (NULL, invalid UTF-8).

use std::ffi::{c_char, CStr};

use crate::error::{Error, Result};

/// The error of a NULL argument (a handle's pointers go through `ownership`'s macros).
pub(crate) fn null(name: &str) -> Error {
    Error::Argument(format!("{name} is NULL"))
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string live for the duration of the call.
pub unsafe fn string<'a>(ptr: *const c_char, name: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(null(name));
    }
    unsafe { CStr::from_ptr(ptr) }.to_str().map_err(|e| Error::Argument(format!("{name} is not valid UTF-8: {e}")))
}

/// A NUL-terminated string whose text the call judges (a traceparent, a tracestate): NULL is
/// an error, bytes that are not UTF-8 are `None` (not valid, as any other text can be).
///
/// # Safety
/// As for [`string`].
pub unsafe fn judged_string<'a>(ptr: *const c_char, name: &str) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        return Err(null(name));
    }
    Ok(unsafe { CStr::from_ptr(ptr) }.to_str().ok())
}

/// `N` bytes (an id), copied.
///
/// # Safety
/// `ptr` is NULL or points to `N` readable bytes.
pub unsafe fn bytes<const N: usize>(ptr: *const u8, name: &str) -> Result<[u8; N]> {
    if ptr.is_null() {
        return Err(null(name));
    }
    Ok(unsafe { ptr.cast::<[u8; N]>().read_unaligned() })
}

/// A string where NULL means "none".
///
/// # Safety
/// As for [`string`].
pub unsafe fn optional_string<'a>(ptr: *const c_char, name: &str) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        unsafe { string(ptr, name) }.map(Some)
    }
}

/// An array of `n` values; NULL with `n` 0 is the empty array, NULL with `n` > 0 is an
/// error.
///
/// # Safety
/// `ptr` is NULL or points to `n` live values of `T` for the duration of the call.
pub unsafe fn slice<'a, T>(ptr: *const T, n: usize, name: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Error::Argument(format!("{name} is NULL but its count is {n}")));
    }
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// An array of `n` strings, as [`slice`]; a NULL element is an error.
///
/// # Safety
/// `ptr` is NULL or points to `n` pointers, each NULL or a NUL-terminated string.
pub unsafe fn strings<'a>(ptr: *const *const c_char, n: usize, name: &str) -> Result<Vec<&'a str>> {
    unsafe { slice(ptr, n, name) }?
        .iter()
        .enumerate()
        .map(|(i, &p)| unsafe { string(p, &format!("{name}[{i}]")) })
        .collect()
}

/// What every call that claims reads the same way: the worker's id and the routing keys.
///
/// # Safety
/// As for [`string`] and [`strings`].
pub unsafe fn claimer<'a>(
    worker_id: *const c_char,
    routing_keys: *const *const c_char,
    n_routing_keys: usize,
) -> Result<(&'a str, Vec<&'a str>)> {
    unsafe { Ok((string(worker_id, "worker_id")?, strings(routing_keys, n_routing_keys, "routing_keys")?)) }
}
