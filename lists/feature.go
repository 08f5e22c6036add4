package lists

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/store"
)

// Meta kinds owned by this package.
const (
	// kindFeature documents are keyed by metaKey(id).
	kindFeature = "list_feature"
	// kindTable documents are keyed by table name and hold the metaKey of
	// the feature that owns the name.
	kindTable = "list_table"
)

// Schema names of a feature table.
const (
	colEntity  = "entity_id"
	colItemKey = "item_key"
	colValue   = "value"
	ixByValue  = "by_value"
)

// maxMetaKeyBytes keeps the meta key within store.MaxKeyBytes once
// encoded, whatever JSON escaping does to control characters.
const maxMetaKeyBytes = 1000

// maxCandidates bounds the table names tried for one feature. A second
// candidate is needed only on a 128-bit hash collision.
const maxCandidates = 8

// FeatureID names a list feature version. Every field may hold any valid
// UTF-8, including '#', '|', '/' and NUL, up to MaxNameBytes bytes;
// EntityType and Feature must not be empty, Version "" is the default version.
type FeatureID struct {
	EntityType string
	Feature    string
	Version    string
}

func (id FeatureID) String() string {
	return fmt.Sprintf("list feature (entity type %q, feature %q, version %q)", id.EntityType, id.Feature, id.Version)
}

// Feature is a list feature version as recorded in the meta table.
type Feature struct {
	FeatureID
	// TTL is how long after its timestamp an item lives.
	TTL time.Duration
	// Table is the name of the table holding the version's items.
	Table string
	// Created is when the version was created, on the Service's clock,
	// to the millisecond as every stored time.
	Created time.Time
	// Expiry is how the version's expired items leave the disk (see
	// store.ExpiryMode); never store.ExpiryDefault once created.
	Expiry store.ExpiryMode
	// MaxItems, when positive, is the most live items a list of the
	// version holds: an Add that would make a list longer deletes its
	// oldest items beyond MaxItems (see Add). Zero sets no cap.
	MaxItems int
	// MaxTTL is the longest TTL the version has had: an item added under
	// an earlier, longer TTL keeps it, so reads look back this far (and
	// the store hides each item at its own expiry). It equals TTL unless
	// the TTL was shortened and no rewrite (FeatureConfig.Rewrite) has
	// ended since.
	MaxTTL time.Duration
}

// FeatureConfig is what CreateFeatureWith sets.
type FeatureConfig struct {
	// TTL is how long after its timestamp an item lives. Another TTL for
	// an existing version changes it for the items added from then on:
	// items already added keep the expiry they were added with.
	TTL time.Duration
	// Expiry is the version's expiry mode. store.ExpiryDefault gives a new
	// version store.DefaultExpiryMode of the backend and keeps an existing
	// version's mode. Another mode for an existing version changes it for
	// the items written from then on: items already written keep the
	// removal they were written with (see docs/api.md).
	Expiry store.ExpiryMode
	// MaxItems, when set, is the version's cap on a list's live items
	// (Feature.MaxItems), 0..MaxMaxItems, zero for none. Nil gives a new
	// version no cap and keeps an existing version's. Another cap for an
	// existing version applies from the next Add to each list: a list
	// longer than a lowered cap is trimmed then, not at once.
	MaxItems *int
	// Rewrite asks that the items an existing version already holds get
	// its TTL too: each the expiry timestamp + TTL, by a background job
	// (see Service.Rewrite). Without it they keep the expiry they were
	// added with. A new version has nothing to rewrite.
	Rewrite bool
}

// featureDoc is the meta document of a feature.
type featureDoc struct {
	EntityType string    `json:"entity_type"`
	Name       string    `json:"feature"`
	Version    string    `json:"version"`
	TTL        string    `json:"ttl"`
	Table      string    `json:"table"`
	Created    time.Time `json:"created"`
	// Expiry is empty in records written before modes existed, whose
	// items are swept.
	Expiry string `json:"expiry,omitempty"`
	// MaxItems is absent in records of versions without a cap.
	MaxItems int `json:"max_items,omitempty"`
	// MaxTTL is Feature.MaxTTL, absent while it equals TTL.
	MaxTTL string `json:"max_ttl,omitempty"`
}

