//! The checked-in header must be what cbindgen generates from the FFI layer now.

#[test]
fn checked_in_header_is_fresh() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/harel_transport.h"));
    let checked_in = include_str!("../include/harel_transport.h");
    assert!(
        generated == checked_in,
        "include/harel_transport.h is stale: run `make header` and commit it"
    );
}
