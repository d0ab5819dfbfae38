//go:build harel_pkgconfig

package harel

// The pkg-config link, chosen with -tags harel_pkgconfig: the flags of an installed
// library (make install PREFIX=...), found through PKG_CONFIG_PATH when the prefix is not a
// default one.

// #cgo pkg-config: harel_transport
import "C"
