//go:build tools

// Package tools pins interLink's API server command so `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/interlink-hq/interlink/cmd/interlink"
