package main

import (
	"runtime/debug"
	"testing"
)

// TestBuildVersion checks where "agentmail version" takes its version
// from: the -ldflags stamp, else the module version "go install
// module@version" records, never the "(devel)" of a checkout.
func TestBuildVersion(t *testing.T) {
	withMain := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Path: "agentmail", Version: v}}, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		name    string
		stamped string
		info    func() (*debug.BuildInfo, bool)
		want    string
	}{
		{"stamp wins over module version", "v1.2.3-4-gabcdef", withMain("v1.2.0"), "v1.2.3-4-gabcdef"},
		{"go install of a release", "dev", withMain("v0.3.1"), "v0.3.1"},
		{"go install of a commit", "dev", withMain("v0.0.0-20261127220000-0123456789ab"), "v0.0.0-20261127220000-0123456789ab"},
		{"build from a checkout", "dev", withMain("(devel)"), "dev"},
		{"no module version", "dev", withMain(""), "dev"},
		{"no build information", "dev", none, "dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildVersion(tc.stamped, tc.info); got != tc.want {
				t.Errorf("buildVersion(%q) = %q, want %q", tc.stamped, got, tc.want)
			}
		})
	}
}
