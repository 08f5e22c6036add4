package ebb

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/internal/explog"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
)

// Expiration is one entry of the log of expirations: a row the sweeper
// physically removed, or a shard the shard manager dropped.
type Expiration = explog.Event

// Kinds and types of an Expiration.
const (
	ExpirationRow   = explog.TypeRow
	ExpirationShard = explog.TypeShard
)

// ErrExpirationsOff is returned by DB.Expirations when the DB was opened
// with Options.NoExpirations.
var ErrExpirationsOff = store.Mark(store.ErrNotFound, "ebb", "the log of expirations is off (ebb serve --no-expirations)")

// ExpirationsQuery selects a page of the log of expirations.
type ExpirationsQuery struct {
	// After is a cursor from an earlier page (Next) or event (Cursor);
	// empty starts at the oldest entry retained.
	After string
	// Limit is the most events returned: 1..store.MaxLimit, zero
	// store.DefaultLimit.
	Limit int
	// Wait, if positive, is how long to wait for an event when there is
	// none after the cursor yet (a long poll).
	Wait time.Duration
	// Visible, if set, keeps only the events it accepts (a token's
	// scopes); the others are skipped, and still advance the cursor.
	Visible func(*Expiration) bool
}

// ExpirationsPage is one page of the log.
type ExpirationsPage struct {
	Expirations []Expiration `json:"expirations"`
	// Next resumes after the last entry read, visible or not.
	Next string `json:"next"`
}

// expirationPoll is how often a waiting read looks at the store for
// entries another replica appended; entries appended through this
// process wake it at once.
const expirationPoll = 250 * time.Millisecond

// expirationLog is the DB's log of expirations and the cache of which
// feature owns a list table.
type expirationLog struct {
	s *explog.Stream

	mu     sync.Mutex
	owners map[string]lists.FeatureID // list table -> feature; table names are hashes of the feature
}

// openExpirations creates the log over the store as it is before the
// expiry decorator wraps it.
func (db *DB) openExpirations(ctx context.Context) error {
	if db.o.NoExpirations {
		return nil
	}
	// Rows' entries are synced before the sweeper's delete, not made
	// durable by it (explog.Options.DeferRows): a reader sees an entry as
	// soon as it is appended, and one lost to a crash before that delete
	// would be appended again under a later sequence, past a cursor that
	// had already delivered it.
	s := explog.New(explog.Options{Store: db.st, Retention: db.o.ExpirationsRetention, Now: db.o.Now})
	if err := s.Ensure(ctx); err != nil {
		return fmt.Errorf("ebb: %w", err)
	}
	db.expirations = &expirationLog{s: s, owners: map[string]lists.FeatureID{}}
	return nil
}

// Expirations reads the log of expirations after q.After, waiting up to
// q.Wait for an event when there is none yet.
func (db *DB) Expirations(ctx context.Context, q ExpirationsQuery) (ExpirationsPage, error) {
	if db.expirations == nil {
		return ExpirationsPage{}, ErrExpirationsOff
	}
	c, err := explog.ParseCursor(q.After)
	if err != nil {
		return ExpirationsPage{}, err
	}
	if q.Limit == 0 {
		q.Limit = store.DefaultLimit
	}
	if q.Limit < 0 || q.Limit > store.MaxLimit {
		return ExpirationsPage{}, store.Errorf(store.ErrInvalid, "limit %d outside 1..%d", q.Limit, store.MaxLimit)
	}
	s := db.expirations.s
	var deadline <-chan time.Time
	if q.Wait > 0 {
		t := time.NewTimer(q.Wait)
		defer t.Stop()
		deadline = t.C
	}
	poll := time.NewTicker(expirationPoll)
	defer poll.Stop()
	for {
		// Take the signal before reading, so that an append between the
		// read and the wait is not missed.
		changed := s.Changed()
		p, err := s.Read(ctx, c, q.Limit, q.Visible)
		if err != nil {
			return ExpirationsPage{}, err
		}
		c = p.Next
		if len(p.Events) > 0 || deadline == nil {
			return ExpirationsPage{Expirations: p.Events, Next: c.String()}, nil
		}
		select {
		case <-ctx.Done():
			return ExpirationsPage{}, ctx.Err()
		case <-deadline:
			return ExpirationsPage{Expirations: p.Events, Next: c.String()}, nil
		case <-changed:
		case <-poll.C:
		}
	}
}

