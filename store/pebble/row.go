package pebble

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// A row is stored under one key as a fragment: an optional row marker with
// its expiry, and cells, each with its own expiry. An Upsert of every value
// column is written with Set; anything partial (an upsert of some columns, a
// delete of some columns) is written as a Merge operand, and the merger below
// overlays fragments newest-wins per cell. Pebble resolves merges on read and
// in compactions, so partial writes need no read-modify-write and concurrent
// writers never lose each other's cells.
//
// Fragment encoding:
//
//	flags        1 byte: bit 0 = row marker present
//	marker exp   uvarint Unix ms (0 = none), when bit 0 is set
//	ncells       uvarint
//	cells        col uvarint | kind 1 byte | exp uvarint | payload
//
// kind: 0 tombstone (no payload), 1 bytes (uvarint length + bytes),
// 2 fixed (8 bytes big-endian; int64 and timestamps).

const (
	flagMarker = 1

	kindTomb  = 0
	kindBytes = 1
	kindFixed = 2
)

var errCorruptRow = errors.New("pebble: malformed row value")

// rawCell is a cell as stored; payload aliases the encoded fragment.
type rawCell struct {
	col     uint64
	kind    byte
	exp     uint64
	payload []byte
}

type fragment struct {
	hasMarker bool
	markerExp uint64
	cells     []rawCell
}

func appendCell(dst []byte, c kit.ResolvedCell, tomb bool) []byte {
	dst = binary.AppendUvarint(dst, uint64(c.Col))
	if tomb {
		return append(dst, kindTomb, 0)
	}
	switch v := c.Value.(type) {
	case string:
		dst = append(dst, kindBytes)
		dst = binary.AppendUvarint(dst, uint64(c.ExpiresAt))
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		return append(dst, v...)
	case []byte:
		dst = append(dst, kindBytes)
		dst = binary.AppendUvarint(dst, uint64(c.ExpiresAt))
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		return append(dst, v...)
	case int64:
		dst = append(dst, kindFixed)
		dst = binary.AppendUvarint(dst, uint64(c.ExpiresAt))
		return binary.BigEndian.AppendUint64(dst, uint64(v))
	case time.Time:
		dst = append(dst, kindFixed)
		dst = binary.AppendUvarint(dst, uint64(c.ExpiresAt))
		return binary.BigEndian.AppendUint64(dst, uint64(v.UnixMilli()))
	}
	panic("pebble: unreachable value type") // values are checked by kit.ResolveBatch
}

// encodeUpsert encodes an Upsert as a fragment with a row marker.
func encodeUpsert(dst []byte, m *kit.ResolvedMutation) []byte {
	dst = append(dst, flagMarker)
	dst = binary.AppendUvarint(dst, uint64(m.ExpiresAt))
	dst = binary.AppendUvarint(dst, uint64(len(m.Cells)))
	for _, c := range m.Cells {
		dst = appendCell(dst, c, false)
	}
	return dst
}

// encodeDeleteCells encodes tombstones for some columns, without a marker.
func encodeDeleteCells(dst []byte, m *kit.ResolvedMutation) []byte {
	dst = append(dst, 0)
	dst = binary.AppendUvarint(dst, uint64(len(m.Cells)))
	for _, c := range m.Cells {
		dst = appendCell(dst, c, true)
	}
	return dst
}

func decodeFragment(b []byte, f *fragment) error {
	if len(b) < 1 {
		return errCorruptRow
	}
	f.hasMarker = b[0]&flagMarker != 0
	b = b[1:]
	var n int
	if f.hasMarker {
		if f.markerExp, n = binary.Uvarint(b); n <= 0 {
			return errCorruptRow
		}
		b = b[n:]
	}
	count, n := binary.Uvarint(b)
	if n <= 0 || count > store.MaxColumns {
		return errCorruptRow
	}
	b = b[n:]
	f.cells = f.cells[:0]
	for range count {
		var c rawCell
		if c.col, n = binary.Uvarint(b); n <= 0 || len(b) < n+2 {
			return errCorruptRow
		}
		c.kind = b[n]
		b = b[n+1:]
		if c.exp, n = binary.Uvarint(b); n <= 0 {
			return errCorruptRow
		}
		b = b[n:]
		switch c.kind {
		case kindTomb:
		case kindBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return errCorruptRow
			}
			c.payload, b = b[n:n+int(l)], b[n+int(l):]
		case kindFixed:
			if len(b) < 8 {
				return errCorruptRow
			}
			c.payload, b = b[:8], b[8:]
		default:
			return errCorruptRow
		}
		f.cells = append(f.cells, c)
	}
	return nil
}

func encodeFragment(f *fragment) []byte {
	var dst []byte
	if f.hasMarker {
		dst = append(dst, flagMarker)
		dst = binary.AppendUvarint(dst, f.markerExp)
	} else {
		dst = append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(f.cells)))
	for _, c := range f.cells {
		dst = binary.AppendUvarint(dst, c.col)
		dst = append(dst, c.kind)
		dst = binary.AppendUvarint(dst, c.exp)
		if c.kind == kindBytes {
			dst = binary.AppendUvarint(dst, uint64(len(c.payload)))
		}
		dst = append(dst, c.payload...)
	}
	return dst
}

