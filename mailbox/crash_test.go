//go:build unix

package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestCrashSafety runs sender, receiver and status-writer processes against
// one project and kills them with SIGKILL at random moments, hundreds of
// times, restarting each one it kills. A sender logs a message's id only
// after Append returned; a receiver logs an id only after Receive returned
// it. Each log line is one write on a file opened with O_APPEND, so a log
// never holds a line for something that did not happen, but may miss the
// last thing a killed process did. It may also hold the start of that
// line: Linux ends a write to a file early, between pages, for a SIGKILL.
// So each line carries its body's length, a line that is cut short is
// dropped, at most one per kill of its process, and a process ends the
// cut line of the one before it before it writes its own.
//
// A "tearer" process plays a writer that dies in the middle of a line (a
// crash of another tool, or a power loss): under the mailbox lock it writes
// a message line in three pieces with pauses between them, so that killing
// it leaves a torn fragment. The Go senders cannot leave one, because Append
// writes a line with a single write.
//
// What is asserted, once every process is dead:
//
//   - The mailbox holds complete lines, each either a valid message line
//     (which the earlier tool's decoder reads too) or a torn fragment: a
//     proper prefix of a JSON object line that starts like a message line,
//     on which encoding/json reports only an unexpected end of input. A
//     message glued to garbage matches neither and fails the test. After
//     the last newline there may be one such fragment or one complete
//     message without its newline (a torn last line). There are no more
//     fragments than kills of the tearer and the senders.
//   - No id appears on two valid lines, and every acknowledged send is
//     stored on exactly one valid line, with its body.
//   - No id was delivered twice across all receivers, and every delivered
//     id is a message marked read in the file.
//   - A message marked read that no receiver logged was lost by a receiver
//     killed between Receive and its log write: there are at most as many
//     as receiver kills.
//   - Unread counts exactly the unread lines, and a fresh receiver then
//     delivers exactly those, in file order, changing nothing but their
//     flags; with its cursor removed, a receive finds nothing more and
//     warns exactly once per fragment.
//   - A new message appended after the crashes is delivered next (after
//     the torn last line, when that was a whole message without its
//     newline: Append ends it, and it is a message from then on).
//   - An unlocked reader of recipients.jsonl, reading all along while
//     status writers were killed, saw every entry complete in every read.
//   - The processes reported nothing on stderr but warnings about
//     malformed and torn lines.
//
// Under -short it kills 40 times instead of 300.
func TestCrashSafety(t *testing.T) {
	targetKills, budget := 300, 60*time.Second
	if testing.Short() {
		targetKills, budget = 40, 15*time.Second
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("MAILBOX_CRASH_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("MAILBOX_CRASH_SEED: %v", err)
		}
	}
	t.Logf("seed %d (set MAILBOX_CRASH_SEED to repeat the kill schedule)", seed)
	rnd := rand.New(rand.NewPCG(seed, seed))

	h := &crashHarness{t: t, dir: t.TempDir(), deadline: time.Now().Add(budget + time.Minute)}
	s, w := New(filepath.Join(h.dir, "root")), &warnings{}
	s.Warnf = w.warnf
	if err := os.MkdirAll(s.MailboxDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range crashStateNames {
		if err := s.SetStatus(context.Background(), name, StatusReady, ""); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var readerWG sync.WaitGroup
	var stateReads atomic.Int64
	readerWG.Go(func() { h.readStates(s, stop, &stateReads) })
	stopReader := sync.OnceFunc(func() {
		close(stop)
		readerWG.Wait()
	})
	defer stopReader() // Also when the test fails half way.

	for i, role := range []string{"sender", "sender", "sender", "tearer", "receiver", "receiver", "receiver", "status"} {
		h.slots = append(h.slots, &crashSlot{role: role, id: i})
	}
	defer h.killAll() // Also when the test fails half way.
	for _, sl := range h.slots {
		h.start(sl)
	}

	start := time.Now()
	end := start.Add(budget)
	kills := 0
	for kills < targetKills && time.Now().Before(end) && !t.Failed() {
		time.Sleep(time.Duration(rnd.IntN(12_000)) * time.Microsecond)
		h.checkAlive()
		sl := h.slots[rnd.IntN(len(h.slots))]
		select {
		case <-sl.proc.ready:
		default:
			continue // Still starting: a kill now would test nothing.
		}
		h.kill(sl)
		h.start(sl)
		kills++
	}
	// Stop the receivers first, so that the final drain has mail to do.
	for _, sl := range h.slots {
		if sl.role == "receiver" {
			h.kill(sl)
		}
	}
	time.Sleep(100 * time.Millisecond)
	h.checkAlive()
	for _, sl := range h.slots {
		if sl.proc != nil {
			h.kill(sl)
		}
	}
	stopReader()
	elapsed := time.Since(start)
	if t.Failed() {
		return
	}

	killsOf := map[string]int{}
	for _, sl := range h.slots {
		killsOf[sl.role] += sl.kills
	}
	if total := killsOf["sender"] + killsOf["tearer"] + killsOf["receiver"] + killsOf["status"]; total < targetKills/4 {
		t.Errorf("only %d kills in %v: the run did not exercise crashes", total, elapsed.Round(time.Millisecond))
	}

	acked := map[string]string{}     // id → body, from senders and the tearer
	delivered := map[string]string{} // id → body, from receivers
	for _, sl := range h.slots {
		entries := h.readLog(sl)
		switch sl.role {
		case "sender", "tearer":
			for _, e := range entries {
				if _, dup := acked[e.id]; dup {
					t.Errorf("id %s acknowledged twice", e.id)
				}
				acked[e.id] = e.body
			}
		case "receiver":
			for _, e := range entries {
				if _, dup := delivered[e.id]; dup {
					t.Errorf("id %s (%.20q) delivered twice", e.id, e.body)
				}
				delivered[e.id] = e.body
			}
		}
	}
	h.checkStderr()

	path := s.MailboxPath("bob")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mb := analyzeCrashMailbox(t, before)
	if writerKills := killsOf["tearer"] + killsOf["sender"]; mb.fragments > writerKills {
		t.Errorf("%d torn fragments, more than the %d kills of writers", mb.fragments, writerKills)
	}
	byID := map[string]crashLine{}
	for _, l := range mb.valid {
		if _, dup := byID[l.m.ID]; dup {
			t.Errorf("id %s is stored on two lines", l.m.ID)
		}
		byID[l.m.ID] = l
	}
	for id, body := range acked {
		l, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("acknowledged message %s (%.20q) is not stored", id, body)
		case l.m.Message != body:
			t.Errorf("acknowledged message %s is stored as %.20q; want %.20q", id, l.m.Message, body)
		}
	}
	if unacked := len(byID) - len(acked); unacked > killsOf["sender"]+killsOf["tearer"] {
		t.Errorf("%d stored messages were never acknowledged, more than the writer kills", unacked)
	}
	for id, body := range delivered {
		l, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("delivered message %s (%.20q) is not stored", id, body)
		case !l.m.ReadFlag:
			t.Errorf("delivered message %s is still unread", id)
		case l.m.Message != body:
			t.Errorf("delivered message %s had body %.20q; stored %.20q", id, body, l.m.Message)
		}
	}
	var unread []crashLine
	lost := 0
	for _, l := range mb.valid {
		if !l.m.ReadFlag {
			unread = append(unread, l)
		} else if _, ok := delivered[l.m.ID]; !ok {
			lost++ // Marked read by a receiver killed before it logged.
		}
	}
	if lost > killsOf["receiver"] {
		t.Errorf("%d messages are marked read but were never delivered, more than the %d receiver kills", lost, killsOf["receiver"])
	}
	if t.Failed() {
		return
	}

	// A fresh receiver finds exactly the unread lines, in order.
	wantUnread(t, s, "bob", len(unread))
	want := bytes.Clone(before)
	for i, l := range unread {
		got, err := s.Receive(context.Background(), "bob", nil)
		if err != nil || got == nil {
			t.Fatalf("drain %d of %d: %+v, %v", i, len(unread), got, err)
		}
		if got.ID != l.m.ID || got.Message != l.m.Message {
			t.Fatalf("drain %d delivered %s; want %s, the next unread line", i, got.ID, l.m.ID)
		}
		copy(want[l.off+int64(l.flagOff):], flipTrue)
	}
	wantNoMessage(t, s, "bob")
	if after := readFile(t, path); after != string(want) {
		t.Error("the drain changed more than the flags of the lines it delivered")
	}
	for _, msg := range w.take() {
		if !strings.HasPrefix(msg, "skipping malformed line at byte ") && !strings.HasPrefix(msg, "skipping torn last line at byte ") {
			t.Errorf("drain warned %q", msg)
		}
	}

	// Without the cursor, a full scan finds nothing either, and reports
	// each damaged line once.
	if err := s.removeCursor("bob"); err != nil {
		t.Fatal(err)
	}
	wantNoMessage(t, s, "bob")
	wantWarnings := mb.fragments
	if mb.tornTail {
		wantWarnings++
	}
	if msgs := w.take(); len(msgs) != wantWarnings {
		t.Errorf("a full scan gave %d warnings; want %d (%d fragments, torn tail %v): %q", len(msgs), wantWarnings, mb.fragments, mb.tornTail, msgs)
	}

	// The mailbox keeps working: a new message is delivered next. Append
	// ends a torn last line first; when that line is a whole message that
	// only lacked its newline, it is a message from then on, delivered
	// first (it was never acknowledged, like a message stored by a sender
	// killed before it logged).
	next := mustAppend(t, s, "alice", "bob", "after the crashes")
	if mb.tailMsg != nil {
		if got := mustReceive(t, s, "bob"); got.ID != mb.tailMsg.ID {
			t.Errorf("after the crashes got %+v; want the former torn last line %s", got, mb.tailMsg.ID)
		}
	}
	if got := mustReceive(t, s, "bob"); got.ID != next.ID {
		t.Errorf("after the crashes got %+v; want the new message", got)
	}
	wantNoMessage(t, s, "bob")
	w.take()

	states, err := s.States(context.Background())
	if err != nil || len(states) != len(crashStateNames) {
		t.Errorf("States() = %+v, %v", states, err)
	}
	wantNoWarnings(t, w)
	tmps, _ := filepath.Glob(filepath.Join(s.Dir(), ".tmp-*"))
	t.Logf("%v: kills %v; %d lines, %d valid, %d torn fragments, torn tail %v (a whole message %v); %d acknowledged, %d delivered, %d lost with a killed receiver, %d drained; %d unlocked reads of recipients.jsonl; %d temporary files left by killed status writers",
		elapsed.Round(time.Millisecond), killsOf, mb.lines, len(mb.valid), mb.fragments, mb.tornTail, mb.tailMsg != nil,
		len(acked), len(delivered), lost, len(unread), stateReads.Load(), len(tmps))
}

