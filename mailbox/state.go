package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The statuses an agent can have.
const (
	StatusReady   = "ready"
	StatusWork    = "work"
	StatusOffline = "offline"
)

// ValidStatus reports whether status is ready, work or offline.
func ValidStatus(status string) error {
	switch status {
	case StatusReady, StatusWork, StatusOffline:
		return nil
	}
	if strings.ContainsFunc(status, unicode.IsControl) || !utf8.ValidString(status) {
		// Quoted, so that the message stays one line of plain text.
		return fmt.Errorf("Invalid status: %q. Valid: ready, work, offline", status)
	}
	return fmt.Errorf("Invalid status: %s. Valid: ready, work, offline", status)
}

// State is one entry of recipients.jsonl. The order of its fields is the
// order of the keys in the file, the earlier tool's.
type State struct {
	Recipient string    `json:"recipient"`
	Status    string    `json:"status"` // StatusReady, StatusWork or StatusOffline
	UpdatedAt time.Time `json:"updated_at"`
	// NotifiedAt is when the agent was last rung; zero is written as
	// "0001-01-01T00:00:00Z", as the earlier tool does.
	NotifiedAt time.Time `json:"notified_at"`
	// LastReadAt is in Unix milliseconds; zero is left out.
	LastReadAt int64 `json:"last_read_at,omitempty"`
	// Pane is the agent's tmux pane id ("%3"); empty is left out.
	Pane string `json:"pane,omitempty"`
	// Client and Session name the assistant that runs as the agent and
	// its session, when a hook of that assistant set the status and said
	// them ("codex" and its session id): the mailman can then wake the
	// agent through the assistant instead of typing into its pane.
	Client  string `json:"client,omitempty"`
	Session string `json:"session,omitempty"`
	// Prompt is the line the agent's cursor was on when it became ready:
	// its empty input line. The mailman types only while that line is
	// unchanged, so never over what a person is typing.
	Prompt string `json:"prompt,omitempty"`

	// extra holds the keys we do not know, in their order, so that
	// rewriting an entry keeps what other tools stored in it.
	extra []rawField
}

type rawField struct {
	key   string
	value json.RawMessage
}

// stateKeys are the keys of State's fields; TestStateKeys checks them
// against its tags.
var stateKeys = []string{"recipient", "status", "updated_at", "notified_at", "last_read_at", "pane", "client", "session", "prompt"}

// isStateKey reports whether encoding/json decodes the member named key
// into a field of State: it matches names case-insensitively.
func isStateKey(key string) bool {
	for _, k := range stateKeys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// parseState decodes one line of recipients.jsonl, keeping the members
// whose keys State does not know in extra.
func parseState(line []byte) (State, error) {
	var st State
	if err := json.Unmarshal(line, &st); err != nil {
		return State{}, err
	}
	err := eachMember(line, func(key string, value json.RawMessage, _ int) {
		if !isStateKey(key) {
			st.extra = append(st.extra, rawField{key: key, value: value})
		}
	})
	if err != nil {
		return State{}, err
	}
	return st, nil
}

// marshal encodes st as one line (without newline): the known keys in the
// earlier tool's order, then pane, then the unknown keys as they were read.
func (st *State) marshal() ([]byte, error) {
	b, err := json.Marshal(st) // extra, unexported, is left out here
	if err != nil || len(st.extra) == 0 {
		return b, err
	}
	b = b[:len(b)-1]
	for _, f := range st.extra {
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		var v bytes.Buffer
		if err := json.Compact(&v, f.value); err != nil {
			return nil, err
		}
		b = append(b, ',')
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, v.Bytes()...)
	}
	return append(b, '}'), nil
}

// stateLine is one line of recipients.jsonl: a parsed entry, or (st == nil)
// a blank or malformed line that is kept verbatim.
type stateLine struct {
	raw []byte // the line without its newline
	st  *State
	err error // why a non-blank line could not be parsed
}

func splitStateLines(data []byte) []stateLine {
	lines := make([]stateLine, 0, bytes.Count(data, []byte("\n"))+1)
	for raw := range bytes.Lines(data) {
		raw = bytes.TrimSuffix(raw, []byte("\n"))
		l := stateLine{raw: raw}
		if !isBlank(raw) {
			if st, err := parseState(raw); err != nil {
				l.err = err
			} else {
				l.st = &st
			}
		}
		lines = append(lines, l)
	}
	return lines
}

func joinStateLines(lines []stateLine) []byte {
	n := 0
	for _, l := range lines {
		n += len(l.raw) + 1
	}
	b := make([]byte, 0, n)
	for _, l := range lines {
		if isBlank(l.raw) {
			continue // Blank lines carry nothing, and the earlier tool chokes on them.
		}
		b = append(b, l.raw...)
		b = append(b, '\n')
	}
	return b
}

