module agentmail

go 1.26.8

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/rogpeppe/go-internal v1.14.1 // indirect
)
