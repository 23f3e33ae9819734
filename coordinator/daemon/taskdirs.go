package daemon

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/atom-sched/atom/coordinator/local"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// sweepTaskDirs removes, every period, the directories (output included)
// of the tasks this server ran that the state no longer has: jobs past
// --retention, and the ended tasks of a service beyond the ones it keeps.
// They stayed on disk for ever, so a long-running coordinator filled it
// (found by a new user trying retention). The directories are listed
// before the state is read, so a task started meanwhile is in it; and a
// server that has not caught up (a restart holds only its snapshot until
// a leader commits) sweeps nothing.
func sweepTaskDirs(ctx context.Context, run *local.Backend, fw *forwarder, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, err := run.TaskDirs()
		if err != nil {
			log.Warn("cannot list task directories", "err", err)
			continue
		}
		if len(ids) == 0 {
			continue
		}
		if fw.Lagging() {
			cctx, cancel := context.WithTimeout(ctx, catchUpWait)
			err := fw.CatchUp(cctx)
			cancel()
			if err != nil {
				continue
			}
		}
		var gone []string
		fw.Read(func(st *state.State) {
			for _, id := range ids {
				if st.Tasks[structs.TaskID(id)] == nil {
					gone = append(gone, id)
				}
			}
		})
		removed := 0
		running := run.Running()
		for _, id := range gone {
			if !slices.Contains(running, id) {
				// Its configs' read-only mount and directories first.
				if err := removeConfigs(configsDir(run, id)); err != nil {
					log.Warn("task directory kept", "task", id, "err", err)
					continue
				}
			}
			if err := run.Forget(id); err != nil {
				log.Warn("task directory kept", "task", id, "err", err)
				continue
			}
			removed++
		}
		if removed > 0 {
			log.Info("removed the directories of tasks the state no longer has", "tasks", removed)
		}
	}
}
