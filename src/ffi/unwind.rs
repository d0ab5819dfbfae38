//! The panic boundary of the functions that return a value instead of a status (free
//! functions, constructors, static strings). Apart from `boundary` (mod.rs), which reports
//! through the error types (errors/), so that those can use it without a circle.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `body`; a panic yields `on_panic` instead of unwinding into C.
pub(crate) fn boundary_value<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(on_panic)
}
