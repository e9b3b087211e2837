package fswatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// told waits for a change on ch, and fails the test when none comes.
func told(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no change reported within 5s", what)
	}
}

// drain empties ch of a change already reported.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

func watchEntry(t *testing.T, path string) (<-chan struct{}, func()) {
	t.Helper()
	ch, stop, err := WatchEntry(path)
	if err != nil {
		t.Fatal(err)
	}
	return ch, stop
}

// TestWatchEntry checks the fan-out of the shared watch: a change of an
// entry reaches each of its watches and none of another entry's, the
// directory removed reaches them all, and the directory made again in its
// place is watched for the watches that were there before, once a new
// watch begins. A stop called twice is harmless, and a watch after all
// have stopped works.
func TestWatchEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "boxes")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	a1, stopA1 := watchEntry(t, a)
	a2, stopA2 := watchEntry(t, a)
	b1, stopB1 := watchEntry(t, b)
	c1, stopC1 := watchEntry(t, c)

	if err := os.WriteFile(a, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	told(t, "a written, first watch of a", a1)
	told(t, "a written, second watch of a", a2)
	if err := os.WriteFile(b, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	told(t, "b written", b1)
	// The events of a and b are passed on in order, and b has been told:
	// c, never written, was told of none of those before it.
	select {
	case <-c1:
		t.Fatal("the watch of c was told of changes to a and b")
	default:
	}

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	told(t, "directory removed, watch of c", c1)
	// c was told by the directory's own event, the last of the removal:
	// nothing of it is still to come.
	for _, ch := range []<-chan struct{}{a1, a2, b1} {
		drain(ch)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, stopB2 := watchEntry(t, b) // adds the new directory
	if err := os.WriteFile(a, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	told(t, "a written in the new directory, first watch of a", a1)
	told(t, "a written in the new directory, second watch of a", a2)

	for _, stop := range []func(){stopA1, stopA2, stopB1, stopB2, stopC1, stopA1} {
		stop()
	}
	shared.mu.Lock()
	n := len(shared.dirs)
	shared.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d directories still watched after every watch stopped", n)
	}
	a3, stopA3 := watchEntry(t, a)
	defer stopA3()
	if err := os.WriteFile(a, []byte("{}\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	told(t, "a written, watch begun after all had stopped", a3)
}
