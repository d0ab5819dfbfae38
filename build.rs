//! Generates the C header from the FFI layer's doc comments into OUT_DIR. With
//! HAREL_WRITE_HEADER=1 (`make header`) it also refreshes include/harel_transport.h.

use std::path::PathBuf;

/// The ABI's version: it goes up with every change that can break a program built against
/// an older header. Makefile reads it from here.
const ABI_VERSION: u32 = 1;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("harel_transport.h");
    println!("cargo:rerun-if-changed=src/ffi");
    // The soname carries the ABI version (docs/abi.md, "Versioning"); `make install` puts
    // the file libharel_transport.so.VERSION behind it.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libharel_transport.so.{ABI_VERSION}");
    // Only the header's functions are exported: rustc exports every #[no_mangle] item of
    // every crate linked in (libsql's `update_hook_cb` among them), names that could bind
    // to another library's in a process that loads both. The dependencies come in as
    // archives (rlibs), so --exclude-libs hides all of theirs and leaves this crate's. A
    // second version script cannot narrow rustc's: lld merges the two, GNU ld refuses the
    // pair. tests/exports.sh holds the exports to the header.
    //
    // zig's linker (cargo zigbuild, the glibc 2.17 build of `make portable-lib`, mk/dist.mk)
    // refuses --exclude-libs, and of several version scripts it keeps the last: there a script
    // of our own, after rustc's, narrows the exports to the header's prefix instead.
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_default();
    let zig = std::path::Path::new(&linker)
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with("zigcc"));
    if zig {
        let map = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("exports.map");
        std::fs::write(&map, "{\n  global: harel_*;\n  local: *;\n};\n").expect("write exports.map");
        println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", map.display());
    } else {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
    }
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=HAREL_WRITE_HEADER");
    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // The version macros, from Cargo.toml's version (cbindgen cannot evaluate src/ffi/version.rs's
    // constants, whose values come from env!).
    let version = |part: &str| std::env::var(format!("CARGO_PKG_VERSION_{part}")).expect("set by cargo");
    config.after_includes = Some(format!(
        "\n/* The library's version, Cargo.toml's; harel_version() returns it at run time. */\n\
         #define HAREL_TRANSPORT_VERSION_MAJOR {}\n#define HAREL_TRANSPORT_VERSION_MINOR {}\n\
         #define HAREL_TRANSPORT_VERSION_PATCH {}\n#define HAREL_TRANSPORT_VERSION \"{}\"\n\n\
         /* 0.2.0's name of HAREL_MAX_PAGE, kept so its programs still compile; use HAREL_MAX_PAGE. */\n\
         #define MAX_PAGE HAREL_MAX_PAGE",
        version("MAJOR"),
        version("MINOR"),
        version("PATCH"),
        std::env::var("CARGO_PKG_VERSION").expect("set by cargo"),
    ));
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("the FFI layer must be expressible in C");
    bindings.write_to_file(&out);
    if std::env::var("HAREL_WRITE_HEADER").as_deref() == Ok("1") {
        bindings.write_to_file(crate_dir.join("include/harel_transport.h"));
    }
}
