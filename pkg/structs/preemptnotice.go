package structs

import (
	"slices"
	"strings"
	"time"
)

// PreemptNotice asks atom to warn a preempted task's job before SIGTERM:
// atom writes the deadline to the file named by ATOM_PREEMPT_NOTICE_FILE
// and sends Signal (if any), Seconds before it sends SIGTERM; the job's
// stop grace follows the notice.
type PreemptNotice struct {
	Signal  string `json:"signal,omitempty"` // one of NoticeSignals; empty: the file only
	Seconds int64  `json:"seconds"`          // 1..MaxPreemptNoticeSeconds, and at most its pool's maxPreemptNotice
}

// DefaultMaxPreemptNotice is how long a notice may be in a pool that sets
// no maxPreemptNotice (the public pool among them).
const DefaultMaxPreemptNotice = 5 * time.Minute

// MaxPreemptNoticeSeconds bounds a job's preemptNotice.seconds whatever
// its pool allows.
const MaxPreemptNoticeSeconds = 3600

// NoticeSignals are the signals a job may ask for with its notice: those
// atom forwards, except SIGTERM (which follows the notice).
var NoticeSignals = []string{"SIGUSR1", "SIGUSR2", "SIGINT", "SIGHUP", "SIGQUIT"}

// convert checks the notice of a job spec.
func (n *PreemptNotice) convert() (*PreemptNotice, error) {
	if n == nil {
		return nil, nil
	}
	if n.Signal != "" && !slices.Contains(NoticeSignals, n.Signal) {
		return nil, bad("preemptNotice.signal", n.Signal, "use one of %s, or leave it out for the notice file only", strings.Join(NoticeSignals, ", "))
	}
	if err := checkRange("preemptNotice.seconds", n.Seconds, 1, MaxPreemptNoticeSeconds, " seconds"); err != nil {
		return nil, err
	}
	return &PreemptNotice{Signal: n.Signal, Seconds: n.Seconds}, nil
}

// MaxNotice is the longest preemption notice the pool's jobs get.
func (p *Pool) MaxNotice() time.Duration {
	if p == nil || p.MaxPreemptNotice <= 0 {
		return DefaultMaxPreemptNotice
	}
	return p.MaxPreemptNotice.D()
}

// Notice is how long the job's notice lasts in a pool allowing max.
func (n *PreemptNotice) Notice(max time.Duration) time.Duration {
	if n == nil {
		return 0
	}
	return min(time.Duration(n.Seconds)*time.Second, max)
}
