//! SQL values across the boundary: `harel_value` for an application statement's
//! parameters (read from C) and for the rows of `harel_tx_query` (handed out as
//! `harel_rows`, one allocation freed by `harel_rows_free`).

use std::ffi::c_char;

use super::unwind::boundary_value;
use super::args;
use super::ownership::{free_box, to_boxed_mut_ptr_keeping, Boxed, Castable};
use crate::error::{Error, Result};
use crate::Value;

/// The type of a harel_value: SQLite's five.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum harel_value_type {
    HAREL_VALUE_NULL = 0,
    HAREL_VALUE_INTEGER = 1,
    HAREL_VALUE_REAL = 2,
    HAREL_VALUE_TEXT = 3,
    HAREL_VALUE_BLOB = 4,
}

/// One SQL value: a parameter of `harel_tx_execute`/`harel_tx_query` (the caller's, only
/// read during the call), or a column of a row they return (the library's, freed with its
/// harel_rows). Only the field of its type is read; zero the rest.
#[repr(C)]
pub struct harel_value {
    /// A harel_value_type (an int, so that a wrong one is refused rather than undefined).
    pub r#type: i32,
    /// HAREL_VALUE_INTEGER.
    pub integer: i64,
    /// HAREL_VALUE_REAL: finite (a libSQL server cannot carry NaN or infinities).
    pub real: f64,
    /// HAREL_VALUE_TEXT: UTF-8, NUL-terminated. In a row, also `size` bytes long (a text
    /// may hold a NUL of its own).
    pub text: *const c_char,
    /// HAREL_VALUE_BLOB: `size` bytes; NULL only when `size` is 0.
    pub blob: *const u8,
    /// HAREL_VALUE_BLOB: the blob's length. In a row, a text's length in bytes too (no
    /// NUL counted); ignored for a parameter's text.
    pub size: usize,
}

/// The rows of a `harel_tx_query`: `values` holds `n_rows * n_columns` values, row by
/// row (row r, column c is `values[r * n_columns + c]`). No rows: n_rows 0, n_columns 0,
/// values NULL. The library's; free it with `harel_rows_free`.
#[repr(C)]
pub struct harel_rows {
    pub n_rows: usize,
    pub n_columns: usize,
    pub values: *const harel_value,
}

/// The values, and the buffer their texts and blobs point into, live in the box.
impl Castable for harel_rows {
    type Ownership = Boxed<(Vec<harel_value>, Vec<u8>)>;
    type RustType = harel_rows;
}

/// The parameters as the core takes them; errors name the element ("params[2].text is NULL").
///
/// # Safety
/// `params` is NULL or points to `n` values whose pointers are NULL or valid as their
/// fields say, for the call.
pub(crate) unsafe fn params(params: *const harel_value, n: usize) -> Result<Vec<Value>> {
    unsafe { args::slice(params, n, "params") }?
        .iter()
        .enumerate()
        .map(|(i, v)| unsafe { v.to_value(&format!("params[{i}]")) })
        .collect()
}

impl harel_value {
    /// # Safety
    /// As for [`params`].
    unsafe fn to_value(&self, name: &str) -> Result<Value> {
        const NULL: i32 = harel_value_type::HAREL_VALUE_NULL as i32;
        const INTEGER: i32 = harel_value_type::HAREL_VALUE_INTEGER as i32;
        const REAL: i32 = harel_value_type::HAREL_VALUE_REAL as i32;
        const TEXT: i32 = harel_value_type::HAREL_VALUE_TEXT as i32;
        const BLOB: i32 = harel_value_type::HAREL_VALUE_BLOB as i32;
        Ok(match self.r#type {
            NULL => Value::Null,
            INTEGER => Value::Integer(self.integer),
            REAL => Value::Real(self.real),
            TEXT => Value::Text(unsafe { args::string(self.text, &format!("{name}.text")) }?.to_owned()),
            BLOB if self.size == 0 => Value::Blob(Vec::new()),
            BLOB if self.blob.is_null() => {
                return Err(Error::Argument(format!("{name}.blob is NULL but its size is {}", self.size)))
            }
            // SAFETY: the caller's promise: `size` readable bytes.
            BLOB => Value::Blob(unsafe { std::slice::from_raw_parts(self.blob, self.size) }.to_vec()),
            other => {
                return Err(Error::Argument(format!(
                    "{name}.type is {other}: not a harel_value_type (HAREL_VALUE_NULL 0 .. HAREL_VALUE_BLOB 4)"
                )))
            }
        })
    }
}

/// Hands `rows` to the caller: one box holding the values and one buffer of their texts
/// (each followed by a NUL) and blobs.
pub(crate) fn hand_out(rows: Vec<Vec<Value>>) -> *mut harel_rows {
    let n_columns = rows.first().map_or(0, Vec::len);
    let mut bytes = Vec::new();
    let mut at = Vec::with_capacity(rows.len() * n_columns);
    for value in rows.iter().flatten() {
        at.push(bytes.len());
        match value {
            Value::Text(s) => {
                bytes.extend_from_slice(s.as_bytes());
                bytes.push(0);
            }
            Value::Blob(b) => bytes.extend_from_slice(b),
            _ => {}
        }
    }
    let base = bytes.as_ptr();
    let values: Vec<harel_value> = rows
        .iter()
        .flatten()
        .zip(at)
        .map(|(value, at)| {
            // SAFETY: `at` lies within `bytes` (or at its end for an empty blob, never read).
            let here = unsafe { base.add(at) };
            let mut v = harel_value {
                r#type: harel_value_type::HAREL_VALUE_NULL as i32,
                integer: 0,
                real: 0.0,
                text: std::ptr::null(),
                blob: std::ptr::null(),
                size: 0,
            };
            match value {
                Value::Null => {}
                Value::Integer(i) => (v.r#type, v.integer) = (harel_value_type::HAREL_VALUE_INTEGER as i32, *i),
                Value::Real(x) => (v.r#type, v.real) = (harel_value_type::HAREL_VALUE_REAL as i32, *x),
                Value::Text(s) => {
                    (v.r#type, v.text, v.size) = (harel_value_type::HAREL_VALUE_TEXT as i32, here.cast(), s.len())
                }
                Value::Blob(b) => {
                    (v.r#type, v.blob, v.size) = (harel_value_type::HAREL_VALUE_BLOB as i32, here, b.len())
                }
            }
            v
        })
        .collect();
    let handed = harel_rows {
        n_rows: if n_columns == 0 { 0 } else { rows.len() },
        n_columns,
        values: if values.is_empty() { std::ptr::null() } else { values.as_ptr() },
    };
    to_boxed_mut_ptr_keeping(handed, (values, bytes))
}

/// Frees rows from `harel_tx_query`, with their texts and blobs. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_rows_free(rows: *mut harel_rows) {
    // SAFETY: NULL or rows the library handed out, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(rows) })
}
