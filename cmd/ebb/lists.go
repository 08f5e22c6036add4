package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newListsCmd) }

// listItemJSON is a list item on the wire (API.md "Lists"): the value in
// standard base64, the timestamp in RFC 3339.
type listItemJSON struct {
	Value     string `json:"value"`
	Timestamp string `json:"timestamp"`
}

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
	cmd.AddCommand(listsGetCmd(c), listsAddCmd(c), listsRmCmd(c), listsCreateFeatureCmd(c), listsDeleteFeatureCmd(c))
	return cmd
}

// listSegment escapes a name for one path segment. Dot segments are escaped
// too: a literal "." or ".." would be resolved away by path cleaning.
func listSegment(s string) string {
	if s == "." || s == ".." {
		return strings.ReplaceAll(s, ".", "%2E")
	}
	return url.PathEscape(s)
}

func listVersion(v string) string {
	if v == "" {
		return "_"
	}
	return v
}

func listFeaturePath(entityType, feature, version string) string {
	return "/v1/list-features/" + listSegment(entityType) + "/" + listSegment(feature) + "/" + listSegment(listVersion(version))
}

func listItemsPath(args []string) string {
	return "/v1/lists/" + listSegment(args[0]) + "/" + listSegment(args[1]) + "/" +
		listSegment(listVersion(args[2])) + "/" + listSegment(args[3]) + "/items"
}

// listValue turns a command-line value into bytes: as is, or decoded when
// --base64 says the values are base64.
func listValue(s string, isBase64 bool) ([]byte, error) {
	if !isBase64 {
		return []byte(s), nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("value %q is not standard base64: %w", s, err)
	}
	return b, nil
}

// showListValue prints a value as text when it is printable UTF-8, and
// quoted Go-style otherwise, so one value is always one line.
func showListValue(b []byte) string {
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return !unicode.IsPrint(r) }) {
		return string(b)
	}
	return strconv.Quote(string(b))
}

func listsGetCmd(c *client) *cobra.Command {
	var minTimestamp string
	var limit int
	var asJSON, asBase64 bool
	cmd := &cobra.Command{
		Use:   "get ENTITY_TYPE FEATURE VERSION ENTITY_ID",
		Short: "Print a list's items, newest first",
		Long: `Print a list's live items, newest first, one per line: the timestamp, a tab,
and the value (as text when printable, quoted otherwise; --base64 prints
standard base64).`,
		Example: `  ebb lists get user stories_presented _ user-42 --limit 10`,
		Args:    cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if minTimestamp != "" {
				q.Set("min_timestamp", minTimestamp)
			}
			if cmd.Flags().Changed("limit") {
				q.Set("limit", strconv.Itoa(limit))
			}
			path := listItemsPath(args)
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var raw json.RawMessage
			if err := c.do("GET", path, nil, &raw); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				_, err := fmt.Fprintf(out, "%s\n", raw)
				return err
			}
			var body struct {
				Items []listItemJSON `json:"items"`
			}
			if err := json.Unmarshal(raw, &body); err != nil {
				return fmt.Errorf("decode items: %w", err)
			}
			return printListItems(out, body.Items, asBase64)
		},
	}
	f := cmd.Flags()
	f.StringVar(&minTimestamp, "min-timestamp", "", "only items at or after this RFC 3339 time")
	f.IntVar(&limit, "limit", 100, "most items to print, 1..10000")
	f.BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	f.BoolVar(&asBase64, "base64", false, "print values in standard base64")
	return cmd
}

func printListItems(w io.Writer, items []listItemJSON, asBase64 bool) error {
	for _, it := range items {
		v := it.Value
		if !asBase64 {
			b, err := base64.StdEncoding.DecodeString(it.Value)
			if err != nil {
				return fmt.Errorf("server sent a value that is not base64: %q", it.Value)
			}
			v = showListValue(b)
		}
		if _, err := fmt.Fprintf(w, "%s\t%s\n", it.Timestamp, v); err != nil {
			return err
		}
	}
	return nil
}

