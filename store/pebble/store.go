package pebble

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/RaduBerinde/btreemap"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ebb-data/ebb/store"
)

var _ store.Store = (*Store)(nil)

// Options configures Open. The zero value is valid.
type Options struct {
	// Now is the clock for read-resolved expiry and default TTLs. Nil means
	// time.Now.
	Now func() time.Time
	// FS is the file system; nil means the operating system's. Tests use
	// vfs.NewMem().
	FS vfs.FS
	// NoSync, when true, acknowledges writes (and catalog changes) before
	// they reach stable storage. The default (false) syncs every Write,
	// CreateTable, DropTable and SetCapacity before returning, so what was
	// acknowledged survives a crash.
	NoSync bool
	// CacheSize is the bytes of sstable blocks the block cache holds; 0
	// means 64 MiB. Pebble charges its memtables against the block cache
	// (up to two of MemTableSize before it stalls writes), so Open makes
	// the cache that much larger: the memtables cannot squeeze the blocks
	// out. Memory in use is about CacheSize plus two memtables.
	CacheSize int64
	// MemTableSize is the largest memtable in bytes; 0 means 64 MiB
	// (Pebble's own default is 4 MiB). Larger memtables flush, and stall
	// writers, less often: with 64 writers adding to lists, 64 MiB gave
	// 1.3 to 1.8 times the throughput of 4 MiB (docs/performance.md).
	MemTableSize int64
	// Logger receives Pebble's and the backend's log lines; nil discards.
	Logger *slog.Logger
	// MinFreeBytes is the free-space floor: while the data directory's
	// file system has fewer bytes available, writes that add data are
	// refused with store.ErrInsufficientStorage, before Pebble runs out
	// of room for its flushes and compactions. Deletes, drops and ebb's
	// metadata writes pass. Zero means DefaultMinFreeBytes (256 MiB);
	// negative turns the floor off.
	MinFreeBytes int64
}

// MaxRowBytes is the largest row the embedded backend accepts.
const MaxRowBytes = 4 << 20

// Store is the embedded backend. It is safe for concurrent use.
type Store struct {
	db   *pebble.DB
	lock *pebble.Lock
	now  func() time.Time
	wo   *pebble.WriteOptions
	log  *slog.Logger

	// mu guards the catalog. Write holds it shared through its commit, so
	// DropTable (exclusive) never races a write into a dropped table's range.
	mu     sync.RWMutex
	tables map[string]*table
	// byName holds the same tables in name order, so that Tables(prefix)
	// visits only the tables under prefix: listing one index's shards
	// does not walk a catalog of 100,000 tables.
	byName *btreemap.BTreeMap[string, *table]
	nextID uint64
	closed bool

	// rows orders the writes that read a row first (conditional mutations,
	// DeleteIfExpired) against every other write of the same row.
	rows *rowLocks

	// guard refuses writes after a disk fault and below the free-space
	// floor (health.go).
	guard guard
	// corruption remembers the files Pebble found corrupt (corruption.go).
	corruption corruption
	// stalls counts Pebble's write stalls (metrics.go).
	stalls stallTracker

	// dir, popts and cacheBytes reopen the database when it recovers
	// from a full disk (recover.go); rec runs that recovery.
	dir        string
	popts      *pebble.Options
	cacheBytes int64
	rec        recovery

	// gens counts the writes to each partition, for the readers that keep
	// answers (generation.go).
	gens *generations
	bg   bgErrors
}

type table struct {
	ID       uint64          `json:"id"`
	Spec     store.TableSpec `json:"spec"`
	Capacity store.Capacity  `json:"capacity"`
	Dropping bool            `json:"dropping,omitempty"`
	prefix   []byte
}

// Catalog keys live under table ID 0.
var (
	catalogPrefix = []byte("\x00\x00\x00\x00\x00\x00\x00\x00T")
	nextIDKey     = []byte("\x00\x00\x00\x00\x00\x00\x00\x00N")
)

