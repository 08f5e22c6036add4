package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	ebbclient "github.com/ebb-data/ebb/client"
	"github.com/ebb-data/ebb/migrate"
)

// indexMigrateCmd is `ebb index migrate`: start a migration off a legacy
// table, import rows into it, change phase, backfill, and show status.
func indexMigrateCmd(c *client) *cobra.Command {
	var (
		phase, legacyTable, dynamoTable, cqlTable     string
		importFile                                    string
		mapPK, mapSK, mapSKFormat, mapEvent, mapBody  string
		mapTTL, legacyTTL, endpoint, region           string
		writeLegacy, force, backfill, dryRun, restart bool
		noWait, stop, end                             bool
		sample, rowsPerSecond, unitsPerSecond         float64
		batch                                         int
	)
	var out *output
	cmd := &cobra.Command{
		Use:   "migrate NAME [--legacy-table T | --legacy-dynamodb-table T ... | --legacy-cql-table KS.T ...] [--import FILE] [--phase P] [--backfill]",
		Short: "Migrate an index off a legacy table: phases, import, backfill, status",
		Long: `Migrate an index off a legacy table with zero downtime (docs/migration.md).

With --legacy-table (an ebb table, created empty if missing), or
--legacy-dynamodb-table or --legacy-cql-table and the --map-* flags, the
migration starts in phase shadow-write. A token scoped to the index may
name only its own legacy table, NAME_legacy; any other legacy source needs
a token with the admin scope. --import writes a JSON Lines file of
{"index_id","event_id","timestamp","payload"(base64),"expires_at"} rows into
the legacy table. --phase moves to shadow-write, shadow-read, merged-read or
cutover; the server refuses a change its rules forbid, saying why, unless
--force. --backfill copies live legacy rows into the shards, resumably, and
shows a progress bar until it is done. With no action, it shows the status.`,
		Example: `  ebb index migrate events --legacy-table events_legacy --write-legacy --sample-percent 10
  ebb index migrate events --import legacy.jsonl
  ebb index migrate events --phase shadow-read
  ebb index migrate events --backfill --rows-per-second 5000
  ebb index migrate events --phase merged-read
  ebb index migrate events --phase cutover
  ebb index migrate events`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			ctx, name := cmd.Context(), args[0]
			w := cmd.OutOrStdout()
			given := 0
			for _, t := range []string{legacyTable, dynamoTable, cqlTable} {
				if t != "" {
					given++
				}
			}
			if given > 1 {
				return errors.New("give one of --legacy-table, --legacy-dynamodb-table and --legacy-cql-table")
			}
			if given == 1 {
				s := ebbclient.MigrationSettings{WriteLegacy: writeLegacy, SamplePercent: sample,
					Legacy: ebbclient.LegacyTable{Kind: "table", Table: legacyTable, TTL: legacyTTL}}
				switch {
				case dynamoTable != "":
					s.Legacy = ebbclient.LegacyTable{Kind: "dynamodb", Table: dynamoTable, TTL: legacyTTL, Endpoint: endpoint, Region: region,
						Mapping: &ebbclient.LegacyMapping{IndexID: mapPK, SortKey: mapSK, SortKeyFormat: mapSKFormat, EventID: mapEvent, Payload: mapBody, TTL: mapTTL}}
				case cqlTable != "":
					// CQL's TTL is native to every cell, and the sort key's
					// format follows its column type: the DynamoDB
					// defaults of these two flags do not apply.
					m := &ebbclient.LegacyMapping{IndexID: mapPK, SortKey: mapSK, EventID: mapEvent, Payload: mapBody}
					if cmd.Flags().Changed("map-sort-key-format") {
						m.SortKeyFormat = mapSKFormat
					}
					if cmd.Flags().Changed("map-ttl") {
						m.TTL = mapTTL
					}
					s.Legacy = ebbclient.LegacyTable{Kind: "cql", Table: cqlTable, TTL: legacyTTL, Endpoint: endpoint, Region: region, Mapping: m}
				}
				_, created, err := api.StartMigration(ctx, name, s)
				if err != nil {
					return err
				}
				if !out.json {
					verb := "started"
					if !created {
						verb = "already migrating; settings updated"
					}
					fmt.Fprintf(w, "%s: migration %s (legacy %s %s), phase shadow-write\n", name, verb, kindLabel(s.Legacy.Kind), s.Legacy.Table)
				}
			}
			if importFile != "" {
				n, err := importLegacy(cmd, api, name, importFile)
				if err != nil {
					return err
				}
				if !out.json {
					fmt.Fprintf(w, "%s: imported %d legacy row(s) from %s\n", name, n, importFile)
				}
			}
			if phase != "" {
				m, err := api.SetMigrationPhase(ctx, name, phase, force)
				if err != nil {
					return err
				}
				if !out.json {
					fmt.Fprintf(w, "%s: phase %s\n", name, m.Phase)
				}
			}
			if stop {
				before, err := api.Migration(ctx, name)
				if err != nil {
					return err
				}
				if err := api.StopBackfill(ctx, name); err != nil {
					return err
				}
				if !out.json {
					switch {
					case !before.BackfillRunning:
						fmt.Fprintf(w, "%s: no backfill was running; nothing stopped\n", name)
					default:
						m, err := api.Migration(ctx, name)
						if err != nil {
							return err
						}
						scanned := int64(0)
						if m.Backfill != nil {
							scanned = m.Backfill.Scanned
						}
						fmt.Fprintf(w, "%s: backfill stopped after %d legacy row(s) scanned; its checkpoint keeps them: --backfill resumes from it\n", name, scanned)
					}
				}
			}
			if backfill {
				if _, err := api.StartBackfill(ctx, name, ebbclient.BackfillOptions{
					RowsPerSecond: rowsPerSecond, UnitsPerSecond: unitsPerSecond, BatchSize: batch, DryRun: dryRun, Restart: restart,
				}); err != nil {
					return err
				}
				if noWait {
					if !out.json {
						fmt.Fprintf(w, "%s: backfill started\n", name)
					}
				} else if err := watchBackfill(cmd, api, name); err != nil {
					return err
				}
			}
			if end {
				if err := api.EndMigration(ctx, name, force); err != nil {
					return err
				}
				if !out.json {
					fmt.Fprintf(w, "%s: migration ended; the shards serve alone and the legacy table is left as it is\n", name)
				}
				return nil
			}
			acted := given > 0 || importFile != "" || phase != "" || stop || (backfill && noWait)
			if acted && (!backfill || noWait) && !out.json {
				return nil
			}
			m, err := api.Migration(ctx, name)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(w, m)
			}
			printMigration(w, m)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&phase, "phase", "", "move to this phase: shadow-write, shadow-read, merged-read or cutover")
	f.BoolVar(&force, "force", false, "override the phase rules (with --phase or --end)")
	f.StringVar(&legacyTable, "legacy-table", "", "start migrating from this ebb table (embedded layout; created empty if missing): NAME_legacy is the index's own; any other name needs an admin token")
	f.StringVar(&dynamoTable, "legacy-dynamodb-table", "", "start migrating from this existing DynamoDB table (with the --map-* flags; needs an admin token)")
	f.StringVar(&cqlTable, "legacy-cql-table", "", "start migrating from this existing CQL table, KEYSPACE.TABLE (with the --map-* flags; needs an admin token)")
	f.StringVar(&mapPK, "map-index-id", "", "DynamoDB: the partition key attribute holding the index id; CQL: the partition key column")
	f.StringVar(&mapSK, "map-sort-key", "", "DynamoDB: the sort key attribute; CQL: the first clustering column")
	f.StringVar(&mapSKFormat, "map-sort-key-format", "timestamp_event_id", "timestamp_event_id (\"<13-digit ms>#<event id>\") or timestamp_ms (a number; on CQL a bigint or timestamp); CQL: from the column's type by default")
	f.StringVar(&mapEvent, "map-event-id", "", "the event id attribute or column (with timestamp_ms; on CQL the clustering column after the sort key, or a regular one)")
	f.StringVar(&mapBody, "map-payload", "payload", "the payload attribute or column (CQL: blob or text)")
	f.StringVar(&mapTTL, "map-ttl", "ttl", "DynamoDB: the native TTL attribute (Unix seconds); CQL: the column whose TTL() is the row's (default the payload's)")
	f.StringVar(&endpoint, "legacy-endpoint", "", "DynamoDB endpoint, or CQL contact points H1,H2, of the legacy table (default: the server's backend)")
	f.StringVar(&region, "legacy-region", "", "AWS region of the legacy table")
	f.StringVar(&legacyTTL, "legacy-ttl", "", "expiry of rows ebb writes to the legacy table (default the index's retention)")
	f.BoolVar(&writeLegacy, "write-legacy", false, "ebb writes every event to the legacy table too, until cutover")
	f.Float64Var(&sample, "sample-percent", 0, "share of shadow-read queries also read from the shards and compared (0-100)")
	f.StringVar(&importFile, "import", "", "JSON Lines file of legacy rows to write into the legacy table (- for standard input)")
	f.BoolVar(&backfill, "backfill", false, "copy live legacy rows into the shards, resuming the last pass")
	f.BoolVar(&dryRun, "dry-run", false, "with --backfill: scan and count only (a census of live legacy rows)")
	f.BoolVar(&restart, "restart", false, "with --backfill: start a new pass from the beginning")
	f.BoolVar(&noWait, "no-wait", false, "with --backfill: return at once instead of showing progress")
	f.BoolVar(&stop, "stop-backfill", false, "stop a running backfill (its checkpoint keeps its progress)")
	f.BoolVar(&end, "end", false, "end the migration (in cutover, or with --force)")
	f.Float64Var(&rowsPerSecond, "rows-per-second", 0, "with --backfill: legacy rows scanned per second at most (0: unbounded)")
	f.Float64Var(&unitsPerSecond, "units-per-second", 0, "with --backfill: request units per second at most (0: unbounded)")
	f.IntVar(&batch, "batch-size", 0, "with --backfill: rows per step (default 500)")
	out = addOutput(cmd)
	return cmd
}