// rowMerger is Pebble's merge operator for row fragments.
var rowMerger = &pebble.Merger{
	Name: "ebb.row.v1",
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		m := &fragmentMerger{}
		return m, m.MergeOlder(value)
	},
}

// fragmentMerger accumulates fragments; acc holds the newest state seen.
type fragmentMerger struct {
	acc fragment
}

// overlay applies an older fragment under acc: the older fragment's cells
// and marker fill only what acc does not already have.
func (m *fragmentMerger) MergeOlder(value []byte) error {
	var f fragment
	if err := decodeFragment(value, &f); err != nil {
		return err
	}
	if !m.acc.hasMarker && f.hasMarker {
		m.acc.hasMarker, m.acc.markerExp = true, f.markerExp
	}
	for _, c := range f.cells {
		if !slices.ContainsFunc(m.acc.cells, func(a rawCell) bool { return a.col == c.col }) {
			c.payload = slices.Clone(c.payload)
			m.acc.cells = append(m.acc.cells, c)
		}
	}
	return nil
}

func (m *fragmentMerger) MergeNewer(value []byte) error {
	var f fragment
	if err := decodeFragment(value, &f); err != nil {
		return err
	}
	if f.hasMarker {
		m.acc.hasMarker, m.acc.markerExp = true, f.markerExp
	}
	for _, c := range f.cells {
		c.payload = slices.Clone(c.payload)
		if i := slices.IndexFunc(m.acc.cells, func(a rawCell) bool { return a.col == c.col }); i >= 0 {
			m.acc.cells[i] = c
		} else {
			m.acc.cells = append(m.acc.cells, c)
		}
	}
	return nil
}

// Finish drops tombstones once the merge reaches the base of the key: there
// is nothing older left for them to hide.
func (m *fragmentMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	v, _, closer, err := m.DeletableFinish(includesBase)
	return v, closer, err
}

// DeletableFinish also deletes the key when, with the base included, nothing
// is left (tombstones for cells of a row that does not exist): such a key
// must neither count as a row nor linger on disk.
func (m *fragmentMerger) DeletableFinish(includesBase bool) ([]byte, bool, io.Closer, error) {
	if includesBase {
		m.acc.cells = slices.DeleteFunc(m.acc.cells, func(c rawCell) bool { return c.kind == kindTomb })
		if !m.acc.hasMarker && len(m.acc.cells) == 0 {
			return nil, true, nil, nil
		}
	}
	slices.SortFunc(m.acc.cells, func(a, b rawCell) int { return int(a.col) - int(b.col) })
	return encodeFragment(&m.acc), false, nil, nil
}

// liveAt reports whether an expiry (Unix ms, 0 = none) is still live at now.
func liveAt(exp uint64, now int64) bool { return exp == 0 || int64(exp) > now }

// decodeRow turns a decoded fragment into the row's Values and marker expiry
// at time now; ok is false when nothing of the row is live.
func decodeRow(spec *store.TableSpec, f *fragment, now int64, a *kit.Arena) (vals []any, markerExp uint64, ok bool, err error) {
	ok = f.hasMarker && liveAt(f.markerExp, now)
	if !ok && !anyLiveCell(f, now) {
		return nil, 0, false, nil
	}
	ok = true
	vals = a.Take(len(spec.Values))
	for _, c := range f.cells {
		if c.kind == kindTomb || !liveAt(c.exp, now) || c.col >= uint64(len(vals)) {
			continue
		}
		if spec.Values[c.col].Type == store.TypeBytes {
			vals[c.col] = a.CopyBytes(c.payload)
		} else {
			vals[c.col] = decodeValue(spec.Values[c.col].Type, c.payload)
		}
	}
	if f.hasMarker {
		markerExp = f.markerExp
	}
	return vals, markerExp, ok, nil
}

func anyLiveCell(f *fragment, now int64) bool {
	for _, c := range f.cells {
		if c.kind != kindTomb && liveAt(c.exp, now) {
			return true
		}
	}
	return false
}

func decodeValue(t store.Type, p []byte) any {
	switch t {
	case store.TypeText:
		return string(p)
	case store.TypeBytes:
		return slices.Clone(p)
	case store.TypeInt64:
		return int64(binary.BigEndian.Uint64(p))
	case store.TypeTimestamp:
		return time.UnixMilli(int64(binary.BigEndian.Uint64(p))).UTC()
	}
	return nil
}

// cellEquals reports whether the live cell col of a stored row equals v.
func cellEquals(f *fragment, col int, v any, now int64) bool {
	for _, c := range f.cells {
		if c.col != uint64(col) || c.kind == kindTomb || !liveAt(c.exp, now) {
			continue
		}
		switch x := v.(type) {
		case string:
			return string(c.payload) == x
		case []byte:
			return string(c.payload) == string(x)
		case int64:
			return len(c.payload) == 8 && int64(binary.BigEndian.Uint64(c.payload)) == x
		case time.Time:
			return len(c.payload) == 8 && int64(binary.BigEndian.Uint64(c.payload)) == x.UnixMilli()
		}
	}
	return false
}