// States returns the entries of recipients.jsonl in file order, the first
// one for each recipient (the earlier tool and UpdateState update the first
// one too). It reads the whole file under a shared lock; malformed lines are
// skipped with one warning each. A missing file means no entries. Waiting
// for the lock ends with ctx's error if ctx is done first.
func (s *Store) States(ctx context.Context) ([]State, error) {
	path := s.StatesPath()
	data, err := readShared(ctx, path)
	if err != nil {
		return nil, err
	}
	var states []State
	seen := map[string]bool{}
	for i, l := range splitStateLines(data) {
		switch {
		case l.err != nil:
			s.warnf("skipping malformed line %d of %s: %v", i+1, path, l.err)
		case l.st != nil && !seen[l.st.Recipient]:
			seen[l.st.Recipient] = true
			states = append(states, *l.st)
		}
	}
	return states, nil
}

// UpdateState applies fn to the entry of name, or to a new State{Recipient:
// name} (exists is false) when there is none, and stores the result unless
// fn returns false. Recipient is kept as name whatever fn does. The name
// must be valid (see ValidName). Other entries, unknown keys and lines we
// cannot parse are kept as they are. The file is replaced atomically under
// the state lock. Waiting for the locks ends with ctx's error, and nothing
// changed, if ctx is done first.
func (s *Store) UpdateState(ctx context.Context, name string, fn func(st *State, exists bool) bool) error {
	if err := ValidName(name); err != nil {
		return err
	}
	var encErr error
	err := s.editStates(ctx, true, false, func(lines []stateLine) ([]stateLine, bool) {
		i := 0
		for i < len(lines) && (lines[i].st == nil || lines[i].st.Recipient != name) {
			i++
		}
		exists := i < len(lines)
		st := State{Recipient: name}
		if exists {
			st = *lines[i].st
		}
		if !fn(&st, exists) {
			return nil, false
		}
		st.Recipient = name
		raw, err := st.marshal()
		if err != nil {
			encErr = err
			return nil, false
		}
		l := stateLine{raw: raw, st: &st}
		if exists {
			lines[i] = l
		} else {
			lines = append(lines, l)
		}
		return lines, true
	})
	if err == nil {
		err = encErr
	}
	return err
}

// SetStatus records that name's agent has status, at the current time. A
// non-empty pane is stored too. work and offline reset NotifiedAt; ready
// keeps it, so that an agent going idle again is not rung twice at once.
// Waiting for the locks ends with ctx's error, and nothing changed, if ctx
// is done first.
func (s *Store) SetStatus(ctx context.Context, name, status, pane string) error {
	return s.SetStatusFrom(ctx, name, status, pane, "", "", "")
}

// SetStatusFrom is SetStatus from a hook of client, an assistant, running
// as session: both are recorded with the status when given, and so is
// prompt, the agent's input line as it is now, for ready.
func (s *Store) SetStatusFrom(ctx context.Context, name, status, pane, client, session, prompt string) error {
	if err := ValidStatus(status); err != nil {
		return err
	}
	now := s.now()
	return s.UpdateState(ctx, name, func(st *State, _ bool) bool {
		st.Status = status
		st.UpdatedAt = now
		if pane != "" {
			st.Pane = pane
		}
		if client != "" && session != "" {
			st.Client, st.Session = client, session
		}
		st.Prompt = ""
		if status == StatusReady {
			st.Prompt = prompt
		}
		if status != StatusReady {
			st.NotifiedAt = time.Time{}
		}
		return true
	})
}

// editStates runs edit on the lines of recipients.jsonl and, when it returns
// true, replaces the file with the lines it returned. It holds the state
// lock (serialising our writers) and an exclusive lock on recipients.jsonl
// (excluding the earlier tool's in-place rewrites) throughout. Without
// create, a missing file is left missing and edit is not called. With
// readOnly (a dry run), the file is only read, under a shared lock, and
// nothing is written whatever edit returns. When ctx is done before the
// locks are held, it returns ctx's error and changes nothing.
func (s *Store) editStates(ctx context.Context, create, readOnly bool, edit func([]stateLine) ([]stateLine, bool)) (err error) {
	path := s.StatesPath()
	if !create {
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	flag := os.O_RDWR
	if readOnly {
		// A shared lock on the file is enough to read it whole; our
		// writers replace it by rename, which openLocked notices.
		flag = os.O_RDONLY
	} else {
		if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
			return err
		}
		mu, _, err := openLockedContext(ctx, s.statesLockPath(), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		defer mu.Close()
	}

	var data []byte
	f, fi, err := openLockedContext(ctx, path, flag, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !create {
			return nil
		}
	case err != nil:
		return err
	default:
		defer f.Close()
		if data, err = readAll(f, fi); err != nil {
			return err
		}
	}
	lines, write := edit(splitStateLines(data))
	if !write || readOnly {
		return nil
	}
	// Statuses are refreshed as the agents work: the file is replaced
	// whole, but not synced, so that setting a status costs no disk flush.
	// A crash of the machine may lose the last change, never mail.
	return writeFileAtomic(path, joinStateLines(lines), fi, false)
}