// rowsRemoved is the sweeper's hook (expiry.Options.Removed): it names
// each removed row by what it belongs to and appends it to the log. Rows
// that are not a feature's own (a shared table's index entries) are left
// out.
func (db *DB) rowsRemoved() func(context.Context, string, []expiry.Removed) error {
	if db.expirations == nil {
		return nil
	}
	return func(ctx context.Context, table string, rows []expiry.Removed) error {
		now := db.o.Now().UTC()
		evs := make([]explog.Event, 0, len(rows))
		ids := make([]uint64, 0, len(rows))
		var maybe []int // indexes in evs of rows an earlier pass may have logged
		for _, r := range rows {
			ev, ok, err := db.describeRow(ctx, table, r)
			if err != nil {
				return err
			}
			if ok {
				ev.RemovedAt = now
				if r.MayRepeat {
					maybe = append(maybe, len(evs))
				}
				evs = append(evs, ev)
				ids = append(ids, r.ID)
			}
		}
		// A pass that crashed after logging but before removing its index
		// entries sweeps them again: what it logged is not logged twice.
		// Only the rows that may repeat are looked up.
		s := db.expirations.s
		if len(maybe) > 0 {
			cevs, cids := make([]explog.Event, len(maybe)), make([]uint64, len(maybe))
			for k, i := range maybe {
				cevs[k], cids[k] = evs[i], ids[i]
			}
			seen, err := s.Seen(ctx, cevs, cids)
			if err != nil {
				return err
			}
			drop := map[int]bool{}
			for k, i := range maybe {
				drop[i] = seen[k]
			}
			k := 0
			for i := range evs {
				if !drop[i] {
					evs[k], ids[k] = evs[i], ids[i]
					k++
				}
			}
			evs, ids = evs[:k], ids[:k]
		}
		return db.spaceFirst(s.Rows().Append(ctx, evs, ids), "rows", len(evs))
	}
}

// spaceFirst lets a removal go ahead when the log could not record it for
// lack of disk space (store.ErrInsufficientStorage): the removal is what
// frees the space, and holding it for the log would keep the disk full
// for good. The stream then misses those expirations, which is logged.
func (db *DB) spaceFirst(err error, what string, n int) error {
	if errors.Is(err, store.ErrInsufficientStorage) {
		db.o.Logger.Warn("the log of expirations is full: removals go ahead unrecorded, so the stream misses them", "source", what, "events", n, "err", err)
		return nil
	}
	return err
}

// describeRow names a removed row: a list item by its feature, a shared
// table's item by its table and key, any other row by its physical table.
func (db *DB) describeRow(ctx context.Context, table string, r expiry.Removed) (explog.Event, bool, error) {
	ev := explog.Event{Type: explog.TypeRow, ExpiresAt: r.ExpiresAt}
	if table == multitable.ItemsTable {
		name, key, ok := multitable.ItemOf(r.Partition, r.Clustering)
		if !ok {
			return ev, false, nil
		}
		ev.Kind, ev.Name, ev.Key = explog.KindTable, name, []string{key}
		return ev, true, nil
	}
	if id, ok, err := db.expirations.listOwner(ctx, db.lists, table); err != nil {
		return ev, false, err
	} else if ok {
		ev.Kind, ev.Name, ev.Feature, ev.Version = explog.KindList, id.EntityType, id.Feature, id.Version
		ev.Key = keyStrings(r.Partition, r.Clustering)
		return ev, true, nil
	}
	ev.Kind, ev.Name, ev.Key = explog.KindStore, table, keyStrings(r.Partition, r.Clustering)
	return ev, true, nil
}

// listOwner returns the feature owning a list table, cached: a table's
// name is derived from its feature, so the answer never changes.
func (l *expirationLog) listOwner(ctx context.Context, ls *lists.Service, table string) (lists.FeatureID, bool, error) {
	l.mu.Lock()
	id, ok := l.owners[table]
	l.mu.Unlock()
	if ok || ls == nil {
		return id, ok, nil
	}
	id, ok, err := ls.FeatureOfTable(ctx, table)
	if err != nil || !ok {
		return id, ok, err
	}
	l.mu.Lock()
	l.owners[table] = id
	l.mu.Unlock()
	return id, true, nil
}

func keyStrings(parts ...[]any) []string {
	var out []string
	for _, p := range parts {
		for _, v := range p {
			switch v := v.(type) {
			case time.Time:
				out = append(out, v.UTC().Format(time.RFC3339Nano))
			case []byte:
				out = append(out, fmt.Sprintf("%x", v))
			default:
				out = append(out, fmt.Sprint(v))
			}
		}
	}
	return out
}

// shardDropping is the shard manager's hook (shardmgr.Options.BeforeDrop):
// it records the drop before it happens, so that a crash in between
// repeats the record rather than losing it, with the archive the
// manager's PrepareDrop made of the shard, if any.
func (db *DB) shardDropping() func(context.Context, string, shardmgr.Action, shardmgr.Prepared) error {
	if db.expirations == nil {
		return nil
	}
	return func(ctx context.Context, index string, a shardmgr.Action, p shardmgr.Prepared) error {
		ev := explog.Event{
			Type: explog.TypeShard, Kind: explog.KindIndex, Name: index, Shard: a.Table,
			From: a.Start.UTC(), To: a.End.UTC(), RemovedAt: db.o.Now().UTC(), Archive: p.Archive,
		}
		if a.Destroys != nil {
			rows := a.Destroys.Rows
			ev.Rows = &rows
		}
		// A drop recorded by a run that failed before dropping is
		// recorded once.
		h := fnv.New64a()
		h.Write([]byte(a.Table))
		once := []uint64{h.Sum64()}
		s := db.expirations.s
		seen, err := s.Seen(ctx, []explog.Event{ev}, once)
		if err != nil || seen[0] {
			return err
		}
		return db.spaceFirst(s.Shards().Append(ctx, []explog.Event{ev}, once), "shards", 1)
	}
}
