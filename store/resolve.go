package store

import (
	"bytes"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store/keyenc"
)

// This file holds the validation and key encoding every backend shares, so
// that bad input is refused the same way everywhere.

// MutationError names the mutation of a batch that was refused.
type MutationError struct {
	Index int
	Err   error
}

func (e *MutationError) Error() string { return fmt.Sprintf("mutation %d: %v", e.Index, e.Err) }
func (e *MutationError) Unwrap() error { return e.Err }

// ResolvedCell is a validated cell: Col indexes TableSpec.Values; Value is
// canonical (nil for a deleted cell); ExpiresAt is Unix milliseconds, 0 for
// none.
type ResolvedCell struct {
	Col       int
	Value     any
	ExpiresAt int64
}

// ResolvedMutation is a validated mutation with canonical keys, encoded
// keys and absolute expiries in Unix milliseconds (0 = none).
type ResolvedMutation struct {
	Kind          MutationKind
	Partition     []any
	Clustering    []any
	PartitionKey  []byte // EncodePartition
	ClusteringKey []byte // EncodeClustering
	Cells         []ResolvedCell
	ExpiresAt     int64
	// Cond is the mutation's condition, nil when it has none.
	Cond *ResolvedCondition
	// Size is the approximate stored size of the cells and keys, for limits.
	Size int
}

// ResolvedCondition is a validated Condition: Col indexes TableSpec.Values
// (IfEquals only) and Value is canonical.
type ResolvedCondition struct {
	Kind  ConditionKind
	Col   int
	Value any
}

// ResolveBatch validates a batch against spec at time now and returns it
// resolved. maxRowBytes (0 = no limit) bounds each Upsert's size. Any error
// is a *MutationError wrapping ErrInvalid or ErrTooLarge.
func ResolveBatch(spec *TableSpec, batch []Mutation, now time.Time, maxRowBytes int) ([]ResolvedMutation, error) {
	out := make([]ResolvedMutation, len(batch))
	// One slab for every mutation's cells saves an allocation per row.
	ncells := 0
	for i := range batch {
		ncells += len(batch[i].Cells)
	}
	slab := make([]ResolvedCell, 0, ncells)
	// And one for the encoded keys, sized by a guess that is usually right
	// (a wrong guess only costs another allocation).
	// Mutations that share one partition slice (a list's items, a shard's
	// events) have it checked and encoded once.
	var parts map[*any]*ResolvedMutation
	if len(batch) > 1 {
		parts = map[*any]*ResolvedMutation{}
	}
	var keys []byte
	if len(batch) > 0 {
		keys = make([]byte, 0, len(batch)*keySizeHint(&batch[0]))
	}
	for i := range batch {
		n := len(batch[i].Cells)
		out[i].Cells = slab[len(slab) : len(slab) : len(slab)+n]
		slab = slab[:len(slab)+n]
		if err := resolve(spec, &batch[i], now, maxRowBytes, &out[i], &keys, &parts); err != nil {
			return nil, &MutationError{Index: i, Err: err}
		}
		if batch[i].If != nil {
			c, err := resolveCondition(spec, &batch[i], len(batch))
			if err != nil {
				return nil, &MutationError{Index: i, Err: err}
			}
			out[i].Cond = c
		}
	}
	return out, nil
}

