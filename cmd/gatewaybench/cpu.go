package main

import (
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
	at               time.Time
	busy, total      int64         // whole machine, in clock ticks
	gateway, process time.Duration // the gateway process, this process
}

// cpuUse is what a stretch of time cost in CPU.
type cpuUse struct {
	Seconds      float64 `json:"seconds"`
	MachineBusy  float64 `json:"machine_busy"`  // 0..1 of all CPUs
	OtherCores   float64 `json:"other_cores"`   // CPUs used by other processes (PostgreSQL, other work on the machine)
	GatewayCores float64 `json:"gateway_cores"` // CPUs the gateway process used on average
	BenchCores   float64 `json:"bench_cores"`   // CPUs this process (load, SDK clients, baseline worker) used
	PerJobMS     float64 `json:"per_job_ms"`    // CPU ms of both processes per job
	jobs         int
	cpuMS        float64
}

func readCPU(gatewayPID int) cpuReading {
	r := cpuReading{at: time.Now()}
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
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(gatewayPID) + "/stat"); err == nil {
		// Fields after the parenthesised command: state is field 3, utime 14, stime 15.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 12 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				st, _ := strconv.ParseInt(f[12], 10, 64)
				r.gateway = time.Duration(u+st) * time.Second / clockTicks
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.process = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r
}

// since is the CPU used from r to now, jobs being the work done.
func (r cpuReading) since(gatewayPID, jobs int) *cpuUse {
	now := readCPU(gatewayPID)
	wall := now.at.Sub(r.at).Seconds()
	if wall <= 0 {
		return nil
	}
	u := &cpuUse{
		Seconds:      wall,
		GatewayCores: (now.gateway - r.gateway).Seconds() / wall,
		BenchCores:   (now.process - r.process).Seconds() / wall,
	}
	if d := now.total - r.total; d > 0 {
		u.MachineBusy = float64(now.busy-r.busy) / float64(d)
		u.OtherCores = max(0, u.MachineBusy*float64(runtime.NumCPU())-u.GatewayCores-u.BenchCores)
	}
	if jobs > 0 {
		u.PerJobMS = ((now.gateway - r.gateway) + (now.process - r.process)).Seconds() * 1000 / float64(jobs)
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
		jobs:         u.jobs + jobs,
		cpuMS:        u.cpuMS + cpuMS,
	}
	if out.jobs > 0 {
		out.PerJobMS = out.cpuMS / float64(out.jobs)
	}
	return out
}
