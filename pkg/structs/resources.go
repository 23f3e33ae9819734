package structs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Resources is an amount of node resources in fixed units. It is used both
// for what one replica asks for and for what a node has free.
type Resources struct {
	MilliCPU  int64            `json:"milliCPU,omitempty"` // 1000 = one core
	Memory    int64            `json:"memory,omitempty"`   // bytes
	AccelType string           `json:"accelType,omitempty"`
	Accels    int64            `json:"accels,omitempty"`  // whole accelerators
	Devices   map[string]int64 `json:"devices,omitempty"` // edge device type -> units
}

// IsZero reports whether r asks for nothing.
func (r Resources) IsZero() bool {
	return r.MilliCPU == 0 && r.Memory == 0 && r.Accels == 0 && len(r.Devices) == 0
}

// String renders r the way people write it: "cpu=4 memory=16Gi gpu/A100=2".
func (r Resources) String() string {
	var b []string
	if r.MilliCPU != 0 {
		b = append(b, "cpu="+FormatMilliCPU(r.MilliCPU))
	}
	if r.Memory != 0 {
		b = append(b, "memory="+FormatBytes(r.Memory))
	}
	if r.Accels != 0 {
		t := r.AccelType
		if t == "" {
			t = "any"
		}
		b = append(b, fmt.Sprintf("gpu/%s=%d", t, r.Accels))
	}
	keys := make([]string, 0, len(r.Devices))
	for k := range r.Devices {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = append(b, fmt.Sprintf("device/%s=%d", k, r.Devices[k]))
	}
	if len(b) == 0 {
		return "nothing"
	}
	return strings.Join(b, " ")
}

// FormatMilliCPU renders millicores as cores ("4", "0.5", "41.5"), so
// amounts shown side by side (in use, quota) read in one unit; a spec
// takes them back as written.
func FormatMilliCPU(m int64) string {
	if m%1000 == 0 {
		return fmt.Sprintf("%d", m/1000)
	}
	return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64)
}

// FormatBytes renders bytes with the largest exact binary suffix ("16Gi").
func FormatBytes(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"Ei", 1 << 60}, {"Pi", 1 << 50}, {"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n != 0 && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	return fmt.Sprintf("%d", n)
}
