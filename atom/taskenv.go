package main

import (
	"fmt"
	"os"
	"strings"

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

// exchanged is the allocation token `atom run` got for its Pod's
// service-account token (fetchTaskEnv); "" when it got none.
var exchanged string

// fetchTaskEnv is `atom run`'s first step in a Kubernetes task Pod
// (ATOM_COORDINATOR, ATOM_TASK_ID and ATOM_TOKEN_FILE set, no
// ATOM_TOKEN), whose spec carries only those of atom's variables: it
// exchanges the Pod's service-account token at the coordinator for the
// task's allocation token and the rest of atom's environment (ATOM_JOB_ID,
// ATOM_JOB_SPEC, ...), and sets that over any the image set, before any
// flag is read: atom, its plugins and the job see each variable as on any
// backend. Any server answers, as it would atom's heartbeats.
func fetchTaskEnv() error {
	coord, task, file := strings.TrimSpace(os.Getenv("ATOM_COORDINATOR")), os.Getenv("ATOM_TASK_ID"), os.Getenv("ATOM_TOKEN_FILE")
	if coord == "" || task == "" || file == "" || os.Getenv("ATOM_TOKEN") != "" {
		return nil
	}
	tok, err := exchangeToken(coord, task, file)
	if err != nil {
		return err
	}
	for k, v := range tok.Env {
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("the coordinator's variable %q for task %s: %w", k, task, err)
		}
	}
	exchanged = tok.Token
	return nil
}
