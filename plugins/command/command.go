// Package command is the job type of plain commands and services: the
// task runs the job's command and args as written.
package command

import (
	"context"
	"errors"

	"github.com/atom-sched/atom/pkg/plugin"
)

// Version is this job type's version.
const Version = "1.0.0"

// JobType runs the job's command. One value serves one kind (command,
// service, or a kind an operator maps to plain commands).
type JobType struct{ Kind string }

// New returns the job type for kind.
func New(kind string) plugin.Factory {
	return func() plugin.JobType { return JobType{Kind: kind} }
}

// Info implements plugin.JobType.
func (j JobType) Info(context.Context) (plugin.Info, error) {
	return plugin.Info{Kind: j.Kind, APIVersions: []string{"v1"}, Version: Version}, nil
}

// Prepare implements plugin.JobType: run the command as given.
func (j JobType) Prepare(_ context.Context, _ string, t plugin.Task) (plugin.Exec, error) {
	if len(t.Command) == 0 {
		return plugin.Exec{}, errors.New("the job has no command: give command (and args) in its spec")
	}
	return plugin.Exec{Argv: t.Command}, nil
}
