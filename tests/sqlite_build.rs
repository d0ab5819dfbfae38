//! How the SQLite inside the library was built (.cargo/config.toml): it syncs with
//! fdatasync. Without `HAVE_FDATASYNC` the bundled source falls back to fsync and never
//! names fdatasync, so the library's dynamic symbols show which one it calls.

#[test]
fn the_library_syncs_with_fdatasync() {
    // The test binary is target/<profile>/deps/<name>; the library is built beside it.
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let library = deps.join("libharel_transport.so");
    let bytes = std::fs::read(&library).unwrap_or_else(|e| panic!("{}: {e}", library.display()));
    let names = |name: &[u8]| bytes.windows(name.len()).any(|w| w == name);
    assert!(
        names(b"fdatasync\0"),
        "the SQLite in {} does not call fdatasync: built without HAVE_FDATASYNC",
        library.display()
    );
}
