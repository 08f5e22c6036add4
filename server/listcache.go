package server

import (
	"encoding/binary"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/lists"
)

// Kept list pages. A list read is mostly the store's work (the iterator,
// the rows' decoding) and the encoding of its items, for an answer that
// stays the same until the list is written or an item of it expires. The
// server keeps the encoded answer of a page it read, with the lists.Stamp
// that says what it depends on, and gives it again while lists.Service.Fresh
// holds: only on a store every write of which passes through this process
// (the embedded backend; elsewhere no page is kept), only pages read whole
// (not cut short by the response budget) and at most keptPageMax bytes
// each. Authorization, admission and the query's checks run for every
// request, kept page or not; a kept page is accounted as the read it stands
// for (lists.Service.Fresh). docs/operations.md "Kept list pages".

// DefaultListCacheBytes is the encoded list pages a server keeps at most
// (Options.ListCacheBytes).
const DefaultListCacheBytes = 64 << 20

// keptPageMax is the largest page body kept: larger ones are written as a
// stream on the hot listener (respbudget.go) and are rarer.
const keptPageMax = hotCopyBody

// keptPage is one kept answer; never changed once kept.
type keptPage struct {
	body        []byte
	ctype, clen []string
	stamp       lists.Stamp
}

// pageCache holds the kept pages by their read (pageKey), up to max bytes
// of bodies; past it, pages are dropped in no particular order (Go's map
// order) until the new one fits.
type pageCache struct {
	max int64
	// kept and read count the list reads a kept page answered and
	// those read from the store (ebb_http_list_pages_total).
	kept, read prometheus.Counter
	mu         sync.RWMutex
	pages      map[string]*keptPage
	bytes      int64
}

func newPageCache(max int64, m *metrics) *pageCache {
	if max <= 0 {
		return nil
	}
	return &pageCache{max: max, pages: map[string]*keptPage{},
		kept: m.keptPages.WithLabelValues("kept"), read: m.keptPages.WithLabelValues("read")}
}

// pageKey appends the key of a list read to dst: the four path values
// (each after its length, since any byte may be in one), the encoding and
// the query string as sent, which holds the rest of the read.
func pageKey(dst []byte, r *http.Request, msgpack bool) []byte {
	for _, name := range [...]string{"entity_type", "feature", "version", "entity_id"} {
		v := r.PathValue(name)
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	if msgpack {
		dst = append(dst, 'm')
	} else {
		dst = append(dst, 'j')
	}
	return append(dst, r.URL.RawQuery...)
}

func (c *pageCache) get(key []byte) (*keptPage, bool) {
	c.mu.RLock()
	p, ok := c.pages[string(key)]
	c.mu.RUnlock()
	return p, ok
}

// put keeps a copy of body as the answer of key, read under stamp.
func (c *pageCache) put(key []byte, ctype []string, body []byte, stamp *lists.Stamp) {
	if !stamp.Kept() || len(body) > keptPageMax {
		return
	}
	p := &keptPage{body: append([]byte(nil), body...), ctype: ctype, clen: []string{strconv.Itoa(len(body))}, stamp: *stamp}
	size := int64(len(p.body) + len(key))
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pages[string(key)]; ok {
		c.bytes -= int64(len(old.body) + len(key))
		delete(c.pages, string(key))
	}
	for k, old := range c.pages {
		if c.bytes+size <= c.max {
			break
		}
		c.bytes -= int64(len(old.body) + len(k))
		delete(c.pages, k)
	}
	if c.bytes+size > c.max {
		return
	}
	c.pages[string(key)] = p
	c.bytes += size
}

// write answers with a kept page.
func (p *keptPage) write(w http.ResponseWriter) error {
	h := w.Header()
	h["Vary"] = varyAccept
	h["Content-Type"] = p.ctype
	h["Content-Length"] = p.clen
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(p.body)
	return err
}
