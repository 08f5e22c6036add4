package main

import (
	"errors"

	"github.com/spf13/cobra"

	ebbclient "github.com/ebb-data/ebb/client"
)

// Every command that destroys data beyond one named item (an index, a
// shared table, a list feature, a whole list, shards an apply drops, a
// shard restored from its archive) follows one rule: at a terminal it
// asks, and only "yes" goes ahead; without a terminal it refuses unless
// --yes was given; --yes goes ahead at once. Such commands are made with destructive and ask with
// confirmDestroy, so the rule, the flag and its wording are the same
// everywhere.

// destructiveAnnotation marks a destructive command, so that tests can
// find every one of them in the command tree.
const destructiveAnnotation = "ebb/destructive"

// destructive gives cmd the --yes flag of destructive commands and marks
// it as one.
func destructive(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().Bool("yes", false, "go ahead without asking (scripts, and anything without a terminal, must pass it)")
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[destructiveAnnotation] = "true"
	return cmd
}

// confirmDestroy asks for what (a sentence saying what is destroyed) by
// the rule above; it returns nil once confirmed, else an error saying
// nothing was changed or that --yes is needed.
func confirmDestroy(cmd *cobra.Command, what string) error {
	yes, err := cmd.Flags().GetBool("yes")
	if err != nil {
		return err
	}
	return confirm(cmd, yes, what)
}

// confirmed reports whether --yes was given, for commands that skip the
// work of describing what they destroy when it is.
func confirmed(cmd *cobra.Command) bool {
	yes, _ := cmd.Flags().GetBool("yes")
	return yes
}

// confirmIfExists asks for what by the rule above when lookup finds the
// thing a change would destroy data of, and asks nothing when it does not
// exist (a change that creates it destroys nothing). Any other lookup
// error is returned, since whether to ask is then unknown. With --yes it
// looks nothing up.
func confirmIfExists(cmd *cobra.Command, lookup func() error, what string) error {
	if confirmed(cmd) {
		return nil
	}
	switch err := lookup(); {
	case err == nil:
		return confirmDestroy(cmd, what)
	case errors.Is(err, ebbclient.ErrNotFound):
		return nil
	default:
		return err
	}
}
