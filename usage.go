package ebb

import (
	"context"
	"errors"
	"fmt"

	"github.com/ebb-data/ebb/meter"
	"github.com/ebb-data/ebb/store"
)

// ErrNoMetering is returned by Usage when the DB was opened with
// NoMetering.
var ErrNoMetering = errors.New("ebb: metering is off (Options.NoMetering)")

// Usage returns the request units metered since the DB opened, per table
// class, operation and provider model (see package meter). With storage,
// it also reports what each class of table physically holds, from the
// backend's table statistics: exact and cheap on the embedded backend, a
// scan of every table on remote ones.
func (db *DB) Usage(ctx context.Context, storage bool) (meter.Usage, error) {
	m, ok := store.As[*meter.Store](db.st)
	if !ok {
		return meter.Usage{}, ErrNoMetering
	}
	u := m.Usage()
	if !storage {
		return u, nil
	}
	tables, err := db.PhysicalTables(ctx)
	if err != nil {
		return meter.Usage{}, fmt.Errorf("storage: %w", err)
	}
	byClass := map[meter.Class]*meter.StorageUsage{}
	for _, t := range tables {
		c := meter.Classify(t.Name)
		su := byClass[c]
		if su == nil {
			su = &meter.StorageUsage{Class: c.String()}
			byClass[c] = su
		}
		su.Tables++
		su.Rows += t.Rows
		su.Bytes += t.Bytes
	}
	u.Storage = []meter.StorageUsage{}
	for _, c := range meter.Classes() {
		if su := byClass[c]; su != nil {
			u.Storage = append(u.Storage, *su)
		}
	}
	return u, nil
}
