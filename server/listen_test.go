package server_test

import (
	"testing"

	"github.com/ebb-data/ebb/server"
)

func TestRequireLoopback(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1:7070": true,
		"127.0.0.2:7070": true,
		"[::1]:7070":     true,
		"localhost:7070": true,
		"0.0.0.0:7070":   false,
		":7070":          false,
		"[::]:7070":      false,
		"10.1.2.3:7070":  false,
		"example.com:80": false,
		"127.0.0.1":      false, // no port
	}
	for addr, ok := range cases {
		if err := server.RequireLoopback(addr); (err == nil) != ok {
			t.Errorf("%s: %v", addr, err)
		}
	}
}
