// Command agentmail lets AI coding agents, one per tmux window, mail each
// other: a CLI for people, scripts and hooks, and an MCP server on stdio
// ("agentmail mcp") for coding assistants.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"agentmail/internal/text"
	"agentmail/mailman"
	"agentmail/tools"
)

// version is stamped at build time with -ldflags "-X main.version=…".
var version = "dev"

// main installs no signal handlers: a one-shot command interrupted by a
// signal ends as any Unix tool does, and every store operation is safe to
// interrupt at any point. The long-running commands, mcp and mailman,
// handle the signals that stop them cleanly themselves.
func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// command is one subcommand: its usage text and the function that runs it.
type command struct {
	summary string
	usage   string // the usage line, after "usage: "
	help    string // the rest of the help text
	run     func(ctx context.Context, env *env, args []string) error
}

// commands is the subcommand table, in the order help lists them.
var commands = []struct {
	name string
	cmd  *command
}{
	{"send", sendCmd},
	{"receive", receiveCmd},
	{"watch", watchCmd},
	{"inbox", inboxCmd},
	{"sent", sentCmd},
	{"thread", threadCmd},
	{"recipients", recipientsCmd},
	{"status", statusCmd},
	{"agent", agentCmd},
	{"mailman", mailmanCmd},
	{"doctor", doctorCmd},
	{"cleanup", cleanupCmd},
	{"onboard", onboardCmd},
	{"mcp", mcpCmd},
	{"web", webCmd},
	{"demo", demoCmd},
	{"help", helpCmd},
	{"version", versionCmd},
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c.cmd
		}
	}
	return nil
}

// env is what a command runs with: its I/O, and who the caller is as far
// as its flags say (id). The environment is the process's own (os.Getenv).
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	id             identity
}

// run is the whole program, apart from the exit.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := &outputWriter{w: stdout}
	e := &env{stdin: stdin, stdout: out, stderr: stderr}
	if len(args) == 0 {
		printUsage(stderr)
		return 1
	}
	name := args[0]
	switch name {
	case "-h", "--help", "-help":
		name = "help"
	case "-v", "--version", "-version":
		name = "version"
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(stderr, "error: unknown command %q\n", args[0])
		fmt.Fprintln(stderr, "usage: agentmail <command> [arguments]; run 'agentmail help' for the list")
		return 1
	}
	err := cmd.run(ctx, e, args[1:])
	code := exitCode(e, cmd, err)
	if err := out.failed(); code == 0 && err != nil {
		// Output that was lost (a full disk, say) fails the command.
		fmt.Fprintf(stderr, "error: writing to standard output: %v\n", err)
		return 1
	}
	return code
}

// outputWriter passes writes to standard output on and keeps the first
// error, so that a command whose output was lost does not exit 0. The
// long-running commands write from several goroutines, and a write of the
// MCP server may still be blocked when its command returns: err is
// guarded.
type outputWriter struct {
	w   io.Writer
	mu  sync.Mutex
	err error
}

func (o *outputWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		o.mu.Lock()
		if o.err == nil {
			o.err = err
		}
		o.mu.Unlock()
	}
	return n, err
}

// failed returns the first write error, if any.
func (o *outputWriter) failed() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// exitError carries a specific exit status, and optionally no message.
type exitError struct {
	code int
	err  error // nil: print nothing
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageError is a mistake in the command line; its message is followed by
// the command's usage line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

func exitCode(e *env, cmd *command, err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		printHelp(e.stdout, cmd)
		return 0
	}
	code := statusOf(err)
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	fmt.Fprintf(e.stderr, "error: %s\n", text.OneLine(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "usage: %s\n", cmd.usage)
	}
	return code
}

// statusOf is the exit status of a command that failed with err: 2 when it
// must run inside tmux and does not, or when a mailman is already running
// (the help text lists both), and 1 otherwise.
func statusOf(err error) int {
	var re *mailman.RunningError
	if tools.NotInTmux(err) || errors.As(err, &re) {
		return 2
	}
	return 1
}

// parseArgs parses flags that may come before or after positional
// arguments; "--" ends the flags. Unknown flags, missing values and a flag
// given twice (under either of its names) are usage errors, since the
// first value would otherwise be dropped without a word; -h and --help
// return flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	// Two names of one variable (-r and --recipient) hold the same pointer
	// in their flag.Value, so they compare equal here.
	set := map[flag.Value]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		if len(a)-len(name) > 2 || name == "" {
			return nil, usagef("bad flag syntax: %s", a)
		}
		value, hasValue := "", false
		if k, v, ok := strings.Cut(name, "="); ok {
			name, value, hasValue = k, v, true
		}
		if name == "h" || name == "help" {
			return nil, flag.ErrHelp
		}
		f := fs.Lookup(name)
		if f == nil {
			return nil, usagef("unknown flag: %s", a)
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if !hasValue {
				value = "true"
			}
		} else if !hasValue {
			if i+1 >= len(args) {
				return nil, usagef("flag needs a value: %s", a)
			}
			i++
			value = args[i]
		}
		if _, many := f.Value.(repeatable); set[f.Value] && !many {
			return nil, usagef("flag given twice: %s", a)
		}
		set[f.Value] = true
		if err := fs.Set(name, value); err != nil {
			return nil, usagef("invalid value %q for flag -%s: %v", value, name, err)
		}
	}
	return pos, nil
}

// repeatable is a flag's value that may be given more than once, each
// time adding to it.
type repeatable interface{ repeatable() }

// newFlags returns a flag set that reports nothing itself: parseArgs and
// exitCode do the reporting.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// noArgs parses a command that takes no positional arguments.
func noArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	return nil
}
