package harel

// The operator's writes: dead letters redriven or purged (which ones: DeadLetters), a
// group's messages or every message purged, a stuck group released. Each method is one
// transaction of the library.

// DeadLetters says which dead letters Redrive or PurgeDead takes: exactly one of all of
// them (AllDeadLetters), one group's (DeadLettersOfGroup) or some by seq
// (DeadLettersBySeq). The zero value selects nothing, which the library refuses with
// ErrArgument, as it does DeadLettersBySeq() with no seqs.
type DeadLetters struct {
	all     bool
	byGroup bool
	group   string
	seqs    []int64
}

// AllDeadLetters selects every dead letter.
func AllDeadLetters() DeadLetters { return DeadLetters{all: true} }

// DeadLettersOfGroup selects the dead letters of groupID (not empty).
func DeadLettersOfGroup(groupID string) DeadLetters {
	return DeadLetters{byGroup: true, group: groupID}
}

// DeadLettersBySeq selects the dead letters with these seqs (DeadLetter.Seq); seqs that
// are not dead letters are passed over. The seqs are copied. A seq is one database's: on a
// queue opened with OpenShards, Redrive and PurgeDead refuse this selection (ErrArgument).
func DeadLettersBySeq(seqs ...int64) DeadLetters {
	return DeadLetters{seqs: append([]int64(nil), seqs...)}
}

// Redrive moves the selected dead letters back into their groups as the newest messages
// (after what each group holds now), in the order they had, claimed 0 times; a group they
// bring back is made with its old priority and routing key. It returns how many moved.
//
// Errors: ErrArgument (not exactly one selection, an empty group id, a NUL byte or invalid
// UTF-8 in it, DeadLettersBySeq on a sharded queue; nothing changed), ErrBusy, ErrDatabase, ErrClosed.
func (t *Transport) Redrive(which DeadLetters) (uint64, error) {
	var moved uint64
	err := t.call(func(h cTransport) (err error) {
		moved, err = h.selectDead(which, false)
		return err
	})
	return moved, err
}

// PurgeDead deletes the selected dead letters and returns how many.
//
// Errors: as Redrive's.
func (t *Transport) PurgeDead(which DeadLetters) (uint64, error) {
	var purged uint64
	err := t.call(func(h cTransport) (err error) {
		purged, err = h.selectDead(which, true)
		return err
	})
	return purged, err
}

// PurgeGroup deletes groupID's messages and the group, and returns how many messages; a
// lease on one of them is lost (its Ack is ErrLeaseLost). An unknown group is 0.
//
// Errors: ErrArgument (groupID empty, holding a NUL byte or invalid UTF-8), ErrBusy,
// ErrDatabase, ErrClosed.
func (t *Transport) PurgeGroup(groupID string) (uint64, error) {
	var purged uint64
	err := t.call(func(h cTransport) (err error) {
		purged, err = h.purgeGroup(groupID)
		return err
	})
	return purged, err
}

// Purge deletes every message and group (the dead letters stay) and returns how many
// messages.
//
// Errors: ErrBusy, ErrDatabase, ErrClosed.
func (t *Transport) Purge() (uint64, error) {
	var purged uint64
	err := t.call(func(h cTransport) (err error) {
		purged, err = h.purge()
		return err
	})
	return purged, err
}

// Release ends the lease, park or delay on groupID's head now, so a stuck group is served
// at once (the holder's Ack or Nack then finds its lease lost; a delayed head is delivered
// before its due time). It returns false when nothing was held (the group is ready, or
// unknown).
//
// Errors: ErrArgument (groupID empty, holding a NUL byte or invalid UTF-8), ErrBusy,
// ErrDatabase, ErrClosed.
func (t *Transport) Release(groupID string) (bool, error) {
	var released bool
	err := t.call(func(h cTransport) (err error) {
		released, err = h.release(groupID)
		return err
	})
	return released, err
}
