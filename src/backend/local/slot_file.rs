//! The slot's file (`<database>-harel`, lock.rs) mapped into memory: its two stamps are
//! read and written as memory that every process mapping the file shares, so taking the
//! slot reads them with no system call. The bytes are those an older library reads and
//! writes with pread and pwrite (little-endian u64s at offsets 0 and 8): both see each
//! other's stamps through the page cache.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// The file's stamps, by index.
const STAMPS: usize = 2;
const LEN: usize = STAMPS * 8;

pub struct SlotFile {
    file: File,
    stamps: NonNull<AtomicU64>,
}

// SAFETY: the mapping is shared memory, read and written only through atomics, and lives
// as long as the value.
unsafe impl Send for SlotFile {}
unsafe impl Sync for SlotFile {}

impl SlotFile {
    /// Opens (or makes) the file at `path` and maps its stamps; None when either cannot be
    /// done (a read-only directory, a filesystem that cannot map).
    pub fn open(path: &str) -> Option<SlotFile> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).ok()?;
        // Nobody shrinks it: the mapped bytes stay inside the file.
        if file.metadata().ok()?.len() < LEN as u64 {
            file.set_len(LEN as u64).ok()?;
        }
        // SAFETY: a fresh shared mapping of the file's first LEN bytes, which exist.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return None;
        }
        // A page-aligned mapping is aligned for AtomicU64.
        let stamps = NonNull::new(at.cast::<AtomicU64>())?;
        Some(SlotFile { file, stamps })
    }

    pub fn try_lock(&self) -> Result<(), TryLockError> {
        self.file.try_lock()
    }

    pub fn unlock(&self) {
        let _ = self.file.unlock();
    }

    pub fn read(&self, stamp: usize) -> u64 {
        u64::from_le(self.stamp(stamp).load(Ordering::Relaxed))
    }

    pub fn write(&self, stamp: usize, value: u64) {
        self.stamp(stamp).store(value.to_le(), Ordering::Relaxed);
    }

    fn stamp(&self, stamp: usize) -> &AtomicU64 {
        assert!(stamp < STAMPS);
        // SAFETY: inside the mapping (checked above), which outlives &self.
        unsafe { &*self.stamps.as_ptr().add(stamp) }
    }
}

impl Drop for SlotFile {
    fn drop(&mut self) {
        // SAFETY: the mapping made in open, unmapped once.
        unsafe { libc::munmap(self.stamps.as_ptr().cast(), LEN) };
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    use super::*;

    #[test]
    fn stamps_are_the_bytes_an_older_library_reads_and_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.db-harel");
        let path = path.to_str().unwrap();
        let slot = SlotFile::open(path).unwrap();
        let older = OpenOptions::new().read(true).write(true).open(path).unwrap();
        assert_eq!(older.metadata().unwrap().len(), LEN as u64, "made as long as its stamps");
        slot.write(1, 0x0102_0304_0506_0708);
        let mut bytes = [0u8; 8];
        older.read_at(&mut bytes, 8).unwrap();
        assert_eq!(u64::from_le_bytes(bytes), 0x0102_0304_0506_0708);
        older.write_at(&42u64.to_le_bytes(), 0).unwrap();
        assert_eq!(slot.read(0), 42);
        // A second process's mapping (here: a second open) shares them.
        assert_eq!(SlotFile::open(path).unwrap().read(1), 0x0102_0304_0506_0708);
    }
}
