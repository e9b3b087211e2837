package mailbox

import "github.com/google/uuid"

// newID returns a new message id: a UUID of version 7 (RFC 9562) in its
// 36-character text form. uuid.NewV7 keeps the ids it makes in one process
// strictly increasing, also when the clock is set back.
func newID() string {
	// NewV7 fails only when crypto/rand does, which crashes the program
	// instead of returning an error.
	return uuid.Must(uuid.NewV7()).String()
}
