package kit

import (
	"bytes"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/keyenc"
)

// ResolvedCell is a validated cell: Col indexes store.TableSpec.Values; Value is
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
	Kind          store.MutationKind
	Partition     []any
	Clustering    []any
	PartitionKey  []byte // EncodePartition
	ClusteringKey []byte // EncodeClustering
	Cells         []ResolvedCell
	ExpiresAt     int64
	// Expiry is the mutation's store.Mutation.Expiry.
	Expiry store.ExpiryMode
	// Cond is the mutation's condition, nil when it has none.
	Cond *ResolvedCondition
	// Size is the approximate stored size of the cells and keys, for limits.
	Size int
}

// ResolvedCondition is a validated store.Condition: Col indexes store.TableSpec.Values
// (store.IfEquals only) and Value is canonical.
type ResolvedCondition struct {
	Kind  store.ConditionKind
	Col   int
	Value any
}

// ResolveBatch validates a batch against spec at time now and returns it
// resolved. maxRowBytes (0 = no limit) bounds each store.Upsert's size. Any error
// is a *store.MutationError wrapping store.ErrInvalid or store.ErrTooLarge.
// A conditional mutation must be alone in its batch.
func ResolveBatch(spec *store.TableSpec, batch []store.Mutation, now time.Time, maxRowBytes int) ([]ResolvedMutation, error) {
	return resolveBatch(spec, batch, now, maxRowBytes, false)
}

// ResolveGuardedBatch is ResolveBatch for a backend with
// store.Capabilities.GuardedBatch: a batch may hold one conditional
// mutation among unconditional ones.
func ResolveGuardedBatch(spec *store.TableSpec, batch []store.Mutation, now time.Time, maxRowBytes int) ([]ResolvedMutation, error) {
	return resolveBatch(spec, batch, now, maxRowBytes, true)
}

func resolveBatch(spec *store.TableSpec, batch []store.Mutation, now time.Time, maxRowBytes int, guarded bool) ([]ResolvedMutation, error) {
	out := make([]ResolvedMutation, len(batch))
	// One slab for every mutation's cells saves an allocation per row.
	ncells := 0
	for i := range batch {
		ncells += len(batch[i].Cells)
	}
	slab := make([]ResolvedCell, 0, ncells)
	// And one for the encoded keys, sized by a guess that is usually right
	// (a wrong guess only costs another allocation).
	var parts partitions
	var keys []byte
	if len(batch) > 0 {
		keys = make([]byte, 0, len(batch)*keySizeHint(&batch[0]))
	}
	conds := 0
	for i := range batch {
		n := len(batch[i].Cells)
		out[i].Cells = slab[len(slab) : len(slab) : len(slab)+n]
		slab = slab[:len(slab)+n]
		if err := resolve(spec, &batch[i], now, maxRowBytes, &out[i], &keys, &parts); err != nil {
			return nil, &store.MutationError{Index: i, Err: err}
		}
		if batch[i].If != nil {
			conds++
			c, err := resolveCondition(spec, &batch[i], len(batch), conds, guarded)
			if err != nil {
				return nil, &store.MutationError{Index: i, Err: err}
			}
			out[i].Cond = c
		}
	}
	return out, nil
}

// partitions shares the check and encoding of a partition between the
// mutations of one batch that name it: most batches are one partition's
// rows (a list's items, a shard's events), often each row with a slice of
// its own, and the rest interleave a few partitions, each with one slice
// shared by its rows.
//
// A mutation reuses the resolved partition of an earlier mutation that
// passed the same slice, or of the previous mutation when it passed equal
// values (CheckKey's result depends on the values alone). The map of
// slices is made only once a second partition is resolved, so a batch of
// one partition pays a comparison or two per row and no map at all.
type partitions struct {
	prevRaw  []any             // the previous mutation's partition, as passed
	prev     *ResolvedMutation // and what it resolved to
	firstRaw []any             // the first partition resolved, as passed
	first    *ResolvedMutation
	bySlice  map[*any]*ResolvedMutation
}

// lookup returns an earlier mutation whose resolved partition p shares, or
// nil. p is not empty.
func (ps *partitions) lookup(p []any) *ResolvedMutation {
	if ps.prev == nil {
		return nil
	}
	if &p[0] == &ps.prevRaw[0] && len(p) == len(ps.prevRaw) {
		return ps.prev
	}
	if r := ps.bySlice[&p[0]]; r != nil {
		return r
	}
	if len(p) == len(ps.prevRaw) && sameKey(p, ps.prevRaw) {
		return ps.prev
	}
	return nil
}

// add records r, which resolved p (not empty) itself.
func (ps *partitions) add(p []any, r *ResolvedMutation) {
	switch {
	case ps.first == nil:
		ps.firstRaw, ps.first = p, r
	case ps.bySlice == nil:
		ps.bySlice = map[*any]*ResolvedMutation{&ps.firstRaw[0]: ps.first}
		fallthrough
	default:
		ps.bySlice[&p[0]] = r
	}
}

