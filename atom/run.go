package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/atom/internal/gpu"
	"github.com/atom-sched/atom/atom/internal/reap"
	"github.com/atom-sched/atom/atom/internal/report"
	"github.com/atom-sched/atom/atom/internal/supervise"
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
			&cli.BoolFlag{Name: "reap", Value: os.Getpid() == 1, DefaultText: "true as PID 1", Usage: "reap orphaned descendants (as PID 1, or as a child subreaper)"},
		),
		Action: run,
	}
}

// run is atom's task lifecycle:
//
//	read allocation ─▶ GPU preflight ─fail─▶ report Failed(3), exit 3
//	      │ ok
//	      ▼
//	start child ─▶ heartbeat Running every period ◀─ coordinator away: retry
//	      │            │ 409 / Stopping
//	      │            ▼
//	      │        SIGTERM, grace, SIGKILL
//	      ▼
//	child exits ─▶ report Succeeded/Failed(code) ─▶ exit with the child's status
func run(c *cli.Context) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// 1. Allocation.
	a, err := readAllocation(c)
	if err != nil {
		return cli.Exit("atom: "+err.Error(), exitUsage)
	}
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return cli.Exit("atom: no command: use atom run -- CMD [ARGS...]", exitUsage)
	}
	var rep *report.Reporter
	if a.Coordinator != "" {
		rep = report.New(a.Coordinator, structs.TaskID(a.Task), a.Token, c.Duration("heartbeat"), log)
	}
	fail := func(code int, msg string) error {
		if rep != nil {
			ctx, cancel := context.WithTimeout(context.Background(), c.Duration("report-timeout"))
			defer cancel()
			if err := rep.Final(ctx, structs.TaskFailed, code, msg); err != nil {
				log.Warn("final report failed", "err", err)
			}
		}
		return cli.Exit("atom: "+msg, code)
	}

	// 2. GPU preflight: the command does not start on a bad allocation.
	res, err := gpu.Preflight(lister, a.GPU)
	if err != nil {
		return fail(exitPreflight, err.Error())
	}
	var extra []string
	if res.Available {
		extra = append(extra, "ATOM_GPU_UUIDS="+strings.Join(res.UUIDs(), ","))
	}

	// 3. Start the child, with signals caught first so none is lost.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
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
	child, err := supervise.Start(argv, extra, reaper)
	if err != nil {
		return fail(exitNoStart, err.Error())
	}

	// 4. Heartbeat while the child runs.
	ctx, cancel := context.WithCancel(context.Background())
	hb := make(chan error, 1)
	if rep != nil {
		go func() { hb <- rep.Run(ctx) }()
	}
	stopped, hbDone := "", rep == nil
	for waiting := true; waiting; {
		select {
		case s := <-sigs:
			if err := child.Signal(s); err != nil {
				log.Warn("forward signal", "signal", s, "err", err)
			}
		case err := <-hb:
			hbDone = true
			var se *report.StopError
			if errors.As(err, &se) {
				stopped = se.Error()
				go child.Stop(c.Duration("grace"))
			}
		case <-child.Done():
			waiting = false
		}
	}
	cancel()

	// 5. Report the end and exit with the child's status.
	code := child.ExitCode()
	if rep != nil {
		if !hbDone {
			<-hb // the last Running beat goes before the final report
		}
		state, msg := structs.TaskSucceeded, ""
		if code != 0 {
			state, msg = structs.TaskFailed, child.Describe()
		}
		ctx, cancelFinal := context.WithTimeout(context.Background(), c.Duration("report-timeout"))
		defer cancelFinal()
		if err := rep.Final(ctx, state, code, msg); err != nil {
			log.Warn("final report failed", "err", err)
		}
	}
	if stopped != "" {
		fmt.Fprintf(os.Stderr, "atom: %s; the job ended with %s\n", stopped, child.Describe())
	}
	if code != 0 {
		return cli.Exit("", code)
	}
	return nil
}
