package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func jobLogs(c *cli.Context) error {
	a, err := args(c, "ID")
	if err != nil {
		return err
	}
	cl := newClient(c)
	id := structs.JobID(a[0])
	o := client.LogOptions{Task: c.String("task"), All: c.Bool("all"), Follow: c.Bool("follow"), Notes: c.App.ErrWriter}
	switch {
	case o.Follow && o.Task != "":
		return followTask(c, cl, id, o, c.App.Writer)
	case o.Follow:
		t, err := taskToFollow(c, cl, id, "", nil)
		if err != nil {
			return err
		}
		if t == "" {
			return followReplicas(c, cl, id)
		}
		o.Task = string(t)
		return followAttempts(c, cl, id, o)
	}
	return cl.LogsWith(c.Context, id, o, c.App.Writer)
}

// followAttempts streams the output of task o.Task of one-task job id,
// and then of each next attempt's task, until the job ends: a task
// stopped while its job goes on (a coordinator's shutdown requeued it, a
// restart policy runs it again) does not end the follow, as if the job
// had ended; a line on stderr names the next task, whose output starts
// at its first byte.
func followAttempts(c *cli.Context, cl *client.Client, id structs.JobID, o client.LogOptions) error {
	for {
		out := &countingWriter{w: c.App.Writer, n: o.Offset}
		if err := followTask(c, cl, id, o, out); err != nil || c.Context.Err() != nil || out.err != nil {
			return err
		}
		// What the task wrote after its stream ended (its coordinator
		// shutting down ended the stream, then stopped it: the lines its
		// SIGTERM trap printed) comes before the next attempt's.
		rest := func() {
			ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
			defer cancel()
			last := o
			last.Offset = out.n
			once := *cl
			once.Retries = 0
			_ = once.LogsWith(ctx, id, last, out)
		}
		next, err := taskToFollow(c, cl, id, structs.TaskID(o.Task), rest)
		if c.Context.Err() != nil {
			return nil // Ctrl-C while waiting for the next attempt
		}
		if err != nil || next == "" {
			return err
		}
		if string(next) == o.Task {
			o.Offset = out.n // its stream ended while it ran: on from there
			if err := pause(c, id); err != nil {
				return nil
			}
			continue
		}
		o.Task, o.Offset = string(next), 0 // offsets are a task's own
	}
}

