package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	ebbclient "github.com/ebb-data/ebb/client"
)

func indexArchivesCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "archives NAME",
		Short: "List an index's archived shards, from their manifests",
		Long: `List the shards of an index archived before their drop (its archive.to), from
the manifests beside the Parquet objects: rows, size, time range, and
whether the shard is restored now.`,
		Example:           `  ebb index archives events`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			as, err := api.Archives(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.json {
				return printJSON(w, as)
			}
			tw := newTable(w)
			fmt.Fprintln(tw, "SHARD\tSTART\tEND\tROWS\tBYTES\tVERIFIED\tRESTORED\tOBJECT")
			for _, a := range as.Archives {
				verified := "-"
				if !a.VerifiedAt.IsZero() {
					verified = formatTime(a.VerifiedAt)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%t\t%s\n", a.Table, formatTime(a.Start), formatTime(a.End), a.Rows, formatBytes(a.Bytes), verified, a.Restored, a.Location+"/"+a.Object)
			}
			return tw.Flush()
		},
	}
	out = addOutput(cmd)
	return cmd
}

func indexRestoreArchiveCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "restore-archive NAME SHARD",
		Short: "Bring an archived shard back as a read-only shard",
		Long: `Bring a dropped shard back from its archive: a table of the shard's name
with the archived rows, checked against the manifest. Queries of the index
read it whatever its age, writes into it are refused (its time is past
retention), and the shard manager keeps it until "ebb index
release-archive" drops it again.`,
		Example:           `  ebb index restore-archive events events_1719446400`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			r, err := api.RestoreArchive(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), r)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "shard %s restored from %s: %d rows, %s to %s; release it with \"ebb index release-archive %s %s\"\n",
				r.Table, r.Location, r.Rows, formatTime(r.Start), formatTime(r.End), args[0], r.Table)
			return err
		},
	}
	out = addOutput(cmd)
	return cmd
}

// indexReleaseArchiveCmd is destructive by the rule of destructive.go:
// it drops a table that queries read, as an apply's drops do, even though
// the archive keeps its rows for another restore-archive.
func indexReleaseArchiveCmd(c *client) *cobra.Command {
	return destructive(&cobra.Command{
		Use:   "release-archive NAME SHARD",
		Short: "Drop a shard restored from its archive; the archive stays",
		Long: `Drop a shard restored with "ebb index restore-archive": queries no longer
read it. Its archive stays where it is, to be restored again. It asks for
confirmation at the terminal; scripts pass --yes.`,
		Example:           `  ebb index release-archive events events_1719446400 --yes`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeIndexNames(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			if !confirmed(cmd) {
				as, err := api.Archives(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				i := slices.IndexFunc(as.Restored, func(r ebbclient.RestoredShard) bool { return r.Table == args[1] })
				if i < 0 {
					return fmt.Errorf("index %s: shard %s is not restored from its archive: nothing to release", args[0], args[1])
				}
				if err := confirmDestroy(cmd, fmt.Sprintf("Release restored shard %s of index %s, dropping its %d row(s) (its archive stays, to be restored again)", args[1], args[0], as.Restored[i].Rows)); err != nil {
					return err
				}
			}
			if err := api.ReleaseArchive(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "restored shard %s released\n", args[1])
			return err
		},
	})
}
