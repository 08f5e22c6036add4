package cql

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The vectors below are the ones AWS publishes with its SigV4
// authentication plugin for the gocql driver
// (aws/aws-sigv4-auth-cassandra-gocql-driver-plugin, sigv4/internal):
// nonce 91703fdc2ef562e19fbdab0f58e42fe5, region us-west-2, key UserID-1
// with secret UserSecretKey-1, signed at 2020-06-09T22:41:51Z.
const (
	vecNonce  = "91703fdc2ef562e19fbdab0f58e42fe5"
	vecRegion = "us-west-2"
	vecSig    = "7f3691c18a81b8ce7457699effbfae5b09b4e0714ab38c1292dbdf082c9ddd87"
)

var (
	vecCreds = AWSCredentials{AccessKeyID: "UserID-1", SecretAccessKey: "UserSecretKey-1"}
	vecTime  = time.Date(2020, 6, 9, 22, 41, 51, 0, time.UTC)
)

func TestSigV4PublishedVectors(t *testing.T) {
	want := "signature=" + vecSig + ",access_key=UserID-1,amzdate=2020-06-09T22:41:51.000Z"
	if got := sigv4Response(vecRegion, vecNonce, vecCreds, vecTime); got != want {
		t.Errorf("response\n got %s\nwant %s", got, want)
	}
	withToken := vecCreds
	withToken.SessionToken = "sess-token-1"
	if got := sigv4Response(vecRegion, vecNonce, withToken, vecTime); got != want+",session_token=sess-token-1" {
		t.Errorf("response with a session token: %s", got)
	}
	if got := hmacSHA256([]byte("AWS4UserSecretKey-1"), "20200609"); len(got) != 32 {
		t.Fatalf("hmac length %d", len(got))
	}
}

// TestSigV4Exchange runs the SASL exchange as the driver does: the
// server's authenticator class, then its nonce.
func TestSigV4Exchange(t *testing.T) {
	calls := 0
	cfg := &SigV4{Region: vecRegion, Now: func() time.Time { return vecTime.Local() },
		Credentials: func(context.Context) (AWSCredentials, error) { calls++; return vecCreds, nil }}
	first, next, err := sigv4Auth{cfg}.Challenge([]byte("com.amazonaws.cassandra.DefaultAuthenticator"))
	if err != nil || string(first) != "SigV4\x00\x00" || next == nil {
		t.Fatalf("first step: %q %v %v", first, next, err)
	}
	resp, last, err := next.Challenge([]byte("nonce=" + vecNonce))
	if err != nil || last != nil {
		t.Fatalf("second step: %v %v", last, err)
	}
	if want := "signature=" + vecSig + ",access_key=UserID-1,amzdate=2020-06-09T22:41:51.000Z"; string(resp) != want || calls != 1 {
		t.Fatalf("second step answered %q after %d credential lookups", resp, calls)
	}
	if _, _, err := next.Challenge([]byte("n1256")); err == nil {
		t.Fatal("a challenge without a nonce was answered")
	}
	failing := &SigV4{Region: vecRegion, Credentials: func(context.Context) (AWSCredentials, error) { return AWSCredentials{}, errors.New("no credentials") }}
	if _, _, err := (sigv4Signer{failing}).Challenge([]byte("nonce=1")); err == nil {
		t.Fatal("missing credentials were not reported")
	}
}