// followTask streams task o.Task's output to w until the task ends,
// riding out a coordinator that breaks the stream or cannot be reached (a
// restart): it says so once on stderr and connects again every
// --interval, asking for the output after what it has written, so no
// line comes twice. A coordinator that stays away for the app's --timeout
// (0: for ever) ends it with exit status exitUnreachable, as job wait.
func followTask(c *cli.Context, cl *client.Client, id structs.JobID, o client.LogOptions, w io.Writer) error {
	once := *cl
	once.Retries = 0 // this loop retries, and counts the outage
	limit, _ := c.App.Metadata[timeoutKey].(time.Duration)
	// The output before o.Offset was printed before: the count starts there.
	out := &countingWriter{w: w, n: o.Offset}
	var away time.Time // when the coordinator went away; zero while it answers
	noted := false
	for {
		before := out.n
		o.Offset = before
		err := once.LogsWith(c.Context, id, o, out)
		switch {
		case err == nil, c.Context.Err() != nil:
			return nil
		case out.err != nil || !unreachable(err):
			return err
		}
		if out.n > before || away.IsZero() {
			away = time.Now() // it answered until now
		}
		if limit > 0 && time.Since(away) >= limit {
			return unreachableExit(cl, fmt.Sprintf("follow the output of job %s", id), err)
		}
		if !noted {
			noted = true
			fmt.Fprintf(c.App.ErrWriter, "coordinator: lost the output stream from the coordinator at %s (%v): reconnecting until it answers\n", cl.Addr(), err)
		}
		t := time.NewTimer(c.Duration("interval"))
		select {
		case <-c.Context.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// countingWriter counts the bytes written to w, and keeps w's error.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		c.err = err
	}
	return n, err
}

// taskToFollow picks the task `job logs -f ID` streams when --task names
// none: the newest task of a one-replica job (its current attempt's, or
// its last one once the job has ended), or of an MPI job's launcher; ""
// for a service or a job of several replicas, whose live replicas are
// all followed (followReplicas). A job not placed yet is waited for,
// saying so once on stderr: `job submit` followed at once by `job logs
// -f` is the common case. With after, the task followed so far, it picks
// the task after it: its next attempt's, waited for while the job goes on,
// and named on stderr (after itself while it still runs), rest called
// before that line when it is another task; "" once the job has ended
// with none after it.
func taskToFollow(c *cli.Context, cl *client.Client, id structs.JobID, after structs.TaskID, rest func()) (structs.TaskID, error) {
	said := false
	poll := followPoller(c, cl, id)
	for {
		st, err := poll()
		if err != nil {
			return "", err
		}
		j := st.Job
		// An MPI job's output is its launcher's: mpirun passes on every
		// rank's.
		launcher := j.Kind == structs.KindMPI
		if !launcher && (j.Replicas > 1 || j.Kind == structs.KindService) {
			return "", nil
		}
		var newest *structs.Task
		for _, t := range st.Tasks {
			if t.Executor != "" || (launcher && t.Index != 0) {
				continue
			}
			if (t.Attempt == j.Attempt || j.State.Ended()) &&
				(newest == nil || t.Attempt > newest.Attempt || (t.Attempt == newest.Attempt && !t.ScheduledAt.Before(newest.ScheduledAt))) {
				newest = t
			}
		}
		switch {
		case after != "" && j.State.Ended() && (newest == nil || newest.ID == after):
			return "", nil
		case newest != nil && (newest.ID != after || newest.State.HoldsResources()):
			if after != "" && newest.ID != after && rest != nil {
				rest()
			}
			n := structs.AttemptNumber(newest.Attempt)
			switch {
			case after == "" || newest.ID == after:
			case said:
				fmt.Fprintf(c.App.ErrWriter, "--- following attempt %d (task %s)\n", n, newest.ID)
			default:
				fmt.Fprintf(c.App.ErrWriter, "--- the job was %s; following attempt %d (task %s)\n", howRun(st, attemptOf(st, after)), n, newest.ID)
			}
			return newest.ID, nil
		case j.State.Ended():
			return "", nothingToFollow(j, false)
		}
		switch {
		case said:
		case after != "":
			fmt.Fprintf(c.App.ErrWriter, "--- the job was %s; waiting for attempt %d to be placed (%s); Ctrl-C stops waiting\n", howRun(st, attemptOf(st, after)), nextAttempt(st, after), j.State)
		default:
			fmt.Fprintf(c.App.ErrWriter, "waiting for job %s to be placed (%s); Ctrl-C stops waiting\n", id, j.State)
		}
		said = true
		if err := pause(c, id); err != nil {
			return "", err
		}
	}
}

// howRun says how job st came to run again after its attempt a (from
// 0): "restarted" when a task of that attempt ending on its own did it (a
// restart policy), "requeued" when its coordinator or the scheduler
// stopped its tasks (a shutdown, an outage, a preemption).
func howRun(st *wire.JobStatus, a int) string {
	for _, t := range st.Tasks {
		if t.Attempt == a && (t.State == structs.TaskFailed || t.State == structs.TaskSucceeded) && t.StopReason == "" {
			return "restarted"
		}
	}
	return "requeued"
}

// attemptOf is task id's attempt (from 0); the job's when st lacks the
// task.
func attemptOf(st *wire.JobStatus, id structs.TaskID) int {
	for _, t := range st.Tasks {
		if t.ID == id {
			return t.Attempt
		}
	}
	return st.Job.Attempt
}

// nextAttempt is the attempt, counted from 1, that job st runs after
// task after's: the job's current one once it has been requeued, else
// (its other tasks still stopping) the one after the task's.
func nextAttempt(st *wire.JobStatus, after structs.TaskID) int {
	return structs.AttemptNumber(max(st.Job.Attempt, attemptOf(st, after)+1))
}

// followPoller reads job id for job logs -f, riding out a coordinator
// that cannot be reached (a restart) as job wait does, for the app's
// --timeout at most (0: for ever), then exit status exitUnreachable.
func followPoller(c *cli.Context, cl *client.Client, id structs.JobID) func() (*wire.JobStatus, error) {
	limit, _ := c.App.Metadata[timeoutKey].(time.Duration)
	p := &jobPoller{c: c, cl: cl, id: id, interval: c.Duration("interval"), what: fmt.Sprintf("follow the output of job %s", id)}
	return func() (*wire.JobStatus, error) {
		if limit > 0 {
			p.deadline, p.last = time.Now().Add(limit), nil // the limit is on each outage
		}
		return p.get()
	}
}

// nothingToFollow says why an ended job has no output to follow: none
// of its tasks runs (ran: it had some), or it never ran one.
func nothingToFollow(j *structs.Job, ran bool) error {
	if ran {
		return fmt.Errorf("job %s is %s: none of its tasks runs, so there is nothing to follow: coordinator job logs %s shows their output", j.ID, j.State, j.ID)
	}
	why := ""
	if j.Reason != "" && !strings.EqualFold(j.Reason, string(j.State)) {
		why = " (" + j.Reason + ")"
	}
	return fmt.Errorf("job %s is %s%s and never ran a task: there is no output to follow", j.ID, j.State, why)
}

// pause waits --interval, or returns the error of Ctrl-C.
func pause(c *cli.Context, id structs.JobID) error {
	t := time.NewTimer(c.Duration("interval"))
	defer t.Stop()
	select {
	case <-c.Context.Done():
		return fmt.Errorf("wait for job %s to be placed: %w", id, c.Context.Err())
	case <-t.C:
		return nil
	}
}

// followReplicas streams the output of job id's live replicas (the
// current attempt's tasks that hold resources; a Spark job's executors
// are no replicas), each line prefixed with its task, "[TASK] ", as
// kubectl logs --prefix does. A replica placed meanwhile (a service's
// replica placed again, a restarted job's) is followed too, once it is
// placed, and so is one that ran and ended between two looks (its whole
// output, then its stream ends); one that had ended before the follow
// began, never. A stderr line names each next attempt followed. It
// returns when the job has ended and each stream has, or on Ctrl-C.
func followReplicas(c *cli.Context, cl *client.Client, id structs.JobID) error {
	out := &lineMux{w: c.App.Writer}
	followed := map[structs.TaskID]bool{}
	var before map[structs.TaskID]bool // the tasks ended at the first look
	var wg sync.WaitGroup
	defer wg.Wait()
	said := false
	attempt := -1 // of the tasks followed last
	poll := followPoller(c, cl, id)
	for {
		st, err := poll()
		if c.Context.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		j := st.Job
		if before == nil {
			before = map[structs.TaskID]bool{}
			for _, t := range st.Tasks {
				before[t.ID] = !t.State.HoldsResources()
			}
		}
		ran := false
		for _, t := range st.Tasks {
			ran = ran || t.Executor == ""
			output := t.State.HoldsResources() || !t.StartedAt.IsZero() // else it never ran
			if t.Executor != "" || t.Attempt != j.Attempt || !output || before[t.ID] || followed[t.ID] {
				continue
			}
			if attempt >= 0 && t.Attempt > attempt {
				fmt.Fprintf(c.App.ErrWriter, "--- the job was %s; following attempt %d\n", howRun(st, attempt), structs.AttemptNumber(t.Attempt))
			}
			attempt = max(attempt, t.Attempt)
			followed[t.ID] = true
			wg.Add(1)
			go func(task structs.TaskID) {
				defer wg.Done()
				w := out.prefixed("[" + string(task) + "] ")
				err := followTask(c, cl, id, client.LogOptions{Task: string(task), Follow: true}, w)
				w.Close()
				if err != nil {
					fmt.Fprintf(c.App.ErrWriter, "coordinator: job logs: task %s: %v\n", task, err)
				}
			}(t.ID)
		}
		switch {
		case j.State.Ended() && len(followed) == 0:
			return nothingToFollow(j, ran)
		case j.State.Ended():
			return nil // once the streams have ended (deferred)
		case len(followed) == 0 && !said:
			fmt.Fprintf(c.App.ErrWriter, "waiting for job %s to be placed (%s); Ctrl-C stops waiting\n", id, j.State)
			said = true
		}
		if err := pause(c, id); err != nil {
			return nil // Ctrl-C: the streams end with it
		}
	}
}

// lineMux writes whole lines from several streams to one writer, so that
// their lines never mix.
type lineMux struct {
	mu sync.Mutex
	w  io.Writer
}

func (m *lineMux) prefixed(prefix string) *prefixWriter {
	return &prefixWriter{m: m, prefix: []byte(prefix)}
}

// maxLine bounds the part of a line a prefixWriter holds back: a longer
// line is written in pieces of this size, each with the prefix.
const maxLine = 64 << 10

// prefixWriter writes each line of one stream to its lineMux, prefixed;
// a line without its newline yet waits for it (Close writes it).
type prefixWriter struct {
	m      *lineMux
	prefix []byte
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 && len(p.buf) < maxLine {
			return len(b), nil
		}
		if i < 0 {
			i = maxLine - 1
		}
		if err := p.line(p.buf[:i+1]); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
}

// Close writes what is left of the last line, ending it.
func (p *prefixWriter) Close() {
	if len(p.buf) > 0 {
		_ = p.line(p.buf)
		p.buf = nil
	}
}

func (p *prefixWriter) line(b []byte) error {
	l := append(append([]byte(nil), p.prefix...), b...)
	if l[len(l)-1] != '\n' {
		l = append(l, '\n')
	}
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	_, err := p.m.w.Write(l)
	return err
}
