package pebble

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/ebb-data/ebb/store"
)

// slogLogger routes Pebble's log lines to slog.
type slogLogger struct{ l *slog.Logger }

func (l slogLogger) Infof(format string, args ...any) {
	l.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (l slogLogger) Errorf(format string, args ...any) {
	l.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (l slogLogger) Fatalf(format string, args ...any) {
	l.l.Log(context.Background(), slog.LevelError+4, fmt.Sprintf(format, args...), "component", "pebble")
	os.Exit(1)
}

func sortInfos(infos []store.TableInfo) {
	slices.SortFunc(infos, func(a, b store.TableInfo) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
}
