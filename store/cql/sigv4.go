package cql

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/store"
)

// AWSCredentials are the AWS credentials a SigV4 exchange signs with.
type AWSCredentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

// SigV4 configures Amazon Keyspaces' SigV4 authentication (Options.SigV4),
// the SASL exchange AWS's SigV4 authentication plugins for the Cassandra
// drivers implement: the client answers the server's authenticator with
// "SigV4\0\0", the server sends "nonce=<nonce>", and the client answers
// with a signature of a canonical request over the nonce, made with the
// credentials' secret key for Region and the service "cassandra". The
// store does not depend on the AWS SDK: Credentials is where the caller's
// credentials come from (ebb serve: the SDK's default chain).
type SigV4 struct {
	// Region is the AWS Region of the Keyspaces endpoint. Required.
	Region string
	// Credentials returns the credentials to sign with; it is called for
	// every connection, so that rotated credentials are used. Required.
	Credentials func(context.Context) (AWSCredentials, error)
	// Now is the signing clock; nil means time.Now.
	Now func() time.Time
}

// sigv4Timeout bounds the credentials lookup of one handshake: the driver
// gives the authenticator no context.
const sigv4Timeout = 10 * time.Second

// sigv4Auth is the gocql authenticator of the first step: it answers the
// server's authenticator class with the SigV4 mechanism.
type sigv4Auth struct{ cfg *SigV4 }

func (a sigv4Auth) Challenge([]byte) ([]byte, gocql.Authenticator, error) {
	return []byte("SigV4\x00\x00"), sigv4Signer(a), nil
}

func (sigv4Auth) Success([]byte) error { return nil }

// sigv4Signer answers the server's nonce with the signed response.
type sigv4Signer struct{ cfg *SigV4 }

func (s sigv4Signer) Challenge(req []byte) ([]byte, gocql.Authenticator, error) {
	nonce, ok := bytes.CutPrefix(req, []byte("nonce="))
	if !ok {
		return nil, nil, store.Errorf(store.ErrInvalid, "cql: SigV4: the server's challenge holds no nonce")
	}
	ctx, cancel := context.WithTimeout(context.Background(), sigv4Timeout)
	defer cancel()
	creds, err := s.cfg.Credentials(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("cql: SigV4 credentials: %w", err)
	}
	now := time.Now
	if s.cfg.Now != nil {
		now = s.cfg.Now
	}
	return []byte(sigv4Response(s.cfg.Region, string(nonce), creds, now().UTC())), nil, nil
}

func (sigv4Signer) Success([]byte) error { return nil }

// sigv4Response is the client's answer to nonce at t: the signature of the
// canonical request "PUT /authenticate" whose query holds the algorithm,
// credential scope, date and expiry and whose payload hash is the nonce's
// SHA-256, signed with the SigV4 key derived for t's day, region and the
// service "cassandra"; then the access key, the date and any session
// token.
func sigv4Response(region, nonce string, c AWSCredentials, t time.Time) string {
	day := t.Format("20060102")
	amzDate := t.Format("2006-01-02T15:04:05.000Z")
	scope := day + "/" + region + "/cassandra/aws4_request"
	nonceHash := sha256.Sum256([]byte(nonce))
	// The query parameters are already in sorted order.
	query := "X-Amz-Algorithm=AWS4-HMAC-SHA256" +
		"&X-Amz-Credential=" + c.AccessKeyID + "%2F" + url.QueryEscape(scope) +
		"&X-Amz-Date=" + url.QueryEscape(amzDate) +
		"&X-Amz-Expires=900"
	canonical := "PUT\n/authenticate\n" + query + "\nhost:cassandra\n\nhost\n" + hex.EncodeToString(nonceHash[:])
	canonicalHash := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(canonicalHash[:])
	key := []byte("AWS4" + c.SecretAccessKey)
	for _, part := range []string{day, region, "cassandra", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	out := "signature=" + hex.EncodeToString(hmacSHA256(key, toSign)) + ",access_key=" + c.AccessKeyID + ",amzdate=" + amzDate
	if c.SessionToken != "" {
		out += ",session_token=" + c.SessionToken
	}
	return out
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}
