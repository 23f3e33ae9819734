package structs

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultScratchPath is where a job's scratch space is mounted when its
// spec names no path.
const DefaultScratchPath = "/scratch"

// MaxConfigs bounds a job's configs list.
const MaxConfigs = 64

// ScratchSpec asks for per-replica scratch space, empty when the replica
// starts and gone when it ends (on Kubernetes a generic ephemeral volume of
// storage class local-path):
//
//	scratch: {size: 200Gi, mountPath: /scratch}
type ScratchSpec struct {
	Size      Quantity `json:"size"`
	MountPath string   `json:"mountPath,omitempty"` // default DefaultScratchPath
}

// Scratch is an accepted job's scratch space.
type Scratch struct {
	Size      int64  `json:"size"` // bytes
	MountPath string `json:"mountPath"`
}

// ConfigRef names a ConfigMap or a Secret of the job's namespace (the
// cluster's), mounted read-only as files at MountPath or, with env, given
// to the task as environment variables, one per key:
//
//	configs:
//	  - {configMap: train-config, mountPath: /etc/train}
//	  - {secret: wandb-key, env: true}
//
// atom never reads them: the Pod refers to them by name.
type ConfigRef struct {
	ConfigMap string `json:"configMap,omitempty"`
	Secret    string `json:"secret,omitempty"`
	MountPath string `json:"mountPath,omitempty"`
	Env       bool   `json:"env,omitempty"`
}

// Name is the ConfigMap's or the Secret's name.
func (c ConfigRef) Name() string {
	if c.Secret != "" {
		return c.Secret
	}
	return c.ConfigMap
}

// mounts checks scratch and configs, with the mount paths volumes and the
// cache already use.
func (s *JobSpec) mounts(j *Job) error {
	paths := map[string]string{}
	for i, v := range j.Volumes {
		paths[v.MountPath] = idx("volumes", i) + ".mountPath"
	}
	if j.CacheMountPath != "" {
		paths[j.CacheMountPath] = "cache.mountPath"
	}
	if sc := s.Scratch; sc != nil {
		size, err := positive("scratch.size", sc.Size, 1, "bytes")
		if err != nil {
			return err
		}
		mp := sc.MountPath
		if mp == "" {
			mp = DefaultScratchPath
		}
		if err := checkMountPath("scratch.mountPath", mp, paths); err != nil {
			return err
		}
		j.Scratch = &Scratch{Size: size, MountPath: mp}
	}
	if len(s.Configs) > MaxConfigs {
		return bad("configs", len(s.Configs), "use at most %d", MaxConfigs)
	}
	seen := map[string]bool{}
	for i, c := range s.Configs {
		field := idx("configs", i)
		switch {
		case (c.ConfigMap == "") == (c.Secret == ""):
			return bad(field, c.Name(), "give either configMap or secret: the name of a ConfigMap or a Secret in the job's namespace")
		case c.Env == (c.MountPath != ""):
			return bad(field, c.Name(), "give either mountPath (its keys as files there) or env: true (its keys as environment variables)")
		}
		kind, name := "configMap", c.ConfigMap
		if c.Secret != "" {
			kind, name = "secret", c.Secret
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return bad(field+"."+kind, name, "use a %s name: %s", map[string]string{"configMap": "ConfigMap", "secret": "Secret"}[kind], strings.Join(errs, "; "))
		}
		if seen[kind+"/"+name] {
			return bad(field+"."+kind, name, "each %s may be named once", kind)
		}
		seen[kind+"/"+name] = true
		if c.MountPath != "" {
			if err := checkMountPath(field+".mountPath", c.MountPath, paths); err != nil {
				return err
			}
		}
	}
	j.Configs = append([]ConfigRef(nil), s.Configs...)
	return nil
}
