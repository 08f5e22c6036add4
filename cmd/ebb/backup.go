package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ebb-data/ebb"
	ebbclient "github.com/ebb-data/ebb/client"
)

func init() { commands = append(commands, newBackupCmd, newRestoreCmd) }

func newBackupCmd(c *client) *cobra.Command {
	var to string
	var out *output
	cmd := &cobra.Command{
		Use:   "backup --to DIR",
		Short: "Back up a running server's embedded store",
		Long: `Take a consistent checkpoint of a running server's embedded store, without
stopping it, into DIR on the server's file system; DIR must not exist. Every
write acknowledged before the call is in the backup. A relative DIR is
taken from the current directory, which is right when the server runs on
this machine. Restore it with "ebb restore". Needs the admin scope.`,
		Example: `  ebb backup --to /backups/ebb-2026-11-22`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return errors.New("--to DIR is required: a new directory on the server's file system")
			}
			dir, err := filepath.Abs(to)
			if err != nil {
				return err
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			b, err := api.Backup(cmd.Context(), dir)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), b)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "backup of %s in %s: %d bytes, took %s\n", api.Server(), b.Dir, b.Bytes, ebbclient.FormatDuration(b.Took))
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "new directory for the backup, on the server's file system")
	out = addOutput(cmd)
	return cmd
}

func newRestoreCmd(*client) *cobra.Command {
	var from, data string
	var noManifest bool
	cmd := &cobra.Command{
		Use:   "restore --from DIR --data DIR",
		Short: "Verify a backup and restore it into a new data directory (offline)",
		Long: `Verify a backup taken with "ebb backup", copy it into a new data directory,
sync it and check that it opens; then start a server on it with
"ebb serve --data DIR". Before writing anything, every file the backup's
manifest lists must be there, whole and unaltered (the write-ahead log
included), and every block of every sstable must match its checksum; a
damaged backup is refused, naming the file, and nothing is written. The copy
is verified the same way.

No server is needed, and none may use the target: a data directory that
holds anything is refused, since restoring over live data is never what is
meant, and so is one inside the backup (or a backup inside it).`,
		Example: `  ebb restore --from /backups/ebb-2026-11-22 --data /var/lib/ebb-restored`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || data == "" {
				return errors.New("--from DIR (a backup) and --data DIR (a new data directory) are required")
			}
			err := ebb.RestoreWith(cmd.Context(), from, data, ebb.RestoreOptions{NoManifest: noManifest})
			switch {
			case errors.Is(err, ebb.ErrNotEmpty):
				return fmt.Errorf("%w; pass a new or empty --data directory", err)
			case errors.Is(err, ebb.ErrBackupDamaged):
				return fmt.Errorf("%w; restore an older backup, or take a new one from a healthy server", err)
			case errors.Is(err, ebb.ErrBackupNoManifest):
				return fmt.Errorf("%w; pass --no-manifest to restore it with its sstables verified alone", err)
			case err != nil:
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "verified and restored %s into %s; start a server on it with: ebb serve --data %s\n", from, data, data)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the backup's directory")
	f.StringVar(&data, "data", "", "the new data directory to restore into")
	f.BoolVar(&noManifest, "no-manifest", false, "restore a backup without a manifest (taken by an older ebb): its sstables are verified, but a missing or truncated write-ahead log goes unnoticed")
	return cmd
}