// Service serves list features and items on a Store. It is safe for
// concurrent use.
type Service struct {
	st       store.Store
	meta     store.Meta
	caps     store.Capabilities
	now      func() time.Time
	log      *slog.Logger
	cacheTTL time.Duration
	m        *metrics
	// rewriteStarted, if set, is told of each rewrite job recorded here.
	rewriteStarted func()
	rewriteBatch   int

	mu    sync.RWMutex
	cache map[FeatureID]cachedFeature
}

type cachedFeature struct {
	f      Feature
	loaded time.Time
}

// New returns a Service on st, creating the meta table if needed. Pass the
// store wrapped by the expiry decorator so that expired items are removed
// physically, not only hidden.
func New(ctx context.Context, st store.Store, opts Options) (*Service, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Service{
		st:       st,
		meta:     store.Meta{S: st},
		caps:     st.Capabilities(),
		now:      opts.Now,
		log:      opts.Logger,
		cacheTTL: opts.CacheTTL,
		m:        m,
		cache:    map[FeatureID]cachedFeature{},

		rewriteStarted: opts.RewriteStarted,
		rewriteBatch:   opts.RewriteBatch,
	}
	if err := s.meta.Ensure(ctx); err != nil {
		return nil, fmt.Errorf("lists: create meta table: %w", err)
	}
	return s, nil
}

func checkName(what, s string, allowEmpty bool) error {
	switch {
	case s == "" && !allowEmpty:
		return store.Errorf(store.ErrInvalid, "%s is empty", what)
	case len(s) > MaxNameBytes:
		return store.Errorf(store.ErrInvalid, "%s is %d bytes, at most %d", what, len(s), MaxNameBytes)
	case !utf8.ValidString(s):
		return store.Errorf(store.ErrInvalid, "%s is not valid UTF-8", what)
	}
	return nil
}

// metaKey validates id and returns its meta key: the JSON array of its three
// names. JSON quoting makes the key unambiguous for any valid UTF-8, which
// separator-joined strings ("type#feature|version") are not.
func metaKey(id FeatureID) (string, error) {
	if err := checkName("entity type", id.EntityType, false); err != nil {
		return "", err
	}
	if err := checkName("feature name", id.Feature, false); err != nil {
		return "", err
	}
	if err := checkName("version", id.Version, true); err != nil {
		return "", err
	}
	b, err := json.Marshal([3]string{id.EntityType, id.Feature, id.Version})
	if err != nil {
		return "", store.Errorf(store.ErrInvalid, "%v", err)
	}
	if len(b) > maxMetaKeyBytes {
		return "", store.Errorf(store.ErrInvalid, "entity type, feature name and version are too long together (%d bytes quoted, at most %d)", len(b), maxMetaKeyBytes)
	}
	return string(b), nil
}

// tablePrefix begins the name of every feature table.
const tablePrefix = "list_"

// candidateName is the i-th table name tried for a feature's meta key.
func candidateName(key string, i int) string {
	in := key
	if i > 0 {
		in += "\x00" + strconv.Itoa(i)
	}
	sum := sha256.Sum256([]byte(in))
	return tablePrefix + hex.EncodeToString(sum[:16])
}

// TableSpec returns the schema of a feature table.
func TableSpec(name string, ttl time.Duration) store.TableSpec {
	return store.TableSpec{
		Name:            name,
		PartitionKey:    []store.Column{{Name: colEntity, Type: store.TypeText}},
		Clustering:      []store.Column{{Name: colItemKey, Type: store.TypeText}},
		ClusteringOrder: store.Desc,
		Values:          []store.Column{{Name: colValue, Type: store.TypeBytes}},
		DefaultTTL:      ttl,
		Indexes:         []store.IndexSpec{{Name: ixByValue, Column: colValue}},
	}
}

func checkTTL(ttl time.Duration) error {
	if ttl <= 0 || ttl%time.Millisecond != 0 {
		return store.Errorf(store.ErrInvalid, "TTL %s must be a positive whole number of milliseconds", durfmt.Format(ttl))
	}
	return nil
}

