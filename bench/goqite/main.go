// Command bench-goqite (make bench-goqite, which make bench runs after the Rust bench)
// sets harel-transport's Go binding beside goqite v0.4.0 (maragu.dev/goqite, on
// mattn/go-sqlite3), on fresh local files under -dir, 100-byte events:
//
//   - the disk's fdatasync rate (4 KiB appends, each synced), at the start and the end;
//   - publish, one message per call: ours at synchronous FULL (our default) and NORMAL,
//     goqite at FULL and at its own default (mattn/go-sqlite3's NORMAL; read back with
//     PRAGMA synchronous and printed);
//   - drain, 1 and 4 workers: ours claim+ack (two commits a message), ack_and_claim (one),
//     claim_many/ack_many of 10 (two a batch), ack_and_claim_many of 10 (one a batch);
//     goqite's Receive+Delete (two); each at FULL and at NORMAL / goqite's default. Ours
//     has one group per message (goqite has no groups: nothing is held back by our group
//     rule either); our workers each have a Transport (and, for claim+ack, once more
//     sharing one), goqite's share its one connection as goqite's README sets it up;
//   - wake-up latency from a publish in another process (this binary run again) to a
//     waiting claim's return, p50 and p99: from the send time the publisher writes into
//     the event (one clock, the machine's), and from its publish's return; goqite's
//     ReceiveAndWait polling every 100 ms (its job runner's default);
//   - eight idle waiters over 10 s, in a process of their own: its CPU time (getrusage),
//     what they commit (the WAL's frames and size, PRAGMA data_version read by yet
//     another process), and, when strace is installed, the write transactions they start
//     (fcntl write locks on the -shm file's WAL_WRITE_LOCK byte, in a second run under
//     strace --seccomp-bpf);
//   - the WAL frames each call writes (page size in bytes each), counted from the WAL
//     file, and the b-trees of the pages a claim and an ack write (dbstat, read by another
//     process).
//
// It prints a table, each figure with its ratio to its named peer of the same run (the
// value divided by the peer's), the targets of issue 15 met or missed, and last one line of
// JSON with every figure.
//
// Usage: bench-goqite [-dir DIR] [-n N] [-publish N] [-wake ROUNDS] [-idle SECONDS]
//
//	bench-goqite child ...   (internal: the other processes)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
	"maragu.dev/goqite"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := runChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench-goqite child:", err)
			os.Exit(1)
		}
		return
	}
	dir := flag.String("dir", os.TempDir(), "where the queue files go (the disk measured)")
	n := flag.Int("n", 2000, "messages per drain")
	rounds := flag.Int("rounds", 3, "runs of each publish and drain (the figure is their median)")
	publishN := flag.Int("publish", 1000, "messages per publish run")
	wakeRounds := flag.Int("wake", 200, "wake-up rounds of ours (goqite: half as many)")
	idleSecs := flag.Float64("idle", 10, "seconds of the idle window")
	flag.Parse()
	b := &bench{r: newReport(), n: *n, rounds: *rounds, samples: map[string]*row{}}
	var err error
	if b.dir, err = os.MkdirTemp(*dir, "bench-goqite-"); err == nil {
		err = b.run(*publishN, *wakeRounds, time.Duration(*idleSecs*float64(time.Second)))
		os.RemoveAll(b.dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-goqite:", err)
		os.Exit(1)
	}
	b.r.print(os.Stdout)
}

type bench struct {
	r       *report
	dir     string
	n       int
	rounds  int
	file    int
	samples map[string]*row
	order   []string
}

// fresh is a new queue file's path.
func (b *bench) fresh(name string) string {
	b.file++
	return filepath.Join(b.dir, fmt.Sprintf("%03d-%s.db", b.file, name))
}

func syncName(full bool, system string) string {
	switch {
	case full:
		return "FULL"
	case system == "goqite":
		return "default"
	}
	return "NORMAL"
}

