package main

// What the bench reads besides the queues' own calls: the disk's fdatasync rate, the WAL
// files' frames, the process's CPU time.

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// eventSize is every message's size: 100 bytes of JSON.
const eventSize = 100

func padded(head string) []byte {
	return []byte(head + strings.Repeat("x", eventSize-len(head)-2) + `"}`)
}

// event is message n: {"n":N,"pad":"xx..."}, 100 bytes.
func event(n int) []byte { return padded(fmt.Sprintf(`{"n":%d,"pad":"`, n)) }

// stamped is a message carrying its publisher's clock (the wake-up latency's send time).
func stamped(sentNs int64) []byte { return padded(fmt.Sprintf(`{"sent_ns":%d,"pad":"`, sentNs)) }

// fdatasyncRate is how many 4 KiB writes, each followed by fdatasync, the disk under dir
// takes per second: the writes go round a preallocated 4 MiB file, as frames go into a WAL
// that has restarted (a steady queue's WAL), so each sync is of data, not of the file's
// size. One commit at synchronous FULL costs at least one such sync.
func fdatasyncRate(dir string, d time.Duration) (float64, error) {
	const pages = 1024
	path := filepath.Join(dir, "fdatasync.probe")
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	defer f.Close()
	page := make([]byte, 4096)
	for i := 0; i < pages; i++ {
		if _, err := f.Write(page); err != nil {
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	n := 0
	start := time.Now()
	for ; time.Since(start) < d; n++ {
		if _, err := f.WriteAt(page, int64(n%pages)*int64(len(page))); err != nil {
			return 0, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// walState is what a WAL file holds now: its salts (new at each restart), its page size,
// and the page number of each valid frame, up to the last commit. Reading the WAL file is
// safe beside the library: SQLite locks the database and -shm files, never the WAL, so
// closing this process's descriptor of it releases nothing of theirs.
type walState struct {
	salt1, salt2 uint32
	pageSize     int
	pages        []uint32
}

func readWAL(path string) (walState, error) {
	var w walState
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return w, nil
	}
	if err != nil || len(data) < 32 {
		return w, err
	}
	be := binary.BigEndian
	if magic := be.Uint32(data); magic&^1 != 0x377f0682 {
		return w, fmt.Errorf("%s: not a WAL file (magic %#x)", path, magic)
	}
	w.pageSize = int(be.Uint32(data[8:]))
	w.salt1, w.salt2 = be.Uint32(data[16:]), be.Uint32(data[20:])
	last := 0
	for off := 32; off+24+w.pageSize <= len(data); off += 24 + w.pageSize {
		h := data[off : off+24]
		if be.Uint32(h[8:]) != w.salt1 || be.Uint32(h[12:]) != w.salt2 {
			break // a frame from before the last restart
		}
		w.pages = append(w.pages, be.Uint32(h))
		if be.Uint32(h[4:]) != 0 { // a commit frame
			last = len(w.pages)
		}
	}
	w.pages = w.pages[:last]
	return w, nil
}

// walDelta is the pages written between two states; ok is false when the WAL restarted in
// between (the frames before the restart are gone: the step is not counted).
func walDelta(before, after walState) (pages []uint32, ok bool) {
	if after.salt1 != before.salt1 || after.salt2 != before.salt2 || len(after.pages) < len(before.pages) {
		return nil, false
	}
	return after.pages[len(before.pages):], true
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
