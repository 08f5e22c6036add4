package kit

import (
	"unsafe"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/keyenc"
)

// Arena hands out the small slices a page of rows is decoded into from a
// few large allocations (Query, and the embedded backend's Get), so reading a row costs no allocation of its own
// beyond boxing its values. Slices it returns are full (len == cap), so an
// append by the caller never overwrites a neighbour.
//
// Chunks are sized for rows rows of the first request's size, so a point
// read allocates no more than it needs and a page of rows a few chunks.
type Arena struct {
	rows  int
	anys  []any
	bytes []byte
}

// NewArena returns an Arena sized for rows rows.
func NewArena(rows int) *Arena { return &Arena{rows: max(rows, 1)} }

// Take returns n zeroed values.
func (a *Arena) Take(n int) []any {
	if cap(a.anys)-len(a.anys) < n {
		a.anys = make([]any, 0, n*a.rows)
	}
	l := len(a.anys)
	a.anys = a.anys[:l+n]
	return a.anys[l : l+n : l+n]
}

// CopyBytes returns a copy of p; empty, never nil, when p is empty.
func (a *Arena) CopyBytes(p []byte) []byte {
	if len(p) == 0 {
		return []byte{} // empty, never nil: nil means absent
	}
	if cap(a.bytes)-len(a.bytes) < len(p) {
		a.bytes = make([]byte, 0, max(len(p), min(8192, len(p)*a.rows)))
	}
	l := len(a.bytes)
	a.bytes = append(a.bytes, p...)
	return a.bytes[l : l+len(p) : l+len(p)]
}

// CopyString returns p as a string backed by arena memory. The arena never
// writes to bytes it has handed out, which is what unsafe.String requires.
func (a *Arena) CopyString(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	b := a.CopyBytes(p)
	return unsafe.String(&b[0], len(b))
}

// decodeClustering decodes an encoded clustering key into arena memory.
func decodeClustering(spec *store.TableSpec, b []byte, a *Arena) ([]any, error) {
	desc := spec.ClusteringOrder == store.Desc
	out := a.Take(len(spec.Clustering))
	var buf [128]byte
	for i, c := range spec.Clustering {
		var err error
		switch c.Type {
		case store.TypeText, store.TypeBytes:
			var bs []byte
			if bs, b, err = keyenc.AppendDecodedBytes(buf[:0], b, desc); err != nil {
				return nil, err
			}
			if c.Type == store.TypeText {
				out[i] = a.CopyString(bs)
			} else {
				out[i] = a.CopyBytes(bs)
			}
		case store.TypeInt64:
			out[i], b, err = keyenc.DecodeInt64(b, desc)
		case store.TypeTimestamp:
			out[i], b, err = keyenc.DecodeTime(b, desc)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(b) > 0 {
		return nil, keyenc.ErrCorrupt
	}
	return out, nil
}
