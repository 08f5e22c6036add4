package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	ebbclient "github.com/ebb-data/ebb/client"
)

func init() { commands = append(commands, newWatchCmd) }

func newWatchCmd(c *client) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Follow what a running server does",
	}
	cmd.AddCommand(watchExpirationsCmd(c))
	return cmd
}

func watchExpirationsCmd(c *client) *cobra.Command {
	var (
		out    *output
		after  string
		follow bool
		limit  int
		wait   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "expirations",
		Short: "Print the log of expirations: removed rows and dropped shards",
		Long: `Print the server's log of expirations (GET /v1/expirations): every row its
sweeper physically removed and every shard its shard manager dropped, in
removal order, those the token may read. Without --after it starts at the
oldest entry the server retains. Without --follow it prints one page and,
on standard error, the cursor to pass as --after next time; with --follow it
waits for new expirations and prints each as it comes until interrupted.
With -o json, one JSON object per line (with --follow) or the API's page.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if !follow {
				p, err := api.Expirations(cmd.Context(), ebbclient.ExpirationsQuery{After: after, Limit: limit})
				if err != nil {
					return err
				}
				if out.json {
					return printJSON(w, p)
				}
				printExpirationHeader(w)
				for _, e := range p.Expirations {
					printExpiration(w, e)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "next: %s\n", p.Next)
				return nil
			}
			if !out.json {
				printExpirationHeader(w)
			}
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			next, err := api.WatchExpirations(cmd.Context(), after, wait, func(e ebbclient.Expiration) error {
				if out.json {
					return enc.Encode(e)
				}
				printExpiration(w, e)
				return nil
			})
			if errors.Is(err, context.Canceled) {
				// Interrupted: say where to go on from.
				fmt.Fprintf(cmd.ErrOrStderr(), "next: %s\n", next)
				return nil
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&after, "after", "", "the cursor to start after (an entry's or a page's next); empty: the oldest retained")
	f.BoolVarP(&follow, "follow", "f", false, "wait for new expirations and print them as they come")
	f.IntVar(&limit, "limit", 0, "without --follow, the most entries printed (1..10000; default 100)")
	f.DurationVar(&wait, "poll", 30*time.Second, "with --follow, how long each long poll waits (at most 5m)")
	out = addOutput(cmd)
	return cmd
}

func printExpirationHeader(w io.Writer) {
	fmt.Fprintln(w, "CURSOR  TYPE  KIND/NAME  WHAT  EXPIRED  REMOVED")
}

// printExpiration prints one entry on one line, so that a follower can
// pipe the output through grep.
func printExpiration(w io.Writer, e ebbclient.Expiration) {
	what := strings.Join(e.Key, " ")
	if e.Feature != "" {
		feature := e.Feature
		if e.Version != "" {
			feature += "/" + e.Version
		}
		what = feature + " " + what
	}
	expired := formatTime(e.ExpiresAt)
	if e.Type == "shard" {
		what = fmt.Sprintf("%s [%s, %s)", e.Shard, formatTime(e.From), formatTime(e.To))
		if e.Rows != nil {
			what += fmt.Sprintf(" %d rows", *e.Rows)
		}
		if e.Archive != "" {
			what += " archived to " + e.Archive
		}
		expired = "-"
	}
	fmt.Fprintf(w, "%s  %s  %s/%s  %s  %s  %s\n", e.Cursor, e.Type, e.Kind, e.Name, what, expired, formatTime(e.RemovedAt))
}
