// Command worker is the Go worker of the cross-language demo, written as the binding's
// worker loop: a claim of up to -batch messages that waits for work (ClaimMany), each
// message handled under KeepAlive (its lease extended while it runs), and one commit that
// acks the batch and claims the next (AckAndClaimMany). Once a claim has waited -idle and
// nothing came, or on SIGINT/SIGTERM (which end the wait at once), it prints
//
//	go WORKER_ID: processed N
//
// and exits 0 (1 on an error, 2 on bad usage). It checks nothing itself; with -log it
// writes what the demo (examples/demo.rs) needs to check per-group order, one line per
// finished message:
//
//	claimed_ns acking_ns seq group_id
//
// epoch nanoseconds stamped after the claim returned and before the ack was sent, so the
// interval lies inside the lease. A message whose lease was lost (it lapsed and another
// worker has it) is not logged.
//
// Usage:
//
//	worker [flags] DATABASE WORKER_ID      (flags may also follow the arguments)
//	worker -db DATABASE -worker WORKER_ID [flags]
//
//	-idle D         stop once a claim waited D and nothing came (default 1s)
//	-batch N        claim up to N messages at a time, 1..1000 (default 10)
//	-visibility D   lease length (default 30s)
//	-log FILE       the order log; "-" writes it to stdout
//	-v              one line per message on stderr
//
// Build it with `make examples-go` (build/examples/go/worker).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("need DATABASE and WORKER_ID (arguments or -db/-worker), nothing more, and -idle >= 0")

type settings struct {
	database, worker string
	idle, visibility time.Duration
	batch            int
	log              string
	verbose          bool
}

// parse reads flags before, between and after the two positional arguments.
func parse(args []string, stderr io.Writer) (settings, error) {
	var s settings
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: worker [flags] DATABASE WORKER_ID  (or -db DATABASE -worker WORKER_ID)")
		fs.PrintDefaults()
	}
	fs.StringVar(&s.database, "db", "", "the queue's database (instead of the DATABASE argument)")
	fs.StringVar(&s.worker, "worker", "", "this worker's id (instead of the WORKER_ID argument)")
	fs.DurationVar(&s.idle, "idle", time.Second, "stop once a claim waited this long and nothing came")
	fs.IntVar(&s.batch, "batch", 10, "claim up to this many messages at a time (1..1000)")
	fs.DurationVar(&s.visibility, "visibility", 30*time.Second, "lease length")
	fs.StringVar(&s.log, "log", "", `write "claimed_ns acking_ns seq group_id" per message to this file ("-": stdout)`)
	fs.BoolVar(&s.verbose, "v", false, "print one line per message on stderr")
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return s, err
			}
			return s, fmt.Errorf("%w: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	for _, p := range []*string{&s.database, &s.worker} {
		if *p == "" && len(positional) > 0 {
			*p, positional = positional[0], positional[1:]
		}
	}
	if s.database == "" || s.worker == "" || len(positional) > 0 || s.idle < 0 {
		fs.Usage()
		return s, errUsage
	}
	return s, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	s, err := parse(args, stderr)
	if err != nil {
		return err
	}
	var orderLog *bufio.Writer
	switch s.log {
	case "":
	case "-":
		orderLog = bufio.NewWriter(stdout)
	default:
		f, err := os.Create(s.log)
		if err != nil {
			return err
		}
		defer f.Close()
		orderLog = bufio.NewWriter(f)
	}

	t, err := harel.Open(s.database)
	if err != nil {
		return err
	}
	defer t.Close()
	// A signal ends a claim's wait at once (it returns having claimed nothing) and the
	// worker stops after the batch in hand.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	processed := 0
claiming:
	for ctx.Err() == nil {
		leases, err := t.ClaimMany(ctx, s.worker, s.visibility, s.batch, s.idle)
		switch {
		case errors.Is(err, harel.ErrBusy): // another process held the write lock: try again
			fmt.Fprintln(stderr, "worker:", err)
			continue
		case errors.Is(err, context.Canceled): // a signal
			break claiming
		case err != nil:
			return err
		case len(leases) == 0: // nothing came within -idle
			break claiming
		}
		for len(leases) > 0 {
			claimed := time.Now().UnixNano()
			done := make([]*harel.Lease, 0, len(leases))
			for _, lease := range leases {
				if handle(ctx, t, lease, s, stderr) {
					done = append(done, lease)
				}
			}
			acking := time.Now().UnixNano()
			next := ctx.Err() == nil // after a signal, ack what is done and claim nothing
			var acked []error
			if next {
				leases, acked, err = t.AckAndClaimMany(done, s.worker, s.visibility, s.batch)
			} else {
				leases = nil
				acked, err = t.AckMany(done)
			}
			if err != nil {
				return err // nothing was acked: the leases lapse and other workers redo them
			}
			for i, lease := range done {
				if acked[i] != nil { // it lapsed: another worker has it now
					fmt.Fprintln(stderr, "worker:", acked[i])
					continue
				}
				if orderLog != nil {
					fmt.Fprintf(orderLog, "%d %d %d %s\n", claimed, acking, lease.Seq, lease.GroupID)
				}
				processed++
			}
		}
	}
	if orderLog != nil {
		if err := orderLog.Flush(); err != nil {
			return err
		}
	}
	t.Close() // closing cannot fail (always nil); the deferred Close then does nothing
	fmt.Fprintf(stdout, "go %s: processed %d\n", s.worker, processed)
	return nil
}

// handle is the work, here reading the event's kind and id, under KeepAlive: the lease is
// extended while it runs (a third of the visibility at a time), and a lease lost meanwhile
// is not acked (false).
func handle(ctx context.Context, t *harel.Transport, lease *harel.Lease, s settings, stderr io.Writer) bool {
	_, stop := t.KeepAlive(ctx, lease, s.visibility) // the work below would watch its context
	var ev struct {
		Kind string `json:"kind"`
		ID   string `json:"id"`
	}
	_ = json.Unmarshal(lease.Event, &ev) // any JSON text is an event; a harel one has kind and id
	if s.verbose {
		fmt.Fprintf(stderr, "go %s: %s seq %d %s %s\n", s.worker, lease.GroupID, lease.Seq, ev.Kind, ev.ID)
	}
	if err := stop(); err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return false
	}
	return true
}
