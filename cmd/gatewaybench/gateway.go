package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ai-job-gateway/gateway/providers/sandbox"
)

// benchScopes are the scopes of the benchmark's tokens.
const benchScopes = "transcriptions:read transcriptions:write translations:read translations:write " +
	"video-analyses:read video-analyses:write llm-tasks:read llm-tasks:write"

// catalog is a provider catalog with one sandbox provider for every
// service, of the given latency (sandbox.Catalog).
func catalog(id string, latency time.Duration) string {
	return sandbox.Catalog(id, latency.Milliseconds())
}

// process is one process the benchmark started: `gateway dev`, or a part
// of the production shape.
type process struct {
	bin       string
	dataDir   string
	listen    string
	temporal  string
	pprof     string // "" without -profile
	cmd       *exec.Cmd
	logPath   string
	logFile   *os.File
	exited    chan struct{}
	exitErr   error
	startedAt time.Time
}

// gatewaySpec says how to start a gateway.
type gatewaySpec struct {
	name        string // for the data dir and log file
	databaseURL string // "" for the SQLite file in the data dir
	catalog     string // provider catalog YAML
	pprof       bool
}

// moduleDir is src, or the module of the working directory when src is
// "", as an absolute path.
func moduleDir(ctx context.Context, src string) (string, error) {
	if src == "" {
		out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
		if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
			return "", errors.New("not inside the gateway module; run from the repository or pass -src or -gateway")
		}
		src = filepath.Dir(strings.TrimSpace(string(out)))
	}
	return filepath.Abs(src)
}

// buildGateway compiles the gateway of the module in src into dir. With
// profiling it adds a pprof listener through a build overlay, leaving the
// source untouched.
func buildGateway(ctx context.Context, src, dir string, profile bool, log io.Writer) (string, error) {
	bin := filepath.Join(dir, "gateway")
	args := []string{"build", "-o", bin}
	if profile {
		overlay, err := writeProfileOverlay(src, dir)
		if err != nil {
			return "", err
		}
		args = append(args, "-overlay", overlay)
	}
	args = append(args, "./cmd/gateway")
	fmt.Fprintf(log, "building the gateway from %s …\n", src)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = src
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build the gateway in %s: %w", src, err)
	}
	fmt.Fprintf(log, "built in %s\n", time.Since(start).Round(100*time.Millisecond))
	return bin, nil
}

// freeAddr is a free 127.0.0.1 port.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startGateway runs `gateway dev` in a fresh data dir under work and waits
// until /readyz answers 200.
func startGateway(ctx context.Context, bin, work string, spec gatewaySpec) (*process, error) {
	g := &process{bin: bin, dataDir: filepath.Join(work, spec.name)}
	if err := os.MkdirAll(g.dataDir, 0o755); err != nil {
		return nil, err
	}
	catalogPath := filepath.Join(work, spec.name+"-providers.yaml")
	if err := os.WriteFile(catalogPath, []byte(spec.catalog), 0o644); err != nil {
		return nil, err
	}
	var err error
	if g.listen, err = freeAddr(); err != nil {
		return nil, err
	}
	if g.temporal, err = freeAddr(); err != nil {
		return nil, err
	}
	env := cleanEnv()
	if spec.pprof {
		if g.pprof, err = freeAddr(); err != nil {
			return nil, err
		}
		env = append(env, profileEnv+"="+g.pprof)
	}
	env = append(env, "DATABASE_URL="+spec.databaseURL, payloadKeysEnv())
	g.cmd = exec.Command(bin, "dev", "--data-dir", g.dataDir, "--listen", g.listen,
		"--temporal-dev-listen", g.temporal, "--temporal-ui-listen", "", "--providers", catalogPath)
	g.cmd.Env = env
	if err := g.start(ctx, work, spec.name, g.readyz); err != nil {
		return nil, err
	}
	return g, nil
}

