package lists

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ebb-data/ebb/internal/rewrite"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// kindRewrite documents are the TTL rewrite jobs of feature versions,
// keyed by metaKey(id).
const kindRewrite = "list_rewrite"

// RewritePartitions is how many lists one batch of a rewrite visits: the
// job's cursor is saved after each batch, so a restart repeats at most
// this many lists.
const RewritePartitions = 100

// RewriteJob is the state of a version's TTL rewrite (see
// FeatureConfig.Rewrite): its target TTL, its progress, and when it
// started and ended.
type RewriteJob = rewrite.Job

// ErrRewriteUnsupported: rewriting the items already written needs a
// backend that lists a table's partitions (store.PartitionLister), which
// this one does not. It wraps store.ErrInvalid; the request that asked for
// the rewrite changed nothing.
var ErrRewriteUnsupported error = store.Mark(store.ErrInvalid, "lists", "rewriting the items already written needs a backend that lists a table's partitions")

func (s *Service) jobs() rewrite.Jobs { return rewrite.Jobs{Meta: s.meta, Kind: kindRewrite} }

// checkRewrite refuses a rewrite this backend cannot run, before anything
// is written.
func (s *Service) checkRewrite() error {
	if _, ok := store.As[store.PartitionLister](s.st); !ok {
		return store.Errorf(ErrRewriteUnsupported, "backend %s has no partition listing", s.caps.Backend)
	}
	return nil
}

// startRewrite records a rewrite of f's items to f's TTL, replacing any
// job the version had, and wakes the runner.
func (s *Service) startRewrite(ctx context.Context, f Feature) (RewriteJob, error) {
	key, err := metaKey(f.FeatureID)
	if err != nil {
		return RewriteJob{}, err
	}
	j, err := s.jobs().Start(ctx, key, f.TTL, f.Table, s.now())
	if err != nil {
		return RewriteJob{}, fmt.Errorf("%s: %w", f.FeatureID, err)
	}
	s.log.Info("list feature rewrite started", "entity_type", f.EntityType, "feature", f.Feature, "version", f.Version, "ttl", f.TTL)
	if s.rewriteStarted != nil {
		s.rewriteStarted()
	}
	return j, nil
}

// Rewrite returns the version's last TTL rewrite, running or ended, and
// false when none was asked for since the version was created.
func (s *Service) Rewrite(ctx context.Context, id FeatureID) (RewriteJob, bool, error) {
	key, err := metaKey(id)
	if err != nil {
		return RewriteJob{}, false, err
	}
	j, ok, err := s.jobs().Get(ctx, key)
	if err != nil || !ok {
		return RewriteJob{}, false, err
	}
	// A job left by a deleted version (or one deleted and created again)
	// is not this version's.
	f, err := s.lookup(ctx, id)
	if err != nil {
		return RewriteJob{}, false, err
	}
	if f.Table != j.Scope {
		return RewriteJob{}, false, nil
	}
	return j, true, nil
}

// RunRewrites runs every pending TTL rewrite of list features to its end
// (see rewrite.Jobs.Run): the background role that holds the lease calls
// it, with its fence. saved, if set, sees each batch's progress.
func (s *Service) RunRewrites(ctx context.Context, fence func(context.Context) error, saved func(key string, before, after RewriteJob)) error {
	// Another process may add under the old TTL until its cached feature
	// expires: a job's first batch waits that long, so that no list it
	// visits takes an old-TTL item afterwards.
	return s.jobs().Run(ctx, rewrite.RunOptions{Batch: s.runBatch, Fence: fence, Now: s.now, Saved: saved, Settle: s.cacheTTL})
}

// runBatch visits the next Options.RewriteBatch lists of a job (see
// rewrite.Batch). Each item gets the expiry an Add under the job's TTL
// would give it, its timestamp + TTL: an item whose new expiry has passed
// is deleted; one already expired is not brought back (reads never see it
// again, and the sweeper may have removed it).
func (s *Service) runBatch(ctx context.Context, key string, j *rewrite.Job) error {
	var k [3]string
	if err := json.Unmarshal([]byte(key), &k); err != nil {
		return store.Wrapf(store.ErrStorageFault, err, "lists: malformed rewrite key %q", key)
	}
	id := FeatureID{EntityType: k[0], Feature: k[1], Version: k[2]}
	f, err := s.readFeature(ctx, id, key)
	if errors.Is(err, ErrFeatureNotFound) {
		j.State = rewrite.StateSuperseded
		return nil
	}
	if err != nil {
		return err
	}
	if f.Table != j.Scope || f.TTL != j.TTL {
		// Deleted and created again, or its TTL changed since: the items
		// the job would write are no longer what an Add writes.
		j.State = rewrite.StateSuperseded
		return nil
	}
	pl, ok := store.As[store.PartitionLister](s.st)
	if !ok {
		return store.Errorf(ErrRewriteUnsupported, "backend %s has no partition listing", s.caps.Backend)
	}
	var entities []string
	next, err := pl.Partitions(ctx, f.Table, j.Cursor, s.rewriteBatch, func(p []any) error {
		e, _ := p[0].(string)
		entities = append(entities, e)
		return nil
	})
	if errors.Is(err, store.ErrTableNotFound) {
		j.State = rewrite.StateSuperseded
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entities {
		if err := s.rewriteList(ctx, f, e, j); err != nil {
			return err
		}
	}
	j.Cursor = next
	if next == nil {
		j.State = rewrite.StateDone
		return s.settleMaxTTL(ctx, f, key)
	}
	return nil
}

// settleMaxTTL records, once a rewrite has visited every list, that no
// item lives longer than the TTL any more, so that reads stop looking back
// further (Feature.MaxTTL). It is a compare-and-swap against the record
// the batch read: a change since leaves MaxTTL as it is, which only costs
// reads.
func (s *Service) settleMaxTTL(ctx context.Context, f Feature, key string) error {
	if f.MaxTTL == f.TTL {
		return nil
	}
	old, err := s.meta.Get(ctx, kindFeature, key)
	if err != nil {
		return fmt.Errorf("%s: %w", f.FeatureID, err)
	}
	cur, err := parseFeature(f.FeatureID, old)
	if err != nil {
		return err
	}
	if cur.TTL != f.TTL || cur.Table != f.Table {
		return nil
	}
	cur.MaxTTL = cur.TTL
	doc, err := json.Marshal(docOf(cur))
	if err != nil {
		return err
	}
	s.forget(f.FeatureID)
	defer s.forget(f.FeatureID)
	if err := s.meta.CompareAndSwap(ctx, kindFeature, key, old, doc); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("%s: %w", f.FeatureID, err)
	}
	return nil
}

// rewriteList gives every live item of one list its expiry under f.TTL.
// Each write is guarded by the item's value, so that an item removed
// meanwhile (by value, a trim or an erase) is not written back.
func (s *Service) rewriteList(ctx context.Context, f Feature, entity string, j *rewrite.Job) error {
	q := store.Query{Partition: []any{entity}, Limit: store.MaxLimit}
	for {
		page, err := kit.Query(ctx, s.st, f.Table, q)
		if err != nil {
			return err
		}
		now := s.now()
		for _, row := range page.Rows {
			j.Scanned++
			ik, _ := row.Clustering[0].(string)
			ts, err := parseItemKey(ik)
			if err != nil {
				j.Skipped++
				continue
			}
			value, _ := row.Values[0].([]byte)
			exp := ceilMilli(ts.Add(f.TTL))
			if row.ExpiresAt.Equal(exp) {
				j.Skipped++
				continue
			}
			m := store.Mutation{
				Partition:  []any{entity},
				Clustering: []any{ik},
				If:         &store.Condition{Kind: store.IfEquals, Column: colValue, Value: nonNil(value)},
			}
			removed := !exp.After(now)
			if removed {
				m.Kind = store.DeleteRow
			} else {
				m.Cells = []store.Cell{{Column: colValue, Value: nonNil(value)}}
				m.ExpiresAt, m.Expiry = exp, f.Expiry
			}
			err = s.st.Write(ctx, f.Table, []store.Mutation{m})
			switch {
			case errors.Is(err, store.ErrConflict):
				j.Skipped++ // removed meanwhile
			case err != nil:
				return err
			case removed:
				j.Removed++
			default:
				j.Rewritten++
			}
		}
		if page.NextPageToken == nil {
			return nil
		}
		q.PageToken = page.NextPageToken
	}
}