// warnForeignLegacy logs a warning for each migration from a legacy source
// other than its index's own (migrate.OwnTable). Only a token with the
// admin scope may start one now, but a migration started earlier by a
// token scoped to the index may read another index's legacy table, or
// reach an address of that token's choosing; the operator should check
// that an admin meant it, and end it otherwise.
func warnForeignLegacy(ctx context.Context, log *slog.Logger, svc *migrate.Service) {
	states, err := svc.States(ctx)
	if err != nil {
		log.Warn("could not list migrations to check their legacy sources", "err", err)
		return
	}
	for _, st := range states {
		if st.Legacy.OwnedBy(st.Index) {
			continue
		}
		log.Warn("migration from a legacy source other than the index's own: only an admin token may start one; if no admin did, end it with ebb index migrate INDEX --end --force",
			"index", st.Index, "kind", st.Legacy.Kind, "table", st.Legacy.Table, "endpoint", st.Legacy.Endpoint, "own", migrate.OwnTable(st.Index))
	}
}

// kindLabel names a kind of legacy table for people.
func kindLabel(kind string) string {
	switch kind {
	case "table":
		return "ebb table"
	case "dynamodb":
		return "DynamoDB table"
	case "cql":
		return "CQL table"
	}
	return kind + " table"
}

// importLegacy sends a JSON Lines file of legacy rows in batches.
func importLegacy(cmd *cobra.Command, api *ebbclient.Client, name, file string) (int, error) {
	data, err := readInput(cmd, file)
	if err != nil {
		return 0, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	written, line := 0, 0
	var batch []ebbclient.LegacyRow
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := api.WriteLegacyRows(cmd.Context(), name, batch)
		if err != nil {
			return fmt.Errorf("%s: rows %d..%d: %w (the %d before were written)", file, line-len(batch), line-1, err, written)
		}
		written += n
		batch = batch[:0]
		return nil
	}
	for {
		var r ebbclient.LegacyRow
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			return written, fmt.Errorf("%s: row %d: %w", file, line, err)
		}
		batch = append(batch, r)
		line++
		if len(batch) == maxEventBatch {
			if err := flush(); err != nil {
				return written, err
			}
		}
	}
	return written, flush()
}

