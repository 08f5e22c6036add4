package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/archive/s3target"
	"github.com/ebb-data/ebb/migrate/legacyopen"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/cql"
)

// serveConfig is `ebb serve`'s flags (API.md "Server"). The flags of the
// DB bind to db, which starts as ebb.DefaultOptions(), so that a default
// is written once, in package ebb.
type serveConfig struct {
	db                ebb.Options
	addr              string
	hotAddr           string
	data              string
	backend           string
	dynamoEndpoint    string
	dynamoRegion      string
	s3                s3target.Options
	cqlHosts          []string
	cqlKeyspace       string
	cqlConsistency    string
	cqlUsername       string
	cqlTLS            bool
	cqlCAFile         string
	cqlCreateKeyspace bool
	cqlReplication    string
	cqlMaxTables      int
	cqlTableOptions   []string
	cqlAuth           string
	dynamoPrefix      string
	authFile          string
	logLevel          string
	shutdownTimeout   time.Duration
	minFreeBytes      int64
	limits            server.Limits
	maxRunnable       int
	maxConns          int
	listCacheBytes    int64
	gc                gcConfig
	gcs               gcSettings // resolved from gc and the environment
	procs             int        // --procs
	setProcs          int        // resolved from procs and the environment; 0: leave GOMAXPROCS
	cpus              int        // the CPUs available, the runtime's default GOMAXPROCS
}