// Open opens (creating if needed) the store in dir. It fails at once with an
// error wrapping store.ErrLocked when another process has dir open.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.MemTableSize == 0 {
		opts.MemTableSize = DefaultMemTableSize
	}
	if opts.MinFreeBytes == 0 {
		opts.MinFreeBytes = DefaultMinFreeBytes
	}
	if err := opts.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pebble: create %s: %w", dir, err)
	}
	lock, err := pebble.LockDirectory(dir, opts.FS)
	if err != nil {
		// Only a lock held elsewhere is ErrLocked; a permission or I/O
		// error says what it is.
		if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN) || strings.Contains(err.Error(), "lock held") {
			return nil, fmt.Errorf("open %s: %w (%v)", dir, store.ErrLocked, err)
		}
		return nil, fmt.Errorf("pebble: lock %s: %w", dir, err)
	}
	s := &Store{now: opts.Now, log: opts.Logger, tables: map[string]*table{}, byName: btreemap.New[string, *table](32, strings.Compare), wo: pebble.Sync, rows: newRowLocks(), gens: newGenerations(), lock: lock}
	s.guard.fs, s.guard.dir, s.guard.minFree = opts.FS, dir, opts.MinFreeBytes
	s.guard.free.Store(-1)
	if opts.NoSync {
		s.wo = pebble.NoSync
	}
	s.dir, s.cacheBytes = dir, cacheBytes(opts.CacheSize, opts.MemTableSize)
	cache := pebble.NewCache(s.cacheBytes)
	defer cache.Unref()
	popts := &pebble.Options{
		FS:                          opts.FS,
		Lock:                        lock,
		Cache:                       cache,
		Merger:                      rowMerger,
		MemTableSize:                uint64(opts.MemTableSize),
		MemTableStopWritesThreshold: memTableStopWrites,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      slogLogger{opts.Logger},
		EventListener:               s.eventListener(),
	}
	db, err := pebble.Open(dir, popts)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("pebble: open %s: %w", dir, err)
	}
	s.db, s.popts = db, popts
	if err := s.loadCatalog(); err != nil {
		s.Close()
		return nil, err
	}
	s.startRecovery()
	return s, nil
}

func (s *Store) loadCatalog() error {
	if v, closer, err := s.db.Get(nextIDKey); err == nil {
		s.nextID = binary.BigEndian.Uint64(v)
		closer.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("pebble: read catalog: %w", err)
	}
	if s.nextID == 0 {
		s.nextID = 1
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: catalogPrefix, UpperBound: prefixEnd(catalogPrefix)})
	if err != nil {
		return err
	}
	var dropping []*table
	for it.First(); it.Valid(); it.Next() {
		t := &table{}
		if err := json.Unmarshal(it.Value(), t); err != nil {
			it.Close()
			return fmt.Errorf("pebble: catalog entry %q: %w", it.Key(), err)
		}
		t.prefix = tablePrefix(t.ID)
		if t.Dropping {
			dropping = append(dropping, t)
			continue
		}
		s.tables[t.Spec.Name] = t
		s.byName.ReplaceOrInsert(t.Spec.Name, t)
	}
	if err := it.Close(); err != nil {
		return err
	}
	// Finish drops that a crash interrupted.
	for _, t := range dropping {
		if err := s.excise(t); err != nil {
			return err
		}
	}
	return nil
}

// DB returns the underlying Pebble database, for baselines in benchmarks.
func (s *Store) DB() *pebble.DB { return s.db }

// Close closes the store; it is safe to call twice.
func (s *Store) Close() error {
	s.stopRecovery()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.db.Close()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// Capabilities reports what the embedded backend does.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{
		Backend:              "pebble",
		AtomicPartitionBatch: true,
		MaxAtomicBatch:       1 << 30,
		GuardedBatch:         true,
		MaxRowBytes:          MaxRowBytes,
		DeleteBatch:          1000,
	}
}

