// Package plugin is atom's job-type plugin system: one handshake, a
// versioned JobType interface, gRPC adapters over hashicorp/go-plugin, and
// a catalog of built-in job types that run in-process (tests) or as a
// plugin process (atom re-executing itself: `atom plugin serve KIND`).
//
// A job type turns a task into what atom runs for it:
//
//	atom run ─▶ Open(kind) ─▶ Info (pick API version) ─▶ Prepare(task) ─▶ Exec
//	                                                         │
//	               plugin process crashed / refused ◀────────┘ error: the task fails
//
// Prepare may wait (the MPI launcher waits for its workers); atom keeps
// heartbeating meanwhile. After Prepare the plugin process is stopped: atom
// itself supervises the job's process, so a plugin crash can fail only a
// task's preparation, never a running job or atom.
//
// The layout follows Nomad's plugins/base (shared handshake, API versions
// negotiated by the host) and helper/pluginutils/catalog.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	goplugin "github.com/hashicorp/go-plugin"
)

// APIVersions are the job-type API versions this host speaks, newest first.
var APIVersions = []string{"v1"}

// Handshake is shared by atom and every job-type plugin. It is not a
// security measure: it keeps a plugin binary from being run by hand and a
// non-plugin from being run as one.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "ATOM_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "b2a7f4c1-job-type",
}

// PluginName is the name the job type is dispensed under.
const PluginName = "jobtype"

// Info describes a job type.
type Info struct {
	Kind        string   // the job kind it runs: command, mpi, spark, ...
	APIVersions []string // job-type API versions it speaks
	Version     string   // the plugin's own version, for people
}

// Task is what atom knows of its allocation when it prepares a task.
type Task struct {
	Job, ID, Kind string
	Replica       int
	Replicas      int
	Attempt       int // the job's requeues before this attempt: 0 on its first (ATOM_ATTEMPT)
	// Command is the job's command and args (atom run -- CMD ARGS).
	Command []string
	// Env is atom's environment, which the job inherits.
	Env map[string]string
	// Dir is the task's working directory.
	Dir string
	// Coordinator (comma-separated URLs) and Token (the task's
	// allocation token) let a job type ask about its peers.
	Coordinator, Token string
	// JobJSON is the job as the coordinator accepted it (structs.Job in
	// JSON), for kind-specific sections such as spark and mpi.
	JobJSON []byte
	// AccelType and Accelerators are the task's accelerators.
	AccelType    string
	Accelerators int
}

// Exec is what atom runs for a task.
type Exec struct {
	// Argv is the process to run; empty with ServeLaunches means the task
	// only serves launches (an MPI worker) and ends when they have.
	Argv []string
	// Env is added to the job's environment.
	Env map[string]string
	// ServeLaunches: atom serves `atom rsh` launch requests from its job's
	// launcher while the task runs.
	ServeLaunches bool
}

// JobType is the versioned interface every job-type plugin implements.
type JobType interface {
	Info(ctx context.Context) (Info, error)
	// Prepare returns what to run for task, speaking API version api. A
	// returned error fails the task with its message.
	Prepare(ctx context.Context, api string, task Task) (Exec, error)
}

// ErrPluginExited: the plugin process went away mid-call (it crashed or
// was killed). The task fails; atom does not.
var ErrPluginExited = errors.New("plugin exited")

// Negotiate picks the newest API version both the host and info speak.
func Negotiate(info Info) (string, error) {
	for _, v := range APIVersions {
		if slices.Contains(info.APIVersions, v) {
			return v, nil
		}
	}
	return "", fmt.Errorf("job type %q speaks API versions %v, atom speaks %v: use a plugin built for one of atom's versions", info.Kind, info.APIVersions, APIVersions)
}
