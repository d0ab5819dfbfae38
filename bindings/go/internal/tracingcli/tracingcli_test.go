package tracingcli

// The programs against a file, as tests/tracing/run.py runs them against a file and a
// libSQL server: the producer's spans under the given parent, the worker's linked to them,
// their JSON lines field by field; too few messages and bad arguments.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func readSpans(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spans []map[string]any
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		var s map[string]any
		if err := json.Unmarshal(scanner.Bytes(), &s); err != nil {
			t.Fatalf("line %q: %v", scanner.Text(), err)
		}
		spans = append(spans, s)
	}
	return spans
}

func run(t *testing.T, program func([]string, io.Writer) int, want int, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	if got := program(args, &stderr); got != want {
		t.Fatalf("%v: exit %d, want %d; stderr: %s", args, got, want, stderr.String())
	}
	return stderr.String()
}

const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func TestProducerAndWorker(t *testing.T) {
	dir := t.TempDir()
	queue := filepath.Join(dir, "queue.db")
	produced, worked := filepath.Join(dir, "producer.jsonl"), filepath.Join(dir, "worker.jsonl")
	run(t, Producer, 0, "--queue", queue, "--prefix", "harel", "--spans", produced, "--traceparent", traceparent,
		"--keys", "go,node,python,rust")
	run(t, Worker, 0, "--queue", queue, "--prefix", "harel", "--spans", worked, "--key", "node", "--count", "1")
	producers := readSpans(t, produced)
	if len(producers) != 4 {
		t.Fatalf("%d producer spans, want 4", len(producers))
	}
	spanOf := map[string]string{} // group: its producer span's id
	for i, key := range []string{"go", "node", "python", "rust"} {
		s := producers[i]
		id, _ := s["span_id"].(string)
		if len(id) != 16 {
			t.Fatalf("span id %v", s["span_id"])
		}
		spanOf["go-"+key] = id
		want := map[string]any{"lang": "go", "name": "publish harel", "kind": "producer",
			"trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": id, "parent_span_id": "b7ad6b7169203331",
			"links": []any{}, "status": "unset", "attributes": map[string]any{"messaging.system": "harel",
				"messaging.operation.type": "send", "messaging.operation.name": "publish",
				"messaging.destination.name": "harel", "messaging.message.conversation_id": "go-" + key}}
		if !reflect.DeepEqual(s, want) {
			t.Errorf("producer span %d:\n got %v\nwant %v", i, s, want)
		}
	}
	workers := readSpans(t, worked)
	if len(workers) != 1 {
		t.Fatalf("%d worker spans, want 1", len(workers))
	}
	s := workers[0]
	traceID, _ := s["trace_id"].(string)
	id, _ := s["span_id"].(string)
	want := map[string]any{"lang": "go", "name": "process harel", "kind": "consumer", "trace_id": traceID, "span_id": id,
		"parent_span_id": nil, "status": "ok",
		"links": []any{map[string]any{"trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": spanOf["go-node"]}},
		"attributes": map[string]any{"messaging.system": "harel", "messaging.operation.type": "process",
			"messaging.operation.name": "process", "messaging.destination.name": "harel",
			"messaging.message.conversation_id": "go-node", "messaging.message.id": "2"}}
	if !reflect.DeepEqual(s, want) || len(traceID) != 32 || traceID == "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("worker span:\n got %v\nwant %v", s, want)
	}

	// Fewer messages than --count: exit 1, the spans of those that came written.
	waitInAll = 300 * time.Millisecond
	defer func() { waitInAll = 30 * time.Second }()
	stderr := run(t, Worker, 1, "--queue", queue, "--spans", worked, "--key", "go", "--count", "2")
	if !strings.Contains(stderr, "1 of 2 messages") {
		t.Errorf("stderr %q", stderr)
	}
	if spans := readSpans(t, worked); len(spans) != 1 || spans[0]["attributes"].(map[string]any)["messaging.message.conversation_id"] != "go-go" {
		t.Errorf("spans %v", spans)
	}
	// Another prefix is another queue, and names the spans.
	run(t, Producer, 0, "--queue", queue, "--prefix", "other", "--spans", produced, "--traceparent", traceparent, "--keys", "go")
	run(t, Worker, 0, "--queue", queue, "--prefix", "other", "--spans", worked, "--key", "go", "--count", "1")
	if spans := readSpans(t, worked); len(spans) != 1 || spans[0]["name"] != "process other" {
		t.Errorf("spans %v", spans)
	}
}

func TestBadArguments(t *testing.T) {
	spans := filepath.Join(t.TempDir(), "spans")
	for _, args := range [][]string{
		{"--spans", spans, "--traceparent", traceparent, "--keys", "go"},
		{"--queue", ":memory:", "--traceparent", traceparent, "--keys", "go"},
		{"--queue", ":memory:", "--spans", spans, "--traceparent", "00-00", "--keys", "go"},
		{"--queue", ":memory:", "--spans", spans, "--keys", "go"},
		{"--queue", ":memory:", "--spans", spans, "--traceparent", traceparent},
		{"--no-such-flag"},
	} {
		run(t, Producer, 2, args...)
	}
	for _, args := range [][]string{
		{"--queue", ":memory:", "--spans", spans, "--count", "1"},
		{"--queue", ":memory:", "--spans", spans, "--key", "go", "--count", "-1"},
		{"--spans", spans, "--key", "go", "--count", "1"},
	} {
		run(t, Worker, 2, args...)
	}
	if _, err := os.Stat(spans); !os.IsNotExist(err) {
		t.Errorf("spans written after bad arguments: %v", err)
	}
}