// crashStateNames are the entries the status writers keep rewriting.
var crashStateNames = []string{"agent0", "agent1", "agent2", "agent3"}

// The environment of a crash child process.
const (
	crashRoleEnv = "MAILBOX_CRASH_ROLE" // sender, tearer, receiver or status
	crashDirEnv  = "MAILBOX_CRASH_DIR"  // holds root/ and the logs
	crashArgEnv  = "MAILBOX_CRASH_ARG"  // "<slot> <generation> <parent pid> <deadline in Unix ns>"
)

// TestCrashChild is not a test: it is the body of the processes that
// TestCrashSafety starts and kills. They loop until killed, until their
// parent is gone or until a deadline.
func TestCrashChild(t *testing.T) {
	role := os.Getenv(crashRoleEnv)
	if role == "" {
		t.Skip("a helper process of TestCrashSafety")
	}
	os.Exit(crashChild(role))
}

func crashChild(role string) int {
	dir := os.Getenv(crashDirEnv)
	var slot, gen, ppid int
	var deadline int64
	if _, err := fmt.Sscan(os.Getenv(crashArgEnv), &slot, &gen, &ppid, &deadline); err != nil {
		fmt.Fprintln(os.Stderr, "bad", crashArgEnv, err)
		return 1
	}
	s := New(filepath.Join(dir, "root"))
	s.Warnf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	logf, err := os.OpenFile(crashLogPath(dir, slot), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The process killed before this one may have left its last line cut:
	// it is ended as Append ends a torn mailbox line.
	fi, err := logf.Stat()
	var nl []byte
	if err == nil {
		nl, err = endTornLine(logf, fi.Size(), nil)
	}
	if err == nil && len(nl) > 0 {
		_, err = logf.Write(nl)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// One write a line, on O_APPEND, with the body's length, by which
	// readLog knows a line that a kill cut short.
	report := func(id, body string) error {
		_, err := logf.WriteString(id + " " + strconv.Itoa(len(body)) + " " + body + "\n")
		return err
	}
	alive := func() bool { return os.Getppid() == ppid && time.Now().UnixNano() < deadline }
	// A body that varies in length, so that lines straddle page
	// boundaries, and that holds text the line scanner must not trip on.
	body := func(seq int) string {
		return fmt.Sprintf(`%c%d.%d.%d <&> "read_flag":false \ é %s`, role[0], slot, gen, seq, strings.Repeat("x", rand.IntN(400)))
	}
	os.Stdout.WriteString("ready\n")

	switch role {
	case "sender":
		for seq := 0; alive(); seq++ {
			b := body(seq)
			m, err := s.Append(context.Background(), "alice", "bob", b)
			if err == nil {
				err = report(m.ID, b)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "sender:", err)
				return 1
			}
			time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		}
	case "tearer":
		for seq := 0; alive(); seq++ {
			b := body(seq)
			id := uuid.Must(uuid.NewV7()).String()
			err := tornAppend(s, Message{ID: id, From: "carol", To: "bob", Message: b, CreatedAt: time.Now()})
			if err == nil {
				err = report(id, b)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "tearer:", err)
				return 1
			}
		}
	case "receiver":
		for alive() {
			m, err := s.Receive(context.Background(), "bob", nil)
			if err == nil && m != nil {
				err = report(m.ID, m.Message)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "receiver:", err)
				return 1
			}
			time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		}
	case "status":
		statuses := []string{StatusReady, StatusWork, StatusOffline}
		for i := 0; alive(); i++ {
			name := crashStateNames[rand.IntN(len(crashStateNames))]
			if err := s.SetStatus(context.Background(), name, statuses[rand.IntN(3)], "%"+strconv.Itoa(i)); err != nil {
				fmt.Fprintln(os.Stderr, "status:", err)
				return 1
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown role", role)
		return 1
	}
	return 0
}

// tornAppend appends m to bob's mailbox the way Append does, under the
// lock and after ending a torn last line, but in three writes with pauses
// between them, so that a kill can cut the line.
func tornAppend(s *Store, m Message) error {
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	f, fi, err := openLocked(context.Background(), s.MailboxPath("bob"), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if line, err = endTornLine(f.File, fi.Size(), line); err != nil {
		return err
	}
	a := 1 + rand.IntN(len(line)-1)
	b := a + rand.IntN(len(line)-a)
	for i, piece := range [][]byte{line[:a], line[a:b], line[b:]} {
		if i > 0 {
			time.Sleep(time.Duration(rand.IntN(800)) * time.Microsecond)
		}
		if _, err := f.Write(piece); err != nil {
			return err
		}
	}
	return nil
}

func crashLogPath(dir string, slot int) string {
	return filepath.Join(dir, fmt.Sprintf("log-%d", slot))
}

func crashErrPath(dir string, slot int) string {
	return filepath.Join(dir, fmt.Sprintf("stderr-%d", slot))
}

// crashHarness starts, kills and restarts the child processes.
type crashHarness struct {
	t        *testing.T
	dir      string
	deadline time.Time // after which children stop by themselves
	slots    []*crashSlot
}

// crashSlot is one role that is kept running: a new process, a new
// generation, after each kill.
type crashSlot struct {
	role  string
	id    int
	gen   int
	kills int
	proc  *crashProc
}

type crashProc struct {
	cmd   *exec.Cmd
	ready chan struct{} // closed when the process wrote its first byte
	done  chan struct{} // closed when it was waited for
}

// readySignal closes a channel on the first write of a child's stdout.
type readySignal struct {
	once sync.Once
	ch   chan struct{}
}

func (r *readySignal) Write(p []byte) (int, error) {
	r.once.Do(func() { close(r.ch) })
	return len(p), nil
}

func (h *crashHarness) start(sl *crashSlot) {
	sl.gen++
	errf, err := os.OpenFile(crashErrPath(h.dir, sl.id), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		h.t.Fatal(err)
	}
	defer errf.Close() // The child has its own copy.
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
	cmd.Env = append(os.Environ(),
		crashRoleEnv+"="+sl.role,
		crashDirEnv+"="+h.dir,
		fmt.Sprintf("%s=%d %d %d %d", crashArgEnv, sl.id, sl.gen, os.Getpid(), h.deadline.UnixNano()))
	p := &crashProc{cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	cmd.Stdout = &readySignal{ch: p.ready}
	cmd.Stderr = errf
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	sl.proc = p
}

// kill sends SIGKILL to the slot's process and waits for it; a process that
// had ended by itself fails the test.
func (h *crashHarness) kill(sl *crashSlot) {
	p := sl.proc
	sl.proc = nil
	p.cmd.Process.Kill()
	<-p.done
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		h.t.Errorf("%s %d (generation %d) ended by itself: %v\n%s", sl.role, sl.id, sl.gen, p.cmd.ProcessState, h.stderrOf(sl))
	}
	sl.kills++
}

// checkAlive fails the test at once when a child ended by itself.
func (h *crashHarness) checkAlive() {
	for _, sl := range h.slots {
		if sl.proc == nil {
			continue
		}
		select {
		case <-sl.proc.done:
			h.t.Fatalf("%s %d (generation %d) ended by itself: %v\n%s", sl.role, sl.id, sl.gen, sl.proc.cmd.ProcessState, h.stderrOf(sl))
		default:
		}
	}
}

// killAll kills what is still running, without counting or checking.
func (h *crashHarness) killAll() {
	for _, sl := range h.slots {
		if sl.proc != nil {
			sl.proc.cmd.Process.Kill()
			<-sl.proc.done
			sl.proc = nil
		}
	}
}

func (h *crashHarness) stderrOf(sl *crashSlot) string {
	b, _ := os.ReadFile(crashErrPath(h.dir, sl.id))
	return string(b)
}

// checkStderr allows only warnings about damaged lines on the children's
// stderr: anything else is an error, a panic or a data race report.
func (h *crashHarness) checkStderr() {
	for _, sl := range h.slots {
		for _, l := range strings.Split(h.stderrOf(sl), "\n") {
			if l != "" && !strings.HasPrefix(l, "skipping malformed line at byte ") && !strings.HasPrefix(l, "skipping torn last line at byte ") {
				h.t.Errorf("%s %d wrote on stderr: %s", sl.role, sl.id, l)
			}
		}
	}
}

type crashLogEntry struct{ id, body string }

// readLog reads a slot's log. A line that a kill cut short (its body is
// shorter than the length it gives, or it has no newline) is dropped; there
// may be one for each kill of the slot's processes.
func (h *crashHarness) readLog(sl *crashSlot) []crashLogEntry {
	data, err := os.ReadFile(crashLogPath(h.dir, sl.id))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	var entries []crashLogEntry
	cut := 0
	for line := range bytes.Lines(data) {
		l, whole := strings.CutSuffix(string(line), "\n")
		id, rest, ok := strings.Cut(l, " ")
		n, body, ok2 := strings.Cut(rest, " ")
		size, err := strconv.Atoi(n)
		switch {
		case ok && ok2 && err == nil && len(body) > size:
			// Lines glued together: a cut one was not ended.
			h.t.Errorf("%s %d: bad log line %q", sl.role, sl.id, line)
		case !ok || !ok2 || err != nil || len(body) < size || !whole:
			cut++
		default:
			entries = append(entries, crashLogEntry{id, body})
		}
	}
	if cut > sl.kills {
		h.t.Errorf("%s %d: %d log lines cut short, more than the %d kills", sl.role, sl.id, cut, sl.kills)
	}
	return entries
}

// readStates reads recipients.jsonl without a lock, as the earlier tool's
// daemon does, until stop is closed: every read must hold every entry,
// complete.
func (h *crashHarness) readStates(s *Store, stop <-chan struct{}, reads *atomic.Int64) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond):
		}
		data, err := os.ReadFile(s.StatesPath())
		if err != nil {
			h.t.Errorf("reading recipients.jsonl: %v", err)
			return
		}
		reads.Add(1)
		seen := map[string]bool{}
		for l := range bytes.Lines(data) {
			st, err := parseState(bytes.TrimSuffix(l, []byte("\n")))
			var old oldState
			if err == nil {
				err = json.Unmarshal(l, &old)
			}
			if err != nil || !bytes.HasSuffix(l, []byte("\n")) {
				h.t.Errorf("an unlocked read of recipients.jsonl saw the line %q (%v)", l, err)
				return
			}
			seen[st.Recipient] = true
		}
		if len(seen) != len(crashStateNames) {
			h.t.Errorf("an unlocked read of recipients.jsonl saw %d entries:\n%s", len(seen), data)
			return
		}
	}
}

