package mailman

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"agentmail/mailbox"
	"agentmail/tmux"
)

// BenchmarkSendToRing measures the time from storing a message for a ready
// agent to the ring showing in the agent's pane, through real file watching
// and a real tmux server whose panes run cat. It reports the median, the
// 90th percentile and the maximum over b.N sends:
//
//	go test -run='^$' -bench=SendToRing -benchtime=20x ./mailman/
//
// The time until the ring shows is measured by polling capture-pane, so it
// includes up to one poll (a few milliseconds) too much.
func BenchmarkSendToRing(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			b.Fatalf("tmux is required when CI is set: %v", err)
		}
		b.Skipf("tmux not found: %v", err)
	}
	dir, err := os.MkdirTemp("", "mmb")
	if err != nil {
		b.Fatal(err)
	}
	sock := dir + "/s"
	tm := func(args ...string) string {
		cmd := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, "TMUX=") || strings.HasPrefix(kv, "TMUX_PANE=")
		})
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("tmux %q: %v", args, err)
		}
		return strings.TrimSuffix(string(out), "\n")
	}
	b.Cleanup(func() {
		exec.Command("tmux", "-S", sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	tm("-f", "/dev/null", "new-session", "-d", "-s", "proj", "-n", "alice", "cat")
	bob := tm("new-window", "-d", "-t", "proj:", "-n", "bob", "-P", "-F", "#{pane_id}", "cat")
	b.Setenv("TMUX", sock+",0,0")
	b.Setenv("TMUX_PANE", "")

	root := b.TempDir()
	st := mailbox.New(root)
	client := &tmux.Client{EnterDelay: 300 * time.Millisecond}
	sess, err := client.SessionOf(context.Background(), bob)
	if err != nil {
		b.Fatal(err)
	}
	m := &Mailman{Store: mailbox.New(root), Term: &Tmux{Client: client, Session: sess}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() { done <- m.Run(ctx, func() { close(started) }) }()
	<-started
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()

	rings := func() int {
		return strings.Count(tm("capture-pane", "-p", "-S", "-", "-t", bob), ringText)
	}
	var times []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		// The last ring ends (its Enter comes after a delay); bob reads his
		// mail, goes to work and comes back ready, which resets his
		// once-a-minute wait; then the system settles.
		time.Sleep(400 * time.Millisecond)
		for {
			msg, err := st.Receive(context.Background(), "bob", nil)
			if err != nil {
				b.Fatal(err)
			}
			if msg == nil {
				break
			}
		}
		if err := st.SetStatus(context.Background(), "bob", "work", bob); err != nil {
			b.Fatal(err)
		}
		if err := st.SetStatus(context.Background(), "bob", "ready", bob); err != nil {
			b.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		before := rings()
		b.StartTimer()

		start := time.Now()
		if _, err := st.Append(context.Background(), "alice", "bob", "ping"); err != nil {
			b.Fatal(err)
		}
		for rings() == before {
			if time.Since(start) > 5*time.Second {
				b.Fatalf("no ring within 5s; before %d; pane:\n%s", before, tm("capture-pane", "-p", "-S", "-", "-t", bob))
			}
			time.Sleep(2 * time.Millisecond)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(times[len(times)/2]), "ms-p50")
	b.ReportMetric(ms(times[len(times)*9/10]), "ms-p90")
	b.ReportMetric(ms(times[len(times)-1]), "ms-max")
	b.Logf("send to ring, %d sends, sorted: %v", len(times), times)
}
