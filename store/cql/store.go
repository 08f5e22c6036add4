package cql

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
)

var _ store.Store = (*Store)(nil)

// maxRowBytes is what Capabilities reports: Keyspaces' 1 MiB row limit
// less room for the expiry columns this layout adds. Cassandra and
// ScyllaDB have no row limit of their own; the same bound keeps rows a
// size they handle well and an application portable.
const maxRowBytes = 1<<20 - 8<<10

// Store is a store.Store on a CQL cluster.
type Store struct {
	session  *gocql.Session
	opts     Options
	ks       string
	provider Provider
	caps     store.Capabilities
	now      func() time.Time
	log      *slog.Logger
	core     *remote.Core
	retry    retryPolicy
	metrics  *metrics
	// poll is the interval of waits for Keyspaces' table status.
	poll time.Duration
	// stamps issues write timestamps; ttlCap bounds native TTLs (ttl.go).
	stamps *stamper
	ttlCap int64

	tables *remote.Tables[*schema] // spec cache, by name
}

// Open connects to the cluster, detects the provider, creates the keyspace
// when asked and the catalog table when missing. It honours ctx while
// connecting.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	session, err := openSession(ctx, opts)
	if err != nil {
		return nil, err
	}
	return newStore(ctx, session, opts)
}

// openSession connects a session to the cluster of opts, validated and
// with defaults filled.
func openSession(ctx context.Context, opts Options) (*gocql.Session, error) {
	cluster, err := clusterConfig(opts)
	if err != nil {
		return nil, err
	}
	session, err := connect(ctx, cluster)
	if err != nil {
		return nil, mapErr(ctx, "cql: connect to "+fmt.Sprint(opts.Hosts), err)
	}
	return session, nil
}

// newStore builds the Store on a connected session (which it owns from
// then on) and sets it up.
func newStore(ctx context.Context, session *gocql.Session, opts Options) (*Store, error) {
	m := newMetrics()
	retry := retryPolicy{opts.RetryPolicy(retryBase)}
	retry.OnRetry = func(err error) { m.retries.WithLabelValues(classify(err).String()).Inc() }
	s := &Store{
		session: session,
		opts:    opts,
		ks:      opts.Keyspace,
		now:     opts.Now,
		log:     opts.Logger,
		core:    remote.NewCore(opts.Common, reservedPrefix),
		metrics: m,
		retry:   retry,
		poll:    time.Second,
		stamps:  &stamper{wall: time.Now},
		// Write timestamps and the 2038 limit follow the cluster's wall
		// clock, not the expiry clock.
		ttlCap: ttlCap(time.Now()),
	}
	s.tables = remote.NewTables(s.core, s.loadSchema, mapErr)
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(m); err != nil {
			session.Close()
			return nil, fmt.Errorf("cql: register metrics: %w", err)
		}
	}
	tctx, cancel := context.WithTimeout(ctx, opts.TableTimeout)
	defer cancel()
	if err := s.setUp(tctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.caps = capabilities(s.provider)
	s.log.Info("cql store open", "hosts", opts.Hosts, "keyspace", s.ks, "provider", s.provider.String())
	return s, nil
}

// capabilities reports what a provider offers. A batch of one partition is
// one storage mutation on every provider (see write.go), so it is atomic;
// Keyspaces' 30-statement batches bound it lower there.
func capabilities(p Provider) store.Capabilities {
	c := store.Capabilities{
		Backend:               "cql",
		AtomicPartitionBatch:  true,
		MaxAtomicBatch:        100,
		MaxRowBytes:           maxRowBytes,
		NativeTTL:             true,
		DeleteBatch:           p.batchStatements(),
		SharedAcrossProcesses: true,
	}
	if p == Keyspaces {
		c.MaxAtomicBatch = 10
		c.WarmThroughput = true
		c.Switches = store.KeyspacesSwitches
	} else {
		// auto_snapshot: true is the shipped default of both engines.
		c.DropKeepsSnapshot = true
	}
	return c
}

func clusterConfig(o Options) (*gocql.ClusterConfig, error) {
	c := gocql.NewCluster(o.Hosts...)
	c.Consistency = o.Consistency
	c.SerialConsistency = gocql.LocalSerial
	c.Timeout = o.Timeout
	c.ConnectTimeout = min(o.Timeout, 10*time.Second)
	// A node whose connections all closed (restarted, or timed out on a
	// loaded machine) and whose reconnection's few quick tries failed is
	// tried again every ReconnectInterval: the driver's minute left a
	// lone contact point (a proxy, a single node) unreachable for that
	// long, every request failing with "no hosts available", and a schema
	// change waiting out its TableTimeout. A connection attempt a second
	// to a node that is down costs little.
	c.ReconnectInterval = time.Second
	// Retries are the Store's (retry.go): the driver's would multiply them
	// and ignore idempotence.
	c.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0}
	// The Store reads schema state itself; the driver's metadata cache
	// would be refreshed on every one of the many table creations.
	c.Metadata.CacheMode = gocql.Disabled
	// The driver waits for schema agreement after every schema change,
	// counting dead nodes too, for up to this long, and only logs when
	// the wait fails: with one node down every CREATE TABLE would hang
	// for it. The Store waits itself, on the live nodes (awaitSchema).
	c.MaxWaitSchemaAgreement = 0
	c.Logger = slogAdapter{o.Logger}
	if o.SigV4 != nil {
		c.Authenticator = sigv4Auth{o.SigV4}
	}
	if o.Username != "" {
		c.Authenticator = gocql.PasswordAuthenticator{Username: o.Username, Password: o.Password}
	}
	if o.TLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName}
		if cfg.ServerName == "" {
			host, _, _ := splitHost(o.Hosts[0])
			cfg.ServerName = host
		}
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, store.Errorf(store.ErrInvalid, "cql: read CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, store.Errorf(store.ErrInvalid, "cql: no certificate in %s", o.CAFile)
			}
			cfg.RootCAs = pool
		}
		c.SslOpts = &gocql.SslOptions{Config: cfg, EnableHostVerification: true}
	}
	return c, nil
}

