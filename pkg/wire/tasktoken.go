package wire

import "github.com/atom-sched/atom/pkg/structs"

// TaskTokenRequest is the body of POST /v1/tasks/{id}/token: the
// service-account token that the task's Pod holds (ATOM_TOKEN_FILE, a
// projected token bound to the Pod, audience atom).
type TaskTokenRequest struct {
	ServiceAccountToken string `json:"serviceAccountToken"`
	// Nonce is a random value (hex, 32 to 128 characters) atom makes once
	// per run: the exchange is answered once per allocation, and again
	// only to the same nonce (atom's retry after a lost answer).
	Nonce string `json:"nonce,omitempty"`
}

// TaskToken answers POST /v1/tasks/{id}/token: the task's allocation
// token, for its heartbeats (ATOM_TOKEN), and its atom's environment
// (ATOM_JOB_ID, ATOM_JOB_SPEC, ...; the Pod carries only what atom needs
// to ask for it): atom sets it before anything else reads the environment.
type TaskToken struct {
	Task  structs.TaskID    `json:"task"`
	Token string            `json:"token"`
	Env   map[string]string `json:"env,omitempty"`
}
