package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	ebbclient "github.com/ebb-data/ebb/client"
)

func init() { commands = append(commands, newTablesCmd) }

func newTablesCmd(c *client) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tables",
		Short: "Manage shared tables and their items on a running server",
		Long: `Manage shared tables: many small logical tables kept in one physical table,
each item with a timestamp, a JSON object of attributes and an optional
TTL. Table names match [A-Za-z0-9_.-]{1,128}; keys are any UTF-8 up to
1000 bytes. The commands talk to a running "ebb serve" (--server, default
http://127.0.0.1:7070).`,
	}
	cmd.AddCommand(tablesCreateCmd(c), tablesListCmd(c), tablesGetCmd(c), tablesPutCmd(c), tablesPatchCmd(c), tablesDeleteCmd(c), tablesDropCmd(c), tablesItemsCmd(c))
	return cmd
}

// completeTableNames completes the first argument with the server's
// shared tables.
func completeTableNames(c *client) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		api, err := c.api()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		tables, err := api.Tables(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]cobra.Completion, len(tables))
		for i, t := range tables {
			names[i] = t.Name
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

func printTable(w io.Writer, t ebbclient.Table) error {
	ttl := "none"
	if t.DefaultTTL > 0 {
		ttl = ebbclient.FormatDuration(t.DefaultTTL)
	}
	_, err := fmt.Fprintf(w, "table:       %s\ndefault ttl: %s\ncreated:     %s\n", t.Name, ttl, formatTime(t.CreatedAt))
	if err == nil && t.Rewrite != nil {
		_, err = fmt.Fprintf(w, "rewrite:     %s\n", rewriteLine(t.Rewrite))
	}
	return err
}

func tablesCreateCmd(c *client) *cobra.Command {
	var cfg ebbclient.TableConfig
	var out *output
	cmd := &cobra.Command{
		Use:   "create TABLE [--default-ttl DURATION] [--expiry sweep|native] [--rewrite]",
		Short: "Create a shared table",
		Long: `Create a shared table, or change one. Items put without a TTL of their
own expire --default-ttl after they are written (0, the default for a new
table: never). An existing table is left as it is without --default-ttl;
with another --default-ttl, it changes for the items put from then on
(items already put keep their expiry; with --rewrite a background job
gives those put without a TTL of their own the new default too, counted
from their last write, deleting those whose new expiry has passed, and
'ebb tables get TABLE' shows its progress; unless the default is 0, it
asks for confirmation at the terminal, and scripts pass --yes).
--expiry chooses how expired items leave the disk: sweep (deleted within
seconds) or native (the backend's own TTL); without it a new table gets the
backend's default and an existing one keeps its mode. Another mode for an
existing table changes it for the items written from then on.`,
		Example: `  ebb tables create orders --default-ttl 720h
  ebb tables create sessions --default-ttl 24h --expiry native
  ebb tables create orders --default-ttl 2160h   # change an existing table's
  ebb tables create orders --default-ttl 2160h --rewrite --yes   # and the items already put`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			cfg.KeepDefaultTTL = !cmd.Flags().Changed("default-ttl")
			if cfg.Rewrite && cfg.DefaultTTL > 0 {
				// A rewrite to a default deletes the items whose new
				// expiry has passed: of a table that exists, it asks
				// first.
				d := ebbclient.FormatDuration(cfg.DefaultTTL)
				q := fmt.Sprintf("Rewrite the items of shared table %s put without a ttl of their own to default_ttl %s, deleting those whose last write + %s has passed", args[0], d, d)
				exists := func() error { _, err := api.Table(cmd.Context(), args[0]); return err }
				if err := confirmIfExists(cmd, exists, q); err != nil {
					return err
				}
			}
			t, created, err := api.CreateTable(cmd.Context(), args[0], cfg)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), t)
			}
			what := "created"
			if !created {
				what = "exists"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "table %s %s\n", t.Name, what)
			if err == nil && t.Rewrite != nil {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", rewriteLine(t.Rewrite))
			}
			return err
		},
	}
	cmd.Flags().DurationVar(&cfg.DefaultTTL, "default-ttl", 0, "TTL of items put without their own (0: never expire)")
	cmd.Flags().StringVar((*string)(&cfg.Expiry), "expiry", "", "how expired items leave the disk: sweep or native (default: the backend's)")
	cmd.Flags().BoolVar(&cfg.Rewrite, "rewrite", false, "give the items an existing table holds without a TTL of their own the default TTL too, by a background job (it deletes those the default has expired: asks first)")
	out = addOutput(cmd)
	return destructive(cmd)
}

func tablesListCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List shared tables",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			tables, err := api.Tables(cmd.Context())
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), map[string][]ebbclient.Table{"tables": nonNil(tables)})
			}
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "NAME\tDEFAULT_TTL\tCREATED\tEXPIRY")
			for _, t := range tables {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, ebbclient.FormatDuration(t.DefaultTTL), formatTime(t.CreatedAt), t.Expiry)
			}
			return tw.Flush()
		},
	}
	out = addOutput(cmd)
	return cmd
}

func tablesGetCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "get TABLE [KEY...]",
		Short: "Show a shared table, or some of its items",
		Long: `Show a shared table, or with KEY one of its live items: its timestamp,
expiry, version and attributes. A missing or expired item is not found.
With several keys (at most 100) the items are read in one request, and the
keys holding no live item are named on standard error.`,
		Example: `  ebb tables get orders
  ebb tables get orders o-1 --output json
  ebb tables get orders o-1 o-2 o-3`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTableNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if len(args) == 1 {
				t, err := api.Table(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if out.json {
					return printJSON(w, t)
				}
				return printTable(w, t)
			}
			if len(args) > 2 {
				return printBatchGet(cmd, api, args[0], args[1:], out.json)
			}
			it, err := api.TableItem(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(w, it)
			}
			return printTableItem(w, it)
		},
	}
	out = addOutput(cmd)
	return cmd
}

func printTableItem(w io.Writer, it ebbclient.TableItem) error {
	expires := "never"
	if it.ExpiresAt != nil {
		expires = formatTime(*it.ExpiresAt)
	}
	_, err := fmt.Fprintf(w, "key:        %s\ntimestamp:  %s\nexpires:    %s\nversion:    %s\nattributes: %s\n", showBytes([]byte(it.Key), false), formatTime(it.Timestamp), expires, it.Version, it.Attributes)
	return err
}

func tablesPutCmd(c *client) *cobra.Command {
	var timestamp, attributes, attributesFile, ifVersion string
	var ifAbsent bool
	var ttl time.Duration
	var out *output
	cmd := &cobra.Command{
		Use:   "put TABLE KEY [--timestamp T] [--attributes JSON | --attributes-file FILE] [--ttl DURATION] [--if-absent | --if-version V]",
		Short: "Put an item into a shared table",
		Long: `Put an item, replacing any with the same key: a timestamp (default now),
a JSON object of attributes (default {}), and a TTL from now (default the
table's; --ttl 0 never expires). --if-absent writes only when the key
holds no live item; --if-version only when it holds the item of that
version (as "ebb tables get" shows it); otherwise the put fails
(failed_precondition) and writes nothing.`,
		Example: `  ebb tables put orders o-1 --attributes '{"total": 42, "currency": "EUR"}'
  ebb tables put orders o-2 --timestamp 2026-11-22T10:00:00Z --ttl 90s --attributes-file o-2.json`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeTableNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			var item ebbclient.PutTableItem
			var err error
			if item.Timestamp, err = parseTimeFlag("timestamp", timestamp, now); err != nil {
				return err
			}
			if item.Timestamp.IsZero() {
				item.Timestamp = now
			}
			if attributes != "" && attributesFile != "" {
				return errors.New("give --attributes or --attributes-file, not both")
			}
			raw := []byte(attributes)
			if attributesFile != "" {
				if raw, err = readInput(cmd, attributesFile); err != nil {
					return err
				}
			}
			if len(raw) > 0 {
				if !json.Valid(raw) {
					return errors.New("the attributes are not valid JSON; want an object such as {\"total\": 42}")
				}
				item.Attributes = json.RawMessage(raw)
			}
			if cmd.Flags().Changed("ttl") {
				item.TTL = &ttl
			}
			item.IfAbsent, item.IfVersion = ifAbsent, ifVersion
			api, err := c.api()
			if err != nil {
				return err
			}
			it, err := api.PutTableItem(cmd.Context(), args[0], args[1], item)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), it)
			}
			expires := "never expires"
			if it.ExpiresAt != nil {
				expires = "expires " + formatTime(*it.ExpiresAt)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "put %s %s (%s)\n", args[0], showBytes([]byte(it.Key), false), expires)
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&ifAbsent, "if-absent", false, "create only: fail if the key holds a live item")
	f.StringVar(&ifVersion, "if-version", "", "compare and set: fail unless the key holds the item of this version (* for any)")
	f.StringVar(&timestamp, "timestamp", "", "the item's time: RFC 3339, now, or a duration from now such as -1h (default now)")
	f.StringVar(&attributes, "attributes", "", "the item's attributes, a JSON object (default {})")
	f.StringVar(&attributesFile, "attributes-file", "", "read the attributes from a file (- for standard input)")
	f.DurationVar(&ttl, "ttl", 0, "the item's TTL from now; 0 never expires (default: the table's default TTL)")
	out = addOutput(cmd)
	return cmd
}

