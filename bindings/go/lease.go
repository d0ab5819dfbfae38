package harel

import (
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Lease is a claimed message, copied out of the library: the caller owns it and nothing
// needs freeing. Ack and Nack read Seq, GroupID and WorkerID only.
type Lease struct {
	// Seq is the message's sequence number: FIFO order within its group, and the lease's
	// handle.
	Seq int64
	// GroupID is the group the message was published into, every byte of it: a group id
	// written by another program may hold NUL bytes, which this binding's Publish refuses
	// but Ack, Nack and AckAndClaim pass on whole.
	GroupID string
	// Event is the event's JSON text, byte for byte as published (NUL bytes included, for
	// an event written by another program).
	Event json.RawMessage
	// WorkerID is who holds the lease: the workerID given to Claim.
	WorkerID string
	// LockExpiry is when the lease lapses (now + visibility at the claim, by the
	// Transport's clock; to the microsecond): after it, another worker may claim the
	// message and this lease's Ack or Nack fails with ErrLeaseLost.
	LockExpiry time.Time
	// Attempts is how many times the message has been claimed, this claim included (1 on
	// its first). With WithMaxAttempts, a message claimed that many times goes to the
	// dead letters instead of being handed out again.
	Attempts int
	// Headers are the headers the message was published with, in order, byte for byte;
	// nil for none. Header finds one by name.
	Headers []Header

	// span is the lease's consumer span (WithTracerProvider), nil when tracing is off;
	// Ack, Nack, DeadLetter and a lost lease end it.
	span trace.Span
}
