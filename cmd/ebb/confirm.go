package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// The terminal the confirmations talk to: variables so that tests can
// stand in for a person at a terminal.
var (
	confirmInput    io.Reader = os.Stdin
	inputIsTerminal           = func() bool { return term.IsTerminal(int(os.Stdin.Fd())) }
)

// errNotConfirmed is what a destructive command returns when it was not
// confirmed; nothing was changed.
var errNotConfirmed = errors.New("not confirmed; nothing was changed")

// confirm asks the person at the terminal to approve what, by typing
// "yes", unless --yes was given. Without a terminal it refuses, so that a
// script never destroys anything by accident: scripts pass --yes.
func confirm(cmd *cobra.Command, yes bool, what string) error {
	if yes {
		return nil
	}
	if !inputIsTerminal() {
		return fmt.Errorf("%s needs confirmation, and standard input is not a terminal: pass --yes to confirm", what)
	}
	w := cmd.ErrOrStderr()
	fmt.Fprintf(w, "\n%s?\n  Only 'yes' will be accepted to confirm.\n\n  Enter a value: ", what)
	line, err := bufio.NewReader(confirmInput).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if strings.TrimSpace(line) != "yes" {
		return errNotConfirmed
	}
	return nil
}

// exitCode ends a command with a given process exit code and no message:
// `ebb index plan --detailed-exitcode` exits 2 when changes are pending.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