// watchBackfill polls the migration and shows the backfill's progress
// until it stops.
func watchBackfill(cmd *cobra.Command, api *ebbclient.Client, name string) error {
	w := cmd.ErrOrStderr()
	f, ok := w.(*os.File)
	tty := ok && term.IsTerminal(int(f.Fd()))
	var bar *progressbar.ProgressBar
	last := time.Time{}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		m, err := api.Migration(cmd.Context(), name)
		if err != nil {
			return err
		}
		b := m.Backfill
		if b != nil {
			total := max(b.TotalEstimate, b.Scanned)
			if tty {
				if bar == nil {
					bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("backfill"),
						progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(30),
						progressbar.OptionThrottle(100*time.Millisecond))
				}
				bar.ChangeMax64(total)
				_ = bar.Set64(b.Scanned)
			} else if time.Since(last) >= 5*time.Second || !m.BackfillRunning {
				last = time.Now()
				fmt.Fprintf(w, "backfill: %d/%d rows scanned, %d copied, %.0f rows/s, ETA %s\n", b.Scanned, total, b.Copied, b.RowsPerSecond, b.ETA)
			}
		}
		if !m.BackfillRunning {
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(w)
			}
			if b != nil && b.Error != "" {
				return fmt.Errorf("backfill failed: %s (run it again to resume)", b.Error)
			}
			return nil
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-tick.C:
		}
	}
}

