package dynamo_test

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/storetest"
)

// These tests need what only Amazon's DynamoDB Local has among the test
// endpoints: TransactWriteItems and a TTL process.

// TestTransactions checks the transactional write path: a single-partition
// batch goes out as one TransactWriteItems and lands whole, a batch over
// several partitions does not use one, and a batch the service refuses
// half-way writes nothing.
func TestTransactions(t *testing.T) {
	ct := &countingTransport{counts: map[string]int{}}
	o := dynamotest.DynamoDBLocal.Options(t, storetest.NewClock(epoch).Now)
	o.Client = dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(o.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("ebb", "ebb", ""),
		HTTPClient:   &http.Client{Transport: ct},
	})
	s := dynamotest.Open(t, o)
	if caps := s.Capabilities(); !caps.AtomicPartitionBatch || caps.MaxAtomicBatch != 100 {
		t.Fatalf("capabilities %+v: want transactions of up to 100", caps)
	}
	ctx := t.Context()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	count := func(p string) int {
		t.Helper()
		page, err := kit.Query(ctx, s, "events", store.Query{Partition: []any{p}, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Rows)
	}

	var one []store.Mutation
	for i := range 100 {
		one = append(one, upsert("a", i, "x", time.Time{}))
	}
	ct.take("TransactWriteItems")
	ct.take("BatchWriteItem")
	if err := s.Write(ctx, "events", one); err != nil {
		t.Fatal(err)
	}
	if tx, bw := ct.take("TransactWriteItems"), ct.take("BatchWriteItem"); tx != 1 || bw != 0 {
		t.Fatalf("100 rows of one partition: %d TransactWriteItems, %d BatchWriteItem; want 1 and 0", tx, bw)
	}
	if n := count("a"); n != 100 {
		t.Fatalf("transaction wrote %d rows, want 100", n)
	}

	two := []store.Mutation{upsert("b", 1, "x", time.Time{}), upsert("c", 1, "x", time.Time{})}
	if err := s.Write(ctx, "events", two); err != nil {
		t.Fatal(err)
	}
	if tx := ct.take("TransactWriteItems"); tx != 0 {
		t.Fatalf("a two-partition batch used %d transactions", tx)
	}

	// A row near the item limit, then a batch that writes a small row and
	// grows the big one past the limit: only the service sees the merged
	// item, and refuses the whole transaction.
	big := store.Mutation{Partition: []any{"d"}, Clustering: []any{epoch, "big"},
		Cells: []store.Cell{{Column: "payload", Value: bytes.Repeat([]byte{9}, 210*1024)}}}
	if err := s.Write(ctx, "events", []store.Mutation{big}); err != nil {
		t.Fatal(err)
	}
	grow := store.Mutation{Partition: []any{"d"}, Clustering: []any{epoch, "big"},
		Cells: []store.Cell{{Column: "tag", Value: string(bytes.Repeat([]byte{'t'}, 210*1024))}}}
	err := s.Write(ctx, "events", []store.Mutation{upsert("d", 1, "x", time.Time{}), grow})
	if !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("batch growing an item past 400 KB: %v, want ErrTooLarge", err)
	}
	if ct.take("TransactWriteItems") == 0 {
		t.Fatal("the refused batch was not sent as a transaction")
	}
	if n := count("d"); n != 1 {
		t.Fatalf("after the refused transaction partition d has %d rows, want only the big one", n)
	}

	// A DeleteIfExpired of a live row cancels the transaction; it is
	// dropped and the rest applied.
	live := upsert("e", 1, "x", time.Time{})
	if err := s.Write(ctx, "events", []store.Mutation{live}); err != nil {
		t.Fatal(err)
	}
	mixed := []store.Mutation{
		{Kind: store.DeleteIfExpired, Partition: []any{"e"}, Clustering: live.Clustering},
		upsert("e", 2, "x", time.Time{}),
	}
	if err := s.Write(ctx, "events", mixed); err != nil {
		t.Fatal(err)
	}
	if n := count("e"); n != 2 {
		t.Fatalf("partition e has %d rows after a no-op DeleteIfExpired and an upsert, want 2", n)
	}
}

