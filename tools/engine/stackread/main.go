// Command stackread reads stack files as `pulumi config --json` reads them, many files per process: the
// differential test of the offline loader (tests/engine/test_engine_stack_differential.py) reads thousands of
// stack files, and the CLI costs about a second per file. It runs the CLI's own code for that command on a
// DIY backend (pkg/v3/cmd/pulumi/config, listConfig): workspace.LoadProjectStack, the refusal of an
// `environment:` (a DIY backend has no environments), ApplyProjectConfig, the blinding decrypter and the
// CLI's JSON entries. The test holds its output against the real CLI on a sample, so it cannot drift.
//
// Usage: stackread PULUMI_YAML STACK FILE...   One JSON line per FILE, in order:
// {"file": FILE, "config": {KEY: {"value": ..., "objectValue": ..., "secret": ...}}} as `pulumi config --json`
// prints it, or {"file": FILE, "error": "the CLI's error"}.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/pulumi/pulumi/pkg/v3/cmd/pulumi/ui"
	pkgWorkspace "github.com/pulumi/pulumi/pkg/v3/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag/colors"
	"github.com/pulumi/pulumi/sdk/v3/go/common/esc"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

// configValueJSON is the CLI's entry of `pulumi config --json` (pkg/v3/cmd/pulumi/config, configValueJSON).
type configValueJSON struct {
	Value       *string `json:"value,omitempty"`
	ObjectValue any     `json:"objectValue,omitempty"`
	Secret      bool    `json:"secret"`
}

type reading struct {
	File   string                     `json:"file"`
	Config map[string]configValueJSON `json:"config,omitempty"`
	Error  string                     `json:"error,omitempty"`
}

// read is listConfig's JSON branch for a stack file of a DIY backend, without --show-secrets or --open.
func read(ctx context.Context, sink diag.Sink, project *workspace.Project, stack, path string) (
	map[string]configValueJSON, error,
) {
	ps, err := workspace.LoadProjectStack(sink, project, path)
	if err != nil {
		return nil, err
	}
	if len(ps.EnvironmentBytes()) != 0 { // checkStackEnv on a backend without environments
		return nil, fmt.Errorf("backend file does not support environments; Pulumi ESC environments require the " +
			"Pulumi Cloud backend, use `pulumi login` without arguments to log into the Pulumi Cloud backend")
	}
	cfg, err := ps.Config.Copy(config.NopDecrypter, config.NopEncrypter)
	if err != nil {
		return nil, fmt.Errorf("copying config: %w", err)
	}
	if err := pkgWorkspace.ApplyProjectConfig(ctx, stack, project, esc.Value{}, cfg, nil, nil); err != nil {
		return nil, err
	}
	var keys config.KeyArray
	for key := range cfg {
		keys = append(keys, key)
	}
	sort.Sort(keys)
	decrypted, err := cfg.Decrypt(config.NewBlindingDecrypter())
	if err != nil {
		return nil, fmt.Errorf("could not decrypt configuration values: %w", err)
	}
	values := make(map[string]configValueJSON)
	for _, key := range keys {
		entry := configValueJSON{Secret: cfg[key].Secure()}
		text := decrypted[key]
		entry.Value = &text
		if cfg[key].Object() {
			var obj any
			if err := json.Unmarshal([]byte(text), &obj); err != nil {
				return nil, err
			}
			entry.ObjectValue = obj
		}
		if cfg[key].Secure() {
			entry.Value = nil
			entry.ObjectValue = nil
		}
		values[key.String()] = entry
	}
	return values, nil
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: stackread PULUMI_YAML STACK FILE...")
		os.Exit(2)
	}
	project, err := workspace.LoadProject(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "stackread: %s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	sink := diag.DefaultSink(io.Discard, io.Discard, diag.FormatOptions{Color: colors.Never})
	ctx := context.Background()
	for _, path := range os.Args[3:] {
		out := reading{File: path}
		if values, err := read(ctx, sink, project, os.Args[2], path); err != nil {
			out.Error = err.Error()
		} else {
			out.Config = values
		}
		line, err := ui.MakeJSONString(out, false)
		if err != nil {
			line, _ = ui.MakeJSONString(reading{File: path, Error: "stackread: " + err.Error()}, false)
		}
		fmt.Println(line)
	}
}