// CreateFeature creates a list feature version with a TTL and the
// backend's default expiry mode. It is
// idempotent: when the version exists with the same TTL it returns it with
// created false; with another TTL it changes the version's TTL for the
// items added from then on (items already added keep their expiry) and
// returns it with created false.
func (s *Service) CreateFeature(ctx context.Context, id FeatureID, ttl time.Duration) (f Feature, created bool, err error) {
	return s.CreateFeatureWith(ctx, id, FeatureConfig{TTL: ttl})
}

// CreateFeatureWith is CreateFeature with an expiry mode (see
// FeatureConfig.Expiry): an existing version with another TTL or another
// mode gets the new ones, with created false. A mode the backend cannot
// honour is refused with store.ErrNativeTTLUnsupported. A change races
// safely with another process's: it is a compare-and-swap of the version's
// record, and a lost race is ErrFeatureConflict.
//
// With cfg.Rewrite, the items an existing version already holds get the
// expiry the version's TTL gives new items too, by a background job
// (RewriteJob, see Rewrite) that starts once the change is recorded; a
// backend that cannot run it refuses the request with
// ErrRewriteUnsupported before anything is written.
func (s *Service) CreateFeatureWith(ctx context.Context, id FeatureID, cfg FeatureConfig) (Feature, bool, error) {
	if cfg.Rewrite {
		if err := s.checkRewrite(); err != nil {
			return Feature{}, false, fmt.Errorf("%s: %w", id, err)
		}
	}
	f, created, err := s.createFeature(ctx, id, cfg)
	if err != nil || created || !cfg.Rewrite {
		return f, created, err
	}
	if _, err := s.startRewrite(ctx, f); err != nil {
		return Feature{}, false, err
	}
	return f, false, nil
}

func (s *Service) createFeature(ctx context.Context, id FeatureID, cfg FeatureConfig) (f Feature, created bool, err error) {
	ttl := cfg.TTL
	key, err := metaKey(id)
	if err != nil {
		return Feature{}, false, err
	}
	if err := checkTTL(ttl); err != nil {
		return Feature{}, false, err
	}
	if err := store.CheckExpiryMode(s.caps, cfg.Expiry); err != nil {
		return Feature{}, false, fmt.Errorf("%s: %w", id, err)
	}
	if err := checkMaxItems(cfg.MaxItems); err != nil {
		return Feature{}, false, err
	}
	existing := func(f Feature) (Feature, bool, error) {
		mode := f.Expiry
		if cfg.Expiry != store.ExpiryDefault {
			mode = cfg.Expiry
		}
		if f.TTL != ttl || mode != f.Expiry || cfg.MaxItems != nil && *cfg.MaxItems != f.MaxItems {
			return s.change(ctx, f, key, ttl, mode, cfg.MaxItems)
		}
		s.remember(f)
		return f, false, nil
	}
	mode := cfg.Expiry
	if mode == store.ExpiryDefault {
		mode = store.DefaultExpiryMode(s.caps)
	}
	f, err = s.readFeature(ctx, id, key)
	if err == nil {
		return existing(f)
	}
	if !errors.Is(err, ErrFeatureNotFound) {
		return Feature{}, false, err
	}
	name, err := s.claimTable(ctx, key)
	if err != nil {
		return Feature{}, false, fmt.Errorf("create %s: %w", id, err)
	}
	// The table comes first and the feature record last: a crash in
	// between leaves a table that the next CreateFeature adopts (same TTL)
	// or DeleteFeatureVersion drops, never a feature without its table.
	if err := s.st.CreateTable(ctx, TableSpec(name, ttl)); err != nil {
		if !errors.Is(err, store.ErrTableExists) {
			return Feature{}, false, fmt.Errorf("create %s: %w", id, err)
		}
		// The table exists with another default TTL: another process
		// created this version with another TTL, just now or in a create
		// that was interrupted before recording it.
		if f, rerr := s.readFeature(ctx, id, key); rerr == nil {
			return existing(f)
		}
		return Feature{}, false, store.Errorf(ErrFeatureConflict, "%s: its table %s exists with another TTL (a concurrent or interrupted create; delete the version and retry)", id, name)
	}
	f = Feature{FeatureID: id, TTL: ttl, Table: name, Created: s.now().UTC().Truncate(time.Millisecond), Expiry: mode, MaxTTL: ttl}
	if cfg.MaxItems != nil {
		f.MaxItems = *cfg.MaxItems
	}
	doc, err := json.Marshal(docOf(f))
	if err != nil {
		return Feature{}, false, err
	}
	// Only if still absent: a concurrent create of the same version on
	// another process either recorded first (and its TTL decides) or
	// loses to this one.
	if err := s.meta.CompareAndSwap(ctx, kindFeature, key, nil, doc); errors.Is(err, store.ErrConflict) {
		if f, rerr := s.readFeature(ctx, id, key); rerr == nil {
			return existing(f)
		}
		return Feature{}, false, fmt.Errorf("create %s: record: %w", id, err)
	} else if err != nil {
		return Feature{}, false, fmt.Errorf("create %s: record: %w", id, err)
	}
	s.remember(f)
	s.log.Info("list feature created", "entity_type", id.EntityType, "feature", id.Feature, "version", id.Version, "ttl", ttl, "expiry", mode, "max_items", f.MaxItems, "table", name)
	return f, true, nil
}

