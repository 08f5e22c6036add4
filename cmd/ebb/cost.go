package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ebb-data/ebb/cost"
	"github.com/ebb-data/ebb/internal/durfmt"
)

func init() { commands = append(commands, newCostCmd) }

func newCostCmd(c *client) *cobra.Command {
	var (
		w                          cost.Workload
		retention, ownTTL, period  time.Duration
		dynamoLag, keyspacesLag    time.Duration
		goneWithin                 time.Duration
		coldAfter                  time.Duration
		workloadFile, pricesFile   string
		chartFile, from, providers string
		out                        *output
	)
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Estimate what expiry costs on DynamoDB and Keyspaces, or project a running server's bill",
		Long: `Estimate a workload's monthly cost on DynamoDB and Amazon Keyspaces under
each way of expiring data: native per-row TTL, ebb's time shards dropped
whole, ebb's shards with the sweeper for rows with their own TTL, and ebb's
sweeper over native TTL. Each is split into writes, reads, storage and
expiry; a second table shows how the sharded strategies change with the
shard period, since storage is held until a shard is dropped. With
--tables N above 1 a third table compares the capacity of the workload
spread over N tables of their own (one per tenant) with one shared table.
Last, the expiry modes of a list feature or shared table (sweep, native,
drop) are compared for every row of the workload, and the cheapest whose
promptness (how long past its expiry a row may stay on disk) is within
--gone-within is named.

The workload comes from the flags or from a JSON or YAML file (--workload)
whose keys are the flag names; flags given override the file. Prices come
from the built-in sheet (us-east-1, with its sources and the date it was
checked: "ebb cost --show-prices"), figure by figure replaceable with
--prices FILE (JSON or YAML, same keys). docs/cost.md explains the model.

With --from URL it reads a running server's metered usage instead
(GET /v1/admin/usage; admin scope, --token) and projects its monthly bill on
each provider, beside what the same traffic would cost with native TTL,
and under each expiry mode.`,
		Example: `  ebb cost --rows-per-second 25000 --row-bytes 1024 --retention 1008h
  ebb cost --workload lists.yaml --json
  ebb cost --rows-per-second 100 --row-bytes 500 --retention 720h --own-ttl-share 0.25 --own-ttl 1h --chart cost.svg
  ebb cost --rows-per-second 100 --row-bytes 500 --retention 720h --tables 1000 --capacity provisioned
  ebb cost --rows-per-second 10000 --row-bytes 200 --retention 720h --own-ttl-share 1 --own-ttl 720h --gone-within 1m
  ebb cost --from http://127.0.0.1:7070`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var wf cost.WorkloadFile
			if workloadFile != "" {
				var err error
				if wf, err = cost.LoadWorkloadFile(workloadFile); err != nil {
					return fmt.Errorf("--workload %w", err)
				}
				// The file's chart and prices keys, relative to the file as
				// in ebb serve --config; the flags win.
				rel := func(p string) string {
					if p == "" || filepath.IsAbs(p) {
						return p
					}
					return filepath.Join(filepath.Dir(workloadFile), p)
				}
				if !cmd.Flags().Changed("chart") {
					chartFile = rel(wf.Chart)
				}
				if !cmd.Flags().Changed("prices") {
					pricesFile = rel(wf.Prices)
				}
			}
			prices := cost.DefaultPrices()
			if pricesFile != "" {
				p, err := cost.LoadPrices(pricesFile)
				if err != nil {
					return fmt.Errorf("--prices %w", err)
				}
				prices = p
			}
			if show, _ := cmd.Flags().GetBool("show-prices"); show {
				return printJSON(cmd.OutOrStdout(), prices)
			}
			if from != "" {
				return costFrom(cmd, c, from, prices, pricesFile, goneWithin, out)
			}
			if workloadFile != "" {
				// Flags given on the command line win over the file.
				merged := wf.Workload
				f := cmd.Flags()
				set := func(name string, apply func()) {
					if f.Changed(name) {
						apply()
					}
				}
				set("rows-per-second", func() { merged.RowsPerSecond = w.RowsPerSecond })
				set("row-bytes", func() { merged.RowBytes = w.RowBytes })
				set("reads-per-second", func() { merged.ReadsPerSecond = w.ReadsPerSecond })
				set("rows-per-read", func() { merged.RowsPerRead = w.RowsPerRead })
				set("own-ttl-share", func() { merged.OwnTTLShare = w.OwnTTLShare })
				set("capacity", func() { merged.Capacity = w.Capacity })
				set("utilization", func() { merged.Utilization = w.Utilization })
				set("retention", func() { merged.Retention = cost.Duration(retention) })
				set("own-ttl", func() { merged.OwnTTL = cost.Duration(ownTTL) })
				set("shard-period", func() { merged.ShardPeriod = cost.Duration(period) })
				set("dynamodb-ttl-lag", func() { merged.DynamoDBTTLLag = cost.Duration(dynamoLag) })
				set("keyspaces-ttl-lag", func() { merged.KeyspacesTTLLag = cost.Duration(keyspacesLag) })
				set("provider", func() { merged.Providers = splitList(providers) })
				set("tables", func() { merged.Tables = w.Tables })
				set("gone-within", func() { merged.GoneWithin = cost.Duration(goneWithin) })
				set("cold-after", func() { merged.ColdAfter = cost.Duration(coldAfter) })
				set("cold-read-share", func() { merged.ColdReadShare = w.ColdReadShare })
				w = merged
			} else {
				if !cmd.Flags().Changed("rows-per-second") || !cmd.Flags().Changed("row-bytes") || !cmd.Flags().Changed("retention") {
					return errors.New("give the workload: --rows-per-second, --row-bytes and --retention at least (or --workload FILE, or --from URL)")
				}
				w.Retention, w.OwnTTL, w.ShardPeriod = cost.Duration(retention), cost.Duration(ownTTL), cost.Duration(period)
				w.DynamoDBTTLLag, w.KeyspacesTTLLag = cost.Duration(dynamoLag), cost.Duration(keyspacesLag)
				w.GoneWithin = cost.Duration(goneWithin)
				w.ColdAfter = cost.Duration(coldAfter)
				w.Providers = splitList(providers)
			}
			if err := zeroFlags(cmd); err != nil {
				return err
			}
			if cmd.Flags().Changed("provider") && len(splitList(providers)) == 0 {
				return fmt.Errorf("--provider: %q names no provider; want %s, %s or both", providers, cost.DynamoDB, cost.Keyspaces)
			}
			est, err := cost.Run(w, prices)
			if err != nil {
				return inputError(err, cmd, wf, workloadFile)
			}
			if chartFile != "" {
				svg, err := cost.Chart(w, prices)
				if err != nil {
					return inputError(err, cmd, wf, workloadFile)
				}
				if err := os.WriteFile(chartFile, svg, 0o644); err != nil {
					return fmt.Errorf("--chart: %w", err)
				}
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), est)
			}
			return printEstimate(cmd.OutOrStdout(), est, pricesFile)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&w.RowsPerSecond, "rows-per-second", 0, "rows written per second, on average")
	f.IntVar(&w.RowBytes, "row-bytes", 0, "a row's size in bytes, as the provider bills it")
	f.DurationVar(&retention, "retention", 0, "how long a row is kept (1008h is six weeks)")
	f.Float64Var(&w.ReadsPerSecond, "reads-per-second", 0, "queries per second")
	f.IntVar(&w.RowsPerRead, "rows-per-read", 0, "rows one query returns (default 1)")
	f.Float64Var(&w.OwnTTLShare, "own-ttl-share", 0, "share of rows (0 to 1) written with their own, shorter TTL")
	f.DurationVar(&ownTTL, "own-ttl", 0, "how long rows with their own TTL live, at most the retention (default 24h, or the retention when shorter)")
	f.DurationVar(&period, "shard-period", 0, "width of one time shard, the index's table_bucket (default 168h)")
	f.DurationVar(&dynamoLag, "dynamodb-ttl-lag", 0, "how long after expiry DynamoDB's TTL deletes a row (default 48h)")
	f.DurationVar(&keyspacesLag, "keyspaces-ttl-lag", 0, "how long after expiry Keyspaces' TTL deletes a row (default 240h)")
	f.StringVar(&w.Capacity, "capacity", "", "on_demand (default) or provisioned")
	f.Float64Var(&w.Utilization, "utilization", 0, "with provisioned capacity, the share of it used on average (default 0.7); refused with on-demand capacity, which bills each request")
	f.StringVar(&providers, "provider", "", "dynamodb, keyspaces, or both comma-separated (default both)")
	f.IntVar(&w.Tables, "tables", 0, "tables the workload would be spread over without shared tables (one per tenant); above 1, compares them with one shared table (default 1)")
	f.DurationVar(&goneWithin, "gone-within", 0, "how long past its expiry a row may stay on disk: names the cheapest expiry mode within it (default: no bound)")
	f.DurationVar(&coldAfter, "cold-after", 0, "DynamoDB: estimate moving shards that ended this long ago to the Standard-IA table class (an index's capacity cold_after)")
	f.Float64Var(&w.ColdReadShare, "cold-read-share", 0, "with --cold-after, the share of reads (0 to 1) that go to such shards (default 0)")
	f.StringVar(&workloadFile, "workload", "", "JSON or YAML file holding the workload, keyed by flag name")
	f.StringVar(&pricesFile, "prices", "", "JSON or YAML price sheet replacing built-in figures")
	f.Bool("show-prices", false, "print the price sheet in use, with its sources and date, and exit")
	f.StringVar(&chartFile, "chart", "", "write an SVG chart of cumulative cost over twice the retention to this file")
	f.StringVar(&from, "from", "", "URL of a running server whose metered usage to project (admin scope)")
	out = addOutput(cmd)
	return cmd
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// inputError names what an input error is about as the user gave it: the
// flag, or the key of the workload file when no flag overrode it.
func inputError(err error, cmd *cobra.Command, wf cost.WorkloadFile, workloadFile string) error {
	var ie *cost.InputError
	if !errors.As(err, &ie) {
		return err
	}
	if strings.HasPrefix(ie.Field, "prices.") {
		return fmt.Errorf("--prices: %w", err)
	}
	if workloadFile != "" && !cmd.Flags().Changed(ie.Field) {
		key := ie.Field
		if key == "provider" {
			key = wf.ProviderKey
		}
		return fmt.Errorf("--workload %s: %s: %s", workloadFile, key, ie.Msg)
	}
	return fmt.Errorf("--%w", err)
}

