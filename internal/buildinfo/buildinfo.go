// Package buildinfo says which build of the gateway is running: the
// release version set at link time, and the VCS revision and Go version
// the Go toolchain records in the binary (runtime/debug.ReadBuildInfo).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version and Revision are set by the linker:
//
//	go build -ldflags "-X github.com/ai-job-gateway/gateway/internal/buildinfo.Version=v1.2.0"
//
// make build-prod and deploy/Dockerfile set Version (docs/operations.md,
// Releases). Revision is only a fallback for builds without a VCS
// checkout (the image build has no .git); the toolchain's vcs.revision
// wins when it is there.
var (
	Version  = ""
	Revision = ""
)

// Info describes one build.
type Info struct {
	// Version is the release version, "dev" when the build set none.
	Version string `json:"version"`
	// Revision is the VCS commit, "" when unknown.
	Revision string `json:"revision,omitempty"`
	// Modified reports uncommitted changes in the built tree.
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// Read returns this binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return FromBuildInfo(bi, Version, Revision)
}

// FromBuildInfo combines the toolchain's build information (nil when the
// binary has none) with the versions set by the linker.
func FromBuildInfo(bi *debug.BuildInfo, version, revision string) Info {
	info := Info{Version: version, Revision: revision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		// go install module@v1.2.0 records the module's version.
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	return info
}

// String is the line `gateway version` prints, e.g.
//
//	gateway v1.2.0 (revision 3f2c…, modified) go1.26.8 linux/amd64
func (i Info) String() string {
	revision := "revision unknown"
	if i.Revision != "" {
		revision = "revision " + i.Revision
	}
	if i.Modified {
		revision += ", modified"
	}
	return fmt.Sprintf("gateway %s (%s) %s %s", i.Version, revision, i.GoVersion, i.Platform)
}
