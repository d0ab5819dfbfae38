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

/// Handles that C gets as ids, never addresses: a table maps each to its value, so a
/// handle used after its free (or never made) is refused with an error instead of being
/// undefined behaviour, and a second free does nothing. Ids are never reused. For handles
/// that a program keeps in its event loop's state (`harel_watch`), where a stale copy is
/// easy to hold. Values are shared (`Arc`): a call in progress keeps its value alive
/// through a concurrent free.
pub(crate) struct Registry<T> {
    table: std::sync::Mutex<Option<(u64, std::collections::HashMap<u64, std::sync::Arc<T>>)>>,
}

impl<T> Registry<T> {
    pub(crate) const fn new() -> Registry<T> {
        Registry { table: std::sync::Mutex::new(None) }
    }

    fn table<R>(&self, f: impl FnOnce(&mut (u64, std::collections::HashMap<u64, std::sync::Arc<T>>)) -> R) -> R {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        f(table.get_or_insert_with(|| (0, std::collections::HashMap::new())))
    }

    /// `value` under a new id, as the handle C holds.
    pub(crate) fn add<C>(&self, value: T) -> *mut C {
        self.table(|(last, values)| {
            *last += 1;
            values.insert(*last, std::sync::Arc::new(value));
            *last as usize as *mut C
        })
    }

    /// The value of a live handle; None for NULL, a freed or a made-up one.
    pub(crate) fn get<C>(&self, handle: *const C) -> Option<std::sync::Arc<T>> {
        self.table(|(_, values)| values.get(&(handle as usize as u64)).cloned())
    }

    /// The values of every live handle.
    pub(crate) fn values(&self) -> Vec<std::sync::Arc<T>> {
        self.table(|(_, values)| values.values().cloned().collect())
    }

    /// Ends a handle; false when it was not live (NULL, freed already, made up).
    pub(crate) fn remove<C>(&self, handle: *mut C) -> bool {
        self.table(|(_, values)| values.remove(&(handle as usize as u64)).is_some())
    }
}