func (b *bench) run(publishN, wakeRounds int, idle time.Duration) error {
	fmt.Fprintf(os.Stderr, "bench-goqite: %s; %d rounds; %d messages per drain\n", b.dir, b.rounds, b.n)
	// Each figure of the publishes and drains is the median of rounds runs, ours and
	// goqite's interleaved, so that a change in the disk's pace (a virtual disk's comes and
	// goes within seconds) falls on both.
	for round := 0; round < b.rounds; round++ {
		for _, full := range []bool{true, false} {
			peer := "publish.goqite." + strings.ToLower(syncName(full, "goqite"))
			rate, synchronous, err := goqitePublish(b.fresh("goqite-publish"), full, publishN)
			if err != nil {
				return err
			}
			b.sample(&row{id: peer, label: fmt.Sprintf("publish 1/call: goqite %s (PRAGMA synchronous=%d)", syncName(full, "goqite"), synchronous),
				unit: "msg/s"}, rate)
			if !full && round == 0 {
				b.r.note(fmt.Sprintf("goqite's default synchronous, as its README opens the file with mattn/go-sqlite3: %d (%s)",
					synchronous, map[int]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[synchronous]))
			}
			if rate, err = oursPublish(b.fresh("ours-publish"), full, publishN); err != nil {
				return err
			}
			b.sample(&row{id: "publish.ours." + strings.ToLower(syncName(full, "ours")), label: "publish 1/call: ours " + syncName(full, "ours"),
				unit: "msg/s", peer: peer}, rate)
		}
	}
	for _, workers := range []int{1, 4} {
		disk := fmt.Sprintf("disk.fdatasync.w%d", workers)
		for round := 0; round < b.rounds; round++ {
			rate, err := fdatasyncRate(b.dir, time.Second)
			if err != nil {
				return err
			}
			b.sample(&row{id: disk, label: fmt.Sprintf("disk: fdatasync of 4 KiB writes, before the %d-worker drains", workers), unit: "/s"}, rate)
			for _, full := range []bool{true, false} {
				limit := ""
				if full {
					limit = disk
				}
				peer := fmt.Sprintf("drain.goqite.%s.w%d", strings.ToLower(syncName(full, "goqite")), workers)
				rate, err := goqiteDrain(b.fresh("goqite-drain"), full, b.n, workers)
				if err != nil {
					return err
				}
				b.sample(&row{id: peer, label: fmt.Sprintf("drain %d worker(s): goqite %s %s", workers, syncName(full, "goqite"), loopReceiveDelete),
					unit: "msg/s", loop: loopReceiveDelete, limit: limit}, rate)
				for _, loop := range []string{loopClaimAck, loopAckAndClaim, loopClaimManyAckMany, loopAckAndClaimMany} {
					rate, err := oursDrain(b.fresh("ours-drain"), full, b.n, workers, loop, false)
					if err != nil {
						return err
					}
					b.sample(&row{id: fmt.Sprintf("drain.ours.%s.w%d.%s", strings.ToLower(syncName(full, "ours")), workers, loop),
						label: fmt.Sprintf("drain %d worker(s): ours %s %s", workers, syncName(full, "ours"), loop),
						unit:  "msg/s", peer: peer, loop: loop, limit: limit}, rate)
				}
				if workers > 1 { // goqite's layout: the workers share one connection
					rate, err := oursDrain(b.fresh("ours-drain"), full, b.n, workers, loopClaimAck, true)
					if err != nil {
						return err
					}
					b.sample(&row{id: fmt.Sprintf("drain.ours.%s.w%d.shared.%s", strings.ToLower(syncName(full, "ours")), workers, loopClaimAck),
						label: fmt.Sprintf("drain %d worker(s): ours %s %s, one Transport shared", workers, syncName(full, "ours"), loopClaimAck),
						unit:  "msg/s", peer: peer, loop: loopClaimAck, limit: limit}, rate)
				}
			}
		}
	}
	b.flushSamples()
	if err := b.wake("ours", wakeRounds); err != nil {
		return err
	}
	if err := b.wake("goqite", wakeRounds/2); err != nil {
		return err
	}
	for _, system := range []string{"ours", "goqite"} {
		if err := b.idle(system, idle); err != nil {
			return err
		}
	}
	return b.frames()
}

