package harel

import (
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

// The calls that take arrays (PublishMany, the batch acks, a transaction's parameters)
// build arrays of structs holding pointers (harel_message, harel_lease, harel_value) in C
// memory and fill them from Go. Go stores a pointer field with a write barrier, and while
// the GC marks, that barrier hands the slot's old value to the GC as a pointer. Memory
// fresh from malloc holds what its last owner left there: the library frees allocations
// that held the addresses of Go variables passed to it (&cerr, &out), and a stale address
// of a dead Go object, read as live, corrupted the heap (bench-goqite died of it inside
// PublishMany: "found pointer to free object", "found bad pointer in Go heap").
//
// The messages' test leaves addresses of dead Go objects in the C memory that the next
// array of the same size will get (freed on the same thread, malloc hands the same chunk
// back), then builds the array while garbage collections run back to back. Before alloc
// zeroed its memory, it crashed the test binary within its first rounds.

const dirtyRounds = 2000

func TestMessagesArrayOverDirtyCMemory(t *testing.T) {
	msgs := make([]Message, 30)
	for i := range msgs {
		msgs[i] = Message{GroupID: "g" + strconv.Itoa(i), Event: []byte(`{"n":1}`), RoutingKey: "k"}
	}
	overDirtyMemory(t, func(strs *cStrings) (unsafe.Pointer, uintptr) {
		array, err := strs.messages(msgs)
		if err != nil {
			t.Fatal(err)
		}
		return unsafe.Pointer(array), uintptr(len(msgs)) * unsafe.Sizeof(*array)
	})
}

// The headers' arrays: a message's harel_header array, and a batch's harel_headers array.
func TestHeadersArraysOverDirtyCMemory(t *testing.T) {
	hs := make([]Header, 30)
	for i := range hs {
		hs[i] = Header{Name: "h" + strconv.Itoa(i), Value: "v"}
	}
	overDirtyMemory(t, func(strs *cStrings) (unsafe.Pointer, uintptr) {
		array, err := strs.headers("", hs)
		if err != nil {
			t.Fatal(err)
		}
		return unsafe.Pointer(array), uintptr(len(hs)) * unsafe.Sizeof(*array)
	})
	msgs := make([]Message, 30)
	for i := range msgs {
		msgs[i] = Message{GroupID: "g", Event: []byte(`{}`), Headers: hs[:i%3]}
	}
	overDirtyMemory(t, func(strs *cStrings) (unsafe.Pointer, uintptr) {
		array, err := strs.messageHeaders(msgs)
		if err != nil {
			t.Fatal(err)
		}
		return unsafe.Pointer(array), uintptr(len(msgs)) * unsafe.Sizeof(*array)
	})
}

// TestAllocIsZeroed: every array of pointer-holding structs (messages, leases, a
// statement's parameters) comes from alloc, and is safe to fill from Go because alloc
// zeroes it. (The leases and parameters are copied in by a bulk barrier, which skips C
// memory today; an inlined barrier, as the messages get, would read the old values.)
func TestAllocIsZeroed(t *testing.T) {
	runtime.LockOSThread() // one thread: malloc's per-thread cache hands the freed chunk back
	defer runtime.UnlockOSThread()
	const size = 512
	for round := 0; round < 100; round++ {
		var dirty cStrings
		words := unsafe.Slice((*uintptr)(dirty.alloc(size)), size/unsafe.Sizeof(uintptr(0)))
		for i := range words {
			words[i] = ^uintptr(0)
		}
		dirty.free()
		var strs cStrings
		p := strs.alloc(size)
		for i, b := range unsafe.Slice((*byte)(p), size) {
			if b != 0 {
				strs.free()
				t.Fatalf("round %d: byte %d of a fresh allocation is %#x, not 0", round, i, b)
			}
		}
		strs.free()
	}
}

// overDirtyMemory runs build (which allocates an array first, then its strings) round
// after round: each round's array is filled with dead Go heap addresses and freed before
// the next round builds it again, while another goroutine keeps the GC marking.
func overDirtyMemory(t *testing.T, build func(*cStrings) (array unsafe.Pointer, size uintptr)) {
	runtime.LockOSThread() // one thread: malloc's per-thread cache hands the freed chunk back
	defer runtime.UnlockOSThread()
	dead := deadHeapAddresses()
	stop := make(chan struct{})
	collecting := make(chan struct{})
	go func() {
		defer close(collecting)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() { close(stop); <-collecting }()
	deadline := time.Now().Add(20 * time.Second)
	for round := 0; round < dirtyRounds && time.Now().Before(deadline); round++ {
		var strs cStrings
		array, size := build(&strs)
		words := unsafe.Slice((*uintptr)(array), size/unsafe.Sizeof(uintptr(0)))
		for i := range words {
			words[i] = dead[i%len(dead)] // uintptr stores: no write barrier, as C's own writes
		}
		strs.free()
	}
}

// deadHeapAddresses are addresses inside Go objects that the GC has since freed, kept as
// integers so that nothing keeps them alive.
func deadHeapAddresses() []uintptr {
	var dead []uintptr
	for i := 0; i < 64; i++ {
		b := make([]byte, 64<<10)
		dead = append(dead, uintptr(unsafe.Pointer(&b[0]))+uintptr(i%8)*1024)
	}
	runtime.GC()
	runtime.GC()
	return dead
}
