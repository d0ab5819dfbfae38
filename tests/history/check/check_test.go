package check

import (
	"strings"
	"testing"

	"github.com/harel-transport/harel-transport/tests/history/hist"
)

// Small synthetic histories, one per property: each with a violation the property must
// report, and a clean twin on which every property must pass.

const base = int64(1_700_000_000) * 1e9

// sec is an instant, seconds after base.
func sec(s float64) int64 { return base + int64(s*1e9) }

// exp is a lease's end as the clients log it: epoch seconds.
func exp(s float64) float64 { return float64(sec(s)) / 1e9 }

type builder struct {
	recs  []*hist.Record
	n     map[string]int
	dump  hist.Dump
	exits map[string]int64
}

func newBuilder() *builder {
	return &builder{n: map[string]int{}, dump: hist.Dump{At: sec(1000)}}
}

// call logs a call of client: invoked at inv, completed at cmp with res (res.Type "ok" or
// "fail"); cmp < 0: never completed.
func (b *builder) call(client, lang string, inv, cmp float64, args, res hist.Record) {
	i := b.n[client]
	b.n[client]++
	args.Client, args.Lang, args.I, args.Type, args.At = client, lang, i, "invoke", sec(inv)
	b.recs = append(b.recs, &args)
	if cmp >= 0 {
		res.Client, res.Lang, res.I, res.At = client, lang, i, sec(cmp)
		if res.Type == "" {
			res.Type = "ok"
		}
		b.recs = append(b.recs, &res)
	}
}

func (b *builder) publish(client string, inv, cmp float64, g, e string) {
	b.call(client, "go", inv, cmp, hist.Record{Op: "publish", Msgs: []hist.Msg{{G: g, E: e}}}, hist.Record{})
}

// claim: client claims seq s (event e, group g) at instant t with visibility vis.
func (b *builder) claim(client string, t, vis float64, s int64, g, e string) {
	b.call(client, "go", t-0.001, t+0.001, hist.Record{Op: "claim", Worker: client, Vis: vis, Max: 1},
		hist.Record{Got: []hist.Lease{{S: s, G: g, E: e, W: client, Exp: exp(t + vis), Att: 1}}})
}

func (b *builder) finish(client, op string, inv, cmp float64, s int64, g, e string, status string) {
	res := hist.Record{}
	if status != "" {
		res = hist.Record{Type: "fail", Status: status}
	}
	b.call(client, "go", inv, cmp, hist.Record{Op: op, Leases: []hist.Ref{{S: s, G: g, W: client, E: e}}}, res)
}

func (b *builder) queued(s int64, g, e string) {
	b.dump.Messages = append(b.dump.Messages, hist.DumpMsg{S: s, G: g, E: e})
}

func (b *builder) results(t *testing.T) map[string]Result {
	t.Helper()
	h, err := Build(b.recs, &b.dump, b.exits)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Result{}
	for _, r := range Run(h) {
		out[r.Name] = r
	}
	return out
}

func report(rs map[string]Result) string {
	var list []Result
	for _, p := range Properties {
		list = append(list, rs[p.Name])
	}
	var b strings.Builder
	Report(&b, list, 5)
	return b.String()
}

func expectClean(t *testing.T, b *builder) {
	t.Helper()
	rs := b.results(t)
	for _, r := range rs {
		if len(r.Violations) > 0 {
			t.Fatalf("the clean history fails %s:\n%s", r.Name, report(rs))
		}
	}
}

func expectViolation(t *testing.T, b *builder, property string) {
	t.Helper()
	rs := b.results(t)
	if len(rs[property].Violations) == 0 {
		t.Fatalf("%s did not fail:\n%s", property, report(rs))
	}
	t.Logf("%s", report(rs))
}

// one message, published, claimed by w1 at t=10 and acked
func acked() *builder {
	b := newBuilder()
	b.publish("p", 1, 2, "g", "e1")
	b.claim("w1", 10, 5, 1, "g", "e1")
	b.finish("w1", "ack", 11, 12, 1, "g", "e1", "")
	return b
}

func TestNoRedeliveryAfterAck(t *testing.T) {
	expectClean(t, acked())
	b := acked()
	b.claim("w2", 20, 5, 1, "g", "e1") // the acked message, leased again
	b.finish("w2", "ack", 21, 22, 1, "g", "e1", "")
	expectViolation(t, b, "no-redelivery-after-ack")
	b = acked()
	b.queued(1, "g", "e1") // acked, yet still there
	expectViolation(t, b, "no-redelivery-after-ack")
}

