package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	ebbclient "github.com/ebb-data/ebb/client"
	"github.com/ebb-data/ebb/shardmgr"
)

func init() { commands = append(commands, newIndexCmd) }

// maxEventBatch is the most events one write request carries.
const maxEventBatch = 10000

func newIndexCmd(c *client) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Manage time-sharded indexes and their events on a running server",
		Long: `Manage time-sharded indexes: events kept one table ("shard") per time
bucket, so that expiring a bucket is dropping a table; and write and read
their events. The commands talk to a running "ebb serve" (--server, default
http://127.0.0.1:7070).`,
	}
	cmd.AddCommand(indexCreateCmd(c), indexUpdateCmd(c), indexListCmd(c), indexShowCmd(c), indexPlanCmd(c, false), indexPlanCmd(c, true),
		indexDeleteCmd(c), indexEraseCmd(c), indexWriteCmd(c), indexQueryCmd(c), indexMigrateCmd(c),
		indexArchivesCmd(c), indexRestoreArchiveCmd(c), indexReleaseArchiveCmd(c))
	return cmd
}

// completeIndexNames completes the first argument with the server's
// indexes.
func completeIndexNames(c *client) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		api, err := c.api()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		idxs, err := api.Indexes(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]cobra.Completion, len(idxs))
		for i, idx := range idxs {
			names[i] = idx.Name
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

func indexCreateCmd(c *client) *cobra.Command {
	var cfg ebbclient.IndexConfig
	var capacity ebbclient.CapacityPolicy
	var runway int
	var archiveTo string
	var out *output
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an index and its shards",
		Long: `Create an index and, at once, its shards: every shard inside retention, the
hot one and --runway more. An identical index is left as it is; one with a
different configuration is a conflict.`,
		Example: `  ebb index create events --table-bucket 168h --partition-bucket 24h --retention 1008h`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			if capacity.HotWriteUnits > 0 || capacity.HotReadUnits > 0 || capacity.ColdAfter != 0 {
				cfg.Capacity = &capacity
			}
			if cmd.Flags().Changed("runway") {
				if runway < 1 {
					return fmt.Errorf("--runway %d: want at least 1", runway)
				}
				cfg.Runway = runway
			}
			if archiveTo != "" {
				cfg.Archive = &ebbclient.ArchiveConfig{To: archiveTo}
			}
			idx, created, err := api.CreateIndex(cmd.Context(), args[0], cfg)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), idx)
			}
			what := "created"
			if !created {
				what = "exists"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "index %s %s: %d shards, runway remaining %s\n", idx.Name, what, len(idx.Shards), ebbclient.FormatDuration(idx.RunwayRemaining))
			return err
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.TableBucket, "table-bucket", 0, "time width of a shard, whole seconds (e.g. 168h)")
	f.DurationVar(&cfg.PartitionBucket, "partition-bucket", 0, "time width of a partition within a shard; divides --table-bucket (e.g. 24h)")
	f.DurationVar(&cfg.Retention, "retention", 0, "how long an event lives after its timestamp (e.g. 1008h)")
	f.IntVar(&runway, "runway", 2, "shards kept ready after the one holding now")
	f.Int64Var(&capacity.HotReadUnits, "hot-read-units", 0, "capacity policy: provision the hot shard with this many read units (0: capacity not managed)")
	f.Int64Var(&capacity.HotWriteUnits, "hot-write-units", 0, "capacity policy: provision the hot shard with this many write units")
	f.Int64Var(&capacity.PeakReadUnits, "peak-read-units", 0, "capacity policy: pre-warm the next shard to this many read units")
	f.Int64Var(&capacity.PeakWriteUnits, "peak-write-units", 0, "capacity policy: pre-warm the next shard to this many write units")
	f.DurationVar(&capacity.ColdAfter, "cold-after", 0, "capacity policy (DynamoDB): move shards that ended at least this long ago to the Standard-IA table class (e.g. 720h)")
	f.StringVar(&archiveTo, "archive-to", "", "archive each shard there before its drop: file:///DIR or s3://bucket/prefix")
	for _, name := range []string{"table-bucket", "partition-bucket", "retention"} {
		_ = cmd.MarkFlagRequired(name)
	}
	out = addOutput(cmd)
	return cmd
}

