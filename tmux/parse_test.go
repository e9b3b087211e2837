package tmux

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const testMarker = "M0123456789ABCDEF"

// rowsOut builds list-panes output as tmux prints it for the given rows.
func rowsOut(rows ...string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(testMarker + r + "\n")
	}
	return b.String()
}

func TestParsePanes(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    []paneRow
		wantErr string
	}{
		{name: "empty output", out: "", want: nil},
		{
			name: "plain names",
			out:  rowsOut("%0 @0 1 alice", "%1 @1 1 bob"),
			want: []paneRow{
				{pane: "%0", window: "@0", paneActive: true, name: "alice"},
				{pane: "%1", window: "@1", paneActive: true, name: "bob"},
			},
		},
		{
			name: "names tmux would misread as targets",
			out:  rowsOut("%1 @1 1 7", "%2 @2 1 -dash", "%3 @3 1 a:b", "%4 @4 1 w.1", "%5 @5 1 ali*"),
			want: []paneRow{
				{pane: "%1", window: "@1", paneActive: true, name: "7"},
				{pane: "%2", window: "@2", paneActive: true, name: "-dash"},
				{pane: "%3", window: "@3", paneActive: true, name: "a:b"},
				{pane: "%4", window: "@4", paneActive: true, name: "w.1"},
				{pane: "%5", window: "@5", paneActive: true, name: "ali*"},
			},
		},
		{
			name: "a name that is a prefix of another",
			out:  rowsOut("%1 @1 1 my", "%2 @2 1 my win"),
			want: []paneRow{
				{pane: "%1", window: "@1", paneActive: true, name: "my"},
				{pane: "%2", window: "@2", paneActive: true, name: "my win"},
			},
		},
		{
			name: "spaces tabs bars and control bytes are kept",
			out:  rowsOut("%1 @1 1  lead  and trail ", "%2 @2 1 a\tb|c", "%3 @3 1 \x01\x1b[31mred\x7f"),
			want: []paneRow{
				{pane: "%1", window: "@1", paneActive: true, name: " lead  and trail "},
				{pane: "%2", window: "@2", paneActive: true, name: "a\tb|c"},
				{pane: "%3", window: "@3", paneActive: true, name: "\x01\x1b[31mred\x7f"},
			},
		},
		{
			name: "newlines in names, even ones that look like rows",
			out:  rowsOut("%1 @1 1 one\ntwo", "%2 @2 1 x\n%9 @9 1 fake", "%3 @3 1 ends\n", "%4 @4 1 \n"),
			want: []paneRow{
				{pane: "%1", window: "@1", paneActive: true, name: "one\ntwo"},
				{pane: "%2", window: "@2", paneActive: true, name: "x\n%9 @9 1 fake"},
				{pane: "%3", window: "@3", paneActive: true, name: "ends\n"},
				{pane: "%4", window: "@4", paneActive: true, name: "\n"},
			},
		},
		{
			name: "unicode",
			out:  rowsOut("%1 @1 1 héllo ✉ 世界"),
			want: []paneRow{{pane: "%1", window: "@1", paneActive: true, name: "héllo ✉ 世界"}},
		},
		{
			name: "empty name",
			out:  rowsOut("%1 @1 1 "),
			want: []paneRow{{pane: "%1", window: "@1", paneActive: true, name: ""}},
		},
		{
			name: "several panes of one window",
			out:  rowsOut("%1 @1 0 w", "%2 @1 1 w"),
			want: []paneRow{
				{pane: "%1", window: "@1", name: "w"},
				{pane: "%2", window: "@1", paneActive: true, name: "w"},
			},
		},
		{name: "garbage", out: "garbage\n", wantErr: "does not start with the row marker"},
		{name: "a bare newline", out: "\n", wantErr: "does not start with the row marker"},
		{name: "another marker", out: "OTHER%0 @0 1 alice\n", wantErr: "does not start with the row marker"},
		{name: "no final newline", out: testMarker + "%0 @0 1 alice", wantErr: "does not end with a newline"},
		{name: "marker only", out: testMarker + "\n", wantErr: "malformed pane row"},
		{name: "missing name field", out: rowsOut("%0 @0 1"), wantErr: "malformed pane row"},
		{name: "bad pane id", out: rowsOut("0 @0 1 alice"), wantErr: "malformed pane row"},
		{name: "bad window id", out: rowsOut("%0 0 1 alice"), wantErr: "malformed pane row"},
		{name: "bad flag", out: rowsOut("%0 @0 yes alice"), wantErr: "malformed pane row"},
		{name: "bad second row", out: rowsOut("%0 @0 1 alice", "%x @1 1 bob"), wantErr: "malformed pane row"},
		{name: "tab separated", out: rowsOut("%0\t@0\t1\talice"), wantErr: "malformed pane row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePanes(tt.out, testMarker)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parsePanes(%q) error = %v, want one containing %q (rows %#v)", tt.out, err, tt.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsePanes(%q): %v", tt.out, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parsePanes(%q)\n got %#v\nwant %#v", tt.out, got, tt.want)
			}
		})
	}
}

