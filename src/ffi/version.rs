//! The library's version: Cargo.toml's MAJOR.MINOR.PATCH, one for everything (docs/abi.md,
//! "Versioning"). `harel_version()` returns it at run time; the header carries the same
//! numbers as `HAREL_TRANSPORT_VERSION_MAJOR`, `_MINOR` and `_PATCH` (and the string as
//! `HAREL_TRANSPORT_VERSION`), written by build.rs from the same Cargo.toml fields: cbindgen
//! cannot evaluate the constants below, whose values come from `env!`.

use std::ffi::c_char;

use super::boundary_value;

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
        let header = include_str!("../../include/harel_transport.h");
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
