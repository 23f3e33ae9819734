package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// exitUnreachable is the exit status of job wait and job submit when the
// coordinator could not be reached (no answer, or no leader to answer):
// an outage, not a job that failed.
const exitUnreachable = 4

// unreachable reports whether err is the coordinator not answering, or
// answering that it cannot serve (503: no leader yet), as opposed to an
// answer; an untrusted certificate is a setting to fix, not an outage.
func unreachable(err error) bool {
	var ae *client.Error
	if errors.As(err, &ae) {
		return ae.Status == http.StatusServiceUnavailable
	}
	return err != nil && !errors.Is(err, client.ErrUntrustedCertificate)
}

// unreachableExit is err, the coordinator not reached, as exit status
// exitUnreachable.
func unreachableExit(cl *client.Client, what string, err error) error {
	return cli.Exit(fmt.Sprintf("%s: could not reach the coordinator at %s: %v", what, cl.Addr(), err), exitUnreachable)
}

// jobPoller reads a job over and over, riding out a coordinator that
// cannot be reached for a while (a restart): it says so once on stderr
// and tries again every interval until it answers, c's context ends or
// deadline (zero: none) passes.
type jobPoller struct {
	c        *cli.Context
	cl       *client.Client
	id       structs.JobID
	interval time.Duration
	deadline time.Time
	what     string // what is given up, in the message; "wait for job ID" if ""
	noted    bool
	last     *wire.JobStatus // the last answer
	down     bool            // the last try found no coordinator
	began    time.Time       // the first try
}

// neverAnswered reports whether the coordinator, which has not answered
// this poller yet, has not for the app's --timeout (0: no limit) since
// the first try.
func (p *jobPoller) neverAnswered() bool {
	if p.began.IsZero() {
		p.began = time.Now()
	}
	limit, _ := p.c.App.Metadata[timeoutKey].(time.Duration)
	return limit > 0 && time.Since(p.began) >= limit
}

// get returns the job's status; an error that is not an answer from the
// coordinator is returned only once the deadline has passed, as exit
// status exitUnreachable. A read the deadline cuts short while the
// coordinator answered returns the last answer, for the caller to say
// the wait timed out with the state it saw.
func (p *jobPoller) get() (*wire.JobStatus, error) {
	what := p.what
	if what == "" {
		what = fmt.Sprintf("wait for job %s", p.id)
	}
	// The client's own retries would hide an outage for seconds, and
	// the deadline with them: this loop retries instead.
	cl := *p.cl
	cl.Retries = 0
	for {
		ctx, cancel := p.c.Context, context.CancelFunc(func() {})
		if !p.deadline.IsZero() {
			ctx, cancel = context.WithDeadline(ctx, p.deadline)
		}
		js, err := cl.Job(ctx, p.id)
		cancel()
		switch {
		case err == nil:
			p.last, p.down = js, false
			return js, nil
		case p.c.Context.Err() != nil:
			return nil, fmt.Errorf("%s: %w", what, p.c.Context.Err())
		case !unreachable(err):
			return nil, fmt.Errorf("%s: %w", what, err)
		case !p.deadline.IsZero() && !time.Now().Before(p.deadline) && p.last != nil && !p.down:
			return p.last, nil
		case !p.deadline.IsZero() && !time.Now().Before(p.deadline):
			return nil, unreachableExit(p.cl, what, err)
		case p.last == nil && p.neverAnswered():
			// Never reached (a wrong address, more often than a
			// restart): given up after the app's --timeout, as any
			// command that sends one request.
			return nil, unreachableExit(p.cl, what, err)
		}
		p.down = true
		if !p.noted {
			p.noted = true
			fmt.Fprintf(p.c.App.ErrWriter, "coordinator: cannot reach the coordinator at %s (%v): still waiting for job %s, until it answers\n", p.cl.Addr(), err, p.id)
		}
		wait := p.interval
		if !p.deadline.IsZero() {
			wait = min(wait, time.Until(p.deadline))
		}
		t := time.NewTimer(wait)
		select {
		case <-p.c.Context.Done():
			t.Stop()
			return nil, fmt.Errorf("%s: %w", what, p.c.Context.Err())
		case <-t.C:
		}
	}
}
