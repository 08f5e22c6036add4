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
	// MayRepeat is set when an earlier pass may have reported this row
	// already: one of another process (before this one's first pass, or
	// while another replica held the sweeper's lease) or one of this
	// process that failed before removing its index entries. Rows without
	// it were never reported, so the check costs nothing in the steady
	// state.
	MayRepeat bool
}

// repeatAfterGap is how long without a pass means the sweeper's lease may
// have been elsewhere: passes run at least every IdleInterval while it is
// held here.
func (sw *Sweeper) repeatAfterGap() time.Duration {
	return sw.s.opts.IdleInterval + sw.s.opts.SweepInterval
}

// notePass keeps MayRepeat's bound before and after a pass at now: the
// entries due by then (and Grace later, for a clock ahead of this one)
// may have been reported by a pass this one cannot vouch for. It runs
// under the pass lock.
func (sw *Sweeper) notePass(now time.Time, failed bool) {
	ms, grace := now.UnixMilli(), sw.s.opts.Grace.Milliseconds()
	switch {
	case sw.lastPass == 0, failed, ms-sw.lastPass > sw.repeatAfterGap().Milliseconds():
		sw.repeatUntil.Store(max(sw.repeatUntil.Load(), ms+grace))
	}
	sw.lastPass = ms
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
			rows = append(rows, Removed{Partition: m.Partition, Clustering: m.Clustering, ExpiresAt: time.UnixMilli(e.exp).UTC(),
				ID: h.Sum64(), MayRepeat: e.due <= sw.repeatUntil.Load()})
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