func printMigration(w io.Writer, m ebbclient.Migration) {
	fmt.Fprintf(w, "index %s: phase %s since %s\n", m.Index, m.Phase, m.PhaseSince.Format(time.RFC3339))
	fmt.Fprintf(w, "legacy: %s (%s); ebb writes it: %v; shadow-read sample %g%%\n", m.Legacy.Table, m.Legacy.Kind, m.WriteLegacy, m.SamplePercent)
	cn := m.Counters
	fmt.Fprintf(w, "shadow failures: %d write, %d read; reads compared %d; mismatches: %d missing, %d extra, %d different\n",
		cn.ShadowWriteFailures, cn.ShadowReadFailures, cn.ReadsCompared, cn.Mismatches["missing"], cn.Mismatches["extra"], cn.Mismatches["different"])
	for _, s := range cn.MismatchSample {
		fmt.Fprintf(w, "  %s: index_id %q event_id %q at %s\n", s.Kind, s.IndexID, s.EventID, s.Timestamp.Format(time.RFC3339Nano))
	}
	if b := m.Backfill; b != nil {
		state := "stopped"
		switch {
		case m.BackfillRunning:
			state = "running"
		case b.Done:
			state = "done"
		}
		kind := "copy"
		if b.DryRun {
			kind = "dry run"
		}
		fmt.Fprintf(w, "backfill pass %d (%s) %s: %d scanned, %d copied, skipped %d expired, %d past retention, %d without shard\n",
			b.Pass, kind, state, b.Scanned, b.Copied, b.SkippedExpired, b.SkippedRetention, b.SkippedNoShard)
		if b.Error != "" {
			fmt.Fprintf(w, "  last error: %s\n", b.Error)
		}
	}
	if m.LegacyLiveRows != nil {
		fmt.Fprintf(w, "legacy rows still live: about %d\n", *m.LegacyLiveRows)
	}
	if m.CutoverReady {
		fmt.Fprintln(w, "cutover: ready")
	} else {
		fmt.Fprintf(w, "cutover: blocked: %s\n", m.CutoverBlockedBy)
	}
	if m.LegacyNewestExpiry != nil {
		fmt.Fprintf(w, "legacy table's newest row expires %s; deletable by its owner: %v\n", m.LegacyNewestExpiry.Format(time.RFC3339), m.LegacyDeletable)
	}
}
