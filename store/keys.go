package store

import (
	"fmt"

	"github.com/ebb-data/ebb/store/keyenc"
)

// This file holds what users of the contract need of keys: decoding the
// encoded clustering keys a Scan hands out, the error naming a refused
// mutation, and the query limit check. Backends resolve batches and encode
// keys with package kit.

// MutationError names the element of a batch that was refused: a
// mutation of a Write, and also an item of a list Add or an event of an
// index write, which the HTTP layer answers the same way. Nothing of the
// batch was written.
type MutationError struct {
	// Noun names what the batch holds, in the message ("item 3: ...");
	// empty means "mutation".
	Noun  string
	Index int
	Err   error
}

func (e *MutationError) Error() string {
	noun := e.Noun
	if noun == "" {
		noun = "mutation"
	}
	return fmt.Sprintf("%s %d: %v", noun, e.Index, e.Err)
}

// ClientMessage names the refused element before what a client reads of
// why.
func (e *MutationError) ClientMessage() string {
	noun := e.Noun
	if noun == "" {
		noun = "mutation"
	}
	if m, ok := ClientMessage(e.Err); ok {
		return fmt.Sprintf("%s %d: %s", noun, e.Index, m)
	}
	return fmt.Sprintf("%s %d", noun, e.Index)
}

func (e *MutationError) Unwrap() error { return e.Err }

// DecodeTuple decodes len(cols) values from the front of b.
func DecodeTuple(cols []Column, b []byte, desc bool) ([]any, []byte, error) {
	out := make([]any, len(cols))
	var err error
	for i, c := range cols {
		switch c.Type {
		case TypeText:
			out[i], b, err = keyenc.DecodeString(b, desc)
		case TypeInt64:
			out[i], b, err = keyenc.DecodeInt64(b, desc)
		case TypeTimestamp:
			out[i], b, err = keyenc.DecodeTime(b, desc)
		case TypeBytes:
			out[i], b, err = keyenc.DecodeBytes(b, desc)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return out, b, nil
}

// DecodeClustering decodes a whole encoded clustering key.
func DecodeClustering(spec *TableSpec, b []byte) ([]any, error) {
	vals, rest, err := DecodeTuple(spec.Clustering, b, spec.ClusteringOrder == Desc)
	if err == nil && len(rest) > 0 {
		err = keyenc.ErrCorrupt
	}
	return vals, err
}

// CheckLimit validates a query limit.
func CheckLimit(limit int) error {
	if limit < 1 || limit > MaxLimit {
		return Errorf(ErrInvalid, "limit %d outside 1..%d", limit, MaxLimit)
	}
	return nil
}
