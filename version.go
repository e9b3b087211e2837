package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

var versionCmd = &command{
	summary: "Print the version",
	usage:   "agentmail version",
	run: func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(newFlags("version"), args); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "agentmail %s\n", version)
		return nil
	},
}

// init settles the version once, so that "agentmail version" and the MCP
// server's serverInfo report the same one.
func init() { version = buildVersion(version, debug.ReadBuildInfo) }

// buildVersion is the version to report. A -ldflags stamp wins; without
// one (stamped is "dev"), a binary built by "go install module@version"
// still knows its version from the module it was built from. A build
// from a checkout reports "(devel)" there, which says nothing, so it
// stays "dev". readBuildInfo is debug.ReadBuildInfo, passed in so that a
// test can give the build information of an installed binary.
func buildVersion(stamped string, readBuildInfo func() (*debug.BuildInfo, bool)) string {
	if stamped != "dev" {
		return stamped
	}
	info, ok := readBuildInfo()
	if !ok || info.Main.Version == "" || info.Main.Version == "(devel)" {
		return stamped
	}
	return info.Main.Version
}
