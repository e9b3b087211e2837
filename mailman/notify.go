package mailman

// fileOp is the kind of a change reported by fileWatcher.
type fileOp uint8

const (
	opCreate fileOp = 1 << iota
	opWrite
	opRemove
	opRename
)

// fileEvent is one change: Name is the path of the entry that changed, or
// of the watched directory itself.
type fileEvent struct {
	Name string
	Op   fileOp
}

// Has reports whether e includes op.
func (e fileEvent) Has(op fileOp) bool { return e.Op&op != 0 }
