package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

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
		o.MaxTables = cfg.cqlMaxTables
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
