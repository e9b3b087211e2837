package mcp

import (
	"context"
	"io"

	"agentmail/jsonrpc"
	"agentmail/tools"
)

// ServeStdio serves the agent of svc on a byte stream of one message a
// line: the transport of a client that spawns "agentmail mcp".
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer, svc *tools.Service) error {
	ctx = WithAgent(ctx, func(context.Context) (*tools.Service, error) { return svc, nil })
	return s.Serve(ctx, Conn{Stream: jsonrpc.NewLineStream(r, w)})
}
