//! Every exported function of the C ABI runs inside the panic boundary (src/ffi/mod.rs):
//! a panic must never unwind into C. A panic cannot be provoked from outside in the small
//! functions (`harel_status_name`, `harel_version`, ...), so this reads the source: each
//! `extern "C"` function's body must start with one of the boundary's entries, or with a
//! call to another exported function (an older call made of a newer one), itself checked.

use std::path::{Path, PathBuf};

/// The ways into the boundary: `boundary` and `boundary_value` themselves, and the FFI
/// layer's helpers that call `boundary` first thing.
const ENTRIES: &[&str] =
    &["boundary(", "boundary_value(", "super::boundary_value(", "on_handle(", "claim_into(", "batch_into(", "set(", "string_out(", "look(", "boundary_out("];

/// `(name, first line of the body)` of every `pub extern "C" fn` in `source`.
fn exported_bodies(source: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("pub extern \"C\" fn ") {
        let after = &rest[at + "pub extern \"C\" fn ".len()..];
        let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let body = &after[after.find('{').expect("a function body")..];
        let first = body[1..]
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with("//"))
            .unwrap_or_default()
            .to_owned();
        found.push((name, first));
        rest = after;
    }
    found
}

#[test]
fn every_exported_function_runs_inside_the_panic_boundary() {
    let mut bodies = Vec::new();
    for path in sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ffi")) {
        let source = std::fs::read_to_string(&path).expect("readable");
        bodies.extend(exported_bodies(&source).into_iter().map(|(name, first)| (path.clone(), name, first)));
    }
    let mut exported: Vec<String> = bodies.iter().map(|(_, name, _)| name.clone()).collect();
    for (path, name, first) in &bodies {
        let delegates = exported.iter().any(|other| other != name && first.starts_with(&format!("{other}(")));
        assert!(
            delegates || ENTRIES.iter().any(|entry| first.starts_with(entry)),
            "{}: {name} starts with `{first}`, outside the panic boundary",
            path.display()
        );
    }
    exported.sort();
    assert_eq!(exported, declared_in_header(), "the source read is the whole ABI");
}

/// Every file under `dir`, its folders' included.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a folder of src/ffi") {
        let path = entry.expect("an entry of src/ffi").path();
        if path.is_dir() {
            found.extend(sources(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// The function names the header declares (outside its comments).
fn declared_in_header() -> Vec<String> {
    let header = include_str!("../include/harel_transport.h");
    let mut names: Vec<String> = header
        .lines()
        .filter(|line| !line.trim_start().starts_with('*') && !line.trim_start().starts_with("/*"))
        .flat_map(|line| line.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '(')))
        .filter_map(|word| word.strip_suffix('(').or_else(|| word.split_once('(').map(|(name, _)| name)))
        .filter(|name| name.starts_with("harel_"))
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_reader_finds_a_body_that_starts_outside_the_boundary() {
    let source = "pub extern \"C\" fn harel_x() -> i32 {\n    // why\n    let y = 1;\n    y\n}\n";
    assert_eq!(exported_bodies(source), [("harel_x".to_owned(), "let y = 1;".to_owned())]);
}
