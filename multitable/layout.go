package multitable

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"math"
	"time"

	"github.com/ebb-data/ebb/store"
)

// ItemsTable is the physical table every logical table lives in.
const ItemsTable = "ebb_items"

// Row kinds, the third partition-key column. Their values are stored, so
// they never change.
const (
	kindItem   int64 = 1
	kindEntry  int64 = 2
	kindBucket int64 = 3
)

// Column names of ItemsTable.
const (
	colAt    = "at"
	colAttrs = "attrs"
	colSize  = "size"
	// colVer is the version of an item row's last write, which guarded
	// writes compare. It shares the third value column with entries'
	// sizes (item rows have no size of their own), so tables written
	// before items had versions keep their schema.
	colVer = colSize
)

// ItemsSpec is the schema of ItemsTable (see the package comment for what
// each kind of row puts in which column).
var ItemsSpec = store.TableSpec{
	Name: ItemsTable,
	PartitionKey: []store.Column{
		{Name: "tbl", Type: store.TypeText},
		{Name: "gen", Type: store.TypeInt64},
		{Name: "kind", Type: store.TypeInt64},
		{Name: "part", Type: store.TypeInt64},
	},
	Clustering: []store.Column{
		{Name: "ts", Type: store.TypeTimestamp},
		{Name: "key", Type: store.TypeText},
		{Name: "n", Type: store.TypeInt64},
	},
	Values: []store.Column{
		{Name: colAt, Type: store.TypeTimestamp},
		{Name: colAttrs, Type: store.TypeBytes},
		{Name: colSize, Type: store.TypeInt64},
	},
}

// zeroTS fills the timestamp column of item rows, which are found by key.
var zeroTS = time.UnixMilli(0).UTC()

// noExpiry is the granule of bucket rows announcing entries that never
// expire.
const noExpiry = math.MaxInt64

// tableRef identifies one incarnation of a logical table: everything a row
// key needs.
type tableRef struct {
	name     string
	gen      int64
	bucketMs int64
	// expiry is the table's expiry mode, carried by every row it writes
	// with an expiry.
	expiry store.ExpiryMode
}

// keyHash spreads one logical table's items over many partitions, so that
// no partition of a remote backend runs hot. It is not relied on for
// identity: the key itself is a clustering column.
func keyHash(key string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int64(h.Sum64())
}

func (t tableRef) itemPartition(key string) []any {
	return []any{t.name, t.gen, kindItem, keyHash(key)}
}

func itemClustering(key string) []any { return []any{zeroTS, key, int64(0)} }

func (t tableRef) entryPartition(bucket int64) []any {
	return []any{t.name, t.gen, kindEntry, bucket}
}

// entryClustering places an entry at its item's (timestamp, key); ver, the
// version of the write that made it, keeps each write attempt's entry a
// row of its own (0 for entries from before versions).
func entryClustering(ts time.Time, key string, ver int64) []any { return []any{ts, key, ver} }

func (t tableRef) bucketPartition() []any { return []any{t.name, t.gen, kindBucket, int64(0)} }

// bucketOf returns the bucket holding ms: floor(ms / width), so that
// negative times (before 1970) bucket the same way.
func (t tableRef) bucketOf(ms int64) int64 { return floorDiv(ms, t.bucketMs) }

// bucketStart returns the first millisecond of bucket b.
func (t tableRef) bucketStart(b int64) time.Time { return time.UnixMilli(b * t.bucketMs).UTC() }

