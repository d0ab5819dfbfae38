// Package hist holds what every client of the history harness writes and the checker
// reads: one JSON object per line, two lines per call.
//
// A call is logged when it is invoked (type "invoke": the operation and its arguments)
// and again when it returns (type "ok" or "fail": its outcome), both lines carrying the
// client's id and the call's index. A client killed during a call leaves the invocation
// alone: the checker takes that call's outcome as unknown (it may or may not have taken
// effect). Instants ("at") are CLOCK_REALTIME nanoseconds, the one clock every process on
// the machine reads, and the clock the queue itself stamps leases with.
//
// The operations and their fields (the other fields are empty):
//
//	publish, publish_many     msgs                      ok: pub (publish_with: seq, duplicate)
//	tx                        msgs, tx, txmode          ok: pub (committed, or rolled back for txmode "rollback")
//	claim                     worker, vis, max          ok: got (no leases: nothing to claim)
//	ack, nack, dead_letter    leases[0] (nack: delay)   ok / fail
//	extend                    leases[0], vis            ok: exp (the lease's new end)
//	ack_many                  leases                    ok: outcomes (one per lease)
//	ack_and_claim             leases[0], worker, vis    ok: got; fail: the ack failed, nothing claimed
//	ack_and_claim_many        leases, worker, vis, max  ok: outcomes, got
//
// A "fail" is a definite error status: the call changed nothing (HAREL_ERR_LEASE_LOST,
// HAREL_ERR_BUSY...). harel 0.9's transports report no status: their ack and nack are
// logged "ok" and check nothing (lang "harel").
package hist

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Msg is one message a publish writes: its group, its event's id (unique in a history:
// the client's id, the call's index, the message's index) and its idempotency key.
type Msg struct {
	G string `json:"g"`
	E string `json:"e"`
	K string `json:"k,omitempty"`
}

// Ref names the lease an ack, nack, extend or dead_letter acts on, as the library reads
// it: the message's seq and group and the worker holding it.
type Ref struct {
	S int64  `json:"s"`
	G string `json:"g"`
	W string `json:"w"`
	E string `json:"e,omitempty"`
}

// Lease is a lease a claim returned: exp is its end (epoch seconds; the claim's "now" is
// exp - vis for this library, whose lease carries it), att the message's attempts.
type Lease struct {
	S   int64   `json:"s"`
	G   string  `json:"g"`
	E   string  `json:"e"`
	W   string  `json:"w"`
	Exp float64 `json:"exp"`
	Att int     `json:"att,omitempty"`
}

// Pub is what a keyed publish (publish_with) or a transaction's commit reported for one
// message: its seq and whether its key made it a duplicate.
type Pub struct {
	S   int64 `json:"s"`
	Dup bool  `json:"dup,omitempty"`
}

// Record is one line of a client's log.
type Record struct {
	Client string `json:"client"`
	Lang   string `json:"lang,omitempty"`
	I      int    `json:"i"`
	Type   string `json:"type"` // invoke, ok, fail
	Op     string `json:"op,omitempty"`
	At     int64  `json:"at"`

	// The invocation's arguments.
	Worker string  `json:"worker,omitempty"`
	Vis    float64 `json:"vis,omitempty"`
	Max    int     `json:"max,omitempty"`
	Delay  float64 `json:"delay,omitempty"`
	Msgs   []Msg   `json:"msgs,omitempty"`
	Leases []Ref   `json:"leases,omitempty"`
	Tx     string  `json:"tx,omitempty"`
	TxMode string  `json:"txmode,omitempty"` // commit, rollback, fail (a statement that must fail the commit)
	Stale  bool    `json:"stale,omitempty"`  // an ack sent on purpose after the lease's end

	// The completion's outcome.
	Status   string   `json:"status,omitempty"` // fail: HAREL_ERR_...
	Err      string   `json:"err,omitempty"`
	Pub      []Pub    `json:"pub,omitempty"`
	Got      []Lease  `json:"got,omitempty"`
	Outcomes []string `json:"outcomes,omitempty"` // "ok" or a status, one per lease
	Exp      float64  `json:"exp,omitempty"`      // extend: the new end; harel's nack with a delay: the park's end

	// Where the line was read (set by the checker).
	File string `json:"-"`
	Line int    `json:"-"`
}

