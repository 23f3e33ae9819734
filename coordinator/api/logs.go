package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// LogSource opens the output (stdout and stderr) a task has written so
// far (with follow, a reader may also return what it writes later, until
// the task ends); fs.ErrNotExist when no server holds any for it.
type LogSource func(id structs.TaskID, follow bool) (io.ReadCloser, error)

// maxLogBytes bounds one logs response when not following: the tasks
// share it, and each shows the last bytes of its share (the end of a
// task's output, where its errors are).
const maxLogBytes = 8 << 20

// minTaskLogBytes is the least a task's share comes to, however many
// tasks the job has.
const minTaskLogBytes = 4 << 10

// jobLogs: GET /v1/jobs/{id}/logs[?task=T][&all=true][&follow=true][&offset=N]: the
// output of the job's tasks, as text: the current attempt's (each
// replica's newest task), with all every task the job kept (earlier
// attempts, replaced replicas), or one (task: a task ID, or a replica
// index for that replica's newest task); several each under a "==> task
// <==" header. Without follow, the tasks share maxLogBytes and each
// shows the end of its output, after a line saying how much was cut. With
// follow, the response stays open and streams all the task wrote and
// writes until it ends or the client goes away. offset (with follow)
// leaves out the first N bytes of its output: a client whose stream broke
// (a coordinator restart) asks for what comes after what it has.
func (s *server) jobLogs(w http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	js, err := s.jobStatus(r.Context(), structs.JobID(r.PathValue("id")), c)
	if err != nil {
		return 0, nil, err
	}
	if s.logs == nil {
		return 0, nil, errorf(http.StatusNotImplemented, "this coordinator keeps no task logs (its backend's own log system has them)")
	}
	q := r.URL.Query()
	follow, _ := strconv.ParseBool(q.Get("follow"))
	all, _ := strconv.ParseBool(q.Get("all"))
	tasks, hidden, err := logTasks(js, q.Get("task"), all)
	if err != nil {
		return 0, nil, err
	}
	if follow && len(tasks) != 1 {
		return 0, nil, errorf(http.StatusBadRequest, "follow needs one task: add ?task=ID (the job has %d)", len(tasks))
	}
	var offset int64
	if o := q.Get("offset"); o != "" {
		if offset, err = strconv.ParseInt(o, 10, 64); err != nil || offset < 0 {
			return 0, nil, errorf(http.StatusBadRequest, "offset %q is not allowed: use a byte count, 0 or more", trunc(o))
		}
		if !follow {
			return 0, nil, errorf(http.StatusBadRequest, "offset is for a followed stream: add follow=true and task=ID")
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if hidden > 0 {
		w.Header().Set(wire.HiddenTasksHeader, strconv.Itoa(hidden))
	}
	w.WriteHeader(http.StatusOK)
	if hidden > 0 && q.Get("hidden") != "header" {
		defer fmt.Fprintln(w, wire.HiddenTasksNote(hidden, string(js.Job.ID)))
	}
	if len(tasks) == 0 {
		attempt := ""
		if js.Job.Attempt > 0 {
			attempt = fmt.Sprintf(" in attempt %d", structs.AttemptNumber(js.Job.Attempt))
		}
		fmt.Fprintf(w, "(no output: job %s has no task yet%s (%s); coordinator job why %s says why)\n", js.Job.ID, attempt, js.Job.State, js.Job.ID)
		return 0, nil, nil
	}
	budget := int64(maxLogBytes)
	for i, t := range tasks {
		if len(tasks) > 1 {
			fmt.Fprintf(w, "==> %s (replica %d, node %s) <==\n", t.ID, t.Index, t.Node)
		}
		rc, err := s.logs(t.ID, follow)
		if follow && errors.Is(err, fs.ErrNotExist) {
			rc, err = s.awaitLog(r, t.ID)
		}
		if errors.Is(err, fs.ErrNotExist) {
			if why := notStarted(s.taskNow(t)); why != "" {
				fmt.Fprintf(w, "(no output: %s)\n", why)
			} else {
				fmt.Fprintf(w, "(no output kept: %s)\n", noOutput(err))
			}
			continue
		}
		if err == nil && offset > 0 {
			if err = skip(rc, offset); err != nil {
				rc.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(w, "(cannot read the output: %v)\n", err)
			continue
		}
		if !follow {
			// An even share of what is left, so a task that wrote
			// little leaves more to those after it.
			share := max(budget/int64(len(tasks)-i), minTaskLogBytes)
			tail, cut, err := readTail(rc, share)
			rc.Close()
			budget -= int64(len(tail))
			if cut > 0 {
				fmt.Fprintf(w, "(… %s cut: showing the last %s; coordinator job logs -f --task %s %s shows all)\n",
					sizeOf(cut), sizeOf(int64(len(tail))), t.ID, js.Job.ID)
			}
			_, _ = w.Write(tail)
			if err != nil {
				if len(tail) > 0 && tail[len(tail)-1] != '\n' {
					fmt.Fprintln(w)
				}
				fmt.Fprintf(w, "(cannot read the rest of the output: %v)\n", err)
			}
			continue
		}
		s.follow(w, r, rc, t.ID)
		rc.Close()
	}
	return 0, nil, nil
}

// skip leaves out the first n bytes of rc: a file seeks past them, a
// stream (another server's, a container log) reads them.
func skip(rc io.ReadCloser, n int64) error {
	if s, ok := rc.(io.Seeker); ok {
		_, err := s.Seek(n, io.SeekStart)
		return err
	}
	_, err := io.CopyN(io.Discard, rc, n)
	if errors.Is(err, io.EOF) {
		return nil // all of it was before the offset
	}
	return err
}

// logTasks picks the tasks of js whose output a logs request shows, and
// counts those it leaves out: task names one (a task ID, or a replica
// index: that replica's newest task); else all of them, or the current
// attempt's with each replica's newest task only (a replica placed again
// has a newer task).
func logTasks(js *wire.JobStatus, task string, all bool) (tasks []*structs.Task, hidden int, err error) {
	if n, err := strconv.Atoi(task); err == nil {
		var newest *structs.Task
		for _, t := range js.Tasks {
			if t.Index == n && t.Executor == "" && newer(t, newest) {
				newest = t
			}
		}
		if newest == nil {
			return nil, 0, errorf(http.StatusNotFound, "job %s has no task of replica %d (replicas 0 to %d; coordinator job status %s lists its tasks)", js.Job.ID, n, js.Job.ShapeAt(js.Job.Shape).Replicas-1, js.Job.ID)
		}
		return []*structs.Task{newest}, 0, nil
	}
	if task != "" {
		for _, t := range js.Tasks {
			if string(t.ID) == task {
				return []*structs.Task{t}, 0, nil
			}
		}
		return nil, 0, errorf(http.StatusNotFound, "job %s has no task %s: give a task ID or a replica index (coordinator job status %s lists its tasks)", js.Job.ID, trunc(task), js.Job.ID)
	}
	if all {
		return js.Tasks, 0, nil
	}
	for _, t := range js.Tasks {
		current := t.Attempt == js.Job.Attempt
		for _, o := range js.Tasks {
			if current && o != t && o.Attempt == t.Attempt && o.Index == t.Index && newer(o, t) {
				current = false // replaced
			}
		}
		if current {
			tasks = append(tasks, t)
		} else {
			hidden++
		}
	}
	return tasks, hidden, nil
}

// newer reports whether task a replaced b (or b is nil): a live task
// before an ended one, then the later placed, then the later ID.
func newer(a, b *structs.Task) bool {
	switch {
	case b == nil:
		return true
	case a.State.HoldsResources() != b.State.HoldsResources():
		return a.State.HoldsResources()
	case a.Attempt != b.Attempt:
		return a.Attempt > b.Attempt
	case !a.ScheduledAt.Equal(b.ScheduledAt):
		return a.ScheduledAt.After(b.ScheduledAt)
	}
	return a.ID > b.ID
}

// notStarted says why task t has no output when it never started: it
// ended before it started (a failed cache warm-up, a process that could
// not start, a lost placement), or it has not started yet; "" when it
// started.
func notStarted(t *structs.Task) string {
	switch {
	case !t.StartedAt.IsZero() || t.State == structs.TaskSucceeded:
		return "" // a task that succeeded ran, whether or not its start was reported
	case t.State == structs.TaskScheduled:
		return fmt.Sprintf("task %s has not started yet", t.ID)
	case t.State.HoldsResources():
		return ""
	}
	what := "failed"
	if t.State != structs.TaskFailed {
		what = "ended (" + strings.ToLower(string(t.State)) + ")"
	}
	why := strings.TrimPrefix(t.Message, "never started: ")
	if why == "" {
		why = fmt.Sprintf("exit code %d", t.ExitCode)
	}
	return fmt.Sprintf("task %s %s before it started: %s", t.ID, what, why)
}

// noOutput says why a task has no output to show: what err (which wraps
// fs.ErrNotExist) says, or, when it says no more, where output is kept.
func noOutput(err error) string {
	if err == fs.ErrNotExist {
		return "the server that ran it is down, or it wrote none"
	}
	return strings.TrimSuffix(err.Error(), ": "+fs.ErrNotExist.Error())
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

// awaitLog opens task id's output for following once there is one: a
// task placed but not started yet has written nothing (`job logs -f` right
// after `job submit` answered "no output kept"). It gives up, with
// fs.ErrNotExist, when the task ends without any, and when the client
// leaves.
func (s *server) awaitLog(r *http.Request, id structs.TaskID) (io.ReadCloser, error) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ended := s.taskEnded(id)
		rc, err := s.logs(id, true)
		if !errors.Is(err, fs.ErrNotExist) || ended {
			return rc, err
		}
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-tick.C:
		}
	}
}

// taskEnded reports whether task id no longer runs (or is gone).
// taskNow is task t as it is now (a followed task has moved on since the
// request read it), or t when it is gone.
func (s *server) taskNow(t *structs.Task) *structs.Task {
	s.store.Read(func(st *state.State) {
		if now := st.Tasks[t.ID]; now != nil {
			t = now
		}
	})
	return t
}

func (s *server) taskEnded(id structs.TaskID) bool {
	ended := true
	s.store.Read(func(st *state.State) {
		if t := st.Tasks[id]; t != nil {
			ended = !t.State.HoldsResources()
		}
	})
	return ended
}

// partialLine is how far into a cut output readTail looks for the end of
// the line the cut fell in, to start at a whole line.
const partialLine = 4 << 10

// readTail reads r to its end and returns its last n bytes at most, and
// how many bytes before them it left out. A file (an io.Seeker) is not read
// before its last n bytes; anything else is read through, keeping the last
// n. When something was cut, the tail starts after the first newline within
// its first partialLine bytes, if there is one: a whole line, not the end of
// one. err is a read error; the tail is what came before it.
func readTail(r io.Reader, n int64) (tail []byte, cut int64, err error) {
	ring := &tailBuffer{max: int(n)}
	if s, ok := r.(io.Seeker); ok {
		if size, err := s.Seek(0, io.SeekEnd); err == nil {
			start := max(size-n, 0)
			if _, err := s.Seek(start, io.SeekStart); err == nil {
				ring.total = start
			} else if _, err := s.Seek(0, io.SeekStart); err != nil {
				return nil, 0, err
			}
		}
	}
	_, err = io.Copy(ring, r)
	tail, cut = ring.bytes(), ring.total-int64(ring.len())
	if cut > 0 {
		if i := bytes.IndexByte(tail[:min(len(tail), partialLine)], '\n'); i >= 0 && i+1 < len(tail) {
			tail, cut = tail[i+1:], cut+int64(i+1)
		}
	}
	return tail, cut, err
}

// tailBuffer keeps the last max bytes written to it: a ring once full.
type tailBuffer struct {
	max   int
	buf   []byte // up to max bytes; once full, the oldest byte is at pos
	pos   int
	total int64 // bytes the stream had before what is kept, plus all written
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	if len(p) >= t.max {
		t.buf, t.pos = append(t.buf[:0], p[len(p)-t.max:]...), 0
		return n, nil
	}
	if room := t.max - len(t.buf); room > 0 {
		k := min(room, len(p))
		t.buf, p = append(t.buf, p[:k]...), p[k:]
	}
	for len(p) > 0 {
		k := copy(t.buf[t.pos:], p)
		p, t.pos = p[k:], (t.pos+k)%t.max
	}
	return n, nil
}

func (t *tailBuffer) len() int { return len(t.buf) }

// bytes returns what is kept, oldest first.
func (t *tailBuffer) bytes() []byte {
	return append(append([]byte(nil), t.buf[t.pos:]...), t.buf[:t.pos]...)
}

// sizeOf renders a byte count for people: "512 bytes", "3.5 KiB",
// "21.9 MiB", "8 MiB".
func sizeOf(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	v, u := float64(n)/(1<<10), 0
	for v >= 1<<10 && u < len(units)-1 {
		v, u = v/(1<<10), u+1
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + units[u]
}
