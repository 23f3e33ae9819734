package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func jobCommand() *cli.Command {
	return &cli.Command{
		Name:  "job",
		Usage: "submit, list, inspect and cancel jobs",
		Subcommands: []*cli.Command{
			{
				Name:      "submit",
				Usage:     "submit a job spec",
				UsageText: "coordinator job submit -f FILE [--wait] [--request-id ID]",
				Description: "Submits the job in FILE (see README.md, \"Jobs\"). A retry with the same --request-id\n" +
					"returns the job the first try created; without one, a random ID is used for this\n" +
					"command's own retries. --wait follows the job until it runs or ends, riding out a\n" +
					"coordinator that cannot be reached for a while (a restart; said once on stderr).\n" +
					"Exit status: 0 submitted (with --wait: the job runs or succeeded); 1 refused, or\n" +
					"(--wait) the job failed or was cancelled; 2 a usage error; 4 the coordinator could\n" +
					"not be reached to submit (retry with the --request-id it prints).\n" +
					"A job's name is unique among your (or its project's) jobs that have not ended: another\n" +
					"job of that name is refused, naming the one that holds it; once that one ends the name\n" +
					"is free again. Each job's ID (its name and a random suffix) is never reused.",
				Flags: []cli.Flag{
					fileFlag("the job spec"),
					&cli.BoolFlag{Name: "wait", Usage: "wait until the job is Running or has ended, printing its state changes"},
					&cli.StringFlag{Name: "request-id", Usage: "request ID that makes a retried submission safe (default: random)"},
					&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "how often --wait polls", Hidden: true},
					outputFlag(),
				},
				Action: jobSubmit,
			},
			{
				Name:      "list",
				Usage:     "list the jobs you may see (yours and your projects')",
				UsageText: "coordinator job list [--state S] [--owner U] [--project P] [--kind K] [--watch]",
				Description: "Lists the jobs, oldest first, with their AGE (since submitted) and DURATION (from its\n" +
					"first start, in any attempt, to its end or now; - if it never started). --watch then prints a job's\n" +
					"row again whenever it is new or changes, until interrupted (as kubectl get -w).",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "state", Usage: "only jobs in this state: Pending, Scheduled, Running, Succeeded, Failed or Cancelled"},
					&cli.StringFlag{Name: "owner", Usage: "only this user's jobs"},
					&cli.StringFlag{Name: "project", Usage: "only this project's jobs"},
					&cli.StringFlag{Name: "kind", Usage: "only jobs of this kind"},
					&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "after the list, print each job again when it is new or changes"},
					&cli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "how often --watch polls", Hidden: true},
					outputFlag(),
				},
				Action: jobList,
			},
			{Name: "status", Usage: "show a job and its tasks", ArgsUsage: "ID", Flags: []cli.Flag{outputFlag()}, Action: jobStatus},
			{Name: "why", Usage: "say why a job is pending", ArgsUsage: "ID", Flags: []cli.Flag{outputFlag()}, Action: jobWhy},
			jobEventsCommand(),
			jobWaitCommand(),
			{Name: "cancel", Usage: "cancel a job", ArgsUsage: "ID", Flags: []cli.Flag{outputFlag()}, Action: jobCancel},
			{Name: "logs", Usage: "show a job's output (stdout and stderr of its tasks)", ArgsUsage: "ID", Action: jobLogs,
				Description: "Shows the output of the job's current attempt: each replica's newest task. --all adds\n" +
					"the tasks it stopped before (earlier attempts, replicas placed again); --task shows one,\n" +
					"named by its task ID or by its replica index (that replica's newest task).",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep streaming: one task until it ends (--task, a one-replica job, an MPI job's launcher), or else every live replica, each line prefixed [TASK], until the job ends; a job not placed yet is waited for"},
					&cli.StringFlag{Name: "task", Usage: "only this task's output: a task ID, or a replica index"},
					&cli.BoolFlag{Name: "all", Usage: "every task the job kept, stopped ones too, not only the current attempt's"},
					&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "how often -f polls for the job's placement and new replicas", Hidden: true},
				}},
		},
	}
}

