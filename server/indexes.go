package server

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/timeseries"
)

// Indexes serves the time-sharded index API (API.md "Time-sharded
// indexes") on svc.
func Indexes(svc *timeseries.Service) Feature {
	return func(s *Server) {
		mapIndexErrors(s)
		h := indexHandlers{svc: svc, srv: s}
		byName := ResourceFromPath(KindIndex, "name")
		// Listing every index is a collection route: admin or *:* only.
		s.Route("GET /v1/indexes", func(*http.Request) Resource { return Resource{Kind: KindIndex} }, h.list)
		s.Route("PUT /v1/indexes/{name}", byName, h.create)
		s.Route("GET /v1/indexes/{name}", byName, h.get, "stats")
		s.Route("DELETE /v1/indexes/{name}", byName, h.delete)
		s.Route("POST /v1/indexes/{name}/events", byName, h.putEvents)
		s.Route("GET /v1/indexes/{name}/events", byName, h.getEvents,
			"index_id", "from", "to", "order", "limit", "page_token")
		s.Route("DELETE /v1/indexes/{name}/events", byName, h.eraseEvents,
			"index_id", "from", "to", "timestamp", "event_id")
		s.Route("POST /v1/indexes/{name}/reconcile", byName, h.reconcile, "dry_run", "allow_clock_jump")
		archiveRoutes(s, h)
	}
}

// mapIndexErrors maps the index feature's own refusals of an event, which
// no store sentinel covers: both are about the event's time, not its
// form. The migration routes write events too and map them as well.
func mapIndexErrors(s *Server) {
	s.MapError(timeseries.ErrNoShard, http.StatusUnprocessableEntity, CodeNoShard)
	s.MapError(timeseries.ErrExpired, http.StatusUnprocessableEntity, CodeExpired)
}

type indexHandlers struct {
	svc *timeseries.Service
	srv *Server // for the response budget of event pages
}

// indexRequest is the body of PUT /v1/indexes/{name}.
type indexRequest struct {
	TableBucket     string          `json:"table_bucket"`
	PartitionBucket string          `json:"partition_bucket"`
	Retention       string          `json:"retention"`
	Runway          *int            `json:"runway"`
	Capacity        *capacityPolicy `json:"capacity"`
	Archive         *archiveConfig  `json:"archive"`
}

// archiveConfig is where an index's shards are archived before their
// drop: file:///DIR or s3://bucket/prefix.
type archiveConfig struct {
	To string `json:"to"`
}

// capacityPolicy is the optional capacity policy of an index: the hot
// shard provisioned at hot units, the next one pre-warmed to peak units;
// and, on DynamoDB, shards that ended cold_after ago or more in the
// Standard-IA table class. Either part may be given alone.
type capacityPolicy struct {
	HotReadUnits   int64  `json:"hot_read_units,omitempty"`
	HotWriteUnits  int64  `json:"hot_write_units,omitempty"`
	PeakReadUnits  int64  `json:"peak_read_units,omitempty"`
	PeakWriteUnits int64  `json:"peak_write_units,omitempty"`
	ColdAfter      string `json:"cold_after,omitempty"`
}

type indexJSON struct {
	Name            string `json:"name"`
	TableBucket     string `json:"table_bucket"`
	PartitionBucket string `json:"partition_bucket"`
	Retention       string `json:"retention"`
	// HeldRetention is the longer retention kept until an apply, after
	// retention was shortened.
	HeldRetention string          `json:"held_retention,omitempty"`
	Runway        int             `json:"runway"`
	Capacity      *capacityPolicy `json:"capacity,omitempty"`
	Archive       *archiveConfig  `json:"archive,omitempty"`
	// Layouts are the layout epochs, oldest first, once table_bucket or
	// partition_bucket changed; absent for an index with one layout.
	Layouts         []layoutJSON `json:"layouts,omitempty"`
	Shards          []shardJSON  `json:"shards"`
	RunwayRemaining string       `json:"runway_remaining"`
}

// layoutJSON is one layout epoch of an index: its buckets from from on.
type layoutJSON struct {
	From            string `json:"from"`
	TableBucket     string `json:"table_bucket"`
	PartitionBucket string `json:"partition_bucket"`
}