func TestNoLoss(t *testing.T) {
	expectClean(t, acked())
	b := newBuilder()
	b.publish("p", 1, 2, "g", "e1")
	b.claim("w1", 10, 5, 1, "g", "e1")
	b.finish("w1", "nack", 11, 12, 1, "g", "e1", "") // freed, so it must still be there: it is not
	expectViolation(t, b, "no-loss")
	b = newBuilder()
	b.publish("p", 1, 2, "g", "e1") // published, never seen again
	expectViolation(t, b, "no-loss")
	b = newBuilder()
	b.publish("p", 1, 2, "g", "e1")
	b.queued(1, "g", "e1") // still there: fine
	expectClean(t, b)
}

func TestNoPhantom(t *testing.T) {
	b := acked()
	b.claim("w2", 20, 5, 2, "g", "ghost") // nobody published it
	b.finish("w2", "ack", 21, 22, 2, "g", "ghost", "")
	expectViolation(t, b, "no-phantom")
	b = acked()
	b.call("p", "go", 30, 31, hist.Record{Op: "publish", Msgs: []hist.Msg{{G: "g", E: "e2"}}},
		hist.Record{Type: "fail", Status: "HAREL_ERR_BUSY"})
	b.queued(2, "g", "e2") // a publish that failed, yet stored
	expectViolation(t, b, "no-phantom")
}

func TestGroupFIFO(t *testing.T) {
	clean := func() *builder {
		b := newBuilder()
		b.publish("p", 1, 2, "g", "e1")
		b.publish("p", 3, 4, "g", "e2")
		b.claim("w1", 10, 5, 1, "g", "e1")
		b.finish("w1", "ack", 11, 12, 1, "g", "e1", "")
		b.claim("w1", 13, 5, 2, "g", "e2")
		b.finish("w1", "ack", 14, 15, 2, "g", "e2", "")
		return b
	}
	expectClean(t, clean())
	b := newBuilder()
	b.publish("p", 1, 2, "g", "e1")
	b.publish("p", 3, 4, "g", "e2")
	b.claim("w1", 10, 5, 2, "g", "e2") // the second, while the first is still queued
	b.finish("w1", "ack", 11, 12, 2, "g", "e2", "")
	b.queued(1, "g", "e1")
	expectViolation(t, b, "group-fifo")
	// seqs against commit order: e2's publish began after e1's returned, yet has the lower seq
	b = newBuilder()
	b.publish("p", 1, 2, "g", "e1")
	b.publish("p", 3, 4, "h", "e2")
	b.queued(2, "g", "e1")
	b.queued(1, "h", "e2")
	expectViolation(t, b, "group-fifo")
}

func TestOneHolderPerGroup(t *testing.T) {
	held := func(second float64) *builder {
		b := newBuilder()
		b.publish("p", 1, 2, "g", "e1")
		b.claim("w1", 10, 5, 1, "g", "e1") // leased until 15
		b.claim("w2", second, 5, 1, "g", "e1")
		b.finish("w2", "ack", second+1, second+1.1, 1, "g", "e1", "")
		return b
	}
	expectClean(t, held(16))                             // after w1's lease lapsed
	expectViolation(t, held(12), "one-holder-per-group") // while it was valid
	// a claim of a parked message before the park's end
	b := newBuilder()
	b.publish("p", 1, 2, "g", "e1")
	b.claim("w1", 10, 5, 1, "g", "e1")
	b.call("w1", "go", 11, 11.1, hist.Record{Op: "nack", Delay: 5, Leases: []hist.Ref{{S: 1, G: "g", W: "w1", E: "e1"}}}, hist.Record{})
	b.claim("w2", 13, 5, 1, "g", "e1")
	b.finish("w2", "ack", 14, 14.1, 1, "g", "e1", "")
	expectViolation(t, b, "one-holder-per-group")
	// an extend moves the lease's end: a claim after the first end but before the new one
	extended := func(extend bool) *builder {
		b := newBuilder()
		b.publish("p", 1, 2, "g", "e1")
		b.claim("w1", 10, 1, 1, "g", "e1") // until 11
		if extend {
			b.call("w1", "go", 10.5, 10.6, hist.Record{Op: "extend", Vis: 5, Leases: []hist.Ref{{S: 1, G: "g", W: "w1", E: "e1"}}},
				hist.Record{Exp: exp(15.5)})
		}
		b.claim("w2", 12, 5, 1, "g", "e1")
		b.finish("w2", "ack", 13, 13.1, 1, "g", "e1", "")
		return b
	}
	expectClean(t, extended(false))
	expectViolation(t, extended(true), "one-holder-per-group")
}

