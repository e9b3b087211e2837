//go:build !linux

package mailman

import "time"

// pollInterval is how often the watcher looks at its directories where
// inotify is not available; it keeps the mailman's reaction within a second.
const pollInterval = 250 * time.Millisecond

// fileWatcher is the polling watcher where inotify is not available.
type fileWatcher = pollWatcher

func newFileWatcher() (*fileWatcher, error) {
	return newPollWatcher(pollInterval), nil
}