type shardJSON struct {
	Table    string `json:"table"`
	Start    string `json:"start"`
	End      string `json:"end"`
	State    string `json:"state"`
	Capacity string `json:"capacity"`
	// Class is the shard's table class where the backend has classes and
	// one was set ("standard" or "standard_ia").
	Class string `json:"class,omitempty"`
	// Rows and Bytes are set with ?stats=true.
	Rows  *int64 `json:"rows,omitempty"`
	Bytes *int64 `json:"bytes,omitempty"`
}

func indexView(idx timeseries.Index) indexJSON {
	out := indexJSON{
		Name:            idx.Name,
		TableBucket:     durfmt.Format(idx.TableBucket),
		PartitionBucket: durfmt.Format(idx.PartitionBucket),
		Retention:       durfmt.Format(idx.Retention),
		Runway:          idx.Runway,
		Shards:          make([]shardJSON, 0, len(idx.Shards)),
		RunwayRemaining: durfmt.Format(idx.RunwayRemaining.Round(time.Second)),
	}
	if idx.HeldRetention != 0 {
		out.HeldRetention = durfmt.Format(idx.HeldRetention)
	}
	if c := idx.Capacity; c.Enabled() || c.ColdAfter > 0 {
		out.Capacity = &capacityPolicy{}
		if c.Enabled() {
			out.Capacity = &capacityPolicy{HotReadUnits: c.HotRead, HotWriteUnits: c.HotWrite, PeakReadUnits: c.PeakRead, PeakWriteUnits: c.PeakWrite}
		}
		if c.ColdAfter > 0 {
			out.Capacity.ColdAfter = durfmt.Format(c.ColdAfter)
		}
	}
	for _, l := range idx.Layouts {
		out.Layouts = append(out.Layouts, layoutJSON{From: timefmt.Format(l.From), TableBucket: durfmt.Format(l.TableBucket), PartitionBucket: durfmt.Format(l.PartitionBucket)})
	}
	if a := idx.Archive; a != nil {
		out.Archive = &archiveConfig{To: a.To}
	}
	for _, sh := range idx.Shards {
		out.Shards = append(out.Shards, shardJSON{
			Table: sh.Table, Start: timefmt.Format(sh.Start), End: timefmt.Format(sh.End),
			State: sh.State, Capacity: sh.Capacity.Mode.String(), Class: string(sh.Class),
		})
	}
	return out
}

func (h indexHandlers) create(w http.ResponseWriter, r *http.Request) error {
	var req indexRequest
	if err := DecodeJSON(r, &req); err != nil {
		return err
	}
	cfg := timeseries.Config{Name: r.PathValue("name")}
	for _, f := range []struct {
		name string
		val  string
		dst  *time.Duration
	}{
		{"table_bucket", req.TableBucket, &cfg.TableBucket},
		{"partition_bucket", req.PartitionBucket, &cfg.PartitionBucket},
		{"retention", req.Retention, &cfg.Retention},
	} {
		if f.val == "" {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "%s is required (a Go duration such as \"168h\")", f.name)
		}
		d, err := ParseDuration(f.val)
		if err != nil {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "%s: %v", f.name, err)
		}
		*f.dst = d
	}
	if req.Runway != nil {
		if *req.Runway < 1 {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "runway %d must be at least 1", *req.Runway)
		}
		cfg.Runway = *req.Runway
	}
	if c := req.Capacity; c != nil {
		if c.ColdAfter != "" {
			d, err := ParseDuration(c.ColdAfter)
			if err != nil || d <= 0 {
				return Errorf(http.StatusBadRequest, CodeInvalidArgument, "capacity: cold_after %q must be a positive duration such as \"720h\"", c.ColdAfter)
			}
			cfg.Capacity.ColdAfter = d
		}
		units := c.HotReadUnits != 0 || c.HotWriteUnits != 0 || c.PeakReadUnits != 0 || c.PeakWriteUnits != 0
		if (units || c.ColdAfter == "") && (c.HotWriteUnits < 1 || c.HotReadUnits < 1) {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "capacity: hot_read_units and hot_write_units must be at least 1")
		}
		cfg.Capacity.HotRead, cfg.Capacity.HotWrite = c.HotReadUnits, c.HotWriteUnits
		cfg.Capacity.PeakRead, cfg.Capacity.PeakWrite = c.PeakReadUnits, c.PeakWriteUnits
	}
	if a := req.Archive; a != nil {
		if a.To == "" {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "archive: to is required (file:///DIR or s3://bucket/prefix)")
		}
		cfg.Archive = &timeseries.ArchiveConfig{To: a.To}
	}
	idx, created, err := h.svc.Create(r.Context(), cfg)
	if err != nil {
		return err
	}
	return writeCreated(w, created, indexView(idx))
}

