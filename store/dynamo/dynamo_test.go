package dynamo_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/storetest"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var eventsSpec = store.TableSpec{
	Name:         "events",
	PartitionKey: []store.Column{{Name: "acc", Type: store.TypeText}},
	Clustering:   []store.Column{{Name: "ts", Type: store.TypeTimestamp}, {Name: "id", Type: store.TypeText}},
	Values:       []store.Column{{Name: "payload", Type: store.TypeBytes}, {Name: "tag", Type: store.TypeText}, {Name: "n", Type: store.TypeInt64}},
	Indexes:      []store.IndexSpec{{Name: "by_tag", Column: "tag"}},
}

func upsert(acc string, i int, tag string, exp time.Time) store.Mutation {
	return store.Mutation{
		Partition:  []any{acc},
		Clustering: []any{epoch.Add(time.Duration(i) * time.Second), fmt.Sprintf("e%03d", i)},
		Cells: []store.Cell{
			{Column: "payload", Value: []byte(fmt.Sprintf("p%d", i))},
			{Column: "tag", Value: tag},
			{Column: "n", Value: int64(i)},
		},
		ExpiresAt: exp,
	}
}

func TestSmoke(t *testing.T) {
	clk := storetest.NewClock(epoch)
	s := dynamotest.New(t, clk.Now)
	ctx := t.Context()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatalf("identical create: %v", err)
	}
	other := eventsSpec
	other.DefaultTTL = time.Hour
	if err := s.CreateTable(ctx, other); !errors.Is(err, store.ErrTableExists) {
		t.Fatalf("create with another spec: %v, want ErrTableExists", err)
	}

	// 60 rows (more than one BatchWriteItem), every third expiring soon.
	var batch []store.Mutation
	for i := range 60 {
		var exp time.Time
		if i%3 == 0 {
			exp = epoch.Add(time.Minute)
		}
		tag := "odd"
		if i%2 == 0 {
			tag = "even"
		}
		batch = append(batch, upsert("a", i, tag, exp))
	}
	if err := s.Write(ctx, "events", batch); err != nil {
		t.Fatal(err)
	}
	row, err := s.Get(ctx, "events", []any{"a"}, batch[7].Clustering)
	if err != nil {
		t.Fatal(err)
	}
	if got := row.Values[2]; got != int64(7) {
		t.Fatalf("n = %v, want 7", got)
	}

	collect := func(reverse bool, limit int) []int64 {
		var out []int64
		q := store.Query{Partition: []any{"a"}, Limit: limit, Reverse: reverse}
		for {
			page, err := kit.Query(ctx, s, "events", q)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Rows {
				out = append(out, r.Values[2].(int64))
			}
			if page.NextPageToken == nil {
				return out
			}
			if len(page.Rows) != limit {
				t.Fatalf("short page of %d with a token", len(page.Rows))
			}
			q.PageToken = page.NextPageToken
		}
	}
	all := collect(false, 7)
	if len(all) != 60 || !slices.IsSorted(all) {
		t.Fatalf("ascending scan: %v", all)
	}
	// At expiry == now the short-lived rows are gone.
	clk.Set(epoch.Add(time.Minute))
	live := collect(true, 4)
	if len(live) != 40 || !slices.IsSortedFunc(live, func(a, b int64) int { return int(b - a) }) {
		t.Fatalf("descending scan after expiry: %d rows %v", len(live), live)
	}
	if _, err := s.Get(ctx, "events", []any{"a"}, batch[3].Clustering); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired row: %v, want ErrNotFound", err)
	}

	keys, err := s.QueryIndex(ctx, "events", "by_tag", []any{"a"}, "even")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 20 { // even and not a multiple of 3
		t.Fatalf("index lookup found %d rows, want 20", len(keys))
	}
	// Retag one row with a partial upsert: the old entry must not be found.
	if err := s.Write(ctx, "events", []store.Mutation{{
		Partition: []any{"a"}, Clustering: batch[2].Clustering,
		Cells: []store.Cell{{Column: "tag", Value: "odd"}},
	}}); err != nil {
		t.Fatal(err)
	}
	keys, err = s.QueryIndex(ctx, "events", "by_tag", []any{"a"}, "even")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 19 {
		t.Fatalf("after retag found %d rows, want 19", len(keys))
	}

	// DeleteIfExpired removes expired rows only.
	if err := s.Write(ctx, "events", []store.Mutation{
		{Kind: store.DeleteIfExpired, Partition: []any{"a"}, Clustering: batch[3].Clustering},
		{Kind: store.DeleteIfExpired, Partition: []any{"a"}, Clustering: batch[4].Clustering},
	}); err != nil {
		t.Fatal(err)
	}
	clk.Set(epoch)
	if _, err := s.Get(ctx, "events", []any{"a"}, batch[3].Clustering); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("swept row still there: %v", err)
	}
	if _, err := s.Get(ctx, "events", []any{"a"}, batch[4].Clustering); err != nil {
		t.Fatalf("live row swept: %v", err)
	}

	infos, err := s.Tables(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || !infos[0].Spec.Equal(eventsSpec) {
		t.Fatalf("tables: %+v", infos)
	}
	if err := s.DeletePartition(ctx, "events", []any{"a"}); err != nil {
		t.Fatal(err)
	}
	if page, err := kit.Query(ctx, s, "events", store.Query{Partition: []any{"a"}, Limit: 10}); err != nil || len(page.Rows) != 0 {
		t.Fatalf("after DeletePartition: %v %v", page.Rows, err)
	}
	if err := s.DropTable(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	if err := s.DropTable(ctx, "events"); err != nil {
		t.Fatalf("second drop: %v", err)
	}
	if _, err := kit.Query(ctx, s, "events", store.Query{Partition: []any{"a"}, Limit: 10}); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("query of dropped table: %v", err)
	}
}
