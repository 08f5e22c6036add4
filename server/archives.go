package server

import (
	"net/http"
	"time"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/internal/timefmt"
)

// archiveRoutes serves an index's archives (package archive): the
// listing from the manifests, and the restore and release of one
// archived shard.
func archiveRoutes(s *Server, h indexHandlers) {
	byName := ResourceFromPath(KindIndex, "name")
	s.MapError(archive.ErrUnverified, http.StatusUnprocessableEntity, CodeFailedPrecondition)
	s.Route("GET /v1/indexes/{name}/archives", byName, h.archives)
	s.Route("POST /v1/indexes/{name}/archives/{shard}/restore", byName, h.restoreArchive)
	s.Route("POST /v1/indexes/{name}/archives/{shard}/release", byName, h.releaseArchive)
}

// archiveJSON is one archived shard, from its manifest.
type archiveJSON struct {
	Table        string   `json:"table"`
	Start        string   `json:"start"`
	End          string   `json:"end"`
	Location     string   `json:"location"`
	Object       string   `json:"object"`
	Rows         int64    `json:"rows"`
	Bytes        int64    `json:"bytes"`
	MinTime      string   `json:"min_time,omitempty"`
	MaxTime      string   `json:"max_time,omitempty"`
	Columns      []string `json:"columns"`
	ObjectSHA256 string   `json:"object_sha256"`
	RowsSHA256   string   `json:"rows_sha256"`
	ArchivedAt   string   `json:"archived_at"`
	VerifiedAt   string   `json:"verified_at,omitempty"`
	Restored     bool     `json:"restored"`
}

// restoredJSON is one shard restored from its archive.
type restoredJSON struct {
	Table      string `json:"table"`
	Start      string `json:"start"`
	End        string `json:"end"`
	Location   string `json:"location"`
	Rows       int64  `json:"rows"`
	RestoredAt string `json:"restored_at"`
	Complete   bool   `json:"complete"`
}

func optTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return timefmt.Format(t)
}

func restoredView(r archive.Restored) restoredJSON {
	return restoredJSON{Table: r.Table, Start: timefmt.Format(r.Start), End: timefmt.Format(r.End), Location: r.Location,
		Rows: r.Rows, RestoredAt: timefmt.Format(r.RestoredAt), Complete: r.Complete}
}

func (h indexHandlers) archives(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	ms, err := h.svc.Archives(r.Context(), name)
	if err != nil {
		return err
	}
	rs, err := h.svc.RestoredShards(r.Context(), name)
	if err != nil {
		return err
	}
	restored := map[string]bool{}
	out := struct {
		Archives []archiveJSON  `json:"archives"`
		Restored []restoredJSON `json:"restored"`
	}{Archives: make([]archiveJSON, 0, len(ms)), Restored: make([]restoredJSON, 0, len(rs))}
	for _, rr := range rs {
		restored[rr.Table] = true
		out.Restored = append(out.Restored, restoredView(rr))
	}
	for _, m := range ms {
		out.Archives = append(out.Archives, archiveJSON{
			Table: m.Table, Start: timefmt.Format(m.Start), End: timefmt.Format(m.End), Location: m.Location, Object: m.Object,
			Rows: m.Rows, Bytes: m.Bytes, MinTime: optTime(m.MinTime), MaxTime: optTime(m.MaxTime), Columns: m.Columns,
			ObjectSHA256: m.ObjectSHA256, RowsSHA256: m.RowsSHA256, ArchivedAt: timefmt.Format(m.ArchivedAt),
			VerifiedAt: optTime(m.Verified), Restored: restored[m.Table],
		})
	}
	return WriteJSON(w, http.StatusOK, out)
}

func (h indexHandlers) restoreArchive(w http.ResponseWriter, r *http.Request) error {
	rr, err := h.svc.RestoreArchive(r.Context(), r.PathValue("name"), r.PathValue("shard"))
	if err != nil {
		return err
	}
	return WriteJSON(w, http.StatusOK, restoredView(rr))
}

func (h indexHandlers) releaseArchive(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.ReleaseArchive(r.Context(), r.PathValue("name"), r.PathValue("shard")); err != nil {
		return err
	}
	return WriteJSON(w, http.StatusNoContent, nil)
}