// get answers an index; with stats=true, each shard with its rows and
// bytes as the backend reports them (one Stats call per shard).
func (h indexHandlers) get(w http.ResponseWriter, r *http.Request) error {
	var stats bool
	switch v := r.URL.Query().Get("stats"); v {
	case "", "false":
	case "true":
		stats = true
	default:
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "stats %q: want true or false", v)
	}
	idx, err := h.svc.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	out := indexView(idx)
	if stats {
		for i := range out.Shards {
			st, err := h.svc.ShardStats(r.Context(), out.Shards[i].Table)
			if errors.Is(err, store.ErrTableNotFound) {
				continue // dropped meanwhile
			}
			if err != nil {
				return err
			}
			out.Shards[i].Rows, out.Shards[i].Bytes = &st.Rows, &st.Bytes
		}
	}
	return WriteJSON(w, http.StatusOK, out)
}

func (h indexHandlers) list(w http.ResponseWriter, r *http.Request) error {
	idxs, err := h.svc.List(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Indexes []indexJSON `json:"indexes"`
	}{Indexes: make([]indexJSON, 0, len(idxs))}
	for _, idx := range idxs {
		out.Indexes = append(out.Indexes, indexView(idx))
	}
	return WriteJSON(w, http.StatusOK, out)
}

// delete deletes an index. Deleting a missing one succeeds, as every
// DELETE of the API does, so that a retried delete is not an error.
func (h indexHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.Delete(r.Context(), r.PathValue("name")); err != nil && !errors.Is(err, timeseries.ErrIndexNotFound) {
		return err
	}
	return WriteJSON(w, http.StatusNoContent, nil)
}

// eventJSON is one event on the wire. Pointers tell a missing field from an
// empty one, so the message can say which.
type eventJSON struct {
	IndexID   *string `json:"index_id"`
	EventID   *string `json:"event_id"`
	Timestamp *string `json:"timestamp"`
	Payload   *string `json:"payload"`
	// TTL is the event's own lifetime (timeseries.Event.TTL), shorter
	// than the retention; absent means the retention.
	TTL *string `json:"ttl"`
}

func (h indexHandlers) putEvents(w http.ResponseWriter, r *http.Request) error {
	events, body, ok, err := decodeEvents(r)
	if err != nil {
		return err
	}
	if !ok {
		if events, err = decodeEventsJSON(body); err != nil {
			return err
		}
	}
	n, err := h.svc.WriteEvents(r.Context(), r.PathValue("name"), events)
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, map[string]int{"written": n})
}

// decodeEventsJSON decodes an event write's body through encoding/json,
// for the bodies decodeEvents leaves to it.
func decodeEventsJSON(body []byte) ([]timeseries.Event, error) {
	var req struct {
		Events []eventJSON `json:"events"`
	}
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if req.Events == nil {
		return nil, Errorf(http.StatusBadRequest, CodeInvalidArgument, "events is required")
	}
	if err := checkEventCount(len(req.Events)); err != nil {
		return nil, err
	}
	events := make([]timeseries.Event, len(req.Events))
	var payloads []byte
	for i, e := range req.Events {
		var wf wireFields
		wf.indexID, wf.hasIndexID = deref(e.IndexID)
		wf.eventID, wf.hasEventID = deref(e.EventID)
		wf.timestamp, wf.hasTimestamp = deref(e.Timestamp)
		wf.ttl, wf.hasTTL = deref(e.TTL)
		if e.Payload != nil {
			wf.payload, wf.hasPayload = []byte(*e.Payload), true
		}
		var err error
		if events[i], payloads, err = eventFromWire(i, wf, payloads); err != nil {
			return nil, err
		}
	}
	return events, nil
}

func deref(s *string) (string, bool) {
	if s == nil {
		return "", false
	}
	return *s, true
}

// checkEventCount refuses a request of more events than one batch holds,
// before any is validated.
func checkEventCount(n int) error {
	if n > timeseries.MaxBatch {
		return Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "%d events in one request, at most %d", n, timeseries.MaxBatch)
	}
	return nil
}