// sample adds one run's value to the figure x describes; flushSamples makes a row of each,
// its value the median of the runs.
func (b *bench) sample(x *row, value float64) {
	fmt.Fprintf(os.Stderr, "  %-75s %10.2f %s\n", x.label, value, x.unit)
	if s, ok := b.samples[x.id]; ok {
		s.samples = append(s.samples, value)
		return
	}
	x.samples = []float64{value}
	b.samples[x.id] = x
	b.order = append(b.order, x.id)
}

func (b *bench) flushSamples() {
	for _, id := range b.order {
		x := b.samples[id]
		sorted := slices.Clone(x.samples)
		slices.Sort(sorted)
		x.value = sorted[len(sorted)/2]
		b.r.addRow(x)
	}
}

// child starts this binary as one of the bench's other processes.
func child(args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, nil, err
	}
	cmd := exec.Command(exe, append([]string{"child"}, args...)...)
	return startChild(cmd)
}

func startChild(cmd *exec.Cmd) (*exec.Cmd, io.WriteCloser, *bufio.Scanner, error) {
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	return cmd, in, bufio.NewScanner(out), nil
}

// wake measures rounds wake-ups: a claim waits (ours: ClaimWait; goqite: ReceiveAndWait),
// and after a random 10-110 ms (so that goqite's polls fall anywhere in their interval)
// the publisher process publishes one message.
func (b *bench) wake(system string, rounds int) error {
	path := b.fresh(system + "-wake")
	var claim func() (ev []byte, finish func() error, err error)
	switch system {
	case "ours":
		tr, err := oursOpen(path, true)
		if err != nil {
			return err
		}
		defer tr.Close()
		claim = func() ([]byte, func() error, error) {
			return oursWaiter(context.Background(), tr, "w", 10*time.Second)
		}
	case "goqite":
		g, err := goqiteOpen(path, true)
		if err != nil {
			return err
		}
		defer g.Close()
		claim = func() ([]byte, func() error, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			m, err := g.q.ReceiveAndWait(ctx, goqitePoll)
			if err != nil {
				return nil, nil, err
			}
			return m.Body, func() error { return g.q.Delete(context.Background(), m.ID) }, nil
		}
	}
	cmd, in, out, err := child("publisher", system, path)
	if err != nil {
		return err
	}
	defer cmd.Wait()
	defer in.Close()
	type woken struct {
		ev     []byte
		finish func() error
		err    error
		at     time.Time
	}
	var fromSend, fromReturn []time.Duration
	for i := 0; i < rounds; i++ {
		done := make(chan woken, 1)
		go func() {
			ev, finish, err := claim()
			done <- woken{ev, finish, err, time.Now()}
		}()
		time.Sleep(10*time.Millisecond + time.Duration(rand.Int63n(int64(100*time.Millisecond))))
		fmt.Fprintln(in, "publish")
		if !out.Scan() {
			return fmt.Errorf("wake %s: the publisher stopped", system)
		}
		returnedNs, err := strconv.ParseInt(out.Text(), 10, 64)
		if err != nil {
			return err
		}
		w := <-done
		if w.err != nil || w.ev == nil {
			return fmt.Errorf("wake %s, round %d: got %q, %v", system, i, w.ev, w.err)
		}
		var ev struct {
			SentNs int64 `json:"sent_ns"`
		}
		if err := json.Unmarshal(w.ev, &ev); err != nil {
			return err
		}
		fromSend = append(fromSend, w.at.Sub(time.Unix(0, ev.SentNs)))
		fromReturn = append(fromReturn, w.at.Sub(time.Unix(0, returnedNs)))
		if err := w.finish(); err != nil {
			return err
		}
	}
	peer := func(id string) string {
		if system == "ours" {
			return strings.Replace(id, "ours", "goqite", 1)
		}
		return ""
	}
	for _, m := range []struct {
		id, what string
		d        []time.Duration
	}{{"send", "its send time", fromSend}, {"return", "its publish's return", fromReturn}} {
		slices.Sort(m.d)
		for _, q := range []struct {
			name string
			at   float64
		}{{"p50", 0.5}, {"p99", 0.99}} {
			id := fmt.Sprintf("wake.%s.%s.%s", system, m.id, q.name)
			v := float64(m.d[min(len(m.d)-1, int(q.at*float64(len(m.d))))]) / float64(time.Millisecond)
			r := b.r
			r.add(id, fmt.Sprintf("wake-up %s: %s from %s (%d rounds)", q.name, system, m.what, rounds), v, "ms", peer(id))
		}
	}
	return nil
}

