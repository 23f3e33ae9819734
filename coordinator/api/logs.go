package api

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// LogSource opens the output (stdout and stderr) a task has written so
// far (with follow, a reader may also return what it writes later, until
// the task ends); fs.ErrNotExist when no server holds any for it.
type LogSource func(id structs.TaskID, follow bool) (io.ReadCloser, error)

// maxLogBytes bounds one logs response when not following.
const maxLogBytes = 8 << 20

// jobLogs: GET /v1/jobs/{id}/logs[?task=ID][&follow=true]: the output of
// the job's tasks (all of them, each under a "==> task <==" header, or
// one), as text. With follow, the response stays open and streams what
// the task writes until it ends or the client goes away.
func (s *server) jobLogs(w http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	js, err := s.jobStatus(structs.JobID(r.PathValue("id")), c)
	if err != nil {
		return 0, nil, err
	}
	if s.logs == nil {
		return 0, nil, errorf(http.StatusNotImplemented, "this coordinator keeps no task logs (its backend's own log system has them)")
	}
	q := r.URL.Query()
	follow, _ := strconv.ParseBool(q.Get("follow"))
	want := structs.TaskID(q.Get("task"))
	var tasks []*structs.Task
	for _, t := range js.Tasks {
		if want == "" || t.ID == want {
			tasks = append(tasks, t)
		}
	}
	if want != "" && len(tasks) == 0 {
		return 0, nil, errorf(http.StatusNotFound, "job %s has no task %s", js.Job.ID, trunc(string(want)))
	}
	if follow && len(tasks) != 1 {
		return 0, nil, errorf(http.StatusBadRequest, "follow needs one task: add ?task=ID (the job has %d)", len(tasks))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	budget := int64(maxLogBytes)
	for _, t := range tasks {
		if len(tasks) > 1 {
			fmt.Fprintf(w, "==> %s (replica %d, node %s) <==\n", t.ID, t.Index, t.Node)
		}
		rc, err := s.logs(t.ID, follow)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintln(w, "(no output kept: the server that ran it is down, or it wrote none)")
			continue
		}
		if err != nil {
			fmt.Fprintf(w, "(cannot read the output: %v)\n", err)
			continue
		}
		if !follow {
			n, _ := io.Copy(w, io.LimitReader(rc, budget))
			budget -= n
			rc.Close()
			continue
		}
		s.follow(w, r, rc, t.ID)
		rc.Close()
	}
	return 0, nil, nil
}

// follow copies rc to w as it grows until the task ends or the client
// leaves.
func (s *server) follow(w http.ResponseWriter, r *http.Request, rc io.Reader, id structs.TaskID) {
	rc2 := http.NewResponseController(w)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := io.Copy(w, rc); err != nil {
			return
		}
		_ = rc2.Flush()
		if s.taskEnded(id) {
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

// taskEnded reports whether task id no longer runs (or is gone).
func (s *server) taskEnded(id structs.TaskID) bool {
	ended := true
	s.store.Read(func(st *state.State) {
		if t := st.Tasks[id]; t != nil {
			ended = !t.State.HoldsResources()
		}
	})
	return ended
}
