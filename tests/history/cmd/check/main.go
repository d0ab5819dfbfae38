// Command check checks a history a run left in a directory (logs/*.jsonl and dump.json):
// a line per property, the violations found, and "history: N passed, N failed". It exits
// 1 if a property failed.
//
//	check [-show 5] DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/harel-transport/harel-transport/tests/history/check"
)

func main() {
	show := flag.Int("show", 5, "violations shown per property")
	timeout := flag.Duration("linear-timeout", time.Minute, "how long porcupine may spend on one group")
	flag.Parse()
	check.LinearTimeout = *timeout
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: check [-show N] DIR")
		os.Exit(2)
	}
	check.VisualizeDir = flag.Arg(0)
	h, err := check.Load(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	rs := check.Run(h)
	failed := check.Report(os.Stdout, rs, *show)
	fmt.Printf("history: %d passed, %d failed\n", len(rs)-failed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
