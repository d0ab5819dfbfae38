// Command tracing-worker is the Go worker of the cross-language trace test
// (tests/tracing/run.py): it claims and acks --count messages of routing key --key from
// --queue, traced with the OpenTelemetry SDK's in-memory exporter, and writes its spans to
// --spans, one JSON object per line.
//
//	tracing-worker --queue PATH-OR-URL [--prefix harel] --spans FILE --key KEY --count N
package main

import (
	"os"

	"github.com/harel-transport/harel-transport/bindings/go/internal/tracingcli"
)

func main() { os.Exit(tracingcli.Worker(os.Args[1:], os.Stderr)) }
