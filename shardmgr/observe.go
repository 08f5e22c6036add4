package shardmgr

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ebb-data/ebb/store"
)

// passKey is the ebb_meta key (of kind metaKind) of the manager's record
// of its last pass over every index. No index name matches it, since
// index names start with a letter.
const passKey = "_pass"

// passRecord is the time of the last pass that tripped no index's
// clock-jump guard. It stands for every index's last run, so that a pass
// with nothing to change writes one document instead of one per index.
type passRecord struct {
	At time.Time `json:"at"`
}

// observed is one index's input to NewPlan and to record.
type observed struct {
	shards []Shard
	state  state
	// last is the run the clock-jump guard measures from: the later of
	// the index's own record and the pass record.
	last LastRun
}

// snapshot is what one pass reads of the store: every table, from one
// listing of the catalog, and every state document of the manager, from
// one listing of its kind. A pass costs these two reads however many
// indexes and shards there are; per index it reads nothing more.
type snapshot struct {
	tables []store.TableInfo // sorted by name
	states map[string]state
	bad    map[string]error // indexes whose state document is corrupt
	pass   passRecord
}

// observeAll reads the snapshot of a pass. The remote backends' Tables
// read their whole catalog whatever the prefix (DynamoDB lists every
// table, CQL reads its catalog table), so one listing for the pass
// replaces one for each index, which made a pass cost indexes × tables.
func observeAll(ctx context.Context, st store.Store) (*snapshot, error) {
	infos, err := st.Tables(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("shardmgr: list tables: %w", err)
	}
	SortTables(infos)
	docs, err := store.Meta{S: st}.List(ctx, metaKind)
	if err != nil {
		return nil, fmt.Errorf("shardmgr: load states: %w", err)
	}
	s := &snapshot{tables: infos, states: make(map[string]state, len(docs)), bad: map[string]error{}}
	for key, doc := range docs {
		if key == passKey {
			// A corrupt pass record is no record: the indexes' own
			// records still hold the guard.
			_ = json.Unmarshal(doc, &s.pass)
			continue
		}
		var one state
		if err := json.Unmarshal(doc, &one); err != nil {
			s.bad[key] = fmt.Errorf("shardmgr: state of %s is corrupt: %w", key, err)
			continue
		}
		s.states[key] = one
	}
	return s, nil
}

// of returns what the snapshot says of one index: the tables under its
// prefix (found by binary search in the sorted listing) and its state.
func (s *snapshot) of(index string) (observed, error) {
	if err := s.bad[index]; err != nil {
		return observed{}, err
	}
	return newObserved(TablesOf(s.tables, index), s.states[index], s.pass), nil
}

// TablesOf returns the tables under index's prefix (index + "_") of
// sorted, a listing sorted by name, by binary search: what
// Tables(ctx, index+"_") would return, found in one listing of every
// table instead of one listing per index.
func TablesOf(sorted []store.TableInfo, index string) []store.TableInfo {
	prefix := index + "_"
	i := sort.Search(len(sorted), func(i int) bool { return sorted[i].Spec.Name >= prefix })
	j := i
	for j < len(sorted) && strings.HasPrefix(sorted[j].Spec.Name, prefix) {
		j++
	}
	return sorted[i:j]
}

// SortTables sorts a listing by table name, as TablesOf needs it.
func SortTables(infos []store.TableInfo) {
	sort.Slice(infos, func(i, j int) bool { return infos[i].Spec.Name < infos[j].Spec.Name })
}

func newObserved(infos []store.TableInfo, st state, pass passRecord) observed {
	o := observed{shards: make([]Shard, 0, len(infos)), state: st, last: st.LastRun}
	for _, info := range infos {
		o.shards = append(o.shards, Shard{Table: info.Spec.Name, Capacity: info.Capacity, History: st.Tables[info.Spec.Name], Switches: info.Switches,
			Class: info.Class, ClassChanges: info.ClassChanges})
	}
	if pass.At.After(o.last.At) {
		o.last.At = pass.At
	}
	return o
}

// observeOne reads one index's input alone (Reconcile outside a pass):
// the tables under its prefix, its state and the pass record.
func observeOne(ctx context.Context, st store.Store, index string) (observed, error) {
	infos, err := st.Tables(ctx, index+"_")
	if err != nil {
		return observed{}, fmt.Errorf("shardmgr: list shards of %s: %w", index, err)
	}
	s, err := loadState(ctx, st, index)
	if err != nil {
		return observed{}, err
	}
	var pass passRecord
	if doc, err := getState(ctx, st, passKey); err != nil {
		return observed{}, err
	} else if doc != nil {
		_ = json.Unmarshal(doc, &pass)
	}
	return newObserved(infos, s, pass), nil
}

// recordPass saves the time of a pass that tripped no guard: one write
// per pass, whatever the number of indexes.
func recordPass(ctx context.Context, st store.Store, at time.Time) error {
	doc, err := json.Marshal(passRecord{At: at})
	if err != nil {
		return fmt.Errorf("shardmgr: encode pass record: %w", err)
	}
	if err := (store.Meta{S: st}).Put(ctx, metaKind, passKey, doc); err != nil {
		return fmt.Errorf("shardmgr: save pass record: %w", err)
	}
	return nil
}
