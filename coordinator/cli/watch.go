package cli

import (
	"fmt"
	"io"
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

// jobDuration is a job's DURATION: an ended job's from when it first
// started to when it ended, whatever its end ("-" if it never started);
// a live job's current attempt's, so far.
func jobDuration(j *structs.Job) string {
	if !j.State.Ended() {
		return span(j.StartedAt, j.EndedAt)
	}
	start := j.FirstStartedAt
	if start.IsZero() {
		start = j.StartedAt // ended before jobs kept their first start
	}
	return span(start, j.EndedAt)
}

var jobHeader = []string{"ID", "NAME", "KIND", "OWNER", "PROJECT", "PRIORITY", "STATE", "REPLICAS", "RESOURCES", "AGE", "DURATION"}

// watchJobs prints the jobs f matches as job list does, then, as kubectl
// get --watch does, a row again for each job that is new or changed
// (other than its age and duration), in the first table's columns. It
// polls every interval until interrupted.
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
		for _, j := range jobs {
			r := jobRow(j)
			key := r[:len(r)-2]
			if old, ok := seen[j.ID]; ok && slices.Equal(old, key) {
				continue
			}
			seen[j.ID] = key
			rows = append(rows, r)
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
