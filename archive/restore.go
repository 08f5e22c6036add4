package archive

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/store"
)

// restoredKind is the ebb_meta kind of restored shards, keyed by table.
const restoredKind = "archive_restored"

// Restored is the record of a shard restored from its archive. While it
// exists the shard manager holds the shard's drop, and queries of its
// index read it.
type Restored struct {
	Index      string    `json:"index"`
	Table      string    `json:"table"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Location   string    `json:"location"`
	Rows       int64     `json:"rows"`
	RestoredAt time.Time `json:"restored_at"`
	// Complete is set once every row was written back and checked; a
	// restore that did not complete can be retried or released.
	Complete bool `json:"complete"`
}

// restoreBatch is how many rows a restore writes per batch.
const restoreBatch = 100

// Restore brings a shard back from its archive at location: a table of
// the shard's name with the archived rows, checked against the manifest
// (row count and rows checksum). It is recorded first, so that the shard
// manager never drops a shard being restored. A shard that still exists
// is refused with store.ErrConflict; one already restored is returned as
// it is.
func (a *Archiver) Restore(ctx context.Context, location, index, table string) (Restored, error) {
	t, err := a.open(ctx, location)
	if err != nil {
		return Restored{}, err
	}
	m, err := readManifest(ctx, t, index, table)
	if errors.Is(err, ErrObjectNotFound) {
		return Restored{}, store.Errorf(ErrNotArchived, "%s in %s", table, location)
	}
	if err != nil {
		return Restored{}, err
	}
	if m.Verified.IsZero() {
		return Restored{}, store.Errorf(ErrNotArchived, "%s in %s has no verified archive", table, location)
	}
	if r, ok, err := a.restored(ctx, table); err != nil {
		return Restored{}, err
	} else if ok && r.Complete {
		return r, nil
	} else if !ok {
		if _, err := a.opts.Store.Spec(ctx, table); err == nil {
			return Restored{}, store.Errorf(store.ErrConflict, "archive: shard %s still exists; only a dropped shard is restored", table)
		} else if !errors.Is(err, store.ErrTableNotFound) {
			return Restored{}, err
		}
	}
	// The object is fetched and checked before anything is made, so that
	// a corrupt one leaves no table behind.
	o, osum, err := fetch(ctx, t, m.Object)
	if err != nil {
		return Restored{}, err
	}
	defer o.Close()
	if got := hex.EncodeToString(osum); got != m.ObjectSHA256 {
		return Restored{}, store.Errorf(ErrUnverified, "object %s in %s has checksum %s, its manifest %s", m.Object, location, got, m.ObjectSHA256)
	}
	if err := (store.Meta{S: a.opts.Store}).Ensure(ctx); err != nil {
		return Restored{}, fmt.Errorf("archive: create %s: %w", store.MetaTable, err)
	}
	r := Restored{Index: index, Table: table, Start: m.Start, End: m.End, Location: location, Rows: m.Rows, RestoredAt: a.now().UTC()}
	if err := a.putRestored(ctx, r); err != nil {
		return Restored{}, err
	}
	spec := m.Schema.spec(table)
	if err := a.opts.Store.CreateTable(ctx, spec); err != nil {
		return Restored{}, fmt.Errorf("archive: restore %s: %w", table, err)
	}
	np, nc := len(spec.PartitionKey), len(spec.Clustering)
	batch := make([]store.Mutation, 0, restoreBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := a.opts.Store.Write(ctx, table, batch)
		batch = batch[:0]
		return err
	}
	n, sum, err := readRows(o, spec, func(vals []any) error {
		mu := store.Mutation{Partition: append([]any(nil), vals[:np]...), Clustering: append([]any(nil), vals[np:np+nc]...), NoExpiry: spec.DefaultTTL > 0}
		for i, c := range spec.Values {
			if v := vals[np+nc+i]; v != nil {
				mu.Cells = append(mu.Cells, store.Cell{Column: c.Name, Value: v})
			}
		}
		batch = append(batch, mu)
		if len(batch) == restoreBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return Restored{}, fmt.Errorf("archive: restore %s: %w", table, err)
	}
	if n != m.Rows || hex.EncodeToString(sum) != m.RowsSHA256 {
		return Restored{}, store.Errorf(ErrUnverified, "the object of %s in %s no longer matches its manifest (%d rows read, %d archived)", table, location, n, m.Rows)
	}
	r.Complete = true
	if err := a.putRestored(ctx, r); err != nil {
		return Restored{}, err
	}
	a.log.Info("shard restored from its archive", "index", index, "table", table, "location", location, "rows", n)
	return r, nil
}

// Release drops a restored shard of index and its record. Releasing a
// shard that is not restored is store.ErrNotFound.
func (a *Archiver) Release(ctx context.Context, index, table string) error {
	if r, ok, err := a.restored(ctx, table); err != nil {
		return err
	} else if !ok || r.Index != index {
		return store.Errorf(store.ErrNotFound, "archive: shard %s is not restored", table)
	}
	if err := a.opts.Store.DropTable(ctx, table); err != nil {
		return fmt.Errorf("archive: release %s: %w", table, err)
	}
	if err := (store.Meta{S: a.opts.Store}).Delete(ctx, restoredKind, table); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("archive: release %s: %w", table, err)
	}
	a.log.Info("restored shard released", "table", table)
	return nil
}

// RestoredShards lists the restored shards of index (all indexes for "").
func (a *Archiver) RestoredShards(ctx context.Context, index string) ([]Restored, error) {
	docs, err := store.Meta{S: a.opts.Store}.List(ctx, restoredKind)
	if errors.Is(err, store.ErrTableNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("archive: list restored shards: %w", err)
	}
	var out []Restored
	for _, doc := range docs {
		var r Restored
		if json.Unmarshal(doc, &r) == nil && (index == "" || r.Index == index) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (a *Archiver) restored(ctx context.Context, table string) (Restored, bool, error) {
	doc, err := store.Meta{S: a.opts.Store}.Get(ctx, restoredKind, table)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
		return Restored{}, false, nil
	case err != nil:
		return Restored{}, false, fmt.Errorf("archive: restored shard %s: %w", table, err)
	}
	var r Restored
	if err := json.Unmarshal(doc, &r); err != nil {
		return Restored{}, false, fmt.Errorf("archive: restored shard %s: corrupt record: %w", table, err)
	}
	return r, true, nil
}

func (a *Archiver) putRestored(ctx context.Context, r Restored) error {
	doc, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("archive: encode restored record: %w", err)
	}
	if err := (store.Meta{S: a.opts.Store}).Put(ctx, restoredKind, r.Table, doc); err != nil {
		return fmt.Errorf("archive: record restored shard %s: %w", r.Table, err)
	}
	return nil
}

// CheckNotRestored returns ErrRestored for a shard restored from its
// archive, whose drop is held until it is released.
func (a *Archiver) CheckNotRestored(ctx context.Context, table string) error {
	r, ok, err := a.restored(ctx, table)
	if err != nil {
		return err
	}
	if ok {
		return store.Errorf(ErrRestored, "%s was restored from %s at %s; release it to let it go", table, r.Location, r.RestoredAt.Format(time.RFC3339))
	}
	return nil
}