func newServeCmd(*client) *cobra.Command {
	cfg := serveConfig{db: ebb.DefaultOptions()}
	// The replica's name defaults per process (host:pid), which ebb.Open
	// fills in; a flag default would show this process's name in --help.
	cfg.db.ReplicaID = ""
	var configFile string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API",
		Long: `Run the HTTP API. With no flags: the embedded Pebble store in ./ebb-data,
listening on 127.0.0.1:7070, with the shard manager and the expiry sweeper
running. SIGINT or SIGTERM shuts down gracefully; a second one stops at once.
A browser pointed at the address (http://127.0.0.1:7070/) gets the dashboard.

--config FILE reads flag values from a YAML mapping keyed by flag name:

  addr: 127.0.0.1:7070
  backend: dynamodb
  dynamodb-endpoint: http://127.0.0.1:8000

Flags given on the command line override the file; a relative path in it
(data, auth-file, cql-ca-file) is relative to the file's directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile != "" {
				if err := applyConfigFile(cmd.LocalNonPersistentFlags(), configFile); err != nil {
					return err
				}
			}
			if err := checkBackendFlags(cmd.Flags(), cfg.backend, configFile); err != nil {
				return err
			}
			gcs, err := resolveGC(cfg.gc, cmd.Flags(), os.Getenv, memoryAvailable())
			if err != nil {
				return err
			}
			cfg.gcs = gcs
			cfg.cpus = runtimeCPUs(os.Getenv)
			if cfg.setProcs, err = resolveProcs(cfg.procs, cmd.Flags().Changed("procs"), os.Getenv, cfg.cpus); err != nil {
				return err
			}
			return serve(cmd.Context(), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, configFlag, "", "YAML file of these flags' values by flag name (addr: 127.0.0.1:7070); flags on the command line override it")
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7070", "address to listen on (HOST:PORT; port 0 picks a free one)")
	f.StringVar(&cfg.hotAddr, "hot-addr", "", "second address serving the same API on a lean HTTP/1.1 server, for clients making many small reads and writes (there a request with a body runs on when its client hangs up); empty: none")
	f.StringVar(&cfg.data, "data", "./ebb-data", "data directory of the pebble backend")
	cfg.backend = "pebble"
	f.Var((*backendName)(&cfg.backend), "backend", "storage backend: pebble, dynamodb or cql")
	f.StringVar(&cfg.dynamoEndpoint, "dynamodb-endpoint", "", "DynamoDB API endpoint URL (default: the AWS endpoint of the region)")
	f.StringVar(&cfg.dynamoRegion, "dynamodb-region", "", "DynamoDB region (default: from the AWS environment)")
	f.StringVar(&cfg.dynamoPrefix, "dynamodb-table-prefix", "", "prefix of every DynamoDB table ebb creates, so that several deployments share one account")
	f.StringVar(&cfg.s3.Endpoint, "s3-endpoint", "", "S3 endpoint URL of s3:// index archives (an S3-compatible service; default: AWS's, from the region)")
	f.StringVar(&cfg.s3.Region, "s3-region", "", "S3 region of s3:// index archives (default: from the AWS environment)")
	f.BoolVar(&cfg.s3.PathStyle, "s3-path-style", false, "address S3 buckets as ENDPOINT/BUCKET, as most S3-compatible services need")
	f.StringSliceVar(&cfg.cqlHosts, "cql-hosts", nil, "CQL contact points, comma-separated (H1,H2)")
	f.StringVar(&cfg.cqlKeyspace, "cql-keyspace", "ebb", "CQL keyspace")
	f.StringVar(&cfg.cqlConsistency, "cql-consistency", cql.DefaultOptions().Consistency.String(), "CQL consistency level of reads and writes (conditional writes use LOCAL_SERIAL)")
	f.StringVar(&cfg.cqlUsername, "cql-username", "", "CQL user (password from $EBB_CQL_PASSWORD); Keyspaces service-specific credentials work the same way")
	f.BoolVar(&cfg.cqlTLS, "cql-tls", false, "connect to the CQL cluster with TLS (Keyspaces requires it, on port 9142)")
	f.StringVar(&cfg.cqlCAFile, "cql-ca-file", "", "PEM file of CA certificates for the CQL cluster's TLS (implies --cql-tls)")
	f.BoolVar(&cfg.cqlCreateKeyspace, "cql-create-keyspace", false, "create the CQL keyspace when missing, with --cql-replication")
	f.StringVar(&cfg.cqlAuth, "cql-auth", "password", "CQL authentication: password (--cql-username, $EBB_CQL_PASSWORD) or sigv4 (Amazon Keyspaces; region and credentials from the AWS default chain)")
	f.IntVar(&cfg.cqlMaxTables, "cql-max-tables", 0, "most CQL tables ebb's keyspace may hold; a create past it fails (0: the provider's default, 256 on Amazon Keyspaces, none elsewhere; -1: none)")
	f.StringArrayVar(&cfg.cqlTableOptions, "cql-table-options", nil, "ROLE=OPTIONS: the CREATE TABLE options (after WITH, joined by AND) of new CQL tables of a role (shard, list, shared or expiry) on Cassandra and ScyllaDB, instead of ebb's (see docs/backends.md); ROLE= for the cluster's defaults; repeatable")
	f.StringVar(&cfg.cqlReplication, "cql-replication", "", "replication map for --cql-create-keyspace, e.g. {'class':'NetworkTopologyStrategy','dc1':3} (default: SingleRegionStrategy on Keyspaces, SimpleStrategy RF 1 elsewhere)")
	f.DurationVar(&cfg.db.ReconcileInterval, "reconcile-interval", cfg.db.ReconcileInterval, "how often the shard manager reconciles every index")
	f.DurationVar(&cfg.db.SweepInterval, "sweep-interval", cfg.db.SweepInterval, "how often the expiry sweeper deletes expired rows")
	f.Float64Var(&cfg.db.SweepMaxDeletesPerSecond, "sweep-max-deletes-per-second", cfg.db.SweepMaxDeletesPerSecond, "pace the expiry sweeper's physical deletes to at most this many per second, so that a mass expiry leaves capacity to other traffic (reads never return expired rows meanwhile); 0: unlimited")
	f.DurationVar(&cfg.db.ExpirationsRetention, "expirations-retention", cfg.db.ExpirationsRetention, "how long the log of expirations (GET /v1/expirations, ebb watch expirations) keeps what it recorded")
	f.BoolVar(&cfg.db.NoExpirations, "no-expirations", false, "keep no log of expirations: the sweeper saves a read and a log write per removed row (docs/cost.md)")
	f.DurationVar(&cfg.db.LeaseDuration, "lease-duration", cfg.db.LeaseDuration, "lease of the shard manager and sweeper roles among replicas sharing a backend; another replica takes over within two of them")
	f.StringVar(&cfg.db.ReplicaID, "replica-id", "", "this replica's name in leases and /v1/admin/cluster (default host:pid)")
	f.StringVar(&cfg.authFile, "auth-file", "", "YAML file of bearer tokens and their scopes; required to listen on a non-loopback address")
	f.StringVar(&cfg.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long shutdown waits for in-flight requests")
	f.Int64Var(&cfg.minFreeBytes, "min-free-bytes", ebb.DefaultMinFreeBytes, "pebble backend: below this many free bytes on the data directory's disk, writes that add data are refused with 507 insufficient_storage (deletes, drops and expiry go on); 0 turns the floor off")
	f.IntVar(&cfg.limits.Reads, "max-reads", server.DefaultLimits().Reads, "reads under /v1 worked on at once; past it, after waiting up to 50 ms (at once when as many already wait), a read is answered 503 with Retry-After")
	f.IntVar(&cfg.limits.Writes, "max-writes", server.DefaultLimits().Writes, "writes under /v1 worked on at once; past it, after waiting up to 50 ms (at once when as many already wait), a write is answered 503 with Retry-After")
	f.IntVar(&cfg.limits.Admin, "max-admin", server.DefaultLimits().Admin, "requests under /v1/admin worked on at once; past it, after waiting up to 50 ms (at once when as many already wait), one is answered 503 with Retry-After")
	f.Int64Var(&cfg.listCacheBytes, "list-cache-bytes", server.DefaultListCacheBytes, "bytes of encoded list pages kept to answer the same read again while its list is unchanged and no item of it has expired (embedded backend only; reads are still authorized, admitted and metered as reads); 0: keep none")
	f.Int64Var(&cfg.limits.ResponseBytes, "max-response-bytes", server.DefaultLimits().ResponseBytes, "bytes of page responses (events, list items, shared-table items) built or being written at once, both listeners together; a read past it gets a shorter page, or, under 1 MiB left, waits up to 50 ms and is answered 503 with Retry-After")
	f.IntVar(&cfg.maxRunnable, "max-runnable", server.DefaultLimits().Runnable, "goroutines per CPU ready to run but waiting for one, past which the CPU counts as overloaded and a growing share of new reads and writes (up to 15 in 16) is answered 503 with Retry-After until the backlog drains; 0 turns this off")
	f.IntVar(&cfg.maxConns, "max-conns", 0, "connections each listener holds at once; past it a new connection waits until one closes. 0: three quarters of the open-file limit shared by the listeners, at most 4096 each (384 each at a limit of 1024 with --hot-addr)")
	addGCFlags(f, &cfg.gc)
	addProcsFlag(f, &cfg.procs)
	return cmd
}

// serve runs the server until ctx is cancelled (SIGINT/SIGTERM), then shuts
// down in order: stop accepting and drain in-flight requests, stop the
// background loops, close the store.
func serve(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) (err error) {
	log, err := newLogger(stderr, cfg.logLevel)
	if err != nil {
		return err
	}
	if cfg.db.ReconcileInterval <= 0 || cfg.db.SweepInterval <= 0 || cfg.shutdownTimeout <= 0 {
		return errors.New("--reconcile-interval, --sweep-interval and --shutdown-timeout must be positive")
	}
	if cfg.limits.Reads <= 0 || cfg.limits.Writes <= 0 || cfg.limits.Admin <= 0 || cfg.limits.ResponseBytes <= 0 {
		return errors.New("--max-reads, --max-writes, --max-admin and --max-response-bytes must be positive")
	}
	if cfg.listCacheBytes < 0 {
		return fmt.Errorf("--list-cache-bytes %d is negative; 0 keeps no page", cfg.listCacheBytes)
	}
	switch {
	case cfg.maxRunnable < 0:
		return fmt.Errorf("--max-runnable %d is negative; 0 turns CPU shedding off", cfg.maxRunnable)
	case cfg.maxRunnable == 0:
		cfg.limits.Runnable = -1
	default:
		cfg.limits.Runnable = cfg.maxRunnable
	}
	if cfg.maxConns < 0 {
		return fmt.Errorf("--max-conns %d is negative; 0 takes the default", cfg.maxConns)
	}
	if cfg.minFreeBytes < 0 {
		return fmt.Errorf("--min-free-bytes %d is negative; 0 turns the floor off", cfg.minFreeBytes)
	}
	if cfg.db.ExpirationsRetention <= 0 {
		return fmt.Errorf("--expirations-retention %s must be positive; --no-expirations turns the log off", cfg.db.ExpirationsRetention)
	}
	if cfg.db.SweepMaxDeletesPerSecond < 0 {
		return fmt.Errorf("--sweep-max-deletes-per-second %g is negative; 0 means unlimited", cfg.db.SweepMaxDeletesPerSecond)
	}
	cfg.gcs.apply()
	if cfg.setProcs > 0 {
		runtime.GOMAXPROCS(cfg.setProcs)
	}
	if cfg.limits.Runnable > 0 && cfg.cpus > 0 {
		// The CPU guard counts runnable goroutines per Go processor;
		// --max-runnable is per CPU, and there may be more processors.
		cfg.limits.Runnable = max(1, cfg.limits.Runnable*cfg.cpus/runtime.GOMAXPROCS(0))
	}
	// Auth is settled before anything is opened, so a refusal is instant
	// and leaves the data directory alone.
	var auth *server.Auth
	if cfg.authFile != "" {
		if auth, err = server.LoadAuth(cfg.authFile); err != nil {
			return err
		}
	} else {
		if err := server.RequireLoopback(cfg.addr); err != nil {
			return err
		}
		if cfg.hotAddr != "" {
			if err := server.RequireLoopback(cfg.hotAddr); err != nil {
				return fmt.Errorf("--hot-addr: %w", err)
			}
		}
	}

	// The ports are bound before the store is opened and the leases
	// taken: a port already in use fails the start at once, before any
	// lease is held, and connections made while the store opens wait in
	// the kernel's queue and are answered once it is open.
	ln, hotLn, err := server.Listen(cfg.addr, cfg.hotAddr)
	if err != nil {
		return err
	}
	handedOver := false
	defer func() {
		if !handedOver {
			_ = ln.Close()
			if hotLn != nil {
				_ = hotLn.Close()
			}
		}
	}()

	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return fmt.Errorf("register go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return fmt.Errorf("register process collector: %w", err)
	}
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ebb_build_info",
		Help: "Always 1; the labels say which ebb build runs, on which Go and backend.",
	}, []string{"version", "go_version", "backend"})
	buildInfo.WithLabelValues(version, runtime.Version(), cfg.backend).Set(1)
	if err := reg.Register(buildInfo); err != nil {
		return fmt.Errorf("register build info: %w", err)
	}
	opts, where, err := backendOptions(ctx, cfg, log, reg)
	if err != nil {
		return err
	}
	opts.Logger, opts.Registerer = log, reg
	// Migrations off DynamoDB and CQL tables reach them through the
	// backend's own client where they live beside ebb's tables.
	opts.LegacyOpener = legacyopen.New(legacyopen.Options{Backend: opts.Store, Logger: log})
	// Index archives go to directories and, through the S3 SDK this
	// binary links, to s3:// locations.
	opts.ArchiveOpener = s3target.Opener(cfg.s3)
	opts.ReconcileInterval, opts.SweepInterval = cfg.db.ReconcileInterval, cfg.db.SweepInterval
	opts.LeaseDuration, opts.ReplicaID, opts.CacheTTL = cfg.db.LeaseDuration, cfg.db.ReplicaID, cfg.db.CacheTTL
	opts.MinFreeBytes = cfg.minFreeBytes
	opts.SweepMaxDeletesPerSecond = cfg.db.SweepMaxDeletesPerSecond
	opts.ExpirationsRetention, opts.NoExpirations = cfg.db.ExpirationsRetention, cfg.db.NoExpirations
	if cfg.minFreeBytes == 0 {
		opts.MinFreeBytes = -1 // off; zero in ebb.Options takes the default
	}
	db, err := ebb.Open(ctx, opts)
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("data directory %s is locked: another ebb process is using it (stop that process or pass another --data)", cfg.data)
	}
	if err != nil {
		return err
	}
	// Close runs after the server has drained: it stops the background
	// roles, hands their leases on and closes the store.
	defer func() {
		if cerr := db.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close: %w", cerr))
		}
		if err == nil {
			// The last line of a clean stop: requests drained, roles
			// handed on, the store closed.
			log.Info("stopped cleanly")
		}
	}()
	if auth != nil {
		warnForeignLegacy(ctx, log, db.Migrations())
	}
	srv, err := server.New(server.Options{DB: db, Registerer: reg, Gatherer: reg, Logger: log, Auth: auth, Limits: cfg.limits, HotAddr: cfg.hotAddr, MaxConns: cfg.maxConns, ListCacheBytes: listCacheOption(cfg.listCacheBytes)})
	if err != nil {
		return err
	}
	handedOver = true
	return srv.Serve(ctx, ln, hotLn, cfg.shutdownTimeout, func(url string) {
		// A negative limit reads the one in force without changing it.
		log.Info("serving", "url", url, "backend", cfg.backend, "auth", auth != nil,
			"go_memory_limit_bytes", debug.SetMemoryLimit(-1), "go_gc_percent", cfg.gcs.gcPercentText(os.Getenv), "go_max_procs", runtime.GOMAXPROCS(0))
		if hot := srv.HotURL(); hot != "" {
			log.Info("serving on the hot listener", "url", hot)
			where += "; hot listener " + hot
		}
		fmt.Fprintf(stdout, "ebb serving %s (backend %s, %s)\n", url, cfg.backend, where)
	})
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// listCacheOption is server.Options.ListCacheBytes for --list-cache-bytes,
// where 0 keeps no page.
func listCacheOption(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}
