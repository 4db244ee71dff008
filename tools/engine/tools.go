//go:build tools

// Package tools pins the Pulumi CLI that scripts/engine/build builds (go.mod, go.sum).
package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
