package storetest

import (
	"context"
	"sync/atomic"

	"github.com/ebb-data/ebb/store"
)

// UpsertCounter is a Store that counts the upserts written through it to
// one table, for tests that show what a write costs another table (the
// expiry index, say). It declares no Unwrap, so a wrapper above it that
// finds optional interfaces with store.As writes through Write.
type UpsertCounter struct {
	store.Store
	// Ignore, when set, leaves out the upserts it reports true for (the
	// expiry index's due markers, say, which are not entries).
	Ignore func(store.Mutation) bool
	table  string
	n      atomic.Int64
}

// NewUpsertCounter counts the upserts to table written through it to st.
func NewUpsertCounter(st store.Store, table string) *UpsertCounter {
	return &UpsertCounter{Store: st, table: table}
}

// Write counts the batch's upserts to the counted table, then writes it.
func (c *UpsertCounter) Write(ctx context.Context, table string, batch []store.Mutation) error {
	if table == c.table {
		for _, m := range batch {
			if m.Kind == store.Upsert && (c.Ignore == nil || !c.Ignore(m)) {
				c.n.Add(1)
			}
		}
	}
	return c.Store.Write(ctx, table, batch)
}

// Upserts returns how many upserts to the counted table were written.
func (c *UpsertCounter) Upserts() int64 { return c.n.Load() }
