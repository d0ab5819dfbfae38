//! Who owns what crosses the boundary, said once per C type ([`Castable`]), and the only
//! code that boxes a value for C, takes it back or frees it (rustls-ffi's way). An exported
//! function takes each handle argument in one line, `let t = try_ref_from_ptr!(t);`, and a
//! free function is `free_box(p)`.

use std::ffi::{c_char, CString};
use std::marker::PhantomData;

/// The ways a C type's pointers can be owned; each C type has one ([`Castable::Ownership`]).
/// rustls-ffi also has Arc (a handle C shares) and borrowed (one living inside another):
/// no handle here is either.
pub(crate) trait Ownership {}

/// Made by the library in a Box, the caller's until it passes the pointer to the type's free
/// function. `Keep` is what the box holds besides the value: the buffers a C struct's
/// pointers point into, freed with it.
pub(crate) struct Boxed<Keep = ()>(PhantomData<Keep>);

impl<Keep> Ownership for Boxed<Keep> {}

/// A C type: how its pointers are owned, and what they point to on the Rust side.
pub(crate) trait Castable {
    type Ownership: Ownership;
    /// The Rust value behind an opaque handle (a `harel_transport` is a `Transport`), or
    /// the C struct itself.
    type RustType;
}

/// What a Box handed to C holds. The value comes first, so a pointer to the whole is a
/// pointer to the value: C reads a `harel_lease` of ours as one of its own.
#[repr(C)]
struct Owned<T, Keep> {
    value: T,
    _keep: Keep,
}

/// `value` as a pointer that is the caller's to free.
pub(crate) fn to_boxed_mut_ptr<C: Castable<Ownership = Boxed>>(value: C::RustType) -> *mut C {
    to_boxed_mut_ptr_keeping(value, ())
}

/// As [`to_boxed_mut_ptr`], with what `value`'s pointers point into.
pub(crate) fn to_boxed_mut_ptr_keeping<C, Keep>(value: C::RustType, keep: Keep) -> *mut C
where
    C: Castable<Ownership = Boxed<Keep>>,
{
    Box::into_raw(Box::new(Owned { value, _keep: keep })).cast()
}

/// Takes back the value behind a pointer the caller gives up; None for NULL.
///
/// # Safety
/// `ptr` is NULL or came from [`to_boxed_mut_ptr`] (or `_keeping`) and is not used again.
pub(crate) unsafe fn take_from_ptr<C, Keep>(ptr: *mut C) -> Option<C::RustType>
where
    C: Castable<Ownership = Boxed<Keep>>,
{
    let owned = ptr.cast::<Owned<C::RustType, Keep>>();
    // SAFETY: the caller's promise; the box is dropped here, with what it keeps.
    (!owned.is_null()).then(|| unsafe { Box::from_raw(owned) }.value)
}

/// Frees what `ptr` points to; NULL does nothing.
///
/// # Safety
/// As for [`take_from_ptr`].
pub(crate) unsafe fn free_box<C, Keep>(ptr: *mut C)
where
    C: Castable<Ownership = Boxed<Keep>>,
{
    drop(unsafe { take_from_ptr(ptr) });
}

/// What `ptr` points to, for the call; None for NULL.
///
/// # Safety
/// `ptr` is NULL or live: handed out and not yet freed, or a C struct of the caller's own.
pub(crate) unsafe fn ref_from_ptr<'a, C: Castable>(ptr: *const C) -> Option<&'a C::RustType> {
    unsafe { ptr.cast::<C::RustType>().as_ref() }
}

/// As [`ref_from_ptr`], mutable.
///
/// # Safety
/// As for [`ref_from_ptr`], and nothing else uses it during the call.
pub(crate) unsafe fn mut_from_ptr<'a, C: Castable>(ptr: *mut C) -> Option<&'a mut C::RustType> {
    unsafe { ptr.cast::<C::RustType>().as_mut() }
}

/// A reference to what pointer argument `$ptr` points to, or an early `Err` naming it
/// ("t is NULL"; `$name` when the argument is an element, as "leases[2]"). Only for an
/// exported function's pointer arguments: their contract (NULL or live for the call) is
/// what makes this safe.
macro_rules! try_ref_from_ptr {
    ($ptr:ident) => {
        $crate::ffi::ownership::try_ref_from_ptr!($ptr, stringify!($ptr))
    };
    ($ptr:expr, $name:expr) => {{
        let ptr = $ptr;
        // SAFETY: the exported function's contract: NULL or live for the call.
        unsafe { $crate::ffi::ownership::ref_from_ptr(ptr) }.ok_or_else(|| $crate::ffi::args::null($name))?
    }};
}
pub(crate) use try_ref_from_ptr;

/// As [`try_ref_from_ptr!`], mutable.
macro_rules! try_mut_from_ptr {
    ($ptr:ident) => {{
        let ptr = $ptr;
        // SAFETY: the exported function's contract: NULL or live, and not shared, for the call.
        unsafe { $crate::ffi::ownership::mut_from_ptr(ptr) }.ok_or_else(|| $crate::ffi::args::null(stringify!($ptr)))?
    }};
}
pub(crate) use try_mut_from_ptr;

/// `text` as a NUL-terminated string that is the caller's to free with harel_string_free.
pub(crate) fn to_c_string(text: CString) -> *mut c_char {
    text.into_raw()
}

/// Frees a string from [`to_c_string`]; NULL does nothing.
///
/// # Safety
/// `s` is NULL or came from [`to_c_string`] and is not used again.
pub(crate) unsafe fn free_c_string(s: *mut c_char) {
    if !s.is_null() {
        drop(unsafe { CString::from_raw(s) });
    }
}
