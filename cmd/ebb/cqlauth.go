package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/ebb-data/ebb/store/cql"
)

// cqlSigV4 builds the SigV4 authentication of --cql-auth sigv4: region
// and credentials from the AWS SDK's default chain (environment, shared
// files, SSO, container and instance roles), so that no secret is given
// on the command line. Credentials are read again for every connection
// through the SDK's cache, so rotated ones are used.
func cqlSigV4(ctx context.Context) (*cql.SigV4, error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("--cql-auth sigv4: load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("--cql-auth sigv4: no AWS region configured (set AWS_REGION)")
	}
	return &cql.SigV4{
		Region: awsCfg.Region,
		Credentials: func(ctx context.Context) (cql.AWSCredentials, error) {
			c, err := awsCfg.Credentials.Retrieve(ctx)
			if err != nil {
				return cql.AWSCredentials{}, err
			}
			return cql.AWSCredentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken}, nil
		},
	}, nil
}

// cqlAuth applies --cql-auth to o: "password" (the default) keeps the
// username and $EBB_CQL_PASSWORD, "sigv4" signs with AWS credentials.
func cqlAuth(ctx context.Context, mode string, o *cql.Options) error {
	switch mode {
	case "", "password":
		return nil
	case "sigv4":
		if o.Username != "" {
			return fmt.Errorf("--cql-auth sigv4 takes no --cql-username")
		}
		s, err := cqlSigV4(ctx)
		if err != nil {
			return err
		}
		o.SigV4 = s
		return nil
	}
	return fmt.Errorf("--cql-auth %q: want password or sigv4", mode)
}
