package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc CPU times (100 on Linux).
const clockTicks = 100

// cpuReading is a moment's cumulative CPU times.
type cpuReading struct {
	at          time.Time
	busy, total int64                    // whole machine, in clock ticks
	procs       map[string]time.Duration // the measured processes, by name
	postgres    time.Duration            // every postgres process
	process     time.Duration            // this process
}

// namedPID is a measured process: "gateway" (dev), or "temporal",
// "serve", "worker-1"… (the production shape).
type namedPID struct {
	name string
	pid  int
}

// cpuUse is what a stretch of time cost in CPU.
type cpuUse struct {
	Seconds      float64            `json:"seconds"`
	MachineBusy  float64            `json:"machine_busy"`  // 0..1 of all CPUs
	OtherCores   float64            `json:"other_cores"`   // CPUs used by other processes (other work on the machine)
	GatewayCores float64            `json:"gateway_cores"` // CPUs the measured processes and PostgreSQL used on average
	Cores        map[string]float64 `json:"cores"`         // … by process ("postgres": all of its processes)
	BenchCores   float64            `json:"bench_cores"`   // CPUs this process (load, SDK clients, floor and baseline workers) used
	PerJobMS     float64            `json:"per_job_ms"`    // CPU ms of all of them per job
	jobs         int
	cpuMS        float64
}

func readCPU(procs []namedPID) cpuReading {
	r := cpuReading{at: time.Now(), procs: map[string]time.Duration{}}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
		for i, f := range fields[1:min(len(fields), 9)] {
			v, _ := strconv.ParseInt(f, 10, 64)
			r.total += v
			if i != 3 && i != 4 {
				r.busy += v
			}
		}
	}
	for _, p := range procs {
		r.procs[p.name] += pidCPU(p.pid)
	}
	if entries, err := os.ReadDir("/proc"); err == nil {
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if comm, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
				r.postgres += pidCPU(pid)
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.process = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r
}

// pidCPU is the user and system time a process has used.
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command: state is field 3, utime 14, stime 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) <= 12 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * time.Second / clockTicks
}

// since is the CPU used from r to now by the same processes, jobs being
// the work done.
func (r cpuReading) since(jobs int, procs []namedPID) *cpuUse {
	now := readCPU(procs)
	wall := now.at.Sub(r.at).Seconds()
	if wall <= 0 {
		return nil
	}
	u := &cpuUse{Seconds: wall, BenchCores: (now.process - r.process).Seconds() / wall, Cores: map[string]float64{}}
	var used time.Duration
	for name, t := range now.procs {
		u.Cores[name] = (t - r.procs[name]).Seconds() / wall
		used += t - r.procs[name]
	}
	if pg := now.postgres - r.postgres; pg > 0 {
		u.Cores["postgres"] = pg.Seconds() / wall
		used += pg
	}
	u.GatewayCores = used.Seconds() / wall
	if d := now.total - r.total; d > 0 {
		u.MachineBusy = float64(now.busy-r.busy) / float64(d)
		u.OtherCores = max(0, u.MachineBusy*float64(runtime.NumCPU())-u.GatewayCores-u.BenchCores)
	}
	if jobs > 0 {
		u.PerJobMS = (used + now.process - r.process).Seconds() * 1000 / float64(jobs)
	}
	return u
}

// merge adds v, a stretch that completed jobs jobs, to u (nil: nothing
// yet): averages weighted by time, CPU per job over all jobs.
func (u *cpuUse) merge(v *cpuUse, jobs int) *cpuUse {
	if v == nil {
		return u
	}
	cpuMS := (v.GatewayCores + v.BenchCores) * v.Seconds * 1000
	if u == nil {
		out := *v
		out.PerJobMS, out.jobs, out.cpuMS = 0, jobs, cpuMS
		if jobs > 0 {
			out.PerJobMS = cpuMS / float64(jobs)
		}
		return &out
	}
	t := u.Seconds + v.Seconds
	w := func(a, b float64) float64 { return (a*u.Seconds + b*v.Seconds) / t }
	out := &cpuUse{
		Seconds:      t,
		MachineBusy:  w(u.MachineBusy, v.MachineBusy),
		OtherCores:   w(u.OtherCores, v.OtherCores),
		GatewayCores: w(u.GatewayCores, v.GatewayCores),
		BenchCores:   w(u.BenchCores, v.BenchCores),
		Cores:        map[string]float64{},
		jobs:         u.jobs + jobs,
		cpuMS:        u.cpuMS + cpuMS,
	}
	for name := range u.Cores {
		out.Cores[name] = w(u.Cores[name], v.Cores[name])
	}
	for name := range v.Cores {
		out.Cores[name] = w(u.Cores[name], v.Cores[name])
	}
	if out.jobs > 0 {
		out.PerJobMS = out.cpuMS / float64(out.jobs)
	}
	return out
}

// formatCores lists cores used by process, by name: "postgres 0.41, …".
func formatCores(cores map[string]float64) string {
	var out []string
	for _, name := range sortedKeys(cores) {
		out = append(out, fmt.Sprintf("%s %.2f", name, cores[name]))
	}
	return strings.Join(out, ", ")
}
