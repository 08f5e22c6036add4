package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release version, set at build time with
// -ldflags "-X main.version=v1.2.3" (the Makefile's build target does).
var version = "dev"

func newVersionCmd(*client) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, Go version and source revision",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			info, ok := debug.ReadBuildInfo()
			v := version
			// `go install ...@v1.2.3` records the module version even when
			// no -ldflags were given.
			if v == "dev" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
				v = info.Main.Version
			}
			fmt.Fprintf(out, "ebb %s\n", v)
			fmt.Fprintf(out, "go %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if !ok {
				return nil
			}
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			if rev := settings["vcs.revision"]; rev != "" {
				if settings["vcs.modified"] == "true" {
					rev += " (modified)"
				}
				if t := settings["vcs.time"]; t != "" {
					rev += " " + t
				}
				fmt.Fprintf(out, "revision %s\n", rev)
			}
			return nil
		},
	}
}
