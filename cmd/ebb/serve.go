package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo"
	ebbpebble "github.com/ebb-data/ebb/store/pebble"
	"github.com/ebb-data/ebb/timeseries"
)

// serveConfig is `ebb serve`'s flags (API.md "Server").
type serveConfig struct {
	addr              string
	data              string
	backend           string
	dynamoEndpoint    string
	dynamoRegion      string
	cqlHosts          []string
	cqlKeyspace       string
	reconcileInterval time.Duration
	sweepInterval     time.Duration
	authFile          string
	logLevel          string
	shutdownTimeout   time.Duration
}

func newServeCmd(*client) *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API",
		Long: `Run the HTTP API. With no flags: the embedded Pebble store in ./ebb-data,
listening on 127.0.0.1:7070, with the shard manager and the expiry sweeper
running. SIGINT or SIGTERM shuts down gracefully; a second one stops at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7070", "address to listen on (HOST:PORT; port 0 picks a free one)")
	f.StringVar(&cfg.data, "data", "./ebb-data", "data directory of the pebble backend")
	f.StringVar(&cfg.backend, "backend", "pebble", "storage backend: pebble, dynamodb or cql")
	f.StringVar(&cfg.dynamoEndpoint, "dynamodb-endpoint", "", "DynamoDB API endpoint URL (default: the AWS endpoint of the region)")
	f.StringVar(&cfg.dynamoRegion, "dynamodb-region", "", "DynamoDB region (default: from the AWS environment)")
	f.StringSliceVar(&cfg.cqlHosts, "cql-hosts", nil, "CQL contact points, comma-separated (H1,H2)")
	f.StringVar(&cfg.cqlKeyspace, "cql-keyspace", "ebb", "CQL keyspace")
	f.DurationVar(&cfg.reconcileInterval, "reconcile-interval", 30*time.Second, "how often the shard manager reconciles every index")
	f.DurationVar(&cfg.sweepInterval, "sweep-interval", time.Second, "how often the expiry sweeper deletes expired rows")
	f.StringVar(&cfg.authFile, "auth-file", "", "YAML file of bearer tokens and their scopes; required to listen on a non-loopback address")
	f.StringVar(&cfg.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long shutdown waits for in-flight requests")
	return cmd
}

// serveEnv is what feature wiring builds on and adds to.
type serveEnv struct {
	cfg serveConfig
	// Store is the store every feature and the server use. A decorator
	// (precise expiry) replaces it, so features wired after it see the
	// decorated store; serve closes both.
	Store      store.Store
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Now        func() time.Time
	// Features are handed to the server, in order.
	Features []server.Feature
	// Loops start once the server listens and are stopped, and waited for,
	// after it has drained and before the store closes.
	Loops *loops
}

// wireFeatures builds each feature on env.Store. A feature adds, in a few
// lines here, its service, its server.Feature and its background loop:
//
//	svc, err := timeseries.New(ctx, env.Store, timeseries.Options{Now: env.Now, Logger: env.Logger, Registerer: env.Registerer})
//	if err != nil {
//		return fmt.Errorf("indexes: %w", err)
//	}
//	env.Features = append(env.Features, server.Indexes(svc))
//	env.Loops.Add("shard manager", func(ctx context.Context) { mgr.Run(ctx, env.cfg.reconcileInterval) })
//
// A Store decorator goes first and replaces env.Store.
func wireFeatures(ctx context.Context, env *serveEnv) error {
	// Precise expiry decorates the store first, so every feature's writes
	// carrying an expiry are indexed, and its sweeper deletes them.
	exp, err := expiry.Wrap(ctx, env.Store, expiry.Options{
		Now: env.Now, Logger: env.Logger, Registerer: env.Registerer,
		SweepInterval: env.cfg.sweepInterval,
	})
	if err != nil {
		return fmt.Errorf("expiry: %w", err)
	}
	env.Store = exp
	env.Loops.Add("expiry sweeper", exp.Sweeper().Run)

	// Time-sharded indexes and their shard manager loop.
	indexes, err := timeseries.New(timeseries.Options{
		Store: env.Store, Now: env.Now, Logger: env.Logger, Registerer: env.Registerer,
		ReconcileInterval: env.cfg.reconcileInterval,
	})
	if err != nil {
		return fmt.Errorf("indexes: %w", err)
	}
	env.Features = append(env.Features, server.Indexes(indexes))
	env.Loops.Add("shard manager", func(ctx context.Context) { _ = indexes.Manager().Run(ctx) })

	// Shared tables: logical tables multiplexed into one physical table.
	tables, err := multitable.Open(ctx, env.Store, multitable.Options{
		Now: env.Now, Logger: env.Logger, Registerer: env.Registerer,
	})
	if err != nil {
		return fmt.Errorf("shared tables: %w", err)
	}
	env.Features = append(env.Features, server.Tables(tables))

	// Feature-store lists, on the decorated store so that every item is
	// physically deleted soon after it expires.
	listSvc, err := lists.New(ctx, env.Store, lists.Options{
		Now: env.Now, Logger: env.Logger, Registerer: env.Registerer,
	})
	if err != nil {
		return fmt.Errorf("lists: %w", err)
	}
	env.Features = append(env.Features, server.Lists(listSvc))
	return nil
}

// serve runs the server until ctx is cancelled (SIGINT/SIGTERM), then shuts
// down in order: stop accepting and drain in-flight requests, stop the
// background loops, close the store.
func serve(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) (err error) {
	log, err := newLogger(stderr, cfg.logLevel)
	if err != nil {
		return err
	}
	if cfg.reconcileInterval <= 0 || cfg.sweepInterval <= 0 || cfg.shutdownTimeout <= 0 {
		return errors.New("--reconcile-interval, --sweep-interval and --shutdown-timeout must be positive")
	}
	// Auth is settled before anything is opened, so a refusal is instant
	// and leaves the data directory alone.
	var auth *server.Auth
	if cfg.authFile != "" {
		if auth, err = server.LoadAuth(cfg.authFile); err != nil {
			return err
		}
	} else if err := requireLoopback(cfg.addr); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return fmt.Errorf("register go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return fmt.Errorf("register process collector: %w", err)
	}
	raw, where, err := openStore(cfg, log, reg)
	if err != nil {
		return err
	}
	env := &serveEnv{cfg: cfg, Store: raw, Registerer: reg, Logger: log, Now: time.Now, Loops: newLoops(log)}
	defer func() {
		// The loops are stopped by now on every path; only the store is
		// left. A decorator's Close may or may not close what it wraps, and
		// Close is safe twice, so both are closed.
		cerr := env.Store.Close()
		if env.Store != raw {
			cerr = errors.Join(cerr, raw.Close())
		}
		if cerr != nil {
			err = errors.Join(err, fmt.Errorf("close store: %w", cerr))
		}
	}()

	if err := wireFeatures(ctx, env); err != nil {
		return err
	}
	srv, err := server.New(server.Options{
		Store: env.Store, Registerer: reg, Gatherer: reg, Logger: log,
		Auth: auth, Features: env.Features, Now: env.Now,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	httpSrv := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- httpSrv.Serve(ln) }()
	env.Loops.start()
	defer env.Loops.stop()

	url := "http://" + ln.Addr().String()
	log.Info("serving", "url", url, "backend", cfg.backend, "auth", auth != nil)
	fmt.Fprintf(stdout, "ebb serving %s (backend %s, %s)\n", url, cfg.backend, where)

	select {
	case <-ctx.Done():
		log.Info("shutting down", "timeout", cfg.shutdownTimeout)
	case err := <-served:
		// Serve returns only on failure until Shutdown is called.
		return fmt.Errorf("serve: %w", err)
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownTimeout)
	defer cancel()
	if err := httpSrv.Shutdown(drainCtx); err != nil {
		log.Warn("requests still running at the shutdown timeout; closing their connections", "err", err)
		_ = httpSrv.Close()
	}
	<-served // http.ErrServerClosed
	return nil
}

// openStore opens the configured backend and registers its metrics on reg.
// It returns the store and a description of where its data lives for the
// ready line.
func openStore(cfg serveConfig, log *slog.Logger, reg prometheus.Registerer) (store.Store, string, error) {
	switch cfg.backend {
	case "pebble":
		st, err := ebbpebble.Open(cfg.data, ebbpebble.Options{Logger: log})
		if errors.Is(err, store.ErrLocked) {
			return nil, "", fmt.Errorf("data directory %s is locked: another ebb process is using it (stop that process or pass another --data)", cfg.data)
		}
		if err != nil {
			return nil, "", fmt.Errorf("open data directory %s: %w", cfg.data, err)
		}
		if err := reg.Register(st.Collector()); err != nil {
			_ = st.Close()
			return nil, "", fmt.Errorf("register pebble metrics: %w", err)
		}
		return st, "data " + cfg.data, nil

	case "dynamodb":
		o := dynamo.DefaultOptions()
		o.Endpoint, o.Region, o.Logger = cfg.dynamoEndpoint, cfg.dynamoRegion, log
		ctx, cancel := context.WithTimeout(context.Background(), o.Timeout+o.TableTimeout)
		defer cancel()
		st, err := dynamo.Open(ctx, o)
		if err != nil {
			return nil, "", fmt.Errorf("open DynamoDB backend: %w", err)
		}
		if err := reg.Register(st.Collector()); err != nil {
			_ = st.Close()
			return nil, "", fmt.Errorf("register dynamodb metrics: %w", err)
		}
		where := "endpoint " + cfg.dynamoEndpoint
		if cfg.dynamoEndpoint == "" {
			where = "region " + cfg.dynamoRegion
		}
		return st, where, nil

	// The CQL backend (Cassandra, ScyllaDB, Keyspaces) is not built yet.
	case "cql":
		return nil, "", fmt.Errorf("backend %s is not available in this build", cfg.backend)
	}
	return nil, "", fmt.Errorf("unknown --backend %q: want pebble, dynamodb or cql", cfg.backend)
}

// requireLoopback refuses a non-loopback listen address: without an auth
// file every client that can reach the port could read and delete
// everything.
func requireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	what := "address " + host
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		what = "every interface"
	}
	return fmt.Errorf("refusing to listen on %s (%s) without --auth-file: any client that can reach it could read and delete all data; "+
		"pass --auth-file FILE with bearer tokens, or listen on a loopback address such as 127.0.0.1:7070", addr, what)
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// loops owns serve's background loops (shard manager, expiry sweeper...):
// it starts them once the server listens, and on shutdown cancels them and
// waits until every one has returned, so the store is never closed under a
// running loop.
type loops struct {
	log *slog.Logger

	mu      sync.Mutex
	pending []namedLoop
	ctx     context.Context // nil until start
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type namedLoop struct {
	name string
	run  func(ctx context.Context)
}

func newLoops(log *slog.Logger) *loops { return &loops{log: log} }

// Add registers a loop. run must return soon after ctx is cancelled. A loop
// added after start starts at once; one added after stop never runs.
func (l *loops) Add(name string, run func(ctx context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.pending = append(l.pending, namedLoop{name, run})
		return
	}
	if l.ctx.Err() == nil {
		l.goLocked(namedLoop{name, run})
	}
}

// start starts every loop added so far.
func (l *loops) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx != nil {
		return
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	for _, nl := range l.pending {
		l.goLocked(nl)
	}
	l.pending = nil
}

func (l *loops) goLocked(nl namedLoop) {
	ctx := l.ctx
	l.wg.Go(func() {
		// A loop that panics is logged and stays stopped rather than
		// taking the server and its in-flight requests down with it; its
		// own metrics (last success) show that it stopped.
		defer func() {
			if v := recover(); v != nil {
				l.log.Error("background loop panicked", "loop", nl.name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			}
		}()
		l.log.Debug("background loop started", "loop", nl.name)
		nl.run(ctx)
		l.log.Debug("background loop stopped", "loop", nl.name)
	})
}

// stop cancels every loop and waits for all of them to return. It is safe
// to call more than once, and before start.
func (l *loops) stop() {
	l.mu.Lock()
	if l.ctx == nil {
		// Never started: mark stopped so that a late Add does not run.
		l.ctx, l.cancel = context.WithCancel(context.Background())
		l.pending = nil
	}
	l.cancel()
	l.mu.Unlock()
	l.wg.Wait()
}