// idle runs idleWaiters waiters on an empty queue in a process of their own for window:
// its CPU time, the WAL before and after and data_version read by a third process, and
// (under strace, in a second run) the write locks they take.
func (b *bench) idle(system string, window time.Duration) error {
	path := b.fresh(system + "-idle")
	run := func(strace string) (rep idleReport, walSame, dvSame bool, err error) {
		exe, err := os.Executable()
		if err != nil {
			return rep, false, false, err
		}
		args := []string{exe, "child", "idle", system, path, strconv.FormatFloat(window.Seconds(), 'f', -1, 64)}
		if strace != "" {
			args = append([]string{"strace", "-f", "--seccomp-bpf", "-qq", "-ttt", "-e", "trace=fcntl", "-o", strace}, args...)
		}
		cmd, in, out, err := startChild(exec.Command(args[0], args[1:]...))
		if err != nil {
			return rep, false, false, err
		}
		defer cmd.Wait()
		defer in.Close()
		if !out.Scan() || out.Text() != "ready" {
			return rep, false, false, fmt.Errorf("idle %s: no ready line", system)
		}
		wal0, _ := os.Stat(path + "-wal")
		dv, dvIn, dvOut, err := child("dataversion", path)
		if err != nil {
			return rep, false, false, err
		}
		defer dv.Wait()
		defer dvIn.Close()
		if !dvOut.Scan() {
			return rep, false, false, fmt.Errorf("idle %s: no data_version", system)
		}
		v0 := dvOut.Text()
		if !out.Scan() {
			return rep, false, false, fmt.Errorf("idle %s: no report", system)
		}
		wal1, _ := os.Stat(path + "-wal")
		fmt.Fprintln(dvIn, "again")
		if !dvOut.Scan() {
			return rep, false, false, fmt.Errorf("idle %s: no second data_version", system)
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			return rep, false, false, err
		}
		walSame = wal0 != nil && wal1 != nil && wal0.Size() == wal1.Size() && wal0.ModTime().Equal(wal1.ModTime())
		return rep, walSame, v0 == dvOut.Text(), nil
	}
	rep, walSame, dvSame, err := run("")
	if err != nil {
		return err
	}
	peer := func(id string) string {
		if system == "ours" {
			return strings.Replace(id, "ours", "goqite", 1)
		}
		return ""
	}
	r := b.r
	id := "idle." + system + ".cpu"
	r.add(id, fmt.Sprintf("idle: %s, %d waiters, CPU over %.0f s (%% of one core)", system, idleWaiters, rep.WallSeconds),
		100*rep.CPUSeconds/rep.WallSeconds, "%", peer(id))
	r.add("idle."+system+".committed", fmt.Sprintf("idle: %s commits seen (WAL unchanged: %v, data_version unchanged: %v)",
		system, walSame, dvSame), float64(boolCount(!walSame)+boolCount(!dvSame)), "", "")
	if _, err := exec.LookPath("strace"); err != nil {
		r.note("strace not found: the idle waiters' write transactions were not counted")
		return nil
	}
	trace := filepath.Join(b.dir, system+"-idle.strace")
	if rep, _, _, err = run(trace); err != nil {
		return err
	}
	writes, reads, err := countLocks(trace, rep.StartNs, rep.EndNs)
	if err != nil {
		return err
	}
	id = "idle." + system + ".write_locks"
	r.add(id, fmt.Sprintf("idle: %s write transactions started (WAL write locks, strace run)", system), float64(writes), "", peer(id))
	r.add("idle."+system+".read_locks", fmt.Sprintf("idle: %s read transactions (WAL read marks taken, strace run)", system), float64(reads), "", "")
	return nil
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// countLocks counts, in an strace -ttt log of fcntl calls, between start and end, the
// locks taken on the -shm file's WAL_WRITE_LOCK (byte 120: every write transaction takes
// it) and its read marks (bytes 123-127, shared: a read transaction's snapshot).
func countLocks(path string, startNs, endNs int64) (writes, reads int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) < 3 {
			continue
		}
		secs, err := strconv.ParseFloat(fields[1], 64)
		if err != nil || int64(secs*1e9) < startNs || int64(secs*1e9) > endNs {
			continue
		}
		line := lines.Text()
		if !strings.Contains(line, "F_SETLK") || !strings.HasSuffix(line, "= 0") {
			continue
		}
		switch {
		case strings.Contains(line, "l_type=F_WRLCK") && strings.Contains(line, "l_start=120,"):
			writes++
		case strings.Contains(line, "l_type=F_RDLCK") && strings.Contains(line, "l_len=1") &&
			slices.ContainsFunc([]string{"123", "124", "125", "126", "127"}, func(b string) bool {
				return strings.Contains(line, "l_start="+b+",")
			}):
			reads++
		}
	}
	return writes, reads, lines.Err()
}

