package pebble

import (
	"context"
	"fmt"
	"log/slog"
	"os"
)

// slogLogger routes Pebble's log lines to slog.
type slogLogger struct{ l *slog.Logger }

func (l slogLogger) Infof(format string, args ...any) {
	l.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (l slogLogger) Errorf(format string, args ...any) {
	l.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf is where Pebble stops on an error it cannot unwind: a failed write
// or sync of the MANIFEST (during a flush, a compaction or a drop's
// excise), a commit pipeline left broken. Its state in memory may then
// disagree with the disk, so the process exits at once: no request is
// acknowledged after this point, and a restart recovers everything that
// was acknowledged from the write-ahead log and the last good MANIFEST.
func (l slogLogger) Fatalf(format string, args ...any) {
	l.l.Log(context.Background(), slog.LevelError+4, "embedded store: fatal disk error; exiting so that a restart recovers every acknowledged write: "+fmt.Sprintf(format, args...), "component", "pebble")
	os.Exit(FatalExitCode)
}

// FatalExitCode is the exit status of a process the embedded store stopped
// on a fatal disk error (EX_IOERR of sysexits.h).
const FatalExitCode = 74
