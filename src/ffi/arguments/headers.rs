//! A message's headers across the C ABI: read from the caller's array at a publish, and
//! handed out beside a lease or a page's items.

use std::ffi::c_char;

use super::args;
use crate::error::{Error, Result};
use crate::Headers;

/// One header: a name (1..128 bytes of visible ASCII without '=') and a value (UTF-8
/// without NUL), both NUL-terminated. In what the library hands out, both point into the
/// lease or page they came with and live as long as it does.
#[repr(C)]
pub struct harel_header {
    pub name: *const c_char,
    pub value: *const c_char,
}

/// A message's headers: `n` pairs at `items`, in the order they were published (`items`
/// may be NULL when `n` is 0).
#[repr(C)]
pub struct harel_headers {
    pub items: *const harel_header,
    pub n: usize,
}

/// The caller's `n` headers at `ptr`, checked (headers.rs: at most 64 pairs, 16 KiB);
/// None when `n` is 0. Errors name the header ("headers[2].name ...").
///
/// # Safety
/// `ptr` is NULL or points to `n` headers whose strings are NULL or NUL-terminated.
pub(crate) unsafe fn read(ptr: *const harel_header, n: usize) -> Result<Option<Headers>> {
    let items = unsafe { args::slice(ptr, n, "headers") }?;
    if items.is_empty() {
        return Ok(None);
    }
    let pairs = items
        .iter()
        .enumerate()
        .map(|(i, h)| unsafe {
            let name = args::string(h.name, &format!("headers[{i}].name"))?;
            Ok((name, args::string(h.value, &format!("headers[{i}].value"))?))
        })
        .collect::<Result<Vec<(&str, &str)>>>()?;
    Headers::new(&pairs).map(Some)
}

/// The headers of each of `n` messages (`harel_transport_publish_many_with_headers`):
/// `all` NULL (none for any) or `n` long. Errors name the message ("messages[3].headers[0].name ...").
///
/// # Safety
/// `all` is NULL or points to `n` `harel_headers`, each as `read` takes them.
pub(crate) unsafe fn read_each(all: *const harel_headers, n: usize) -> Result<Vec<Option<Headers>>> {
    if all.is_null() {
        return Ok((0..n).map(|_| None).collect());
    }
    let each = unsafe { std::slice::from_raw_parts(all, n) };
    each.iter()
        .enumerate()
        .map(|(i, h)| {
            unsafe { read(h.items, h.n) }.map_err(|e| Error::Argument(format!("messages[{i}].{}", e.message())))
        })
        .collect()
}

/// Headers handed out: the pairs' strings, each NUL-terminated, in one buffer, and the
/// array of `harel_header` pointing into it. Both stay where they are when this moves.
/// Only held: dropped with what handed them out.
pub(crate) struct HeadersOut {
    _strings: Vec<u8>,
    _items: Vec<harel_header>,
}

// SAFETY: the raw pointers point into `strings`, owned alongside.
unsafe impl Send for HeadersOut {}

impl HeadersOut {
    /// The headers of several messages at once (a page): one buffer for all.
    pub(crate) fn of_many<'h>(all: impl Iterator<Item = &'h Headers> + Clone) -> (HeadersOut, Vec<harel_headers>) {
        let size = all.clone().flat_map(|h| h.pairs()).map(|(n, v)| n.len() + v.len() + 2).sum();
        let count = all.clone().map(Headers::len).sum();
        let mut strings = Vec::with_capacity(size);
        let mut offsets = Vec::with_capacity(count);
        for (name, value) in all.clone().flat_map(|h| h.pairs()) {
            for s in [name, value] {
                offsets.push(strings.len());
                strings.extend_from_slice(s.as_bytes());
                strings.push(0);
            }
        }
        let base = strings.as_ptr().cast::<c_char>();
        // SAFETY: each offset lies within `strings`, which is not written again.
        let items: Vec<harel_header> = offsets
            .chunks_exact(2)
            .map(|at| unsafe { harel_header { name: base.add(at[0]), value: base.add(at[1]) } })
            .collect();
        let mut lists = Vec::new();
        let mut first = 0;
        for h in all {
            // SAFETY: `first + h.len()` <= items.len(): the lists cover the items in order.
            let start = if h.is_empty() { std::ptr::null() } else { unsafe { items.as_ptr().add(first) } };
            lists.push(harel_headers { items: start, n: h.len() });
            first += h.len();
        }
        (HeadersOut { _strings: strings, _items: items }, lists)
    }

    /// One message's headers (a lease).
    pub(crate) fn of(headers: &Headers) -> (HeadersOut, harel_headers) {
        let (out, mut lists) = HeadersOut::of_many(std::iter::once(headers));
        (out, lists.pop().expect("one list"))
    }
}