// TestNativeTTLBackstop runs on the real clock, with native TTL on: an item
// whose TTL attribute lies in the past is deleted by DynamoDB Local's TTL
// process without any delete from ebb, while a row whose expiry an update
// extended, a row that never expires, and a row written with the default
// TTL margin (whose attribute lies an hour past its expiry) stay.
func TestNativeTTLBackstop(t *testing.T) {
	o := dynamotest.DynamoDBLocalTTL.Options(t, time.Now)
	o.NoNativeTTL = false
	o.TTLMargin = time.Millisecond
	s := dynamotest.Open(t, o)
	if !s.Capabilities().NativeTTL {
		t.Fatal("DynamoDB Local reports no native TTL")
	}
	ctx := t.Context()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	// The same tables through a Store with the default margin.
	o2 := o
	o2.TTLMargin = 0
	wide, err := dynamo.Open(ctx, o2)
	if err != nil {
		t.Fatal(err)
	}
	defer wide.Close()

	soon := time.Now().Add(time.Second).Truncate(time.Millisecond)
	row := func(p string, exp time.Time) store.Mutation { return upsert(p, 1, "x", exp) }
	if err := s.Write(ctx, "events", []store.Mutation{
		row("gone", soon), row("extended", soon), row("forever", time.Time{}),
	}); err != nil {
		t.Fatal(err)
	}
	// A partial upsert extends the row by an hour: the update raises the
	// TTL attribute.
	ext := row("extended", soon.Add(time.Hour))
	ext.Cells = ext.Cells[2:]
	if err := s.Write(ctx, "events", []store.Mutation{ext}); err != nil {
		t.Fatal(err)
	}
	if err := wide.Write(ctx, "events", []store.Mutation{row("margin", soon)}); err != nil {
		t.Fatal(err)
	}

	physical := func() map[string]map[string]types.AttributeValue {
		t.Helper()
		out, err := s.Client().Scan(ctx, &dynamodb.ScanInput{
			TableName: aws.String(s.TablePrefix() + "events"), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		items := map[string]map[string]types.AttributeValue{}
		for _, item := range out.Items {
			pk := item["pk"].(*types.AttributeValueMemberB).Value
			for _, p := range []string{"gone", "extended", "forever", "margin"} {
				if bytes.Equal(pk, kit.EncodeTuple(nil, []any{p}, false)) {
					items[p] = item
				}
			}
		}
		return items
	}
	items := physical()
	if len(items) != 4 {
		t.Fatalf("%d items stored, want 4", len(items))
	}
	ttlOf := func(p string) int64 {
		n, _ := items[p]["ttl"].(*types.AttributeValueMemberN)
		if n == nil {
			return 0
		}
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	if got, want := ttlOf("margin"), soon.Add(time.Hour).Unix(); got < want {
		t.Fatalf("TTL attribute with the default margin = %d, want at least expiry + 1 h = %d", got, want)
	}
	if got := ttlOf("extended"); got < soon.Add(time.Hour).Unix() {
		t.Fatalf("TTL attribute of the extended row = %d, not raised past its new expiry %d", got, soon.Add(time.Hour).Unix())
	}

	// DynamoDB Local's TTL process scans every table of the instance, so
	// with the other suites' tables beside this one it can take a minute
	// or more; AWS itself promises only "within a few days".
	deadline := time.Now().Add(4 * time.Minute)
	for {
		items = physical()
		if _, ok := items["gone"]; !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired item is still stored %v after its TTL attribute", time.Since(soon))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("deleted natively %v after its TTL attribute", time.Since(soon))
	// Give the TTL process time for anything else it would delete.
	time.Sleep(2 * time.Second)
	items = physical()
	for _, p := range []string{"extended", "forever", "margin"} {
		if _, ok := items[p]; !ok {
			t.Errorf("row %q deleted by native TTL", p)
		}
	}
	for _, p := range []string{"extended", "forever"} {
		if _, err := s.Get(ctx, "events", []any{p}, ext.Clustering); err != nil {
			t.Errorf("live row %q: %v", p, err)
		}
	}
	// The margin row is past its expiry for ebb, stored all the same.
	if _, err := s.Get(ctx, "events", []any{"margin"}, ext.Clustering); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired row: %v, want ErrNotFound", err)
	}
}