func TestBuildSession(t *testing.T) {
	rows := []paneRow{
		{pane: "%0", window: "@0", paneActive: true, name: "alice"},
		{pane: "%1", window: "@1", paneActive: false, name: "bob"},
		{pane: "%2", window: "@1", paneActive: true, name: "bob"},
		{pane: "%3", window: "@2", paneActive: true, name: "my"},
		{pane: "%4", window: "@3", paneActive: true, name: ""},
	}
	wantWindows := []Window{
		{ID: "@0", Name: "alice", Pane: "%0"},
		{ID: "@1", Name: "bob", Pane: "%2"},
		{ID: "@2", Name: "my", Pane: "%3"},
		{ID: "@3", Name: "", Pane: "%4"},
	}

	t.Run("caller in an inactive pane of an inactive window", func(t *testing.T) {
		s, err := buildSession(rows, "%1")
		if err != nil {
			t.Fatal(err)
		}
		if want := (Window{ID: "@1", Name: "bob", Pane: "%1"}); s.Self != want {
			t.Errorf("Self = %#v, want %#v", s.Self, want)
		}
		if !reflect.DeepEqual(s.Windows, wantWindows) {
			t.Errorf("Windows\n got %#v\nwant %#v", s.Windows, wantWindows)
		}
	})
	t.Run("caller in the active window", func(t *testing.T) {
		s, err := buildSession(rows, "%0")
		if err != nil {
			t.Fatal(err)
		}
		if want := (Window{ID: "@0", Name: "alice", Pane: "%0"}); s.Self != want {
			t.Errorf("Self = %#v, want %#v", s.Self, want)
		}
	})
	t.Run("pane not listed", func(t *testing.T) {
		_, err := buildSession(rows, "%9")
		if !errors.Is(err, ErrNotInTmux) || !strings.Contains(err.Error(), "tmux pane %9 not found") {
			t.Errorf("err = %v, want a not-found error wrapping ErrNotInTmux", err)
		}
	})
	t.Run("no rows", func(t *testing.T) {
		if _, err := buildSession(nil, "%0"); !errors.Is(err, ErrNotInTmux) {
			t.Errorf("err = %v, want ErrNotInTmux", err)
		}
	})
	t.Run("empty own name", func(t *testing.T) {
		_, err := buildSession(rows, "%4")
		if err == nil || !strings.Contains(err.Error(), "empty name") {
			t.Fatalf("err = %v, want an empty-name error", err)
		}
		if errors.Is(err, ErrNotInTmux) {
			t.Errorf("err = %v: an unnamed window is not a missing pane", err)
		}
	})
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name     string
		tmux     string
		pane     string
		wantPane string
		wantErr  string
	}{
		{name: "inside tmux", tmux: "/tmp/tmux-1000/default,1234,0", pane: "%3", wantPane: "%3"},
		{name: "big pane id", tmux: "/s,1,0", pane: "%1234567", wantPane: "%1234567"},
		{name: "no TMUX", tmux: "", pane: "%3", wantErr: "$TMUX is not set"},
		{name: "TMUX without socket", tmux: ",1234,0", pane: "%3", wantErr: "names no tmux socket"},
		{name: "no TMUX_PANE", tmux: "/s,1,0", pane: "", wantErr: "$TMUX_PANE is not set"},
		{name: "TMUX_PANE without percent", tmux: "/s,1,0", pane: "3", wantErr: `$TMUX_PANE is "3"`},
		{name: "TMUX_PANE percent only", tmux: "/s,1,0", pane: "%", wantErr: `$TMUX_PANE is "%"`},
		{name: "TMUX_PANE window id", tmux: "/s,1,0", pane: "@3", wantErr: "not a pane id"},
		{name: "TMUX_PANE negative", tmux: "/s,1,0", pane: "%-1", wantErr: "not a pane id"},
		{name: "TMUX_PANE with space", tmux: "/s,1,0", pane: "%3 ", wantErr: "not a pane id"},
		{name: "TMUX_PANE with newline", tmux: "/s,1,0", pane: "%3\n", wantErr: "not a pane id"},
		{name: "TMUX_PANE name", tmux: "/s,1,0", pane: "alice", wantErr: "not a pane id"},
		{name: "TMUX_PANE unicode digits", tmux: "/s,1,0", pane: "%٣", wantErr: "not a pane id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"TMUX": tt.tmux, "TMUX_PANE": tt.pane}
			c, err := FromEnv(func(k string) string { return env[k] })
			if tt.wantErr != "" {
				if !errors.Is(err, ErrNotInTmux) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromEnv error = %v, want ErrNotInTmux containing %q", err, tt.wantErr)
				}
				if c != nil {
					t.Errorf("FromEnv returned client %#v with its error", c)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromEnv: %v", err)
			}
			if c.Pane != tt.wantPane || c.Bin != "" {
				t.Errorf("FromEnv = %#v, want Pane %q and default Bin", c, tt.wantPane)
			}
		})
	}
}

