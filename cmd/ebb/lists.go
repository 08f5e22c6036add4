package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	ebbclient "github.com/ebb-data/ebb/client"
)

func init() { commands = append(commands, newListsCmd) }

// maxListItems is the most items one add carries.
const maxListItems = 1000

func newListsCmd(c *client) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lists",
		Short: "Read and write feature-store lists on a running server",
		Long: `Read and write feature-store lists: per-entity lists of values, newest
first, each item expiring its feature's TTL after its own timestamp. A list
is named by ENTITY_TYPE FEATURE VERSION ENTITY_ID; VERSION "_" (or "") is the
feature's default version. Names may hold any character. The commands talk
to a running "ebb serve" (--server, default http://127.0.0.1:7070).`,
	}
	cmd.AddCommand(listsGetCmd(c), listsAddCmd(c), listsRmCmd(c), listsFeaturesCmd(c), listsCreateFeatureCmd(c), listsShowFeatureCmd(c), listsDeleteFeatureCmd(c), listsCountCmd(c))
	return cmd
}

// listFeatureID names the feature of args[0:3].
func listFeatureID(args []string) ebbclient.ListFeatureID {
	return ebbclient.ListFeatureID{EntityType: args[0], Feature: args[1], Version: args[2]}
}

// describeFeature quotes a feature's names for a message.
func describeFeature(id ebbclient.ListFeatureID) string {
	return strconv.Quote(id.EntityType) + " " + strconv.Quote(id.Feature) + " " + describeVersion(id.Version)
}

func listsGetCmd(c *client) *cobra.Command {
	var minTimestamp, pageToken string
	var limit int
	var asBase64, all bool
	var out *output
	cmd := &cobra.Command{
		Use:   "get ENTITY_TYPE FEATURE VERSION ENTITY_ID",
		Short: "Print a list's items, newest first",
		Long: `Print a list's live items, newest first, one per line: the timestamp, a tab,
and the value (as text when printable, quoted otherwise; --base64 prints
standard base64). --output json prints the API's answer.`,
		Example: `  ebb lists get user stories_presented _ user-42 --limit 10`,
		Args:    cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := ebbclient.ListQuery{Limit: limit, PageToken: pageToken}
			var err error
			if q.MinTimestamp, err = parseTimeFlag("min-timestamp", minTimestamp, time.Now()); err != nil {
				return err
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			var page ebbclient.ListItemPage
			if all {
				if page.Items, err = collectAll(api.AllListItems(cmd.Context(), listFeatureID(args), args[3], q)); err != nil {
					return err
				}
			} else if page, err = api.ListItemsPage(cmd.Context(), listFeatureID(args), args[3], q); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.json {
				page.Items = nonNil(page.Items)
				return printJSON(w, page)
			}
			if len(page.Items) > 0 {
				// List items keep nanoseconds: the column shows them when
				// any item has them.
				precise := false
				for _, it := range page.Items {
					precise = precise || it.Timestamp.Nanosecond()%int(time.Millisecond) != 0
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "TIMESTAMP\tVALUE")
				for _, it := range page.Items {
					fmt.Fprintf(tw, "%s\t%s\n", columnTime(it.Timestamp, precise), showBytes(it.Value, asBase64))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if page.NextPageToken != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "more items may follow: --page-token %s (or --all)\n", page.NextPageToken)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&minTimestamp, "min-timestamp", "", "only items at or after this time: RFC 3339, now, or a duration from now such as -1h")
	f.IntVar(&limit, "limit", 100, "items per page, 1..10000")
	f.StringVar(&pageToken, "page-token", "", "resume after a previous page")
	f.BoolVar(&all, "all", false, "read every page, --limit items at a time")
	f.BoolVar(&asBase64, "base64", false, "print values in standard base64")
	out = addOutput(cmd)
	return cmd
}

func listsAddCmd(c *client) *cobra.Command {
	var timestamp string
	var asBase64 bool
	var out *output
	cmd := &cobra.Command{
		Use:   "add ENTITY_TYPE FEATURE VERSION ENTITY_ID VALUE...",
		Short: "Add items to a list",
		Long: `Add one item per VALUE to a list, all with the same timestamp (--timestamp,
default now). An item whose timestamp plus the feature's TTL has passed is
skipped and counted. At most 1000 values per call.`,
		Example: `  ebb lists add user stories_presented _ user-42 story-1 story-2
  ebb lists add user stories_presented v2 user-42 --timestamp 2026-11-22T10:00:00Z story-3`,
		Args: cobra.MinimumNArgs(5),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args)-4 > maxListItems {
				return fmt.Errorf("%d values: at most %d per call", len(args)-4, maxListItems)
			}
			now := time.Now()
			ts, err := parseTimeFlag("timestamp", timestamp, now)
			if err != nil {
				return err
			}
			if ts.IsZero() {
				ts = now
			}
			items := make([]ebbclient.ListItem, 0, len(args)-4)
			for _, a := range args[4:] {
				v, err := parseValue(a, asBase64)
				if err != nil {
					return err
				}
				items = append(items, ebbclient.ListItem{Value: v, Timestamp: ts})
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			res, err := api.AddListItems(cmd.Context(), listFeatureID(args), args[3], items)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), res)
			}
			line := fmt.Sprintf("written %d, skipped (expired) %d", res.Written, res.SkippedExpired)
			if res.Trimmed > 0 {
				line += fmt.Sprintf(", trimmed (max items) %d", res.Trimmed)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), line)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&timestamp, "timestamp", "", "the items' time: RFC 3339, now, or a duration from now such as -1h (default now)")
	f.BoolVar(&asBase64, "base64", false, "the values are standard base64")
	out = addOutput(cmd)
	return cmd
}