func (h indexHandlers) getEvents(w http.ResponseWriter, r *http.Request) error {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "malformed query string: %v", err)
	}
	q := timeseries.Query{IndexID: v.Get("index_id"), MaxBytes: MaxPageBytes}
	if q.IndexID == "" {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "index_id is required")
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		if s := v.Get(p.name); s != "" {
			if *p.dst, err = ParseQueryTime(p.name, s); err != nil {
				return err
			}
		}
	}
	switch v.Get("order") {
	case "", "asc":
	case "desc":
		q.Desc = true
	default:
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "order %q: want asc or desc", v.Get("order"))
	}
	if q.Limit, err = ParseLimit(r); err != nil {
		return err
	}
	if tok := v.Get("page_token"); tok != "" {
		if q.PageToken, err = base64.RawURLEncoding.DecodeString(tok); err != nil {
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "malformed page_token")
		}
	}
	// The page's share of the response budget bounds its data, before
	// anything is read.
	resp, err := h.srv.startPage(r)
	if err != nil {
		return err
	}
	defer resp.done()
	q.MaxBytes = resp.maxData
	page, err := h.svc.QueryEvents(r.Context(), r.PathValue("name"), q)
	if err != nil {
		return err
	}
	w.Header()["Vary"] = varyAccept
	// Encoded by appending to a pooled buffer, as json.Marshal would:
	// {"events":[{"index_id","event_id","timestamp","payload"}],"next_page_token":"..."},
	// or in MessagePack when asked for.
	if wantsMsgpack(r) {
		return resp.write(w, http.StatusOK, contentTypeMsgpackHeader, appendEventsMsgpack(resp.buffer(), page))
	}
	b := append(resp.buffer(), `{"events":[`...)
	for i, e := range page.Events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index_id":`...)
		b = appendJSONString(b, e.IndexID)
		b = append(b, `,"event_id":`...)
		b = appendJSONString(b, e.EventID)
		b = append(b, `,"timestamp":"`...)
		b = timefmt.Append(b, e.Timestamp)
		b = append(b, `","payload":`...)
		b = appendJSONBytes(b, e.Payload)
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(page.NextPageToken) > 0 {
		b = append(b, `,"next_page_token":"`...)
		b = base64.RawURLEncoding.AppendEncode(b, page.NextPageToken)
		b = append(b, '"')
	}
	b = append(b, "}\n"...)
	return resp.write(w, http.StatusOK, contentTypeJSON, b)
}

// eraseJSON is the answer of DELETE /v1/indexes/{name}/events.
type eraseJSON struct {
	Removed int64 `json:"removed"`
	Shards  int   `json:"shards"`
}

// eraseEvents erases one event (index_id, timestamp and event_id) or
// every event of an index_id over [from, to) (each optional): see
// timeseries.Service.EraseEvents. The query is checked whole before
// anything is deleted.
func (h indexHandlers) eraseEvents(w http.ResponseWriter, r *http.Request) error {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "malformed query string: %v", err)
	}
	e := timeseries.Erase{IndexID: v.Get("index_id"), EventID: v.Get("event_id")}
	if e.IndexID == "" {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "index_id is required")
	}
	if v.Has("event_id") && e.EventID == "" {
		return Errorf(http.StatusBadRequest, CodeInvalidArgument, "event_id is empty")
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &e.From}, {"to", &e.To}, {"timestamp", &e.Timestamp}} {
		if s := v.Get(p.name); s != "" {
			if *p.dst, err = ParseQueryTime(p.name, s); err != nil {
				return err
			}
		}
	}
	res, err := h.svc.EraseEvents(r.Context(), r.PathValue("name"), e)
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, eraseJSON{Removed: res.Removed, Shards: res.Shards})
}

