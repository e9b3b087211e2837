package mailbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// inotifyInstances counts the process's inotify descriptors.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, de := range des {
		// The descriptor of ReadDir itself is gone by now: Readlink fails.
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", de.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// TestWatchesShareOneInotify checks that hundreds of watches in one process,
// more than the 128 inotify instances Linux allows a user by default, hold
// at most two inotify descriptors (one being closed as another opens),
// that each is told of a change to its mailbox and a watch of a mailbox
// left alone is not, and that none is held once they all stop.
func TestWatchesShareOneInotify(t *testing.T) {
	for _, n := range []int{300, 500} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			s, _ := newStore(t)
			if got := inotifyInstances(t); got != 0 {
				t.Fatalf("%d inotify descriptors before the watches", got)
			}
			// Three watches a name, as a receive waits beside a
			// subscription and a wake hook.
			names := make([]string, n)
			chans := make([]<-chan struct{}, n)
			stops := make([]func(), 0, n+1)
			defer func() {
				for _, stop := range stops {
					stop()
				}
			}()
			for i := range n {
				names[i] = "agent" + strconv.Itoa(i/3)
				ch, stop, err := s.Watch(names[i])
				if err != nil {
					t.Fatalf("watch %d of %d: %v", i+1, n, err)
				}
				chans[i] = ch
				stops = append(stops, stop)
			}
			idle, stop, err := s.Watch("idle")
			if err != nil {
				t.Fatal(err)
			}
			stops = append(stops, stop)
			if got := inotifyInstances(t); got > 2 {
				t.Fatalf("%d inotify descriptors for %d watches, want at most 2", got, n+1)
			}

			ctx := context.Background()
			for i := 0; i < n; i += 3 {
				if _, err := s.Append(ctx, "alice", names[i], "hello"); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.After(10 * time.Second)
			for i, ch := range chans {
				select {
				case <-ch:
				case <-deadline:
					t.Fatalf("watch %d of %s was not told of its mail within 10s", i, names[i])
				}
			}
			select {
			case <-idle:
				t.Error("the watch of a mailbox nobody wrote to was told of a change")
			default:
			}
			if got := inotifyInstances(t); got > 2 {
				t.Fatalf("%d inotify descriptors for %d watches, want at most 2", got, n+1)
			}

			for _, stop := range stops {
				stop()
			}
			stops = nil
			if got := inotifyInstances(t); got != 0 {
				t.Fatalf("%d inotify descriptors after every watch stopped, want none", got)
			}
		})
	}
}
