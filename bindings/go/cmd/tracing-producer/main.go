// Command tracing-producer is the Go producer of the cross-language trace test
// (tests/tracing/run.py): under the remote parent --traceparent, it publishes one message
// per routing key of --keys to --queue (group go-KEY, event {"from":"go","key":"KEY"}),
// each its own span, traced with the OpenTelemetry SDK's in-memory exporter, and writes its
// spans to --spans, one JSON object per line.
//
//	tracing-producer --queue PATH-OR-URL [--prefix harel] --spans FILE --traceparent TP --keys go,node,python,rust
package main

import (
	"os"

	"github.com/harel-transport/harel-transport/bindings/go/internal/tracingcli"
)

func main() { os.Exit(tracingcli.Producer(os.Args[1:], os.Stderr)) }
