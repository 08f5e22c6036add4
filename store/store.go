package store

import (
	"context"
	"time"
)

// Store is a set of tables: its catalog and its data, as Prometheus's
// storage.Storage composes Appendable and Queryable. See the package
// comment for values, expiry, concurrency and errors, and for the optional
// interfaces a Store may also implement.
type Store interface {
	Catalog
	Data

	// Capabilities reports what this backend can do.
	Capabilities() Capabilities

	// Close releases the Store. It is safe to call more than once; calls
	// after Close return ErrClosed. A decorator closes the Store it wraps.
	Close() error
}

// Catalog is the part of a Store that creates, finds and describes tables.
type Catalog interface {
	// CreateTable creates a table. It is idempotent when a table with an
	// identical spec exists, and returns ErrTableExists when the spec
	// differs. It returns once the table is usable (remote backends wait for
	// it to become active).
	CreateTable(ctx context.Context, spec TableSpec) error

	// DropTable drops a table and every row in it. It is idempotent: dropping
	// a missing table returns nil. After it returns the table is gone from
	// Tables, Spec and queries, and a table created later with the same name
	// starts empty. The embedded backend frees the disk space promptly.
	DropTable(ctx context.Context, name string) error

	// Tables lists the tables whose names start with prefix, sorted by name.
	Tables(ctx context.Context, prefix string) ([]TableInfo, error)

	// Spec returns the spec of one table, or an error wrapping
	// ErrTableNotFound. Its slices are shared with the Store's catalog and
	// must not be modified. A remote backend may answer from its own cache
	// of specs, which a drop or create through the same Store updates at
	// once; a change made by another process is seen once an operation on
	// the table finds it gone.
	Spec(ctx context.Context, name string) (TableSpec, error)

	// SetCapacity changes a table's capacity. Backends without capacity
	// settings record it. A change that would break a provider limit returns
	// ErrCapacityLimit and changes nothing.
	SetCapacity(ctx context.Context, table string, c Capacity) error

	// Stats reports what is physically stored in a table, including expired
	// rows not yet removed. Exact on the embedded backend, an estimate
	// elsewhere.
	Stats(ctx context.Context, table string) (TableStats, error)
}

// Data is the part of a Store that writes and reads rows.
type Data interface {
	// Write applies a batch of mutations to one table. The whole batch is
	// validated first: if any mutation is invalid, nothing is written and the
	// error (wrapping ErrInvalid or ErrTooLarge) names the mutation's index
	// as a *MutationError. Mutations are applied in order, so a later
	// mutation of the same row wins.
	//
	// A batch whose mutations all share one partition is applied atomically
	// when Capabilities().AtomicPartitionBatch is true and the batch has at
	// most Capabilities().MaxAtomicBatch mutations. Otherwise a failed Write
	// may have applied a part of the batch; since mutations are idempotent
	// upserts and deletes, retrying it is safe.
	Write(ctx context.Context, table string, batch []Mutation) error

	// Get returns one live row, or ErrNotFound.
	Get(ctx context.Context, table string, partition, clustering []any) (Row, error)

	// Scan calls fn for each live row of one partition within a clustering
	// range, in the table's clustering order (reversed when q.Reverse), at
	// most q.Limit of them, and returns a page token to resume exactly
	// after the last row handed out. Fewer than Limit rows are handed out
	// only when the range is exhausted (then the token is nil); backends
	// keep reading past expired rows to fill a page. Rows are handed out
	// still encoded (RawRow), so that a hot read path takes what it needs
	// without a Row's allocations; package kit's Query decodes them into a
	// Page. An error from fn stops the scan and is returned. When q.Tally
	// is set, Scan adds what it hands out to it.
	Scan(ctx context.Context, table string, q Query, fn func(*RawRow) error) (next []byte, err error)

	// QueryIndex returns the clustering keys, in clustering order, of the
	// live rows in one partition whose indexed column currently equals
	// value. An index entry left behind by an update, delete or expiry is
	// never returned.
	QueryIndex(ctx context.Context, table, index string, partition []any, value any) ([][]any, error)

	// DeletePartition deletes every row of one partition.
	DeletePartition(ctx context.Context, table string, partition []any) error
}

// DeferredWriter is implemented by backends that log every write in one
// ordered log (the embedded backend). WriteDeferred is Write, except that it
// returns before the batch is durable: the batch becomes durable with the
// next Write that returns nil (from any goroutine), whose sync covers
// everything logged before it. A caller that writes A and then B, and needs
// A durable whenever B is (an index entry before its row), can write A
// deferred and pay for one sync instead of two.
type DeferredWriter interface {
	WriteDeferred(ctx context.Context, table string, batch []Mutation) error
}