func serviceCommand() *cli.Command {
	return &cli.Command{
		Name:  "service",
		Usage: "operate long-running services",
		Subcommands: []*cli.Command{{
			Name:      "scale",
			Usage:     "set a service's replica count",
			ArgsUsage: "ID REPLICAS",
			Flags:     []cli.Flag{outputFlag()},
			Action:    serviceScale,
		}, {
			Name:      "restart",
			Usage:     "restart a service's replicas one at a time (minAvailable kept), so they get its configs' and secrets' newest versions",
			ArgsUsage: "ID",
			Flags:     []cli.Flag{outputFlag()},
			Action:    serviceRestart,
		}},
	}
}

func jobSubmit(c *cli.Context) error {
	if c.NArg() != 0 {
		return usagef("usage: coordinator job submit -f FILE [--wait]: the spec comes from -f, not arguments")
	}
	spec, err := readSpec(c)
	if err != nil {
		return err
	}
	cl := newClient(c)
	// The request ID is chosen here, so that a submission that could
	// not be told whether it landed can be retried with it.
	reqID := c.String("request-id")
	if reqID == "" {
		reqID = client.NewRequestID()
	}
	sub, err := cl.SubmitJob(c.Context, spec, reqID)
	if err != nil && unreachable(err) && c.Context.Err() == nil {
		return unreachableExit(cl, fmt.Sprintf("submit %s (retry with --request-id %s)", specSource(c), reqID), err)
	}
	if err != nil {
		return sentSpec(c, "submit", err)
	}
	f, err := format(c)
	if err != nil {
		return err
	}
	if !c.Bool("wait") {
		return show(c, sub, func(w io.Writer) { printSubmitted(w, sub) })
	}
	if f == formatTable {
		printSubmitted(c.App.Writer, sub)
	}
	js, err := waitJob(c, cl, sub.JobID, f == formatTable)
	if err != nil {
		return err
	}
	if f != formatTable {
		if err := show(c, js, nil); err != nil {
			return err
		}
	}
	switch js.Job.State {
	case structs.JobFailed, structs.JobCancelled:
		return cli.Exit(fmt.Sprintf("job %s %s: %s", js.Job.ID, strings.ToLower(string(js.Job.State)), reasonOr(js.Job.Reason, "no reason given")), 1)
	}
	return nil
}

func printSubmitted(w io.Writer, sub *wire.SubmitResponse) {
	state := structs.JobState("")
	if sub.Job != nil {
		state = sub.Job.State
	}
	if sub.Existing {
		fmt.Fprintf(w, "job %s was already submitted with request ID %s: %s\n", sub.JobID, sub.RequestID, state)
		return
	}
	fmt.Fprintf(w, "job %s submitted: %s\n", sub.JobID, state)
}

// waitJob polls job id until it is Running or has ended, printing, when
// print is set, a line whenever what the job waits on changes: its state
// and reason, its attempt (a restart can come and go between two polls),
// and while it is pending why, once per reason (a countdown in it, "(in
// 9s)", ticking down is no new reason).
func waitJob(c *cli.Context, cl *client.Client, id structs.JobID, print bool) (*wire.JobStatus, error) {
	interval := c.Duration("interval")
	poll := &jobPoller{c: c, cl: cl, id: id, interval: interval}
	var last, lastWhy string
	for {
		js, err := poll.get()
		if err != nil {
			return nil, err
		}
		j := js.Job
		state := string(j.State)
		if j.Attempt > 0 && !j.State.Ended() {
			state += fmt.Sprintf(" (attempt %d)", structs.AttemptNumber(j.Attempt))
		}
		state += reasonSuffix(j.Reason)
		if print && state != last {
			fmt.Fprintf(c.App.Writer, "%s  %s\n", when(now()), state)
		}
		last = state
		if print && j.State == structs.JobPending {
			// The job may have moved on between the two requests: then
			// the next poll prints its new state, not "why: not pending".
			if w, err := cl.Why(c.Context, id); err == nil && w.Pending && w.State == structs.JobPending && w.Message != "" && sched.Steady(w.Message) != lastWhy {
				fmt.Fprintf(c.App.Writer, "%s    why: %s\n", when(now()), w.Message)
				lastWhy = sched.Steady(w.Message)
			}
		}
		if running(js) || j.State.Ended() {
			return js, nil
		}
		t := time.NewTimer(interval)
		select {
		case <-c.Context.Done():
			t.Stop()
			return nil, fmt.Errorf("wait for job %s: %w", id, c.Context.Err())
		case <-t.C:
		}
	}
}