func resolve(spec *TableSpec, m *Mutation, now time.Time, maxRowBytes int, r *ResolvedMutation, keys *[]byte, parts *map[*any]*ResolvedMutation) error {
	var err error
	r.Kind = m.Kind
	var shared *ResolvedMutation
	if len(m.Partition) == len(spec.PartitionKey) && len(m.Partition) > 0 {
		shared = (*parts)[&m.Partition[0]]
	}
	if shared != nil {
		r.Partition, r.PartitionKey = shared.Partition, shared.PartitionKey
	} else {
		if r.Partition, err = CheckKey(spec.PartitionKey, m.Partition, true); err != nil {
			return err
		}
		start := len(*keys)
		*keys = EncodeTuple(*keys, r.Partition, false)
		r.PartitionKey = (*keys)[start:len(*keys):len(*keys)]
		if len(r.PartitionKey) > MaxKeyBytes {
			return fmt.Errorf("%w: partition key is %d bytes encoded, at most %d", ErrTooLarge, len(r.PartitionKey), MaxKeyBytes)
		}
		if *parts != nil && len(m.Partition) > 0 {
			(*parts)[&m.Partition[0]] = r
		}
	}
	if r.Clustering, err = CheckKey(spec.Clustering, m.Clustering, false); err != nil {
		return err
	}
	start := len(*keys)
	*keys = EncodeTuple(*keys, r.Clustering, spec.ClusteringOrder == Desc)
	r.ClusteringKey = (*keys)[start:len(*keys):len(*keys)]
	if len(r.ClusteringKey) > MaxKeyBytes {
		return fmt.Errorf("%w: clustering key is %d bytes encoded, at most %d", ErrTooLarge, len(r.ClusteringKey), MaxKeyBytes)
	}
	r.Size = len(r.PartitionKey) + len(r.ClusteringKey)
	switch m.Kind {
	case DeleteRow, DeleteIfExpired:
		if len(m.Cells) > 0 {
			return fmt.Errorf("%w: %s takes no cells", ErrInvalid, kindName(m.Kind))
		}
		return nil
	case DeleteCells:
		if len(m.Cells) == 0 {
			return fmt.Errorf("%w: delete of no columns", ErrInvalid)
		}
		for _, c := range m.Cells {
			col := spec.ValueIndex(c.Column)
			if col < 0 {
				return fmt.Errorf("%w: unknown column %q", ErrInvalid, c.Column)
			}
			r.Cells = append(r.Cells, ResolvedCell{Col: col})
		}
		return nil
	case Upsert:
	default:
		return fmt.Errorf("%w: unknown mutation kind %d", ErrInvalid, m.Kind)
	}
	switch {
	case m.NoExpiry && !m.ExpiresAt.IsZero():
		return fmt.Errorf("%w: both NoExpiry and ExpiresAt set", ErrInvalid)
	case m.NoExpiry:
	case !m.ExpiresAt.IsZero():
		if r.ExpiresAt = m.ExpiresAt.UnixMilli(); r.ExpiresAt <= 0 {
			return fmt.Errorf("%w: expiry %s is not after 1970", ErrInvalid, m.ExpiresAt.UTC().Format(time.RFC3339))
		}
	case spec.DefaultTTL > 0:
		r.ExpiresAt = now.Add(spec.DefaultTTL).UnixMilli()
	}
	seen := uint64(0)
	for _, c := range m.Cells {
		col := spec.ValueIndex(c.Column)
		if col < 0 {
			return fmt.Errorf("%w: unknown column %q", ErrInvalid, c.Column)
		}
		if seen&(1<<col) != 0 {
			return fmt.Errorf("%w: column %q set twice", ErrInvalid, c.Column)
		}
		seen |= 1 << col
		v, err := CheckValue(spec.Values[col].Type, c.Value)
		if err != nil {
			return fmt.Errorf("column %q: %w", c.Column, err)
		}
		exp := r.ExpiresAt
		if !c.ExpiresAt.IsZero() {
			if exp = c.ExpiresAt.UnixMilli(); exp <= 0 {
				return fmt.Errorf("%w: column %q: expiry is not after 1970", ErrInvalid, c.Column)
			}
		}
		r.Cells = append(r.Cells, ResolvedCell{Col: col, Value: v, ExpiresAt: exp})
		r.Size += ValueSize(v) + len(c.Column) + 9
	}
	if maxRowBytes > 0 && r.Size > maxRowBytes {
		return fmt.Errorf("%w: row is %d bytes, at most %d", ErrTooLarge, r.Size, maxRowBytes)
	}
	return nil
}

