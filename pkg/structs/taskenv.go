package structs

import (
	"encoding/json"
	"fmt"
	"strings"
)

// TaskEnvVar is the one environment variable a Kubernetes task Pod carries
// atom's variables in (ATOM_COORDINATOR, ATOM_TASK_ID, ATOM_TOKEN_FILE:
// what atom needs to fetch the rest from the coordinator): a JSON object
// of name to value, which atom expands into its own environment, and so
// its job's, before anything else. One variable instead of several keeps
// every task Pod small: the API server's cost of a Pod write (managed
// fields, validation, watch encoding) and kwok's or the kubelet's grow
// with its number of fields.
const TaskEnvVar = "ATOM_TASK_ENV"

// EncodeTaskEnv is the value of TaskEnvVar for env (keys sorted).
func EncodeTaskEnv(env map[string]string) (string, error) {
	for k, v := range env {
		if err := checkEnvEntry(k, v); err != nil {
			return "", err
		}
	}
	b, err := json.Marshal(env)
	return string(b), err
}

// DecodeTaskEnv reads a value of TaskEnvVar.
func DecodeTaskEnv(s string) (map[string]string, error) {
	var env map[string]string
	if err := json.Unmarshal([]byte(s), &env); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object of variable names to string values: %w", TaskEnvVar, err)
	}
	for k, v := range env {
		if err := checkEnvEntry(k, v); err != nil {
			return nil, fmt.Errorf("%s: %w", TaskEnvVar, err)
		}
	}
	return env, nil
}

func checkEnvEntry(k, v string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf("variable name %q: a name must be non-empty, without '=' or NUL", k)
	}
	if k == TaskEnvVar {
		return fmt.Errorf("variable %s may not name itself", k)
	}
	if strings.ContainsRune(v, 0) {
		return fmt.Errorf("variable %s: a value may not hold NUL", k)
	}
	return nil
}
