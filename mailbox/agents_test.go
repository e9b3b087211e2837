package mailbox

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestNamedAgents(t *testing.T) {
	ctx := context.Background()
	s := New(t.TempDir())
	if got, err := s.NamedAgents(ctx); err != nil || got != nil {
		t.Fatalf("NamedAgents of a new store = %v, %v; want none", got, err)
	}
	carol, err := s.AddNamedAgent(ctx, "carol", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(carol, TokenPrefix) || len(carol) < len(TokenPrefix)+40 {
		t.Fatalf("token %q: want %s and at least 40 random characters", carol, TokenPrefix)
	}
	dave, err := s.AddNamedAgent(ctx, "dave", nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.AgentsPath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("agents file: %v, %v; want mode 0600", fi, err)
	}
	data, _ := os.ReadFile(s.AgentsPath())
	if strings.Contains(string(data), carol) || strings.Contains(string(data), dave) {
		t.Fatalf("the agents file holds a token:\n%s", data)
	}
	for _, name := range []string{"carol", "Carol"} {
		if _, err := s.AddNamedAgent(ctx, name, nil); err == nil {
			t.Errorf("AddNamedAgent(%s) again succeeded", name)
		}
	}
	if _, err := s.AddNamedAgent(ctx, "a/b", nil); err == nil {
		t.Error("AddNamedAgent(a/b) succeeded")
	}
	taken := errors.New("a window has that name")
	if _, err := s.AddNamedAgent(ctx, "bob", func(string) error { return taken }); !errors.Is(err, taken) {
		t.Errorf("AddNamedAgent with a taken name: %v, want %v", err, taken)
	}
	for token, want := range map[string]string{carol: "carol", dave: "dave", carol + "x": "", "": "", TokenPrefix: ""} {
		if got, err := s.NamedAgentOf(ctx, token); err != nil || got != want {
			t.Errorf("Agent(%q) = %q, %v; want %q", token, got, err, want)
		}
	}
	if err := s.RemoveNamedAgent(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveNamedAgent(ctx, "carol"); err == nil {
		t.Error("removing carol twice succeeded")
	}
	if got, _ := s.NamedAgentOf(ctx, carol); got != "" {
		t.Errorf("a removed agent's token still names %q", got)
	}
	if got, _ := s.NamedAgentOf(ctx, dave); got != "dave" {
		t.Errorf("dave's token names %q after carol left", got)
	}
	list, err := s.NamedAgents(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "dave" || list[0].AddedAt.IsZero() {
		t.Errorf("NamedAgents = %+v, %v; want dave alone", list, err)
	}
}

// TestNamedAgentsDamaged refuses to rewrite a file it cannot read: the
// tokens of the lines it would drop would be lost.
func TestNamedAgentsDamaged(t *testing.T) {
	ctx := context.Background()
	s := New(t.TempDir())
	if _, err := s.AddNamedAgent(ctx, "carol", nil); err != nil {
		t.Fatal(err)
	}
	appendRaw(t, s.AgentsPath(), "not json\n")
	before := readFile(t, s.AgentsPath())
	if _, err := s.AddNamedAgent(ctx, "dave", nil); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("AddNamedAgent over a damaged file: %v; want an error naming line 2", err)
	}
	if got := readFile(t, s.AgentsPath()); got != before {
		t.Errorf("the damaged file changed:\n%s", got)
	}
	if err := os.Chmod(s.AgentsPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddNamedAgent(ctx, "erin", nil); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Errorf("AddNamedAgent with the file readable by others: %v; want a refusal", err)
	}
}