// sameKey reports whether two partition tuples as passed hold equal values
// of the same types, so that CheckKey would resolve them alike. It is
// exact for the key types and says false for anything else.
func sameKey(a, b []any) bool {
	for i := range a {
		switch x := a[i].(type) {
		case string:
			if y, ok := b[i].(string); !ok || x != y {
				return false
			}
		case int64:
			if y, ok := b[i].(int64); !ok || x != y {
				return false
			}
		case time.Time:
			if y, ok := b[i].(time.Time); !ok || x != y {
				return false
			}
		case []byte:
			if y, ok := b[i].([]byte); !ok || (x == nil) != (y == nil) || !bytes.Equal(x, y) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func resolve(spec *store.TableSpec, m *store.Mutation, now time.Time, maxRowBytes int, r *ResolvedMutation, keys *[]byte, parts *partitions) error {
	var err error
	r.Kind = m.Kind
	if m.Expiry > store.ExpiryDrop {
		return store.Errorf(store.ErrInvalid, "unknown expiry mode %d", m.Expiry)
	}
	r.Expiry = m.Expiry
	var shared *ResolvedMutation
	keyed := len(m.Partition) == len(spec.PartitionKey) && len(m.Partition) > 0
	if keyed {
		shared = parts.lookup(m.Partition)
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
		if len(r.PartitionKey) > store.MaxKeyBytes {
			return store.Errorf(store.ErrTooLarge, "partition key is %d bytes encoded, at most %d", len(r.PartitionKey), store.MaxKeyBytes)
		}
		if keyed {
			parts.add(m.Partition, r)
			shared = r
		}
	}
	if keyed {
		parts.prevRaw, parts.prev = m.Partition, shared
	}
	if r.Clustering, err = CheckKey(spec.Clustering, m.Clustering, false); err != nil {
		return err
	}
	start := len(*keys)
	*keys = EncodeTuple(*keys, r.Clustering, spec.ClusteringOrder == store.Desc)
	r.ClusteringKey = (*keys)[start:len(*keys):len(*keys)]
	if len(r.ClusteringKey) > store.MaxKeyBytes {
		return store.Errorf(store.ErrTooLarge, "clustering key is %d bytes encoded, at most %d", len(r.ClusteringKey), store.MaxKeyBytes)
	}
	r.Size = len(r.PartitionKey) + len(r.ClusteringKey)
	switch m.Kind {
	case store.DeleteRow, store.DeleteIfExpired:
		if len(m.Cells) > 0 {
			return store.Errorf(store.ErrInvalid, "%s takes no cells", kindName(m.Kind))
		}
		return nil
	case store.DeleteCells:
		if len(m.Cells) == 0 {
			return store.Errorf(store.ErrInvalid, "delete of no columns")
		}
		for _, c := range m.Cells {
			col := spec.ValueIndex(c.Column)
			if col < 0 {
				return store.Errorf(store.ErrInvalid, "unknown column %q", c.Column)
			}
			r.Cells = append(r.Cells, ResolvedCell{Col: col})
		}
		return nil
	case store.Upsert:
	default:
		return store.Errorf(store.ErrInvalid, "unknown mutation kind %d", m.Kind)
	}
	switch {
	case m.NoExpiry && !m.ExpiresAt.IsZero():
		return store.Errorf(store.ErrInvalid, "both NoExpiry and ExpiresAt set")
	case spec.NeverExpires && !m.ExpiresAt.IsZero():
		return store.Errorf(store.ErrInvalid, "table %q: rows never expire, yet an expiry is set", spec.Name)
	case m.NoExpiry:
	case !m.ExpiresAt.IsZero():
		if r.ExpiresAt = m.ExpiresAt.UnixMilli(); r.ExpiresAt <= 0 {
			return store.Errorf(store.ErrInvalid, "expiry %s is not after 1970", m.ExpiresAt.UTC().Format(time.RFC3339))
		}
	case spec.DefaultTTL > 0:
		r.ExpiresAt = now.Add(spec.DefaultTTL).UnixMilli()
	}
	seen := uint64(0)
	for _, c := range m.Cells {
		col := spec.ValueIndex(c.Column)
		if col < 0 {
			return store.Errorf(store.ErrInvalid, "unknown column %q", c.Column)
		}
		if seen&(1<<col) != 0 {
			return store.Errorf(store.ErrInvalid, "column %q set twice", c.Column)
		}
		seen |= 1 << col
		v, err := CheckValue(spec.Values[col].Type, c.Value)
		if err != nil {
			return fmt.Errorf("column %q: %w", c.Column, err)
		}
		exp := r.ExpiresAt
		if !c.ExpiresAt.IsZero() {
			if spec.NeverExpires {
				return store.Errorf(store.ErrInvalid, "table %q: rows never expire, yet column %q has an expiry", spec.Name, c.Column)
			}
			if exp = c.ExpiresAt.UnixMilli(); exp <= 0 {
				return store.Errorf(store.ErrInvalid, "column %q: expiry is not after 1970", c.Column)
			}
		}
		r.Cells = append(r.Cells, ResolvedCell{Col: col, Value: v, ExpiresAt: exp})
		r.Size += ValueSize(v) + len(c.Column) + 9
	}
	if maxRowBytes > 0 && r.Size > maxRowBytes {
		return store.Errorf(store.ErrTooLarge, "row is %d bytes, at most %d", r.Size, maxRowBytes)
	}
	return nil
}

// resolveCondition resolves the condition of m, the conds-th conditional
// mutation of a batch of batchLen.
func resolveCondition(spec *store.TableSpec, m *store.Mutation, batchLen, conds int, guarded bool) (*ResolvedCondition, error) {
	switch {
	case guarded && conds > 1:
		return nil, store.Errorf(store.ErrInvalid, "a batch holds at most one conditional mutation")
	case !guarded && batchLen != 1:
		return nil, store.Errorf(store.ErrInvalid, "a conditional mutation must be alone in its batch")
	}
	if m.Kind == store.DeleteIfExpired {
		return nil, store.Errorf(store.ErrInvalid, "store.DeleteIfExpired takes no condition")
	}
	c := &ResolvedCondition{Kind: m.If.Kind, Col: -1}
	switch m.If.Kind {
	case store.IfAbsent, store.IfExists:
		if m.If.Column != "" || m.If.Value != nil {
			return nil, store.Errorf(store.ErrInvalid, "condition takes no column or value")
		}
	case store.IfEquals:
		if c.Col = spec.ValueIndex(m.If.Column); c.Col < 0 {
			return nil, store.Errorf(store.ErrInvalid, "condition on unknown column %q", m.If.Column)
		}
		v, err := CheckValue(spec.Values[c.Col].Type, m.If.Value)
		if err != nil {
			return nil, fmt.Errorf("condition on %q: %w", m.If.Column, err)
		}
		c.Value = v
	default:
		return nil, store.Errorf(store.ErrInvalid, "unknown condition kind %d", m.If.Kind)
	}
	return c, nil
}

func kindName(k store.MutationKind) string {
	switch k {
	case store.DeleteRow:
		return "DeleteRow"
	case store.DeleteIfExpired:
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

// ResolveRowKey validates a row's key, as Get takes it: the partition
// tuple, returned canonical and encoded, and the clustering tuple,
// returned canonical.
func ResolveRowKey(spec *store.TableSpec, partition, clustering []any) (p []any, pk []byte, c []any, err error) {
	if p, pk, err = ResolvePartition(spec, partition); err != nil {
		return nil, nil, nil, err
	}
	if c, err = CheckKey(spec.Clustering, clustering, false); err != nil {
		return nil, nil, nil, err
	}
	return p, pk, c, nil
}

// ResolvePartition validates a partition tuple and returns it canonical and
// encoded.
func ResolvePartition(spec *store.TableSpec, partition []any) ([]any, []byte, error) {
	p, err := CheckKey(spec.PartitionKey, partition, true)
	if err != nil {
		return nil, nil, err
	}
	enc := EncodeTuple(make([]byte, 0, encodedSizeHint(p)), p, false)
	if len(enc) > store.MaxKeyBytes {
		return nil, nil, store.Errorf(store.ErrTooLarge, "partition key is %d bytes encoded, at most %d", len(enc), store.MaxKeyBytes)
	}
	return p, enc, nil
}

// ResolveIndexLookup validates the arguments of store.Store.QueryIndex against
// spec, so that every backend refuses a bad lookup alike: the index must
// exist, value must be valid for the column it indexes, and partition must
// be a valid partition tuple, checked in that order. It returns the indexed
// column's position in spec.Values, the value in canonical form (compare
// stored cells against it) and the encoded partition key. Errors wrap
// store.ErrInvalid, or store.ErrTooLarge for a partition key over store.MaxKeyBytes.
func ResolveIndexLookup(spec *store.TableSpec, index string, partition []any, value any) (col int, v any, pk []byte, err error) {
	ix, ok := spec.Index(index)
	if !ok {
		return 0, nil, nil, store.Errorf(store.ErrInvalid, "table %q has no index %q", spec.Name, index)
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
func EncodeClustering(spec *store.TableSpec, vals []any) []byte {
	return EncodeTuple(make([]byte, 0, encodedSizeHint(vals)), vals, spec.ClusteringOrder == store.Desc)
}

// keySizeHint guesses the encoded size of a mutation's keys.
func keySizeHint(m *store.Mutation) int {
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
// store.ErrInvalid.
func ClusteringRange(spec *store.TableSpec, q *store.Query) (KeyRange, error) {
	desc := spec.ClusteringOrder == store.Desc
	enc := func(b store.Bound) ([]byte, error) {
		if len(b.Values) > len(spec.Clustering) {
			return nil, store.Errorf(store.ErrInvalid, "bound has %d values, table has %d clustering columns", len(b.Values), len(spec.Clustering))
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
		if _, err := store.DecodeClustering(spec, q.PageToken); err != nil {
			return KeyRange{}, store.Errorf(store.ErrInvalid, "malformed page token")
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
