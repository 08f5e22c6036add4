package main

import (
	"context"
	"testing"

	"github.com/ebb-data/ebb/store/cql"
)

// TestCQLAuthSigV4 checks that --cql-auth sigv4 takes its region and
// credentials from the AWS default chain (here the environment) and hands
// them to the store's SigV4 exchange.
func TestCQLAuthSigV4(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_REGION", "us-west-2")
	t.Setenv("AWS_ACCESS_KEY_ID", "UserID-1")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "UserSecretKey-1")
	t.Setenv("AWS_SESSION_TOKEN", "sess-token-1")
	ctx := context.Background()
	var o cql.Options
	if err := cqlAuth(ctx, "sigv4", &o); err != nil {
		t.Fatal(err)
	}
	if o.SigV4 == nil || o.SigV4.Region != "us-west-2" {
		t.Fatalf("SigV4 %+v, want region us-west-2", o.SigV4)
	}
	c, err := o.SigV4.Credentials(ctx)
	if err != nil || c != (cql.AWSCredentials{AccessKeyID: "UserID-1", SecretAccessKey: "UserSecretKey-1", SessionToken: "sess-token-1"}) {
		t.Fatalf("credentials %+v %v", c, err)
	}
	if err := cqlAuth(ctx, "sigv4", &cql.Options{Username: "u"}); err == nil {
		t.Error("sigv4 with a username was accepted")
	}
	if err := cqlAuth(ctx, "kerberos", &o); err == nil {
		t.Error("an unknown --cql-auth was accepted")
	}
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	if err := cqlAuth(ctx, "sigv4", &cql.Options{}); err == nil {
		t.Error("sigv4 without a region was accepted")
	}
}