// Checkpointer is implemented by backends that can copy their whole
// state, consistently, to a local directory (the embedded backend); remote
// backends have their provider's backups instead.
type Checkpointer interface {
	// Checkpoint writes a consistent copy of the store into dir, which
	// must not exist, and returns the bytes written. Every write
	// acknowledged before the call is in the copy.
	Checkpoint(ctx context.Context, dir string) (int64, error)
}

// HealthReporter is implemented by backends that can tell, without a round
// trip, that they are unhealthy: they cannot accept writes any more (the
// embedded backend after a disk fault), or some of their data cannot be
// read back (the embedded backend after it found a corrupt block). Health
// returns nil when healthy, otherwise an error wrapping ErrStorageFault
// that says why.
type HealthReporter interface {
	Health() error
}

// MutationKind says what a Mutation does.
type MutationKind uint8

// Mutation kinds.
const (
	// Upsert writes the given cells and (re)writes the row marker. Columns
	// not named are left as they are.
	Upsert MutationKind = iota
	// DeleteRow deletes the row and all its cells.
	DeleteRow
	// DeleteCells deletes the named value columns of a row.
	DeleteCells
	// DeleteIfExpired deletes the row only if, when the write is applied,
	// the row has no live content (its marker and every cell are expired).
	// A row whose expiry was extended or removed survives. This is the
	// physical delete the expiry sweeper issues; it is atomic with respect
	// to concurrent upserts of the same row.
	DeleteIfExpired
)

// Mutation is one change to one row.
type Mutation struct {
	Kind       MutationKind
	Partition  []any
	Clustering []any
	// Cells to write (Upsert) or column names to delete (DeleteCells; only
	// Column is read).
	Cells []Cell
	// ExpiresAt is the row's expiry for Upsert: it applies to the row marker
	// and to every cell without an expiry of its own. Zero means the table's
	// DefaultTTL from now, or none when the table has none. It must be after
	// the zero time; an expiry at or before now writes a row that is already
	// invisible.
	ExpiresAt time.Time
	// NoExpiry, for Upsert, overrides the table default TTL: the row and its
	// cells without their own expiry never expire.
	NoExpiry bool
	// Expiry says how the row is physically removed once expired (see
	// ExpiryMode); the zero mode is swept. The expiry decorator indexes
	// only the upserts and cell deletes of a swept mode, and a remote
	// backend writes no native TTL for an ExpiryDrop upsert. A backend
	// never refuses a mode here: whoever chose it checked it with
	// CheckExpiryMode.
	Expiry ExpiryMode
	// If, when set, makes the mutation conditional: it is applied only when
	// the condition holds for the row's live content at the moment the
	// write is applied, atomically with respect to every other writer of
	// that row (on every replica). When it does not hold, Write returns an
	// error wrapping ErrConflict and writes nothing. A conditional mutation
	// may be an Upsert, DeleteRow or DeleteCells, and must be the only
	// mutation of its batch, unless Capabilities().GuardedBatch: then a
	// batch holds at most one, among unconditional mutations of any
	// partitions, and is applied whole when the condition holds (evaluated
	// after the batch's earlier mutations) or not at all.
	If *Condition
}

// ConditionKind says what a Condition checks.
type ConditionKind uint8

// Condition kinds. Each is evaluated against the row's live content only:
// an expired row or cell counts as absent.
const (
	// IfAbsent holds when the row has no live content.
	IfAbsent ConditionKind = iota + 1
	// IfExists holds when the row has live content.
	IfExists
	// IfEquals holds when the live value of Column equals Value (an absent
	// or expired cell never equals anything).
	IfEquals
)

// Condition guards a Mutation; see Mutation.If. It maps onto a DynamoDB
// ConditionExpression, a CQL IF clause, and a read inside the embedded
// backend's write lock.
type Condition struct {
	Kind   ConditionKind
	Column string
	Value  any
}

// Cell is one value column of a row.
type Cell struct {
	Column string
	Value  any
	// ExpiresAt overrides the row expiry for this cell. Zero means the row's.
	ExpiresAt time.Time
}

// Row is one row as read.
type Row struct {
	Partition  []any
	Clustering []any
	// Values holds one entry per value column, in TableSpec.Values order;
	// nil where the cell is absent or expired.
	Values []any
	// ExpiresAt is the row marker's expiry; zero when it has none.
	ExpiresAt time.Time
}

// Bound is one end of a clustering range, in the natural order of the
// clustering values (ascending, whatever the clustering order). Values may be
// a prefix of the clustering columns: an inclusive bound then includes every
// row with that prefix, an exclusive one excludes them all. A nil Values
// means unbounded.
type Bound struct {
	Values    []any
	Inclusive bool
}

