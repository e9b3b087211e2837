// Package fswatch reports changes in a few directories: with inotify on
// Linux, and by looking at them at a fixed interval elsewhere. It is the
// small part of a file-watching library that agentmail needs (the mailman
// watches the mailboxes and the state file, a waiting receive its own
// mailbox), written on the standard library so that the binary depends on
// nothing else. WatchEntry shares one watcher of a directory among all the
// watches of its entries in a process.
package fswatch

// Event is one change reported by Watcher: Name is the path of the
// entry that changed, or of the watched directory itself. Created is set when
// the entry appeared (created or moved in), the one kind of change the
// watcher's user may treat apart, such as a directory to start watching.
type Event struct {
	Name    string
	Created bool
}
