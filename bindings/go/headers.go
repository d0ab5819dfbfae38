package harel

// Headers: (name, value) pairs a message carries beside its event, in order, handed back
// with every lease of it, by Peek and with its dead letter.

// Header is one of a message's headers. The library checks them at publish: at most
// MaxHeaders pairs and MaxHeadersBytes bytes of names and values in all; a Name of 1 to
// MaxHeaderNameLen bytes of visible ASCII (0x21..0x7e) without '='; a Value of UTF-8
// without NUL bytes. Names may repeat, and the order is kept.
type Header struct {
	Name, Value string
}

// The limits on a message's headers (the library's).
const (
	MaxHeaders       = 64        // pairs
	MaxHeadersBytes  = 16 * 1024 // bytes of names and values, all pairs together
	MaxHeaderNameLen = 128       // bytes of one name
)

// WithHeaders gives the message headers, in order (repeated options add to them; the
// slice is copied). Any publish takes them: Publish (still sharing commits), PublishWith,
// a Tx's Publish; in a batch each Message has its own Headers. A bad header is
// ErrArgument naming it ("headers[2].name holds byte 0x3d: ..."), nothing written.
func WithHeaders(headers ...Header) PublishOption {
	return func(c *publishConfig) { c.headers = append(c.headers, headers...) }
}

// Header returns the value of the lease's first header named name (names are compared
// byte for byte), and whether there is one.
func (l *Lease) Header(name string) (string, bool) {
	return headerValue(l.Headers, name)
}

func headerValue(headers []Header, name string) (string, bool) {
	for _, h := range headers {
		if h.Name == name {
			return h.Value, true
		}
	}
	return "", false
}
