package jsonrpc

import (
	"strconv"
	"testing"
)

// TestMaxFrameText checks the decimal MaxFrame that constant error texts use.
func TestMaxFrameText(t *testing.T) {
	if want := strconv.Itoa(MaxFrame); maxFrameText != want {
		t.Errorf("maxFrameText = %q, MaxFrame is %s", maxFrameText, want)
	}
}
