//! A file's identity, (device, inode): what tells two paths to one file apart from two
//! files, and a file replaced under a path from the one that was there (other_sqlite.rs's
//! checks, the one waking signal per queue file: backend/mod.rs).

use std::fs::File;
use std::os::unix::fs::MetadataExt;

pub type Identity = (u64, u64);

/// The identity of the file at `path`, asking for nothing else. Asked for its times too
/// (as `std::fs::metadata` does), Linux 6.13 on stamps the file's next write with a
/// fine-grained time, a change to its inode, which ext4 then writes within every
/// fdatasync: other_sqlite.rs checks the WAL around each commit, whose syncs would cost a
/// quarter more at FULL.
#[cfg(target_os = "linux")]
pub fn at(path: &str) -> std::io::Result<Identity> {
    let c_path = std::ffi::CString::new(path).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    match statx(libc::AT_FDCWD, &c_path, 0, libc::STATX_INO) {
        Ok(stx) => Ok((libc::makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_ino)),
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => std::fs::metadata(path).map(|m| (m.dev(), m.ino())),
        Err(e) => Err(e),
    }
}

/// statx(2) as a system call, not through glibc's wrapper, which glibc has from 2.28 on
/// only: the portable library (mk/dist.mk) is linked against glibc 2.17, where the wrapper
/// would be left unresolved and the library would not load. A kernel older than 4.11 (RHEL
/// 7's 3.10) answers ENOSYS, and the callers ask stat instead.
#[cfg(target_os = "linux")]
fn statx(
    dirfd: libc::c_int,
    path: &std::ffi::CStr,
    flags: libc::c_int,
    mask: libc::c_uint,
) -> std::io::Result<libc::statx> {
    // SAFETY: a zeroed statx is a valid value; the kernel reads the NUL-terminated path
    // and writes the struct.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let stx_ptr: *mut libc::statx = &mut stx;
    let done = unsafe { libc::syscall(libc::SYS_statx, dirfd, path.as_ptr(), flags, mask, stx_ptr) };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stx)
}

#[cfg(not(target_os = "linux"))]
pub fn at(path: &str) -> std::io::Result<Identity> {
    std::fs::metadata(path).map(|m| (m.dev(), m.ino()))
}

/// Whether an open file still has a name (a link count above 0), asking for nothing else
/// (see `at`) and looking up no path. An error counts as linked: a check that cannot be
/// made must not fail a transaction.
#[cfg(target_os = "linux")]
pub fn linked(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // with AT_EMPTY_PATH and "", statx reads the descriptor's file
    match statx(file.as_raw_fd(), c"", libc::AT_EMPTY_PATH, libc::STATX_NLINK) {
        Ok(stx) => stx.stx_nlink > 0,
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => file.metadata().map_or(true, |m| m.nlink() > 0),
        Err(_) => true,
    }
}

#[cfg(not(target_os = "linux"))]
pub fn linked(file: &File) -> bool {
    file.metadata().map_or(true, |m| m.nlink() > 0)
}

/// The identity of an open file.
pub fn of(file: &File) -> std::io::Result<Identity> {
    file.metadata().map(|m| (m.dev(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_and_its_open_file_have_one_identity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.db");
        std::fs::write(&path, b"x").unwrap();
        let path = path.to_str().unwrap();
        // Both kinds key the open files of ours: they must agree.
        assert_eq!(at(path).unwrap(), of(&File::open(path).unwrap()).unwrap());
        let other = dir.path().join("other.db");
        std::fs::write(&other, b"y").unwrap();
        assert_ne!(at(path).unwrap(), at(other.to_str().unwrap()).unwrap());
    }

    #[test]
    fn an_open_file_is_linked_until_its_name_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.db-wal");
        std::fs::write(&path, b"x").unwrap();
        let file = File::open(&path).unwrap();
        assert!(linked(&file));
        // Replaced: a new file under the name leaves the open one without a link.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"y").unwrap();
        assert!(!linked(&file), "other_sqlite.rs tells a replaced WAL by its link count");
    }

    #[test]
    fn a_missing_path_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.db");
        let e = at(missing.to_str().unwrap()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "other_sqlite.rs makes the file on NotFound");
        assert_eq!(at("a\0b").unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    }
}
