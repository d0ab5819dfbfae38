//go:build !harel_pkgconfig && !(harel_static && linux && amd64)

package harel

// The default link: the header and library are found through the environment
// (CGO_CFLAGS=-I<include dir>, CGO_LDFLAGS=-L<lib dir>, plus -Wl,-rpath,<lib dir> when that
// directory is not one the dynamic linker searches), or in the compiler's default paths
// when the library is installed under /usr or /usr/local. Build with -tags harel_pkgconfig
// to ask pkg-config instead (link_pkgconfig.go), or with -tags harel_static to link the
// static library shipped in the module (link_static.go).

// #cgo LDFLAGS: -lharel_transport
import "C"