// docOf is f's meta document.
func docOf(f Feature) featureDoc {
	d := featureDoc{
		EntityType: f.EntityType, Name: f.Feature, Version: f.Version,
		TTL: f.TTL.String(), Table: f.Table, Created: f.Created, Expiry: f.Expiry.String(),
		MaxItems: f.MaxItems,
	}
	if f.MaxTTL > f.TTL {
		d.MaxTTL = f.MaxTTL.String()
	}
	return d
}

// change records a new TTL, expiry mode or cap (maxItems, when set) for an
// existing version, by a compare-and-swap against the record f was read
// from, so that a concurrent delete or change is not overwritten. Items
// written before keep their expiry and their removal (an index entry, a
// native TTL, or neither); MaxTTL keeps the longest TTL they may have, for
// reads; a list longer than a new cap is trimmed by its next Add.
func (s *Service) change(ctx context.Context, f Feature, key string, ttl time.Duration, mode store.ExpiryMode, maxItems *int) (Feature, bool, error) {
	s.forget(f.FeatureID)
	defer s.forget(f.FeatureID)
	old, err := s.meta.Get(ctx, kindFeature, key)
	if err != nil {
		return Feature{}, false, fmt.Errorf("change %s: %w", f.FeatureID, err)
	}
	cur, err := parseFeature(f.FeatureID, old)
	if err != nil {
		return Feature{}, false, err
	}
	if cur.TTL != f.TTL || cur.Table != f.Table || cur.Expiry != f.Expiry {
		return Feature{}, false, store.Errorf(ErrFeatureConflict, "%s changed concurrently; try again", f.FeatureID)
	}
	from := cur
	cur.Expiry, cur.TTL, cur.MaxTTL = mode, ttl, max(cur.MaxTTL, ttl)
	if maxItems != nil {
		cur.MaxItems = *maxItems
	}
	doc, err := json.Marshal(docOf(cur))
	if err != nil {
		return Feature{}, false, err
	}
	if err := s.meta.CompareAndSwap(ctx, kindFeature, key, old, doc); errors.Is(err, store.ErrConflict) {
		return Feature{}, false, store.Errorf(ErrFeatureConflict, "%s changed concurrently; try again", f.FeatureID)
	} else if err != nil {
		return Feature{}, false, fmt.Errorf("change %s: %w", f.FeatureID, err)
	}
	s.log.Info("list feature changed", "entity_type", f.EntityType, "feature", f.Feature, "version", f.Version,
		"ttl_from", from.TTL, "ttl", ttl, "expiry_from", from.Expiry, "expiry", mode, "max_items_from", from.MaxItems, "max_items", cur.MaxItems)
	return cur, false, nil
}