// Now is the instant to log: CLOCK_REALTIME in nanoseconds.
func Now() int64 { return time.Now().UnixNano() }

// Logger appends records to a file, each line with one write(2) on an O_APPEND
// descriptor, so a line the process wrote before it was killed is in the file whole.
type Logger struct {
	mu     sync.Mutex
	f      *os.File
	client string
	lang   string
	n      int
}

// Open makes the log of one client incarnation.
func Open(path, client, lang string) (*Logger, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Logger{f: f, client: client, lang: lang}, nil
}

// Invoke logs the invocation of r (its op and arguments), stamping it now, and returns the
// call's index for Complete.
func (l *Logger) Invoke(r Record) int {
	l.mu.Lock()
	i := l.n
	l.n++
	l.mu.Unlock()
	r.Client, r.Lang, r.I, r.Type, r.At = l.client, l.lang, i, "invoke", Now()
	l.write(&r)
	return i
}

// Complete logs the outcome of call i: r's Type ("ok" or "fail") and result fields.
func (l *Logger) Complete(i int, r Record) {
	r.Client, r.Lang, r.I, r.At = l.client, l.lang, i, Now()
	l.write(&r)
}

func (l *Logger) write(r *Record) {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("hist: %v", err))
	}
	b = append(b, '\n')
	if _, err := l.f.Write(b); err != nil {
		panic(fmt.Sprintf("hist: write log: %v", err))
	}
}

// Close closes the log file.
func (l *Logger) Close() error { return l.f.Close() }

// Event is the JSON text of a message's event: harel's Event shape, so that harel's
// workers can read it, with the id the checker follows it by.
func Event(id string) []byte {
	b, _ := json.Marshal(map[string]any{"kind": "h", "id": id, "data": map[string]any{}})
	return b
}

// EventID reads the id back out of an event's JSON text ("" if it has none).
func EventID(event []byte) string {
	var e struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(event, &e) != nil {
		return ""
	}
	return e.ID
}

// Dump is the queue as the run found it once every client had ended, read through the
// library: every message row, every dead letter, the idempotency keys and the app
// table's transaction ids.
type Dump struct {
	At       int64     `json:"at"`
	Messages []DumpMsg `json:"messages"`
	Dead     []DumpMsg `json:"dead"`
	Keys     []DumpKey `json:"keys"`
	App      []string  `json:"app"`
}

// DumpMsg is one message or dead letter.
type DumpMsg struct {
	S        int64   `json:"s"`
	G        string  `json:"g"`
	E        string  `json:"e"`
	LockedBy string  `json:"locked_by,omitempty"`
	Exp      float64 `json:"exp,omitempty"`
	Att      int     `json:"att"`
}

// DumpKey is one remembered idempotency key and the seq it stored.
type DumpKey struct {
	Key string `json:"key"`
	S   int64  `json:"s"`
}

// DumpOf is the Dump of the rows a dump's four queries returned, at: the messages (seq,
// group_id, event, locked_by, lock_expiry, attempts), the dead letters (seq, group_id,
// event, attempts), the keys (key, seq) and the app table's ids. The values are as the
// Go binding's queries and Hrana's JSON hand them: numbers as int64 or float64, texts
// as strings, NULL as nil.
func DumpOf(at int64, messages, dead, keys, app [][]any) Dump {
	d := Dump{At: at, Messages: []DumpMsg{}, Dead: []DumpMsg{}, Keys: []DumpKey{}, App: []string{}}
	for _, r := range messages {
		d.Messages = append(d.Messages, DumpMsg{S: asInt(r[0]), G: asText(r[1]), E: EventID([]byte(asText(r[2]))),
			LockedBy: asText(r[3]), Exp: asFloat(r[4]), Att: int(asInt(r[5]))})
	}
	for _, r := range dead {
		d.Dead = append(d.Dead, DumpMsg{S: asInt(r[0]), G: asText(r[1]), E: EventID([]byte(asText(r[2]))), Att: int(asInt(r[3]))})
	}
	for _, r := range keys {
		d.Keys = append(d.Keys, DumpKey{Key: asText(r[0]), S: asInt(r[1])})
	}
	for _, r := range app {
		d.App = append(d.App, asText(r[0]))
	}
	return d
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}

func asFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func asText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
