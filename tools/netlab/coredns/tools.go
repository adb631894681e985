//go:build tools

// Package tools pins CoreDNS's command (the module's root package) so that `go mod tidy` keeps
// its dependencies; tools/netlab/build.ts runs `go build github.com/coredns/coredns` here.
package tools

import (
	_ "github.com/coredns/coredns"
)