func TestStaleAckRefused(t *testing.T) {
	twice := func(status string) *builder {
		b := newBuilder()
		b.publish("p", 1, 2, "g", "e1")
		b.claim("w1", 10, 1, 1, "g", "e1") // lapses at 11
		b.claim("w2", 12, 5, 1, "g", "e1")
		b.finish("w1", "ack", 13, 13.1, 1, "g", "e1", status) // w1's stale ack
		b.finish("w2", "ack", 14, 14.1, 1, "g", "e1", map[bool]string{true: "HAREL_ERR_LEASE_LOST"}[status == ""])
		return b
	}
	expectClean(t, twice("HAREL_ERR_LEASE_LOST"))
	expectViolation(t, twice(""), "stale-ack-refused")
	// an ack of a lease already nacked
	b := newBuilder()
	b.publish("p", 1, 2, "g", "e1")
	b.claim("w1", 10, 5, 1, "g", "e1")
	b.finish("w1", "nack", 11, 11.1, 1, "g", "e1", "")
	b.finish("w1", "ack", 12, 12.1, 1, "g", "e1", "")
	expectViolation(t, b, "stale-ack-refused")
}

func TestKeyedPublishOnce(t *testing.T) {
	keyed := func(secondDup bool) *builder {
		b := newBuilder()
		b.call("p", "go", 1, 2, hist.Record{Op: "publish", Msgs: []hist.Msg{{G: "g", E: "e1", K: "k"}}},
			hist.Record{Pub: []hist.Pub{{S: 1}}})
		if secondDup {
			b.call("q", "rust", 3, 4, hist.Record{Op: "publish", Msgs: []hist.Msg{{G: "g", E: "e2", K: "k"}}},
				hist.Record{Pub: []hist.Pub{{S: 1, Dup: true}}})
		} else {
			b.call("q", "rust", 3, 4, hist.Record{Op: "publish", Msgs: []hist.Msg{{G: "g", E: "e2", K: "k"}}},
				hist.Record{Pub: []hist.Pub{{S: 2}}})
			b.queued(2, "g", "e2")
		}
		b.queued(1, "g", "e1")
		b.dump.Keys = []hist.DumpKey{{Key: "k", S: 1}}
		return b
	}
	expectClean(t, keyed(true))
	expectViolation(t, keyed(false), "keyed-publish-once")
}

func TestTransactionAtomicity(t *testing.T) {
	tx := func(mode, typ string, row, stored bool) *builder {
		b := newBuilder()
		res := hist.Record{Type: typ}
		if typ == "fail" {
			res.Status = "HAREL_ERR_DATABASE"
		}
		b.call("p", "go", 1, 2, hist.Record{Op: "tx", Tx: "t1", TxMode: mode,
			Msgs: []hist.Msg{{G: "g", E: "e1"}, {G: "h", E: "e2"}}}, res)
		if row {
			b.dump.App = []string{"t1"}
		}
		if stored {
			b.queued(1, "g", "e1")
			b.queued(2, "h", "e2")
		}
		return b
	}
	expectClean(t, tx("commit", "ok", true, true))
	expectClean(t, tx("rollback", "ok", false, false))
	expectClean(t, tx("fail", "fail", false, false))
	expectViolation(t, tx("commit", "ok", false, true), "transaction-atomicity")   // messages without the row
	expectViolation(t, tx("rollback", "ok", false, true), "transaction-atomicity") // rolled back, messages stored
	expectViolation(t, tx("fail", "fail", true, false), "transaction-atomicity")   // failed, row stored
	// a transaction whose client was killed: either is fine, a half is not
	b := tx("commit", "ok", true, true)
	b.recs = b.recs[:1]
	expectClean(t, b)
	b = tx("commit", "ok", false, false)
	b.recs = b.recs[:1]
	expectClean(t, b)
	b = tx("commit", "ok", true, false)
	b.recs = b.recs[:1]
	b.queued(1, "g", "e1") // one message of two, and the row
	expectViolation(t, b, "transaction-atomicity")
}

