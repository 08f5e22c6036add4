package ebb

import (
	"context"
	"errors"
	"fmt"
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

// Migrations returns the migrations of indexes off legacy tables.
func (db *DB) Migrations() *migrate.Service { return db.migrations }

// openLegacy opens legacy sources of kinds other than the embedded table:
// a DynamoDB table through the backend's own client when the backend is
// DynamoDB and the config names no endpoint or region, otherwise through
// a client of the AWS SDK's defaults and the config's endpoint and region;
// a CQL table on the backend's own session when the backend is CQL and the
// config names no endpoint, otherwise on a session of its own to the
// endpoint's hosts.
func (db *DB) openLegacy(ctx context.Context, cfg migrate.LegacyConfig) (migrate.Source, error) {
	if cfg.Kind == migrate.KindCQL {
		return db.openLegacyCQL(ctx, cfg)
	}
	if cfg.Kind != migrate.KindDynamoDB {
		return nil, fmt.Errorf("%w: ebb: legacy sources of kind %q are not supported", store.ErrInvalid, cfg.Kind)
	}
	if ds, ok := store.As[*dynamo.Store](db.st); ok && cfg.Endpoint == "" && cfg.Region == "" {
		return dynamolegacy.Open(ctx, ds.Client(), cfg)
	}
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("ebb: AWS configuration for legacy table %s: %w", cfg.Table, err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	awsCfg.Credentials = legacyCredentials{awsCfg.Credentials}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
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
		return aws.Credentials{}, fmt.Errorf("%w: no AWS credentials provider configured", migrate.ErrLegacyCredentials)
	}
	creds, err := c.p.Retrieve(ctx)
	if err != nil && ctx.Err() == nil {
		return creds, fmt.Errorf("%w: %w", migrate.ErrLegacyCredentials, err)
	}
	return creds, err
}

// openLegacyCQL opens a CQL legacy table. A session of its own (to another
// cluster, or from a server on another backend) uses the CQL driver's
// defaults: no authentication, no TLS, LOCAL_QUORUM.
func (db *DB) openLegacyCQL(ctx context.Context, cfg migrate.LegacyConfig) (migrate.Source, error) {
	if cs, ok := store.As[*cql.Store](db.st); ok && cfg.Endpoint == "" {
		src, err := cqllegacy.Open(ctx, cs.Client(), cfg, cqllegacy.Options{})
		return src, cqlCredentials(err)
	}
	if cfg.Endpoint == "" {
		return nil, fmt.Errorf("%w: ebb: legacy CQL table %s: the backend is not CQL; give the cluster's hosts as the endpoint", store.ErrInvalid, cfg.Table)
	}
	o := cql.DefaultOptions()
	for _, h := range strings.Split(cfg.Endpoint, ",") {
		o.Hosts = append(o.Hosts, strings.TrimSpace(h))
	}
	o.Logger = db.o.Logger
	c, err := cql.Dial(ctx, o)
	if err != nil {
		return nil, cqlCredentials(fmt.Errorf("ebb: legacy CQL table %s: %w", cfg.Table, err))
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
	if refused || strings.Contains(err.Error(), "authentication required") {
		return fmt.Errorf("%w: %w", migrate.ErrLegacyCredentials, err)
	}
	return err
}
