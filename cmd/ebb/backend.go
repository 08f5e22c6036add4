package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

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
		ctx, cancel := context.WithTimeout(ctx, o.Timeout+o.TableTimeout)
		defer cancel()
		st, err := dynamo.Open(ctx, o)
		if err != nil {
			return ebb.Options{}, "", fmt.Errorf("open DynamoDB backend: %w", err)
		}
		if err := reg.Register(st.Collector()); err != nil {
			_ = st.Close()
			return ebb.Options{}, "", fmt.Errorf("register dynamodb metrics: %w", err)
		}
		where := "endpoint " + cfg.dynamoEndpoint
		if cfg.dynamoEndpoint == "" {
			where = "region " + cfg.dynamoRegion
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
		ctx, cancel := context.WithTimeout(ctx, o.Timeout+o.TableTimeout)
		defer cancel()
		st, err := cql.Open(ctx, o)
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