// granule returns the bucket-row granule of an entry expiring at expMs
// (0 = never): the end of the granule-wide window holding the expiry, so
// that the bucket row expires no earlier than the entry.
func (t tableRef) granule(expMs int64) int64 {
	if expMs == 0 {
		return noExpiry
	}
	return -floorDiv(-expMs, t.bucketMs) * t.bucketMs
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// entry is one listing entry: the item's (timestamp, key), the version of
// the write that made it, its expiry in Unix milliseconds (0 = none) and
// the item's size, for usage reports.
type entry struct {
	ts    time.Time
	key   string
	ver   int64
	expMs int64
	size  int64
	// written is when the put that made it started (its at column), so
	// that listings leave the entries of puts in flight alone.
	written time.Time
}

func (t tableRef) entryUpsert(e entry) store.Mutation {
	return withExpiry(store.Mutation{
		Partition:  t.entryPartition(t.bucketOf(e.ts.UnixMilli())),
		Clustering: entryClustering(e.ts, e.key, e.ver),
		Cells:      []store.Cell{{Column: colSize, Value: e.size}, {Column: colAt, Value: e.written}},
		Expiry:     t.expiry,
	}, e.expMs)
}

func (t tableRef) entryDelete(e entry) store.Mutation {
	return store.Mutation{
		Kind:       store.DeleteRow,
		Partition:  t.entryPartition(t.bucketOf(e.ts.UnixMilli())),
		Clustering: entryClustering(e.ts, e.key, e.ver),
	}
}

// bucketRow is one directory row: the bucket's start and the granule.
type bucketRow struct {
	bucket  int64
	granule int64
}

func (t tableRef) bucketRowOf(e entry) bucketRow {
	return bucketRow{bucket: t.bucketOf(e.ts.UnixMilli()), granule: t.granule(e.expMs)}
}

func (t tableRef) bucketClustering(r bucketRow) []any {
	return []any{t.bucketStart(r.bucket), "", r.granule}
}

func (t tableRef) bucketUpsert(r bucketRow) store.Mutation {
	m := store.Mutation{Partition: t.bucketPartition(), Clustering: t.bucketClustering(r), Expiry: t.expiry}
	if r.granule == noExpiry {
		m.NoExpiry = true
	} else {
		m.ExpiresAt = time.UnixMilli(r.granule).UTC()
	}
	return m
}

func (t tableRef) bucketDelete(r bucketRow) store.Mutation {
	return store.Mutation{Kind: store.DeleteRow, Partition: t.bucketPartition(), Clustering: t.bucketClustering(r)}
}

// withExpiry sets an upsert's expiry: an absolute time, or explicitly none
// so that no table default applies.
func withExpiry(m store.Mutation, expMs int64) store.Mutation {
	if expMs == 0 {
		m.NoExpiry = true
	} else {
		m.ExpiresAt = time.UnixMilli(expMs).UTC()
	}
	return m
}

// expMsOf converts a row's expiry to Unix milliseconds (0 = none).
func expMsOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// position is where a listing page ended: the (timestamp, key) of its last
// item, and the query's After (Unix milliseconds) that the page answered,
// so that a token is never resumed under another lower bound. Page tokens
// encode it.
type position struct {
	ts    time.Time
	key   string
	after *int64
}

// tokenVersion leads every page token, so the format can change without
// misreading old tokens.
const tokenVersion = 2

// encodeToken writes a position as the version, a flag and the After
// milliseconds when set, the timestamp milliseconds, then the key.
func encodeToken(p position) string {
	b := []byte{tokenVersion, 0}
	if p.after != nil {
		b[1] = 1
		b = binary.AppendVarint(b, *p.after)
	}
	b = binary.AppendVarint(b, p.ts.UnixMilli())
	b = append(b, p.key...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (position, error) {
	bad := invalid("malformed page_token")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 2 || b[0] != tokenVersion || b[1] > 1 {
		return position{}, bad
	}
	var p position
	rest := b[2:]
	if b[1] == 1 {
		a, n := binary.Varint(rest)
		if n <= 0 {
			return position{}, bad
		}
		p.after, rest = &a, rest[n:]
	}
	ms, n := binary.Varint(rest)
	if n <= 0 {
		return position{}, bad
	}
	p.ts, p.key = time.UnixMilli(ms).UTC(), string(rest[n:])
	if CheckKey(p.key) != nil || checkTimestamp(p.ts) != nil || (p.after != nil && *p.after >= ms) {
		return position{}, bad
	}
	return p, nil
}

// ItemOf returns the logical table and key of a row of ItemsTable, given
// its key columns, and false for rows that are not items (index entries,
// bucket rows): the log of expirations names removed items by them.
func ItemOf(partition, clustering []any) (table, key string, ok bool) {
	if len(partition) != 4 || len(clustering) != 3 {
		return "", "", false
	}
	if kind, _ := partition[2].(int64); kind != kindItem {
		return "", "", false
	}
	table, ok1 := partition[0].(string)
	key, ok2 := clustering[1].(string)
	return table, key, ok1 && ok2
}
