package main

import (
	"fmt"
	"os/exec"
	"time"
)

// compare measures agentmail against another MCP server of the same four
// tools, typically the earlier agentmail, on this machine and in this run,
// through the legacy handshake that both speak. Each measurement alternates
// between the two servers, start by start and request by request, so that
// whatever else the machine does weighs on both alike. It prints one table:
// the median of each, and agentmail's figure as a share of the other's.
// The cold starts alternate with those of the floor program too (floor
// starts it), so that the share of the other's cold start that no Go
// program can go below is measured under the same conditions.
func compare(e *env, other string, floor func() *exec.Cmd, starts, pings, calls, rssCalls int) error {
	bins := [2]string{e.bin, other}
	fmt.Printf("comparison, legacy handshake, alternating between\n  A: %s (%s)\n  B: %s (%s)\n\n", bins[0], linkage(bins[0]), bins[1], linkage(bins[1]))
	var rows []row

	// Cold start.
	handshake := []string{initLine, initedLine, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n"}
	var cold [2][]time.Duration
	var floorCold []time.Duration
	for range starts {
		for i, bin := range bins {
			d, err := coldStart(e.commandFor(bin, "alice"), handshake, i == 1)
			if err != nil {
				return fmt.Errorf("%s: %w", bin, err)
			}
			cold[i] = append(cold[i], d)
		}
		d, err := coldStart(floor(), handshake, false)
		if err != nil {
			return fmt.Errorf("floor program: %w", err)
		}
		floorCold = append(floorCold, d)
	}
	rows = append(rows, row{"cold start to tools/list answered", median(cold[0]), median(cold[1])})

	// Steady state: two servers side by side.
	srv, err := e.startPair(bins)
	if err != nil {
		return err
	}
	defer srv[0].stop()
	defer srv[1].stop()
	// What each uses per second with nothing to do, measured over the
	// same two seconds, is taken off its CPU per request below.
	const idleFor = 2 * time.Second
	var idle [2]time.Duration
	var c0 [2]time.Duration
	for i, s := range srv {
		c, err := s.cpu()
		if err != nil {
			return err
		}
		c0[i] = c
	}
	time.Sleep(idleFor)
	for i, s := range srv {
		c, err := s.cpu()
		if err != nil {
			return err
		}
		idle[i] = time.Duration(float64(c-c0[i]) / idleFor.Seconds())
	}
	for _, r := range []struct{ name, line string }{
		{"ping", `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"},
		{"tools/list", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}` + "\n"},
	} {
		lat, cpu, err := alternate(srv, r.line, pings, idle)
		if err != nil {
			return err
		}
		rows = append(rows,
			row{r.name + " latency", median(lat[0]), median(lat[1])},
			row{r.name + " server CPU per request", cpu[0], cpu[1]})
	}

	// Tool calls; both servers are alice, so her mailbox holds mail for
	// every receive of both.
	if err := e.fill("alice", 2*calls); err != nil {
		return err
	}
	for _, c := range latencyCalls {
		lat, _, err := alternate(srv, c.line(), calls, idle)
		if err != nil {
			return err
		}
		rows = append(rows, row{"tools/call " + c.name, median(lat[0]), median(lat[1])})
	}

	// Memory: two fresh servers, the four tools in turn.
	mem, err := e.startPair(bins)
	if err != nil {
		return err
	}
	defer mem[0].stop()
	defer mem[1].stop()
	var rss0, rss100, rssN [2]int64
	for i, s := range mem {
		if rss0[i], err = s.rss(); err != nil {
			return err
		}
	}
	mix := toolMix()
	for n := range rssCalls {
		for _, s := range mem {
			if _, err := s.roundTrip(mix[n%len(mix)]); err != nil {
				return err
			}
		}
		if n+1 == 100 || n+1 == rssCalls {
			for i, s := range mem {
				r, err := s.rss()
				if err != nil {
					return err
				}
				if n+1 == 100 {
					rss100[i] = r
				} else {
					rssN[i] = r
				}
			}
		}
	}

	fmt.Printf("%-40s %12s %12s %8s\n", "median", "A", "B", "A/B")
	for _, r := range rows {
		fmt.Printf("%-40s %12v %12v %7.2fx\n", r.name, round(r.a), round(r.b), float64(r.a)/float64(r.b))
	}
	fl := median(floorCold)
	fmt.Printf("floor program's cold start in the same alternation: %v = %.2fx of B (answers its first two lines)\n",
		round(fl), float64(fl)/float64(median(cold[1])))
	for i, name := range []string{"A", "B"} {
		fmt.Printf("%s: RSS after initialize %s, after 100 calls %s, after %d calls %s (%+.2f MB since 100)\n",
			name, mb(rss0[i]), mb(rss100[i]), rssCalls, mb(rssN[i]), float64(rssN[i]-rss100[i])/(1<<20))
	}
	fmt.Println()
	return nil
}

// row is one line of the comparison table.
type row struct {
	name string
	a, b time.Duration
}

// alternate sends line to each server in turn, n times, after a warm-up,
// and returns each server's latencies and its CPU time per request less
// its idle share.
func alternate(srv [2]*server, line string, n int, idle [2]time.Duration) (lat [2][]time.Duration, cpu [2]time.Duration, err error) {
	for range min(n, 100) {
		for _, s := range srv {
			if _, err := s.roundTrip(line); err != nil {
				return lat, cpu, err
			}
		}
	}
	var c0 [2]time.Duration
	for i, s := range srv {
		if c0[i], err = s.cpu(); err != nil {
			return lat, cpu, err
		}
	}
	t0 := time.Now()
	for range n {
		for i, s := range srv {
			d, err := s.roundTrip(line)
			if err != nil {
				return lat, cpu, err
			}
			lat[i] = append(lat[i], d)
		}
	}
	wall := time.Since(t0)
	for i, s := range srv {
		c1, err := s.cpu()
		if err != nil {
			return lat, cpu, err
		}
		used := c1 - c0[i] - time.Duration(float64(idle[i])*wall.Seconds())
		cpu[i] = used / time.Duration(n)
	}
	return lat, cpu, nil
}

// toolMix is the four tool calls, in the order the memory measurements
// repeat them.
func toolMix() []string {
	var mix []string
	for _, c := range []toolCall{
		{"send", `{"recipient":"bob","message":"memory benchmark"}`},
		{"receive", `{}`},
		{"status", `{"status":"work"}`},
		{"list-recipients", `{}`},
	} {
		mix = append(mix, c.line())
	}
	return mix
}

// toolCall is one tools/call request.
type toolCall struct{ name, args string }

func (c toolCall) line() string {
	return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"` + c.name + `","arguments":` + c.args + `}}` + "\n"
}

// latencyCalls are the calls whose latency is measured, one tool each.
var latencyCalls = []toolCall{
	{"list-recipients", `{}`},
	{"status", `{"status":"ready"}`},
	{"send", `{"recipient":"bob","message":"benchmark message"}`},
	{"receive", `{}`},
}

// startPair starts a server of each binary with startReady.
func (e *env) startPair(bins [2]string) ([2]*server, error) {
	var srv [2]*server
	for i, bin := range bins {
		s, err := e.startReady(bin)
		if err != nil {
			if i == 1 {
				srv[0].stop()
			}
			return srv, err
		}
		srv[i] = s
	}
	return srv, nil
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }
