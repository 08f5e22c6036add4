// Package legacyopen opens the legacy sources of package migrate that live
// outside ebb's own store: DynamoDB tables (migrate/dynamolegacy) and CQL
// tables (migrate/cqllegacy). It is the migrate.Opener that whoever chose
// the backend hands to ebb.Options.LegacyOpener (the ebb command does), so
// that the root package, and an embedder who links only the embedded
// backend, links neither the AWS SDK nor the CQL driver.
package legacyopen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/migrate/cqllegacy"
	"github.com/ebb-data/ebb/migrate/dynamolegacy"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/cql"
	"github.com/ebb-data/ebb/store/dynamo"
)

// Options configure New.
type Options struct {
	// Backend is the DB's backend as opened, before ebb wraps it. A
	// *dynamo.Store lends its client, and a *cql.Store its session, to
	// legacy tables whose config names no endpoint (nor, for DynamoDB, a
	// region): they live beside ebb's own tables. Nil, or another backend,
	// lends nothing.
	Backend store.Store
	// Logger receives the logs of CQL sessions opened to other clusters.
	// Nil discards.
	Logger *slog.Logger
}

// New returns the opener of DynamoDB and CQL legacy sources, for
// ebb.Options.LegacyOpener. A legacy DynamoDB table is reached through the
// backend's own client when the backend is DynamoDB and the config names
// no endpoint or region, otherwise through a client of the AWS SDK's
// defaults and the config's endpoint and region; a CQL table on the
// backend's own session when the backend is CQL and the config names no
// endpoint, otherwise on a session of its own to the endpoint's hosts.
// Credentials that are missing or refused fail with
// migrate.ErrLegacyCredentials.
func New(o Options) migrate.Opener {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, cfg migrate.LegacyConfig) (migrate.Source, error) {
		switch cfg.Kind {
		case migrate.KindDynamoDB:
			return o.openDynamo(ctx, cfg)
		case migrate.KindCQL:
			return o.openCQL(ctx, cfg)
		}
		return nil, store.Errorf(store.ErrInvalid, "legacy sources of kind %q are not supported", cfg.Kind)
	}
}

func (o Options) openDynamo(ctx context.Context, cfg migrate.LegacyConfig) (migrate.Source, error) {
	if ds, ok := o.Backend.(*dynamo.Store); ok && cfg.Endpoint == "" && cfg.Region == "" {
		return dynamolegacy.Open(ctx, ds.Client(), cfg)
	}
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("legacyopen: AWS configuration for legacy table %s: %w", cfg.Table, err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	awsCfg.Credentials = legacyCredentials{awsCfg.Credentials}
	client := dynamodb.NewFromConfig(awsCfg, func(d *dynamodb.Options) {
		if cfg.Endpoint != "" {
			d.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return dynamolegacy.Open(ctx, client, cfg)
}

// legacyCredentials marks a failure to find credentials for a legacy
// DynamoDB table as migrate.ErrLegacyCredentials (answered 502): the
// server's configuration lacks them, whatever the request.
type legacyCredentials struct{ p aws.CredentialsProvider }

func (c legacyCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	if c.p == nil {
		return aws.Credentials{}, store.Errorf(migrate.ErrLegacyCredentials, "no AWS credentials provider configured")
	}
	creds, err := c.p.Retrieve(ctx)
	if err != nil && ctx.Err() == nil {
		return creds, store.Wrapf(migrate.ErrLegacyCredentials, err, "the AWS credentials provider failed")
	}
	return creds, err
}

// openCQL opens a CQL legacy table. A session of its own (to another
// cluster, or from a server on another backend) uses the CQL driver's
// defaults: no authentication, no TLS, LOCAL_QUORUM.
func (o Options) openCQL(ctx context.Context, cfg migrate.LegacyConfig) (migrate.Source, error) {
	if cs, ok := o.Backend.(*cql.Store); ok && cfg.Endpoint == "" {
		src, err := cqllegacy.Open(ctx, cs.Client(), cfg, cqllegacy.Options{})
		return src, cqlCredentials(err)
	}
	if cfg.Endpoint == "" {
		return nil, store.Errorf(store.ErrInvalid, "legacy CQL table %s: the backend is not CQL; give the cluster's hosts as the endpoint", cfg.Table)
	}
	co := cql.DefaultOptions()
	for _, h := range strings.Split(cfg.Endpoint, ",") {
		co.Hosts = append(co.Hosts, strings.TrimSpace(h))
	}
	co.Logger = o.Logger
	c, err := cql.Dial(ctx, co)
	if err != nil {
		return nil, cqlCredentials(fmt.Errorf("legacyopen: legacy CQL table %s: %w", cfg.Table, err))
	}
	src, err := cqllegacy.Open(ctx, c, cfg, cqllegacy.Options{})
	return src, cqlCredentials(err)
}

// cqlCredentials marks err as migrate.ErrLegacyCredentials (answered 502)
// when the CQL cluster refused the session's credentials or their
// permissions, or asked for authentication the session has none for.
func cqlCredentials(err error) error {
	if err == nil {
		return nil
	}
	var re gocql.RequestError
	refused := errors.As(err, &re) && (re.Code() == gocql.ErrCodeCredentials || re.Code() == gocql.ErrCodeUnauthorized)
	// The driver tells of a cluster asking for authentication that the
	// session has none for in words only.
	if refused {
		return store.Wrapf(migrate.ErrLegacyCredentials, err, "the cluster refused them: %s", re.Error())
	}
	if strings.Contains(err.Error(), "authentication required") {
		return store.Wrapf(migrate.ErrLegacyCredentials, err, "the cluster answered authentication required, and the server has no credentials for it")
	}
	return err
}