// frames counts the WAL frames of each call over many cycles and names the b-trees of the
// pages of one claim and one ack.
func (b *bench) frames() error {
	const cycles = 100
	fill := max(b.n, 5*cycles) // claim+ack, ack_and_claim, the batches: 4 × cycles messages
	path := b.fresh("ours-frames")
	if err := oursFill(path, true, fill); err != nil {
		return err
	}
	tr, err := oursOpen(path, true)
	if err != nil {
		return err
	}
	defer tr.Close()
	ctx := context.Background()
	c := newCounter(path)
	var lease *harel.Lease
	var leases []*harel.Lease
	steps := []struct {
		id    string
		per   int // messages per step
		first func() error
		step  func() error
	}{
		{"ours.claim", 1, nil, func() (err error) { lease, err = tr.Claim("w", visibility); return err }},
		{"ours.ack", 1, nil, func() error { return tr.Ack(lease) }},
		{"ours.ack_and_claim", 1, func() (err error) { lease, err = tr.Claim("w", visibility); return err },
			func() (err error) { lease, err = tr.AckAndClaim(lease, "w", visibility); return err }},
		{"ours.claim_many10", batch, func() error { return tr.Ack(lease) }, // the last ack_and_claim's lease
			func() (err error) { leases, err = tr.ClaimMany(ctx, "w", visibility, batch, 0); return err }},
		{"ours.ack_many10", batch, nil, func() error { _, err := tr.AckMany(leases); return err }},
		{"ours.ack_and_claim_many10", batch, func() (err error) { leases, err = tr.ClaimMany(ctx, "w", visibility, batch, 0); return err },
			func() (err error) { leases, _, err = tr.AckAndClaimMany(leases, "w", visibility, batch); return err }},
	}
	// claim and ack alternate, as do claim_many and ack_many; the fused calls run alone.
	run := func(ids ...int) error {
		for _, i := range ids {
			if steps[i].first != nil {
				if err := steps[i].first(); err != nil {
					return err
				}
			}
		}
		for k := 0; k < cycles/steps[ids[0]].per; k++ {
			for _, i := range ids {
				if err := c.step(steps[i].id, steps[i].per, k == 2, steps[i].step); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, ids := range [][]int{{0, 1}, {2}, {3, 4}, {5}} {
		if err := run(ids...); err != nil {
			return err
		}
	}

	gpath := b.fresh("goqite-frames")
	g, err := goqiteOpen(gpath, true)
	if err != nil {
		return err
	}
	defer g.Close()
	if err := goqiteFill(g, fill); err != nil {
		return err
	}
	gc := newCounter(gpath)
	var id goqite.ID
	for k := 0; k < cycles; k++ {
		if err := gc.step("goqite.receive", 1, k == 2, func() error {
			m, err := g.q.Receive(ctx)
			if err == nil {
				id = m.ID
			}
			return err
		}); err != nil {
			return err
		}
		if err := gc.step("goqite.delete", 1, k == 2, func() error { return g.q.Delete(ctx, id) }); err != nil {
			return err
		}
	}
	r := b.r
	pageSize := c.pageSize
	r.note(fmt.Sprintf("WAL frames: each frame is one page (%d bytes; goqite's file: %d) written by a commit; counted over %d messages per call from the WAL files, steps across a WAL restart left out",
		pageSize, gc.pageSize, cycles))
	perCycle := func(ids ...string) (sum float64) {
		for _, id := range ids {
			sum += c.mean(id) + gc.mean(id)
		}
		return sum
	}
	goqiteCycle := perCycle("goqite.receive", "goqite.delete")
	r.add("frames.goqite.receive+delete", "WAL frames per message: goqite receive + delete", goqiteCycle, "pages", "")
	for _, f := range []struct {
		id, label string
		steps     []string
	}{
		{"frames.ours.claim+ack", "WAL frames per message: ours claim + ack", []string{"ours.claim", "ours.ack"}},
		{"frames.ours.ack_and_claim", "WAL frames per message: ours ack_and_claim", []string{"ours.ack_and_claim"}},
		{"frames.ours.claim_many+ack_many10", "WAL frames per message: ours claim_many + ack_many of 10", []string{"ours.claim_many10", "ours.ack_many10"}},
		{"frames.ours.ack_and_claim_many10", "WAL frames per message: ours ack_and_claim_many of 10", []string{"ours.ack_and_claim_many10"}},
	} {
		r.add(f.id, f.label, perCycle(f.steps...), "pages", "frames.goqite.receive+delete")
	}
	for _, s := range []struct {
		id string
		c  *counter
	}{{"ours.claim", c}, {"ours.ack", c}, {"ours.ack_and_claim", c}, {"goqite.receive", gc}, {"goqite.delete", gc}} {
		r.note(fmt.Sprintf("one %s (frames per message over all: %.2f) wrote: %s", strings.Replace(s.id, ".", " ", 1),
			s.c.mean(s.id), s.c.sample[s.id]))
	}
	return nil
}

// counter counts the WAL frames of calls on the database at path.
type counter struct {
	path, wal string
	pageSize  int
	frames    map[string]int
	messages  map[string]int
	sample    map[string]string // id's pages in one call, named
}

func newCounter(path string) *counter {
	return &counter{path: path, wal: path + "-wal", frames: map[string]int{}, messages: map[string]int{}, sample: map[string]string{}}
}

// step runs f, a call on per messages, and counts the frames it added to the WAL; keep
// names its pages (then, before any later call frees or reuses one) as the sample of id.
func (c *counter) step(id string, per int, keep bool, f func() error) error {
	before, err := readWAL(c.wal)
	if err != nil {
		return err
	}
	if err := f(); err != nil {
		return err
	}
	after, err := readWAL(c.wal)
	if err != nil {
		return err
	}
	c.pageSize = after.pageSize
	pages, ok := walDelta(before, after)
	if !ok {
		return nil
	}
	c.frames[id] += len(pages)
	c.messages[id] += per
	if keep {
		names, err := pageNames(c.path)
		if err != nil {
			return err
		}
		c.sample[id] = describe(pages, names)
	}
	return nil
}

func (c *counter) mean(id string) float64 {
	if c.messages[id] == 0 {
		return 0
	}
	return float64(c.frames[id]) / float64(c.messages[id])
}

// pageNames asks another process (dbstat through mattn's SQLite) what each page of the
// database at path belongs to.
func pageNames(path string) (map[uint32]string, error) {
	cmd, in, out, err := child("pages", path)
	if err != nil {
		return nil, err
	}
	in.Close()
	out.Buffer(nil, 64<<20)
	names := map[uint32]string{}
	if out.Scan() {
		if err := json.Unmarshal(out.Bytes(), &names); err != nil {
			return nil, err
		}
	}
	return names, cmd.Wait()
}

// describe names pages by their b-trees: "harel_transport_messages leaf ×2, ...".
func describe(pages []uint32, names map[uint32]string) string {
	count := map[string]int{}
	var order []string
	for _, p := range pages {
		name, ok := names[p]
		if !ok {
			name = "free-list page"
		}
		if p == 1 {
			name = "page 1 (header, " + name + ")"
		}
		if count[name] == 0 {
			order = append(order, name)
		}
		count[name]++
	}
	var parts []string
	for _, name := range order {
		parts = append(parts, fmt.Sprintf("%s ×%d", name, count[name]))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}