// zeroFlags refuses a zero given on the command line to a flag whose zero
// means its default, rather than silently estimating the default.
func zeroFlags(cmd *cobra.Command) error {
	for _, name := range []string{"rows-per-read", "own-ttl", "shard-period", "dynamodb-ttl-lag", "keyspaces-ttl-lag", "utilization", "tables"} {
		f := cmd.Flags().Lookup(name)
		if !f.Changed {
			continue
		}
		switch v := f.Value.String(); v {
		case "0", "0s":
			return fmt.Errorf("--%s: %s stands for the default, %s; give a figure above zero, or leave the flag out", name, v, flagDefaults[name])
		}
	}
	return nil
}

// flagDefaults are the defaults that a zero stands for (see cost.Workload).
var flagDefaults = map[string]string{
	"rows-per-read": "1", "own-ttl": "24h, or the retention when shorter", "shard-period": "168h",
	"dynamodb-ttl-lag": "48h", "keyspaces-ttl-lag": "240h", "utilization": "0.7", "tables": "1",
}

// pricesNote is how a header names the prices in use: the built-in
// sheet's date, which no longer holds once a price file replaces figures.
func pricesNote(region, checked, pricesFile string) string {
	if pricesFile != "" {
		return fmt.Sprintf("%s prices of the built-in sheet with %s's figures over it", region, pricesFile)
	}
	return fmt.Sprintf("%s prices checked %s", region, checked)
}