// claimTable returns the table name of the feature with meta key key,
// recording the claim. A name owned by another feature (a hash collision)
// is skipped for the next candidate.
func (s *Service) claimTable(ctx context.Context, key string) (string, error) {
	for i := range maxCandidates {
		name := candidateName(key, i)
		owner, err := s.meta.Get(ctx, kindTable, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			if err := s.meta.Put(ctx, kindTable, name, []byte(key)); err != nil {
				return "", fmt.Errorf("claim table %s: %w", name, err)
			}
			return name, nil
		case err != nil:
			return "", fmt.Errorf("claim table %s: %w", name, err)
		case string(owner) == key:
			return name, nil
		}
		s.log.Warn("list feature table name collision; trying the next candidate", "table", name)
	}
	return "", fmt.Errorf("lists: no free table name after %d candidates", maxCandidates)
}

// ownedTable finds the table claimed for key, if any.
func (s *Service) ownedTable(ctx context.Context, key string) (string, bool, error) {
	for i := range maxCandidates {
		name := candidateName(key, i)
		owner, err := s.meta.Get(ctx, kindTable, name)
		switch {
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
			return "", false, nil
		case err != nil:
			return "", false, err
		case string(owner) == key:
			return name, true, nil
		}
	}
	return "", false, nil
}

// Feature returns a list feature version, or an error wrapping
// ErrFeatureNotFound.
func (s *Service) Feature(ctx context.Context, id FeatureID) (Feature, error) {
	return s.lookup(ctx, id)
}

// DeleteFeatureVersion deletes a list feature version and every list of it
// at once: one DropTable, whatever the number of items. It returns an error
// wrapping ErrFeatureNotFound when the version does not exist.
func (s *Service) DeleteFeatureVersion(ctx context.Context, id FeatureID) error {
	key, err := metaKey(id)
	if err != nil {
		return err
	}
	s.forget(id)
	defer s.forget(id) // a concurrent lookup may have cached it meanwhile
	f, err := s.readFeature(ctx, id, key)
	orphan := false
	if errors.Is(err, ErrFeatureNotFound) {
		// A create or delete interrupted part-way may have left a table
		// claimed but unrecorded; finish the job, then report the version
		// as missing, which it was.
		name, ok, oerr := s.ownedTable(ctx, key)
		if oerr != nil {
			return fmt.Errorf("delete %s: %w", id, oerr)
		}
		if !ok {
			return err
		}
		f.Table, orphan = name, true
	} else if err != nil {
		return err
	}
	// Drop first, then forget: a crash in between leaves a record whose
	// table is gone, which the next delete finishes.
	if err := s.st.DropTable(ctx, f.Table); err != nil {
		return fmt.Errorf("delete %s: drop %s: %w", id, f.Table, err)
	}
	if !orphan {
		if err := s.meta.Delete(ctx, kindFeature, key); err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
	}
	// A rewrite job of the version ends with it (its runner would find
	// the version gone and stop).
	if err := s.jobs().Delete(ctx, key); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if err := s.meta.Delete(ctx, kindTable, f.Table); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if orphan {
		return store.Errorf(ErrFeatureNotFound, "%s", id)
	}
	s.log.Info("list feature version deleted", "entity_type", id.EntityType, "feature", id.Feature, "version", id.Version, "table", f.Table)
	return nil
}

// Features returns the feature versions of one entity type, or of every
// entity type when entityType is empty, sorted by entity type, name and
// version.
func (s *Service) Features(ctx context.Context, entityType string) ([]Feature, error) {
	docs, err := s.meta.List(ctx, kindFeature)
	if err != nil {
		return nil, fmt.Errorf("list features: %w", err)
	}
	out := make([]Feature, 0, len(docs))
	for key := range docs {
		var k [3]string
		if err := json.Unmarshal([]byte(key), &k); err != nil {
			s.log.Warn("list feature record with a malformed key; skipped", "key", key, "err", err)
			continue
		}
		if entityType != "" && k[0] != entityType {
			continue
		}
		f, err := s.readFeature(ctx, FeatureID{EntityType: k[0], Feature: k[1], Version: k[2]}, key)
		if errors.Is(err, ErrFeatureNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Feature) int {
		return cmp.Or(cmp.Compare(a.EntityType, b.EntityType), cmp.Compare(a.Feature, b.Feature), cmp.Compare(a.Version, b.Version))
	})
	return out, nil
}