// appendEventsMsgpack appends a page of events in MessagePack: a map whose
// "events" holds an array of [index_id (str), event_id (str), timestamp
// (timestamp extension), payload (bin, or nil when absent)], and whose
// "next_page_token" (str, as in JSON) is there only when more may follow.
func appendEventsMsgpack(b []byte, page timeseries.Page) []byte {
	more := len(page.NextPageToken) > 0
	if more {
		b = appendMsgpackMap(b, 2)
	} else {
		b = appendMsgpackMap(b, 1)
	}
	b = appendMsgpackString(b, "events")
	b = appendMsgpackArray(b, len(page.Events))
	for _, e := range page.Events {
		b = appendMsgpackArray(b, 4)
		b = appendMsgpackString(b, e.IndexID)
		b = appendMsgpackString(b, e.EventID)
		b = appendMsgpackTime(b, e.Timestamp)
		b = appendMsgpackBin(b, e.Payload)
	}
	if more {
		b = appendMsgpackString(b, "next_page_token")
		b = appendMsgpackString(b, base64.RawURLEncoding.EncodeToString(page.NextPageToken))
	}
	return b
}

// actionJSON is one planned action: API.md's op, table and reason, plus
// the capacity target, whether a guard deferred it and, once applied,
// whether it failed.
type actionJSON struct {
	Op       string `json:"op"`
	Table    string `json:"table"`
	Reason   string `json:"reason"`
	Capacity string `json:"capacity,omitempty"`
	// Class is the target of a set_class action.
	Class    string `json:"class,omitempty"`
	Deferred bool   `json:"deferred,omitempty"`
	Error    string `json:"error,omitempty"`
	// Rows and Bytes are what a drop destroys (estimates where the
	// backend only estimates).
	Rows  *int64 `json:"rows,omitempty"`
	Bytes *int64 `json:"bytes,omitempty"`
}

// transitionJSON is one layout change in a plan: where it takes effect,
// its first shard, what changes and whether that shard exists.
type transitionJSON struct {
	From    string `json:"from"`
	Table   string `json:"table"`
	Change  string `json:"change"`
	Created bool   `json:"created"`
}

func (h indexHandlers) reconcile(w http.ResponseWriter, r *http.Request) error {
	// A plan is the default: applying takes an explicit dry_run=false.
	ro := shardmgr.RunOptions{DryRun: true, DropStats: true}
	v := r.URL.Query()
	for _, p := range []struct {
		name string
		dst  *bool
	}{{"dry_run", &ro.DryRun}, {"allow_clock_jump", &ro.AllowClockJump}} {
		switch v.Get(p.name) {
		case "":
		case "false":
			*p.dst = false
		case "true":
			*p.dst = true
		default:
			return Errorf(http.StatusBadRequest, CodeInvalidArgument, "%s %q: want true or false", p.name, v.Get(p.name))
		}
	}
	plan, results, err := h.svc.Reconcile(r.Context(), r.PathValue("name"), ro)
	if err != nil && plan.Index == "" {
		return err // nothing planned: the index or the backend is the problem
	}
	failed := map[string]string{}
	for _, res := range results {
		if res.Err != nil {
			failed[string(res.Action.Op)+" "+res.Action.Table] = res.Err.Error()
		}
	}
	if err != nil && len(failed) == 0 {
		// Every action went through but recording the run failed.
		return err
	}
	out := struct {
		Actions      []actionJSON `json:"actions"`
		Unrecognized []string     `json:"unrecognized,omitempty"`
		// Transitions are the index's layout changes.
		Transitions []transitionJSON `json:"transitions,omitempty"`
		Applied     bool             `json:"applied"`
	}{Actions: make([]actionJSON, 0, len(plan.Actions)), Unrecognized: plan.Unrecognized, Applied: !ro.DryRun}
	for _, t := range plan.Transitions {
		out.Transitions = append(out.Transitions, transitionJSON{From: timefmt.Format(t.From), Table: t.Table, Change: t.Change, Created: t.Created})
	}
	for _, a := range plan.Actions {
		aj := actionJSON{Op: string(a.Op), Table: a.Table, Reason: a.Reason, Deferred: a.Deferred, Error: failed[string(a.Op)+" "+a.Table]}
		if a.Op == shardmgr.OpSetCapacity || a.Op == shardmgr.OpPrewarm {
			aj.Capacity = shardmgr.FormatCapacity(a.Capacity)
		}
		if a.Op == shardmgr.OpSetClass {
			aj.Class = string(a.Class)
		}
		if a.Destroys != nil {
			aj.Rows, aj.Bytes = &a.Destroys.Rows, &a.Destroys.Bytes
		}
		out.Actions = append(out.Actions, aj)
	}
	return WriteJSON(w, http.StatusOK, out)
}
