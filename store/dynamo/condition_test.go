package dynamo_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/storetest"
)

// refuseUpdates answers the next n UpdateItem requests with a failed
// condition, as the service does when a concurrent writer changed the row
// between the two requests of a conditional partial update.
type refuseUpdates struct {
	n atomic.Int64
}

func (r *refuseUpdates) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".UpdateItem") && r.n.Add(-1) >= 0 {
		body := `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`
		return &http.Response{
			StatusCode: http.StatusBadRequest, Request: req,
			Header: http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
			Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)),
		}, nil
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestConditionalUpdateRace checks that a conditional partial update whose
// condition holds is not refused because its two TTL requests were both
// refused by a concurrent write in between: a consistent read shows the
// condition holds, and the update is sent again. One whose condition does
// not hold is refused with store.ErrConflict.
func TestConditionalUpdateRace(t *testing.T) {
	rt := &refuseUpdates{}
	o := dynamotest.Options(t, storetest.NewClock(epoch).Now)
	o.Client = dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(o.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("ebb", "ebb", ""),
		HTTPClient:   &http.Client{Transport: rt},
	})
	s := dynamotest.Open(t, o)
	ctx := t.Context()
	if err := s.CreateTable(ctx, eventsSpec); err != nil {
		t.Fatal(err)
	}
	row := upsert("a", 1, "v1", epoch.Add(time.Hour))
	if err := s.Write(ctx, "events", []store.Mutation{row}); err != nil {
		t.Fatal(err)
	}
	casTag := func(from, to string) error {
		m := store.Mutation{Partition: row.Partition, Clustering: row.Clustering, ExpiresAt: epoch.Add(2 * time.Hour),
			Cells: []store.Cell{{Column: "tag", Value: to}},
			If:    &store.Condition{Kind: store.IfEquals, Column: "tag", Value: from}}
		return s.Write(ctx, "events", []store.Mutation{m})
	}

	rt.n.Store(2) // both TTL branches of the first round refused
	if err := casTag("v1", "v2"); err != nil {
		t.Fatalf("compare-and-swap whose condition holds, after a lost race: %v", err)
	}
	if left := rt.n.Load(); left > 0 {
		t.Fatalf("%d refusals left unused", left)
	}
	got, err := s.Get(ctx, "events", row.Partition, row.Clustering)
	if err != nil || got.Values[1] != "v2" {
		t.Fatalf("after the swap: %v, %v; want tag v2", got.Values, err)
	}
	if err := casTag("v1", "v3"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale compare-and-swap: %v, want ErrConflict", err)
	}
	if got, err := s.Get(ctx, "events", row.Partition, row.Clustering); err != nil || got.Values[1] != "v2" {
		t.Fatalf("after the refused swap: %v, %v; want tag v2", got.Values, err)
	}
}