func indexUpdateCmd(c *client) *cobra.Command {
	var retention, tableBucket, partitionBucket time.Duration
	var runway int
	var capacity ebbclient.CapacityPolicy
	var noCapacity, noArchive bool
	var archiveTo string
	var out *output
	cmd := &cobra.Command{
		Use:   "update NAME [--retention D] [--runway N] [--table-bucket D] [--partition-bucket D] [--hot-read-units N --hot-write-units N ... | --no-capacity] [--archive-to URL | --no-archive]",
		Short: "Change an index's retention, runway, buckets, capacity policy or archive",
		Long: `Change an index's retention, runway, buckets, capacity policy or archive; the flags
not given keep their values. A longer retention keeps more shards from then
on. A shorter one drops nothing by itself: the background manager keeps the
old retention's shards until "ebb index plan" shows, and "ebb index apply"
makes, the drops the new retention lets go.

New buckets take effect at a shard boundary after the change: the first
time, a multiple of both table buckets, past the last shard that exists or
that the runway holds. Shards before it keep the old layout, and reads
cover both; "ebb index plan" shows the transition. The table buckets must
divide one another. A second change before the first one's shard exists
replaces it.`,
		Example:           `  ebb index update events --retention 720h && ebb index plan events && ebb index apply events`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			idx, err := api.Index(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			cfg := ebbclient.IndexConfig{TableBucket: idx.TableBucket, PartitionBucket: idx.PartitionBucket, Retention: idx.Retention, Runway: idx.Runway, Capacity: idx.Capacity, Archive: idx.Archive}
			f := cmd.Flags()
			switch {
			case noArchive:
				cfg.Archive = nil
			case f.Changed("archive-to"):
				cfg.Archive = &ebbclient.ArchiveConfig{To: archiveTo}
			}
			if f.Changed("retention") {
				cfg.Retention = retention
			}
			if f.Changed("table-bucket") {
				cfg.TableBucket = tableBucket
			}
			if f.Changed("partition-bucket") {
				cfg.PartitionBucket = partitionBucket
			}
			if f.Changed("runway") {
				if runway < 1 {
					return fmt.Errorf("--runway %d: want at least 1", runway)
				}
				cfg.Runway = runway
			}
			switch {
			case noCapacity:
				cfg.Capacity = nil
			case f.Changed("hot-read-units") || f.Changed("hot-write-units") || f.Changed("peak-read-units") || f.Changed("peak-write-units"):
				if !f.Changed("cold-after") && cfg.Capacity != nil {
					capacity.ColdAfter = cfg.Capacity.ColdAfter
				}
				cfg.Capacity = &capacity
			case f.Changed("cold-after"):
				p := ebbclient.CapacityPolicy{}
				if cfg.Capacity != nil {
					p = *cfg.Capacity
				}
				p.ColdAfter = capacity.ColdAfter
				cfg.Capacity = &p
			}
			idx, _, err = api.CreateIndex(cmd.Context(), args[0], cfg)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), idx)
			}
			held := ""
			if idx.HeldRetention != 0 {
				held = fmt.Sprintf(" (%s kept until \"ebb index apply %s\")", ebbclient.FormatDuration(idx.HeldRetention), idx.Name)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "index %s: retention %s%s, runway %d, %d shards\n",
				idx.Name, ebbclient.FormatDuration(idx.Retention), held, idx.Runway, len(idx.Shards))
			if err == nil && len(idx.Layouts) > 0 {
				err = printLayouts(cmd.OutOrStdout(), idx.Layouts)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.DurationVar(&retention, "retention", 0, "how long an event lives after its timestamp")
	f.DurationVar(&tableBucket, "table-bucket", 0, "new time width of a shard, from the next shard boundary on")
	f.DurationVar(&partitionBucket, "partition-bucket", 0, "new time width of a partition, from the next shard boundary on")
	f.IntVar(&runway, "runway", 0, "shards kept ready after the one holding now")
	f.Int64Var(&capacity.HotReadUnits, "hot-read-units", 0, "capacity policy: provision the hot shard with this many read units")
	f.Int64Var(&capacity.HotWriteUnits, "hot-write-units", 0, "capacity policy: provision the hot shard with this many write units")
	f.Int64Var(&capacity.PeakReadUnits, "peak-read-units", 0, "capacity policy: pre-warm the next shard to this many read units")
	f.Int64Var(&capacity.PeakWriteUnits, "peak-write-units", 0, "capacity policy: pre-warm the next shard to this many write units")
	f.DurationVar(&capacity.ColdAfter, "cold-after", 0, "capacity policy (DynamoDB): move shards that ended at least this long ago to the Standard-IA table class, and back when they no longer have (0: leave classes alone)")
	f.BoolVar(&noCapacity, "no-capacity", false, "drop the capacity policy: every shard on-demand, classes left alone")
	f.StringVar(&archiveTo, "archive-to", "", "archive each shard there before its drop: file:///DIR or s3://bucket/prefix")
	f.BoolVar(&noArchive, "no-archive", false, "archive no more shards before their drop")
	out = addOutput(cmd)
	return cmd
}

func indexListCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List indexes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			idxs, err := api.Indexes(cmd.Context())
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), map[string][]ebbclient.Index{"indexes": nonNil(idxs)})
			}
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "NAME\tTABLE_BUCKET\tPARTITION_BUCKET\tRETENTION\tRUNWAY\tSHARDS\tRUNWAY_REMAINING")
			for _, idx := range idxs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", idx.Name, ebbclient.FormatDuration(idx.TableBucket), ebbclient.FormatDuration(idx.PartitionBucket),
					ebbclient.FormatDuration(idx.Retention), idx.Runway, len(idx.Shards), ebbclient.FormatDuration(idx.RunwayRemaining))
			}
			return tw.Flush()
		},
	}
	out = addOutput(cmd)
	return cmd
}

func indexShowCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:               "show NAME",
		Short:             "Show an index and its shards, with the rows and bytes of each",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			idx, err := api.IndexStats(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.json {
				return printJSON(w, idx)
			}
			fmt.Fprintf(w, "index:            %s\ntable bucket:     %s\npartition bucket: %s\nretention:        %s\nrunway:           %d shards\nrunway remaining: %s\n",
				idx.Name, ebbclient.FormatDuration(idx.TableBucket), ebbclient.FormatDuration(idx.PartitionBucket),
				ebbclient.FormatDuration(idx.Retention), idx.Runway, ebbclient.FormatDuration(idx.RunwayRemaining))
			if idx.HeldRetention != 0 {
				fmt.Fprintf(w, "held retention:   %s, until \"ebb index apply %s\" drops what the shorter retention lets go\n",
					ebbclient.FormatDuration(idx.HeldRetention), idx.Name)
			}
			if p := idx.Capacity; p != nil {
				if p.HotWriteUnits > 0 {
					fmt.Fprintf(w, "capacity policy:  hot read %d, hot write %d, peak read %d, peak write %d units\n",
						p.HotReadUnits, p.HotWriteUnits, p.PeakReadUnits, p.PeakWriteUnits)
				}
				if p.ColdAfter > 0 {
					fmt.Fprintf(w, "cold after:       %s (then the Standard-IA table class)\n", ebbclient.FormatDuration(p.ColdAfter))
				}
			}
			if len(idx.Layouts) > 0 {
				if err := printLayouts(w, idx.Layouts); err != nil {
					return err
				}
			}
			if a := idx.Archive; a != nil {
				fmt.Fprintf(w, "archive:          %s (each shard before its drop; \"ebb index archives %s\" lists them)\n", a.To, idx.Name)
			}
			fmt.Fprintln(w)
			tw := newTable(w)
			fmt.Fprintln(tw, "SHARD\tSTART\tEND\tSTATE\tCAPACITY\tROWS\tBYTES")
			for _, sh := range idx.Shards {
				rows, size := "-", "-"
				if sh.Rows != nil && sh.Bytes != nil {
					rows, size = strconv.FormatInt(*sh.Rows, 10), formatBytes(*sh.Bytes)
				}
				capacity := sh.Capacity
				if sh.Class == "standard_ia" {
					capacity += ", standard_ia"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sh.Table, formatTime(sh.Start), formatTime(sh.End), sh.State, capacity, rows, size)
			}
			return tw.Flush()
		},
	}
	out = addOutput(cmd)
	return cmd
}

