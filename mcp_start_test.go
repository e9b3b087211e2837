package main

import (
	"io"
	"strings"
	"testing"
)

// TestIdleReader: the server's background work starts at its second read
// of the input, when it has taken in what the first one brought, and only
// then.
func TestIdleReader(t *testing.T) {
	idle := 0
	r := &idleReader{r: strings.NewReader("ab"), idle: func() { idle++ }}
	buf := make([]byte, 1)
	for i, want := range []int{0, 1, 1, 1} {
		if _, err := r.Read(buf); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		if idle != want {
			t.Errorf("after read %d: idle called %d times; want %d", i+1, idle, want)
		}
	}
}
