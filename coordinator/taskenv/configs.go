package taskenv

import (
	"fmt"

	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// Config is one of a task's atom configs or secrets, with its data at the
// version the task was placed with, as its backend gives it to the task.
type Config struct {
	Ref     structs.ConfigRef
	Version int
	Data    structs.ConfigData
}

// Configs returns task t's atom configs and secrets (those j names as
// Kubernetes objects by name are not among them) at the versions t got,
// secrets opened with kr. Errors name configs and keys, never values.
func Configs(st *state.State, kr *keyring.Keyring, t *structs.Task, j *structs.Job) ([]Config, error) {
	var out []Config
	for _, ref := range j.Configs {
		if !ref.Object() {
			continue
		}
		id := ref.ID()
		version := 0
		for _, tc := range t.Configs {
			if tc.ConfigID == id {
				version = tc.Version
			}
		}
		o := st.Config(id)
		var v *structs.ConfigVersion
		if o != nil {
			v = o.Version(version)
		}
		if v == nil {
			return nil, fmt.Errorf("%s %s of %s version %d is no longer kept: the task cannot start with it", id.Kind, id.Name, id.Owner, version)
		}
		c := Config{Ref: ref, Version: v.Version, Data: v.Data}
		if id.Kind == structs.ConfigKindSecret {
			if kr == nil {
				return nil, fmt.Errorf("secret %s of %s: this server has no keyring to open it: start every server with --keyring FILE", id.Name, id.Owner)
			}
			plain, err := kr.Open(v.Sealed, keyring.AAD(id, v.Version))
			if err != nil {
				return nil, fmt.Errorf("secret %s of %s version %d: %w", id.Name, id.Owner, v.Version, err)
			}
			if c.Data, err = structs.DecodeConfigData(plain); err != nil {
				return nil, fmt.Errorf("secret %s of %s version %d: %w", id.Name, id.Owner, v.Version, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}
