package ebb

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/internal/lease"
	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/store"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
)

// Options configure Open. The zero value of every field but Store and Dir
// takes the default shown by DefaultOptions.
type Options struct {
	// Store is the backend: the embedded store (store/pebble), DynamoDB
	// (store/dynamo) or CQL (store/cql). The DB takes it over and closes
	// it in Close. Nil opens the embedded store in Dir.
	Store store.Store
	// Dir is the embedded store's data directory, used when Store is nil.
	// It is created if missing and locked against other processes.
	Dir string
	// LegacyOpener opens the legacy sources of index migrations that live
	// outside ebb's store: DynamoDB and CQL tables. Whoever chose the
	// backend supplies it, as legacyopen.New (package
	// migrate/legacyopen) does with the backend's own client, so that
	// this package links no remote backend. Nil refuses such migrations
	// with migrate.ErrNoOpener; a migration from an ebb table
	// (migrate.KindTable, the index's own NAME_legacy) needs none.
	LegacyOpener migrate.Opener
	// ArchiveOpener opens the archive locations of indexes (package
	// archive): nil opens file:// locations alone. Whoever links an
	// object store's SDK supplies it, as cmd/ebb does with package
	// archive/s3, so that this package links none.
	ArchiveOpener archive.Opener

	// Now is the clock for expiry, retention and the background loops. Nil
	// means time.Now. Expiry is resolved on the Store's own clock, so a
	// Store opened by the caller must be given the same one.
	Now func() time.Time
	// Logger receives the background loops' logs. Nil discards.
	Logger *slog.Logger
	// Registerer receives every metric of the DB and its features. Nil
	// registers nothing. Close unregisters them all, so that a DB may be
	// opened again on the same registry.
	Registerer prometheus.Registerer

	// ReconcileInterval is how often the shard manager reconciles every
	// index. Default 30 s.
	ReconcileInterval time.Duration
	// SweepInterval is how often the expiry sweeper deletes expired rows.
	// Default 1 s.
	SweepInterval time.Duration
	// SweepMaxDeletesPerSecond paces the sweeper's physical deletes, so
	// that a mass expiry does not take the backend's capacity from
	// foreground traffic (a provisioned DynamoDB table, a CQL cluster
	// under load); rows then leave storage later, never reads, which
	// resolve expiry themselves. Zero means unlimited.
	SweepMaxDeletesPerSecond float64
	// LeaseDuration bounds how long the shard manager and the sweeper stay
	// with a replica that stopped renewing its lease: another replica
	// takes over within two of them. Default 15 s. Only backends shared
	// by several processes (Capabilities().SharedAcrossProcesses) contend;
	// on the embedded store the lease is this process's at once.
	LeaseDuration time.Duration
	// ReplicaID names this process in leases and in the cluster view.
	// Default host:pid.
	ReplicaID string
	// CacheTTL bounds how stale this process's view of configuration made
	// through other replicas may be: index configs and shard lists,
	// migration phases, list features, shared tables, table specs. Every
	// feature takes this one value. Default store.DefaultCacheTTL (2 s),
	// whose comment says why.
	CacheTTL time.Duration
	// MinFreeBytes is the embedded store's free-space floor, used when
	// Store is nil: while its data directory's file system has fewer
	// bytes available, writes that add data are refused (HTTP 507
	// insufficient_storage) before the disk fills; deletes, drops and the
	// sweeper go on, so expiry can free space. Zero takes 256 MiB;
	// negative turns the floor off.
	MinFreeBytes int64
	// MaxReadPartitions is the read budget of an index: the partitions one
	// read of events visits at most before it answers with what it found
	// and a page token resuming at the next partition
	// (timeseries.Options.MaxPartitions). Zero takes
	// timeseries.DefaultMaxPartitions (256).
	MaxReadPartitions int
	// NoMetering leaves out the meter that counts the request units every
	// store operation would bill on DynamoDB and Keyspaces (package meter;
	// GET /v1/admin/usage). Metering is on by default.
	NoMetering bool
	// SweepExclude, if set, names physical tables whose writes get no
	// expiry-index entry whatever their expiry mode, so the sweeper never
	// deletes from them (expiry.Options.Exclude). The expiry mode of a
	// list feature or shared table ("expiry": "native" or "drop") is the
	// way to choose this per feature; this is for an embedder that knows
	// its physical tables (GET /v1/admin/tables names them). Rows of an
	// excluded table are still hidden on read once expired.
	SweepExclude func(table string) bool
	// NoBackground opens the DB without the shard manager and sweeper
	// loops: for tools that only read or write, beside a server that runs
	// them. Expired rows stay invisible; they are just not deleted.
	NoBackground bool
	// ExpirationsRetention is how long the log of expirations
	// (DB.Expirations) keeps what it recorded. Default 24 h.
	ExpirationsRetention time.Duration
	// NoExpirations leaves the log of expirations out: the sweeper then
	// saves one Get and one log write per removed row (see docs/cost.md),
	// and DB.Expirations answers ErrExpirationsOff.
	NoExpirations bool
}

