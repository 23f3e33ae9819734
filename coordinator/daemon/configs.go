package daemon

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/pkg/structs"
)

// EnvConfigRoot tells a local task where its mounted configs and secrets
// are: a config mounted at /etc/train is in $ATOM_CONFIG_ROOT/etc/train
// (unset in a container, where it is at /etc/train itself).
const EnvConfigRoot = "ATOM_CONFIG_ROOT"

// writeConfigs gives a local task its configs and secrets: each mounted
// one's keys as files under root (root + its mountPath; a secret's files
// 0600 in directories 0700, a config's 0644), each one given as env its
// keys as variables in env. It sets EnvConfigRoot when it mounts any.
// Errors name configs and keys, never values.
func writeConfigs(root string, cfgs []taskenv.Config, env map[string]string) error {
	if err := os.MkdirAll(root, 0o750); err != nil {
		return err
	}
	for _, c := range cfgs {
		what := fmt.Sprintf("%s %s (%s)", c.Ref.Kind(), c.Ref.Name(), c.Ref.Owner)
		if c.Ref.Env {
			for k, v := range c.Data {
				if bytes.IndexByte(v, 0) >= 0 {
					return fmt.Errorf("%s: key %s holds a NUL byte, which an environment variable cannot: mount it as a file instead (mountPath)", what, k)
				}
				env[k] = string(v)
			}
			continue
		}
		dirMode, fileMode := os.FileMode(0o755), os.FileMode(0o644)
		if c.Ref.Kind() == structs.ConfigKindSecret {
			dirMode, fileMode = 0o700, 0o600
		}
		dir := filepath.Join(root, filepath.FromSlash(c.Ref.MountPath))
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := os.Chmod(dir, dirMode); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for k, v := range c.Data {
			p := filepath.Join(dir, k)
			if err := os.WriteFile(p, v, fileMode); err != nil {
				return fmt.Errorf("%s: key %s: %w", what, k, err)
			}
			if err := os.Chmod(p, fileMode); err != nil {
				return fmt.Errorf("%s: key %s: %w", what, k, err)
			}
		}
		env[EnvConfigRoot] = root
	}
	return nil
}

// keepConfigs names the ConfigMaps and Secrets of atom's configs that the
// kubernetes backends' sweeps keep: the versions tasks holding resources
// use, and every config's current version.
func keepConfigs(srv stateReader) map[string]bool {
	out := map[string]bool{}
	srv.Read(func(st *state.State) {
		for _, o := range st.Configs {
			out[kube.ConfigObjectName(o.ConfigID, o.Current().Version)] = true
		}
		for _, t := range st.Tasks {
			if !t.State.HoldsResources() {
				continue
			}
			for _, tc := range t.Configs {
				out[kube.ConfigObjectName(tc.ConfigID, tc.Version)] = true
			}
		}
	})
	return out
}
