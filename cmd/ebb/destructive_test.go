package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// destructiveCommands are the commands that destroy data beyond one named
// item. A new one must be made with destructive and listed here, and
// TestDestructiveConfirmation (or, for index apply and release-archive,
// whose drops need a clock to pass, TestIndexApplyConfirmsDrops and
// TestReleaseArchiveConfirms; for lists create-feature and tables create,
// destructive only with --rewrite, TestRewriteFlag) must show it keeps
// the rule.
var destructiveCommands = []string{
	"ebb index apply",
	"ebb index delete",
	"ebb index erase",
	"ebb index release-archive",
	"ebb lists create-feature",
	"ebb lists delete-feature",
	"ebb lists rm",
	"ebb tables create",
	"ebb tables drop",
}

// TestDestructiveCommandsAreKnown: exactly the destructive commands are
// marked as such, and each has --yes.
func TestDestructiveCommandsAreKnown(t *testing.T) {
	var got []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Annotations[destructiveAnnotation] != "" {
			got = append(got, c.CommandPath())
			if f := c.Flags().Lookup("yes"); f == nil || f.Value.Type() != "bool" {
				t.Errorf("%s: no --yes flag", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(io.Discard, io.Discard))
	slices.Sort(got)
	if !slices.Equal(got, destructiveCommands) {
		t.Fatalf("destructive commands %q, want %q", got, destructiveCommands)
	}
}

// notAtTerminal makes the confirmations see no terminal, until the test
// ends, whatever the test's own standard input is.
func notAtTerminal(t *testing.T) {
	t.Helper()
	isTerm := inputIsTerminal
	inputIsTerminal = func() bool { return false }
	t.Cleanup(func() { inputIsTerminal = isTerm })
}

// TestDestructiveConfirmation: every destructive command, without a
// terminal and without --yes, refuses saying to pass --yes and destroys
// nothing; at a terminal it asks and goes ahead only on "yes"; with --yes
// it goes ahead at once.
func TestDestructiveConfirmation(t *testing.T) {
	url := fullServer(t, false)
	cases := []struct {
		name   string
		setup  [][]string
		cmd    []string
		asks   string      // part of the question
		exists func() bool // whether the data is still there
	}{{
		name:  "index delete",
		setup: [][]string{{"index", "create", "ev", "--table-bucket", "1h", "--partition-bucket", "1h", "--retention", "1h"}},
		cmd:   []string{"index", "delete", "ev"},
		asks:  "Delete index ev",
		exists: func() bool {
			code, _, _ := cli("--server", url, "index", "show", "ev")
			return code == 0
		},
	}, {
		name: "index erase",
		setup: [][]string{{"index", "create", "er", "--table-bucket", "1h", "--partition-bucket", "1h", "--retention", "1h"},
			{"index", "write", "er", "--index-id", "acct_1", "--event-id", "e1", "--timestamp=-1m"}},
		cmd:  []string{"index", "erase", "er", "--index-id", "acct_1"},
		asks: `Erase every event of index id "acct_1" from index er`,
		exists: func() bool {
			_, out, _ := cli("--server", url, "index", "query", "er", "--index-id", "acct_1")
			return strings.Contains(out, "e1")
		},
	}, {
		name:  "tables drop",
		setup: [][]string{{"tables", "create", "orders"}, {"tables", "put", "orders", "o-1", "--attributes", `{"a":1}`}},
		cmd:   []string{"tables", "drop", "orders"},
		asks:  "Drop shared table orders",
		exists: func() bool {
			code, _, _ := cli("--server", url, "tables", "get", "orders", "o-1")
			return code == 0
		},
	}, {
		name:  "lists delete-feature",
		setup: [][]string{{"lists", "create-feature", "user", "seen", "_", "--ttl", "720h"}, {"lists", "add", "user", "seen", "_", "u-1", "s-1"}},
		cmd:   []string{"lists", "delete-feature", "user", "seen", "_"},
		asks:  "Delete list feature",
		exists: func() bool {
			code, _, _ := cli("--server", url, "lists", "show-feature", "user", "seen", "_")
			return code == 0
		},
	}, {
		name: "lists delete-feature --all-versions",
		setup: [][]string{
			{"lists", "create-feature", "user", "every", "_", "--ttl", "720h"}, {"lists", "add", "user", "every", "_", "u-1", "s-1"},
			{"lists", "create-feature", "user", "every", "v2", "--ttl", "720h"},
		},
		cmd:  []string{"lists", "delete-feature", "user", "every", "--all-versions"},
		asks: `Delete list feature "user" "every" with its 2 version(s) "_", "v2"`,
		exists: func() bool {
			code, _, _ := cli("--server", url, "lists", "show-feature", "user", "every", "v2")
			return code == 0
		},
	}, {
		name:  "lists rm --all",
		setup: [][]string{{"lists", "create-feature", "user", "kept", "_", "--ttl", "720h"}, {"lists", "add", "user", "kept", "_", "u-1", "s-1"}},
		cmd:   []string{"lists", "rm", "user", "kept", "_", "u-1", "--all"},
		asks:  "Remove the whole list u-1",
		exists: func() bool {
			_, out, _ := cli("--server", url, "lists", "get", "user", "kept", "_", "u-1")
			return strings.Contains(out, "s-1")
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, args := range c.setup {
				ok(t, url, args...)
			}
			if !c.exists() {
				t.Fatal("setup: the data is not there")
			}
			notAtTerminal(t)
			fails(t, url, "needs confirmation, and standard input is not a terminal: pass --yes to confirm", c.cmd...)
			if !c.exists() {
				t.Fatal("refused without a terminal, yet the data is gone")
			}
			atTerminal(t, "no\n")
			code, _, errOut := cli(append([]string{"--server", url}, c.cmd...)...)
			if code != 1 || !strings.Contains(errOut, c.asks) || !strings.Contains(errOut, "not confirmed; nothing was changed") {
				t.Fatalf("answered no at a terminal: exit %d, %q", code, errOut)
			}
			if !c.exists() {
				t.Fatal("not confirmed, yet the data is gone")
			}
			atTerminal(t, "yes\n")
			ok(t, url, c.cmd...)
			if c.exists() {
				t.Fatal("confirmed at a terminal, yet the data is there")
			}
			// Again, from scratch, with --yes and no terminal.
			for _, args := range c.setup {
				ok(t, url, args...)
			}
			notAtTerminal(t)
			ok(t, url, append(c.cmd, "--yes")...)
			if c.exists() {
				t.Fatal("--yes, yet the data is there")
			}
		})
	}
	// Removing items by value destroys no more than the value named: it
	// needs no confirmation.
	ok(t, url, "lists", "create-feature", "user", "kept", "_", "--ttl", "720h")
	ok(t, url, "lists", "add", "user", "kept", "_", "u-2", "s-1", "s-2")
	ok(t, url, "lists", "rm", "user", "kept", "_", "u-2", "--value", "s-1")
}
