package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/atom/internal/gpu"
	"github.com/atom-sched/atom/atom/internal/reap"
	"github.com/atom-sched/atom/atom/internal/report"
	"github.com/atom-sched/atom/atom/internal/supervise"
	"github.com/atom-sched/atom/pkg/cliusage"
	"github.com/atom-sched/atom/pkg/plugin"
	"github.com/atom-sched/atom/pkg/structs"
)

// forwarded are the signals atom passes on to its job.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run the job's command under atom's supervision",
		ArgsUsage: "-- CMD [ARGS...]",
		Flags: append(allocFlags(),
			&cli.DurationFlag{Name: "heartbeat", Value: 5 * time.Second, EnvVars: []string{"ATOM_HEARTBEAT"}, Usage: "heartbeat period (the coordinator sets it to a third of its heartbeat TTL)"},
			&cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "SIGTERM to SIGKILL when the coordinator stops the task"},
			&cli.DurationFlag{Name: "report-timeout", Value: time.Minute, Usage: "how long to retry the final report"},
			&cli.DurationFlag{Name: "stop-after-disconnect", EnvVars: []string{"ATOM_STOP_AFTER_DISCONNECT"},
				Usage: "stop the job when no coordinator server has answered a heartbeat for this long (the local backend sets its heartbeat TTL); 0: never, ride out any outage"},
			&cli.StringFlag{Name: "unsent-report", EnvVars: []string{"ATOM_UNSENT_REPORT"},
				Usage: "file to leave the final report in when no coordinator takes it (the local backend sets one in the task's directory and sends it on when a server is back)"},
			pluginDirFlag(), pluginSumsFlag(), launchFlags()[0], launchFlags()[1],
			&cli.BoolFlag{Name: "reap", Value: true, Usage: "reap orphaned descendants (as PID 1, or as a child subreaper) and kill those left when the job ends, as a container's end does"},
		),
		Action: run,
	}
}

// checkDurations refuses a --grace below 0 (0: SIGKILL at once) and a
// --heartbeat or --report-timeout of 0 or less, saying what is allowed
// and naming the flag or the variable the value came from.
func checkDurations(c *cli.Context) error {
	if c.Duration("grace") < 0 {
		return fmt.Errorf("%s: use 0 or more (0 kills at once; the default is 10s)", cliusage.Given(c, "grace"))
	}
	if c.Duration("stop-after-disconnect") < 0 {
		return fmt.Errorf("%s: use 0 (never) or more", cliusage.Given(c, "stop-after-disconnect"))
	}
	for _, name := range []string{"heartbeat", "report-timeout"} {
		if c.Duration(name) <= 0 {
			return fmt.Errorf("%s: use more than 0 (a duration such as 5s)", cliusage.Given(c, name))
		}
	}
	return nil
}

// process is what atom waits on: the job's process, or for a task that
// only serves launches (an MPI worker), the launched processes.
type process interface {
	Done() <-chan struct{}
	Signal(os.Signal) error
	Stop(grace time.Duration)
	ExitCode() int
	Describe() string
}

