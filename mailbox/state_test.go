package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/lockedfile"
)

func stateOf(t *testing.T, s *Store, name string) State {
	t.Helper()
	states, err := s.States(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range states {
		if st.Recipient == name {
			return st
		}
	}
	t.Fatalf("no state for %q in %+v", name, states)
	return State{}
}

func TestSetStatusRules(t *testing.T) {
	s, _ := newStore(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	s.Now = func() time.Time { return now }
	notified := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	if err := s.SetStatus(context.Background(), "bob", "ready", "%3"); err != nil {
		t.Fatal(err)
	}
	st := stateOf(t, s, "bob")
	if st.Status != "ready" || !st.UpdatedAt.Equal(now) || st.Pane != "%3" || !st.NotifiedAt.IsZero() {
		t.Errorf("after ready: %+v", st)
	}
	line := readFile(t, s.StatesPath())
	if want := `{"recipient":"bob","status":"ready","updated_at":"2026-01-02T03:04:05.000000006Z","notified_at":"0001-01-01T00:00:00Z","pane":"%3"}` + "\n"; line != want {
		t.Errorf("line %s\nwant %s", line, want)
	}

	setNotified := func() {
		t.Helper()
		err := s.UpdateState(context.Background(), "bob", func(st *State, exists bool) bool {
			if !exists {
				t.Error("bob's entry does not exist")
			}
			st.NotifiedAt = notified
			st.LastReadAt = 1795296384732
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setNotified()
	now = now.Add(time.Minute)
	if err := s.SetStatus(context.Background(), "bob", "ready", ""); err != nil {
		t.Fatal(err)
	}
	if st := stateOf(t, s, "bob"); !st.NotifiedAt.Equal(notified) || st.Pane != "%3" || !st.UpdatedAt.Equal(now) || st.LastReadAt != 1795296384732 {
		t.Errorf("ready must keep notified_at, the pane and last_read_at: %+v", st)
	}
	for _, status := range []string{"work", "offline"} {
		setNotified()
		if err := s.SetStatus(context.Background(), "bob", status, "%9"); err != nil {
			t.Fatal(err)
		}
		if st := stateOf(t, s, "bob"); st.Status != status || !st.NotifiedAt.IsZero() || st.Pane != "%9" {
			t.Errorf("%s must reset notified_at: %+v", status, st)
		}
	}
}

func TestSetStatusInvalid(t *testing.T) {
	s, _ := newStore(t)
	for _, bad := range []string{"busy", "", "Ready", "ready "} {
		err := s.SetStatus(context.Background(), "bob", bad, "")
		if want := "Invalid status: " + bad + ". Valid: ready, work, offline"; err == nil || err.Error() != want {
			t.Errorf("SetStatus(%q) = %v; want %q", bad, err, want)
		}
	}
	if _, err := os.Stat(s.StatesPath()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an invalid status wrote the state file (%v)", err)
	}
	if err := s.SetStatus(context.Background(), "", "ready", ""); err == nil {
		t.Error("SetStatus with an empty name succeeded")
	}
}

func TestUpdateStateDeclineWritesNothing(t *testing.T) {
	s, _ := newStore(t)
	if err := s.SetStatus(context.Background(), "alice", "work", ""); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, s.StatesPath())
	fi1, _ := os.Stat(s.StatesPath())
	for _, name := range []string{"alice", "bob"} {
		called := false
		err := s.UpdateState(context.Background(), name, func(st *State, exists bool) bool {
			called = true
			if exists != (name == "alice") || st.Recipient != name {
				t.Errorf("fn(%+v, %v) for %q", st, exists, name)
			}
			st.Status = "offline"
			return false
		})
		if err != nil || !called {
			t.Fatalf("UpdateState: %v (called %v)", err, called)
		}
	}
	fi2, _ := os.Stat(s.StatesPath())
	if readFile(t, s.StatesPath()) != before || !os.SameFile(fi1, fi2) {
		t.Error("a declined update rewrote the file")
	}
}

// TestUpdateStateKeepsNameAndRefusesBadEntries checks that fn cannot rename
// the entry it edits, and that an entry that cannot be encoded is an error
// that leaves the file as it was.
func TestUpdateStateKeepsNameAndRefusesBadEntries(t *testing.T) {
	s, _ := newStore(t)
	if err := s.UpdateState(context.Background(), "alice", func(st *State, _ bool) bool {
		st.Recipient, st.Status = "mallory", "work"
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if st := stateOf(t, s, "alice"); st.Status != "work" {
		t.Errorf("alice = %+v, want status work", st)
	}
	before := readFile(t, s.StatesPath())
	err := s.UpdateState(context.Background(), "alice", func(st *State, _ bool) bool {
		st.UpdatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // beyond RFC 3339
		return true
	})
	if err == nil {
		t.Error("UpdateState with an unencodable time succeeded")
	}
	if got := readFile(t, s.StatesPath()); got != before {
		t.Errorf("the file changed:\n%s\nwas:\n%s", got, before)
	}
}

func TestStatesKeepMalformedLinesAndUnknownKeys(t *testing.T) {
	s, w := newStore(t)
	content := strings.Join([]string{
		`{"recipient":"alice","status":"ready","updated_at":"2026-01-01T00:00:00Z","notified_at":"0001-01-01T00:00:00Z","future":[1,{"x":null}],"Zeta":"z"}`,
		`{"recipient":"broken"`,
		``,
		`null`,
		`{"recipient":"bob","status":"work","updated_at":"2026-01-01T00:00:00Z","notified_at":"0001-01-01T00:00:00Z"}`,
		`{"recipient":"alice","status":"offline","updated_at":"2025-01-01T00:00:00Z","notified_at":"0001-01-01T00:00:00Z"}`,
	}, "\n") + "\n"
	if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.StatesPath(), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	states, err := s.States(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states[0].Recipient != "alice" || states[0].Status != "ready" || states[1].Recipient != "bob" {
		t.Errorf("States() = %+v; want the first alice entry and bob", states)
	}
	if msgs := w.take(); len(msgs) != 2 || !strings.Contains(msgs[0], "line 2") || !strings.Contains(msgs[1], "line 4") {
		t.Errorf("warnings %q; want one for line 2 and one for line 4", msgs)
	}

	if err := s.SetStatus(context.Background(), "alice", "work", ""); err != nil {
		t.Fatal(err)
	}
	got := lines(readFile(t, s.StatesPath()))
	if len(got) != 5 {
		t.Fatalf("lines after update:\n%s", strings.Join(got, "\n"))
	}
	if !strings.HasSuffix(got[0], `,"future":[1,{"x":null}],"Zeta":"z"}`) || !strings.Contains(got[0], `"status":"work"`) {
		t.Errorf("unknown keys not kept in order: %s", got[0])
	}
	if got[1] != `{"recipient":"broken"` || got[2] != `null` {
		t.Errorf("malformed lines not kept verbatim: %q", got[1:3])
	}
	if got[4] != `{"recipient":"alice","status":"offline","updated_at":"2025-01-01T00:00:00Z","notified_at":"0001-01-01T00:00:00Z"}` {
		t.Errorf("the duplicate entry changed: %s", got[4])
	}

}

// TestStatesNeverTorn runs writers against readers that read the file with
// and without a lock: every read must see every entry, complete.
func TestStatesNeverTorn(t *testing.T) {
	s, w := newStore(t)
	names := []string{"a", "b", "c", "d"}
	for _, n := range names {
		if err := s.SetStatus(context.Background(), n, "ready", ""); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var writers, readers sync.WaitGroup
	for i, n := range names {
		writers.Go(func() {
			for j := range 100 {
				status := []string{"ready", "work", "offline"}[(i+j)%3]
				if err := s.SetStatus(context.Background(), n, status, fmt.Sprintf("%%%d", j)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var reads atomic.Int64
	for range 2 {
		readers.Go(func() {
			for !stop.Load() {
				reads.Add(1)
				states, err := s.States(context.Background())
				if err != nil || len(states) != len(names) {
					t.Errorf("States() = %d entries, %v", len(states), err)
					return
				}
				data, err := os.ReadFile(s.StatesPath())
				if err != nil {
					t.Error(err)
					return
				}
				ls := lines(string(data))
				if len(data) == 0 || data[len(data)-1] != '\n' || len(ls) != len(names) {
					t.Errorf("unlocked read saw %q", data)
					return
				}
				for _, l := range ls {
					var st State
					if err := json.Unmarshal([]byte(l), &st); err != nil {
						t.Errorf("unlocked read saw a bad line %q: %v", l, err)
						return
					}
				}
			}
		})
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	wantNoWarnings(t, w)
	t.Logf("%d reads during the writes", reads.Load())
}

// TestStatesNoLostUpdate has concurrent read-modify-write updates of one
// entry and concurrent first entries on an empty root: no update may be
// lost, which holds only while each edit keeps the file locked from its
// read to its replacement.
func TestStatesNoLostUpdate(t *testing.T) {
	s, _ := newStore(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			// A store of its own, as another process would have.
			other := New(s.Root)
			if err := other.SetStatus(context.Background(), fmt.Sprintf("first%d", i), StatusReady, ""); err != nil {
				t.Error(err)
			}
			for range 25 {
				err := other.UpdateState(context.Background(), "counter", func(st *State, _ bool) bool {
					st.LastReadAt++
					return true
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	states, err := s.States(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]State{}
	for _, st := range states {
		byName[st.Recipient] = st
	}
	if got := byName["counter"].LastReadAt; got != 200 {
		t.Errorf("counter = %d after 200 increments", got)
	}
	for i := range 8 {
		if _, ok := byName[fmt.Sprintf("first%d", i)]; !ok {
			t.Errorf("entry first%d lost", i)
		}
	}
}

// TestStateKeys checks that stateKeys lists the JSON keys of State's
// fields, so that isStateKey keeps unknown keys and only those.
func TestStateKeys(t *testing.T) {
	var keys []string
	for f := range reflect.TypeFor[State]().Fields() {
		if tag, ok := f.Tag.Lookup("json"); ok {
			keys = append(keys, strings.Split(tag, ",")[0])
		}
	}
	if !slices.Equal(keys, stateKeys) {
		t.Errorf("State's keys %q, stateKeys %q", keys, stateKeys)
	}
}

// TestSetStatusLockWait checks that a status change waiting for a
// state lock that another holder keeps gives up when its context's
// deadline passes, with a BusyError, and changes nothing.
func TestSetStatusLockWait(t *testing.T) {
	s, _ := newStore(t)
	if err := s.SetStatus(context.Background(), "bob", StatusWork, "%1"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{s.statesLockPath(), s.StatesPath()} {
		holder, err := lockedfile.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		within(t, "SetStatus with "+path+" locked", func() { err = s.SetStatus(ctx, "bob", StatusReady, "%1") })
		cancel()
		holder.Close()
		var busy *BusyError
		if !errors.As(err, &busy) || busy.Path != path {
			t.Errorf("SetStatus with %s locked = %v; want a BusyError naming it", path, err)
		}
		if got := stateOf(t, s, "bob").Status; got != StatusWork {
			t.Errorf("status after a change that gave up = %q, want %q", got, StatusWork)
		}
	}
}

// FuzzParseState checks parseState's walk over the members of a line
// against encoding/json's tokenizer: the same unknown keys, unescaped, with
// the same values, in the same order.
func FuzzParseState(f *testing.F) {
	for _, s := range []string{
		`{"recipient":"bob","status":"ready","updated_at":"2026-01-01T00:00:00Z","pane":"%1"}`,
		`{"recipient":"bob","x":1,"y":{"a":["}",2]},"STATUS":"work","z":"\"q\""}`,
		`{ "recipient" : "bob" , "sta\u0074us" : "ready" , "x\u0041" : [ 1 , 2 ] }`,
		`{"recipient":"bob","recipient":"carol","Recipient":"dave"}`,
		`{"a":null,"b":true,"c":-1.5e3,"d":"\u00e9\ud83d\ude00"}`,
		`{}`, `[]`, `{"a":1`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		st, err := parseState(line)
		if err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		if _, err := dec.Token(); err != nil {
			t.Fatalf("parseState took %q, which encoding/json does not", line)
		}
		var want []rawField
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			key := tok.(string)
			known := false
			for _, k := range stateKeys {
				known = known || strings.EqualFold(key, k)
			}
			if !known {
				want = append(want, rawField{key: key, value: v})
			}
		}
		if len(st.extra) != len(want) {
			t.Fatalf("%q: unknown keys %v, want %v", line, st.extra, want)
		}
		for i, f := range st.extra {
			if f.key != want[i].key || !bytes.Equal(f.value, want[i].value) {
				t.Fatalf("%q: unknown key %d is %q=%s, want %q=%s", line, i, f.key, f.value, want[i].key, want[i].value)
			}
		}
	})
}
