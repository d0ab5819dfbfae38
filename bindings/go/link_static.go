//go:build harel_static && linux && amd64

package harel

// The static link, chosen with -tags harel_static on linux/amd64: the portable library
// (linked against glibc 2.17, `make dist` at the repository's root) shipped inside the
// module, lib/linux_amd64/libharel_transport.a, with its header in lib/include, as
// confluent-kafka-go ships librdkafka: `go get` and `go build -tags harel_static` need no
// installed libharel_transport and no CGO_CFLAGS or CGO_LDFLAGS, and the program needs no
// libharel_transport.so when it runs.
//
// The -L below names a directory that holds no .so, so -lharel_transport takes the archive;
// a -L of CGO_LDFLAGS would come first, so leave CGO_LDFLAGS unset. After it, what the Rust standard library in
// the archive needs of the system (rustc --print native-static-libs, the same as
// harel_transport.pc's Libs.private): -ldl, -lpthread and -lrt are libraries of their own
// before glibc 2.34 (in 2.34 and later empty ones, harmless), libgcc_s unwinds a panic to
// the FFI boundary that catches it.

// #cgo CFLAGS: -I${SRCDIR}/lib/include
// #cgo LDFLAGS: -L${SRCDIR}/lib/linux_amd64 -lharel_transport -lgcc_s -lutil -lrt -lpthread -lm -ldl
import "C"