// readFeature reads a feature from the meta table, bypassing the cache.
func (s *Service) readFeature(ctx context.Context, id FeatureID, key string) (Feature, error) {
	doc, err := s.meta.Get(ctx, kindFeature, key)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound) {
		return Feature{}, store.Errorf(ErrFeatureNotFound, "%s", id)
	}
	if err != nil {
		return Feature{}, fmt.Errorf("read %s: %w", id, err)
	}
	return parseFeature(id, doc)
}

// parseFeature decodes a feature's meta document.
func parseFeature(id FeatureID, doc []byte) (Feature, error) {
	var d featureDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return Feature{}, fmt.Errorf("read %s: malformed record: %w", id, err)
	}
	ttl, err := time.ParseDuration(d.TTL)
	if err != nil || checkTTL(ttl) != nil || !store.NamePattern.MatchString(d.Table) {
		return Feature{}, fmt.Errorf("read %s: malformed record %s", id, doc)
	}
	mode, err := store.ParseExpiryMode(d.Expiry)
	if err != nil {
		return Feature{}, fmt.Errorf("read %s: malformed record %s", id, doc)
	}
	if mode == store.ExpiryDefault {
		mode = store.ExpirySweep // recorded before modes existed
	}
	if d.MaxItems < 0 {
		return Feature{}, fmt.Errorf("read %s: malformed record %s", id, doc)
	}
	maxTTL := ttl
	if d.MaxTTL != "" {
		m, err := time.ParseDuration(d.MaxTTL)
		if err != nil || checkTTL(m) != nil {
			return Feature{}, fmt.Errorf("read %s: malformed record %s", id, doc)
		}
		maxTTL = max(ttl, m)
	}
	return Feature{FeatureID: id, TTL: ttl, Table: d.Table, Created: d.Created.UTC().Truncate(time.Millisecond), Expiry: mode, MaxTTL: maxTTL, MaxItems: d.MaxItems}, nil
}

// lookup returns a feature, from the cache while it is fresh.
func (s *Service) lookup(ctx context.Context, id FeatureID) (Feature, error) {
	now := s.now()
	s.mu.RLock()
	c, ok := s.cache[id]
	s.mu.RUnlock()
	if ok && now.Sub(c.loaded) < s.cacheTTL && !now.Before(c.loaded) {
		return c.f, nil
	}
	key, err := metaKey(id)
	if err != nil {
		return Feature{}, err
	}
	f, err := s.readFeature(ctx, id, key)
	if err != nil {
		if errors.Is(err, ErrFeatureNotFound) {
			s.forget(id)
		}
		return Feature{}, err
	}
	s.remember(f)
	return f, nil
}

func (s *Service) remember(f Feature) {
	s.mu.Lock()
	s.cache[f.FeatureID] = cachedFeature{f: f, loaded: s.now()}
	s.mu.Unlock()
}

func (s *Service) forget(id FeatureID) {
	s.mu.Lock()
	delete(s.cache, id)
	s.mu.Unlock()
}

// withFeature runs op on the feature's current record. When op finds the
// table gone (another process deleted the version, perhaps re-creating
// it), the record is read again and op retried once.
func (s *Service) withFeature(ctx context.Context, id FeatureID, op func(Feature) error) error {
	f, err := s.lookup(ctx, id)
	if err != nil {
		return err
	}
	err = op(f)
	if !errors.Is(err, store.ErrTableNotFound) {
		return err
	}
	s.forget(id)
	if f, err = s.lookup(ctx, id); err != nil {
		return err
	}
	if err = op(f); errors.Is(err, store.ErrTableNotFound) {
		s.forget(id)
		return store.Errorf(ErrFeatureNotFound, "%s (its table is gone)", id)
	}
	return err
}
