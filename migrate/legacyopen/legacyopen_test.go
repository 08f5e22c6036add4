package legacyopen

import (
	"context"
	"errors"
	"fmt"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/store"
)

// requestError is an error frame of a CQL node, as the driver returns it.
type requestError struct{ code int }

func (e requestError) Code() int       { return e.code }
func (e requestError) Message() string { return "refused" }
func (e requestError) Error() string   { return fmt.Sprintf("cql error %#x: refused", e.code) }

// TestCQLCredentials: a CQL cluster refusing the session's credentials or
// their permissions, or asking for authentication the session has none
// for, is migrate.ErrLegacyCredentials (answered 502); its other errors
// are left as they are.
func TestCQLCredentials(t *testing.T) {
	for name, tc := range map[string]struct {
		err     error
		refused bool
	}{
		"bad credentials": {fmt.Errorf("open: %w", requestError{gocql.ErrCodeCredentials}), true},
		"unauthorized":    {requestError{gocql.ErrCodeUnauthorized}, true},
		"no credentials":  {errors.New("gocql: authentication required (using \"org.apache.cassandra.auth.PasswordAuthenticator\")"), true},
		"syntax":          {requestError{gocql.ErrCodeSyntax}, false},
		"unavailable":     {fmt.Errorf("%w: no hosts", store.ErrUnavailable), false},
	} {
		got := cqlCredentials(tc.err)
		if errors.Is(got, migrate.ErrLegacyCredentials) != tc.refused || !errors.Is(got, tc.err) {
			t.Errorf("%s: %v, want ErrLegacyCredentials %v around the cluster's error", name, got, tc.refused)
		}
	}
	if cqlCredentials(nil) != nil {
		t.Error("no error became one")
	}
}

type failingProvider struct{ err error }

func (p failingProvider) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, p.err
}

// TestLegacyCredentials: no credentials provider, or one that finds none,
// is migrate.ErrLegacyCredentials; a retrieval cut short by its context
// is not the configuration's fault and stays as it is.
func TestLegacyCredentials(t *testing.T) {
	if _, err := (legacyCredentials{}).Retrieve(t.Context()); !errors.Is(err, migrate.ErrLegacyCredentials) {
		t.Errorf("no provider: %v, want ErrLegacyCredentials", err)
	}
	none := errors.New("no EC2 IMDS role found")
	if _, err := (legacyCredentials{failingProvider{none}}).Retrieve(t.Context()); !errors.Is(err, migrate.ErrLegacyCredentials) || !errors.Is(err, none) {
		t.Errorf("a provider finding none: %v, want ErrLegacyCredentials around its error", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := (legacyCredentials{failingProvider{context.Canceled}}).Retrieve(ctx); errors.Is(err, migrate.ErrLegacyCredentials) {
		t.Errorf("a cancelled retrieval: %v, want it not blamed on the credentials", err)
	}
}

// TestOpenerRefusesWithoutConnecting: what the opener cannot reach is an
// invalid request, answered before any connection: a CQL table on a
// backend that is not CQL needs the cluster's hosts, and the opener opens
// no ebb tables.
func TestOpenerRefusesWithoutConnecting(t *testing.T) {
	open := New(Options{})
	for _, cfg := range []migrate.LegacyConfig{
		{Kind: migrate.KindCQL, Table: "shop.events_v1", Mapping: &migrate.Mapping{IndexID: "account", SortKey: "ts", Payload: "body"}},
		{Kind: migrate.KindTable, Table: "ia_legacy"},
	} {
		if src, err := open(t.Context(), cfg); !errors.Is(err, store.ErrInvalid) || src != nil {
			t.Errorf("%s %s: %v, %v, want store.ErrInvalid", cfg.Kind, cfg.Table, src, err)
		}
	}
}