func TestGroupLinearizable(t *testing.T) {
	// A nack refused although w1 held the message (nobody else claimed it): only the model
	// sees that this refusal was wrong.
	nack := func(status string) *builder {
		b := newBuilder()
		b.publish("p", 1, 2, "g", "e1")
		b.claim("w1", 10, 20, 1, "g", "e1")
		b.finish("w1", "nack", 11, 12, 1, "g", "e1", status)
		b.queued(1, "g", "e1")
		return b
	}
	expectClean(t, nack(""))
	expectViolation(t, nack("HAREL_ERR_LEASE_LOST"), "group-linearizable")
}

func TestUnknownOutcomes(t *testing.T) {
	// A claim whose client was killed may have taken w1's lapsed lease: w1's ack refused
	// is then right, and the message is left leased to the dead client.
	b := newBuilder()
	b.publish("p", 1, 2, "g", "e1")
	b.claim("w1", 10, 1, 1, "g", "e1")
	b.call("k", "go", 12, -1, hist.Record{Op: "claim", Worker: "k", Vis: 5, Max: 1}, hist.Record{})
	b.finish("w1", "ack", 13, 13.1, 1, "g", "e1", "HAREL_ERR_LEASE_LOST")
	b.queued(1, "g", "e1")
	expectClean(t, b)
	// An ack whose client was killed: the message may be gone, or still there.
	for _, still := range []bool{false, true} {
		b = newBuilder()
		b.publish("p", 1, 2, "g", "e1")
		b.claim("w1", 10, 5, 1, "g", "e1")
		b.finish("w1", "ack", 11, -1, 1, "g", "e1", "")
		if still {
			b.queued(1, "g", "e1")
		}
		expectClean(t, b)
	}
	// A publish whose client was killed: stored or not, both fine.
	b = newBuilder()
	b.publish("p", 1, -1, "g", "e1")
	expectClean(t, b)
	b.queued(1, "g", "e1")
	expectClean(t, b)
}

func TestKilledClientsAreBounded(t *testing.T) {
	// k's claim was in flight when k was killed at 12.5: it cannot have taken w1's lease,
	// valid until 15, so w1's ack refused at 13 is wrong.
	ghost := func(exit float64) *builder {
		b := newBuilder()
		b.publish("p", 1, 2, "g", "e1")
		b.claim("w1", 10, 5, 1, "g", "e1")
		b.call("k", "go", 12, -1, hist.Record{Op: "claim", Worker: "k", Vis: 5, Max: 1}, hist.Record{})
		b.exits = map[string]int64{"k": sec(exit)}
		b.finish("w1", "ack", 16, 16.1, 1, "g", "e1", "HAREL_ERR_LEASE_LOST")
		b.queued(1, "g", "e1")
		return b
	}
	expectClean(t, ghost(15.5)) // alive after w1's lease lapsed: it may have claimed the message
	expectViolation(t, ghost(12.5), "group-linearizable")
}

func TestHarelAcksCheckNothing(t *testing.T) {
	// harel's ack deletes by seq whoever holds the message: w2's lease then ends with it,
	// and that is no violation of this library's rules.
	b := newBuilder()
	b.publish("p", 1, 2, "g", "e1")
	b.publish("p", 3, 4, "g", "e2")
	b.call("h", "harel", 9.9, 10.1, hist.Record{Op: "claim", Worker: "h", Vis: 1, Max: 1},
		hist.Record{Got: []hist.Lease{{S: 1, G: "g", E: "e1", W: "h", Exp: exp(11)}}})
	b.claim("w2", 12, 5, 1, "g", "e1")
	b.call("h", "harel", 13, 13.1, hist.Record{Op: "ack", Leases: []hist.Ref{{S: 1, G: "g", W: "h", E: "e1"}}}, hist.Record{})
	b.claim("w3", 14, 5, 2, "g", "e2")
	b.finish("w3", "ack", 15, 15.1, 2, "g", "e2", "")
	b.finish("w2", "ack", 16, 16.1, 1, "g", "e1", "HAREL_ERR_LEASE_LOST")
	expectClean(t, b)
}