// Query selects rows of one partition.
type Query struct {
	Partition []any
	// Low and High bound the clustering values, Low <= High in natural order.
	Low, High Bound
	// Reverse returns rows in the reverse of the clustering order.
	Reverse bool
	// Limit is the most rows to return: 1..MaxLimit.
	Limit int
	// PageToken resumes after the last row of a previous page. It is opaque
	// and valid only for the same table, partition, range and direction;
	// a malformed token returns ErrInvalid.
	PageToken []byte
	// Tally, when set, is added to by Scan for each row it hands out, so
	// that a metering decorator learns what a read returned without
	// wrapping fn; the embedded backend adds up as it builds each row.
	Tally *ScanTally
}

// MaxLimit is the largest Query.Limit.
const MaxLimit = 10000

// DefaultLimit is the page size of a read that gives none (a zero Limit):
// the same for the library's features and for the HTTP API, so that a
// query reads the same page whether it is made in process or through a
// server.
const DefaultLimit = 100

// Page is one page of query results.
type Page struct {
	Rows []Row
	// NextPageToken is nil when the range is exhausted.
	NextPageToken []byte
}

// CapacityMode is a table's throughput mode.
type CapacityMode uint8

// Capacity modes. The zero mode is on-demand.
const (
	OnDemand CapacityMode = iota
	Provisioned
)

func (m CapacityMode) String() string {
	if m == Provisioned {
		return "provisioned"
	}
	return "on_demand"
}

// Capacity is a table's throughput setting.
type Capacity struct {
	Mode CapacityMode
	// ReadUnits and WriteUnits apply to Provisioned.
	ReadUnits, WriteUnits int64
	// WarmRead and WarmWrite, where the backend has warm throughput
	// (DynamoDB, Amazon Keyspaces), pre-warm an on-demand table to this
	// many units per second. Zero leaves warm throughput unchanged.
	WarmRead, WarmWrite int64
}

// TableState is a table's lifecycle state.
type TableState uint8

// Table states.
const (
	Active TableState = iota
	Creating
	Deleting
)

func (s TableState) String() string {
	switch s {
	case Creating:
		return "creating"
	case Deleting:
		return "deleting"
	}
	return "active"
}

// TableInfo describes a table.
type TableInfo struct {
	Spec     TableSpec
	State    TableState
	Capacity Capacity
	// Switches are the capacity-mode switches the backend recorded that
	// its Capabilities().Switches count, oldest first; nil where it keeps
	// none.
	Switches []time.Time
	// Class is the table's class where the backend has classes
	// (Capabilities().Classes); "" is the provider's default class.
	Class TableClass
	// ClassChanges are the class changes the backend recorded that its
	// Capabilities().Classes count, oldest first; nil where it keeps none.
	ClassChanges []time.Time
}

// TableStats is what is physically stored in a table.
type TableStats struct {
	Rows  int64
	Bytes int64
	// Exact is false when the figures are estimates.
	Exact bool
}

// Capabilities reports what a backend can do.
type Capabilities struct {
	// Backend names the backend ("pebble", "dynamodb", "cql").
	Backend string
	// AtomicPartitionBatch: a Write whose mutations share one partition
	// and number at most MaxAtomicBatch is all-or-nothing.
	AtomicPartitionBatch bool
	MaxAtomicBatch       int
	// GuardedBatch: a batch may carry one conditional mutation (see
	// Mutation.If) among unconditional ones, of any partitions and any
	// number, and is all-or-nothing: applied whole when the condition
	// holds, otherwise ErrConflict and nothing written. A row and the rows
	// that must land with it then cost one write instead of several.
	GuardedBatch bool
	// MaxRowBytes bounds one row's stored size (keys, values and
	// metadata); larger writes return ErrTooLarge.
	MaxRowBytes int
	// NativeTTL: the backend also removes expired rows on its own.
	NativeTTL bool
	// WarmThroughput: SetCapacity honours WarmRead/WarmWrite.
	WarmThroughput bool
	// Switches are the provider's limits on capacity-mode switches, which
	// SetCapacity enforces and the shard manager plans around; the zero
	// value limits nothing.
	Switches SwitchRules
	// Classes are the provider's limits on table-class changes; the zero
	// value: tables have no classes, and the store has no ClassSetter.
	Classes ClassRules
	// DeleteBatch is the best number of deletes per Write.
	DeleteBatch int
	// DropKeepsSnapshot: the backend keeps a copy of a dropped table on
	// disk by default (Cassandra's and ScyllaDB's auto_snapshot), so a
	// drop frees no space until an operator clears it.
	DropKeepsSnapshot bool
	// SharedAcrossProcesses: several processes may open the same data
	// (DynamoDB, CQL), so background roles run under a lease. False for
	// the embedded backend, which one process holds by its directory lock.
	SharedAcrossProcesses bool
}
