package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	ebbclient "github.com/ebb-data/ebb/client"
)

// The partial update and batch read of shared-table items.

func tablesPatchCmd(c *client) *cobra.Command {
	var timestamp, attributes, ifVersion string
	var ttl time.Duration
	var out *output
	cmd := &cobra.Command{
		Use:   "patch TABLE KEY [--attributes JSON] [--timestamp T] [--ttl DURATION] [--if-version V]",
		Short: "Merge a partial update into an item of a shared table",
		Long: `Merge a partial update into an existing item: --attributes is a JSON merge
patch (RFC 7396) of its attributes, where a member set to null removes that
attribute, an object merges into an object, and anything else replaces it;
attributes the patch does not name stay. The item keeps its timestamp and
expiry unless --timestamp or --ttl (from now; 0 never expires) is given.
A missing item is not found: a patch never creates one. --if-version
patches only the item of that version, else fails (failed_precondition).`,
		Example: `  ebb tables patch orders o-1 --attributes '{"status": "shipped", "draft": null}'
  ebb tables patch orders o-1 --ttl 720h --if-version 6761674523102764548`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeTableNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			patch := ebbclient.PatchTableItem{IfVersion: ifVersion}
			if attributes != "" {
				if !json.Valid([]byte(attributes)) {
					return errors.New("the attributes are not valid JSON; want an object such as {\"status\": \"shipped\"}")
				}
				patch.Attributes = json.RawMessage(attributes)
			}
			if timestamp != "" {
				ts, err := parseTimeFlag("timestamp", timestamp, time.Now())
				if err != nil {
					return err
				}
				patch.Timestamp = &ts
			}
			if cmd.Flags().Changed("ttl") {
				patch.TTL = &ttl
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			it, err := api.PatchTableItem(cmd.Context(), args[0], args[1], patch)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), it)
			}
			return printTableItem(cmd.OutOrStdout(), it)
		},
	}
	f := cmd.Flags()
	f.StringVar(&attributes, "attributes", "", "a JSON merge patch of the attributes")
	f.StringVar(&timestamp, "timestamp", "", "a new timestamp: RFC 3339, now, or a duration from now such as -1h")
	f.DurationVar(&ttl, "ttl", 0, "a new TTL from now; 0 never expires (default: keep the expiry)")
	f.StringVar(&ifVersion, "if-version", "", "patch only the item of this version (* for any live item)")
	out = addOutput(cmd)
	return cmd
}

// printBatchGet reads keys of table in one request and prints the items
// found, naming the keys missing on standard error.
func printBatchGet(cmd *cobra.Command, api *ebbclient.Client, table string, keys []string, asJSON bool) error {
	batch, err := api.BatchGetTableItems(cmd.Context(), table, keys)
	if err != nil {
		return err
	}
	if asJSON {
		batch.Items, batch.Missing = nonNil(batch.Items), nonNil(batch.Missing)
		return printJSON(cmd.OutOrStdout(), batch)
	}
	for i, it := range batch.Items {
		if i > 0 {
			fmt.Fprintln(cmd.OutOrStdout())
		}
		if err := printTableItem(cmd.OutOrStdout(), it); err != nil {
			return err
		}
	}
	for _, k := range batch.Missing {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s %s: not found\n", table, showBytes([]byte(k), false))
	}
	return nil
}
