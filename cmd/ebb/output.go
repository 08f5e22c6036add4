package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ebb-data/ebb/internal/timefmt"
)

// output is a command's --output flag: a table (or text) for people, or
// the API's JSON for programs.
type output struct {
	format string
	json   bool // --json, the older spelling of --output json
}

// addOutput gives cmd --output (-o) and --json, and checks them before the
// command runs.
func addOutput(cmd *cobra.Command) *output {
	o := &output{}
	f := cmd.Flags()
	f.StringVarP(&o.format, "output", "o", "table", "output format: table or json (the API's JSON)")
	f.BoolVar(&o.json, "json", false, "same as --output json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.PreRunE = func(*cobra.Command, []string) error {
		switch o.format {
		case "json":
			o.json = true
		case "table":
		default:
			return fmt.Errorf("--output %q: want table or json", o.format)
		}
		return nil
	}
	return o
}

// printJSON prints v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// showBytes prints a value as text when it is printable UTF-8, quoted
// Go-style otherwise, or in standard base64 with asBase64, so that one
// value is always one line.
func showBytes(b []byte, asBase64 bool) string {
	if asBase64 {
		return base64.StdEncoding.EncodeToString(b)
	}
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return !unicode.IsPrint(r) }) {
		return string(b)
	}
	return strconv.Quote(string(b))
}

// parseValue turns a command-line value into bytes: as is, or decoded when
// --base64 says the values are base64.
func parseValue(s string, isBase64 bool) ([]byte, error) {
	if !isBase64 {
		return []byte(s), nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("value %q is not standard base64: %w", s, err)
	}
	return b, nil
}

// parseTimeFlag reads a time flag: RFC 3339 ("2026-11-22T10:00:00Z"),
// "now", or a duration from now ("-1h" an hour ago, "+30m"). An empty
// value is the zero time.
func parseTimeFlag(flag, s string, now time.Time) (time.Time, error) {
	switch {
	case s == "":
		return time.Time{}, nil
	case s == "now":
		return now, nil
	case strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+"):
		d, err := time.ParseDuration(s)
		if err != nil {
			break
		}
		return now.Add(d), nil
	default:
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			break
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--%s %q: want RFC 3339 (2026-11-22T10:00:00.123Z), now, or a duration from now (-1h, +30m)", flag, s)
}

// readInput reads a file, or standard input for "-".
func readInput(cmd *cobra.Command, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(cmd.InOrStdin())
	}
	return os.ReadFile(path)
}

// formatTime prints a time as the API does.
func formatTime(t time.Time) string { return timefmt.Format(t) }

// columnTime prints a time of a table's column with a fixed number of
// fractional digits, milliseconds unless precise says nanoseconds, so that
// every time of the column has one width and the column lines up (the
// API's form drops trailing zeros).
func columnTime(t time.Time, precise bool) string {
	if precise {
		return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00")
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// collectAll drains a page iterator of the client into one slice, never
// nil, so that --all prints [] rather than null for nothing.
func collectAll[T any](seq iter.Seq2[T, error]) ([]T, error) {
	out := []T{}
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// newTable writes aligned columns, as every read command's table output.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }
