package mailman

// fileEvent is one change reported by fileWatcher: Name is the path of the
// entry that changed, or of the watched directory itself. Created is set when
// the entry appeared (created or moved in), the one kind of change the
// mailman treats apart: a directory it must start watching.
type fileEvent struct {
	Name    string
	Created bool
}