// indexPlanCmd is `plan` (a dry run) or, with apply, `apply`.
func indexPlanCmd(c *client, apply bool) *cobra.Command {
	var allowJump, detailed bool
	var out *output
	cmd := &cobra.Command{
		Use:   "plan NAME",
		Short: "Show what the shard manager would do now, without doing it",
		Long: `Show what the shard manager would do now: shards to create (+), to drop (-),
with the rows and bytes each drop destroys, capacity changes (~), and
actions a guard or limit holds back (!), each with its reason. Nothing is
changed; "ebb index apply" does it. With --detailed-exitcode, the exit
status is 0 when nothing would change, 2 when changes are pending and 1 on
an error.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			ro := ebbclient.ReconcileOptions{DryRun: true, AllowClockJump: allowJump}
			if apply {
				// Drops destroy data: show them and ask first.
				plan, err := api.Reconcile(cmd.Context(), args[0], ro)
				if err != nil {
					return err
				}
				if _, drops := plan.Pending(); drops > 0 && !confirmed(cmd) {
					printIndexPlan(cmd.ErrOrStderr(), args[0], plan)
					if err := confirmDestroy(cmd, fmt.Sprintf("Apply this plan to index %s, dropping %d shard(s) and the rows in them", args[0], drops)); err != nil {
						return err
					}
				}
				ro.DryRun = false
			}
			plan, err := api.Reconcile(cmd.Context(), args[0], ro)
			if err != nil {
				return err
			}
			if out.json {
				if err := printJSON(cmd.OutOrStdout(), plan); err != nil {
					return err
				}
			} else {
				printIndexPlan(cmd.OutOrStdout(), args[0], plan)
			}
			if n := plan.Failed(); n > 0 {
				return fmt.Errorf("%d action(s) failed; the others were applied (run again to retry)", n)
			}
			deferred := 0
			for _, a := range plan.Actions {
				if a.Deferred {
					deferred++
				}
			}
			if apply && deferred > 0 && !out.json {
				// A deferred action is held back by a guard or a limit
				// of this pass; the next pass (this command again, or
				// the reconcile loop) takes it up.
				fmt.Fprintf(cmd.ErrOrStderr(), "\n%d action(s) deferred; run `ebb index apply %s` again to apply them (each says why it waits)\n", deferred, args[0])
			}
			if pending, _ := plan.Pending(); detailed && !apply && pending > 0 {
				return exitCode(2)
			}
			return nil
		},
	}
	if apply {
		cmd.Use = "apply NAME"
		cmd.Short = "Apply the shard manager's plan now"
		cmd.Long = `Apply the shard manager's plan for the index now, as the reconcile loop
would: each action on its own, so one failure does not stop the others.
A plan that drops shards is shown first and applied only once confirmed
at the terminal, or with --yes. Prints the plan as applied; exits non-zero
if any action failed.`
		cmd.Flags().BoolVar(&allowJump, "allow-clock-jump", false, "confirm that the clock really moved forward: apply drops the clock-jump guard holds back")
		destructive(cmd)
	} else {
		cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when changes are pending, 0 when there are none")
	}
	out = addOutput(cmd)
	return cmd
}

// printIndexPlan renders a plan like a Terraform plan, in the future tense
// before it is applied and in the past tense after.
func printIndexPlan(w io.Writer, name string, plan ebbclient.Plan) {
	counts := map[string]int{}
	deferred := 0
	var rows, bytes int64
	for _, a := range plan.Actions {
		if a.Deferred {
			deferred++
			continue
		}
		counts[a.Op]++
		if a.Rows != nil {
			rows += *a.Rows
		}
		if a.Bytes != nil {
			bytes += *a.Bytes
		}
	}
	caps := counts[ebbclient.OpSetCapacity] + counts[ebbclient.OpPrewarm]
	destroys := ""
	if counts[ebbclient.OpDrop] > 0 {
		destroys = fmt.Sprintf(" (%d rows, %s)", rows, formatBytes(bytes))
	}
	if plan.Applied {
		fmt.Fprintf(w, "Applied to index %s: %d created, %d dropped%s, %d capacity change(s) made, %d deferred.\n",
			name, counts[ebbclient.OpCreate], counts[ebbclient.OpDrop], destroys, caps, deferred)
	} else {
		fmt.Fprintf(w, "Plan for index %s: %d to create, %d to drop%s, %d capacity change(s) to make, %d deferred.\n",
			name, counts[ebbclient.OpCreate], counts[ebbclient.OpDrop], destroys, caps, deferred)
	}
	if len(plan.Actions) == 0 && len(plan.Unrecognized) == 0 {
		fmt.Fprintln(w, "\nNo changes. The shards match the configuration.")
		printTransitions(w, plan)
		return
	}
	fmt.Fprintln(w)
	for _, a := range plan.Actions {
		line := shardmgr.FormatAction(a.Op, a.Table, cmp.Or(a.Capacity, a.Class), a.Reason, a.Deferred)
		if a.Rows != nil && a.Bytes != nil {
			line += fmt.Sprintf("\n    destroys %d rows, %s", *a.Rows, formatBytes(*a.Bytes))
		}
		if a.Error != "" {
			line += "\n    FAILED: " + a.Error
		}
		fmt.Fprintln(w, line)
	}
	for _, t := range plan.Unrecognized {
		fmt.Fprintf(w, "? %-13s %s  (not a shard of %s; left alone)\n", "ignore", t, name)
	}
	printTransitions(w, plan)
}

// printTransitions lists a plan's layout changes, which hold even when
// the plan has nothing to do.
func printTransitions(w io.Writer, plan ebbclient.Plan) {
	for _, t := range plan.Transitions {
		fmt.Fprintln(w, shardmgr.FormatTransition(t.Change, t.From, t.Table, t.Created))
	}
}

// printLayouts lists an index's layout epochs.
func printLayouts(w io.Writer, layouts []ebbclient.Layout) error {
	for i, l := range layouts {
		label := "layout:"
		if i == 0 {
			label = "layouts:"
		}
		if _, err := fmt.Fprintf(w, "%-17s from %s: table bucket %s, partition bucket %s\n", label, formatTime(l.From),
			ebbclient.FormatDuration(l.TableBucket), ebbclient.FormatDuration(l.PartitionBucket)); err != nil {
			return err
		}
	}
	return nil
}

// formatBytes renders a byte count in binary units: "512 B", "1.5 MiB".
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func indexDeleteCmd(c *client) *cobra.Command {
	return destructive(&cobra.Command{
		Use:   "delete NAME",
		Short: "Delete an index: drop every shard and the configuration",
		Long: `Delete an index: drop every one of its shards, with every event in them,
and its configuration. It asks for confirmation at the terminal; scripts
pass --yes.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			if !confirmed(cmd) {
				idx, err := api.Index(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if err := confirmDestroy(cmd, fmt.Sprintf("Delete index %s and drop its %d shard(s) with every event in them", args[0], len(idx.Shards))); err != nil {
					return err
				}
			}
			if err := api.DeleteIndex(cmd.Context(), args[0]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "index %s deleted\n", args[0])
			return err
		},
	})
}

