package sched

import (
	"fmt"
	"regexp"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// A why-pending message that names a time says how far off it is too:
// "at 2026-03-01T09:00:10Z (in 10s)". That countdown changes with every
// cycle while the reason stays the same; Steady leaves it out.

// countdown is the part after a time t a message names, as of now: " (in 10s)".
func countdown(t, now time.Time) string {
	return fmt.Sprintf(" (in %s)", t.Sub(now).Round(time.Second))
}

// stamp is t as a message names it, with its countdown.
func stamp(t, now time.Time) string {
	return t.UTC().Format(time.RFC3339) + countdown(t, now)
}

var countdowns = regexp.MustCompile(` \(in -?(?:\d+h)?(?:\d+m)?\d+s\)`)

// Steady is why-pending message msg without its countdowns: two messages
// that give the same reason are equal once steady, however far the clock
// has moved between them. A client that reports changes (job submit
// --wait) compares these.
func Steady(msg string) string {
	return countdowns.ReplaceAllString(msg, "")
}

// backoffWhy says why job j waits out its restart back-off: a batch job
// names the attempt it waits to start, counted from 1 as job events count
// them, and the restart that attempt is of its budget (requeues that were
// not its fault use none); a service, its replicas' exits in a row.
func backoffWhy(j *structs.Job, now time.Time) string {
	if j.Kind == structs.KindService {
		return fmt.Sprintf("restart back-off: %d replica exits in a row; placed again at %s", j.CrashLoop, stamp(j.BackoffUntil, now))
	}
	return fmt.Sprintf("restart back-off: attempt %d (restart %d of %d) waits until %s",
		structs.AttemptNumber(j.Attempt), j.Restarts(), structs.MaxRestarts, stamp(j.BackoffUntil, now))
}
