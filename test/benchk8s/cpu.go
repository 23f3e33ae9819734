package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times (100 on
// every Linux architecture Go supports).
const clockTicks = 100

// cpuTimes is the user+system CPU time, in seconds, each process has used:
// the cluster's programs by name and this one (the coordinator, the
// submitting clients and the watch) as "bench".
type cpuTimes map[string]float64

func readCPU(c *k8stest.Cluster) cpuTimes {
	t := cpuTimes{}
	procs := c.Processes()
	procs["bench"] = os.Getpid()
	for name, pid := range procs {
		if s, err := procCPU(pid); err == nil {
			t[name] = s
		}
	}
	return t
}

// procCPU reads utime+stime of pid (fields 14 and 15 of /proc/PID/stat).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	s, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	return (u + s) / clockTicks, nil
}

// since returns "name:seconds,..." of the CPU used after before was taken,
// by process name, and the total.
func (t cpuTimes) since(before cpuTimes) (string, float64) {
	var parts []string
	total := 0.0
	for _, k := range slices.Sorted(maps.Keys(t)) {
		d := t[k] - before[k]
		total += d
		parts = append(parts, fmt.Sprintf("%s:%.2f", k, d))
	}
	return strings.Join(parts, ","), total
}
