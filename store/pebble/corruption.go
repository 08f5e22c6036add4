package pebble

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ebb-data/ebb/store"
)

// corruption remembers the files in which Pebble found on-disk corruption
// (a block whose checksum does not match). Pebble's own default for such a
// find is its logger's Fatalf, which ends the process; since a corrupt
// block stays corrupt, every restart would then end the same way as soon
// as a read or a compaction met it again: a crash loop. The store instead
// answers reads touching that block with ErrUnavailable (readFault), keeps
// serving the rest, reports itself unhealthy and says once per file how to
// recover from a backup. Pebble keeps compactions away from the damaged
// key range by itself (its "problem spans"), so the background work goes
// on as well.
type corruption struct {
	mu    sync.Mutex
	files map[string]string // base name of the file -> what Pebble said
}

// onCorruption is Pebble's DataCorruption event. Pebble calls it
// synchronously on a read path, so it only records and logs.
func (s *Store) onCorruption(info pebble.DataCorruptionInfo) {
	name := filepath.Base(info.Path)
	c := &s.corruption
	c.mu.Lock()
	if c.files == nil {
		c.files = map[string]string{}
	}
	_, seen := c.files[name]
	if !seen {
		c.files[name] = info.String()
	}
	c.mu.Unlock()
	if seen {
		return
	}
	s.log.Error("embedded store: on-disk corruption in "+name+"; reads touching the damaged keys answer 503, the rest is served, and /readyz reports not ready. "+
		"The data in that block cannot be read back from this disk: to recover, stop the server, restore the latest backup into a new directory "+
		"with `ebb restore --from BACKUP --data NEWDIR` (it verifies every file), and start the server on NEWDIR; writes acknowledged after that backup are not in it",
		"component", "pebble", "file", info.Path, "bounds", info.Bounds.String(), "err", info.Details)
}

// corruptFiles returns the base names of the files found corrupt, sorted.
func (s *Store) corruptFiles() []string {
	c := &s.corruption
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.files))
	for name := range c.files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// corruptionHealth returns an error wrapping store.ErrStorageFault while
// any file has been found corrupt, else nil. Corruption does not refuse
// writes: they go to the write-ahead log and to new sstables, never into
// the damaged file.
func (s *Store) corruptionHealth() error {
	files := s.corruptFiles()
	if len(files) == 0 {
		return nil
	}
	return store.Errorf(store.ErrStorageFault, "on-disk corruption in %s: reads of the damaged keys fail; restore the latest backup into a new directory (ebb restore) and serve from it", strings.Join(files, ", "))
}

// onBackgroundError is Pebble's BackgroundError event: a failed flush or
// compaction, among others. A compaction that meets a corrupt block fails
// again each time Pebble retries it (Pebble keeps retried compactions off
// the damaged range of levels 1 to 6 for some minutes, but not off level
// 0, where that could block flushes), so once the corrupt file has been
// reported, its repeats are logged at debug level and counted in
// ebb_pebble_compactions_failed_total, not logged at error tens of times a
// second.
func (s *Store) onBackgroundError(err error) {
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil && pebble.IsCorruptionError(err) {
		s.corruption.mu.Lock()
		_, seen := s.corruption.files[filepath.Base(info.Path)]
		s.corruption.mu.Unlock()
		if seen {
			s.log.Debug("embedded store: background work met the corrupt file again", "component", "pebble", "file", info.Path)
			return
		}
	}
	s.backgroundError(err)
}