func printEstimate(out io.Writer, e *cost.Estimate, pricesFile string) error {
	w := e.Workload
	fmt.Fprintf(out, "Workload: %s rows/s of %d bytes, retention %s, %s reads/s of %d rows, own-TTL share %g (own TTL %s), shard period %s.\n",
		num(w.RowsPerSecond), w.RowBytes, durfmt.Format(time.Duration(w.Retention)), num(w.ReadsPerSecond), w.RowsPerRead,
		w.OwnTTLShare, durfmt.Format(time.Duration(w.OwnTTL)), durfmt.Format(time.Duration(w.ShardPeriod)))
	fmt.Fprintf(out, "Monthly cost in %s, %s capacity, %s.\n", e.Currency, strings.ReplaceAll(w.Capacity, "_", "-"), pricesNote(e.Region, e.Checked, pricesFile))
	for _, p := range e.Providers {
		fmt.Fprintf(out, "\n%s\n", p.Provider)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "strategy\twrites\treads\tstorage\texpiry\ttotal\tstored GB\t")
		for _, b := range p.Strategies {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", cost.StrategyTitles[b.Strategy],
				cost.Money(b.Writes), cost.Money(b.Reads), cost.Money(b.Storage), cost.Money(b.Expiry), cost.Money(b.Total), num(b.StoredGB))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if err := printTables(out, e, &p); err != nil {
			return err
		}
		if err := printModes(out, e, &p); err != nil {
			return err
		}
		if c := p.ColdClass; c != nil {
			verb, saved := "saves", c.Saved
			if saved < 0 {
				verb, saved = "costs", -saved
			}
			fmt.Fprintf(out, "\n%s shards in Standard-IA from %s after their end: %s GB there, storage %s less, cold reads %s more; shards total %s -> %s (%s %s a month)\n",
				p.Provider, durfmt.Format(time.Duration(c.ColdAfter)), num(c.ColdGB), cost.Money(c.StorageSaved), cost.Money(c.ReadsExtra),
				cost.Money(c.Shards), cost.Money(c.WithClass), verb, cost.Money(saved))
		}
		fmt.Fprintf(out, "\n%s by shard period (storage is held until a shard is dropped)\n", p.Provider)
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "shard period\tstored GB\tstorage\tshards total\tshards + sweeper total\t")
		for _, r := range p.ShardPeriods {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", durfmt.Format(time.Duration(r.ShardPeriod)),
				num(r.Strategies[0].StoredGB), cost.Money(r.Strategies[0].Storage), cost.Money(r.Strategies[0].Total), cost.Money(r.Strategies[1].Total))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// printTables prints the comparison of tables of their own with one shared
