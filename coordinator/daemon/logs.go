package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/atom-sched/atom/coordinator/backend"
	"github.com/atom-sched/atom/coordinator/local"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// pathLogs serves a task's output file to the other servers: a task's
// output stays on the server whose backend ran it, and a user may ask any.
const pathLogs = "/internal/v1/logs/"

// localLog opens the output of a task this server's backend ran.
func localLog(run *local.Backend, id structs.TaskID) (io.ReadCloser, error) {
	p := run.LogPath(string(id))
	if p == "" {
		return nil, fs.ErrNotExist
	}
	return os.Open(p)
}

// logSource opens a task's output: a task on a kubernetes cluster's
// container log through its API server; else the task's output file here
// or, failing that, on the first other server that has it. With follow, a
// stream lasts until the task ends.
func (f *forwarder) logSource(run *local.Backend, be backend.Backend, self string) func(structs.TaskID, bool) (io.ReadCloser, error) {
	r, _ := be.(*router)
	return func(id structs.TaskID, follow bool) (io.ReadCloser, error) {
		if r != nil {
			if rc, ok, err := r.kubeLogs(id, follow); ok {
				return rc, err
			}
		}
		rc, err := localLog(run, id)
		if !errors.Is(err, fs.ErrNotExist) {
			return rc, err
		}
		var down []string
		for sid, base := range f.peers {
			if sid == self {
				continue
			}
			u := base + pathLogs + url.PathEscape(string(id))
			if follow {
				u += "?follow=true"
			}
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
			req.Header.Set("Authorization", "Bearer "+f.secret)
			resp, err := f.logClient.Do(req)
			if err != nil {
				down = append(down, sid) // it may have run the task, but cannot say
				continue
			}
			if resp.StatusCode == http.StatusOK {
				return resp.Body, nil
			}
			resp.Body.Close()
		}
		if len(down) > 0 {
			slices.Sort(down)
			return nil, fmt.Errorf("no server that answered keeps any; %s, down, may have run it: %w", strings.Join(down, ", "), fs.ErrNotExist)
		}
		return nil, fmt.Errorf("no server keeps any: it wrote none, or its output was removed with the server that ran it: %w", fs.ErrNotExist)
	}
}

// serveLogs answers the other servers' GET pathLogs{id}[?follow=true].
func (f *forwarder) serveLogs(run *local.Backend) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := structs.TaskID(r.PathValue("id"))
		rc, err := localLog(run, id)
		if err != nil {
			http.Error(w, fmt.Sprintf(`{"error":%q}`, err.Error()), http.StatusNotFound)
			return
		}
		defer rc.Close()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.URL.Query().Get("follow") != "true" {
			_, _ = io.Copy(w, rc)
			return
		}
		rcw := http.NewResponseController(w)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := io.Copy(w, rc); err != nil {
				return
			}
			_ = rcw.Flush()
			ended := true
			f.srv.Read(func(st *state.State) {
				if t := st.Tasks[id]; t != nil {
					ended = !t.State.HoldsResources()
				}
			})
			if ended {
				_, _ = io.Copy(w, rc)
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}
}
