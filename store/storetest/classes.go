package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/ebb-data/ebb/store"
)

// ClassStore gives any backend a provider's table classes, for tests of
// what plans and applies class changes: it keeps each table's class and
// class changes in memory, refuses with store.ErrCapacityLimit what the
// rules forbid (counting the refusals), and reports its record in Tables,
// as store/dynamo does with its catalog. It declares no Unwrap, so
// store.As finds its SetTableClass.
type ClassStore struct {
	store.Store
	rules store.ClassRules
	now   func() time.Time

	mu       sync.Mutex
	class    map[string]store.TableClass
	changes  map[string][]time.Time
	refusals int
}

// NewClassStore wraps st with rules, read against now.
func NewClassStore(st store.Store, rules store.ClassRules, now func() time.Time) *ClassStore {
	return &ClassStore{Store: st, rules: rules, now: now, class: map[string]store.TableClass{}, changes: map[string][]time.Time{}}
}

// Capabilities reports the wrapped store's, with the rules as Classes.
func (c *ClassStore) Capabilities() store.Capabilities {
	caps := c.Store.Capabilities()
	caps.Classes = c.rules
	return caps
}

// SetTableClass implements store.ClassSetter.
func (c *ClassStore) SetTableClass(ctx context.Context, table string, class store.TableClass) error {
	infos, err := c.Store.Tables(ctx, table)
	if err != nil {
		return err
	}
	if len(infos) == 0 || infos[0].Spec.Name != table {
		return store.Errorf(store.ErrTableNotFound, "%q", table)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.class[table].Or() == class.Or() {
		return nil
	}
	if _, next := c.rules.Next(c.changes[table], c.now()); next.After(c.now()) {
		c.refusals++
		return store.Errorf(store.ErrCapacityLimit, "%s: next class change at %s", table, next)
	}
	c.class[table] = class
	c.changes[table] = append(c.changes[table], c.now())
	return nil
}

// Tables reports the wrapped store's tables with their classes.
func (c *ClassStore) Tables(ctx context.Context, prefix string) ([]store.TableInfo, error) {
	infos, err := c.Store.Tables(ctx, prefix)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range infos {
		infos[i].Class = c.class[infos[i].Spec.Name]
		infos[i].ClassChanges = c.changes[infos[i].Spec.Name]
	}
	return infos, err
}

// Class returns a table's class as recorded.
func (c *ClassStore) Class(table string) store.TableClass {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.class[table]
}

// Refusals counts the changes refused by the rules.
func (c *ClassStore) Refusals() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refusals
}
