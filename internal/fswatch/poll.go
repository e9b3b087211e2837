package fswatch

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// pollWatcher reports changes in a few directories by looking at them at a
// fixed interval: the portable stand-in for the inotify watcher, with the
// same methods and events. It is built everywhere, so that the tests run it
// on Linux too.
type pollWatcher struct {
	Events chan Event
	Errors chan error

	mu   sync.Mutex
	dirs map[string]map[string]stamp // directory → entry → stamp
	stop chan struct{}
	done chan struct{}
}

type stamp struct {
	size int64
	mod  time.Time
}

// newPollWatcher starts a watcher that looks every interval.
func newPollWatcher(interval time.Duration) *pollWatcher {
	w := &pollWatcher{
		Events: make(chan Event, 64),
		Errors: make(chan error, 1),
		dirs:   map[string]map[string]stamp{},
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go w.poll(interval)
	return w
}

// Add watches the entries of dir. Adding a directory again is harmless.
func (w *pollWatcher) Add(dir string) error {
	dir = filepath.Clean(dir)
	entries, err := scan(dir)
	if err != nil {
		return err
	}
	w.mu.Lock()
	if _, ok := w.dirs[dir]; !ok {
		w.dirs[dir] = entries
	}
	w.mu.Unlock()
	return nil
}

// Close stops the watcher and closes Events and Errors.
func (w *pollWatcher) Close() error {
	close(w.stop)
	<-w.done
	return nil
}

func scan(dir string) (map[string]stamp, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	m := make(map[string]stamp, len(des))
	for _, de := range des {
		if fi, err := de.Info(); err == nil {
			m[de.Name()] = stamp{fi.Size(), fi.ModTime()}
		}
	}
	return m, nil
}

func (w *pollWatcher) poll(interval time.Duration) {
	defer close(w.done)
	defer close(w.Events)
	defer close(w.Errors)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		w.mu.Lock()
		var events []Event
		for dir, old := range w.dirs {
			cur, err := scan(dir)
			if err != nil {
				delete(w.dirs, dir)
				events = append(events, Event{Name: dir})
				continue
			}
			for name, st := range cur {
				if prev, ok := old[name]; !ok {
					events = append(events, Event{Name: filepath.Join(dir, name), Created: true})
				} else if prev != st {
					events = append(events, Event{Name: filepath.Join(dir, name)})
				}
			}
			for name := range old {
				if _, ok := cur[name]; !ok {
					events = append(events, Event{Name: filepath.Join(dir, name)})
				}
			}
			w.dirs[dir] = cur
		}
		w.mu.Unlock()
		for _, ev := range events {
			select {
			case w.Events <- ev:
			case <-w.stop:
				return
			}
		}
	}
}
