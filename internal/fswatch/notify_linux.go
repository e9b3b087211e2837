package fswatch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"
)

// Watcher reports changes in a few directories, with inotify.
type Watcher struct {
	Events chan Event
	Errors chan error

	f    *os.File
	mu   sync.Mutex
	dirs map[int32]string // watch descriptor → directory
	stop chan struct{}    // closed by Close, so that no send blocks it
	done chan struct{}
}

// watchMask asks for the events that can change what a directory holds.
const watchMask = syscall.IN_CREATE | syscall.IN_MODIFY | syscall.IN_CLOSE_WRITE |
	syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO |
	syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF

func New() (*Watcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	// A non-blocking descriptor goes through the runtime's poller, so Close
	// wakes a Read that is waiting.
	w := &Watcher{
		Events: make(chan Event, 64),
		Errors: make(chan error, 1),
		f:      os.NewFile(uintptr(fd), "inotify"),
		dirs:   map[int32]string{},
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go w.read()
	return w, nil
}

// Add watches the entries of dir. Adding a directory again is harmless.
func (w *Watcher) Add(dir string) error {
	dir = filepath.Clean(dir)
	sc, err := w.f.SyscallConn()
	if err != nil {
		return err
	}
	var wd int
	var werr error
	if err := sc.Control(func(fd uintptr) {
		wd, werr = syscall.InotifyAddWatch(int(fd), dir, watchMask)
	}); err != nil {
		return err
	}
	if werr != nil {
		return &os.PathError{Op: "watch", Path: dir, Err: werr}
	}
	w.mu.Lock()
	w.dirs[int32(wd)] = dir
	w.mu.Unlock()
	return nil
}

// remove ends the watch wd; the kernel then reports IN_IGNORED for it.
func (w *Watcher) remove(wd int32) {
	if sc, err := w.f.SyscallConn(); err == nil {
		sc.Control(func(fd uintptr) { syscall.InotifyRmWatch(int(fd), uint32(wd)) })
	}
}

// Close stops the watcher and closes Events and Errors, even when nobody
// reads the events that are waiting.
func (w *Watcher) Close() error {
	close(w.stop)
	err := w.f.Close()
	<-w.done
	return err
}

// send passes ev on, unless the watcher is closed first.
func (w *Watcher) send(ev Event) bool {
	select {
	case w.Events <- ev:
		return true
	case <-w.stop:
		return false
	}
}

func (w *Watcher) read() {
	defer close(w.done)
	defer close(w.Events)
	defer close(w.Errors)
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				select {
				case w.Errors <- err:
				case <-w.stop:
				}
			}
			return
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			raw := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(raw.Len)]
			off += syscall.SizeofInotifyEvent + int(raw.Len)
			if raw.Mask&syscall.IN_Q_OVERFLOW != 0 {
				select {
				case w.Errors <- errors.New("inotify queue overflow: events were lost"):
				default:
				}
				continue
			}
			w.mu.Lock()
			dir, ok := w.dirs[raw.Wd]
			if raw.Mask&syscall.IN_IGNORED != 0 {
				delete(w.dirs, raw.Wd)
			}
			w.mu.Unlock()
			if !ok {
				continue
			}
			if raw.Mask&syscall.IN_MOVE_SELF != 0 {
				// The directory moved away: its path names it no more, and
				// its user adds the one made there in its place. The
				// kernel would keep the old watch, and report its changes
				// under the old path, for as long as the directory lives.
				w.remove(raw.Wd)
			}
			// The name, padded with NULs, is empty for an event of the
			// watched directory itself.
			name := dir
			if base := bytes.TrimRight(nameBytes, "\x00"); len(base) > 0 {
				name = filepath.Join(dir, string(base))
			}
			if raw.Mask&watchMask != 0 && !w.send(Event{Name: name, Created: raw.Mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0}) {
				return
			}
		}
	}
}