// crashLine is a valid message line of the mailbox.
type crashLine struct {
	m       Message
	off     int64 // of the line in the file
	flagOff int   // of its read_flag value in the line
}

type crashMailbox struct {
	lines     int // complete lines
	valid     []crashLine
	fragments int  // complete lines that are torn fragments
	tornTail  bool // the file ends with a fragment or a line without newline
	// tailMsg is the torn last line when it is a whole unread message
	// line that only lacks its newline.
	tailMsg *Message
}

// analyzeCrashMailbox checks that every line of data is a valid message or a
// torn fragment (see TestCrashSafety) and sorts them out.
func analyzeCrashMailbox(t *testing.T, data []byte) crashMailbox {
	t.Helper()
	var mb crashMailbox
	var off int64
	for len(data) > 0 {
		line, rest, complete := bytes.Cut(data, []byte("\n"))
		if !complete {
			mb.tornTail = true
			m, _, err := parseLine(line)
			switch {
			case err == nil && !m.ReadFlag:
				mb.tailMsg = &m
			case err == nil:
				t.Errorf("the last line, without newline, is marked read: %q", line)
			case !isTornFragment(line):
				t.Errorf("the last line, without newline, is neither a message nor a torn fragment: %q", line)
			}
			break
		}
		mb.lines++
		if m, flagOff, err := parseLine(line); err == nil {
			var old oldMessage
			if err := json.Unmarshal(line, &old); err != nil {
				t.Errorf("the earlier tool cannot read line %d: %v", mb.lines, err)
			}
			mb.valid = append(mb.valid, crashLine{m: m, off: off, flagOff: flagOff})
		} else if isTornFragment(line) {
			mb.fragments++
		} else {
			t.Errorf("line %d is neither a message nor a torn fragment (%v): %q", mb.lines, err, line)
		}
		off += int64(len(line)) + 1
		data = rest
	}
	return mb
}

