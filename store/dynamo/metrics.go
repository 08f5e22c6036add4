package dynamo

import (
	"context"
	"errors"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/ebb-data/ebb/store"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics counts DynamoDB API calls by operation and outcome, so throttling
// and outages show up on /metrics before users notice them. They live on
// the Store (no globals) and are exported through Collector.
type metrics struct {
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	unprocess prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ebb_dynamodb_requests_total",
			Help: "DynamoDB API calls (after the SDK's retries) by operation and outcome.",
		}, []string{"op", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ebb_dynamodb_request_seconds",
			Help:    "Duration of DynamoDB API calls, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"op"}),
		unprocess: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ebb_dynamodb_unprocessed_retries_total",
			Help: "BatchWriteItem requests re-sent for items the service left unprocessed.",
		}),
	}
}

// Collector returns a Prometheus collector for the Store's request
// metrics. Register it on the registry of the caller's choosing.
func (s *Store) Collector() prometheus.Collector { return s.metrics }

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.latency.Describe(ch)
	m.unprocess.Describe(ch)
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.latency.Collect(ch)
	m.unprocess.Collect(ch)
}

// outcome classifies a call's result for the requests counter.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if isConditionFailed(err) {
		return "condition_failed"
	}
	mapped := mapErr(context.Background(), "", err)
	for _, c := range []struct {
		err  error
		name string
	}{
		{store.ErrThrottled, "throttled"}, {store.ErrTableNotFound, "not_found"},
		{store.ErrTooLarge, "too_large"}, {store.ErrInvalid, "invalid"}, {store.ErrUnavailable, "unavailable"},
	} {
		if errors.Is(mapped, c.err) {
			return c.name
		}
	}
	return "error"
}

// instrument returns a client option that times and counts every call at
// the initialize step, which wraps the SDK's retries.
func (m *metrics) instrument(now func() time.Time) func(*dynamodb.Options) {
	mw := middleware.InitializeMiddlewareFunc("ebbMetrics", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		start := now()
		out, md, err := next.HandleInitialize(ctx, in)
		op := awsmiddleware.GetOperationName(ctx)
		m.latency.WithLabelValues(op).Observe(now().Sub(start).Seconds())
		m.requests.WithLabelValues(op, outcome(err)).Inc()
		return out, md, err
	})
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(mw, middleware.After)
		})
	}
}
