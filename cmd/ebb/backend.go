package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/spf13/pflag"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/store/cql"
	"github.com/ebb-data/ebb/store/dynamo"
)

// backendOptions turns the backend flags into ebb.Options: a directory for
// the embedded store, or a remote store opened here. It also returns where
// the data lives, for the ready line.
func backendOptions(ctx context.Context, cfg serveConfig, log *slog.Logger, reg prometheus.Registerer) (ebb.Options, string, error) {
	switch cfg.backend {
	case "pebble":
		return ebb.Options{Dir: cfg.data}, "data " + cfg.data, nil

	case "dynamodb":
		o := dynamo.DefaultOptions()
		o.Endpoint, o.Region, o.Logger, o.TablePrefix = cfg.dynamoEndpoint, cfg.dynamoRegion, log, cfg.dynamoPrefix
		where := "endpoint " + cfg.dynamoEndpoint
		if cfg.dynamoEndpoint == "" {
			where = "region " + cfg.dynamoRegion
		}
		// A malformed option is refused before anything is logged or
		// dialled.
		if err := o.Validate(); err != nil {
			return ebb.Options{}, "", fmt.Errorf("open DynamoDB backend: %w", err)
		}
		var st *dynamo.Store
		err := connecting(ctx, log, "DynamoDB", where, o.Timeout+o.TableTimeout, func(ctx context.Context) (err error) {
			st, err = dynamo.Open(ctx, o)
			return err
		})
		if err != nil {
			return ebb.Options{}, "", unreachable("DynamoDB", where, dynamoAddr(cfg), err)
		}
		if err := reg.Register(st.Collector()); err != nil {
			_ = st.Close()
			return ebb.Options{}, "", fmt.Errorf("register dynamodb metrics: %w", err)
		}
		return ebb.Options{Store: st}, where, nil

	case "cql":
		if len(cfg.cqlHosts) == 0 {
			return ebb.Options{}, "", fmt.Errorf("--backend cql needs --cql-hosts H1,H2 (contact points, host[:port])")
		}
		o := cql.DefaultOptions()
		o.Hosts, o.Keyspace, o.Logger, o.Registerer = cfg.cqlHosts, cfg.cqlKeyspace, log, reg
		o.Username, o.Password = cfg.cqlUsername, os.Getenv("EBB_CQL_PASSWORD")
		o.TLS, o.CAFile = cfg.cqlTLS || cfg.cqlCAFile != "", cfg.cqlCAFile
		o.CreateKeyspace, o.Replication = cfg.cqlCreateKeyspace, cfg.cqlReplication
		o.MaxTables = cfg.cqlMaxTables
		tableOpts, err := cql.ParseTableOptions(cfg.cqlTableOptions)
		if err != nil {
			return ebb.Options{}, "", fmt.Errorf("--cql-table-options: %w", err)
		}
		o.TableOptions = tableOpts
		if err := cqlAuth(ctx, cfg.cqlAuth, &o); err != nil {
			return ebb.Options{}, "", err
		}
		c, err := gocql.ParseConsistencyWrapper(cfg.cqlConsistency)
		if err == nil && c == gocql.Any {
			// ANY acknowledges a write stored only as a hint: reads could
			// not find it, and ebb's reads must see its writes.
			err = fmt.Errorf("ANY is not supported; use ONE, LOCAL_QUORUM or QUORUM")
		}
		if err != nil {
			return ebb.Options{}, "", fmt.Errorf("--cql-consistency %q: %w", cfg.cqlConsistency, err)
		}
		o.Consistency = c
		if err := o.Validate(); err != nil {
			return ebb.Options{}, "", fmt.Errorf("open CQL backend: %w", err)
		}
		var st *cql.Store
		err = connecting(ctx, log, "CQL", "hosts "+strings.Join(cfg.cqlHosts, ","), o.Timeout+o.TableTimeout, func(ctx context.Context) (err error) {
			st, err = cql.Open(ctx, o)
			return err
		})
		if err != nil {
			return ebb.Options{}, "", fmt.Errorf("open CQL backend: %w", err)
		}
		return ebb.Options{Store: st}, fmt.Sprintf("hosts %s, keyspace %s", strings.Join(cfg.cqlHosts, ","), cfg.cqlKeyspace), nil
	}
	return ebb.Options{}, "", fmt.Errorf("unknown --backend %q: want pebble, dynamodb or cql", cfg.backend)
}

