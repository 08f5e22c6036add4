package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	ebbclient "github.com/ebb-data/ebb/client"
	"github.com/ebb-data/ebb/internal/timefmt"
)

// indexEraseCmd is `ebb index erase`: one event, or an index id's events
// over a range, deleted for an erasure request, shard by shard with
// progress on standard error.
func indexEraseCmd(c *client) *cobra.Command {
	var e ebbclient.EventErase
	var from, to, timestamp string
	var out *output
	cmd := destructive(&cobra.Command{
		Use:   "erase NAME --index-id ID [--from T] [--to T | --timestamp T --event-id ID]",
		Short: "Erase an index id's events, or one event, from an index",
		Long: `Erase events of one index id from an index, for an erasure request: every
event in [--from, --to) (each optional: without them, every event of the
index id that any shard still holds), or the one event --timestamp and
--event-id name. A range is erased shard by shard, each shard's count
printed on standard error as it is done. Erasing again removes nothing
more, so an interrupted erase is finished by running it again. Times are
RFC 3339, now, or a duration from now (--from=-1h).

It asks for confirmation at the terminal; scripts pass --yes. When the
erased events leave the disk depends on the backend: see docs/backends.md.`,
		Example: `  ebb index erase events --index-id acct_1 --yes
  ebb index erase events --index-id acct_1 --from 2026-01-01T00:00:00Z --to 2026-02-01T00:00:00Z
  ebb index erase events --index-id acct_1 --timestamp 2026-01-05T10:00:00.123Z --event-id e42`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			var err error
			for _, f := range []struct {
				name, val string
				dst       *time.Time
			}{{"from", from, &e.From}, {"to", to, &e.To}, {"timestamp", timestamp, &e.Timestamp}} {
				if *f.dst, err = parseTimeFlag(f.name, f.val, now); err != nil {
					return err
				}
			}
			one := e.EventID != "" || timestamp != ""
			if one && (e.EventID == "" || timestamp == "") {
				return fmt.Errorf("--timestamp and --event-id go together: they name one event")
			}
			if one && (from != "" || to != "") {
				return fmt.Errorf("--timestamp and --event-id name one event: leave out --from and --to")
			}
			what := fmt.Sprintf("Erase every event of index id %q from index %s", e.IndexID, args[0])
			switch {
			case one:
				what = fmt.Sprintf("Erase event %q of index id %q at %s from index %s", e.EventID, e.IndexID, timefmt.Format(e.Timestamp), args[0])
			case from != "" || to != "":
				what += " in [" + timeOrOpen(e.From, "-inf") + ", " + timeOrOpen(e.To, "+inf") + ")"
			}
			if err := confirmDestroy(cmd, what); err != nil {
				return err
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			if !one {
				e.Progress = func(p ebbclient.EraseProgress) {
					fmt.Fprintf(cmd.ErrOrStderr(), "shard %d/%d %s: %d removed (%d in all)\n", p.Done, p.Total, p.Shard, p.Removed, p.TotalRemoved)
				}
			}
			res, err := api.EraseEvents(cmd.Context(), args[0], e)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), res)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%d event(s) of %q erased from index %s (%d shard(s))\n", res.Removed, e.IndexID, args[0], res.Shards)
			return err
		},
	})
	f := cmd.Flags()
	f.StringVar(&e.IndexID, "index-id", "", "the index id whose events to erase (required)")
	f.StringVar(&from, "from", "", "first time, inclusive (default: unbounded)")
	f.StringVar(&to, "to", "", "end time, exclusive (default: unbounded)")
	f.StringVar(&timestamp, "timestamp", "", "the timestamp of the one event to erase (with --event-id)")
	f.StringVar(&e.EventID, "event-id", "", "the event id of the one event to erase (with --timestamp)")
	_ = cmd.MarkFlagRequired("index-id")
	out = addOutput(cmd)
	return cmd
}

// timeOrOpen formats t, or open when t is zero (an unbounded side).
func timeOrOpen(t time.Time, open string) string {
	if t.IsZero() {
		return open
	}
	return timefmt.Format(t)
}
