module agentmail

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/google/uuid v1.6.0
	github.com/rogpeppe/go-internal v1.14.1
	github.com/tailscale/hujson v0.0.0-20260727124030-b80ff77dac4f
)

require (
	golang.org/x/sys v0.26.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
