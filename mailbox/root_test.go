package mailbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestFindRootGitDirectory(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{root, deep} {
		got, err := FindRoot(dir, envOf(nil))
		if err != nil || got != root {
			t.Errorf("FindRoot(%q) = %q, %v; want %q", dir, got, err, root)
		}
	}
}

func TestFindRootNearestGitFileWins(t *testing.T) {
	outer := t.TempDir()
	if err := os.Mkdir(filepath.Join(outer, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A worktree or submodule has a .git file, not a directory.
	inner := filepath.Join(outer, "sub")
	if err := os.MkdirAll(filepath.Join(inner, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inner, ".git"), []byte("gitdir: ../.git/worktrees/sub\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := FindRoot(filepath.Join(inner, "x"), envOf(nil))
	if err != nil || got != inner {
		t.Errorf("FindRoot = %q, %v; want %q", got, err, inner)
	}
}

func TestFindRootEnv(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()

	got, err := FindRoot(repo, envOf(map[string]string{"AGENTMAIL_ROOT": other}))
	if err != nil || got != other {
		t.Errorf("absolute AGENTMAIL_ROOT: got %q, %v; want %q", got, err, other)
	}

	if err := os.Mkdir(filepath.Join(repo, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A relative value would name another directory from each working
	// directory: it is refused.
	for _, rel := range []string{"data", "./data", "."} {
		got, err = FindRoot(repo, envOf(map[string]string{"AGENTMAIL_ROOT": rel}))
		if err == nil || !strings.Contains(err.Error(), "not an absolute path") {
			t.Errorf("relative AGENTMAIL_ROOT %q: got %q, %v; want an error", rel, got, err)
		}
	}

	// An empty value is unset.
	got, err = FindRoot(repo, envOf(map[string]string{"AGENTMAIL_ROOT": ""}))
	if err != nil || got != repo {
		t.Errorf("empty AGENTMAIL_ROOT: got %q, %v; want %q", got, err, repo)
	}

	file := filepath.Join(other, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{file, filepath.Join(other, "missing")} {
		if got, err := FindRoot(repo, envOf(map[string]string{"AGENTMAIL_ROOT": bad})); err == nil || !strings.Contains(err.Error(), "AGENTMAIL_ROOT") {
			t.Errorf("AGENTMAIL_ROOT=%q: got %q, %v; want an error naming AGENTMAIL_ROOT", bad, got, err)
		}
	}
}

func TestFindRootNone(t *testing.T) {
	dir := t.TempDir()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			t.Skipf("%s has a .git above the temporary directory", d)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	_, err := FindRoot(dir, envOf(nil))
	if err == nil {
		t.Fatal("FindRoot outside any repository succeeded")
	}
	for _, want := range []string{"git repository", "AGENTMAIL_ROOT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestValidName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string // a part of the error; "" when the name is valid
	}{
		{"alice", ""},
		{"..x", ""},
		{"7", ""},
		{"-dash", ""},
		{"a:b", ""},
		{"my win", ""},
		{"w.1", ""},
		{"é🙂", ""},
		{strings.Repeat("a", 249), ""},
		{strings.Repeat("é", 124) + "a", ""}, // 249 bytes
		{"", "empty"},
		{".", "not a file name"},
		{"..", "not a file name"},
		{"../x", "'/'"},
		{"a/b", "'/'"},
		{"/abs", "'/'"},
		{"a\x00b", "NUL"},
		{"\n", "control character 0x0a"},
		{"tab\there", "control character 0x09"},
		{"del\x7f", "control character 0x7f"},
		{"bad\xffutf8", "UTF-8"},
		{strings.Repeat("a", 250), "250 bytes long, the limit is 249"},
		{strings.Repeat("x", 10<<10), "10240 bytes long"},
	}
	for _, tt := range tests {
		err := ValidName(tt.name)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ValidName(%s) = %v; want nil", shortQuote(tt.name), err)
		case tt.wantErr != "" && err == nil:
			t.Errorf("ValidName(%s) = nil; want an error containing %q", shortQuote(tt.name), tt.wantErr)
		case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
			t.Errorf("ValidName(%s) = %q; want it to contain %q", shortQuote(tt.name), err, tt.wantErr)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("ValidName error is %d bytes long; keep it readable", len(err.Error()))
		}
	}
}
