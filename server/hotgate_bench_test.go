package server

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
)

// BenchmarkHotRequest measures a small request on the hot listener over
// one kept-alive connection, its head checked by the gate: the request a
// feature store's client makes, with a token and a few headers.
func BenchmarkHotRequest(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hot := s.newHotServer(s.Handler(), context.Background())
	done := make(chan error, 1)
	go func() { done <- hot.serve(ln) }()
	defer func() {
		_ = hot.shutdown(context.Background(), ln)
		<-done
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:7071\r\nUser-Agent: ebb-client/1\r\nAccept: application/msgpack\r\n" +
		"Authorization: Bearer " + strings.Repeat("t", 32) + "\r\nAccept-Encoding: gzip\r\n\r\n"
	br := bufio.NewReader(conn)
	b.ReportAllocs()
	for b.Loop() {
		RoundTrip(b, conn, br, req)
	}
}

// BenchmarkPlainHead measures the gate's check of a head in plain form.
func BenchmarkPlainHead(b *testing.B) {
	head := []byte("POST /v1/lists/user/feature/_/user-1/items HTTP/1.1\r\nHost: 127.0.0.1:7071\r\nUser-Agent: ebb-client/1\r\n" +
		"Content-Type: application/json\r\nAuthorization: Bearer " + strings.Repeat("t", 32) + "\r\nContent-Length: 120\r\n\r\n")
	b.SetBytes(int64(len(head)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := plainHead(head); !ok {
			b.Fatal("not plain")
		}
	}
}
