//! W3C Trace Context from C (docs/abi.md, "Trace context"): a `traceparent` value written
//! from its ids and read back, and a `tracestate` value checked. The rules are the core's
//! (`trace_context`); these calls need no transport.

use std::ffi::c_char;

use super::args;
use super::boundary::boundary;
use super::error::harel_error;
use super::status::harel_status::{self, HAREL_OK};
use crate::error::Error;
use crate::trace_context::{TraceParent, TraceState, TRACEPARENT_LEN};

/// Writes the W3C `traceparent` value of a trace id, a span id (the spec's parent-id) and
/// trace-flags into `out`: version 00, lower-case hex, "00-<trace_id>-<span_id>-<flags>",
/// HAREL_TRACEPARENT_LEN (55) characters and a NUL.
///
/// - `trace_id`: 16 bytes; `span_id`: 8 bytes. Neither may be all zero bytes (the spec
///   forbids it).
/// - `flags`: written as given. Bit 0 (0x01) is "sampled"; the spec asks that the others be 0.
/// - `out`: a buffer of at least HAREL_TRACEPARENT_LEN + 1 (56) bytes. Publish it as the
///   value of a message header named "traceparent".
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (trace_id, span_id or out NULL; trace_id or span_id
/// all zero bytes), `out` untouched then.
#[no_mangle]
pub extern "C" fn harel_traceparent_format(
    trace_id: *const u8,
    span_id: *const u8,
    flags: u8,
    out: *mut c_char,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary(err, || {
        // SAFETY: the caller passes NULL or pointers to 16 and 8 bytes, per this contract.
        let trace_id = unsafe { args::bytes::<16>(trace_id, "trace_id") }?;
        let span_id = unsafe { args::bytes::<8>(span_id, "span_id") }?;
        // SAFETY: checked not NULL; the caller passes a buffer of TRACEPARENT_LEN + 1 bytes.
        let out = unsafe { out.cast::<[u8; TRACEPARENT_LEN + 1]>().as_mut() }.ok_or_else(|| args::null("out"))?;
        if trace_id == [0; 16] {
            return Err(Error::Argument("trace_id is all zero bytes, which W3C Trace Context forbids".into()));
        }
        if span_id == [0; 8] {
            return Err(Error::Argument("span_id is all zero bytes, which W3C Trace Context forbids".into()));
        }
        let parent = TraceParent::new(trace_id, span_id, flags).expect("both ids checked not all zero");
        out[..TRACEPARENT_LEN].copy_from_slice(parent.to_header().as_bytes());
        out[TRACEPARENT_LEN] = 0;
        Ok(HAREL_OK)
    })
}

/// Reads a W3C `traceparent` value (a message header's, say), as a receiver must: a value
/// that is not valid is no error but `*valid` false, to be ignored (start a new trace).
///
/// Valid: version 00 exactly as harel_traceparent_format writes it (lower-case hex only,
/// neither id all zero); or a higher version (01..fe), of which the first 55 characters are
/// read as version 00 when they are followed by nothing or by '-' (its own fields, not read),
/// and of its flags only the sampled bit. Version ff is invalid. Spaces and tabs around
/// the value are ignored, as HTTP ignores them around a header's value.
///
/// - `value`: NUL-terminated; text that is not UTF-8 is not valid (not an error).
/// - `trace_id` (16 bytes), `span_id` (8 bytes), `flags`: the ids and flags when valid, all
///   zero bytes when not.
/// - `valid`: whether it is.
///
/// Returns HAREL_OK for any value; HAREL_ERR_ARGUMENT (value, trace_id, span_id, flags or
/// valid NULL), every output untouched then.
#[no_mangle]
pub extern "C" fn harel_traceparent_parse(
    value: *const c_char,
    trace_id: *mut u8,
    span_id: *mut u8,
    flags: *mut u8,
    valid: *mut bool,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary(err, || {
        // SAFETY: the caller passes NULL or valid pointers of the sizes above, per this
        // function's contract; each is checked not NULL before any is written.
        let value = unsafe { args::judged_string(value, "value") }?;
        let trace_id = unsafe { trace_id.cast::<[u8; 16]>().as_mut() }.ok_or_else(|| args::null("trace_id"))?;
        let span_id = unsafe { span_id.cast::<[u8; 8]>().as_mut() }.ok_or_else(|| args::null("span_id"))?;
        let flags = unsafe { flags.as_mut() }.ok_or_else(|| args::null("flags"))?;
        let valid = unsafe { valid.as_mut() }.ok_or_else(|| args::null("valid"))?;
        let parent = value.and_then(TraceParent::parse);
        let zero = TraceParent { trace_id: [0; 16], span_id: [0; 8], flags: 0 };
        let got = parent.unwrap_or(zero);
        (*trace_id, *span_id, *flags, *valid) = (got.trace_id, got.span_id, got.flags, parent.is_some());
        Ok(HAREL_OK)
    })
}

/// Whether `value` is a valid W3C `tracestate` value: a comma-separated list of at most 32
/// `key=value` members, each key once, with optional spaces and tabs around each member;
/// empty members are allowed, so "" is valid (an empty tracestate). A key is a lower-case
/// letter then at most 255 of a-z 0-9 _ - * /, or a tenant id (a-z or 0-9, then at most
/// 240 of those) '@' a system id (a lower-case letter, then at most 13 of those). A value
/// is 1 to 256 printable ASCII characters (0x20-0x7E) other than ',' and '=', not ending
/// in a space. A producer checks a value before it publishes it; a worker ignores one that
/// is not valid, whole, rather than propagate it.
///
/// - `value`: NUL-terminated; text that is not UTF-8 is not valid (not an error).
///
/// Returns HAREL_OK for any value; HAREL_ERR_ARGUMENT (value or valid NULL), `*valid`
/// untouched then.
#[no_mangle]
pub extern "C" fn harel_tracestate_valid(
    value: *const c_char,
    valid: *mut bool,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary(err, || {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let value = unsafe { args::judged_string(value, "value") }?;
        // SAFETY: the caller passes NULL or a writable bool.
        let valid = unsafe { valid.as_mut() }.ok_or_else(|| args::null("valid"))?;
        *valid = value.and_then(TraceState::parse).is_some();
        Ok(HAREL_OK)
    })
}