func indexWriteCmd(c *client) *cobra.Command {
	var file, indexID, eventID, timestamp, payload string
	var isBase64 bool
	var ttl time.Duration
	var out *output
	cmd := &cobra.Command{
		Use:   "write NAME (--file FILE | --index-id ID --event-id ID [--timestamp T] [--payload P] [--ttl D])",
		Short: "Write events to an index",
		Long: `Write events to an index, from a file (or - for standard input) or one
event from flags. The file holds the API's body ({"events": [...]}), a JSON
array of events, or one event per line (JSON Lines); an event is
{"index_id", "event_id", "timestamp", "payload", "ttl"} with the payload in
standard base64 and the optional ttl a duration shorter than the index's
retention (the event is hidden at timestamp + ttl). Events are sent in batches of 10000; each batch is all or
nothing, and writing an event again replaces it, so a failed write can be
repeated as it is.`,
		Example: `  ebb index write events --file events.json
  ebb index write events --index-id acct_1 --event-id e1 --payload '{"amount":3}'
  ebb index write events --index-id acct_1 --event-id e3 --payload '{"otp":1}' --ttl 10m
  ebb index write events --index-id acct_1 --event-id e2 --timestamp 2026-11-22T10:00:00Z --payload aGVsbG8= --base64`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			var events []ebbclient.Event
			var lines []int // for JSON Lines, the line each event starts on
			switch {
			case file != "" && (indexID != "" || eventID != ""):
				return errors.New("give --file or an event's --index-id and --event-id, not both")
			case file != "":
				data, err := readInput(cmd, file)
				if err != nil {
					return err
				}
				if events, lines, err = decodeEvents(data); err != nil {
					return fmt.Errorf("%s: %w", file, err)
				}
			case indexID != "" && eventID != "":
				ts, err := parseTimeFlag("timestamp", timestamp, time.Now())
				if err != nil {
					return err
				}
				if ts.IsZero() {
					ts = time.Now()
				}
				p, err := parseValue(payload, isBase64)
				if err != nil {
					return err
				}
				events = []ebbclient.Event{{IndexID: indexID, EventID: eventID, Timestamp: ts, Payload: p, TTL: ttl}}
			default:
				return errors.New("say what to write: --file FILE (- for standard input), or --index-id ID and --event-id ID")
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			written := 0
			bar := writeProgress(cmd.ErrOrStderr(), len(events))
			for i := 0; i < len(events); i += maxEventBatch {
				batch := events[i:min(i+maxEventBatch, len(events))]
				n, err := api.WriteEvents(cmd.Context(), args[0], batch)
				if err != nil {
					if bar != nil {
						_ = bar.Exit()
						fmt.Fprintln(cmd.ErrOrStderr())
					}
					if i > 0 {
						return resumeError(err, args[0], file, lines, i, len(batch), len(events))
					}
					return err
				}
				written += n
				if bar != nil {
					_ = bar.Set(written)
				}
			}
			if bar != nil {
				_ = bar.Finish()
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), map[string]int{"written": written})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "written %d event(s) to %s\n", written, args[0])
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "file of events (- for standard input): {\"events\": [...]}, a JSON array, or JSON Lines")
	f.StringVar(&indexID, "index-id", "", "one event's index id")
	f.StringVar(&eventID, "event-id", "", "one event's id")
	f.StringVar(&timestamp, "timestamp", "", "one event's time: RFC 3339, now, or a duration from now such as -5m (default now)")
	f.StringVar(&payload, "payload", "", "one event's payload, as text (or standard base64 with --base64)")
	f.BoolVar(&isBase64, "base64", false, "--payload is standard base64")
	f.DurationVar(&ttl, "ttl", 0, "one event's own lifetime, shorter than the index's retention (default the retention)")
	out = addOutput(cmd)
	return cmd
}