func listsRmCmd(c *client) *cobra.Command {
	var value string
	var all, asBase64 bool
	cmd := &cobra.Command{
		Use:   "rm ENTITY_TYPE FEATURE VERSION ENTITY_ID (--value VALUE | --all)",
		Short: "Remove the items with a value, or a whole list",
		Long: `Remove every item with a value (--value), or a whole list (--all). Removing
a whole list asks for confirmation at the terminal; scripts pass --yes.`,
		Example: `  ebb lists rm user stories_presented _ user-42 --value story-1
  ebb lists rm user stories_presented _ user-42 --all`,
		Args: cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			hasValue := cmd.Flags().Changed("value")
			if hasValue == all {
				return errors.New("say what to remove: --value VALUE (every item with that value) or --all (the whole list)")
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			id := listFeatureID(args)
			what := "list"
			if hasValue {
				v, err := parseValue(value, asBase64)
				if err != nil {
					return err
				}
				if err := api.RemoveListItems(cmd.Context(), id, args[3], v); err != nil {
					return err
				}
				what = "items with value " + showBytes(v, false)
			} else {
				if err := confirmDestroy(cmd, fmt.Sprintf("Remove the whole list %s of %s", args[3], describeFeature(id))); err != nil {
					return err
				}
				if err := api.ClearList(cmd.Context(), id, args[3]); err != nil {
					return err
				}
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", what)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&value, "value", "", "remove every item with this value")
	f.BoolVar(&all, "all", false, "remove the whole list")
	f.BoolVar(&asBase64, "base64", false, "the value is standard base64")
	return destructive(cmd)
}

// featureLine describes a feature version in one line.
func featureLine(id ebbclient.ListFeatureID, f ebbclient.ListFeature) string {
	line := fmt.Sprintf("list feature %s: ttl %s, expiry %s", describeFeature(id), ebbclient.FormatDuration(f.TTL), f.Expiry)
	if f.MaxItems > 0 {
		line += fmt.Sprintf(", max items %d", f.MaxItems)
	}
	line += ", created " + formatTime(f.CreatedAt)
	if f.Rewrite != nil {
		line += "\n" + rewriteLine(f.Rewrite)
	}
	return line
}

func listsCreateFeatureCmd(c *client) *cobra.Command {
	var ttl time.Duration
	var expiry string
	var maxItems int
	var rewrite bool
	var out *output
	cmd := &cobra.Command{
		Use:   "create-feature ENTITY_TYPE FEATURE VERSION --ttl DURATION [--expiry sweep|native|drop] [--max-items N] [--rewrite]",
		Short: "Create a list feature version",
		Long: `Create a list feature version whose items expire --ttl after their own
timestamp, or change one. An identical version is left as it is; another
--ttl changes an existing version's TTL for the items added from then on
(items already added keep their expiry; with --rewrite a background job
gives them the new TTL too, each its timestamp + TTL, deleting those
whose new expiry has passed, and show-feature shows its progress; it asks
for confirmation at the terminal, and scripts pass --yes). --expiry chooses how expired items leave the disk: sweep (deleted
within seconds), native (the backend's own TTL), drop (only with the
version); without it a new version gets the backend's default and an
existing one keeps its mode. Another mode for an existing version changes
it for the items written from then on. --max-items caps each list: an add
that makes a list longer deletes its oldest items beyond the cap (0: no
cap); without it a new version has none and an existing one keeps its
own, and another cap for an existing version applies from each list's
next add.`,
		Example: `  ebb lists create-feature user stories_presented _ --ttl 720h
  ebb lists create-feature user stories_presented v2 --ttl 720h --expiry drop
  ebb lists create-feature user stories_presented _ --ttl 720h --max-items 500
  ebb lists create-feature user stories_presented _ --ttl 168h   # change an existing version's TTL
  ebb lists create-feature user stories_presented _ --ttl 168h --rewrite --yes   # and the items already added`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl <= 0 {
				return errors.New("--ttl is required: a positive Go duration such as 720h")
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			id := listFeatureID(args)
			if rewrite {
				// A rewrite deletes the items whose new expiry has
				// passed: of a version that exists, it asks first.
				q := fmt.Sprintf("Rewrite the items of list feature %s to ttl %s, deleting those whose timestamp + %s has passed", describeFeature(id), ebbclient.FormatDuration(ttl), ebbclient.FormatDuration(ttl))
				exists := func() error { _, err := api.ListFeature(cmd.Context(), id); return err }
				if err := confirmIfExists(cmd, exists, q); err != nil {
					return err
				}
			}
			cfg := ebbclient.ListFeatureConfig{TTL: ttl, Expiry: ebbclient.ExpiryMode(expiry), Rewrite: rewrite}
			if cmd.Flags().Changed("max-items") {
				cfg.MaxItems = &maxItems
			}
			f, _, err := api.CreateListFeatureWith(cmd.Context(), id, cfg)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), f)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), featureLine(id, f))
			return err
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "how long an item lives after its timestamp (e.g. 720h)")
	cmd.Flags().StringVar(&expiry, "expiry", "", "how expired items leave the disk: sweep, native or drop (default: the backend's)")
	cmd.Flags().IntVar(&maxItems, "max-items", 0, "the most items a list keeps, 0..10000 (0: no cap; default: none for a new version, unchanged for an existing one)")
	cmd.Flags().BoolVar(&rewrite, "rewrite", false, "give the items an existing version already holds the TTL too, by a background job (it deletes those the TTL has expired: asks first)")
	out = addOutput(cmd)
	return destructive(cmd)
}

func listsFeaturesCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:     "features [ENTITY_TYPE]",
		Short:   "List the list feature versions, of one entity type or of all",
		Example: `  ebb lists features user`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			entityType := ""
			if len(args) == 1 {
				entityType = args[0]
			}
			fs, err := api.ListFeatures(cmd.Context(), entityType)
			if err != nil {
				return err
			}
			if out.json {
				if fs == nil {
					fs = []ebbclient.ListFeature{}
				}
				return printJSON(cmd.OutOrStdout(), fs)
			}
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "ENTITY_TYPE\tFEATURE\tVERSION\tTTL\tCREATED_AT\tEXPIRY\tMAX_ITEMS")
			for _, f := range fs {
				v := f.Version
				if v == "" {
					v = ebbclient.DefaultListVersion
				}
				maxItems := "-"
				if f.MaxItems > 0 {
					maxItems = strconv.Itoa(f.MaxItems)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.EntityType, f.Feature, v, ebbclient.FormatDuration(f.TTL), formatTime(f.CreatedAt), f.Expiry, maxItems)
			}
			return tw.Flush()
		},
	}
	out = addOutput(cmd)
	return cmd
}

func listsShowFeatureCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:     "show-feature ENTITY_TYPE FEATURE VERSION",
		Short:   "Show a list feature version",
		Example: `  ebb lists show-feature user stories_presented _`,
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			id := listFeatureID(args)
			f, err := api.ListFeature(cmd.Context(), id)
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), f)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), featureLine(id, f))
			return err
		},
	}
	out = addOutput(cmd)
	return cmd
}

