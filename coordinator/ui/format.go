package ui

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// human writes a duration as people read it, to two units at most:
// "45s", "3m12s", "2h05m", "3d04h". Negative durations are 0s.
func human(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// ago is the age of t at now ("" when t is unset).
func ago(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	return human(now.Sub(t))
}

// stamp is t as a table shows it, in UTC ("" when unset).
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func strconvF(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

// amount is a quantity of a resource key in its units.
func amount(k structs.ResourceKey, v int64) string {
	switch k {
	case structs.KeyCPU:
		return structs.FormatMilliCPU(v)
	case structs.KeyMemory:
		return structs.FormatBytes(v)
	}
	return strconv.FormatInt(v, 10)
}

// resourceList is "cpu=4 gpu/A100=2", keys in order.
func resourceList(l structs.ResourceList) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		out = append(out, string(k)+"="+amount(k, l[k]))
	}
	return strings.Join(out, " ")
}

// perReplica is what one replica asks, GPUs first: "2× A100, 14 cpu,
// 236Gi".
func perReplica(r structs.Resources) string {
	var b []string
	if r.Accels > 0 {
		b = append(b, fmt.Sprintf("%d× %s", r.Accels, orAny(r.AccelType)))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Devices)) {
		b = append(b, fmt.Sprintf("%d× %s", r.Devices[k], k))
	}
	if r.MilliCPU > 0 {
		b = append(b, structs.FormatMilliCPU(r.MilliCPU)+" cpu")
	}
	if r.Memory > 0 {
		b = append(b, structs.FormatBytes(r.Memory))
	}
	return strings.Join(b, ", ")
}

func orAny(accelType string) string {
	if accelType == "" {
		return "GPU"
	}
	return accelType
}

// gpus is the accelerators a job asks in all, by its current shape.
func gpus(j *structs.Job) int64 {
	s := j.ShapeAt(j.Shape)
	return int64(s.Replicas) * s.Resources.Accels
}

// jobStateClass is the CSS class that colours a job state.
func jobStateClass(s structs.JobState) string { return "st-" + strings.ToLower(string(s)) }

// stoppedTask reports whether t ended because atom stopped it: Stopped,
// or Failed or Succeeded with a stop reason (recorded before the Stopped
// state existed).
func stoppedTask(t *structs.Task) bool {
	return t.State == structs.TaskStopped || (t.StopReason != "" && (t.State == structs.TaskFailed || t.State == structs.TaskSucceeded))
}

// taskStateText is a task's state as the CLI shows it: a task atom
// stopped shows as stopped with why, not as a crash.
func taskStateText(t *structs.Task) string {
	switch {
	case stoppedTask(t):
		return "Stopped: " + string(t.StopReason)
	case t.StopReason != "" && t.State == structs.TaskStopping:
		return "Stopping (" + string(t.StopReason) + ")"
	}
	return string(t.State)
}

// taskStateClass colours a task state.
func taskStateClass(t *structs.Task) string {
	switch {
	case stoppedTask(t):
		return "st-stopped"
	case t.State == structs.TaskStopping:
		return "st-stopping"
	case t.State == structs.TaskLost:
		return "st-failed"
	}
	return "st-" + strings.ToLower(string(t.State))
}

// priorityClass colours a priority.
func priorityClass(p structs.Priority) string { return "pri-" + p.String() }

// plural is "1 job", "3 jobs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