// isTornFragment reports whether b is a proper prefix of a message line: it
// starts like one (or is a prefix of that start), and encoding/json finds no
// error in it but an unexpected end of input, before any complete value.
func isTornFragment(b []byte) bool {
	start := []byte(`{"id":"`)
	if len(b) == 0 || !bytes.HasPrefix(b, start) && !bytes.HasPrefix(start, b) {
		return false
	}
	var v any
	return json.NewDecoder(bytes.NewReader(b)).Decode(&v) == io.ErrUnexpectedEOF
}

// TestCrashReadLog: readLog drops the lines that kills cut short, whether
// the next process ended them or the last process left one without its
// newline, and keeps the whole ones around them.
func TestCrashReadLog(t *testing.T) {
	h := &crashHarness{t: t, dir: t.TempDir()}
	sl := &crashSlot{role: "receiver", id: 0, kills: 3}
	log := "a 3 abc\n" +
		"b 5 ab\n" + // cut in the body, ended by the next process
		"c" + "\n" + // cut in the id
		"d 2 de\n" +
		"e 4 efgh" // cut before its newline
	if err := os.WriteFile(crashLogPath(h.dir, sl.id), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got := h.readLog(sl)
	want := []crashLogEntry{{"a", "abc"}, {"d", "de"}}
	if !slices.Equal(got, want) {
		t.Errorf("readLog = %q; want %q", got, want)
	}
}
