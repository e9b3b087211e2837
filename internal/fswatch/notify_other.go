//go:build !linux

package fswatch

import "time"

// pollInterval is how often the watcher looks at its directories where
// inotify is not available; it keeps a reaction within a second.
const pollInterval = 250 * time.Millisecond

// Watcher is the polling watcher where inotify is not available.
type Watcher = pollWatcher

func New() (*Watcher, error) {
	return newPollWatcher(pollInterval), nil
}
