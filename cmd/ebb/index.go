package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ebb-data/ebb/shardmgr"
)

func init() { commands = append(commands, newIndexCmd) }

// indexJSON is an index as the server reports it (API.md "Time-sharded
// indexes").
type indexJSON struct {
	Name            string          `json:"name"`
	TableBucket     string          `json:"table_bucket"`
	PartitionBucket string          `json:"partition_bucket"`
	Retention       string          `json:"retention"`
	Runway          int             `json:"runway"`
	Capacity        json.RawMessage `json:"capacity,omitempty"`
	Shards          []struct {
		Table    string `json:"table"`
		Start    string `json:"start"`
		End      string `json:"end"`
		State    string `json:"state"`
		Capacity string `json:"capacity"`
	} `json:"shards"`
	RunwayRemaining string `json:"runway_remaining"`
}

// indexPlanJSON is the answer of POST /v1/indexes/{name}/reconcile.
type indexPlanJSON struct {
	Actions []struct {
		Op       string `json:"op"`
		Table    string `json:"table"`
		Reason   string `json:"reason"`
		Capacity string `json:"capacity,omitempty"`
		Deferred bool   `json:"deferred,omitempty"`
		Error    string `json:"error,omitempty"`
	} `json:"actions"`
	Unrecognized []string `json:"unrecognized,omitempty"`
	Applied      bool     `json:"applied"`
}

func newIndexCmd(c *client) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Manage time-sharded indexes on a running server",
		Long: `Manage time-sharded indexes: events kept one table ("shard") per time
bucket, so that expiring a bucket is dropping a table. The commands talk to
a running "ebb serve" (--server, default http://127.0.0.1:7070).`,
	}
	cmd.AddCommand(indexCreateCmd(c), indexListCmd(c), indexShowCmd(c), indexPlanCmd(c, false), indexPlanCmd(c, true), indexDeleteCmd(c))
	return cmd
}

func indexPath(name string, rest ...string) string {
	return "/v1/indexes/" + url.PathEscape(name) + strings.Join(rest, "")
}