func tablesDeleteCmd(c *client) *cobra.Command {
	var ifVersion string
	cmd := &cobra.Command{
		Use:   "delete TABLE KEY [--if-version V]",
		Short: "Delete an item from a shared table",
		Long:  `Delete an item; deleting a missing item is no error. With --if-version, delete only the item of that version, else fail (failed_precondition). "ebb tables drop" deletes a whole table.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				// The key forgotten, or the whole table meant: say which
				// command does which.
				return fmt.Errorf("delete needs the item's KEY (ebb tables delete %s KEY); to delete the whole table, run ebb tables drop %s", args[0], args[0])
			}
			return cobra.ExactArgs(2)(cmd, args)
		},
		ValidArgsFunction: completeTableNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			if ifVersion != "" {
				err = api.DeleteTableItemIf(cmd.Context(), args[0], args[1], ifVersion)
			} else {
				err = api.DeleteTableItem(cmd.Context(), args[0], args[1])
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted %s %s\n", args[0], showBytes([]byte(args[1]), false))
			return err
		},
	}
	cmd.Flags().StringVar(&ifVersion, "if-version", "", "delete only the item of this version (* for any live item)")
	return cmd
}

func tablesDropCmd(c *client) *cobra.Command {
	return destructive(&cobra.Command{
		Use:               "drop TABLE",
		Short:             "Delete a shared table and every item in it",
		Long:              `Delete a shared table and every item in it, at once; dropping a missing table is no error. A table created again under the name starts empty. It asks for confirmation at the terminal; scripts pass --yes.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTableNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			if err := confirmDestroy(cmd, fmt.Sprintf("Drop shared table %s and every item in it", args[0])); err != nil {
				return err
			}
			if err := api.DeleteTable(cmd.Context(), args[0]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "table %s dropped\n", args[0])
			return err
		},
	})
}

func tablesItemsCmd(c *client) *cobra.Command {
	var q ebbclient.TableItemsQuery
	var after string
	var all bool
	var out *output
	cmd := &cobra.Command{
		Use:     "items TABLE [--after T] [--limit N] [--page-token P | --all]",
		Aliases: []string{"rows"},
		Short:   "List a shared table's items",
		Long: `List a shared table's live items whose timestamp is strictly after --after
(every item without it), ordered by timestamp, then key. One page of
--limit items is printed, and the token of the next page, if any, on
standard error: pass it back with --page-token and the same --after, or use
--all to read every page.`,
		Example: `  ebb tables items orders --after=-1h
  ebb tables items orders --all --output json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTableNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTimeFlag("after", after, time.Now())
			if err != nil {
				return err
			}
			if !t.IsZero() {
				q.After = &t
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			var page ebbclient.TableItemsPage
			if all {
				if page.Items, err = collectAll(api.TableItems(cmd.Context(), args[0], q)); err != nil {
					return err
				}
			} else if page, err = api.QueryTableItems(cmd.Context(), args[0], q); err != nil {
				return err
			}
			if out.json {
				page.Items = nonNil(page.Items)
				return printJSON(cmd.OutOrStdout(), page)
			}
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "KEY\tTIMESTAMP\tEXPIRES\tATTRIBUTES")
			for _, it := range page.Items {
				expires := "never"
				if it.ExpiresAt != nil {
					expires = formatTime(*it.ExpiresAt)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", showBytes([]byte(it.Key), false), formatTime(it.Timestamp), expires, it.Attributes)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.NextPageToken != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "more items follow: --page-token %s (or --all)\n", page.NextPageToken)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&after, "after", "", "only items whose timestamp is after this time: RFC 3339, now, or a duration from now such as -1h")
	f.IntVar(&q.Limit, "limit", 100, "items per page, 1..10000")
	f.StringVar(&q.PageToken, "page-token", "", "resume after a previous page")
	f.BoolVar(&all, "all", false, "read every page, --limit items at a time")
	out = addOutput(cmd)
	return cmd
}