func listsDeleteFeatureCmd(c *client) *cobra.Command {
	var allVersions bool
	cmd := &cobra.Command{
		Use:   "delete-feature ENTITY_TYPE FEATURE (VERSION | --all-versions)",
		Short: "Delete a list feature version, or every version, and every list of it",
		Long: `Delete a list feature version and every list of it, or with --all-versions
(and no VERSION) every version of the feature. It asks for confirmation at
the terminal; scripts pass --yes. A version or feature already gone is
not an error.`,
		Example: `  ebb lists delete-feature user stories_presented v2
  ebb lists delete-feature user stories_presented --all-versions --yes`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if allVersions == (len(args) == 3) {
				return errors.New("say what to delete: a VERSION (\"_\" for the default one) or --all-versions")
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			if allVersions {
				return deleteWholeFeature(cmd, api, args[0], args[1])
			}
			id := listFeatureID(args)
			if err := confirmDestroy(cmd, fmt.Sprintf("Delete list feature %s and every list of it", describeFeature(id))); err != nil {
				return err
			}
			if err := api.DeleteListFeature(cmd.Context(), id); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted list feature %s\n", describeFeature(id))
			return err
		},
	}
	cmd.Flags().BoolVar(&allVersions, "all-versions", false, "delete every version of the feature")
	return destructive(cmd)
}

// deleteWholeFeature deletes every version of a feature, naming the
// versions it will delete when it asks.
func deleteWholeFeature(cmd *cobra.Command, api *ebbclient.Client, entityType, feature string) error {
	what := strconv.Quote(entityType) + " " + strconv.Quote(feature)
	if !confirmed(cmd) {
		fs, err := api.ListFeatures(cmd.Context(), entityType)
		if err != nil {
			return err
		}
		var versions []string
		for _, f := range fs {
			if f.Feature == feature {
				versions = append(versions, describeVersion(f.Version))
			}
		}
		if len(versions) == 0 {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "list feature %s has no version; nothing to delete\n", what)
			return err
		}
		q := fmt.Sprintf("Delete list feature %s with its %d version(s) %s and every list of them", what, len(versions), strings.Join(versions, ", "))
		if err := confirmDestroy(cmd, q); err != nil {
			return err
		}
	}
	if err := api.DeleteAllListFeatureVersions(cmd.Context(), entityType, feature); err != nil {
		return err
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "deleted every version of list feature %s\n", what)
	return err
}

// describeVersion names a version as the commands take it.
func describeVersion(v string) string {
	if v == "" {
		v = ebbclient.DefaultListVersion
	}
	return strconv.Quote(v)
}

func listsCountCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "count ENTITY_TYPE FEATURE VERSION ENTITY_ID",
		Short: "Print the number of live items in a list",
		Long: `Print the number of live items in a list. The server reads the whole list
to count it, so a count costs what reading the list costs.`,
		Example: `  ebb lists count user stories_presented _ user-42`,
		Args:    cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			n, err := api.CountListItems(cmd.Context(), listFeatureID(args), args[3])
			if err != nil {
				return err
			}
			if out.json {
				return printJSON(cmd.OutOrStdout(), map[string]int{"count": n})
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), n)
			return err
		},
	}
	out = addOutput(cmd)
	return cmd
}
