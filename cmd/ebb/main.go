// Package main builds the ebb command, server and command-line client in
// one: `ebb serve` runs the HTTP API on a backend; the other commands talk
// to a running server.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commandFunc builds one top-level command (or command group). Command
// groups that talk to a server take the shared client, which the root
// command's --server and --token flags fill in before any command runs.
type commandFunc func(c *client) *cobra.Command

// commands are ebb's top-level commands. A command group in its own file
// adds its constructor here with one line (newIndexCmd for
// cmd/ebb/index.go), or, to leave this file alone, from its own file with
// func init() { commands = append(commands, newIndexCmd) }. Cobra sorts the
// help listing, so the order does not matter.
var commands = []commandFunc{
	newServeCmd,
	newVersionCmd,
}

// run executes the command line and returns the process exit code. The
// first SIGINT or SIGTERM cancels the context every command runs with,
// which is how `ebb serve` shuts down gracefully.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal the default action is restored, so a second
	// one stops a shutdown that takes too long.
	context.AfterFunc(ctx, stop)
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			return int(code)
		}
		// Errors of the root package carry its prefix, "ebb: ", which the
		// command's own would double.
		fmt.Fprintf(stderr, "ebb: %s\n", strings.TrimPrefix(explain(err).Error(), "ebb: "))
		return 1
	}
	return 0
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "ebb",
		Short: "ebb stores data that must expire: cheaply, exactly and promptly",
		Long: `ebb is a data layer for data that must expire: time-sharded indexes,
feature-store lists and shared tables, on an embedded Pebble store, DynamoDB
or CQL. Run "ebb serve" to start the HTTP API; the other commands talk to a
running server (--server, $EBB_SERVER; --token, $EBB_TOKEN). Shell
completion: "ebb completion bash|zsh|fish|powershell --help".`,
		// Errors are printed once, by run, without the usage text that
		// would bury them.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	c := &client{}
	c.addFlags(root)
	for _, newCmd := range commands {
		root.AddCommand(newCmd(c))
	}
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command group fail on a word that
// is none of its subcommands (`ebb index lst`), suggesting the nearest,
// where cobra would print the group's help and exit 0. A group given no
// word still prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !cmd.HasSubCommands() || cmd.Run != nil || cmd.RunE != nil || !cmd.HasParent() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", s[0])
		}
		return errors.New(msg + " (see " + cmd.CommandPath() + " --help)")
	}
}
