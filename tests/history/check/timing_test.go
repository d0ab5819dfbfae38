package check

import (
	"os"
	"testing"
	"time"
)

// TestTiming times each property on a run's directory: HISTORY_DIR=... go test -run Timing
func TestTiming(t *testing.T) {
	dir := os.Getenv("HISTORY_DIR")
	if dir == "" {
		t.Skip("HISTORY_DIR not set")
	}
	start := time.Now()
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("load: %v", time.Since(start))
	for _, p := range Properties {
		start := time.Now()
		r := p.Check(h)
		t.Logf("%s: %v (%d violations)", p.Name, time.Since(start), len(r.Violations))
	}
}
