package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// Logs streams the output of job id's tasks (task "": the current
// attempt's) to w; with follow it keeps streaming one task's output until
// the task ends or ctx is done.
func (c *Client) Logs(ctx context.Context, id structs.JobID, task structs.TaskID, follow bool, w io.Writer) error {
	return c.LogsWith(ctx, id, LogOptions{Task: string(task), Follow: follow}, w)
}

// LogOptions says whose output Logs streams and how.
type LogOptions struct {
	// Task is a task ID, or a replica index ("1": that replica's newest
	// task); "" for the current attempt's tasks (each replica's newest).
	Task string
	// All shows every task the job kept (earlier attempts, replaced
	// replicas), when Task is "".
	All bool
	// Follow keeps streaming one task's output until it ends.
	Follow bool
	// Offset, with Follow, leaves out the first Offset bytes of the
	// task's output: what an earlier stream, cut short, already gave.
	Offset int64
	// Notes, if set, gets the note that stopped tasks are not shown,
	// after the output, which then does not end with it.
	Notes io.Writer
}

// LogsWith is Logs with options.
func (c *Client) LogsWith(ctx context.Context, id structs.JobID, o LogOptions, w io.Writer) error {
	q := url.Values{}
	if o.Task != "" {
		q.Set("task", o.Task)
	}
	if o.All {
		q.Set("all", "true")
	}
	if o.Follow {
		q.Set("follow", "true")
	}
	if o.Offset > 0 {
		q.Set("offset", strconv.FormatInt(o.Offset, 10))
	}
	if o.Notes != nil {
		q.Set("hidden", "header")
	}
	u := c.addr + "/v1/jobs/" + seg(string(id)) + "/logs"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("coordinator %s did not answer GET logs: %w", c.addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var we wire.Error
		if json.Unmarshal(data, &we) != nil || we.Error == "" {
			we.Error = strings.TrimSpace(string(data))
		}
		return &Error{Status: resp.StatusCode, Message: we.Error}
	}
	_, err = io.Copy(w, resp.Body)
	if n, _ := strconv.Atoi(resp.Header.Get(wire.HiddenTasksHeader)); n > 0 && o.Notes != nil && err == nil {
		fmt.Fprintln(o.Notes, wire.HiddenTasksNote(n, string(id)))
	}
	if ctx.Err() != nil {
		return nil // the caller stopped following
	}
	return err
}