func resolveCondition(spec *TableSpec, m *Mutation, batchLen int) (*ResolvedCondition, error) {
	if batchLen != 1 {
		return nil, fmt.Errorf("%w: a conditional mutation must be alone in its batch", ErrInvalid)
	}
	if m.Kind == DeleteIfExpired {
		return nil, fmt.Errorf("%w: DeleteIfExpired takes no condition", ErrInvalid)
	}
	c := &ResolvedCondition{Kind: m.If.Kind, Col: -1}
	switch m.If.Kind {
	case IfAbsent, IfExists:
		if m.If.Column != "" || m.If.Value != nil {
			return nil, fmt.Errorf("%w: condition takes no column or value", ErrInvalid)
		}
	case IfEquals:
		if c.Col = spec.ValueIndex(m.If.Column); c.Col < 0 {
			return nil, fmt.Errorf("%w: condition on unknown column %q", ErrInvalid, m.If.Column)
		}
		v, err := CheckValue(spec.Values[c.Col].Type, m.If.Value)
		if err != nil {
			return nil, fmt.Errorf("condition on %q: %w", m.If.Column, err)
		}
		c.Value = v
	default:
		return nil, fmt.Errorf("%w: unknown condition kind %d", ErrInvalid, m.If.Kind)
	}
	return c, nil
}

func kindName(k MutationKind) string {
	switch k {
	case DeleteRow:
		return "DeleteRow"
	case DeleteIfExpired:
		return "DeleteIfExpired"
	}
	return fmt.Sprintf("kind %d", k)
}

// ValueSize is the size of a canonical value in bytes.
func ValueSize(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []byte:
		return len(x)
	case nil:
		return 0
	}
	return 8
}

// ResolvePartition validates a partition tuple and returns it canonical and
// encoded.
func ResolvePartition(spec *TableSpec, partition []any) ([]any, []byte, error) {
	p, err := CheckKey(spec.PartitionKey, partition, true)
	if err != nil {
		return nil, nil, err
	}
	enc := EncodeTuple(make([]byte, 0, encodedSizeHint(p)), p, false)
	if len(enc) > MaxKeyBytes {
		return nil, nil, fmt.Errorf("%w: partition key is %d bytes encoded, at most %d", ErrTooLarge, len(enc), MaxKeyBytes)
	}
	return p, enc, nil
}

// ResolveIndexLookup validates the arguments of Store.QueryIndex against
// spec, so that every backend refuses a bad lookup alike: the index must
// exist, value must be valid for the column it indexes, and partition must
// be a valid partition tuple, checked in that order. It returns the indexed
// column's position in spec.Values, the value in canonical form (compare
// stored cells against it) and the encoded partition key. Errors wrap
// ErrInvalid, or ErrTooLarge for a partition key over MaxKeyBytes.
func ResolveIndexLookup(spec *TableSpec, index string, partition []any, value any) (col int, v any, pk []byte, err error) {
	ix, ok := spec.Index(index)
	if !ok {
		return 0, nil, nil, fmt.Errorf("%w: table %q has no index %q", ErrInvalid, spec.Name, index)
	}
	col = spec.ValueIndex(ix.Column)
	if v, err = CheckValue(spec.Values[col].Type, value); err != nil {
		return 0, nil, nil, err
	}
	if _, pk, err = ResolvePartition(spec, partition); err != nil {
		return 0, nil, nil, err
	}
	return col, v, pk, nil
}

// EncodeTuple appends the order-preserving encoding of canonical values.
func EncodeTuple(dst []byte, vals []any, desc bool) []byte {
	for _, v := range vals {
		var err error
		if dst, err = keyenc.Append(dst, v, desc); err != nil {
			panic(err) // unreachable: values are checked before encoding
		}
	}
	return dst
}