// table, when the workload asks for one.
func printTables(out io.Writer, e *cost.Estimate, p *cost.ProviderEstimate) error {
	if len(p.Tables) == 0 {
		return nil
	}
	n := e.Workload.Tables
	provisioned := e.Workload.Capacity == cost.Provisioned
	fmt.Fprintf(out, "\n%s as %s tables of their own or one shared table (capacity a month; storage and TTL deletes are the same either way)\n",
		p.Provider, num(float64(n)))
	if !provisioned {
		fmt.Fprintln(out, "on demand a table costs nothing while idle: the layouts cost the same (see --capacity provisioned)")
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	if provisioned {
		fmt.Fprintf(tw, "strategy\t%s tables\tWCU+RCU each\tone shared table\tWCU+RCU\tsaved\t\n", num(float64(n)))
	} else {
		fmt.Fprintf(tw, "strategy\t%s tables\tone shared table\tsaved\t\n", num(float64(n)))
	}
	for _, r := range p.Tables {
		if provisioned {
			fmt.Fprintf(tw, "%s\t%s\t%d+%d\t%s\t%d+%d\t%s\t\n", cost.StrategyTitles[r.Strategy], cost.Money(r.Separate),
				r.TableWCU, r.TableRCU, cost.Money(r.Shared), r.SharedWCU, r.SharedRCU, cost.Money(r.Saved))
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", cost.StrategyTitles[r.Strategy], cost.Money(r.Separate), cost.Money(r.Shared), cost.Money(r.Saved))
		}
	}
	return tw.Flush()
}

// printModes prints the expiry modes compared, and the cheapest within
// the bound.
func printModes(out io.Writer, e *cost.Estimate, p *cost.ProviderEstimate) error {
	fmt.Fprintf(out, "\n%s by expiry mode of a list feature or shared table (every row)\n", p.Provider)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\twrites\treads\tstorage\texpiry\ttotal\tstored GB\tgone within\t")
	for _, b := range p.Modes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", b.Strategy, cost.Money(b.Writes), cost.Money(b.Reads),
			cost.Money(b.Storage), cost.Money(b.Expiry), cost.Money(b.Total), num(b.StoredGB), durfmt.Format(time.Duration(b.GoneWithin)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(out, cheapestLine(p.CheapestMode, time.Duration(e.Workload.GoneWithin)))
	return err
}

// cheapestLine says which mode is cheapest within the bound.
func cheapestLine(mode string, bound time.Duration) string {
	switch {
	case mode == "":
		return fmt.Sprintf("no mode removes rows within %s", durfmt.Format(bound))
	case bound == 0:
		return fmt.Sprintf("cheapest: %s (no --gone-within bound)", mode)
	}
	return fmt.Sprintf("cheapest gone within %s: %s", durfmt.Format(bound), mode)
}

// num prints a figure with thousands separators and up to one decimal.
func num(v float64) string {
	s := cost.Money(math.Round(v*10) / 10)
	s = strings.TrimSuffix(s[:len(s)-1], ".")
	return strings.TrimSuffix(s, ".0")
}

// costFrom projects a running server's usage.
func costFrom(cmd *cobra.Command, c *client, from string, prices cost.Prices, pricesFile string, goneWithin time.Duration, out *output) error {
	cc := *c
	cc.server = from
	api, err := cc.api()
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	u, err := api.Usage(cmd.Context(), true)
	if err != nil {
		return explain(err)
	}
	live, err := cost.Project(u, prices)
	if err != nil {
		return err
	}
	live.CompareModes(u, prices, goneWithin)
	if out.json {
		return printJSON(cmd.OutOrStdout(), live)
	}
	o := cmd.OutOrStdout()
	fmt.Fprintf(o, "%s: usage over %s (since %s), projected to a month in %s at on-demand %s.\n",
		from, durfmt.Format(time.Duration(live.Seconds)*time.Second), live.Since, live.Currency, pricesNote(live.Region, live.Checked, pricesFile))
	tw := tabwriter.NewWriter(o, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "provider\twrites\treads\tof which expiry\tstorage\ttotal\twith native TTL\tsaved\t")
	for _, p := range live.Projections {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Provider, cost.Money(p.Writes), cost.Money(p.Reads),
			cost.Money(p.Expiry), cost.Money(p.Storage), cost.Money(p.Total), cost.Money(p.NativeTTL), cost.Money(p.Saved))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(o, "\nby expiry mode")
	tw = tabwriter.NewWriter(o, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "provider\tsweep\tnative\tdrop\tcheapest\t")
	for _, p := range live.Projections {
		row := []string{p.Provider}
		for _, m := range p.Modes {
			row = append(row, cost.Money(m.Total))
		}
		best := p.CheapestMode
		if best == "" {
			best = "none within " + durfmt.Format(goneWithin)
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", strings.Join(row, "\t"), best)
	}
	return tw.Flush()
}
