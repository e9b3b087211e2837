package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// RootEnv names the environment variable that overrides root discovery.
const RootEnv = "AGENTMAIL_ROOT"

// MaxNameLen is the longest mailbox name in bytes, so that "<name>.jsonl"
// still fits a 255-byte file name.
const MaxNameLen = 255 - len(".jsonl")

// FindRoot returns the project root. When getenv(AGENTMAIL_ROOT) is set and
// non-empty, it names the root: it must be the absolute path of an existing
// directory. Otherwise the root is the nearest
// ancestor of dir (dir included) that contains an entry named ".git", a file
// (worktrees, submodules) or a directory; git itself is never run. A nil
// getenv means os.Getenv.
func FindRoot(dir string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(RootEnv); v != "" {
		if !filepath.IsAbs(v) {
			// Hooks run in the assistant's working directory, the MCP
			// server in the one it started in: a relative value would
			// give them different roots.
			return "", fmt.Errorf("%s=%q: not an absolute path (a relative one names another directory from each working directory)", RootEnv, v)
		}
		p := filepath.Clean(v)
		fi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("%s=%q: no such directory", RootEnv, v)
			}
			return "", fmt.Errorf("%s=%q: %w", RootEnv, v, err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%s=%q: not a directory", RootEnv, v)
		}
		return p, nil
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("no project root: run inside a git repository or set " + RootEnv)
		}
		d = parent
	}
}

// SameMailbox reports whether names a and b may name one mailbox file:
// they are equal but for letter case, which a case-insensitive file system
// (macOS's, by default) does not tell apart. Windows so named would read
// each other's mail.
func SameMailbox(a, b string) bool { return strings.EqualFold(a, b) }

// ValidName reports whether name can be a mailbox name, that is a file name
// of its own inside .agentmail/mailboxes. It refuses the empty name, "." and
// "..", names containing '/', NUL or another control character, names that
// are not valid UTF-8 (they could not round-trip through the JSON "to" and
// "recipient" fields), and names longer than MaxNameLen bytes. Everything
// else is fine: spaces, ':', '.', a leading '-' or '..', digits, unicode.
func ValidName(name string) error {
	switch {
	case name == "":
		return errors.New("invalid name: the name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("invalid name %q: %q is not a file name", name, name)
	case len(name) > MaxNameLen:
		return fmt.Errorf("invalid name %s: %d bytes long, the limit is %d", shortQuote(name), len(name), MaxNameLen)
	case strings.Contains(name, "/"):
		return fmt.Errorf("invalid name %q: contains '/'", name)
	case strings.IndexByte(name, 0) >= 0:
		return fmt.Errorf("invalid name %q: contains a NUL byte", name)
	case !utf8.ValidString(name):
		return fmt.Errorf("invalid name %q: not valid UTF-8", name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("invalid name %q: contains control character 0x%02x", name, c)
		}
	}
	return nil
}

// shortQuote quotes s, cut to a readable length for error messages.
func shortQuote(s string) string {
	const limit = 40
	if len(s) <= limit {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", strings.ToValidUTF8(s[:limit], ""))
}
