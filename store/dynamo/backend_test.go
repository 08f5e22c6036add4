package dynamo_test

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
)

// countingTransport counts requests per DynamoDB operation.
type countingTransport struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	c.mu.Lock()
	c.counts[op]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) take(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.counts[op]
	c.counts[op] = 0
	return n
}

func TestBatchWriteChunks(t *testing.T) {
	ct := &countingTransport{counts: map[string]int{}}
	o := dynamotest.Options(t, storetest.NewClock(epoch).Now)
	o.Client = dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(o.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("ebb", "ebb", ""),
		HTTPClient:   &http.Client{Transport: ct},
	})
	s := dynamotest.Open(t, o)
	ctx := t.Context()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	var batch []store.Mutation
	for i := range 60 {
		batch = append(batch, upsert("a", i, "x", time.Time{}))
	}
	ct.take("BatchWriteItem")
	if err := s.Write(ctx, "events", batch); err != nil {
		t.Fatal(err)
	}
	if n := ct.take("BatchWriteItem"); n != 3 {
		t.Fatalf("60 rows went out in %d BatchWriteItem requests, want 3 (25+25+10)", n)
	}
	page, err := kit.Query(ctx, s, "events", store.Query{Partition: []any{"a"}, Limit: 100})
	if err != nil || len(page.Rows) != 60 || page.NextPageToken != nil {
		t.Fatalf("read back %d rows (token %x): %v", len(page.Rows), page.NextPageToken, err)
	}
	// The same row written twice in one batch is sent once, the later
	// value winning.
	dup := []store.Mutation{upsert("b", 1, "first", time.Time{}), upsert("b", 1, "second", time.Time{})}
	if err := s.Write(ctx, "events", dup); err != nil {
		t.Fatal(err)
	}
	row, err := s.Get(ctx, "events", []any{"b"}, dup[0].Clustering)
	if err != nil || row.Values[1] != "second" {
		t.Fatalf("duplicate row: %v %v", row.Values, err)
	}
	if err := s.DeletePartition(ctx, "events", []any{"a"}); err != nil {
		t.Fatal(err)
	}
	if n := ct.take("BatchWriteItem"); n != 3 {
		t.Fatalf("deleting 60 rows took %d BatchWriteItem requests, want 3", n)
	}
}

func TestItemSizeLimit(t *testing.T) {
	s := dynamotest.New(t, storetest.NewClock(epoch).Now)
	ctx := t.Context()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	limit := s.Capabilities().MaxRowBytes
	if limit <= 0 || limit > 400*1024 {
		t.Fatalf("MaxRowBytes = %d, want within DynamoDB's 400 KB", limit)
	}
	ok := upsert("a", 1, "x", time.Time{})
	big := upsert("a", 2, "x", time.Time{})
	big.Cells[0].Value = bytes.Repeat([]byte{7}, limit)
	err := s.Write(ctx, "events", []store.Mutation{ok, big})
	var me *store.MutationError
	if !errors.Is(err, store.ErrTooLarge) || !errors.As(err, &me) || me.Index != 1 {
		t.Fatalf("oversize row: %v, want ErrTooLarge naming mutation 1", err)
	}
	if _, err := s.Get(ctx, "events", []any{"a"}, ok.Clustering); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused batch wrote its valid row: %v", err)
	}

	// Just under the limit is stored and read back whole.
	fits := upsert("a", 3, "x", time.Time{})
	fits.Cells[0].Value = bytes.Repeat([]byte{8}, limit-200)
	if err := s.Write(ctx, "events", []store.Mutation{fits}); err != nil {
		t.Fatalf("row of %d bytes: %v", limit-200, err)
	}
	row, err := s.Get(ctx, "events", []any{"a"}, fits.Clustering)
	if err != nil || len(row.Values[0].([]byte)) != limit-200 {
		t.Fatalf("read back: %v", err)
	}

	// Partial writes that each fit but together overflow the item are
	// refused by the service; the error is still typed.
	half := bytes.Repeat([]byte{9}, 210*1024)
	tag := strings.Repeat("t", 210*1024)
	p1 := store.Mutation{Partition: []any{"a"}, Clustering: []any{epoch, "p"}, Cells: []store.Cell{{Column: "payload", Value: half}}}
	p2 := store.Mutation{Partition: []any{"a"}, Clustering: []any{epoch, "p"}, Cells: []store.Cell{{Column: "tag", Value: tag}}}
	if err := s.Write(ctx, "events", []store.Mutation{p1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, "events", []store.Mutation{p2}); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("merged item over the limit: %v, want ErrTooLarge", err)
	}
}