// maxCell bounds a table cell that carries a reason: a failed driver's
// 300-character reason made a column that wide. The whole text is on the
// State line of job status and in -o json|yaml.
const maxCell = 60

// cell is s cut to maxCell characters for a table.
func cell(s string) string {
	if r := []rune(s); len(r) > maxCell {
		return string(r[:maxCell-3]) + "..."
	}
	return s
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

func reasonOr(r, def string) string {
	if r == "" {
		return def
	}
	return r
}

func jobList(c *cli.Context) error {
	if c.NArg() != 0 {
		return usagef("usage: coordinator job list [--state S] [--owner U] [--project P] [--kind K] [--watch]")
	}
	cl := newClient(c)
	filter := client.JobFilter{
		State: structs.JobState(c.String("state")), Owner: structs.UserID(c.String("owner")),
		Project: structs.ProjectID(c.String("project")), Kind: structs.JobKind(c.String("kind")),
	}
	if c.Bool("watch") {
		f, err := format(c)
		if err != nil {
			return err
		}
		if f != formatTable {
			return usagef("--watch prints a table: leave out -o %s", f)
		}
		return watchJobs(c, cl, filter, c.Duration("interval"))
	}
	jobs, err := cl.ListJobs(c.Context, filter)
	if err != nil {
		return fmt.Errorf("list jobs: %w", err)
	}
	return show(c, wire.JobList{Jobs: jobs}, func(w io.Writer) {
		if len(jobs) == 0 {
			fmt.Fprintln(w, "no jobs")
			return
		}
		tw := tab(w)
		row(tw, toAny(jobHeader)...)
		for _, j := range jobs {
			row(tw, toAny(jobRow(j))...)
		}
		tw.Flush()
	})
}

func jobStatus(c *cli.Context) error {
	a, err := args(c, "ID")
	if err != nil {
		return err
	}
	js, err := newClient(c).Job(c.Context, structs.JobID(a[0]))
	if err != nil {
		return err
	}
	return show(c, js, func(w io.Writer) { printJob(w, js) })
}

func printJob(w io.Writer, js *wire.JobStatus) {
	j := js.Job
	s := j.ShapeAt(j.Shape)
	tw := tab(w)
	kv := func(k string, v any) { row(tw, k+":", v) }
	kv("ID", j.ID)
	kv("Name", j.Name)
	kv("Kind", j.Kind)
	kv("Owner", j.Owner)
	kv("Project", j.Project)
	kv("Priority", j.Priority)
	kv("State", string(j.State)+reasonSuffix(j.Reason))
	replicas := strconv.Itoa(s.Replicas)
	if j.MinAvailable > 0 {
		replicas += fmt.Sprintf(" (starts at %d)", j.MinAvailable)
	}
	kv("Replicas", replicas)
	kv("Resources", s.Resources.String()+" per replica")
	if j.Spark != nil {
		kv("Executors", fmt.Sprintf("at most %d of %s (bound as the driver asks)", j.Spark.MaxExecutors(), j.Spark.ExecutorResources()))
	}
	if j.Shape > 0 {
		kv("Shape", fmt.Sprintf("fallback %d", j.Shape))
	}
	if j.Image != "" {
		kv("Image", j.Image)
	}
	if len(j.Command) > 0 {
		kv("Command", strings.Join(append(append([]string{}, j.Command...), j.Args...), " "))
	}
	kv("Submitted", when(j.SubmitTime)+" ("+age(j.SubmitTime)+" ago)")
	if s := startedLine(j); s != "" {
		kv("Started", s)
	}
	if !j.EndedAt.IsZero() {
		kv("Ended", when(j.EndedAt))
	}
	if d := jobDuration(j); d != "-" {
		kv("Duration", d)
	}
	kv("Attempt", structs.AttemptNumber(j.Attempt))
	restarts := j.RestartSummary() // a batch job's budget
	if restarts == "" && j.ReplicaRestarts > 0 {
		restarts = fmt.Sprintf("%d replica(s) placed again", j.ReplicaRestarts)
	}
	if restarts != "" && !j.State.Ended() && now().Before(j.BackoffUntil) {
		restarts += fmt.Sprintf("; back-off until %s", when(j.BackoffUntil))
	}
	if restarts != "" {
		kv("Restarts", restarts)
	}
	if len(j.Charged) > 0 {
		kv("Charged", string(j.ChargedScope)+" "+resourceList(j.Charged))
	}
	if len(j.Datasets) > 0 {
		at := js.CacheAt
		if at == "" {
			at = j.CacheMountPath // an older coordinator's answer
		}
		kv("Datasets", strings.Join(j.Datasets, ", ")+" at "+at)
	}
	for _, wu := range js.WarmUps {
		kv("Warm-up", warmUpLine(wu))
	}
	for _, c := range j.Configs {
		kv("Config", configLine(c))
	}
	if r := restartLine(js); r != "" {
		kv("Restart", r)
	}
	tw.Flush()
	if len(js.Tasks) == 0 {
		fmt.Fprintln(w, "\nno tasks yet")
		return
	}
	fmt.Fprintln(w)
	tw = tab(w)
	versions := slices.ContainsFunc(js.Tasks, func(t *structs.Task) bool { return len(t.Configs) > 0 })
	head := []any{"TASK", "INDEX", "ATTEMPT", "NODE", "STATE", "RESOURCES", "STARTED", "ENDED", "DURATION"}
	if versions {
		head = append(head, "CONFIGS")
	}
	row(tw, head...)
	for _, t := range js.Tasks {
		var index any = t.Index
		if t.Executor != "" {
			index = "executor " + t.Executor // a spark job's, by its Pod
		}
		cells := []any{t.ID, index, structs.AttemptNumber(t.Attempt), t.Node, cell(taskState(t)), t.Resources, when(t.StartedAt), when(t.EndedAt), span(t.StartedAt, t.EndedAt)}
		if versions {
			cells = append(cells, taskConfigs(t))
		}
		row(tw, cells...)
	}
	tw.Flush()
}

// warmUpLine is one warm-up as job status shows it: "cluster b: lidar/x
// from a: 3/8 files, 1572864/4194304 bytes (37%), since ...". Progress
// comes from the leader, which runs the copy.
func warmUpLine(w structs.WarmUpStatus) string {
	var ds []string
	for _, d := range w.Datasets {
		if from := w.From[d]; from != "" {
			d += " from " + string(from)
		}
		ds = append(ds, d)
	}
	line := fmt.Sprintf("cluster %s: %s", w.Cluster, strings.Join(ds, ", "))
	switch {
	case w.TotalFiles > 0 || w.TotalBytes > 0:
		pct := int64(100)
		if w.TotalBytes > 0 {
			pct = 100 * w.Bytes / w.TotalBytes
		}
		line += fmt.Sprintf(": %d/%d files, %d/%d bytes (%d%%)", w.Files, w.TotalFiles, w.Bytes, w.TotalBytes, pct)
	case w.Running && w.Retries > 0:
		line += fmt.Sprintf(": a redis is unreachable, tried again %d time(s): %s", w.Retries, w.LastError)
	case w.Running:
		line += ": finding the datasets"
	default:
		line += ": waiting for the leader to start it"
	}
	return line + ", since " + when(w.Since)
}

// taskState is a task's STATE column: a task atom stopped (preempted,
// cancelled, scaled down, a gang restart, its coordinator's shutdown)
// shows as stopped with the reason, and what it exited with when its
// process reported that ("Stopped: Preempted (exit 143)"); one that
// never ran (its cache warm-up failed, its job ended during it) says why
// instead. A task recorded before the Stopped state existed (Failed or
// Succeeded with a stop reason) shows the same.
func taskState(t *structs.Task) string {
	stopped := t.State == structs.TaskStopped ||
		(t.StopReason != "" && (t.State == structs.TaskFailed || t.State == structs.TaskSucceeded))
	switch {
	case stopped && t.ExitReported():
		return fmt.Sprintf("Stopped: %s (exit %d)", t.StopReason, t.ExitCode)
	case stopped && t.StartedAt.IsZero() && t.Message != "" && t.Message != structs.ShutdownMessage:
		return fmt.Sprintf("Stopped: %s: %s", t.StopReason, t.Message)
	case stopped:
		return fmt.Sprintf("Stopped: %s", t.StopReason)
	case t.State == structs.TaskStopping && t.StopReason != "":
		return fmt.Sprintf("%s (%s)", t.State, t.StopReason)
	case t.ExitReported():
		return fmt.Sprintf("%s (exit %d)%s", t.State, t.ExitCode, reasonSuffix(t.Message))
	case t.State == structs.TaskFailed || t.State == structs.TaskSucceeded:
		return fmt.Sprintf("%s: %s", t.State, t.Message) // never ran, e.g. its cache warm-up failed
	case t.State == structs.TaskLost:
		return string(t.State) + reasonSuffix(strings.TrimPrefix(strings.TrimPrefix(t.Message, "lost"), ": "))
	}
	return string(t.State)
}

func jobWhy(c *cli.Context) error {
	a, err := args(c, "ID")
	if err != nil {
		return err
	}
	why, err := newClient(c).Why(c.Context, structs.JobID(a[0]))
	if err != nil {
		return err
	}
	return show(c, why, func(w io.Writer) {
		fmt.Fprintf(w, "%s: %s\n%s\n", why.Job, why.State, why.Message)
		if why.Queue != nil {
			fmt.Fprintf(w, "queue: %s\n", why.Queue)
		}
		if why.Why == nil || len(why.Why.Filtered) == 0 {
			return
		}
		fmt.Fprintln(w)
		tw := tab(w)
		row(tw, "NODES", "FILTERED BECAUSE")
		for _, f := range why.Why.Filtered {
			row(tw, f.Nodes, f.Reason)
		}
		if why.Why.Fit > 0 {
			row(tw, why.Why.Fit, "(fit a replica now)")
		}
		row(tw, why.Why.Nodes, "considered")
		tw.Flush()
	})
}

func jobCancel(c *cli.Context) error {
	a, err := args(c, "ID")
	if err != nil {
		return err
	}
	js, err := newClient(c).CancelJob(c.Context, structs.JobID(a[0]))
	if err != nil {
		return err
	}
	return show(c, js, func(w io.Writer) { fmt.Fprintf(w, "job %s cancelled\n", js.Job.ID) })
}

func serviceScale(c *cli.Context) error {
	a, err := args(c, "ID", "REPLICAS")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(a[1])
	if err != nil || n < 0 {
		return usagef("REPLICAS %q is not allowed: use a whole number from 0 (park the service) to %d", a[1], structs.MaxReplicas)
	}
	cl := newClient(c)
	before, err := cl.Job(c.Context, structs.JobID(a[0]))
	if err != nil {
		return err
	}
	js, err := cl.ScaleService(c.Context, structs.JobID(a[0]), n)
	if err != nil {
		return err
	}
	return show(c, js, func(w io.Writer) {
		unit := "replicas"
		if js.Job.Replicas == 1 {
			unit = "replica"
		}
		if before.Job.Kind == structs.KindService && before.Job.ShapeAt(before.Job.Shape).Replicas == n {
			fmt.Fprintf(w, "service %s already has %d %s: nothing changed\n", js.Job.ID, n, unit)
			return
		}
		fmt.Fprintf(w, "service %s scaled to %d %s\n", js.Job.ID, js.Job.Replicas, unit)
		if js.Job.Replicas == 0 {
			fmt.Fprintf(w, "its replicas stop; the service stays (Running, 0 replicas, no quota held): scale it up to run it again\n")
		}
	})
}
