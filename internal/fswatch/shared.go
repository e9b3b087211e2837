package fswatch

import (
	"path/filepath"
	"sync"
)

// shared holds the one Watcher per directory that WatchEntry hands out.
// Each Watcher is an inotify instance on Linux, of which a user may have
// only 128 by default, and closing one waits in the kernel for a grace
// period, holding an OS thread that the runtime keeps afterwards: a server
// with hundreds of waiting receives and subscriptions must not open one per
// wait. The mutex also guards every dirWatch's users.
var shared struct {
	mu   sync.Mutex
	dirs map[string]*dirWatch // directory → its watch
}

// dirWatch is the Watcher of one directory and the users it tells.
type dirWatch struct {
	dir     string
	w       *Watcher
	done    chan struct{}                     // closed when run returns
	users   map[string]map[chan struct{}]bool // entry path → its users' channels
	n       int                               // number of users
	closing bool                              // set when the last user stopped
}

// WatchEntry reports changes to the entry at path: a value arrives on
// changes (coalesced, never blocking the watch) whenever the entry, or the
// directory holding it, may have changed, until stop is called. The
// directory must exist.
//
// All the watches of one directory in a process share one Watcher: the
// first opens it, and the last to stop closes it, so that a process that
// no longer watches holds no watcher.
func WatchEntry(path string) (changes <-chan struct{}, stop func(), err error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	path = filepath.Clean(path)
	dir := filepath.Dir(path)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	d := shared.dirs[dir]
	if d == nil {
		w, err := New()
		if err != nil {
			return nil, nil, err
		}
		if err := w.Add(dir); err != nil {
			w.Close()
			return nil, nil, err
		}
		d = &dirWatch{dir: dir, w: w, done: make(chan struct{}), users: map[string]map[chan struct{}]bool{}}
		if shared.dirs == nil {
			shared.dirs = map[string]*dirWatch{}
		}
		shared.dirs[dir] = d
		go d.run()
	} else if err := d.w.Add(dir); err != nil {
		// Adding again costs one system call, and watches the directory
		// made in the place of one removed or moved away since the
		// watch began.
		return nil, nil, err
	}
	ch := make(chan struct{}, 1)
	if d.users[path] == nil {
		d.users[path] = map[chan struct{}]bool{}
	}
	d.users[path][ch] = true
	d.n++
	var once sync.Once
	return ch, func() { once.Do(func() { d.leave(path, ch) }) }, nil
}

// leave ends the watch of path that reports on ch, and closes the
// directory's Watcher when it was the last.
func (d *dirWatch) leave(path string, ch chan struct{}) {
	shared.mu.Lock()
	delete(d.users[path], ch)
	if len(d.users[path]) == 0 {
		delete(d.users, path)
	}
	d.n--
	last := d.n == 0
	if last {
		d.closing = true
		if shared.dirs[d.dir] == d {
			delete(shared.dirs, d.dir)
		}
	}
	shared.mu.Unlock()
	if last {
		// Closed outside the lock: closing an inotify instance waits
		// for the kernel, and a new watch of the directory meanwhile
		// opens a Watcher of its own.
		d.w.Close()
		<-d.done
	}
}

// run passes the Watcher's events on to the users they concern: a change
// of an entry to that entry's users, and a change of the directory itself
// (moved away, removed) or lost events (a queue overflow) to all of them,
// who look again and find out.
func (d *dirWatch) run() {
	defer close(d.done)
	errs := d.w.Errors
	for {
		all := false
		var name string
		select {
		case ev, ok := <-d.w.Events:
			if !ok {
				d.fail()
				return
			}
			name, all = ev.Name, ev.Name == d.dir
		case _, ok := <-errs:
			if !ok {
				errs = nil // Events closes too, and ends the loop.
				continue
			}
			all = true
		}
		shared.mu.Lock()
		if all {
			for _, chs := range d.users {
				notify(chs)
			}
		} else {
			notify(d.users[name])
		}
		shared.mu.Unlock()
	}
}

// fail handles the end of the Watcher's events: unless its last user
// closed it, it failed, and the next watch of the directory opens a new
// one. Its users are told, and look again.
func (d *dirWatch) fail() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if d.closing {
		return
	}
	if shared.dirs[d.dir] == d {
		delete(shared.dirs, d.dir)
	}
	for _, chs := range d.users {
		notify(chs)
	}
}

func notify(chs map[chan struct{}]bool) {
	for ch := range chs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
