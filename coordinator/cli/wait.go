package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// Exit statuses of job wait besides 0 (reached) and 2 (usage).
const (
	exitEndedOtherwise = 1 // the job ended without reaching the condition
	exitTimedOut       = 3 // --timeout passed first
	// exitUnreachable (4): the coordinator could not be reached
)

func jobWaitCommand() *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "wait until a job runs or completes; the exit status says how it ended",
		UsageText: "coordinator job wait --for running|complete [--timeout D] ID",
		Description: "Polls the job until the condition holds, as kubectl wait does:\n" +
			"  --for running   the job runs (every replica it starts with is running; a\n" +
			"                  service, as many as it starts with run now), or has already\n" +
			"                  succeeded\n" +
			"  --for complete  the job succeeded (a service never does: wait for running)\n" +
			"While the coordinator cannot be reached (a restart), the wait goes on, saying so\n" +
			"once on stderr, until it answers again or --timeout passes; one that never\n" +
			"answered (a wrong --addr) is given up after the global --timeout (30s).\n" +
			"Exit status: 0 the condition holds; 1 the job ended without it (failed or\n" +
			"cancelled; the reason is printed) or the coordinator answered an error (no such\n" +
			"job); 2 a usage error; 3 --timeout passed first (default: no limit); 4 the\n" +
			"coordinator could not be reached when --timeout passed.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "for", Required: true, Usage: "running or complete"},
			&cli.DurationFlag{Name: "timeout", Usage: "give up after this long, exit status 3", DefaultText: "wait for ever"},
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "how often to poll", Hidden: true},
			outputFlag(),
		},
		Action: jobWait,
	}
}

// reached reports whether job js meets condition cond ("running" or
// "complete"), and whether it never will (it ended otherwise).
func reached(js *wire.JobStatus, cond string) (ok, never bool) {
	switch j := js.Job; {
	case j.State == structs.JobSucceeded:
		return true, false
	case j.State.Ended():
		return false, true
	}
	return cond == "running" && running(js), false
}

// stateOf is job js's state, with how many replicas run for a Running
// service that is not running (running): "Running, 0 of 2 replicas
// running".
func stateOf(js *wire.JobStatus) string {
	j := js.Job
	if j.State != structs.JobRunning || j.Kind != structs.KindService || running(js) {
		return string(j.State)
	}
	return fmt.Sprintf("%s, %d of %d replicas running", j.State, replicasUp(js), j.ShapeAt(j.Shape).Replicas)
}

// running reports whether job js runs: it is Running and, a service, as
// many of its replicas run as it starts with (minAvailable, else all of
// them). A service stays Running while its replicas crash and are
// placed again: one none of whose replicas runs is not running.
func running(js *wire.JobStatus) bool {
	j := js.Job
	if j.State != structs.JobRunning {
		return false
	}
	if j.Kind != structs.KindService {
		return true
	}
	need := j.ShapeAt(j.Shape).Replicas
	if j.MinAvailable > 0 {
		need = min(need, j.MinAvailable)
	}
	return replicasUp(js) >= need
}

// replicasUp counts the replicas of job js's current attempt that run.
func replicasUp(js *wire.JobStatus) int {
	up := 0
	for _, t := range js.Tasks {
		if t.RunsReplicaOf(js.Job) {
			up++
		}
	}
	return up
}

func jobWait(c *cli.Context) error {
	a, err := args(c, "ID")
	if err != nil {
		return err
	}
	cond := strings.ToLower(c.String("for"))
	if cond != "running" && cond != "complete" {
		return usagef("--for %q is not allowed: use running or complete", c.String("for"))
	}
	if d := c.Duration("timeout"); d < 0 {
		return usagef("--timeout %s is not allowed: use 0 (wait for ever) or more, a duration such as 10m", d)
	}
	// The timeout is checked after each look, so a timed-out wait says
	// the state it last saw.
	var deadline time.Time
	if d := c.Duration("timeout"); d > 0 {
		deadline = time.Now().Add(d)
	}
	cl := newClient(c)
	id := structs.JobID(a[0])
	poll := &jobPoller{c: c, cl: cl, id: id, interval: c.Duration("interval"), deadline: deadline}
	for {
		js, err := poll.get()
		if err != nil {
			return err
		}
		j := js.Job
		if cond == "complete" && j.Kind == structs.KindService {
			return usagef("job %s is a service: it runs until cancelled, so it never completes: wait --for running", id)
		}
		ok, never := reached(js, cond)
		if ok {
			return show(c, js, func(w io.Writer) { fmt.Fprintf(w, "job %s %s\n", id, j.State) })
		}
		if never {
			if f, _ := format(c); f != formatTable {
				_ = show(c, js, nil)
			}
			how := strings.ToLower(string(j.State))
			if j.Reason != "" && !strings.EqualFold(j.Reason, how) {
				how += ": " + j.Reason
			}
			return cli.Exit(fmt.Sprintf("job %s %s, so it will not be %s", id, how, cond), exitEndedOtherwise)
		}
		wait := c.Duration("interval")
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return cli.Exit(fmt.Sprintf("job %s is not %s after %s: it is %s%s", id, cond, c.Duration("timeout"), stateOf(js), reasonSuffix(j.Reason)), exitTimedOut)
			}
			wait = min(wait, left)
		}
		t := time.NewTimer(wait)
		select {
		case <-c.Context.Done():
			t.Stop()
			return fmt.Errorf("wait for job %s: %w", id, c.Context.Err())
		case <-t.C:
		}
	}
}
