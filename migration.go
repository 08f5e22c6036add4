package ebb

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/migrate/dynamolegacy"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo"
)

// Migrations returns the migrations of indexes off legacy tables.
func (db *DB) Migrations() *migrate.Service { return db.migrations }

// openLegacy opens legacy sources of kinds other than the embedded table:
// a DynamoDB table through the backend's own client when the backend is
// DynamoDB and the config names no endpoint or region, otherwise through
// a client of the AWS SDK's defaults and the config's endpoint and region.
func (db *DB) openLegacy(ctx context.Context, cfg migrate.LegacyConfig) (migrate.Source, error) {
	if cfg.Kind != migrate.KindDynamoDB {
		return nil, fmt.Errorf("%w: ebb: legacy sources of kind %q are not supported", store.ErrInvalid, cfg.Kind)
	}
	if ds, ok := db.raw.(*dynamo.Store); ok && cfg.Endpoint == "" && cfg.Region == "" {
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
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return dynamolegacy.Open(ctx, client, cfg)
}
