// Package loadavg reads the machine's load averages, which benchmarks
// print beside their figures: on a shared machine they say how busy it was.
package loadavg

import (
	"os"
	"strings"
)

// String is the 1-, 5- and 15-minute load averages of /proc/loadavg as
// "1.19/1.48/1.88", or "unknown".
func String() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], "/")
}
