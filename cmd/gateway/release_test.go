package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"sigs.k8s.io/yaml"
)

// latestRelease is the newest versioned section of CHANGELOG.md, as
// "1.2.3" (docs/operations.md, Releases).
func latestRelease(t *testing.T) string {
	t.Helper()
	changelog, err := os.ReadFile(filepath.Join("..", "..", "CHANGELOG.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$`).FindSubmatch(changelog)
	require.NotNil(t, m, "CHANGELOG.md has a versioned section: ## [X.Y.Z] - YYYY-MM-DD")
	version := string(m[1])
	require.Contains(t, string(changelog), "\n["+version+"]: https://github.com/ai-job-gateway/gateway/releases/tag/v"+version+"\n",
		"the section's heading links to its tag")
	return version
}

// TestReleaseNamesTheImages: the deployments in deploy/ run the image of
// the newest release in CHANGELOG.md, so a checkout of a tag deploys that
// tag's build.
func TestReleaseNamesTheImages(t *testing.T) {
	t.Parallel()
	version := latestRelease(t)
	deploy := filepath.Join("..", "..", "deploy")

	var kustomization struct {
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	data, err := os.ReadFile(filepath.Join(deploy, "k8s", "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &kustomization))
	require.Len(t, kustomization.Images, 1)
	require.Equal(t, version, kustomization.Images[0].NewTag, "deploy/k8s/kustomization.yaml")

	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	data, err = os.ReadFile(filepath.Join(deploy, "helm", "gateway", "Chart.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &chart))
	require.Equal(t, version, chart.AppVersion, "deploy/helm/gateway/Chart.yaml, the image tag by default")

	var compose struct {
		Services map[string]struct {
			Image string `json:"image"`
			Build *struct {
				Args map[string]string `json:"args"`
			} `json:"build"`
		} `json:"services"`
	}
	data, err = os.ReadFile(filepath.Join(deploy, "docker-compose.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &compose))
	gateways := 0
	for name, svc := range compose.Services {
		repository, tag, _ := strings.Cut(svc.Image, ":")
		if repository != "ai-job-gateway" && repository != "ai-job-gateway-dev" {
			continue
		}
		gateways++
		require.Equal(t, version, tag, "deploy/docker-compose.yaml, service %s", name)
		if svc.Build != nil {
			require.Equal(t, "v"+version, svc.Build.Args["VERSION"], "deploy/docker-compose.yaml, service %s: what its build prints", name)
		}
	}
	require.Equal(t, 4, gateways, "migrate, idp, api and worker")
}

// TestGoInstallable: go.mod has no replace or exclude directive, which
// `go install github.com/ai-job-gateway/gateway/cmd/gateway@version`
// refuses.
func TestGoInstallable(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	require.NoError(t, err)
	mod, err := modfile.Parse("go.mod", data, nil)
	require.NoError(t, err)
	require.Empty(t, mod.Replace, "go install …@version refuses a module with replace directives")
	require.Empty(t, mod.Exclude, "go install …@version refuses a module with exclude directives")
}

// TestBuildOfATagPrintsIt: a production build (make build-prod) of a
// checkout of the newest release's tag prints that release, and its
// commit unmodified.
func TestBuildOfATagPrintsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway from a clone")
	}
	t.Parallel()
	version := "v" + latestRelease(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	// The build's version must come from the tag alone: none from the
	// environment, nor from a make this test runs under.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"VERSION", "REVISION", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}, name)
	})
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), out)
		return strings.TrimSpace(string(out))
	}
	clone := filepath.Join(t.TempDir(), "gateway")
	run(root, "git", "clone", "--quiet", "--no-checkout", root, clone)
	run(clone, "git", "checkout", "--quiet", "--detach", run(root, "git", "rev-parse", "HEAD"))
	// The tag, as a release's checkout has it (moved to this commit in the
	// clone alone, should the repository have it elsewhere). It builds the
	// committed HEAD, not uncommitted changes.
	run(clone, "git", "-c", "user.name=release test", "-c", "user.email=release@test.invalid", "tag", "--force", "--annotate", "--message", version, version)
	bin := filepath.Join(clone, "bin", "gateway-prod")
	run(clone, "make", "--no-print-directory", "build-prod", "PROD_BIN="+bin)
	printed := run(clone, bin, "version")
	require.True(t, strings.HasPrefix(printed, "gateway "+version+" (revision "+run(clone, "git", "rev-parse", "HEAD")+") go"), printed)
}
