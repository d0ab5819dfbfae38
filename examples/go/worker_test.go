package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

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
			args := []string{"-idle", "40", path, fmt.Sprintf("go-%d", n), "--log", "-"}
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
	if err := run([]string{"-db", path, "-worker", "w", "-idle", "3", "-poll", "1ms"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "go w: processed 4\n" || stderr.Len() != 0 {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	stdout.Reset()
	if err := run([]string{"-v", path, "w2", "-idle", "1"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "go w2: processed 0\n" {
		t.Fatalf("an empty queue: %q", stdout.String())
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"only-db"}, {"db", "w", "extra"}, {"-idle", "0", "db", "w"}, {"-nope", "db", "w"}} {
		var stdout, stderr bytes.Buffer
		if err := run(args, &stdout, &stderr); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
