// Command worker is the Go worker of the cross-language demo: it claims, handles and acks
// messages until the queue has stayed empty for a number of polls in a row, then prints
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
// interval lies inside the lease.
//
// Usage:
//
//	worker [flags] DATABASE WORKER_ID      (flags may also follow the arguments)
//	worker -db DATABASE -worker WORKER_ID [flags]
//
//	-idle N         stop after N empty polls in a row (default 200)
//	-poll D         wait D between empty polls (default 5ms)
//	-visibility D   lease length (default 30s)
//	-log FILE       the order log; "-" writes it to stdout
//	-v              one line per message on stderr
//
// Build it with `make examples-go` (build/examples/go/worker).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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

var errUsage = errors.New("need DATABASE and WORKER_ID (arguments or -db/-worker), nothing more, and -idle >= 1")

type settings struct {
	database, worker string
	idle             int
	poll, visibility time.Duration
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
	fs.IntVar(&s.idle, "idle", 200, "stop after this many empty polls in a row")
	fs.DurationVar(&s.poll, "poll", 5*time.Millisecond, "wait between empty polls")
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
	if s.database == "" || s.worker == "" || len(positional) > 0 || s.idle < 1 {
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

	processed := 0
	for idle := 0; idle < s.idle; {
		lease, err := t.Claim(s.worker, s.visibility)
		if errors.Is(err, harel.ErrBusy) { // another process held the write lock: try again
			fmt.Fprintln(stderr, "worker:", err)
			time.Sleep(s.poll)
			continue
		}
		if err != nil {
			return err
		}
		if lease == nil {
			idle++
			time.Sleep(s.poll)
			continue
		}
		idle = 0
		claimed := time.Now().UnixNano()
		handle(lease, s, stderr)
		acking := time.Now().UnixNano()
		if err := t.Ack(lease); err != nil {
			if errors.Is(err, harel.ErrLeaseLost) { // it lapsed: another worker has it now
				fmt.Fprintln(stderr, "worker:", err)
				continue
			}
			return err
		}
		if orderLog != nil {
			fmt.Fprintf(orderLog, "%d %d %d %s\n", claimed, acking, lease.Seq, lease.GroupID)
		}
		processed++
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

// handle is the work: here, reading the event's kind and id.
func handle(lease *harel.Lease, s settings, stderr io.Writer) {
	var ev struct {
		Kind string `json:"kind"`
		ID   string `json:"id"`
	}
	_ = json.Unmarshal(lease.Event, &ev) // any JSON text is an event; a harel one has kind and id
	if s.verbose {
		fmt.Fprintf(stderr, "go %s: %s seq %d %s %s\n", s.worker, lease.GroupID, lease.Seq, ev.Kind, ev.ID)
	}
}
