package fswatch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// watcher is what Run needs of a file watcher, for tests that run the
// platform's watcher and the polling one alike.
type watcher interface {
	Add(dir string) error
	Close() error
}

// TestWatchers holds both watchers to what Run expects of them: an event for
// each entry created, changed, moved in or removed, Created set for the
// entries that appeared, an event naming a watched directory that is
// removed, an error matching fs.ErrNotExist for a missing directory, and
// closed channels after Close. The polling watcher runs here too, although
// only systems without inotify use it.
func TestWatchers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) (watcher, <-chan Event, <-chan error)
	}{
		{"platform", func(t *testing.T) (watcher, <-chan Event, <-chan error) {
			w, err := New()
			if err != nil {
				t.Fatal(err)
			}
			return w, w.Events, w.Errors
		}},
		{"polling", func(t *testing.T) (watcher, <-chan Event, <-chan error) {
			w := newPollWatcher(10 * time.Millisecond)
			return w, w.Events, w.Errors
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "boxes")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			w, events, errs := tc.start(t)
			closed := false
			defer func() {
				if !closed {
					w.Close()
				}
			}()
			if err := w.Add(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Add(missing) = %v, want an error matching fs.ErrNotExist", err)
			}
			for _, d := range []string{root, dir, dir} { // adding again is harmless
				if err := w.Add(d); err != nil {
					t.Fatalf("Add(%s): %v", d, err)
				}
			}
			// want waits for an event of name with the given Created,
			// passing over the others (inotify reports a write as several).
			want := func(step, name string, created bool) {
				t.Helper()
				deadline := time.After(5 * time.Second)
				for {
					select {
					case ev, ok := <-events:
						if !ok {
							t.Fatalf("%s: events closed", step)
						}
						if ev.Name == name && ev.Created == created {
							return
						}
					case err := <-errs:
						t.Fatalf("%s: watcher error: %v", step, err)
					case <-deadline:
						t.Fatalf("%s: no event {%s %v} within 5s", step, name, created)
					}
				}
			}
			box := filepath.Join(dir, "bob.jsonl")
			if err := os.WriteFile(box, []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			want("create", box, true)
			f, err := os.OpenFile(box, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("{}\n"); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			want("append", box, false)
			tmp := filepath.Join(root, "tmp")
			if err := os.WriteFile(tmp, []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			moved := filepath.Join(dir, "carol.jsonl")
			if err := os.Rename(tmp, moved); err != nil {
				t.Fatal(err)
			}
			want("move in", moved, true)
			if err := os.Remove(box); err != nil {
				t.Fatal(err)
			}
			want("remove", box, false)
			sub := filepath.Join(root, "new")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			want("directory created", sub, true)
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			want("watched directory removed", dir, false)

			// Close returns even with more events waiting than Events
			// holds and nobody reading them.
			for i := range 200 {
				if err := os.WriteFile(filepath.Join(sub, strconv.Itoa(i)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Add(sub); err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				if err := os.WriteFile(filepath.Join(sub, strconv.Itoa(i)), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(100 * time.Millisecond) // let the watcher fill Events
			closed = true
			closeErr := make(chan error, 1)
			go func() { closeErr <- w.Close() }()
			select {
			case err := <-closeErr:
				if err != nil {
					t.Fatalf("Close: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Close hung with events nobody reads")
			}
			for range events { // drains what was sent before Close, then ends
			}
			if _, ok := <-errs; ok {
				t.Fatal("Errors still open after Close")
			}
		})
	}
}
