package buildinfo_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/buildinfo"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "github.com/ai-job-gateway/gateway", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	info := buildinfo.FromBuildInfo(bi, "v1.2.0", "")
	require.Equal(t, "v1.2.0", info.Version)
	require.Equal(t, "0123456789abcdef0123456789abcdef01234567", info.Revision)
	require.True(t, info.Modified)
	require.Equal(t, "gateway v1.2.0 (revision 0123456789abcdef0123456789abcdef01234567, modified) go1.99.1 "+runtime.GOOS+"/"+runtime.GOARCH, info.String())

	// No version set and no VCS: dev, the linker's revision, the runtime's Go.
	info = buildinfo.FromBuildInfo(nil, "", "abc123")
	require.Equal(t, "dev", info.Version)
	require.Equal(t, "abc123", info.Revision)
	require.False(t, info.Modified)
	require.Equal(t, runtime.Version(), info.GoVersion)
	require.Contains(t, buildinfo.FromBuildInfo(nil, "", "").String(), "(revision unknown)")

	// go install module@version records the module's version.
	bi.Main.Version = "v1.3.0"
	require.Equal(t, "v1.3.0", buildinfo.FromBuildInfo(bi, "", "").Version)
	require.Equal(t, "v1.4.0", buildinfo.FromBuildInfo(bi, "v1.4.0", "").Version, "the linker's version wins")
}

// TestLinkerVersion: the version and revision make build-prod passes with
// -ldflags -X reach what gateway version prints (a small program: building
// cmd/gateway takes minutes).
func TestLinkerVersion(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "printversion")
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X github.com/ai-job-gateway/gateway/internal/buildinfo.Version=v9.8.7-test "+
			"-X github.com/ai-job-gateway/gateway/internal/buildinfo.Revision=feedface",
		"./testdata/printversion")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin).Output()
	require.NoError(t, err)
	line := strings.TrimSpace(string(out))
	require.True(t, strings.HasPrefix(line, "gateway v9.8.7-test ("), line)
	require.Contains(t, line, " "+runtime.Version()+" ")
	if !strings.Contains(line, "(revision feedface") {
		// The toolchain's vcs.revision, when it stamped one, wins.
		require.Regexp(t, `\(revision [0-9a-f]{40}`, line)
	}
}
