//go:build !linux

package tmux

import "syscall"

// controlAttr asks nothing of the system: only Linux can end a child
// with its parent (see control_linux.go). Elsewhere a control client
// left by a killed agentmail can stay attached (README, "MCP server").
func controlAttr() *syscall.SysProcAttr { return nil }
