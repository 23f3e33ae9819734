package main

import (
	"os"

	"github.com/atom-sched/atom/pkg/structs"
)

// expandTaskEnv sets each variable packed in structs.TaskEnvVar (how the
// Kubernetes backend passes atom's variables in a small Pod) in atom's
// environment, over any the image set, and removes the packed one: atom's
// flags, its plugins and the job then see ATOM_TASK_ID and the rest as on
// any backend. A value that cannot be read is an error (exit 2): atom
// would otherwise run the job as if standalone.
func expandTaskEnv() error {
	packed, ok := os.LookupEnv(structs.TaskEnvVar)
	if !ok {
		return nil
	}
	env, err := structs.DecodeTaskEnv(packed)
	if err != nil {
		return err
	}
	for k, v := range env {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return os.Unsetenv(structs.TaskEnvVar)
}
