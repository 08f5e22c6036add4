package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestServeMemoryUnderLargePages has 256 clients at once each read every
// page of a listing whose pages hold the most data (4 MiB of list values,
// or of event payloads), on each listener of a real `ebb serve`, and
// checks that the process' peak resident memory stays under 1 GiB: pages
// in flight share one budget of response bytes for the whole process, so
// past it a read gets a shorter page, or waits briefly and is answered
// 503 with Retry-After, which the clients honour before reading again.
// Every client reads every page in the end.
//
// The server runs with a soft memory limit of 640 MiB and the shipped
// GOGC (--gc-percent 400): with the default limit, a quarter of the
// machine's memory, the heap may grow to five times the live heap before
// a collection, and the peak is then the machine's size and not the
// budget's (1.0 to 1.7 GiB on a quiet 24 GiB machine, against 0.3 GiB at
// GOGC 100; operations.md, "The Go collector"). With a limit given, the
// budget and the limit together must hold the process under 1 GiB.
func TestServeMemoryUnderLargePages(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1.4 GB of pages per listener")
	}
	for _, listener := range []string{"main", "hot"} {
		t.Run(listener, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			p := startServe(t, "--addr", "127.0.0.1:0", "--hot-addr", "127.0.0.1:0", "--data", data, "--memory-limit", "640MiB")
			base := p.url
			if listener == "hot" {
				m := regexp.MustCompile(`; hot listener (http://\S+)\)$`).FindStringSubmatch(p.line)
				if m == nil {
					t.Fatalf("ready line %q names no hot listener", p.line)
				}
				base = m[1]
			}
			pages := fillLargePages(t, p.url)
			pid := p.cmd.Process.Pid
			idle := rssBytes(t, pid, "VmRSS")

			const clients = 256
			var wg sync.WaitGroup
			var shed, served, full atomic.Int64
			start := make(chan struct{})
			deadline := time.Now().Add(3 * time.Minute)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
			defer client.CloseIdleConnections()
			errs := make(chan error, clients)
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					page := pages[i%len(pages)]
					if err := readAllPages(client, base, page, deadline, &shed, &served, &full); err != nil {
						errs <- err
					}
				}()
			}
			// The peak is read from the kernel's high-water mark once the
			// clients are done; sampling as they run shows the trend.
			stop := make(chan struct{})
			var peakSampled int64
			var sampler sync.WaitGroup
			sampler.Add(1)
			go func() {
				defer sampler.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					if v := rssBytes(t, pid, "VmRSS"); v > peakSampled {
						peakSampled = v
					}
				}
			}()
			began := time.Now()
			close(start)
			wg.Wait()
			took := time.Since(began)
			close(stop)
			sampler.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			peak := rssBytes(t, pid, "VmHWM")
			// What the process gives back once the clients have gone.
			client.CloseIdleConnections()
			time.Sleep(5 * time.Second)
			after := rssBytes(t, pid, "VmRSS")
			t.Logf("%s listener: %d clients read every page in %v: %d pages, %d of them over 4 MiB, and %d answers 503; RSS idle %d MiB, peak %d MiB (sampled %d MiB), 5 s after %d MiB",
				listener, clients, took.Round(time.Millisecond), served.Load(), full.Load(), shed.Load(), idle>>20, peak>>20, peakSampled>>20, after>>20)
			if peak >= 1<<30 {
				t.Errorf("peak RSS %d MiB under %d concurrent page reads, want under 1024 MiB", peak>>20, clients)
			}
		})
	}
}

// largePages is a listing whose first page, unless the server shortens
// it, is of the largest size.
type largePages struct {
	path string
	// bodyBytes is the least the listing's pages add up to: its data in
	// base64.
	bodyBytes int64
}

