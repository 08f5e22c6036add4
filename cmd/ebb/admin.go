package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	ebbclient "github.com/ebb-data/ebb/client"
)

func init() { commands = append(commands, newAdminCmd, newHealthCmd) }

func newAdminCmd(c *client) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Inspect a running server: its tables, its replicas' leases, its metrics",
		Long: `Inspect a running "ebb serve": what the backend holds, who runs the
background roles, and the Prometheus metrics. With an auth file these need
a token with the admin scope (the metrics scope for metrics).`,
	}
	cmd.AddCommand(adminTablesCmd(c), adminClusterCmd(c), adminMetricsCmd(c))
	return cmd
}

func adminTablesCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "tables",
		Short: "List the backend's physical tables and the shared tables",
		Long: `List every physical table the backend holds, ebb's own included, with its
rows (expired rows not yet deleted included: what the table costs), bytes
and capacity mode; then every shared table with its live items and bytes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			tables, err := api.AdminTables(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.json {
				tables.Tables, tables.LogicalTables = nonNil(tables.Tables), nonNil(tables.LogicalTables)
				return printJSON(w, tables)
			}
			tw := newTable(w)
			fmt.Fprintln(tw, "TABLE\tROWS\tBYTES\tCAPACITY")
			for _, t := range tables.Tables {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.Name, t.Rows, t.Bytes, t.Capacity)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(tables.LogicalTables) == 0 {
				return nil
			}
			fmt.Fprintln(w)
			tw = newTable(w)
			fmt.Fprintln(tw, "SHARED TABLE\tITEMS\tBYTES\tDEFAULT_TTL")
			for _, t := range tables.LogicalTables {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.Name, t.Items, t.Bytes, ebbclient.FormatDuration(t.DefaultTTL))
			}
			return tw.Flush()
		},
	}
	out = addOutput(cmd)
	return cmd
}

func adminClusterCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show which replica holds each background role's lease",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			cl, err := api.Cluster(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.json {
				cl.Leases = nonNil(cl.Leases)
				return printJSON(w, cl)
			}
			fmt.Fprintf(w, "answered by replica %s\n\n", cl.Replica)
			tw := newTable(w)
			fmt.Fprintln(tw, "ROLE\tHOLDER\tEPOCH\tEXPIRES\tHELD_HERE")
			for _, l := range cl.Leases {
				holder, expires := l.Holder, "-"
				if holder == "" {
					holder = "-"
				}
				if !l.Expires.IsZero() {
					expires = formatTime(l.Expires)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%t\n", l.Role, holder, l.Epoch, expires, l.HeldHere)
			}
			return tw.Flush()
		},
	}
	out = addOutput(cmd)
	return cmd
}

func adminMetricsCmd(c *client) *cobra.Command {
	return &cobra.Command{
		Use:   "metrics",
		Short: "Print the server's Prometheus metrics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			text, err := api.Metrics(cmd.Context())
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(text)
			return err
		},
	}
}

// healthReport is `ebb health --output json`: whether the server answers
// /healthz and /readyz, and why not.
type healthReport struct {
	Server  string `json:"server"`
	Serving bool   `json:"serving"`
	Ready   bool   `json:"ready"`
	Reason  string `json:"reason,omitempty"`
}

func newHealthCmd(c *client) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check that a server is up and ready",
		Long: `Check that a server is serving (/healthz) and ready (/readyz: its backend
answers and its shard manager has completed a pass). Exits 0 when ready, 1
otherwise, saying why. Needs no token. With --output json it prints
{"server", "serving", "ready", "reason"} whatever the answer, and exits
as without.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.api()
			if err != nil {
				return err
			}
			rep := healthReport{Server: api.Server()}
			err = api.Health(cmd.Context())
			if err == nil {
				rep.Serving = true
				if err = api.Ready(cmd.Context()); err == nil {
					rep.Ready = true
				} else if ae := (*ebbclient.APIError)(nil); errors.As(err, &ae) && ae.Code == ebbclient.CodeUnavailable {
					err = fmt.Errorf("%s is serving but not ready: %s", api.Server(), ae.Message)
					rep.Reason = ae.Message
				}
			}
			if out.json {
				if err != nil && rep.Reason == "" {
					rep.Reason = explain(err).Error()
				}
				if perr := printJSON(cmd.OutOrStdout(), rep); perr != nil {
					return perr
				}
				if err != nil {
					return exitCode(1)
				}
				return nil
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: serving, ready\n", api.Server())
			return err
		},
	}
	out = addOutput(cmd)
	return cmd
}