// run is atom's task lifecycle:
//
//	read allocation ─▶ GPU preflight ─fail─▶ report Failed(3), exit 3
//	      │ ok
//	      ▼
//	job type prepares (plugin) ─fail─▶ report Failed(4), exit 4
//	      │   heartbeats Running from here on; coordinator away: retry
//	      ▼
//	start child / serve launches ─▶ 409 or Stopping: SIGTERM, grace, SIGKILL
//	      │
//	      ▼
//	child exits ─▶ report Succeeded/Failed(code) ─▶ exit with the child's status
func run(c *cli.Context) error {
	// Signals are caught first, so a stop that comes while atom starts up
	// (a task preempted at once) is handled, not fatal to atom.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := checkDurations(c); err != nil {
		return cli.Exit("atom: "+err.Error(), exitUsage)
	}
	// 1. Allocation.
	a, err := readAllocation(c)
	if err != nil {
		return cli.Exit("atom: "+err.Error(), exitUsage)
	}
	argv := c.Args().Slice()
	if len(argv) == 0 && a.Kind == "command" && a.Coordinator == "" { // by hand; under a coordinator the job type refuses it, reported
		return cli.Exit("atom: no command: use atom run -- CMD [ARGS...]", exitUsage)
	}
	var rep *report.Reporter
	if a.Coordinator != "" {
		if err := undumpable(); err != nil {
			log.Warn("cannot hide atom's environment from the job", "err", err)
		}
		rep = report.New(a.Coordinator, structs.TaskID(a.Task), a.Token, c.Duration("heartbeat"), log)
		rep.StopAfterDisconnect = c.Duration("stop-after-disconnect")
		rep.Unsent = c.String("unsent-report")
	}
	// reportTimeout bounds the final report: one heartbeat period once
	// no server is left to take it.
	reportTimeout := c.Duration("report-timeout")
	final := func(state structs.TaskState, code int, msg string) {
		if rep == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
		defer cancel()
		if err := rep.Final(ctx, state, code, msg); err != nil {
			log.Warn("final report failed", "err", err)
		}
	}
	// finalOutside is final after a SIGTERM the coordinator had not asked
	// for (yet): the coordinator tells its own stop from a Pod deleted or
	// evicted, a node shutting down, a kill by hand.
	finalOutside := func(state structs.TaskState, code int, msg string) {
		if rep == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
		defer cancel()
		if err := rep.FinalOutside(ctx, state, code, msg); err != nil {
			log.Warn("final report failed", "err", err)
		}
	}
	// finalLauncherGone is final for an MPI worker whose launcher went
	// away (reason LauncherGone): the launcher's end says why.
	finalLauncherGone := func(code int, msg string) {
		if rep == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
		defer cancel()
		if err := rep.FinalLauncherGone(ctx, code, msg); err != nil {
			log.Warn("final report failed", "err", err)
		}
	}
	fail := func(code int, msg string) error {
		final(structs.TaskFailed, code, msg)
		return cli.Exit("atom: "+msg, code)
	}
	// finalDisconnected is final after atom stopped the job because no
	// coordinator server answered (reason CoordinatorLost): an outage,
	// not the job's failure.
	finalDisconnected := func(state structs.TaskState, code int, msg string) {
		if rep == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
		defer cancel()
		if err := rep.FinalDisconnected(ctx, state, code, msg); err != nil {
			log.Warn("final report failed", "err", err)
		}
	}
	lostFor := fmt.Sprintf("atom lost the coordinator for %s and stopped the task", c.Duration("stop-after-disconnect"))

	// 2. GPU preflight: the command does not start on a bad allocation.
	res, err := gpu.Preflight(lister(a), a.GPU)
	if err != nil {
		return failPreflight(c, rep, log, err)
	}
	extra := map[string]string{}
	if res.Available {
		extra["ATOM_GPU_UUIDS"] = strings.Join(res.UUIDs(), ",")
		if a.GPU.HostGPUs { // the job sees only its own GPUs
			extra["CUDA_VISIBLE_DEVICES"] = extra["ATOM_GPU_UUIDS"] // "" hides them all
		}
	}
	// 2b. The dataset cache, when the job asks for it (cache.go).
	mounted, err := mountCache(a, extra, log)
	if err != nil {
		return fail(exitCache, err.Error())
	}
	unmount := sync.OnceFunc(mounted)
	defer unmount()

	// 3. Heartbeat from here on.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hb := make(chan error, 1)
	if rep != nil {
		go func() { hb <- rep.Run(ctx) }()
	}

	// 4. The job type says what to run; it may wait (an MPI launcher
	// waits for its workers). A signal or a stop ends the wait.
	prepCtx, cancelPrep := context.WithCancel(ctx)
	defer cancelPrep()
	prepared := make(chan error, 1)
	var ex plugin.Exec
	go func() {
		var err error
		ex, err = prepare(prepCtx, c.String("plugin-dir"), c.String("plugin-sums"), a, argv)
		prepared <- err
	}()
	select {
	case err := <-prepared:
		if err != nil {
			cancel()
			return fail(exitPlugin, err.Error())
		}
	case s := <-sigs:
		cancelPrep()
		<-prepared
		code := 128 + int(s.(syscall.Signal))
		return fail(code, fmt.Sprintf("%s before the job started", s))
	case err := <-hb:
		cancelPrep()
		<-prepared
		if se := (*report.StopError)(nil); errors.As(err, &se) && se.Disconnected {
			reportTimeout = min(reportTimeout, c.Duration("heartbeat"))
			finalDisconnected(structs.TaskFailed, exitStopped, lostFor+" before the job started")
			return cli.Exit(fmt.Sprintf("atom: stopped before the job started: %v", err), exitStopped)
		}
		return fail(exitStopped, fmt.Sprintf("stopped before the job started: %v", err))
	}
	for k, v := range ex.Env {
		extra[k] = v
	}
	notice, noticeDone, err := noticeFile()
	if err != nil {
		cancel()
		return fail(exitNoStart, err.Error())
	}
	defer noticeDone()
	extra[noticeEnv] = notice
	if a.Token != "" {
		// The job gets the launch token, never the allocation token: it
		// can reach its peers (atom rsh), not report for its task.
		extra["ATOM_TOKEN"] = structs.LaunchToken(a.Token)
	}

	// 5. Start the child and/or serve launches.
	var reaper *reap.Reaper
	if c.Bool("reap") {
		if os.Getpid() != 1 {
			if err := reap.BecomeSubreaper(); err != nil {
				log.Warn("cannot become a child subreaper; orphans go to init", "err", err)
			}
		}
		reaper = reap.New()
		defer reaper.Close()
	}
	var child process
	if ex.ServeLaunches {
		l, err := serveLaunches(ctx, c, a, reaper, log)
		if err != nil {
			cancel()
			return fail(exitNoStart, err.Error())
		}
		defer l.Close()
		if rep != nil {
			rep.SetEndpoint(l.Endpoint())
		}
		child = l
	}
	watch, err := watchMPI(ex, log) // an MPI launcher: which rank failed, where
	if err != nil {
		cancel()
		return fail(exitNoStart, err.Error())
	}
	var sparkOut *sparkWatch // a Spark driver: the line that says why it failed
	if a.Kind == "spark" && len(ex.Argv) > 0 && watch == nil {
		if sparkOut, err = watchSpark(os.Stdout, os.Stderr); err != nil {
			cancel()
			return fail(exitNoStart, err.Error())
		}
	}
	if len(ex.Argv) > 0 {
		stdout, stderr := os.Stdout, os.Stderr
		if watch != nil {
			stderr = watch.w
		}
		if sparkOut != nil {
			stdout, stderr = sparkOut.stdout.w, sparkOut.stderr.w
		}
		ch, err := supervise.StartOutputs(ex.Argv, envList(extra), reaper, stdout, stderr)
		if watch != nil {
			watch.started()
		}
		if sparkOut != nil {
			sparkOut.started()
		}
		if err != nil {
			cancel()
			return fail(exitNoStart, err.Error())
		}
		child = ch
	}

	// 6. Heartbeat while the child runs.
	stopped, hbDone, termSent, disconnected := "", rep == nil, false, false
	var notices <-chan report.Notice
	if rep != nil {
		notices = rep.Notices()
	}
	for waiting := true; waiting; {
		select {
		case n := <-notices:
			// Preempted: the job may checkpoint until n.Until, when
			// SIGTERM and the grace follow.
			if err := deliverNotice(notice, n, child); err != nil {
				log.Warn("preemption notice", "err", err)
			}
			fmt.Fprintf(os.Stderr, "atom: preempted: the job is told (%s) and stopped at %s\n", notice, n.Until.UTC().Format(time.RFC3339))
		case s := <-sigs:
			if s == syscall.SIGTERM && stopped != "" {
				// The coordinator's stop already sent the job its SIGTERM
				// (the backend's comes after): one is enough.
				termSent = true
				continue
			}
			termSent = termSent || s == syscall.SIGTERM
			if err := child.Signal(s); err != nil {
				log.Warn("forward signal", "signal", s, "err", err)
			}
		case err := <-hb:
			hbDone = true
			var se *report.StopError
			if errors.As(err, &se) {
				stopped = se.Error()
				if se.Disconnected {
					reportTimeout = min(reportTimeout, c.Duration("heartbeat"))
					disconnected = true
				}
				if termSent { // the backend's SIGTERM got there first: only the grace is left
					go killAfter(child, c.Duration("grace"))
				} else {
					go child.Stop(c.Duration("grace"))
				}
			}
		case <-child.Done():
			waiting = false
		}
	}
	cancel()

	// 7. Nothing of the job outlives it; report the end and exit with the
	// child's status.
	unmount() // the mount's helper process is atom's, not a leftover of the job
	if reaper != nil {
		if n := reap.KillDescendants(time.Second); n > 0 {
			fmt.Fprintf(os.Stderr, "atom: the job ended; killed %d process(es) it left behind\n", n)
		}
	}
	code := child.ExitCode()
	rankFailed, errLine := "", ""
	if watch != nil {
		rankFailed = watch.explain() // mpirun's report is in the log before atom ends
	}
	if sparkOut != nil {
		errLine = sparkOut.explain() // and the driver's output
	}
	if rep != nil && !hbDone {
		<-hb // the last Running beat goes before the final report
	}
	switch {
	case disconnected:
		// Whatever the job did on its SIGTERM, the outage ended it.
		state := structs.TaskFailed
		if code == 0 {
			state = structs.TaskSucceeded
		}
		finalDisconnected(state, code, lostFor+"; the job then ended: "+child.Describe())
	case termSent && stopped == "":
		// A SIGTERM came (the kubelet's, most likely) with no word from
		// the coordinator: it decides whose stop it was.
		state := structs.TaskFailed
		if code == 0 {
			state = structs.TaskSucceeded
		}
		msg := "" // the exit code says it all
		if d := child.Describe(); !strings.HasPrefix(d, "exit code") {
			msg = d
		}
		finalOutside(state, code, msg)
	case code == 0:
		final(structs.TaskSucceeded, 0, "")
	case launcherGone(child) && stopped == "" && !termSent:
		finalLauncherGone(code, child.Describe())
	default:
		msg := "" // the exit code says it all
		if d := child.Describe(); !strings.HasPrefix(d, "exit code") {
			msg = d
		}
		if rankFailed != "" && stopped == "" && !termSent { // not a rank's end that a stop caused
			msg = rankFailed
		}
		if errLine != "" && msg == "" && stopped == "" && !termSent { // exited on its own, not killed
			msg = errLine
		}
		final(structs.TaskFailed, code, msg)
	}
	if stopped != "" {
		fmt.Fprintf(os.Stderr, "atom: %s; the job ended: %s\n", stopped, child.Describe())
	}
	if code != 0 {
		return cli.Exit("", code)
	}
	return nil
}

// launcherGone reports whether p is an MPI worker's launches that
// failed because the launcher went away.
func launcherGone(p process) bool {
	l, ok := p.(*launches)
	return ok && l.launcherGone()
}

// killAfter kills p once grace has passed, unless it ended by then.
func killAfter(p process, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.Done():
	case <-t.C:
		if l, ok := p.(*launches); ok {
			l.Stop(0)
			return
		}
		_ = p.Signal(syscall.SIGKILL)
	}
}

// envList turns env into K=V entries, sorted.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
