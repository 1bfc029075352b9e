//go:build tools

// The Go module cadre builds the temporal CLI and the Temporal server from (src/worker/temporal-build.ts):
// its go.mod and go.sum pin both, as package-lock.json pins cadre's npm packages. The CLI 1.5.1 embeds
// server 1.29.1, so the three binaries built in one `go build` share the compilation of their packages.
// This file only names them, so that `go mod tidy` keeps them; it is never built.
package tools

import (
	_ "github.com/temporalio/cli/cmd/temporal"
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