// fillLargePages writes data for pages of the largest size and returns
// the listings reading them: a list of 100 values of 64 KiB and an index
// of 8 events of 1 MiB, whose first page holds 4 MiB of data (over 5.5
// MB of JSON).
func fillLargePages(t *testing.T, base string) []largePages {
	t.Helper()
	send := func(method, path string, body any) {
		t.Helper()
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(method, base+path, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
		}
	}
	now := time.Now().UTC()
	send("PUT", "/v1/list-features/user/big/v1", map[string]string{"ttl": "720h"})
	for i := 0; i < 100; i += 25 {
		var items []map[string]string
		for j := i; j < i+25; j++ {
			items = append(items, map[string]string{
				"value":     base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{byte(j)}, 64<<10)),
				"timestamp": now.Add(-time.Duration(j) * time.Second).Format(time.RFC3339),
			})
		}
		send("POST", "/v1/lists/user/big/v1/u1/items", map[string]any{"items": items})
	}
	send("PUT", "/v1/indexes/big", map[string]string{"table_bucket": "1h", "partition_bucket": "10m", "retention": "24h"})
	for j := range 8 {
		send("POST", "/v1/indexes/big/events", map[string]any{"events": []map[string]string{{
			"index_id": "i1", "event_id": fmt.Sprintf("e%d", j),
			"timestamp": now.Add(-time.Duration(j+1) * time.Second).Format(time.RFC3339),
			"payload":   base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{byte(j)}, 1<<20)),
		}}})
	}
	return []largePages{
		{"/v1/lists/user/big/v1/u1/items?limit=1000", 100 * int64(base64.StdEncoding.EncodedLen(64<<10))},
		{"/v1/indexes/big/events?index_id=i1&limit=1000", 8 * int64(base64.StdEncoding.EncodedLen(1<<20))},
	}
}

// tokenAtEnd finds the next page token at the end of a page (JSON).
var tokenAtEnd = regexp.MustCompile(`"next_page_token":"([^"]+)"\}\s*$`)

// readAllPages reads every page of a listing, following the page tokens,
// and checks that the pages add up to its data. A 503 is read again after
// a short pause; the client keeps only the end of each page.
func readAllPages(client *http.Client, base string, l largePages, deadline time.Time, shed, served, full *atomic.Int64) error {
	var total int64
	token := ""
	for time.Now().Before(deadline) {
		path := l.path
		if token != "" {
			path += "&page_token=" + token
		}
		resp, err := client.Get(base + path)
		if err != nil {
			return err
		}
		tail := &tailWriter{}
		n, err := io.Copy(tail, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		switch resp.StatusCode {
		case http.StatusOK:
			served.Add(1)
			if n > 4<<20 {
				full.Add(1)
			}
			total += n
			m := tokenAtEnd.FindSubmatch(tail.b)
			if m == nil {
				if total < l.bodyBytes {
					return fmt.Errorf("GET %s: pages of %d bytes in all, want at least %d", l.path, total, l.bodyBytes)
				}
				return nil
			}
			token = string(m[1])
		case http.StatusServiceUnavailable:
			shed.Add(1)
			if resp.Header.Get("Retry-After") == "" {
				return fmt.Errorf("GET %s: 503 without Retry-After", path)
			}
			// A client that waited the whole Retry-After would make the
			// test slow; a short pause keeps the pressure on.
			time.Sleep(20 * time.Millisecond)
		default:
			return fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, tail.b)
		}
	}
	return fmt.Errorf("GET %s: not every page within the deadline", l.path)
}

// tailWriter keeps the last bytes written to it.
type tailWriter struct{ b []byte }

func (w *tailWriter) Write(p []byte) (int, error) {
	const keep = 512
	w.b = append(w.b, p[max(0, len(p)-keep):]...)
	if len(w.b) > keep {
		w.b = append(w.b[:0], w.b[len(w.b)-keep:]...)
	}
	return len(p), nil
}

// rssBytes reads a memory figure (VmRSS, VmHWM) of process pid from
// /proc.
func rssBytes(t *testing.T, pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Errorf("read RSS: %v", err)
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			t.Errorf("read RSS: %q: %v", sc.Text(), err)
			return 0
		}
		return kb << 10
	}
	t.Errorf("read RSS: no %s in /proc/%d/status", field, pid)
	return 0
}