func tablePrefix(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

func prefixEnd(p []byte) []byte {
	return appendPrefixEnd(nil, p)
}

// appendPrefixEnd appends prefixEnd(p) to dst[:0]'s memory and returns it
// (nil for a prefix of 0xFF bytes only, as prefixEnd).
func appendPrefixEnd(dst, p []byte) []byte {
	end := append(dst[:0], p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func catalogKey(name string) []byte { return append(append([]byte(nil), catalogPrefix...), name...) }

// lookup returns the table; the caller holds s.mu.
func (s *Store) lookup(name string) (*table, error) {
	if s.closed {
		return nil, store.ErrClosed
	}
	t, ok := s.tables[name]
	if !ok {
		return nil, store.Errorf(store.ErrTableNotFound, "%q", name)
	}
	return t, nil
}

// CreateTable creates a table; see store.Store.
func (s *Store) CreateTable(ctx context.Context, spec store.TableSpec) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	if t, ok := s.tables[spec.Name]; ok {
		if t.Spec.Equal(spec) {
			return nil
		}
		return store.Errorf(store.ErrTableExists, "%q", spec.Name)
	}
	t := &table{ID: s.nextID, Spec: spec, prefix: tablePrefix(s.nextID)}
	doc, err := json.Marshal(t)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(nextIDKey, binary.BigEndian.AppendUint64(nil, s.nextID+1), nil)
	_ = b.Set(catalogKey(spec.Name), doc, nil)
	if err := s.admit(spec.Name, false); err != nil {
		return err
	}
	if err := s.commit(b, s.wo, func() {}); err != nil {
		return fmt.Errorf("create %s: %w", spec.Name, err)
	}
	s.nextID++
	s.tables[spec.Name] = t
	s.byName.ReplaceOrInsert(spec.Name, t)
	return nil
}

// DropTable drops a table and frees its space at once by excising its key
// range; see store.Store.
func (s *Store) DropTable(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	t, ok := s.tables[name]
	if !ok {
		return nil
	}
	// Record the drop first so a crash mid-way is finished at the next Open
	// rather than leaving an orphaned key range.
	if err := s.admit(name, false); err != nil {
		return err
	}
	t.Dropping = true
	doc, _ := json.Marshal(t)
	if err := s.set(catalogKey(name), doc, s.wo); err != nil {
		t.Dropping = false
		return fmt.Errorf("drop %s: %w", name, err)
	}
	delete(s.tables, name)
	s.byName.Delete(name)
	return s.excise(t)
}

// set writes one key through commit, so that a fault of the write-ahead
// log is returned (and recorded) rather than fatal to Pebble.
func (s *Store) set(key, value []byte, wo *pebble.WriteOptions) error {
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(key, value, nil)
	return s.commit(b, wo, func() {})
}

func (s *Store) excise(t *table) error {
	span := pebble.KeyRange{Start: t.prefix, End: prefixEnd(t.prefix)}
	if err := s.db.Excise(context.Background(), span); err != nil {
		// The catalog still says Dropping: the next Open finishes the drop.
		err = fmt.Errorf("drop %s: excise: %w", t.Spec.Name, err)
		s.fail(err)
		return store.Wrapf(store.ErrStorageFault, err, "the disk failed a write")
	}
	// Unsynced: if this delete is lost in a crash, the entry still says
	// Dropping and the next Open excises the (already empty) range again.
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Delete(catalogKey(t.Spec.Name), nil)
	if err := s.commit(b, pebble.NoSync, func() {}); err != nil {
		return fmt.Errorf("drop %s: %w", t.Spec.Name, err)
	}
	return nil
}

// Tables lists tables; see store.Store.
func (s *Store) Tables(ctx context.Context, prefix string) ([]store.TableInfo, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	var out []store.TableInfo
	s.byName.AscendFunc(btreemap.GE(prefix), btreemap.Max[string](), func(name string, t *table) bool {
		if !strings.HasPrefix(name, prefix) {
			return false
		}
		out = append(out, store.TableInfo{Spec: t.Spec, Capacity: t.Capacity, State: store.Active})
		return true
	})
	return out, nil
}

// Spec returns a table's spec from the catalog; see store.Catalog.
func (s *Store) Spec(ctx context.Context, name string) (store.TableSpec, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, err := s.lookup(name)
	if err != nil {
		return store.TableSpec{}, err
	}
	return t.Spec, nil
}

// SetCapacity records the capacity setting; the embedded backend has no
// throughput to change.
func (s *Store) SetCapacity(ctx context.Context, name string, c store.Capacity) error {
	if c.Mode == store.Provisioned && (c.ReadUnits <= 0 || c.WriteUnits <= 0) {
		return store.Errorf(store.ErrInvalid, "provisioned capacity needs positive read and write units")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookup(name)
	if err != nil {
		return err
	}
	next := *t
	next.Capacity = c
	doc, _ := json.Marshal(&next)
	if err := s.admit(name, false); err != nil {
		return err
	}
	if err := s.set(catalogKey(name), doc, s.wo); err != nil {
		return fmt.Errorf("set capacity %s: %w", name, err)
	}
	t.Capacity = c
	return nil
}