// start starts p.cmd, its output going to <work>/<name>.log, and waits
// (3 minutes at most) until ready says it is ready.
func (p *process) start(ctx context.Context, work, name string, ready func() bool) error {
	var err error
	p.exited = make(chan struct{})
	p.logPath = filepath.Join(work, name+".log")
	if p.logFile, err = os.Create(p.logPath); err != nil {
		return err
	}
	p.cmd.Stdout, p.cmd.Stderr = p.logFile, p.logFile
	if err := p.cmd.Start(); err != nil {
		return err
	}
	p.startedAt = time.Now()
	go func() { p.exitErr = p.cmd.Wait(); close(p.exited) }()

	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if ready() {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited (%v); its log:\n%s", name, p.exitErr, p.tail())
		case <-ctx.Done():
			p.stop()
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	p.stop()
	return fmt.Errorf("%s not ready after 3 minutes; its log:\n%s", name, p.tail())
}

// readyz reports whether the process's /readyz answers 200.
func (p *process) readyz() bool {
	resp, err := http.Get(p.url("/readyz"))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// cleanEnv is this process's environment without the gateway's own
// settings, so the benchmark runs the same whatever the shell exports,
// and with gatewayEnv's.
func cleanEnv() []string {
	env := append([]string(nil), gatewayEnv...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GATEWAY_") || strings.HasPrefix(name, "TEMPORAL_") ||
			strings.HasPrefix(name, "OIDC_") || name == "DATABASE_URL" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// gatewayEnv are settings of every gateway process the benchmark starts
// (-job-generation's), set once from the flags.
var gatewayEnv []string

func (g *process) url(path string) string { return "http://" + g.listen + path }

func (g *process) pid() int { return g.cmd.Process.Pid }

// alive reports whether the process still runs.
func (g *process) alive() bool {
	select {
	case <-g.exited:
		return false
	default:
		return true
	}
}

// token mints a token with `gateway token`, as the README does.
func (g *process) token(tenant, scopes string) (string, error) {
	args := []string{"token", "--data-dir", g.dataDir, "--sub", "bench-user", "--scope", scopes, "--ttl", "24h"}
	if tenant != "" {
		args = append(args, "--tenant", tenant)
	}
	cmd := exec.Command(g.bin, args...)
	cmd.Env = cleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("gateway token: %w: %s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// stop ends the process with SIGTERM (SIGKILL after 20 s).
func (g *process) stop() {
	g.end(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.exited:
		case <-time.After(20 * time.Second):
			_ = g.cmd.Process.Kill()
			<-g.exited
		}
	})
}

// kill ends the process at once (its data is thrown away).
func (g *process) kill() {
	g.end(func() {
		_ = g.cmd.Process.Kill()
		<-g.exited
	})
}

// end runs halt on a process that was started and still runs, and closes
// its log.
func (g *process) end(halt func()) {
	if g == nil || g.cmd == nil || g.cmd.Process == nil {
		return
	}
	if g.alive() {
		halt()
	}
	if g.logFile != nil {
		_ = g.logFile.Close()
	}
}

// tail is the end of the process's log.
func (g *process) tail() string {
	b, err := os.ReadFile(g.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// memory is a reading of /proc/<pid>/status, in bytes.
type memory struct {
	RSS  int64 `json:"rss_bytes"`  // VmRSS: resident now
	Peak int64 `json:"peak_bytes"` // VmHWM: the high-water mark of VmRSS
	Anon int64 `json:"anon_bytes"` // RssAnon: heap, stacks, SQLite's caches
	File int64 `json:"file_bytes"` // RssFile: the mapped binary and files
}

// readMemory reads VmRSS and VmHWM of pid.
func readMemory(pid int) (memory, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			m.RSS = kb << 10
		case "VmHWM":
			m.Peak = kb << 10
		case "RssAnon":
			m.Anon = kb << 10
		case "RssFile":
			m.File = kb << 10
		}
	}
	return m, sc.Err()
}

// getJSON GETs a gateway URL and decodes its JSON answer.
func getJSON(ctx context.Context, hc *http.Client, url, token string, into any) error {
	body, err := call(ctx, hc, http.MethodGet, url, url, token, nil, http.StatusOK)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, into)
}

// call sends a request to the gateway with token (and a JSON body, unless
// nil) and returns the answer's body; an answer other than want is an
// error, naming the request "<method> <name>".
func call(ctx context.Context, hc *http.Client, method, url, name, token string, body []byte, want int) ([]byte, error) {
	var content io.Reader
	if body != nil {
		content = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, content)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s", method, name, resp.StatusCode, truncate(answer))
	}
	return answer, nil
}

// jobList is what the benchmark reads of a GET /v1/jobs answer.
type jobList struct {
	Meta struct {
		Total int `json:"total"`
	} `json:"meta"`
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
