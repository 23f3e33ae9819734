package taskenv

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/atom-sched/atom/pkg/structs"
)

// MaxVar bounds one variable of a task's environment, "NAME=value": Linux
// refuses a string over 128 KiB (MAX_ARG_STRLEN) at exec, so a larger one
// would let a job be accepted that can never start. 8 KiB are left for
// what a backend or image adds.
const MaxVar = 120 << 10

// Check refuses a job whose environment could not reach its tasks: the job
// as ATOM_JOB_SPEC carries it, or one of its env variables, over MaxVar.
func Check(j *structs.Job) error {
	b, err := json.Marshal(JobSpec(j))
	if err != nil {
		return fmt.Errorf("encode the job for its tasks: %w", err)
	}
	if n := len("ATOM_JOB_SPEC=") + len(b); n > MaxVar {
		return &structs.FieldError{Field: "command", Msg: fmt.Sprintf(
			"with args and the kind's section makes the job %d KiB as its tasks get it (ATOM_JOB_SPEC), over the %d KiB one environment variable may hold: pass long inputs in a file, a config or a volume instead",
			(n+1023)>>10, MaxVar>>10)}
	}
	for _, k := range slices.Sorted(maps.Keys(j.Env)) {
		if n := len(k) + 1 + len(j.Env[k]); n > MaxVar {
			return &structs.FieldError{Field: "env." + k, Msg: fmt.Sprintf(
				"is %d KiB, over the %d KiB one environment variable may hold: pass it in a file, a config or a volume instead", (n+1023)>>10, MaxVar>>10)}
		}
	}
	return nil
}
