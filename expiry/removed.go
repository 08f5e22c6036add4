package expiry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/ebb-data/ebb/internal/parallel"
	"github.com/ebb-data/ebb/store"
)

// Removed is a row a pass deletes because it expired: its key, decoded
// under its table's spec, and the expiry its index entry recorded.
type Removed struct {
	Partition, Clustering []any
	ExpiresAt             time.Time
	// ID is the same for every pass that removes this row for this expiry
	// (a hash of the table, the row's key and the expiry), so that a
	// record repeated after a crash can be recognised.
	ID uint64
}

// report tells Options.Removed of the rows of one batch of conditional
// deletes that are really gone: a row still live (its expiry was extended
// after it was indexed) survives its delete and is left out. The check is
// one Get per row, at most Parallelism at a time; a row already absent
// (deleted by a pass that crashed before removing its entries, or by its
// owner) is reported, so that a crash repeats a report instead of losing
// it.
func (sw *Sweeper) report(ctx context.Context, table string, muts []store.Mutation, entries []entry) error {
	if sw.s.opts.Removed == nil || len(muts) == 0 {
		return nil
	}
	gone := make([]bool, len(muts))
	tasks := make([]func(context.Context) error, 0, sw.s.opts.Parallelism)
	per := (len(muts) + sw.s.opts.Parallelism - 1) / sw.s.opts.Parallelism
	for lo := 0; lo < len(muts); lo += per {
		hi := min(lo+per, len(muts))
		tasks = append(tasks, func(ctx context.Context) error {
			for i := lo; i < hi; i++ {
				err := sw.retry(ctx, func() error {
					_, err := sw.inner.Get(ctx, table, muts[i].Partition, muts[i].Clustering)
					return err
				})
				switch {
				case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
					gone[i] = true
				case err != nil:
					return err
				}
			}
			return nil
		})
	}
	if err := parallel.Run(ctx, sw.s.opts.Parallelism, tasks); err != nil {
		return fmt.Errorf("expiry: check removed rows of %s: %w", table, err)
	}
	rows := make([]Removed, 0, len(muts))
	for i, m := range muts {
		if gone[i] {
			e := &entries[i]
			h := fnv.New64a()
			h.Write([]byte(table))
			h.Write([]byte{0})
			h.Write(e.id)
			h.Write(binary.BigEndian.AppendUint64(nil, uint64(e.exp)))
			rows = append(rows, Removed{Partition: m.Partition, Clustering: m.Clustering, ExpiresAt: time.UnixMilli(e.exp).UTC(), ID: h.Sum64()})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	if err := sw.s.opts.Removed(ctx, table, rows); err != nil {
		return fmt.Errorf("expiry: record removed rows of %s: %w", table, err)
	}
	return nil
}