// eventInput is an event as `ebb index write --file` reads it: the
// client's event and its optional ttl, a duration string as the API takes.
type eventInput struct {
	ebbclient.Event
	TTL *string `json:"ttl"`
}

// event returns in as a client event.
func (in eventInput) event() (ebbclient.Event, error) {
	ev := in.Event
	if in.TTL != nil {
		d, err := time.ParseDuration(*in.TTL)
		if err != nil {
			return ebbclient.Event{}, fmt.Errorf("ttl: %w", err)
		}
		if d <= 0 {
			return ebbclient.Event{}, fmt.Errorf("ttl %s must be positive", *in.TTL)
		}
		ev.TTL = d
	}
	return ev, nil
}

// decodeEvents reads events in any of the forms `ebb index write --file`
// takes. For JSON Lines it also returns the line each event starts on
// (1-based), for a resume hint; nil for the other forms. An error names
// the event by its number, counting from 1.
func decodeEvents(data []byte) ([]ebbclient.Event, []int, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil, errors.New("no events")
	}
	var raw []json.RawMessage
	if trimmed[0] == '[' {
		if err := strictUnmarshal(trimmed, &raw); err != nil {
			return nil, nil, err
		}
	} else {
		var body struct {
			Events *[]json.RawMessage `json:"events"`
		}
		if err := strictUnmarshal(trimmed, &body); err == nil && body.Events != nil {
			raw = *body.Events
		}
	}
	if raw != nil {
		events := make([]ebbclient.Event, len(raw))
		for i, r := range raw {
			var in eventInput
			if err := strictUnmarshal(r, &in); err != nil {
				return nil, nil, eventError(i, err)
			}
			ev, err := in.event()
			if err != nil {
				return nil, nil, eventError(i, err)
			}
			events[i] = ev
		}
		return events, nil, nil
	}
	// JSON Lines: one event per value.
	var events []ebbclient.Event
	var lines []int
	lead := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
	line := 1 + bytes.Count(data[:lead], []byte("\n"))
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var off int64
	for dec.More() {
		var in eventInput
		if err := dec.Decode(&in); err != nil {
			return nil, nil, eventError(len(events), err)
		}
		ev, err := in.event()
		if err != nil {
			return nil, nil, eventError(len(events), err)
		}
		// The value started after the blanks that follow the previous one.
		start := off + int64(len(trimmed[off:])-len(bytes.TrimLeft(trimmed[off:], " \t\r\n")))
		line += bytes.Count(trimmed[off:start], []byte("\n"))
		lines = append(lines, line)
		line += bytes.Count(trimmed[start:dec.InputOffset()], []byte("\n"))
		off = dec.InputOffset()
		events = append(events, ev)
	}
	return events, lines, nil
}

