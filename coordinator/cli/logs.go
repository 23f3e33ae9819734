package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

func jobLogs(c *cli.Context) error {
	a, err := args(c, "ID")
	if err != nil {
		return err
	}
	cl := newClient(c)
	id := structs.JobID(a[0])
	o := client.LogOptions{Task: c.String("task"), All: c.Bool("all"), Follow: c.Bool("follow")}
	if o.Follow && o.Task == "" {
		t, err := taskToFollow(c, cl, id)
		if err != nil {
			return err
		}
		o.Task = string(t)
	}
	return cl.LogsWith(c.Context, id, o, c.App.Writer)
}

// taskToFollow picks the task `job logs -f ID` streams when --task names
// none: the newest task of a one-replica job (its current attempt's, or
// its last one once the job has ended), or of an MPI job's launcher. A
// job not placed yet is waited for, saying so once on stderr: `job
// submit` followed at once by `job logs -f` is the common case. Other
// jobs of several replicas need --task; the error offers their live
// tasks (an ended one has nothing more to stream).
func taskToFollow(c *cli.Context, cl *client.Client, id structs.JobID) (structs.TaskID, error) {
	said := false
	for {
		st, err := cl.Job(c.Context, id)
		if err != nil {
			return "", err
		}
		j := st.Job
		// An MPI job's output is its launcher's: mpirun passes on every
		// rank's.
		launcher := j.Kind == structs.KindMPI
		var newest *structs.Task
		var live []string
		for _, t := range st.Tasks {
			if t.Executor != "" || (launcher && t.Index != 0) {
				continue
			}
			if t.Attempt == j.Attempt || j.State.Ended() {
				if t.Attempt == j.Attempt && t.State.HoldsResources() {
					live = append(live, string(t.ID))
				}
				if newest == nil || t.Attempt > newest.Attempt || (t.Attempt == newest.Attempt && !t.ScheduledAt.Before(newest.ScheduledAt)) {
					newest = t
				}
			}
		}
		switch {
		case j.Replicas > 1 && !launcher && len(live) > 0:
			return "", usagef("job logs -f follows one task and job %s has %d replicas: pick one with --task: a replica index (0 to %d) or one of its live tasks: %s", id, j.Replicas, j.Replicas-1, strings.Join(live, ", "))
		case j.Replicas > 1 && !launcher && j.State.Ended():
			return "", fmt.Errorf("job %s is %s: none of its tasks runs, so there is nothing to follow: coordinator job logs %s shows their output", id, j.State, id)
		case j.Replicas > 1 && !launcher:
			return "", usagef("job logs -f follows one task and job %s has %d replicas, none placed yet (%s): pick one with --task once coordinator job status %s lists them", id, j.Replicas, j.State, id)
		case newest != nil:
			return newest.ID, nil
		case j.State.Ended():
			why := ""
			if j.Reason != "" && !strings.EqualFold(j.Reason, string(j.State)) {
				why = " (" + j.Reason + ")"
			}
			return "", fmt.Errorf("job %s is %s%s and never ran a task: there is no output to follow", id, j.State, why)
		}
		if !said {
			fmt.Fprintf(c.App.ErrWriter, "waiting for job %s to be placed (%s); Ctrl-C stops waiting\n", id, j.State)
			said = true
		}
		t := time.NewTimer(c.Duration("interval"))
		select {
		case <-c.Context.Done():
			t.Stop()
			return "", fmt.Errorf("wait for job %s to be placed: %w", id, c.Context.Err())
		case <-t.C:
		}
	}
}
