package wire

import (
	"time"

	"github.com/atom-sched/atom/pkg/structs"
)

// ConfigSpec is the body of POST /v1/configs and /v1/secrets (create) and
// of PUT /v1/configs/{name} and /v1/secrets/{name} (update: the data
// replaces the whole of the current version's). Data's values are any
// bytes (base64 in JSON); keys as Kubernetes allows in a ConfigMap.
type ConfigSpec struct {
	Name string `json:"name,omitempty"` // create; an update takes the path's
	// Project makes the object the project's (its members share it);
	// empty: the caller's own. An update or delete names it as
	// ?project=P.
	Project structs.ProjectID  `json:"project,omitempty"`
	Data    structs.ConfigData `json:"data"`
}

// Config describes a config or a secret. A secret's values are never in
// it: its keys, their sizes and its digest only.
type Config struct {
	Kind      structs.ConfigKind  `json:"kind"`
	Name      string              `json:"name"`
	Owner     structs.Scope       `json:"owner"`
	Version   int                 `json:"version"`
	Keys      []structs.ConfigKey `json:"keys"`
	Digest    string              `json:"digest"`
	CreatedBy structs.UserID      `json:"createdBy"`
	Created   time.Time           `json:"created"`
	UpdatedBy structs.UserID      `json:"updatedBy"`
	Updated   time.Time           `json:"updated"`
	// SealedWith, for a secret, is the keyring key its current version is
	// sealed with.
	SealedWith string `json:"sealedWith,omitempty"`
	// UsedBy lists the jobs, not ended, that name it.
	UsedBy []structs.JobID `json:"usedBy,omitempty"`
	// Data is a config's values (GET /v1/configs/{name} only).
	Data structs.ConfigData `json:"data,omitempty"`
	// Existing: a create found it already made with this data (a retry);
	// Unchanged: an update gave the current data (no new version).
	Existing  bool `json:"existing,omitempty"`
	Unchanged bool `json:"unchanged,omitempty"`
}

// ConfigList answers GET /v1/configs and /v1/secrets: those the caller
// may read (their own, their projects'; admins all), by owner and name.
type ConfigList struct {
	Configs []Config `json:"configs"`
}

// SecretValue answers GET /v1/secrets/{name}/data/{key}: one value, to
// the secret's owner (a project's: its members) only.
type SecretValue struct {
	Name    string `json:"name"`
	Key     string `json:"key"`
	Version int    `json:"version"`
	Value   []byte `json:"value"`
}

// RekeyResponse answers POST /v1/secrets/rekey: how many secret versions
// were sealed again under Key, the keyring's active key, and how many
// remain under each other key (none once every server's keyring is the
// same).
type RekeyResponse struct {
	Key       string         `json:"key"`
	Rekeyed   int            `json:"rekeyed"`
	Remaining map[string]int `json:"remaining,omitempty"`
}
