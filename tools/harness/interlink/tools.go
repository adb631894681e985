//go:build tools

// Package tools pins interLink's API server and virtual kubelet commands so `go mod tidy` keeps
// their dependencies.
package tools

import (
	_ "github.com/interlink-hq/interlink/cmd/interlink"
	_ "github.com/interlink-hq/interlink/cmd/virtual-kubelet"
)
