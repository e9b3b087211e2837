package main

import (
	"context"
	"fmt"
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
