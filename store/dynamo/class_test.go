package dynamo_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/dynamo"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
	"github.com/ebb-data/ebb/store/storetest"
)

// classProxy stands in front of an emulator, which has no table classes
// (dynalite and DynamoDB Local both refuse an UpdateTable that only sets
// TableClass): it records each such request's body and answers it as
// DynamoDB does, and passes every other request through.
type classProxy struct {
	mu     sync.Mutex
	bodies []string
}

func (p *classProxy) start(t *testing.T, endpoint string) string {
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.UpdateTable" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var in struct{ TableName, TableClass string }
			if json.Unmarshal(body, &in) == nil && in.TableClass != "" {
				p.mu.Lock()
				p.bodies = append(p.bodies, string(body))
				p.mu.Unlock()
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				_ = json.NewEncoder(w).Encode(map[string]any{"TableDescription": map[string]any{
					"TableName": in.TableName, "TableStatus": "ACTIVE",
					"TableClassSummary": map[string]any{"TableClass": in.TableClass},
				}})
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func (p *classProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bodies...)
}

// TestSetTableClassGolden checks the requests SetTableClass sends, as
// golden UpdateTable bodies, and its record: a change to Standard-IA and
// back are sent and reported by Tables; setting the class a table has
// sends nothing; a third change within 30 days is refused with
// store.ErrCapacityLimit before anything is sent (DynamoDB allows two in
// a 30-day trailing period), and allowed once the first leaves it.
func TestSetTableClassGolden(t *testing.T) {
	isolateAWSEnv(t)
	var p classProxy
	clock := storetest.NewClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	o := dynamotest.Options(t, clock.Now)
	o.Endpoint = p.start(t, dynamotest.Require(t))
	s := dynamotest.Open(t, o)
	ctx := t.Context()
	spec := store.TableSpec{Name: "cold_1", PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}}, Values: []store.Column{{Name: "v", Type: store.TypeText}}}
	if err := s.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got := s.Capabilities().Classes; got != store.DynamoDBClasses {
		t.Fatalf("Capabilities().Classes = %+v", got)
	}
	var cs store.ClassSetter = s
	physical := o.TablePrefix + "cold_1"
	golden := func(class string) string {
		return `{"TableClass":"` + class + `","TableName":"` + physical + `"}`
	}
	classOf := func() store.TableInfo {
		t.Helper()
		infos, err := s.Tables(ctx, "cold_")
		if err != nil || len(infos) != 1 {
			t.Fatalf("tables: %v, %v", infos, err)
		}
		return infos[0]
	}
	if info := classOf(); info.Class != "" || info.ClassChanges != nil {
		t.Fatalf("a new table: class %q, changes %v; want the default and none", info.Class, info.ClassChanges)
	}
	if err := cs.SetTableClass(ctx, "cold_1", store.ClassStandard); err != nil {
		t.Fatal(err)
	}
	if got := p.requests(); len(got) != 0 {
		t.Fatalf("setting the default class on a new table sent %v", got)
	}

	first := clock.Now()
	if err := cs.SetTableClass(ctx, "cold_1", store.ClassInfrequentAccess); err != nil {
		t.Fatal(err)
	}
	if info := classOf(); info.Class != store.ClassInfrequentAccess || len(info.ClassChanges) != 1 || !info.ClassChanges[0].Equal(first) {
		t.Fatalf("after the change: class %q, changes %v", info.Class, info.ClassChanges)
	}
	if err := cs.SetTableClass(ctx, "cold_1", store.ClassInfrequentAccess); err != nil {
		t.Fatal(err)
	}
	clock.Advance(24 * time.Hour)
	if err := cs.SetTableClass(ctx, "cold_1", store.ClassStandard); err != nil {
		t.Fatal(err)
	}
	clock.Advance(24 * time.Hour)
	if err := cs.SetTableClass(ctx, "cold_1", store.ClassInfrequentAccess); !errors.Is(err, store.ErrCapacityLimit) {
		t.Fatalf("a third change within 30 days: %v, want ErrCapacityLimit", err)
	}
	want := []string{golden("STANDARD_INFREQUENT_ACCESS"), golden("STANDARD")}
	if got := p.requests(); !equalJSON(t, got, want) {
		t.Fatalf("UpdateTable bodies:\n%v\nwant\n%v", got, want)
	}
	// 30 days after the first change one more is allowed.
	clock.Set(first.Add(30 * 24 * time.Hour))
	if err := cs.SetTableClass(ctx, "cold_1", store.ClassInfrequentAccess); err != nil {
		t.Fatal(err)
	}
	if info := classOf(); info.Class != store.ClassInfrequentAccess || len(info.ClassChanges) != 2 {
		t.Fatalf("after the window: class %q, changes %v; want standard_ia and the two that count", info.Class, info.ClassChanges)
	}
	if err := cs.SetTableClass(ctx, "cold_1", "glacier"); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("an unknown class: %v, want ErrInvalid", err)
	}
	if err := cs.SetTableClass(ctx, "missing", store.ClassInfrequentAccess); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("a missing table: %v, want ErrTableNotFound", err)
	}
}

// TestSetTableClassOnEmulator: where the service refuses a class change
// (dynalite, and DynamoDB Local, which answers "Nothing to update"),
// SetTableClass returns its error and records nothing, so the next plan
// proposes the change again. Should an emulator come to accept the
// request, the test says so, and the request is to be tested there
// instead of as the golden one above.
func TestSetTableClassOnEmulator(t *testing.T) {
	for _, target := range []dynamotest.Target{dynamotest.Dynalite, dynamotest.DynamoDBLocal} {
		t.Run(target.Name, func(t *testing.T) {
			target.Require(t)
			s := target.New(t, nil)
			ctx := t.Context()
			if err := s.CreateTable(ctx, store.TableSpec{Name: "cold_2", PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}}, Values: []store.Column{{Name: "v", Type: store.TypeText}}}); err != nil {
				t.Fatal(err)
			}
			if err := s.SetTableClass(ctx, "cold_2", store.ClassInfrequentAccess); err == nil {
				t.Fatal("the emulator accepted a class change; test the real request instead of the golden one")
			}
			infos, err := s.Tables(ctx, "cold_2")
			if err != nil || len(infos) != 1 || infos[0].Class != "" || infos[0].ClassChanges != nil {
				t.Fatalf("after a refused change: %+v, %v; want nothing recorded", infos, err)
			}
		})
	}
}

func equalJSON(t *testing.T, got, want []string) bool {
	t.Helper()
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		var a, b any
		if json.Unmarshal([]byte(got[i]), &a) != nil || json.Unmarshal([]byte(want[i]), &b) != nil {
			return false
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			return false
		}
	}
	return true
}

var _ store.ClassSetter = (*dynamo.Store)(nil)
