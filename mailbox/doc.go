// Package mailbox stores agentmail's messages and agent states on disk. It
// owns the .agentmail/ directory of a project and knows nothing of tmux or
// MCP.
//
// # Layout
//
// The layout is the one the earlier agentmail tool uses, so both tools can
// share a directory:
//
//	<root>/.agentmailignore          optional, user-written: one name a line
//	<root>/.agentmail/               0700
//	  mailboxes/<name>.jsonl         0600, messages to <name>, one JSON object a line
//	  recipients.jsonl               0600, one state entry a line
//	  recipients.lock                0600, serialises our writers of recipients.jsonl
//	  cursors/<name>                 0600, read cursor of a mailbox (a hint, see below)
//	  announced/<name>               0600, ids of unread mail a wake hook announced (Announce)
//	  watchers/<name>                0600, PID of the wake hook waiting, locked while it waits (StartWatcher)
//
// Each of these files is opened with OpenRegular (or its locking twin): a
// symbolic link in its place is not followed, a named pipe or a device is
// not waited on (unless another process holds a lock on it), and anything that is not a regular file is refused with a
// *NotRegularError that names it, so nothing is ever read or written through
// it. Each file in .agentmail must also have no other hard link (OpenOwn),
// or it is refused with a *HardLinkError: another name of the same file,
// in .agentmail or out of it, would be written through this one. Mailboxes
// lists neither kind of mailbox, so views of every mailbox, cleanup and
// the mailman pass it by. The mailboxes and cursors directories must be directories
// themselves, not symbolic links: each operation checks with os.Lstat
// before it opens, creates, renames, removes or lists anything in one, and
// refuses a mailboxes directory that is not one with a *NotDirError, while
// a cursors directory that is not one only makes the cursors ignored. The
// .agentmail directory itself may be a symbolic link.
//
// A message line has the keys id, from, to, message, read_flag and created_at,
// in that order, written by encoding/json in compact form. New ids are UUIDv7;
// created_at is RFC 3339 with nanoseconds in local time. A state line has the
// keys recipient, status, updated_at, notified_at, last_read_at (Unix
// milliseconds, left out when zero) and pane (the agent's tmux pane id, left
// out when empty).
//
// # Locks
//
// Every write of a mailbox holds an exclusive flock on the mailbox file
// itself, the lock the earlier tool takes; readers hold a shared flock. A
// mailbox can be replaced by a rename (only cleanup does that), so every
// locker checks after acquiring the lock that the path still names the inode
// it locked, and retries otherwise. A process that waited on the lock of a
// replaced or deleted mailbox therefore never writes into an orphaned inode.
//
// Our writers of recipients.jsonl serialise on recipients.lock, hold an
// exclusive flock on recipients.jsonl (which excludes the earlier tool's
// in-place rewrites), write a temporary file in .agentmail, fsync it and
// rename it over recipients.jsonl. Readers take a shared flock and read the
// whole file, so they never see it half-written. An earlier-tool writer that
// waits on the lock of recipients.jsonl while we rename it rewrites the old,
// unlinked file and so loses its own update: a status, never mail.
//
// # Receive
//
// A receive takes the exclusive lock of the mailbox, finds the oldest unread
// line and marks it read in place: the bytes "false" of its top-level
// read_flag value become "true " (the trailing space is JSON whitespace) in a
// single positioned write. The line stays valid JSON of the same length, so
// the earlier tool still reads it, and a receive never rewrites the mailbox.
// The value is located by walking the line's top-level members with
// encoding/json's Decoder, so text such as "read_flag":false inside a
// message body or a nested value cannot fool it, and with duplicate or
// differently cased keys the value overwritten is the one encoding/json
// reads. We flip by byte offset, not by id, so a duplicated id cannot make a
// message come back.
//
// To keep a receive's cost flat as the mailbox grows, a read cursor is kept
// in cursors/<name>: an offset O such that every line before O is read or
// malformed, the inode of the mailbox, and a fingerprint (length and FNV-64
// hash) of the line that ends at O. Under the mailbox lock, a receive checks
// that the inode matches and that the bytes ending at O still match the
// fingerprint; if anything is off (no cursor, garbage, O beyond the end of
// the file, or the file rewritten by the earlier tool or by cleanup) it scans
// from the start instead. It then reads forward from O through a bounded
// buffer, flips the first unread line and moves the cursor to the end of
// that line, or, when there is none, of the last line that is not blank
// (a blank line is no fingerprint: "\n" turns up at the same offset of a
// rewritten file as easily as not). The cursor is written with a plain
// small write after the flip; it is only a hint, and a cursor that is torn,
// stale or lost costs one full scan, never a wrong answer. (Only a rewrite
// by another program that puts a byte-identical line that is not blank at
// exactly the same offset of the same inode could mislead it.) A cursor
// file that is not a regular file, has another hard link, or cannot be
// opened, is ignored: the receive scans from the start, warns once, and
// neither writes the file nor replaces it. HasUnread looks with the same
// cursor under a shared lock, ignores an unusable one silently, and never
// writes anything.
//
// # Damaged lines
//
// A last line without a trailing newline is torn (a writer crashed in the
// middle of an append): it is never delivered, the cursor never moves past
// it, and a receive that reaches it reports it with one warning (so every
// receive does until the line is ended). Append checks the last byte of the
// file under the lock and writes a newline first when it is missing, so a
// new message is never glued to a torn fragment; the fragment then becomes a
// complete malformed line. A complete line that is not a JSON object, or has
// no top-level read_flag key, or whose read_flag is not a boolean, or that
// is unread but does not decode into a Message, is malformed: a receive
// skips it with one warning through Store.Warnf, it never blocks later
// messages, and it is never rewritten away (cleanup keeps it too). Blank
// lines are skipped silently. A line already marked read is decoded no
// further than its read_flag.
//
// # Crash safety and durability
//
// Append writes each line with one write call on a file opened with O_APPEND,
// then calls fdatasync, so a send that returned is stored even across a power
// loss; BenchmarkSyncCost and BenchmarkAppend measure what that costs. A
// failed or short write is truncated away under the lock, so a send stores one complete line or nothing. The read flip and the
// cursor are not synced: a process crash cannot lose them (the page cache
// survives it), and after a power loss a message received just before may be
// delivered once more, which is the safe direction. Rewrites
// (recipients.jsonl, cleanup of a mailbox) go through a synced temporary file
// and a rename, so a crash leaves either the old or the new file, never a
// mix, and never loses a stored message.
//
// A receive costs the same whatever the number of read messages before the
// cursor (BenchmarkReceive). Without a valid cursor it scans the whole file
// once, decoding the read_flag of every line (BenchmarkReceiveWithoutCursor).
//
// # Compatibility
//
// Lines written by the earlier tool are read as they are: 8-character ids,
// missing created_at (or "0001-01-01T00:00:00Z", which both mean "unknown"),
// \u003c-style escapes and unknown keys. Our lines differ only by the "true "
// spelling after a flip and by the optional "pane" key in state entries, and
// both parse with encoding/json into the earlier tool's types. Unknown keys of
// a state entry are kept when we rewrite it, and lines of recipients.jsonl
// that we cannot parse are kept verbatim. When the earlier tool marks a
// message read it rewrites the whole mailbox in place; our cursor notices the
// changed bytes and falls back to a full scan once. Cleanup replaces a
// mailbox by rename; an earlier-tool process that was waiting on that
// mailbox's lock at that very moment would append to the replaced file, so
// run cleanup while only this tool is active.
package mailbox
