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

// ConfigRef is one of a job's configs: an atom config or secret (made
// with coordinator config create / secret create), or a ConfigMap or
// Secret someone made in the cluster's namespace, mounted read-only as
// files at MountPath or, with env, given to the task as environment
// variables, one per key:
//
//	configs:
//	  - {config: train, mountPath: /etc/train}
//	  - {secret: wandb, env: true}
//	  - {configMap: train-config, mountPath: /etc/legacy}
//
// config and secret name an object of the job's project (when it names
// one) or else of its owner, or PROJECT/NAME one of another project the
// owner is a member of. secret names a Kubernetes Secret of the namespace
// when no atom secret of that name is found and the coordinator has a
// kubernetes cluster (as before atom had secrets); configMap always names
// a ConfigMap. atom never reads a ConfigMap or Secret it did not make.
type ConfigRef struct {
	Config    string `json:"config,omitempty"`
	Secret    string `json:"secret,omitempty"`
	ConfigMap string `json:"configMap,omitempty"`
	MountPath string `json:"mountPath,omitempty"`
	Env       bool   `json:"env,omitempty"`
	// Owner is set by the coordinator when it accepts the job: the scope
	// (user:NAME or project:NAME) owning the atom config or secret
	// named, whose name Config or Secret then holds without a project.
	// Empty: a Kubernetes ConfigMap or Secret by name. A spec may not
	// set it.
	Owner Scope `json:"owner,omitempty"`
}

// Name is the config's, secret's or ConfigMap's name as the ref holds it.
func (c ConfigRef) Name() string {
	switch {
	case c.Config != "":
		return c.Config
	case c.Secret != "":
		return c.Secret
	}
	return c.ConfigMap
}

// Kind says what c names: ConfigKindConfig or ConfigKindSecret for atom's
// objects and Kubernetes Secrets, "configMap" for a ConfigMap.
func (c ConfigRef) Kind() ConfigKind {
	switch {
	case c.Config != "":
		return ConfigKindConfig
	case c.Secret != "":
		return ConfigKindSecret
	}
	return "configMap"
}

// Object reports whether c names an atom config or secret (resolved at
// submit), not a Kubernetes object of the namespace.
func (c ConfigRef) Object() bool { return c.Owner != "" }

// ID is the atom object c names once resolved.
func (c ConfigRef) ID() ConfigID { return ConfigID{Kind: c.Kind(), Owner: c.Owner, Name: c.Name()} }

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
		n := 0
		for _, v := range []string{c.Config, c.Secret, c.ConfigMap} {
			if v != "" {
				n++
			}
		}
		switch {
		case n != 1:
			return bad(field, c.Name(), "give one of config (an atom config), secret (an atom secret) or configMap (a ConfigMap of the cluster's namespace)")
		case c.Env == (c.MountPath != ""):
			return bad(field, c.Name(), "give either mountPath (its keys as files there) or env: true (its keys as environment variables)")
		case c.Owner != "":
			return bad(field+".owner", string(c.Owner), "the coordinator sets it: name a project's config as PROJECT/NAME")
		}
		kind := string(c.Kind())
		if err := checkConfigRef(field+"."+kind, c); err != nil {
			return err
		}
		if seen[kind+"/"+c.Name()] {
			return bad(field+"."+kind, c.Name(), "each %s may be named once", kind)
		}
		seen[kind+"/"+c.Name()] = true
		if c.MountPath != "" {
			if err := checkMountPath(field+".mountPath", c.MountPath, paths); err != nil {
				return err
			}
		}
	}
	j.Configs = append([]ConfigRef(nil), s.Configs...)
	return nil
}

// checkConfigRef checks the name c gives: a ConfigMap's a Kubernetes
// name; a config's NAME or PROJECT/NAME; a secret's either of those or a
// Kubernetes Secret's name.
func checkConfigRef(field string, c ConfigRef) error {
	name := c.Name()
	if c.ConfigMap != "" {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return bad(field, name, "use a ConfigMap name: %s", ValidationText(errs))
		}
		return nil
	}
	if project, n, ok := strings.Cut(name, "/"); ok {
		if len(validation.IsDNS1123Label(project)) > 0 || len(validation.IsDNS1123Label(n)) > 0 {
			return bad(field, name, "use NAME or PROJECT/NAME, each a DNS label (lowercase letters, digits and '-', at most 63)")
		}
		return nil
	}
	if c.Secret != "" {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return bad(field, name, "use a secret's name (or a Kubernetes Secret's): %s", ValidationText(errs))
		}
		return nil
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return bad(field, name, "use a config's name, NAME or PROJECT/NAME: %s", ValidationText(errs))
	}
	return nil
}
