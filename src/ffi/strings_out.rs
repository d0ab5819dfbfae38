//! Strings handed to C inside a struct the library allocated (a page, the stats): each a
//! NUL-terminated copy that lives as long as the struct, with its length beside it where
//! the text may hold NUL bytes.

use std::ffi::c_char;
use std::ptr;

/// The copies of one allocation. A copy's bytes stay where they are when the owner moves.
#[derive(Default)]
pub(crate) struct Strings(Vec<Box<[u8]>>);

impl Strings {
    /// A copy of `text` with a NUL after it: its pointer and its length in bytes.
    pub(crate) fn add(&mut self, text: &str) -> (*const c_char, usize) {
        let mut bytes = Vec::with_capacity(text.len() + 1);
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(0);
        let copy = bytes.into_boxed_slice();
        let at = copy.as_ptr().cast::<c_char>();
        self.0.push(copy);
        (at, text.len())
    }

    /// As `add`, NULL for None; only the pointer (the text holds no NUL: a worker id, a
    /// routing key, a cursor).
    pub(crate) fn add_optional(&mut self, text: Option<&str>) -> *const c_char {
        text.map_or(ptr::null(), |t| self.add(t).0)
    }
}

/// An optional number for C: the value, or -1 for none (every such number is >= 0).
pub(crate) fn or_minus_one(value: Option<f64>) -> f64 {
    value.unwrap_or(-1.0)
}
