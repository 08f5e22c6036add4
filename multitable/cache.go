package multitable

import (
	"sync"
	"time"
)

// bucketCacheSize bounds the bucket rows a Registry remembers writing.
const bucketCacheSize = 1 << 16

// bucketCache remembers the bucket rows this process has written, so that
// a stream of puts into one bucket writes its bucket row once rather than
// once per put (on a remote backend the directory is one partition per
// table, which would otherwise run hot). Entries are keyed by table
// generation, so a table deleted and re-created is never mistaken for the
// old one. Rows that expire are never removed early; rows without expiry
// may be retired by a listing, which is why writers check those anyway.
type bucketCache struct {
	mu   sync.Mutex
	max  int
	rows map[bucketCacheKey]struct{}
}

type bucketCacheKey struct {
	table string
	gen   int64
	row   bucketRow
}

func newBucketCache(max int) *bucketCache {
	return &bucketCache{max: max, rows: make(map[bucketCacheKey]struct{})}
}

func (c *bucketCache) has(t tableRef, r bucketRow) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.rows[bucketCacheKey{t.name, t.gen, r}]
	return ok
}

func (c *bucketCache) add(t tableRef, r bucketRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.rows) >= c.max {
		// Forgetting only costs a rewrite of an existing row; a full reset
		// keeps this simple and bounded.
		clear(c.rows)
	}
	c.rows[bucketCacheKey{t.name, t.gen, r}] = struct{}{}
}

func (c *bucketCache) forget(t tableRef, r bucketRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rows, bucketCacheKey{t.name, t.gen, r})
}

// recordCacheSize bounds the table records a Registry keeps.
const recordCacheSize = 1 << 14

// recordCache keeps live table records for a short time, so that item
// operations do not all read the registry's one metadata partition (on a
// remote backend that partition would cap the throughput of every shared
// table together). Only live records are kept: a table created by another
// process is seen at once, and a table deleted (or deleted and re-created)
// by another process is seen within the cache's TTL. This process's own
// creates and deletes update the cache immediately.
type recordCache struct {
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	recs map[string]cachedRecord
	// epoch counts this process's table writes; a record read across one
	// is not cached, since it may predate the write.
	epoch uint64
}

type cachedRecord struct {
	rec  record
	read time.Time
}

func newRecordCache(ttl time.Duration, now func() time.Time) *recordCache {
	return &recordCache{ttl: ttl, now: now, recs: make(map[string]cachedRecord)}
}

func (c *recordCache) get(name string) (record, bool) {
	if c.ttl <= 0 {
		return record{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cr, ok := c.recs[name]
	if !ok {
		return record{}, false
	}
	// A clock that moved backwards also forces a read.
	if age := c.now().Sub(cr.read); age < 0 || age >= c.ttl {
		delete(c.recs, name)
		return record{}, false
	}
	return cr.rec, true
}

// begin returns the epoch to pass to put for a read starting now.
func (c *recordCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// put remembers a live record read at the given time, unless this process
// wrote a table record since the read began (epoch), or forgets name when
// the record is not live.
func (c *recordCache) put(name string, r record, read time.Time, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return
	}
	if !r.live() || c.ttl <= 0 {
		delete(c.recs, name)
		return
	}
	if len(c.recs) >= recordCacheSize {
		clear(c.recs)
	}
	c.recs[name] = cachedRecord{rec: r, read: read}
}

// forget drops name and starts a new epoch; table writes call it before
// and after writing.
func (c *recordCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	delete(c.recs, name)
}
