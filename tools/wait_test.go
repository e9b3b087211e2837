package tools_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"agentmail/mailbox"
	"agentmail/tmux"
	"agentmail/tools"
)

// pair is alice's and bob's services on one store.
func pair(t *testing.T) (alice, bob *tools.Service, st *mailbox.Store) {
	t.Helper()
	st = mailbox.New(t.TempDir())
	wins := []tmux.Window{window(0, "alice"), window(1, "bob")}
	alice = &tools.Service{Store: st, Term: &sessionTerm{Self: wins[0], Windows: wins}}
	bob = &tools.Service{Store: st, Term: &sessionTerm{Self: wins[1], Windows: wins}}
	return alice, bob, st
}

// TestReceiveWaitsForMail checks that a waiting receive returns the
// message sent while it waits, long before its time is up.
func TestReceiveWaitsForMail(t *testing.T) {
	alice, bob, _ := pair(t)
	ctx := context.Background()
	go func() {
		time.Sleep(100 * time.Millisecond)
		if _, err := alice.Send(ctx, "bob", "are you there?", ""); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	m, err := bob.Receive(ctx, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m == nil || m.Message != "are you there?" {
		t.Fatalf("Receive = %+v, want the message", m)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the wait ended after %v, not when the message came", d)
	}
}

// TestReceiveWaitTimesOut checks that a wait with no mail ends when its
// time is up, with no message and no error, and that mail already stored
// is returned at once.
func TestReceiveWaitTimesOut(t *testing.T) {
	alice, bob, _ := pair(t)
	ctx := context.Background()
	start := time.Now()
	m, err := bob.Receive(ctx, 200*time.Millisecond, nil)
	if m != nil || err != nil {
		t.Fatalf("Receive = %+v, %v; want nothing", m, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("the wait ended after %v, before its time", d)
	}
	if _, err := alice.Send(ctx, "bob", "stored first", ""); err != nil {
		t.Fatal(err)
	}
	m, err = bob.Receive(ctx, time.Minute, nil)
	if err != nil || m == nil || m.Message != "stored first" {
		t.Fatalf("Receive = %+v, %v; want the stored message", m, err)
	}
	if _, err := bob.Receive(ctx, tools.MaxWait+time.Second, nil); err == nil {
		t.Error("a wait over the maximum was accepted")
	}
}

// TestReceiveWaitCancelled checks that a waiter whose context ends takes
// nothing: the message sent afterwards stays for the next receive.
func TestReceiveWaitCancelled(t *testing.T) {
	alice, bob, _ := pair(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := bob.Receive(ctx, time.Minute, nil)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Receive = %v, want context.Canceled", err)
	}
	if _, err := alice.Send(context.Background(), "bob", "later", ""); err != nil {
		t.Fatal(err)
	}
	m, err := bob.Receive(context.Background(), 0, nil)
	if err != nil || m == nil || m.Message != "later" {
		t.Fatalf("Receive = %+v, %v; want the message the cancelled waiter left", m, err)
	}
}

// TestReceiveWaitersExactlyOnce has several waiters on one mailbox while
// messages arrive: each message goes to exactly one of them.
func TestReceiveWaitersExactlyOnce(t *testing.T) {
	alice, bob, _ := pair(t)
	const waiters, messages = 4, 40
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := bob.Receive(ctx, time.Minute, nil)
				if err != nil {
					return
				}
				mu.Lock()
				got[m.Message]++
				n := len(got)
				mu.Unlock()
				if n == messages {
					cancel()
				}
			}
		}()
	}
	for i := range messages {
		if _, err := alice.Send(context.Background(), "bob", string(rune('A'+i%26))+string(rune('0'+i/26)), ""); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Error("not every message was received")
		cancel()
	}
	wg.Wait()
	for msg, n := range got {
		if n != 1 {
			t.Errorf("message %q received %d times", msg, n)
		}
	}
	if len(got) != messages {
		t.Errorf("%d messages received, want %d", len(got), messages)
	}
}

// TestUnannouncedReplaced checks that a wake hook's wait ends with
// ErrReplaced as soon as a newer one for the same agent starts, and that
// the newer one announces the next message.
func TestUnannouncedReplaced(t *testing.T) {
	alice, bob, st := pair(t)
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := bob.Unannounced(ctx, time.Minute, true, nil)
		first <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !st.Watching("bob") {
		if time.Now().After(deadline) {
			t.Fatal("the first wait never took its place")
		}
		time.Sleep(time.Millisecond)
	}
	second := make(chan []mailbox.Message, 1)
	go func() {
		ms, err := bob.Unannounced(ctx, time.Minute, true, nil)
		if err != nil {
			t.Error(err)
		}
		second <- ms
	}()
	select {
	case err := <-first:
		if !errors.Is(err, tools.ErrReplaced) {
			t.Fatalf("first wait = %v, want ErrReplaced", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first wait did not end when the second started")
	}
	m, err := alice.Send(ctx, "bob", "after", "")
	if err != nil {
		t.Fatal(err)
	}
	if ms := <-second; len(ms) != 1 || ms[0].ID != m.ID {
		t.Fatalf("second wait announced %v, want the message sent", ms)
	}
	if st.Watching("bob") {
		t.Error("Watching after both waits ended")
	}
}
