package timeseries

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
)

// ErrShardBudget is wrapped, together with store.ErrInvalid, by a Create
// refused because the shard manager could not keep the indexes it would
// leave: a pass over them would not fit in half the narrowest table
// bucket (Options.VisitBudget), or they would keep too many shards in
// all (Options.MaxTotalShards).
var ErrShardBudget = store.Mark(nil, "timeseries", "more than the shard manager can keep")

// checkBudget refuses cfg, a new index or a changed one, when the indexes
// stored with cfg in place of its namesake are more than the manager can
// keep. The manager reconciles every index on every pass and runs a pass
// every half of the narrowest table bucket: a pass that does not fit
// there lets runways shrink until writes get no_shard, however long the
// runway. The indexes are read afresh; two replicas creating indexes at
// the same moment may each pass the check, which the manager's own
// warnings then report.
func (s *Service) checkBudget(ctx context.Context, cfg Config) error {
	if s.visit <= 0 && s.maxAll <= 0 {
		return nil
	}
	all, err := s.listConfigs(ctx)
	if err != nil {
		return err
	}
	n, narrowest, shards := 1, slices.Min(shardmgr.TableBuckets(s.shardConfig(cfg))), shardmgr.ShardCount(s.shardConfig(cfg))
	for _, c := range all {
		if c.Name == cfg.Name {
			continue
		}
		n++
		narrowest = min(narrowest, slices.Min(shardmgr.TableBuckets(s.shardConfig(c))))
		shards += shardmgr.ShardCount(s.shardConfig(c))
	}
	bad := func(format string, args ...any) error {
		return store.Errorf(store.ErrInvalid, "%w: index %q: %s", ErrShardBudget, cfg.Name, fmt.Sprintf(format, args...))
	}
	if s.visit > 0 {
		if pass := time.Duration(n) * s.visit; pass > narrowest/2 {
			need := (2*time.Duration(n)*s.visit + time.Second - 1) / time.Second * time.Second
			return bad("%d indexes with a narrowest table_bucket of %s: the shard manager visits every index on each pass, a pass runs every half of the narrowest table_bucket, "+
				"and %s per index makes a pass of %s, longer than %s; runways would shrink until writes get no_shard. Widen table_bucket to at least %s, or keep fewer indexes",
				n, durfmt.Format(narrowest), durfmt.Format(s.visit), durfmt.Format(pass), durfmt.Format(narrowest/2), durfmt.Format(need))
		}
	}
	if s.maxAll > 0 && shards > s.maxAll {
		return bad("the indexes would keep %d shards in all (retention, the hot shard and the runway, in table buckets, per index), above the limit of %d: every shard is a table of the backend. "+
			"Shorten retention or runway, widen table_bucket, or delete indexes", shards, s.maxAll)
	}
	return nil
}
