package tools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentmail/mailbox"
)

// The test binary doubles as an announcer process, so that announcers race
// across processes and not only goroutines.
const (
	announcerEnv     = "TOOLS_TEST_ANNOUNCER" // the project root
	announcerThreads = 3                      // goroutines of each announcer
)

func TestMain(m *testing.M) {
	if root := os.Getenv(announcerEnv); root != "" {
		os.Exit(announcerProcess(root))
	}
	os.Exit(m.Run())
}

// announcerProcess announces bob's mail from announcerThreads goroutines
// and prints each announced id on a line of its own, until the done file
// exists and nothing is left to announce.
func announcerProcess(root string) int {
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	errs := make(chan error, announcerThreads)
	for range announcerThreads {
		wg.Go(func() {
			errs <- announceUntilDone(mailbox.New(root), func(m mailbox.Message) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintln(out, m.ID)
			})
		})
	}
	wg.Wait()
	close(errs)
	if err := out.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// announceUntilDone announces bob's mail as a wake hook does, reporting
// each announced message to got, until the done file in st's root exists
// and an announce after that finds nothing new.
func announceUntilDone(st *mailbox.Store, got func(mailbox.Message)) error {
	s := &Service{Store: st}
	for {
		_, err := os.Stat(filepath.Join(st.Root, "done"))
		finished := err == nil // Before the announce: nothing is sent after it.
		fresh, err := s.announce(context.Background(), st, "bob", true, nil)
		if err != nil {
			return err
		}
		for _, m := range fresh {
			got(m)
		}
		if len(fresh) == 0 {
			if finished {
				return nil
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestAnnounceOnce sends messages to bob while announcer processes and
// goroutines announce them, as wake hooks do: each message must be
// announced exactly once, however many announce at the same time.
func TestAnnounceOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const (
		procs    = 3
		threads  = 3
		messages = 40
	)
	root := t.TempDir()
	st := mailbox.New(root)

	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range procs {
		var out, errOut bytes.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), announcerEnv+"="+root)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if errOut.Len() > 0 {
				t.Errorf("announcer: %s", errOut.Bytes())
			}
		})
		cmds = append(cmds, cmd)
		outs = append(outs, &out)
	}
	var mu sync.Mutex
	count := map[string]int{}
	var wg sync.WaitGroup
	for range threads {
		wg.Go(func() {
			if err := announceUntilDone(st, func(m mailbox.Message) {
				mu.Lock()
				defer mu.Unlock()
				count[m.ID]++
			}); err != nil {
				t.Error(err)
			}
		})
	}

	var sent []string
	for i := range messages {
		m, err := st.Append(context.Background(), "alice", "bob", fmt.Sprint("message ", i))
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, m.ID)
		time.Sleep(time.Duration(i%4) * 5 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(root, "done"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("announcer: %v", err)
		}
		for id := range strings.FieldsSeq(outs[i].String()) {
			count[id]++
		}
	}

	var total, twice int
	for _, id := range sent {
		n := count[id]
		total += n
		switch {
		case n == 0:
			t.Errorf("message %s was never announced", id)
		case n > 1:
			twice++
			t.Errorf("message %s was announced %d times", id, n)
		}
		delete(count, id)
	}
	for id := range count {
		t.Errorf("announced %s, which was never sent", id)
	}
	t.Logf("%d announcements of %d messages; %d announced more than once", total, messages, twice)
}