func TestCapacitySwitchLimit(t *testing.T) {
	clk := storetest.NewClock(epoch)
	s := dynamotest.New(t, clk.Now)
	ctx := t.Context()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	prov := store.Capacity{Mode: store.Provisioned, ReadUnits: 5, WriteUnits: 5}
	onDemand := store.Capacity{Mode: store.OnDemand}
	for i := range 4 {
		if err := s.SetCapacity(ctx, "events", prov); err != nil {
			t.Fatalf("round %d to provisioned: %v", i, err)
		}
		if err := s.SetCapacity(ctx, "events", onDemand); err != nil {
			t.Fatalf("round %d to on-demand: %v", i, err)
		}
		clk.Advance(time.Hour)
	}
	if err := s.SetCapacity(ctx, "events", prov); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCapacity(ctx, "events", onDemand); !errors.Is(err, store.ErrCapacityLimit) {
		t.Fatalf("fifth switch to on-demand in 24 h: %v, want ErrCapacityLimit", err)
	}
	infos, err := s.Tables(ctx, "events")
	if err != nil || len(infos) != 1 || infos[0].Capacity != prov {
		t.Fatalf("after a refused switch: %+v %v, want still provisioned", infos, err)
	}
	out, err := s.Client().DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.TablePrefix() + "events")})
	if err != nil {
		t.Fatal(err)
	}
	if out.Table.BillingModeSummary != nil && out.Table.BillingModeSummary.BillingMode == "PAY_PER_REQUEST" {
		t.Fatal("refused switch reached the service")
	}
	// The first switch leaves the 24 h window 24 h after it was made.
	clk.Set(epoch.Add(24 * time.Hour))
	if err := s.SetCapacity(ctx, "events", onDemand); err != nil {
		t.Fatalf("switch once the window moved: %v", err)
	}
	if err := s.SetCapacity(ctx, "events", store.Capacity{Mode: store.Provisioned}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("provisioned without units: %v, want ErrInvalid", err)
	}
	if err := s.SetCapacity(ctx, "nope", prov); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("unknown table: %v, want ErrTableNotFound", err)
	}
}

func TestMetrics(t *testing.T) {
	s := dynamotest.New(t, storetest.NewClock(epoch).Now)
	ctx := t.Context()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "events", []any{"a"}, []any{epoch, "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(s.Collector()); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var gets float64
	for _, mf := range mfs {
		if mf.GetName() != "ebb_dynamodb_requests_total" {
			continue
		}
		for _, m := range mf.Metric {
			// Labels come sorted by name: op, outcome.
			if m.Label[0].GetValue() == "GetItem" && m.Label[1].GetValue() == "ok" {
				gets += m.GetCounter().GetValue()
			}
		}
	}
	if gets < 1 {
		t.Fatalf("GetItem ok count = %v, want at least 1", gets)
	}
}

// TestTablePrefix opens two Stores with different table prefixes on one
// endpoint: each physical table carries its Store's prefix, and neither
// Store sees, or collides with, the other's tables of the same name.
func TestTablePrefix(t *testing.T) {
	ctx := t.Context()
	a := dynamotest.New(t, storetest.NewClock(epoch).Now)
	b := dynamotest.New(t, storetest.NewClock(epoch).Now)
	if a.TablePrefix() == b.TablePrefix() || a.TablePrefix() == "" {
		t.Fatalf("prefixes %q and %q", a.TablePrefix(), b.TablePrefix())
	}
	other := eventsSpec
	other.DefaultTTL = time.Hour
	if err := a.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTable(ctx, other); err != nil {
		t.Fatalf("same name, other spec, other prefix: %v", err)
	}
	m := upsert("a", 1, "x", time.Time{})
	if err := a.Write(ctx, "events", []store.Mutation{m}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "events", []any{"a"}, m.Clustering); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("row written through one prefix read through the other: %v", err)
	}
	for _, s := range []*dynamo.Store{a, b} {
		listed, err := s.Tables(ctx, "")
		if err != nil || len(listed) != 1 || listed[0].Spec.Name != "events" {
			t.Fatalf("prefix %q lists %+v, %v; want its own events table only", s.TablePrefix(), listed, err)
		}
		names, err := s.Client().ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{s.TablePrefix() + "events": false, s.TablePrefix() + "ebb.catalog": false}
		for _, n := range names.TableNames {
			if _, ok := want[n]; ok {
				want[n] = true
			}
		}
		for n, found := range want {
			if !found {
				t.Errorf("no physical table %q", n)
			}
		}
	}
	bt, err := b.Tables(ctx, "")
	if err != nil || !bt[0].Spec.Equal(other) {
		t.Fatalf("second prefix's table: %+v, %v; want its own spec", bt, err)
	}
}
