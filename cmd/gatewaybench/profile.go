package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profileEnv names the address of the pprof listener that -profile builds
// into the gateway. It is not GATEWAY_PPROF_LISTEN, so that it never
// collides with a listener the gateway may get of its own.
const profileEnv = "GATEWAYBENCH_PPROF_LISTEN"

// profileOverlay is added to package main of the gateway, for -profile
// builds only, through `go build -overlay`: the source tree is not touched.
const profileOverlay = `package main

import (
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
)

func init() {
	addr := os.Getenv("` + profileEnv + `")
	if addr == "" {
		return
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		panic(err)
	}
	runtime.SetBlockProfileRate(int(1e6))
	runtime.SetMutexProfileFraction(100)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() { _ = http.Serve(l, mux) }()
}
`

// writeProfileOverlay writes the overlay file and its JSON description
// into dir and returns the JSON's path.
func writeProfileOverlay(src, dir string) (string, error) {
	file := filepath.Join(dir, "gatewaybench_pprof.go")
	if err := os.WriteFile(file, []byte(profileOverlay), 0o644); err != nil {
		return "", err
	}
	target := filepath.Join(src, "cmd", "gateway", "zz_gatewaybench_pprof.go")
	overlay := filepath.Join(dir, "overlay.json")
	body := fmt.Sprintf(`{"Replace": {%q: %q}}`, target, file)
	return overlay, os.WriteFile(overlay, []byte(body), 0o644)
}

// fetchProfile saves /debug/pprof/<kind> of the listener at addr as
// <dir>/<name> (".pprof" added when name has no extension); seconds > 0 is
// the profile's length (for block, mutex and heap: a delta over it).
func fetchProfile(addr, kind string, seconds int, dir, name string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/%s", addr, kind)
	if seconds > 0 {
		url += fmt.Sprintf("?seconds=%d", seconds)
	}
	hc := &http.Client{Timeout: time.Duration(seconds)*time.Second + 30*time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, truncate(b))
	}
	if filepath.Ext(name) == "" {
		name += ".pprof"
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
