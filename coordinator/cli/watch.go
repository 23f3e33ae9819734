package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// jobRow is a job's row of job list; its last two cells (AGE, DURATION)
// change with the clock, the others only with the job.
func jobRow(j *structs.Job) []string {
	s := j.ShapeAt(j.Shape)
	return cells(j.ID, j.Name, j.Kind, j.Owner, j.Project, j.Priority, j.State, s.Replicas, s.Resources, age(j.SubmitTime), jobDuration(j))
}

// jobDuration is a job's DURATION: from when it first started (its first
// task's first start, in any attempt) to when it ended, or to now while it
// has not; "-" if it never started. A job restarted by its restart policy
// counts every attempt, as kubectl's Job DURATION does.
func jobDuration(j *structs.Job) string {
	return span(firstStart(j), j.EndedAt)
}

// firstStart is when j first started.
func firstStart(j *structs.Job) time.Time {
	if j.FirstStartedAt.IsZero() {
		return j.StartedAt // started before jobs kept their first start
	}
	return j.FirstStartedAt
}

// startedLine is job status's Started: the first start and, when the
// current attempt started later or has not started, that attempt's.
func startedLine(j *structs.Job) string {
	first := firstStart(j)
	switch {
	case first.IsZero():
		return ""
	case !j.StartedAt.IsZero() && !j.StartedAt.Equal(first):
		return fmt.Sprintf("%s (attempt %d started %s)", when(first), structs.AttemptNumber(j.Attempt), when(j.StartedAt))
	case j.StartedAt.IsZero() && j.State.Ended():
		return fmt.Sprintf("%s (attempt %d never started)", when(first), structs.AttemptNumber(j.Attempt))
	case j.StartedAt.IsZero():
		return fmt.Sprintf("%s (attempt %d not started yet)", when(first), structs.AttemptNumber(j.Attempt))
	}
	return when(first)
}

var jobHeader = []string{"ID", "NAME", "KIND", "OWNER", "PROJECT", "PRIORITY", "STATE", "REPLICAS", "RESOURCES", "AGE", "DURATION"}

// watchJobs prints the jobs f matches as job list does, then, as kubectl
// get --watch does, a row again for each job that is new or changed
// (other than its age and duration), in the first table's columns, and a
// last row for one that no longer matches (its new state). It polls
// every interval until interrupted.
func watchJobs(c *cli.Context, cl *client.Client, f client.JobFilter, interval time.Duration) error {
	w := c.App.Writer
	seen := map[structs.JobID][]string{}
	var widths []int
	for first := true; ; first = false {
		jobs, err := cl.ListJobs(c.Context, f)
		switch {
		case err != nil && c.Context.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("list jobs: %w", err)
		}
		var rows [][]string
		listed := make(map[structs.JobID]bool, len(jobs))
		for _, j := range jobs {
			listed[j.ID] = true
			r := jobRow(j)
			key := r[:len(r)-2]
			if old, ok := seen[j.ID]; ok && slices.Equal(old, key) {
				continue
			}
			seen[j.ID] = key
			rows = append(rows, r)
		}
		// A job that left the list (--state Running: it ended) is shown
		// once more as it is now, saying where it went, then forgotten.
		for _, id := range slices.Sorted(maps.Keys(seen)) {
			if listed[id] {
				continue
			}
			delete(seen, id)
			if js, err := cl.Job(c.Context, id); err == nil {
				rows = append(rows, jobRow(js.Job))
			}
		}
		if first {
			widths = columnWidths(append([][]string{jobHeader}, rows...))
			printRow(w, widths, jobHeader)
		}
		for _, r := range rows {
			printRow(w, widths, r)
		}
		t := time.NewTimer(interval)
		select {
		case <-c.Context.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// cells formats values as table cells ("-" for empty ones), as row does.
func cells(values ...any) []string {
	out := make([]string, len(values))
	for i, v := range values {
		if out[i] = fmt.Sprint(v); out[i] == "" {
			out[i] = "-"
		}
	}
	return out
}

// columnWidths is the width of each column of rows.
func columnWidths(rows [][]string) []int {
	var w []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], len(c))
		}
	}
	return w
}

// printRow prints r in columns of widths, two spaces apart (a longer
// cell pushes the rest along).
func printRow(w io.Writer, widths []int, r []string) {
	var b strings.Builder
	for i, c := range r {
		b.WriteString(c)
		if i < len(r)-1 {
			b.WriteString(strings.Repeat(" ", max(widths[i]-len(c), 0)+2))
		}
	}
	fmt.Fprintln(w, b.String())
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
