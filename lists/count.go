package lists

import (
	"context"
	"time"

	"github.com/ebb-data/ebb/store"
)

// eachLive calls fn with the encoded clustering key of each live item of
// a list, newest first, reading it a store page of store.MaxLimit items
// at a time. Expired items are not read at all: the range starts after
// them, as Scan's does.
func (s *Service) eachLive(ctx context.Context, f Feature, entityID string, fn func(enc []byte) error) error {
	q := store.Query{Partition: []any{entityID}, Limit: store.MaxLimit}
	if low := s.now().Add(-f.TTL).Add(time.Nanosecond); low.After(time.Unix(0, 0)) {
		if low.After(maxTimestamp) {
			return nil
		}
		q.Low = store.Bound{Values: []any{string(appendTS(nil, low.UnixNano()))}, Inclusive: true}
	}
	for {
		next, err := s.st.Scan(ctx, f.Table, q, func(r *store.RawRow) error {
			if r.Values[0] == nil {
				return nil // no live value: the row is on its way out
			}
			return fn(r.Clustering)
		})
		if err != nil || next == nil {
			return err
		}
		q.PageToken = next
	}
}

// Count returns the number of live items in the list of entityID: exact
// at the moment each store page of it is read. It reads every live item
// of the list (keys and values; expired ones are skipped by the range),
// so its cost is that of reading the whole list; a capped feature bounds
// it by MaxItems. A list never written counts zero.
func (s *Service) Count(ctx context.Context, id FeatureID, entityID string) (int, error) {
	if err := checkEntity(entityID); err != nil {
		return 0, err
	}
	var n int
	err := s.withFeature(ctx, id, func(f Feature) error {
		n = 0
		return s.eachLive(ctx, f, entityID, func([]byte) error {
			n++
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
