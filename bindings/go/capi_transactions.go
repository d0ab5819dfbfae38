package harel

// The C calls of transactions: the application's transaction, its statements with their
// parameters and rows, its publishes, its end.

// #include "harel_transport.h"
import "C"

import (
	"fmt"
	"math"
	"strconv"
	"unsafe"
)

// cTx is a harel_tx*, the caller's until harel_tx_free.
type cTx struct{ p *C.harel_tx }

// The codes of harel_value.type: the header's harel_value_type.
const (
	valueNull    = C.int32_t(C.HAREL_VALUE_NULL)
	valueInteger = C.int32_t(C.HAREL_VALUE_INTEGER)
	valueReal    = C.int32_t(C.HAREL_VALUE_REAL)
	valueText    = C.int32_t(C.HAREL_VALUE_TEXT)
	valueBlob    = C.int32_t(C.HAREL_VALUE_BLOB)
)

func (t cTransport) begin() (cTx, error) {
	var tx *C.harel_tx
	var cerr *C.harel_error
	if err := check(C.harel_transport_begin(t.p, &tx, &cerr), &cerr); err != nil {
		return cTx{}, err
	}
	return cTx{tx}, nil
}

// statement is sql and its parameters as C takes them: copies in C memory (added to
// strs, freed with it), the parameters an array of harel_value (NULL for none) whose
// texts and blobs are C memory too.
func (strs *cStrings) statement(sql string, args []any) (*C.char, *C.harel_value, error) {
	s, err := strs.add("sql", sql)
	if err != nil || len(args) == 0 {
		return s, nil, err
	}
	array := (*C.harel_value)(strs.alloc(C.size_t(len(args)) * C.sizeof_harel_value))
	params := unsafe.Slice(array, len(args))
	for i, arg := range args {
		if params[i], err = strs.value("params["+strconv.Itoa(i)+"]", arg); err != nil {
			return nil, nil, err
		}
	}
	return s, array, nil
}

// value is arg as a harel_value, named name in errors. Go's types that have an SQL value
// map to it (a bool to 0 or 1, as SQLite stores booleans); any other type, and an unsigned
// integer beyond int64, is ErrArgument. A float that is not finite goes to the library,
// which refuses it.
func (strs *cStrings) value(name string, arg any) (v C.harel_value, err error) {
	integer := func(n int64) { v._type, v.integer = valueInteger, C.int64_t(n) }
	unsigned := func(n uint64) {
		if n > math.MaxInt64 {
			err = argumentError(name + " is " + strconv.FormatUint(n, 10) +
				": beyond int64, the largest integer SQL stores")
			return
		}
		integer(int64(n))
	}
	switch a := arg.(type) {
	case nil:
		v._type = valueNull
	case bool:
		var n int64
		if a {
			n = 1
		}
		integer(n)
	case int:
		integer(int64(a))
	case int8:
		integer(int64(a))
	case int16:
		integer(int64(a))
	case int32:
		integer(int64(a))
	case int64:
		integer(a)
	case uint:
		unsigned(uint64(a))
	case uint8:
		unsigned(uint64(a))
	case uint16:
		unsigned(uint64(a))
	case uint32:
		unsigned(uint64(a))
	case uint64:
		unsigned(a)
	case float32:
		v._type, v.real = valueReal, C.double(a)
	case float64:
		v._type, v.real = valueReal, C.double(a)
	case string:
		v._type = valueText
		v.text, err = strs.add(name, a)
	case []byte:
		v._type, v.size = valueBlob, C.size_t(len(a))
		if len(a) > 0 { // an empty blob's pointer is NULL
			p := strs.alloc(C.size_t(len(a)))
			copy(unsafe.Slice((*byte)(p), len(a)), a)
			v.blob = (*C.uint8_t)(p)
		}
	default:
		err = argumentError(fmt.Sprintf("%s is a %T: a parameter is nil, a bool, an integer, a float, "+
			"a string or a []byte", name, arg))
	}
	return v, err
}

func (tx cTx) execute(sql string, args []any) error {
	var strs cStrings
	defer strs.free()
	s, params, err := strs.statement(sql, args)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	return check(C.harel_tx_execute(tx.p, s, params, C.size_t(len(args)), &cerr), &cerr)
}

func (tx cTx) query(sql string, args []any) ([][]any, error) {
	var strs cStrings
	defer strs.free()
	s, params, err := strs.statement(sql, args)
	if err != nil {
		return nil, err
	}
	var out *C.harel_rows
	var cerr *C.harel_error
	status := C.harel_tx_query(tx.p, s, params, C.size_t(len(args)), &out, &cerr)
	defer C.harel_rows_free(out) // NULL does nothing
	if err := check(status, &cerr); err != nil {
		return nil, err
	}
	return goRows(out), nil
}

// goRows is a Go copy of rows, row by row.
func goRows(rows *C.harel_rows) [][]any {
	n, columns := int(rows.n_rows), int(rows.n_columns)
	values := cSlice(rows.values, rows.n_rows*rows.n_columns)
	out := make([][]any, n)
	for r := range out {
		out[r] = make([]any, columns)
		for c := range out[r] {
			out[r][c] = goValue(&values[r*columns+c])
		}
	}
	return out
}

// goValue is a Go copy of v: nil, int64, float64, string (every byte of its size) or []byte.
func goValue(v *C.harel_value) any {
	switch v._type {
	case valueInteger:
		return int64(v.integer)
	case valueReal:
		return float64(v.real)
	case valueText:
		return C.GoStringN(v.text, C.int(v.size))
	case valueBlob:
		return C.GoBytes(unsafe.Pointer(v.blob), C.int(v.size)) // empty, not nil, for size 0
	}
	return nil // valueNull
}

// publish queues a publish, through harel_tx_publish_delivery.
func (tx cTx) publish(groupID string, event []byte, pc *publishConfig) error {
	var strs cStrings
	defer strs.free()
	m, err := strs.message("", groupID, event, pc.priority, pc.routingKey)
	if err != nil {
		return err
	}
	hs, err := strs.headers("", pc.headers)
	if err != nil {
		return err
	}
	d, err := strs.harelDelivery("", pc.key, pc.delay, pc.notBefore, pc.unique, pc.expiry, pc.retry)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	return check(C.harel_tx_publish_delivery(tx.p, m.group_id, m.event_json, m.priority, m.routing_key,
		hs, C.size_t(len(pc.headers)), &d, &cerr), &cerr)
}

// commit commits and returns the outcomes of the n publishes queued (each a seq and a
// harel_published), in Go arrays of numbers n long.
func (tx cTx) commit(n int) ([]Published, error) {
	seqs, outcomes := make([]C.int64_t, n), make([]C.int, n)
	var got C.size_t
	var cerr *C.harel_error
	s := C.harel_tx_commit(tx.p, firstOf(seqs), firstOf(outcomes), C.size_t(n), &got, &cerr)
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	published := make([]Published, min(n, int(got)))
	for i := range published {
		published[i] = outcomeOf(seqs[i], outcomes[i])
	}
	return published, nil
}

func (tx cTx) rollback() error {
	var cerr *C.harel_error
	return check(C.harel_tx_rollback(tx.p, &cerr), &cerr)
}

func (tx cTx) free() { C.harel_tx_free(tx.p) }
