package timeseries

import (
	"context"
	"errors"
	"time"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
)

// ErrNoArchive: the index names no archive location.
var ErrNoArchive = store.Mark(store.ErrInvalid, "timeseries", "the index has no archive")

// prepareDrop is the shard manager's hook before a drop
// (shardmgr.Options.PrepareDrop): a shard of an index with an archive is
// archived and verified first, and the drop names its archive; a shard
// restored from its archive is kept until it is released. An error holds
// the drop.
func (s *Service) prepareDrop(ctx context.Context, cfg shardmgr.Config, a shardmgr.Action) (shardmgr.Prepared, error) {
	if cfg.Archive == "" {
		return shardmgr.Prepared{}, s.arch.CheckNotRestored(ctx, a.Table)
	}
	m, err := s.arch.ArchiveShard(ctx, cfg.Archive, archive.Shard{Index: cfg.Index, Table: a.Table, Start: a.Start, End: a.End})
	if err != nil {
		return shardmgr.Prepared{}, err
	}
	return shardmgr.Prepared{Archive: m.ObjectURL()}, nil
}

// Archives lists the archived shards of an index, from the manifests at
// its archive location.
func (s *Service) Archives(ctx context.Context, name string) ([]archive.Manifest, error) {
	cfg, err := s.archived(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.arch.List(ctx, cfg.archiveTo(), name)
}

// RestoreArchive brings an archived shard back as a read-only shard:
// queries of the index read it, whatever its age, and the shard manager
// keeps it, until ReleaseArchive.
func (s *Service) RestoreArchive(ctx context.Context, name, table string) (archive.Restored, error) {
	cfg, err := s.archived(ctx, name)
	if err != nil {
		return archive.Restored{}, err
	}
	if _, kind := shardmgr.ParseShardName(name, cfg.TableBucket, table); kind != shardmgr.ShardOf {
		return archive.Restored{}, store.Errorf(store.ErrInvalid, "timeseries: %q is not a shard name of index %q", table, name)
	}
	r, err := s.arch.Restore(ctx, cfg.archiveTo(), name, table)
	s.invalidateShards(name)
	s.invalidateRestored(name)
	return r, err
}

// ReleaseArchive drops a restored shard, which then is gone again.
func (s *Service) ReleaseArchive(ctx context.Context, name, table string) error {
	if err := checkName(name); err != nil {
		return err
	}
	err := s.arch.Release(ctx, name, table)
	s.invalidateShards(name)
	s.invalidateRestored(name)
	return err
}

// RestoredShards lists the index's shards restored from its archive.
func (s *Service) RestoredShards(ctx context.Context, name string) ([]archive.Restored, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return s.arch.RestoredShards(ctx, name)
}

func (s *Service) archived(ctx context.Context, name string) (Config, error) {
	if err := checkName(name); err != nil {
		return Config{}, err
	}
	cfg, err := s.loadConfig(ctx, name)
	if err != nil {
		return Config{}, err
	}
	if cfg.archiveTo() == "" {
		return Config{}, store.Errorf(ErrNoArchive, "index %q: set archive.to to archive its shards", name)
	}
	return cfg, nil
}

// restoredStarts returns the starts (Unix ms) of the index's restored
// shards, cached like its shard list: a query reads them whatever their
// age.
func (s *Service) restoredStarts(ctx context.Context, cfg Config) (map[int64]bool, error) {
	now := s.now()
	s.mu.Lock()
	c, ok := s.restored[cfg.Name]
	s.mu.Unlock()
	if ok && now.Sub(c.loaded) < s.ttl && !now.Before(c.loaded) {
		return c.starts, nil
	}
	rs, err := s.arch.RestoredShards(ctx, cfg.Name)
	if err != nil {
		return nil, err
	}
	var starts map[int64]bool
	for _, r := range rs {
		if start, kind := shardmgr.ParseShardName(cfg.Name, cfg.TableBucket, r.Table); kind == shardmgr.ShardOf && r.Complete {
			if starts == nil {
				starts = map[int64]bool{}
			}
			starts[start.UnixMilli()] = true
		}
	}
	s.mu.Lock()
	s.restored[cfg.Name] = cachedRestored{starts: starts, loaded: now}
	s.mu.Unlock()
	return starts, nil
}

type cachedRestored struct {
	starts map[int64]bool
	loaded time.Time
}

func (s *Service) invalidateRestored(name string) {
	s.mu.Lock()
	delete(s.restored, name)
	s.mu.Unlock()
}

// planRestored holds, in a plan that applies nothing, the drops of shards
// restored from the index's archive, as an apply would: the plan then says
// what the manager will do.
func (s *Service) planRestored(ctx context.Context, plan *shardmgr.Plan) error {
	for i := range plan.Actions {
		a := &plan.Actions[i]
		if a.Op != shardmgr.OpDrop || a.Deferred {
			continue
		}
		err := s.arch.CheckNotRestored(ctx, a.Table)
		if errors.Is(err, archive.ErrRestored) {
			msg, _ := store.ClientMessage(err)
			a.Deferred = true
			a.Reason = "held: " + msg + " (" + a.Reason + ")"
		} else if err != nil {
			return err
		}
	}
	return nil
}