func indexCreateCmd(c *client) *cobra.Command {
	var req struct {
		TableBucket     string `json:"table_bucket"`
		PartitionBucket string `json:"partition_bucket"`
		Retention       string `json:"retention"`
		Runway          *int   `json:"runway,omitempty"`
		Capacity        *struct {
			HotRead   int64 `json:"hot_read_units"`
			HotWrite  int64 `json:"hot_write_units"`
			PeakRead  int64 `json:"peak_read_units,omitempty"`
			PeakWrite int64 `json:"peak_write_units,omitempty"`
		} `json:"capacity,omitempty"`
	}
	var runway int
	var hotRead, hotWrite, peakRead, peakWrite int64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an index and its shards",
		Long: `Create an index and, at once, its shards: every shard inside retention, the
hot one and --runway more. An identical index is left as it is; one with a
different configuration is a conflict.`,
		Example: `  ebb index create events --table-bucket 168h --partition-bucket 24h --retention 1008h`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("runway") {
				req.Runway = &runway
			}
			if hotWrite > 0 || hotRead > 0 {
				req.Capacity = &struct {
					HotRead   int64 `json:"hot_read_units"`
					HotWrite  int64 `json:"hot_write_units"`
					PeakRead  int64 `json:"peak_read_units,omitempty"`
					PeakWrite int64 `json:"peak_write_units,omitempty"`
				}{hotRead, hotWrite, peakRead, peakWrite}
			}
			var raw json.RawMessage
			if err := c.do("PUT", indexPath(args[0]), req, &raw); err != nil {
				return err
			}
			if asJSON {
				return printIndexJSON(cmd.OutOrStdout(), raw)
			}
			var idx indexJSON
			if err := json.Unmarshal(raw, &idx); err != nil {
				return fmt.Errorf("decode index: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "index %s: %d shards, runway remaining %s\n", idx.Name, len(idx.Shards), idx.RunwayRemaining)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.TableBucket, "table-bucket", "", "time width of a shard, whole seconds (e.g. 168h)")
	f.StringVar(&req.PartitionBucket, "partition-bucket", "", "time width of a partition within a shard; divides --table-bucket (e.g. 24h)")
	f.StringVar(&req.Retention, "retention", "", "how long an event lives after its timestamp (e.g. 1008h)")
	f.IntVar(&runway, "runway", 2, "shards kept ready after the one holding now")
	f.Int64Var(&hotRead, "hot-read-units", 0, "capacity policy: provision the hot shard with this many read units (0: capacity not managed)")
	f.Int64Var(&hotWrite, "hot-write-units", 0, "capacity policy: provision the hot shard with this many write units")
	f.Int64Var(&peakRead, "peak-read-units", 0, "capacity policy: pre-warm the next shard to this many read units")
	f.Int64Var(&peakWrite, "peak-write-units", 0, "capacity policy: pre-warm the next shard to this many write units")
	f.BoolVar(&asJSON, "json", false, "print the index as JSON")
	for _, name := range []string{"table-bucket", "partition-bucket", "retention"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func indexListCmd(c *client) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List indexes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var raw json.RawMessage
			if err := c.do("GET", "/v1/indexes", nil, &raw); err != nil {
				return err
			}
			if asJSON {
				return printIndexJSON(cmd.OutOrStdout(), raw)
			}
			var list struct {
				Indexes []indexJSON `json:"indexes"`
			}
			if err := json.Unmarshal(raw, &list); err != nil {
				return fmt.Errorf("decode indexes: %w", err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTABLE_BUCKET\tPARTITION_BUCKET\tRETENTION\tRUNWAY\tSHARDS\tRUNWAY_REMAINING")
			for _, idx := range list.Indexes {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", idx.Name, idx.TableBucket, idx.PartitionBucket, idx.Retention, idx.Runway, len(idx.Shards), idx.RunwayRemaining)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the indexes as JSON")
	return cmd
}

func indexShowCmd(c *client) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show an index and its shards",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var raw json.RawMessage
			if err := c.do("GET", indexPath(args[0]), nil, &raw); err != nil {
				return err
			}
			if asJSON {
				return printIndexJSON(cmd.OutOrStdout(), raw)
			}
			var idx indexJSON
			if err := json.Unmarshal(raw, &idx); err != nil {
				return fmt.Errorf("decode index: %w", err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "index:            %s\ntable bucket:     %s\npartition bucket: %s\nretention:        %s\nrunway:           %d shards\nrunway remaining: %s\n",
				idx.Name, idx.TableBucket, idx.PartitionBucket, idx.Retention, idx.Runway, idx.RunwayRemaining)
			if len(idx.Capacity) > 0 {
				fmt.Fprintf(out, "capacity policy:  %s\n", idx.Capacity)
			}
			fmt.Fprintln(out)
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SHARD\tSTART\tEND\tSTATE\tCAPACITY")
			for _, sh := range idx.Shards {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sh.Table, sh.Start, sh.End, sh.State, sh.Capacity)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the index as JSON")
	return cmd
}

// indexPlanCmd is `plan` (a dry run) or, with apply, `apply`.
func indexPlanCmd(c *client, apply bool) *cobra.Command {
	var asJSON, allowJump bool
	cmd := &cobra.Command{
		Use:   "plan NAME",
		Short: "Show what the shard manager would do now, without doing it",
		Long: `Show what the shard manager would do now: shards to create (+), to drop (-),
capacity changes (~), and actions a guard or limit holds back (!), each with
its reason. Nothing is changed; "ebb index apply" does it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"dry_run": {fmt.Sprint(!apply)}}
			if allowJump {
				q.Set("allow_clock_jump", "true")
			}
			var raw json.RawMessage
			if err := c.do("POST", indexPath(args[0], "/reconcile?", q.Encode()), nil, &raw); err != nil {
				return err
			}
			var plan indexPlanJSON
			if err := json.Unmarshal(raw, &plan); err != nil {
				return fmt.Errorf("decode plan: %w", err)
			}
			if asJSON {
				if err := printIndexJSON(cmd.OutOrStdout(), raw); err != nil {
					return err
				}
			} else {
				printIndexPlan(cmd.OutOrStdout(), args[0], plan)
			}
			failed := 0
			for _, a := range plan.Actions {
				if a.Error != "" {
					failed++
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d action(s) failed; the others were applied (run again to retry)", failed)
			}
			return nil
		},
	}
	if apply {
		cmd.Use = "apply NAME"
		cmd.Short = "Apply the shard manager's plan now"
		cmd.Long = `Apply the shard manager's plan for the index now, as the reconcile loop
would: each action on its own, so one failure does not stop the others.
Prints the plan as applied; exits non-zero if any action failed.`
		cmd.Flags().BoolVar(&allowJump, "allow-clock-jump", false, "confirm that the clock really moved forward: apply drops the clock-jump guard holds back")
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

// printIndexPlan renders a plan like a Terraform plan.
func printIndexPlan(w io.Writer, name string, plan indexPlanJSON) {
	counts := map[string]int{}
	deferred := 0
	for _, a := range plan.Actions {
		if a.Deferred {
			deferred++
			continue
		}
		counts[a.Op]++
	}
	verb := "Plan"
	if plan.Applied {
		verb = "Applied"
	}
	fmt.Fprintf(w, "%s for index %s: %d to create, %d to drop, %d capacity change(s), %d deferred.\n",
		verb, name, counts["create"], counts["drop"], counts["set_capacity"]+counts["prewarm"], deferred)
	if len(plan.Actions) == 0 && len(plan.Unrecognized) == 0 {
		fmt.Fprintln(w, "\nNo changes. The shards match the configuration.")
		return
	}
	fmt.Fprintln(w)
	for _, a := range plan.Actions {
		line := shardmgr.FormatAction(a.Op, a.Table, a.Capacity, a.Reason, a.Deferred)
		if a.Error != "" {
			line += "\n    FAILED: " + a.Error
		}
		fmt.Fprintln(w, line)
	}
	for _, t := range plan.Unrecognized {
		fmt.Fprintf(w, "? %-13s %s  (not a shard of %s; left alone)\n", "ignore", t, name)
	}
}

func indexDeleteCmd(c *client) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete an index: drop every shard and the configuration",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.do("DELETE", indexPath(args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "index %s deleted\n", args[0])
			return nil
		},
	}
}

// printIndexJSON prints raw JSON indented.
func printIndexJSON(w io.Writer, raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return errors.New("the server's answer is not JSON")
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
