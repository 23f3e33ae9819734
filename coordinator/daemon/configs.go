package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/local"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/coordinator/taskenv"
	"github.com/atom-sched/atom/pkg/structs"
)

// EnvConfigRoot tells a local task where its mounted configs and secrets
// are: a config mounted at /etc/train is in $ATOM_CONFIG_ROOT/etc/train
// (unset in a container, where it is at /etc/train itself).
const EnvConfigRoot = "ATOM_CONFIG_ROOT"

// writeConfigs gives a local task its configs and secrets: each mounted
// one's keys as files under root (root + its mountPath), read-only as in
// a container's config volume (a secret's files 0400 in directories
// 0500, a config's 0444 in 0555; and, where this process may mount,
// root bind-mounted on itself read-only, so that a task running as root
// cannot write them either); each one given as env its keys as
// variables in env. It sets EnvConfigRoot when it mounts any. What an
// earlier start of the task wrote there is replaced. Errors name configs
// and keys, never values.
func writeConfigs(root string, cfgs []taskenv.Config, env map[string]string) error {
	if err := removeConfigs(root); err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return err
	}
	modes := map[string]os.FileMode{} // what each file and mounted directory ends with
	for _, c := range cfgs {
		what := fmt.Sprintf("%s %s (%s)", c.Ref.Kind(), c.Ref.Name(), c.Ref.Owner)
		if c.Ref.Env {
			for k, v := range c.Data {
				// Checked at submit; a version made since may still break it.
				if err := structs.CheckEnvKey(c.Ref.Kind(), c.Ref.Name(), k); err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
				if bytes.IndexByte(v, 0) >= 0 {
					return fmt.Errorf("%s: key %s holds a NUL byte, which an environment variable cannot: mount it as a file instead (mountPath)", what, k)
				}
				env[k] = string(v)
			}
			continue
		}
		dirMode, fileMode := os.FileMode(0o555), os.FileMode(0o444)
		if c.Ref.Kind() == structs.ConfigKindSecret {
			dirMode, fileMode = 0o500, 0o400
		}
		dir := filepath.Join(root, filepath.FromSlash(c.Ref.MountPath))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		modes[dir] = dirMode
		for k, v := range c.Data {
			p := filepath.Join(dir, k)
			if err := os.WriteFile(p, v, 0o600); err != nil {
				return fmt.Errorf("%s: key %s: %w", what, k, err)
			}
			modes[p] = fileMode
		}
		env[EnvConfigRoot] = root
	}
	if env[EnvConfigRoot] == "" {
		return nil
	}
	return readOnly(root, modes)
}

// configsDir is where task id's mounted configs and secrets are, in its
// directory.
func configsDir(run *local.Backend, id string) string {
	return filepath.Join(filepath.Dir(run.LogPath(id)), "configs")
}

// unmountLeftConfigs unmounts the configs of the tasks of run's
// directory but the running (adopted) ones: a coordinator killed (kill
// -9) before its tasks ended left them mounted. Called before run starts
// any task.
func unmountLeftConfigs(run *local.Backend) {
	ids, _ := run.TaskDirs()
	running := run.Running()
	for _, id := range ids {
		if !slices.Contains(running, id) {
			unmountConfigs(configsDir(run, id))
		}
	}
}

// readOnly gives the files and directories under root their modes (a
// directory modes does not name: 0555), the deepest first, then mounts
// root read-only where this process may.
func readOnly(root string, modes map[string]os.FileMode) error {
	var paths []string
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	})
	if err != nil {
		return err
	}
	for _, p := range slices.Backward(paths) {
		m, ok := modes[p]
		if !ok {
			m = 0o555
		}
		if err := os.Chmod(p, m); err != nil {
			return err
		}
	}
	mountReadOnly(root)
	return nil
}

// removeConfigs removes a task's configs directory, whatever
// writeConfigs made of it (a read-only mount, read-only directories).
func removeConfigs(root string) error {
	unmountConfigs(root)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o700)
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.RemoveAll(root)
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
