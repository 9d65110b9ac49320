package source

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Split is one unit of a source's input: a file, a range of a file, a partition of a table.
// Flink: SourceSplit (its splitId) with the split's own fields, here opaque Payload bytes.
//
// ID names the split among the source's splits: the enumerator refuses two splits with one ID.
// Payload is what the reader needs to read it (a path, an offset range), opaque to this package.
// Position is how far a reader got: 0 when the enumerator hands it out; the reader's read
// function advances it as it goes (records or bytes, its own unit) and a restored reader
// resumes from the Position its checkpoint recorded (Flink: a split's checkpointed reader
// position, as FileSourceSplit's CheckpointedPosition).
type Split struct {
	ID       string `json:"id"`
	Payload  []byte `json:"payload,omitempty"`
	Position int64  `json:"position,omitempty"`
}

// The event types on the wire (see the package doc).
const (
	eventRequestSplit = "RequestSplit"
	eventAddSplits    = "AddSplits"
	eventNoMoreSplits = "NoMoreSplits"
)

// event is every event's JSON shape.
type event struct {
	Type   string  `json:"type"`
	Splits []Split `json:"splits,omitempty"`
}

// ErrInvalidEvent is returned (wrapped, naming the event) for an event that is not valid JSON or
// has a type the receiver does not handle.
var ErrInvalidEvent = errors.New("source: invalid event")

func encodeEvent(e event) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		// A struct of strings and byte slices always encodes.
		panic(fmt.Sprintf("source: encoding %s event: %v", e.Type, err))
	}
	return b
}

func decodeEvent(b []byte) (event, error) {
	var e event
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("%w: %q: %v", ErrInvalidEvent, truncate(b), err)
	}
	return e, nil
}

// truncate shortens b for an error message.
func truncate(b []byte) string {
	const max = 80
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// checkSplits returns an error naming the first split without an ID or with an ID seen before.
func checkSplits(splits []Split, seen map[string]bool) error {
	for i, s := range splits {
		if s.ID == "" {
			return fmt.Errorf("source: split %d has an empty ID", i)
		}
		if seen[s.ID] {
			return fmt.Errorf("source: split ID %q appears twice", s.ID)
		}
		seen[s.ID] = true
	}
	return nil
}