// EncodeClustering encodes a canonical clustering tuple (or prefix) so that
// bytewise order is the table's clustering order.
func EncodeClustering(spec *TableSpec, vals []any) []byte {
	return EncodeTuple(make([]byte, 0, encodedSizeHint(vals)), vals, spec.ClusteringOrder == Desc)
}

// keySizeHint guesses the encoded size of a mutation's keys.
func keySizeHint(m *Mutation) int {
	return encodedSizeHint(m.Partition) + encodedSizeHint(m.Clustering)
}

// encodedSizeHint is a capacity that usually fits a tuple's encoding.
func encodedSizeHint(vals []any) int {
	n := 0
	for _, v := range vals {
		n += ValueSize(v) + 2
	}
	return n + n/16
}

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

// KeyRange is a half-open range [Start, End) of encoded clustering keys; a
// nil End means unbounded. Empty means the range holds no key at all (for
// example, everything after the largest possible value); backends return an
// empty page for it.
type KeyRange struct {
	Start, End []byte
	Empty      bool
}

// ClusteringRange converts a query's bounds to a range of encoded
// clustering keys in the table's clustering order, applying the page token
// (the encoded clustering key of the last row returned). Errors wrap
// ErrInvalid.
func ClusteringRange(spec *TableSpec, q *Query) (KeyRange, error) {
	desc := spec.ClusteringOrder == Desc
	enc := func(b Bound) ([]byte, error) {
		if len(b.Values) > len(spec.Clustering) {
			return nil, fmt.Errorf("%w: bound has %d values, table has %d clustering columns", ErrInvalid, len(b.Values), len(spec.Clustering))
		}
		vals, err := CheckKey(spec.Clustering[:len(b.Values)], b.Values, false)
		if err != nil {
			return nil, err
		}
		return EncodeTuple(nil, vals, desc), nil
	}
	lo, err := enc(q.Low)
	if err != nil {
		return KeyRange{}, err
	}
	hi, err := enc(q.High)
	if err != nil {
		return KeyRange{}, err
	}
	// In clustering order the first bound is Low for ascending tables and
	// High for descending ones.
	first, last := q.Low, q.High
	firstEnc, lastEnc := lo, hi
	if desc {
		first, last, firstEnc, lastEnc = q.High, q.Low, hi, lo
	}
	var r KeyRange
	if first.Values != nil {
		r.Start = firstEnc
		if !first.Inclusive {
			// No key follows a prefix of all 0xFF bytes.
			if r.Start = keyenc.PrefixEnd(firstEnc); r.Start == nil {
				r.Empty = true
			}
		}
	}
	if last.Values != nil {
		r.End = lastEnc
		if last.Inclusive {
			r.End = keyenc.PrefixEnd(lastEnc)
		}
	}
	if len(q.PageToken) > 0 {
		if _, err := DecodeClustering(spec, q.PageToken); err != nil {
			return KeyRange{}, fmt.Errorf("%w: malformed page token", ErrInvalid)
		}
		// Resume strictly after (or, reversed, strictly before) the last row.
		if q.Reverse {
			if r.End == nil || string(q.PageToken) < string(r.End) {
				r.End = q.PageToken
			}
		} else {
			after := append(append([]byte(nil), q.PageToken...), 0)
			if string(after) > string(r.Start) {
				r.Start = after
			}
		}
	}
	if r.End != nil && string(r.Start) >= string(r.End) {
		r.Empty = true
	}
	return r, nil
}

// CheckLimit validates a query limit.
func CheckLimit(limit int) error {
	if limit < 1 || limit > MaxLimit {
		return fmt.Errorf("%w: limit %d outside 1..%d", ErrInvalid, limit, MaxLimit)
	}
	return nil
}

// ValuesEqual reports whether two canonical column values are equal, as a
// condition compares them: same type and same value (timestamps to the
// millisecond).
func ValuesEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.UnixMilli() == y.UnixMilli()
	}
	return false
}