// eventError names the event at index i (0-based) by its number counting
// from 1, and says what a bad timestamp should look like instead of
// quoting Go's layout.
func eventError(i int, err error) error {
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("event %d: timestamp %q is not an RFC 3339 time, such as 2026-11-22T10:00:00.123Z", i+1, strings.Trim(pe.Value, `"`))
	}
	return fmt.Errorf("event %d: %w", i+1, err)
}

// writeProgress returns a progress bar of events written for a terminal
// at w, or nil when w is not one (a script's log gets no control
// characters) or the events fit in one request.
func writeProgress(w io.Writer, total int) *progressbar.ProgressBar {
	if total <= maxEventBatch || !writerIsTerminal(w) {
		return nil
	}
	return progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("writing events"),
		progressbar.OptionShowCount(), progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish())
}

// writerIsTerminal says whether w is a terminal: a variable so that tests
// can stand in for one.
var writerIsTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// resumeError is a write of events from a file that failed, or was
// interrupted, after its first batches were written: it says which
// events were written and how to resume from the first that may not
// have been (writing an event again is safe).
func resumeError(err error, index, file string, lines []int, from, n, total int) error {
	what := explain(err)
	if errors.Is(err, context.Canceled) {
		what = errors.New("interrupted")
	}
	hint := ""
	if lines != nil && file != "-" {
		hint = fmt.Sprintf(": tail -n +%d %s | ebb index write %s --file -", lines[from], file, index)
	}
	return &explained{fmt.Errorf("events %d..%d of %d: %w; events 1..%d were written. To resume, write the events from event %d on%s",
		from+1, from+n, total, what, from, from+1, hint)}
}

