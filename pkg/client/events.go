package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// EventQuery narrows JobEvents and Events: events after event number
// SinceSeq, at or after SinceTime, at most Limit of them (the newest;
// 0: the server's default, 100). Zero fields narrow nothing. Since, if
// set, is either, as written (an event number or an RFC 3339 time): the
// server checks it.
type EventQuery struct {
	SinceSeq  uint64
	SinceTime time.Time
	Since     string
	Limit     int
}

func (q EventQuery) values() url.Values {
	v := url.Values{}
	switch {
	case q.Since != "":
		v.Set("since", q.Since)
	case q.SinceSeq > 0:
		v.Set("since", strconv.FormatUint(q.SinceSeq, 10))
	case !q.SinceTime.IsZero():
		v.Set("since", q.SinceTime.UTC().Format(time.RFC3339Nano))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// JobEvents returns a job's events, oldest first.
func (c *Client) JobEvents(ctx context.Context, id structs.JobID, q EventQuery) (*wire.EventList, error) {
	var out wire.EventList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs/" + seg(string(id)) + "/events", query: q.values(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Events returns the cluster's recent events of the jobs the caller may
// see, oldest first.
func (c *Client) Events(ctx context.Context, q EventQuery) (*wire.EventList, error) {
	var out wire.EventList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/events", query: q.values(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
