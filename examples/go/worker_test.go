package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// queue makes a file with groups × perGroup messages and returns its path.
func queue(t *testing.T, groups, perGroup int) string {
	path := filepath.Join(t.TempDir(), "queue.db")
	tr, err := harel.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for i := 0; i < perGroup; i++ {
		for g := 0; g < groups; g++ {
			ev := json.RawMessage(fmt.Sprintf(`{"kind":"tick","id":"%d-%d","data":{}}`, g, i))
			if err := tr.Publish(fmt.Sprintf("g%d", g), ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path
}

func TestTwoWorkersDrainTheQueue(t *testing.T) {
	path := queue(t, 6, 10)
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, 2)
	for n := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stderr bytes.Buffer
			// flags on both sides of the arguments, as the Rust worker takes --log
			args := []string{"-idle", "300ms", path, fmt.Sprintf("go-%d", n), "--log", "-", "-batch", strconv.Itoa(1 + 3*n)}
			if err := run(args, &outs[n], &stderr); err != nil {
				t.Errorf("worker %d: %v (%s)", n, err, stderr.String())
			}
		}()
	}
	wg.Wait()
	total, groups := 0, map[string]bool{}
	for n := range outs {
		lines := strings.Split(strings.TrimSpace(outs[n].String()), "\n")
		final := lines[len(lines)-1]
		var id string
		var processed int
		if _, err := fmt.Sscanf(final, "go %s processed %d", &id, &processed); err != nil || id != fmt.Sprintf("go-%d:", n) {
			t.Fatalf("final line %q (%v)", final, err)
		}
		if len(lines)-1 != processed {
			t.Fatalf("worker %d: %d log lines for %d processed", n, len(lines)-1, processed)
		}
		total += processed
		for _, line := range lines[:len(lines)-1] {
			f := strings.Fields(line)
			if len(f) != 4 {
				t.Fatalf("log line %q", line)
			}
			if _, err := strconv.ParseInt(f[2], 10, 64); err != nil {
				t.Fatalf("log line %q: seq: %v", line, err)
			}
			groups[f[3]] = true
		}
	}
	if total != 60 || len(groups) != 6 {
		t.Fatalf("processed %d of 60 messages, %d of 6 groups", total, len(groups))
	}
}

func TestQuietWithoutFlags(t *testing.T) {
	path := queue(t, 2, 2)
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-db", path, "-worker", "w", "-idle", "50ms"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "go w: processed 4\n" || stderr.Len() != 0 {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	stdout.Reset()
	if err := run([]string{"-v", path, "w2", "-idle", "0s"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "go w2: processed 0\n" {
		t.Fatalf("an empty queue: %q", stdout.String())
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"only-db"}, {"db", "w", "extra"}, {"-idle", "-1s", "db", "w"}, {"-idle", "3", "db", "w"}, {"-nope", "db", "w"}} {
		var stdout, stderr bytes.Buffer
		if err := run(args, &stdout, &stderr); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// The worker waits for work: messages published after it started are processed as they
// come, and it stops once a claim has waited -idle with nothing.
func TestWaitsForWork(t *testing.T) {
	path := queue(t, 0, 0)
	tr, err := harel.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var stdout, stderr bytes.Buffer
	done := make(chan error)
	start := time.Now()
	go func() { done <- run([]string{path, "w", "-idle", "500ms", "-log", "-"}, &stdout, &stderr) }()
	for i := 0; i < 5; i++ {
		time.Sleep(100 * time.Millisecond)
		if err := tr.Publish(fmt.Sprintf("g%d", i%2), json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("worker: %v (%s)", err, stderr.String())
	}
	took := time.Since(start)
	if lines := strings.Split(strings.TrimSpace(stdout.String()), "\n"); len(lines) != 6 || lines[5] != "go w: processed 5" {
		t.Fatalf("stdout %q", stdout.String())
	}
	if took < time.Second || took > 3*time.Second {
		t.Fatalf("5 messages 100 ms apart, then 500 ms idle: the worker ran %v", took)
	}
}

// The library's refusal of a bad -batch is the worker's error.
func TestBadBatch(t *testing.T) {
	path := queue(t, 1, 1)
	var stdout, stderr bytes.Buffer
	for _, batch := range []string{"0", "1001"} {
		if err := run([]string{path, "w", "-batch", batch}, &stdout, &stderr); !errors.Is(err, harel.ErrArgument) {
			t.Errorf("-batch %s: %v", batch, err)
		}
	}
}

// workerChildEnv runs the test binary as the worker itself (TestSignalEndsTheWait).
const workerChildEnv = "HAREL_GO_WORKER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(workerChildEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// SIGTERM ends a waiting worker at once, cleanly: its report, exit 0.
func TestSignalEndsTheWait(t *testing.T) {
	path := queue(t, 2, 1)
	child := exec.Command(os.Args[0], path, "w", "-idle", "1h")
	child.Env = append(os.Environ(), workerChildEnv+"=1")
	var stdout, stderr bytes.Buffer
	child.Stdout, child.Stderr = &stdout, &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // drained, and waiting
	signalled := time.Now()
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("worker: %v (%s)", err, stderr.String())
	}
	took := time.Since(signalled)
	t.Logf("stopped %v after SIGTERM", took)
	if took > 2*time.Second {
		t.Fatalf("the worker took %v to stop after SIGTERM", took)
	}
	if stdout.String() != "go w: processed 2\n" {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}
