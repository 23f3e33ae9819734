package cli

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func jobEventsCommand() *cli.Command {
	return &cli.Command{
		Name:      "events",
		Usage:     "show a job's history: every change of the job and its tasks, with its time and reason",
		ArgsUsage: "ID",
		Description: "Lists what happened to the job, oldest first: submitted, each task placed (node,\n" +
			"accelerators) and started, preempted (by which job, GPU-seconds run) or preempting,\n" +
			"lost, stopped, failed (exit code), restarted (using one of its restarts), requeued\n" +
			"without using one (a coordinator shutdown or outage, a failed preflight), scaled,\n" +
			"cancelled, and accelerators quarantined after a failed preflight. ATTEMPT counts the\n" +
			"job's attempts from 1. A job keeps its newest 100 events.",
		Flags:  []cli.Flag{outputFlag()},
		Action: jobEvents,
	}
}

func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:      "events",
		Usage:     "show the cluster's recent events of the jobs you may see (admins: all)",
		UsageText: "coordinator events [--since SEQ|TIME] [--limit N]",
		Description: "Lists the newest events of every job you may see, oldest first. The cluster keeps\n" +
			"its newest 1000. --since takes an event number (SEQ in -o json, or an earlier\n" +
			"answer's latest) or an RFC 3339 time, and shows only later events.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "since", Usage: "only events after this event number, or at or after this RFC 3339 time"},
			&cli.IntFlag{Name: "limit", Usage: "at most this many (the newest), 1 to 1000 (default 100)"},
			outputFlag(),
		},
		Action: listEvents,
	}
}

func jobEvents(c *cli.Context) error {
	a, err := args(c, "ID")
	if err != nil {
		return err
	}
	l, err := newClient(c).JobEvents(c.Context, structs.JobID(a[0]), client.EventQuery{})
	if err != nil {
		return err
	}
	return show(c, l, func(w io.Writer) { printEvents(w, l) })
}

func listEvents(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	if c.IsSet("limit") && c.Int("limit") < 1 {
		return usagef("--limit %d is not allowed: use a whole number from 1 to 1000 (default 100)", c.Int("limit"))
	}
	l, err := newClient(c).Events(c.Context, client.EventQuery{Since: c.String("since"), Limit: c.Int("limit")})
	if err != nil {
		return err
	}
	return show(c, l, func(w io.Writer) { printEvents(w, l) })
}

// printEvents prints a job's events (with their attempt) or the
// cluster's (with their job).
func printEvents(w io.Writer, l *wire.EventList) {
	if l.Dropped > 0 {
		fmt.Fprintf(w, "(%d earlier events dropped: a job keeps its newest 100)\n", l.Dropped)
	}
	if len(l.Events) == 0 {
		fmt.Fprintln(w, "no events")
		return
	}
	tw := tab(w)
	if l.Job != "" {
		row(tw, "TIME", "EVENT", "ATTEMPT", "MESSAGE")
	} else {
		row(tw, "TIME", "JOB", "EVENT", "MESSAGE")
	}
	for _, e := range l.Events {
		if l.Job != "" {
			row(tw, when(e.Time), e.Type, structs.AttemptNumber(e.Attempt), e.Message)
		} else {
			row(tw, when(e.Time), e.Job, e.Type, e.Message)
		}
	}
	tw.Flush()
	if l.Truncated {
		fmt.Fprintln(w, "(older events left out: raise --limit, up to 1000)")
	}
}