// strictUnmarshal decodes one JSON value, refusing unknown fields.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

func indexQueryCmd(c *client) *cobra.Command {
	var q ebbclient.EventQuery
	var from, to, order string
	var all, asBase64 bool
	var out *output
	cmd := &cobra.Command{
		Use:   "query NAME --index-id ID [--from T] [--to T] [--order asc|desc] [--limit N]",
		Short: "Read an index's events",
		Long: `Read the events of one index id in [--from, --to), ordered by timestamp
and event id (--order desc for newest first). One page of --limit events
is printed, and the token of the next page, if any, on standard error:
pass it back with --page-token, or use --all to read every page. Times are
RFC 3339, now, or a duration from now (--from=-1h).`,
		Example: `  ebb index query events --index-id acct_1 --from=-24h --order desc --limit 20
  ebb index query events --index-id acct_1 --all --output json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			var err error
			if q.From, err = parseTimeFlag("from", from, now); err != nil {
				return err
			}
			if q.To, err = parseTimeFlag("to", to, now); err != nil {
				return err
			}
			switch order {
			case "asc":
			case "desc":
				q.Desc = true
			default:
				return fmt.Errorf("--order %q: want asc or desc", order)
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			var page ebbclient.EventPage
			if all {
				if page.Events, err = collectAll(api.Events(cmd.Context(), args[0], q)); err != nil {
					return err
				}
			} else if page, err = api.QueryEvents(cmd.Context(), args[0], q); err != nil {
				return err
			}
			if out.json {
				page.Events = nonNil(page.Events)
				return printJSON(cmd.OutOrStdout(), page)
			}
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "TIMESTAMP\tEVENT_ID\tPAYLOAD")
			for _, ev := range page.Events {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", columnTime(ev.Timestamp, false), showBytes([]byte(ev.EventID), false), showBytes(ev.Payload, asBase64))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.NextPageToken != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "more events may follow: --page-token %s (or --all)\n", page.NextPageToken)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.IndexID, "index-id", "", "the index id whose events to read (required)")
	f.StringVar(&from, "from", "", "first time, inclusive (default: unbounded)")
	f.StringVar(&to, "to", "", "end time, exclusive (default: unbounded)")
	f.StringVar(&order, "order", "asc", "asc (oldest first) or desc (newest first)")
	f.IntVar(&q.Limit, "limit", 100, "events per page, 1..10000")
	f.StringVar(&q.PageToken, "page-token", "", "resume after a previous page")
	f.BoolVar(&all, "all", false, "read every page, --limit events at a time")
	f.BoolVar(&asBase64, "base64", false, "print payloads in standard base64")
	_ = cmd.MarkFlagRequired("index-id")
	_ = cmd.RegisterFlagCompletionFunc("order", cobra.FixedCompletions([]string{"asc", "desc"}, cobra.ShellCompDirectiveNoFileComp))
	out = addOutput(cmd)
	return cmd
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
