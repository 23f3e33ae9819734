package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/atom-sched/atom/coordinator/local"
	"github.com/atom-sched/atom/coordinator/server"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// unsentName, in a task's directory, is the final report its atom could
// not send because no coordinator server answered (atom run
// --unsent-report): the job ended, or atom stopped it, while every server
// was down. The server that runs or adopts the task, or the next one
// started on its data dir, sends it on.
const unsentName = "unsent-report.json"

// unsentPath is where task id's atom leaves its unsent report.
func unsentPath(run *local.Backend, id string) string {
	return filepath.Join(filepath.Dir(run.LogPath(id)), unsentName)
}

// unsent returns the report task id's atom left, if it left one; err if
// it is unreadable.
func unsent(run *local.Backend, id string) (ev structs.TaskEvent, ok bool, err error) {
	b, err := os.ReadFile(unsentPath(run, id))
	if err != nil {
		return ev, false, nil
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, true, err
	}
	ev.Task = structs.TaskID(id)
	if now := time.Now(); ev.Time.IsZero() || ev.Time.After(now) {
		ev.Time = now // atom's clock may be off; never record the future
	}
	return ev, true, nil
}

// sendUnsent sends on the report task id's atom left, if any, with the
// task's token as the state has it, and removes it once the coordinator
// has it or refuses it for good (the task has ended, or is gone). It
// reports whether nothing is left to send.
func (b *LocalBackend) sendUnsent(id string) bool {
	ev, ok, err := unsent(b.run, id)
	switch {
	case !ok:
		return true
	case err == nil:
		err = b.sink.Report(ev.Task, "", ev)
	default:
		err = fmt.Errorf("%w: %w", state.ErrInvalid, err)
	}
	switch {
	case err == nil, errors.Is(err, server.ErrTaskEnded), errors.Is(err, server.ErrBadToken), errors.Is(err, state.ErrInvalid):
		if err != nil {
			b.log.Info("a task's unsent report is not needed", "task", id, "err", err)
		} else {
			b.log.Info("sent the report a task left while no coordinator answered", "task", id, "state", ev.State, "reason", ev.Reason)
		}
		if rerr := os.Remove(unsentPath(b.run, id)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			b.log.Warn("a task's unsent report not removed", "task", id, "err", rerr)
		}
		return true
	}
	b.log.Debug("a task's unsent report not sent yet", "task", id, "err", err)
	return false
}