// DefaultMinFreeBytes is Options.MinFreeBytes's default: room for the
// embedded store to flush its memtables and compact, with a margin.
const DefaultMinFreeBytes = ebbpebble.DefaultMinFreeBytes

// DefaultOptions returns the defaults Open applies to zero fields.
func DefaultOptions() Options {
	return Options{
		Now:               time.Now,
		ReconcileInterval: 30 * time.Second,
		SweepInterval:     time.Second,
		LeaseDuration:     lease.DefaultDuration,
		ReplicaID:         defaultReplicaID(),
		CacheTTL:          store.DefaultCacheTTL,

		ExpirationsRetention: 24 * time.Hour,
	}
}

func defaultReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Now == nil {
		o.Now = d.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ReconcileInterval == 0 {
		o.ReconcileInterval = d.ReconcileInterval
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = d.SweepInterval
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = d.LeaseDuration
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = d.CacheTTL
	}
	if o.ReplicaID == "" {
		o.ReplicaID = d.ReplicaID
	}
	if o.ExpirationsRetention == 0 {
		o.ExpirationsRetention = d.ExpirationsRetention
	}
	return o
}

// Validate reports the first invalid field, as an error wrapping
// store.ErrInvalid. Zero fields are valid (they take their defaults).
func (o Options) Validate() error {
	switch {
	case o.Store == nil && o.Dir == "":
		return store.Errorf(store.ErrInvalid, "ebb: Options needs a Store or a Dir for the embedded store")
	case o.Store != nil && o.Dir != "":
		return store.Errorf(store.ErrInvalid, "ebb: Options has both a Store and a Dir; Dir is only for the embedded store Open creates")
	case o.ReconcileInterval < 0, o.SweepInterval < 0, o.LeaseDuration < 0, o.CacheTTL < 0:
		return store.Errorf(store.ErrInvalid, "ebb: intervals and the lease duration must be positive")
	case o.ExpirationsRetention < 0:
		return store.Errorf(store.ErrInvalid, "ebb: ExpirationsRetention %s is negative", o.ExpirationsRetention)
	case o.MaxReadPartitions < 0:
		return store.Errorf(store.ErrInvalid, "ebb: MaxReadPartitions %d is negative", o.MaxReadPartitions)
	case o.SweepMaxDeletesPerSecond < 0:
		return store.Errorf(store.ErrInvalid, "ebb: SweepMaxDeletesPerSecond %g is negative; zero means unlimited", o.SweepMaxDeletesPerSecond)
	case o.LeaseDuration > 0 && o.LeaseDuration < 100*time.Millisecond:
		return store.Errorf(store.ErrInvalid, "ebb: LeaseDuration %s is below 100ms: renewals could not keep up", o.LeaseDuration)
	}
	return nil
}