func listsAddCmd(c *client) *cobra.Command {
	var timestamp string
	var asBase64 bool
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
			ts := time.Now().UTC().Format(time.RFC3339Nano)
			if timestamp != "" {
				t, err := time.Parse(time.RFC3339, timestamp)
				if err != nil {
					return fmt.Errorf("--timestamp %q: want RFC 3339, e.g. 2026-11-22T10:00:00.123Z", timestamp)
				}
				ts = t.UTC().Format(time.RFC3339Nano)
			}
			var req struct {
				Items []listItemJSON `json:"items"`
			}
			for _, a := range args[4:] {
				v, err := listValue(a, asBase64)
				if err != nil {
					return err
				}
				req.Items = append(req.Items, listItemJSON{Value: base64.StdEncoding.EncodeToString(v), Timestamp: ts})
			}
			var res struct {
				Written        int `json:"written"`
				SkippedExpired int `json:"skipped_expired"`
			}
			if err := c.do("POST", listItemsPath(args), req, &res); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "written %d, skipped (expired) %d\n", res.Written, res.SkippedExpired)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&timestamp, "timestamp", "", "the items' time, RFC 3339 (default now)")
	f.BoolVar(&asBase64, "base64", false, "the values are standard base64")
	return cmd
}

func listsRmCmd(c *client) *cobra.Command {
	var value string
	var all, asBase64 bool
	cmd := &cobra.Command{
		Use:   "rm ENTITY_TYPE FEATURE VERSION ENTITY_ID (--value VALUE | --all)",
		Short: "Remove the items with a value, or a whole list",
		Example: `  ebb lists rm user stories_presented _ user-42 --value story-1
  ebb lists rm user stories_presented _ user-42 --all`,
		Args: cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			hasValue := cmd.Flags().Changed("value")
			if hasValue == all {
				return errors.New("say what to remove: --value VALUE (every item with that value) or --all (the whole list)")
			}
			path := listItemsPath(args)
			if hasValue {
				v, err := listValue(value, asBase64)
				if err != nil {
					return err
				}
				path += "?value=" + url.QueryEscape(base64.StdEncoding.EncodeToString(v))
			}
			if err := c.do("DELETE", path, nil, nil); err != nil {
				return err
			}
			what := "list"
			if hasValue {
				what = "items with value " + showListValue([]byte(value))
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", what)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&value, "value", "", "remove every item with this value")
	f.BoolVar(&all, "all", false, "remove the whole list")
	f.BoolVar(&asBase64, "base64", false, "the value is standard base64")
	return cmd
}

func listsCreateFeatureCmd(c *client) *cobra.Command {
	var ttl string
	cmd := &cobra.Command{
		Use:   "create-feature ENTITY_TYPE FEATURE VERSION --ttl DURATION",
		Short: "Create a list feature version",
		Long: `Create a list feature version whose items expire --ttl after their own
timestamp. An identical version is left as it is; one with another TTL is a
conflict.`,
		Example: `  ebb lists create-feature user stories_presented _ --ttl 720h`,
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl == "" {
				return errors.New("--ttl is required (a Go duration such as 720h)")
			}
			var f struct {
				TTL     string `json:"ttl"`
				Created string `json:"created"`
			}
			if err := c.do("PUT", listFeaturePath(args[0], args[1], args[2]), map[string]string{"ttl": ttl}, &f); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "list feature %s %s %s: ttl %s, created %s\n",
				strconv.Quote(args[0]), strconv.Quote(args[1]), strconv.Quote(listVersion(args[2])), f.TTL, f.Created)
			return err
		},
	}
	cmd.Flags().StringVar(&ttl, "ttl", "", "how long an item lives after its timestamp (e.g. 720h)")
	return cmd
}

func listsDeleteFeatureCmd(c *client) *cobra.Command {
	return &cobra.Command{
		Use:   "delete-feature ENTITY_TYPE FEATURE VERSION",
		Short: "Delete a list feature version and every list of it",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.do("DELETE", listFeaturePath(args[0], args[1], args[2]), nil, nil); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "deleted list feature %s %s %s\n",
				strconv.Quote(args[0]), strconv.Quote(args[1]), strconv.Quote(listVersion(args[2])))
			return err
		},
	}
}
