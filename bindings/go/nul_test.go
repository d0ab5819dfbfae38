package harel_test

// A group id and an event holding NUL bytes, written into the queue file by another
// program (Python's sqlite3, in its own process: never a second SQLite in this one, see
// docs/queue.md, "The one hazard"): the lease carries every byte, and its ack finds the
// message (no ErrLeaseLost), where a group id cut at the NUL would name another group.

import (
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// python runs script with args in a python3 process; its stdout.
func python(t *testing.T, script string, args ...string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is needed to write the queue file from another process")
	}
	out, err := exec.Command(py, append([]string{"-c", script}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

const insertRows = `
import sqlite3, sys
path, group, events = sys.argv[1], bytes.fromhex(sys.argv[2]).decode(), [bytes.fromhex(e).decode() for e in sys.argv[3:]]
db = sqlite3.connect(path, timeout=30)
with db:
    for event in events:
        db.execute("INSERT INTO harel_transport_messages (group_id, event) VALUES (?, ?)", (group, event))
    db.execute("INSERT OR IGNORE INTO harel_transport_groups (group_id) VALUES (?)", (group,))
(n,) = db.execute("SELECT count(*) FROM harel_transport_messages WHERE CAST(group_id AS BLOB) = CAST(? AS BLOB)", (group,)).fetchone()
print(n, len(group.encode()))
db.close()
`

const countRows = `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
print(*db.execute("SELECT (SELECT count(*) FROM harel_transport_messages), (SELECT count(*) FROM harel_transport_groups)").fetchone())
db.close()
`

func TestNULBytesFromAnotherWriter(t *testing.T) {
	path := tempDB(t)
	tr := open(t, path) // creates the schema
	// The group the id would be cut to at its NUL, kept in flight: every claim below can
	// only bring the other writer's group.
	publish(t, tr, "grp", event(1))
	cut := claim(t, tr, "w")

	const group = "grp\x00after the NUL"
	events := []string{"{\"text\":\"a\x00b\"}", "\x00[1]\x00"}
	args := []string{path, hex.EncodeToString([]byte(group))}
	for _, ev := range events {
		args = append(args, hex.EncodeToString([]byte(ev)))
	}
	if got := python(t, insertRows, args...); got != "2 17" {
		t.Fatalf("python wrote %q, want 2 rows of a 17-byte group id", got)
	}

	whole := func(what string, lease *harel.Lease, ev string) {
		t.Helper()
		if lease.GroupID != group {
			t.Fatalf("%s: group id %q (%d bytes), want %q", what, lease.GroupID, len(lease.GroupID), group)
		}
		if string(lease.Event) != ev {
			t.Fatalf("%s: event %q (%d bytes), want %q", what, lease.Event, len(lease.Event), ev)
		}
	}
	first := claim(t, tr, "w")
	whole("claim", first, events[0])
	if err := tr.Nack(first, 0); err != nil {
		t.Fatalf("nack: %v", err)
	}
	again := claim(t, tr, "w")
	whole("claim after the nack", again, events[0])
	if err := tr.Ack(again); err != nil {
		t.Fatalf("ack: %v", err)
	}
	second := claim(t, tr, "w")
	whole("the second message", second, events[1])
	if next, err := tr.AckAndClaim(second, "w", visibility); err != nil || next != nil {
		t.Fatalf("ack_and_claim: %+v, %v; want nil, nil", next, err)
	}
	ack(t, tr, cut)
	claimNone(t, tr, "every message acked")
	if got := python(t, countRows, path); got != "0 0" {
		t.Fatalf("messages and groups left in the file: %s, want 0 0", got)
	}
}

// The binding's half on its own: Ack hands the library the group id whole, with its
// length, so a group id with a NUL is not refused by the binding nor cut short; the
// library's message quotes it whole (a NUL shown as \0). The lease is forged, so the
// message is not found: ErrLeaseLost.
func TestAckPassesTheGroupIDWhole(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "grp", event(1))
	lease := claim(t, tr, "w")
	for name, call := range map[string]func(*harel.Lease) error{
		"ack":           tr.Ack,
		"nack":          func(l *harel.Lease) error { return tr.Nack(l, 0) },
		"ack_and_claim": func(l *harel.Lease) error { _, err := tr.AckAndClaim(l, "w", visibility); return err },
	} {
		forged := *lease
		forged.GroupID = "grp\x00tail"
		wantError(t, name, call(&forged), harel.ErrLeaseLost, `"grp\0tail"`)
	}
	ack(t, tr, lease) // the real lease was not touched
	claimNone(t, tr, "acked")
}
