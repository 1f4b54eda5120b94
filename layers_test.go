package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ai-job-gateway/gateway"

// layers are the module's top-level folders, bottom to top
// (docs/architecture.md, The layers): a package may import its own layer
// and those below it. internal/ holds the foundation packages, which
// import no other layer; a folder's sub-packages (providers/internal,
// store/storetest, api/auth) take its layer.
var layers = []string{"internal", "providers", "policy", "store", "activities", "workflows", "app", "api", "cmd"}

// apiOrder orders the api layer inside: the error package, then the
// packages beside the handlers (auth, the dev identity provider, the
// generated client), then the handlers.
var apiOrder = []string{"api/apierror", "api/*", "api"}

// rank is a package's place in the order; ok is false for a folder that
// has no layer yet.
func rank(path string) (r int, ok bool) {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	top, _, _ := strings.Cut(rel, "/")
	layer := slices.Index(layers, top)
	if layer < 0 {
		return 0, false
	}
	sub := 0
	if top == "api" {
		switch {
		case rel == "api":
			sub = slices.Index(apiOrder, "api")
		case rel == "api/apierror" || strings.HasPrefix(rel, "api/apierror/"):
			sub = slices.Index(apiOrder, "api/apierror")
		default:
			sub = slices.Index(apiOrder, "api/*")
		}
	}
	return layer*len(apiOrder) + sub, true
}

type listedPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// listPackages is `go list -json ./...` of the module, with tags.
func listPackages(t *testing.T, tags string) []listedPackage {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-json", "-tags", tags, "./...")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestLayersPointDown fails when a package imports one of a higher layer,
// or sits in a folder that has no layer. It checks each package's imports
// and those of its in-package test files, which compile into it. External
// test packages (package x_test) are not checked: nothing can import one,
// so it adds no edge to the graph the layers describe, and some drive a
// package with the real collaborators of a higher layer (housekeeping's
// test claims rounds in a real store).
func TestLayersPointDown(t *testing.T) {
	t.Parallel()
	var problems []string
	seen := map[string]bool{}
	// The build tags that change a file set: the production build without
	// the dev server, and the fifth-service fixture.
	for _, tags := range []string{"", "nodev,fifthservice"} {
		for _, p := range listPackages(t, tags) {
			if p.ImportPath == module {
				continue // this test
			}
			from, ok := rank(p.ImportPath)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: its top-level folder has no layer; add it to layers in layers_test.go and to docs/architecture.md", p.ImportPath))
				continue
			}
			for _, imp := range slices.Concat(p.Imports, p.TestImports) {
				if !strings.HasPrefix(imp, module+"/") {
					continue
				}
				to, ok := rank(imp)
				problem := fmt.Sprintf("%s imports %s, of a higher layer", p.ImportPath, imp)
				if !ok || to <= from || seen[problem] {
					continue
				}
				seen[problem] = true
				problems = append(problems, problem)
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("imports must point down the layers %s (docs/architecture.md, The layers):\n%s",
			strings.Join(layers, " < "), strings.Join(problems, "\n"))
	}
}

// TestRankOrdersTheLayers pins the order the check relies on, including
// the parts of the api layer and the foundation below everything.
func TestRankOrdersTheLayers(t *testing.T) {
	t.Parallel()
	order := []string{"internal/jobs", "providers/internal/usage", "policy", "store/storetest", "activities",
		"workflows", "app/jobops", "api/apierror", "api/auth", "api", "cmd/gateway/internal/devtemporal"}
	for i := 1; i < len(order); i++ {
		below, _ := rank(module + "/" + order[i-1])
		above, _ := rank(module + "/" + order[i])
		if below >= above {
			t.Errorf("%s ranks %d, not below %s (%d)", order[i-1], below, order[i], above)
		}
	}
	same := [][2]string{{"internal/jobs", "internal/media"}, {"providers", "providers/openai"}, {"store", "store/internal/sqlitewrite"},
		{"app/jobops", "app/budgets"}, {"api/auth", "api/client"}, {"cmd/gateway", "cmd/gatewaybench"}}
	for _, pair := range same {
		a, _ := rank(module + "/" + pair[0])
		b, _ := rank(module + "/" + pair[1])
		if a != b {
			t.Errorf("%s (%d) and %s (%d) should share a layer", pair[0], a, pair[1], b)
		}
	}
	if _, ok := rank(module + "/scripts/tool"); ok {
		t.Error("a folder without a layer must not rank")
	}
}
