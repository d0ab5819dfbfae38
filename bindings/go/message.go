package harel

import "encoding/json"

// Message is one message for PublishMany: Publish's arguments, as a struct.
type Message struct {
	// GroupID is the group whose FIFO the message joins (non-empty).
	GroupID string
	// Event is any valid JSON text, stored and returned byte for byte.
	Event json.RawMessage
	// Priority is the group's priority, 0..4, if this message creates the group (as
	// WithPriority).
	Priority int
	// RoutingKey is the group's routing key, if this message creates the group (as
	// WithRoutingKey); "" for none.
	RoutingKey string
}
