package mcp

import (
	"agentmail/jsonrpc"
	"agentmail/tools"
	"context"
	"errors"
	"io"
)

// The stdio transport: newline-delimited JSON-RPC on a byte stream, the
// one an assistant uses when it spawns "agentmail mcp". jsonrpc.Conn does
// the framing, ordering and cancellation; the protocol is the Server's.

// Serve answers MCP requests read from r on w until r ends or ctx is done.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	c := jsonrpc.NewConn(r, w, s.handle, jsonrpc.Options{
		Preempt:   s.preempt,
		MayDetach: mayDetach,
		// Batches exist only in 2025-03-26; every other revision and the
		// modern era send one message a line.
		Batch: func() bool { return s.negotiated() == "2025-03-26" },
		Logf:  s.logf,
		// Without its agent's pane there is nobody to answer.
		Abandon: func(cause error) bool { return errors.Is(cause, tools.ErrTmuxGone) },
	})
	s.conn = c
	defer s.stopSubscriptions()
	return c.Serve(ctx)
}

// preempt handles notifications/cancelled as soon as it is read, so that it
// reaches a request that is still queued or running. The cancelled request
// is never answered, in either era; a cancellation naming no request in
// progress is ignored.
func (s *Server) preempt(req *jsonrpc.Request) bool {
	if req.Method != "notifications/cancelled" {
		return false
	}
	// AppendMembers finds nothing in params that are absent or an array.
	var buf [4]jsonrpc.Member
	if id, ok := jsonrpc.LastMember(jsonrpc.AppendMembers(buf[:0], req.Params), "requestId"); ok {
		s.conn.Cancel(id)
	}
	return true
}