// connect creates the session, giving up when ctx ends (the driver's
// connect takes no context); a session that connects after that is closed.
func connect(ctx context.Context, c *gocql.ClusterConfig) (*gocql.Session, error) {
	type result struct {
		s   *gocql.Session
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := c.CreateSession()
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// setUp detects the provider, ensures the keyspace and the catalog.
func (s *Store) setUp(ctx context.Context) error {
	p, err := detectProvider(ctx, s.session)
	if err != nil {
		return mapErr(ctx, "cql: detect provider", err)
	}
	s.provider = p
	if p != Keyspaces && s.poll > 100*time.Millisecond {
		s.poll = 100 * time.Millisecond
	}
	if s.opts.CreateKeyspace {
		if err := s.ddl(ctx, createKeyspaceCQL(s.ks, p, s.opts.Replication)); err != nil {
			return mapErr(ctx, "cql: create keyspace "+s.ks, err)
		}
		if err := s.waitKeyspace(ctx); err != nil {
			return err
		}
	} else {
		var name string
		err := s.session.Query(`SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?`, s.ks).
			ScanContext(ctx, &name)
		if errors.Is(err, gocql.ErrNotFound) {
			return store.Errorf(store.ErrInvalid, "cql: keyspace %q does not exist (set CreateKeyspace, or create it)", s.ks)
		}
		if err != nil {
			return mapErr(ctx, "cql: look up keyspace", err)
		}
	}
	if err := s.ddl(ctx, createCatalogCQL(s.ks, p)); err != nil {
		return mapErr(ctx, "cql: create catalog", err)
	}
	return s.waitTables(ctx, []string{catalogTable}, false)
}

// Provider reports the kind of cluster detected at Open.
func (s *Store) Provider() Provider { return s.provider }

// Keyspace returns the Store's keyspace.
func (s *Store) Keyspace() string { return s.ks }

// Session returns the driver session, for tools and tests that need raw
// access (cleanup of test keyspaces, baselines).
func (s *Store) Session() *gocql.Session { return s.session }

// Capabilities reports what the provider supports.
func (s *Store) Capabilities() store.Capabilities { return s.caps }

// Close marks the Store closed and closes its connections. It is safe to
// call more than once.
func (s *Store) Close() error {
	if !s.core.Close() {
		return nil
	}
	s.session.Close()
	if s.opts.Registerer != nil {
		s.opts.Registerer.Unregister(s.metrics)
	}
	return nil
}

// begin starts a data operation; beginTable a table operation, which
// waits for the cluster (see remote.Core).
func (s *Store) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	return s.core.Begin(ctx)
}

func (s *Store) beginTable(ctx context.Context) (context.Context, context.CancelFunc, error) {
	return s.core.BeginTable(ctx)
}

// observe counts and times one public operation; use as
// defer s.observe("op", time.Now(), &err).
func (s *Store) observe(op string, start time.Time, err *error) {
	outcome := "ok"
	switch {
	case *err == nil:
	case errors.Is(*err, store.ErrConflict):
		outcome = "conflict"
	case errors.Is(*err, store.ErrThrottled):
		outcome = "throttled"
	case errors.Is(*err, store.ErrUnavailable):
		outcome = "unavailable"
	case errors.Is(*err, store.ErrInvalid), errors.Is(*err, store.ErrTooLarge):
		outcome = "invalid"
	case errors.Is(*err, store.ErrTableNotFound), errors.Is(*err, store.ErrNotFound):
		outcome = "not_found"
	default:
		outcome = "error"
	}
	s.metrics.Observe(op, outcome, time.Since(start))
}

// stamper issues write timestamps (Unix µs from the wall clock) that
// strictly increase within the process, n at a time, so the mutations of
// one batch are ordered by their position and a later batch always wins
// over an earlier one from this process.
type stamper struct {
	mu   sync.Mutex
	last int64
	wall func() time.Time
}

// next reserves n consecutive timestamps and returns the first.
func (st *stamper) next(n int) int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.wall().UnixMicro()
	if t <= st.last {
		t = st.last + 1
	}
	st.last = t + int64(n) - 1
	return t
}

// slogAdapter hands the driver's log lines to the Store's logger.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) attrs(fields []gocql.LogField) []any {
	out := make([]any, 0, len(fields))
	for _, f := range fields {
		out = append(out, slog.Any(f.Name, f.Value.Any()))
	}
	return out
}

func (a slogAdapter) Error(msg string, fields ...gocql.LogField) {
	a.l.Error("cql driver: "+msg, a.attrs(fields)...)
}

func (a slogAdapter) Warning(msg string, fields ...gocql.LogField) {
	if msg == driverAgreementWarning {
		// Always so with no wait (see clusterConfig); awaitSchema reports.
		a.l.Debug("cql driver: "+msg, a.attrs(fields)...)
		return
	}
	a.l.Warn("cql driver: "+msg, a.attrs(fields)...)
}

// driverAgreementWarning is what the driver logs when its own wait for
// schema agreement after a schema change ends without agreement.
const driverAgreementWarning = "Error while awaiting for schema agreement after a schema change event."

func (a slogAdapter) Info(msg string, fields ...gocql.LogField) {
	a.l.Info("cql driver: "+msg, a.attrs(fields)...)
}

func (a slogAdapter) Debug(msg string, fields ...gocql.LogField) {
	a.l.Debug("cql driver: "+msg, a.attrs(fields)...)
}
