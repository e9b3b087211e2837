package fswatch

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestWatcherDropsMovedDirectory checks that a watched directory moved
// away stops being watched: the mailman adds the one made at its path,
// and moves that repeat must not pile up watches on the old ones.
func TestWatcherDropsMovedDirectory(t *testing.T) {
	w, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	go func() {
		for range w.Events {
		}
	}()
	root := t.TempDir()
	dir := filepath.Join(root, "agentmail")
	sc, err := w.f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	sc.Control(func(d uintptr) { fd = int(d) })
	watches := func() int {
		b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("inotify wd:"))
	}
	for i := range 5 {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir, filepath.Join(root, "moved"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for watches() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := watches(); n > 0 {
		t.Errorf("%d watches left on directories moved away, want none", n)
	}
}
