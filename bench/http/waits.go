package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// waits holds n receives waiting at once on one server, spread over the
// agents, none of which has mail, and reports what the server holds while
// they wait and after they end: memory, threads and descriptors.
func waits(srv *server, p *project, n int, wait time.Duration) {
	fmt.Printf("%d receives waiting at once (timeout_seconds %g), spread over %d agents:\n", n, wait.Seconds(), len(p.agents))
	srv.resources("  before")
	agents := make([]*agent, len(p.agents))
	for i, w := range p.agents {
		agents[i] = srv.agent(w)
		agents[i].initialize()
		// Mail left by the runs before is taken first, so that every
		// receive waits.
		for {
			text, err := agents[i].call(toolCall("receive", map[string]any{}))
			if err != nil || strings.HasPrefix(text, "No unread") {
				break
			}
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	timedOut, failed := 0, 0
	kinds := map[string]int{}
	start := time.Now()
	for i := range n {
		a := agents[i%len(agents)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"w%d","method":"tools/call","params":{"name":"receive","arguments":{"timeout_seconds":%g}}}`, i, wait.Seconds())
			_, b, err := a.post(body)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && strings.Contains(string(b), `"timed_out":true`):
				timedOut++
			case err != nil:
				failed++
				kinds[errorKind(err)]++
			default:
				failed++
				kinds[errorKind(fmt.Errorf("%s", b))]++
			}
		}()
	}
	time.Sleep(wait / 2)
	srv.resources("  while they wait")
	wg.Wait()
	fmt.Printf("  %d timed out as asked and %d failed, %v after the first was sent\n", timedOut, failed, time.Since(start).Round(time.Millisecond))
	for k, n := range kinds {
		fmt.Printf("    %d× %s\n", n, k)
	}
	time.Sleep(time.Second)
	srv.resources("  a second after they ended")
}

// resources prints what the server holds: resident memory, threads, open
// descriptors and inotify instances among them.
func (s *server) resources(when string) {
	pid := s.cmd.Process.Pid
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	inotify := 0
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == "anon_inode:inotify" {
			inotify++
		}
	}
	fmt.Printf("%s: RSS %.1f MB, %d threads, %d descriptors (%d inotify)\n",
		when, float64(s.procStatus("VmRSS"))/(1<<20), s.threads(), len(fds), inotify)
}

// threads returns the server's thread count.
func (s *server) threads() int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(rest))
			return n
		}
	}
	return -1
}