func TestLiteralArg(t *testing.T) {
	tests := []struct{ text, want string }{
		{"", ""},
		{"hello", "hello"},
		{"a;b", "a;b"},
		{";", `\;`},
		{"hi;", `hi\;`},
		{`hi\;`, `hi\\;`},
		{"hi;;", `hi;\;`},
		{"-R hi; Enter", "-R hi; Enter"},
	}
	for _, tt := range tests {
		if got := literalArg(tt.text); got != tt.want {
			t.Errorf("literalArg(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestRunErrorMessage(t *testing.T) {
	exitErr := exec.Command("false").Run()
	if exitErr == nil {
		t.Skip("false did not fail")
	}
	tests := []struct {
		name string
		err  *RunError
		want string
	}{
		{
			name: "format elided",
			err:  &RunError{Args: []string{"list-panes", "-s", "-t", "%9", "-F", testMarker + paneFormat}, Err: exitErr, Stderr: "can't find pane: %9\n"},
			want: "tmux list-panes -s -t %9 -F …: exit status 1: can't find pane: %9",
		},
		{
			name: "multi-line stderr and quoted text",
			err:  &RunError{Args: []string{"send-keys", "-t", "%1", "-l", "--", "two\nlines"}, Err: exitErr, Stderr: " first\n\nsecond \n"},
			want: `tmux send-keys -t %1 -l -- "two\nlines": exit status 1: first; second`,
		},
		{
			name: "empty argument and no stderr",
			err:  &RunError{Args: []string{"send-keys", "-t", "%1", "-l", "--", ""}, Err: context.Canceled},
			want: `tmux send-keys -t %1 -l -- "": context canceled`,
		},
		{
			name: "long text cut short",
			err:  &RunError{Args: []string{"send-keys", "-l", "--", strings.Repeat("x", 100)}, Err: context.Canceled},
			want: "tmux send-keys -l -- " + strings.Repeat("x", 40) + "…: context canceled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error()\n got %q\nwant %q", got, tt.want)
			}
			if !errors.Is(tt.err, tt.err.Err) {
				t.Errorf("RunError does not unwrap to its Err")
			}
		})
	}
}

func TestFailureToRunIsNotMistakenForAGonePane(t *testing.T) {
	// A missing binary or an ended context says nothing about the pane, so it
	// must not read as "not inside tmux"; it must still be an error.
	c := &Client{Bin: "/nonexistent/tmux", Pane: "%0"}
	ctx := context.Background()
	if err := c.Alive(ctx); err == nil || errors.Is(err, ErrNotInTmux) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Alive with a missing binary = %v, want a not-found exec error", err)
	}
	if _, err := c.Session(ctx); err == nil || errors.Is(err, ErrNotInTmux) {
		t.Errorf("Session with a missing binary = %v, want an error other than ErrNotInTmux", err)
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	c = &Client{Pane: "%0"}
	if err := c.Alive(canceled); !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotInTmux) {
		t.Errorf("Alive with a canceled context = %v, want context.Canceled", err)
	}
	if err := c.Type(canceled, "%0", "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Type with a canceled context = %v, want context.Canceled", err)
	}
}

// TestServerPIDUnknownFormat runs a stand-in for a tmux that has no pid
// format, and so prints nothing for it: the server cannot be told apart,
// and the answers are taken as they are rather than as another server's.
func TestServerPIDUnknownFormat(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tmux")
	script := `#!/bin/sh
for a; do f="$a"; done
case "$1" in
display-message) echo ' $3' ;;
list-panes) printf '%s\n' "$f" | sed -e 's/#{pid}//' -e 's/#{pane_id} #{window_id} #{pane_active} #{window_name}/%0 @0 1 alice/' ;;
esac
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := &Client{Bin: bin, Pane: "%0", ServerPID: strconv.Itoa(os.Getpid())}
	if err := c.Alive(ctx); err != nil {
		t.Errorf("Alive = %v, want nil", err)
	}
	sess, err := c.Session(ctx)
	if err != nil || sess.Self.Name != "alice" {
		t.Errorf("Session = %+v, %v; want alice's", sess, err)
	}
}