// backendOfFlag names the backend a flag of `ebb serve` belongs to, by the
// flag's prefix; flags of every backend belong to none.
func backendOfFlag(name string) string {
	switch {
	case strings.HasPrefix(name, "dynamodb-"):
		return "dynamodb"
	case strings.HasPrefix(name, "cql-"):
		return "cql"
	}
	return ""
}

// configLineAnnotation marks a flag set from a config file; its value is
// the line, so that a refusal can point at it.
const configLineAnnotation = "ebb-config-line"

// checkBackendFlags refuses a flag of a backend other than the selected
// one, given on the command line or in the config file: such a flag would
// otherwise be ignored, and `ebb serve --dynamodb-endpoint URL` would
// serve on the embedded store while its user believed it on DynamoDB. The
// backend is never inferred from the flags: which store holds the data is
// said once, with --backend.
func checkBackendFlags(flags *pflag.FlagSet, backend, configFile string) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		owner := backendOfFlag(f.Name)
		if err != nil || owner == "" || owner == backend {
			return
		}
		where := "--" + f.Name
		if !f.Changed {
			line, ok := f.Annotations[configLineAnnotation]
			if !ok {
				return
			}
			n, _ := strconv.Atoi(line[0])
			where = fmt.Sprintf("config file %s, line %d: %s", configFile, n, f.Name)
		}
		selected := backend
		if !flags.Changed("backend") {
			if _, ok := flags.Lookup("backend").Annotations[configLineAnnotation]; !ok {
				selected += " (the default)"
			}
		}
		err = fmt.Errorf("%s is a flag of the %s backend, but the backend is %s: select it with --backend %s, or drop the flag",
			where, owner, selected, owner)
	})
	return err
}

// backendName is the value of --backend, checked when it is set, so that
// a wrong name in a config file is reported with the file and its line
// as every other bad value there is.
type backendName string

func (b *backendName) String() string { return string(*b) }
func (b *backendName) Type() string   { return "string" }

func (b *backendName) Set(s string) error {
	switch s {
	case "pebble", "dynamodb", "cql":
		*b = backendName(s)
		return nil
	}
	return fmt.Errorf("unknown backend %q: want pebble, dynamodb or cql", s)
}

// connectingNotice is how often a backend that has not answered yet is
// reported while Open retries.
var connectingNotice = 2 * time.Second

// connecting runs open, a remote backend's Open, bounded by timeout, and
// logs that it connects and, every connectingNotice while open has not
// returned, that it is still retrying: a backend that does not answer is
// otherwise a silent pause of many seconds.
func connecting(ctx context.Context, log *slog.Logger, what, where string, timeout time.Duration, open func(context.Context) error) error {
	log.Info("connecting to "+what, "at", where)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan struct{})
	stopped := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		tick := time.NewTicker(connectingNotice)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				log.Warn(what+" has not answered yet; retrying", "at", where, "waited", time.Since(start).Round(100*time.Millisecond))
			}
		}
	}()
	err := open(ctx)
	close(done)
	<-stopped
	return err
}

// dynamoAddr is the host:port the DynamoDB backend talks to, "" when the
// SDK picks it (no endpoint given).
func dynamoAddr(cfg serveConfig) string {
	u, err := url.Parse(cfg.dynamoEndpoint)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// unreachable turns a remote backend's failed Open into one line naming
// the backend, where it was looked for and the cause. When the open ran
// out of time the SDK's error says only that its context expired; a
// direct connection to addr then names what stood in the way (connection
// refused, no such host, a timeout).
func unreachable(what, where, addr string, err error) error {
	cause := err
	if addr != "" && (errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "deadline exceeded") || strings.Contains(err.Error(), "connection refused")) {
		if c, derr := net.DialTimeout("tcp", addr, time.Second); derr != nil {
			cause = derr
		} else {
			_ = c.Close()
		}
	}
	var op *net.OpError
	if !errors.As(cause, &op) {
		return fmt.Errorf("open %s backend at %s: %w", what, where, err)
	}
	return fmt.Errorf("%s at %s unreachable: %v", what, where, op)
}
