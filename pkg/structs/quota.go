package structs

import (
	"fmt"
	"strings"
)

// Scope is who is charged for public-pool use: "user:<name>" or
// "project:<name>".
type Scope string

// UserScope returns the scope of a user's own public-pool use.
func UserScope(u UserID) Scope { return Scope("user:" + string(u)) }

// ProjectScope returns the scope of a project's public-pool use.
func ProjectScope(p ProjectID) Scope { return Scope("project:" + string(p)) }

// ResourceKey names a quota-limited resource: "cpu" (millicores), "memory"
// (bytes), "gpu/<type>" (accelerators of one type), "gpu" (accelerators
// asked for without a type) and "device/<type>" (edge devices).
type ResourceKey string

const (
	KeyCPU    ResourceKey = "cpu"
	KeyMemory ResourceKey = "memory"
	KeyGPUAny ResourceKey = "gpu"
)

// GPUKey returns the quota key for accelerators of type t ("" means any).
func GPUKey(t string) ResourceKey {
	if t == "" {
		return KeyGPUAny
	}
	return ResourceKey("gpu/" + t)
}

// DeviceKey returns the quota key for edge devices of type t.
func DeviceKey(t string) ResourceKey { return ResourceKey("device/" + t) }

// ValidResourceKey reports whether k is one of the allowed key shapes.
func ValidResourceKey(k ResourceKey) error {
	s := string(k)
	switch {
	case k == KeyCPU, k == KeyMemory, k == KeyGPUAny:
		return nil
	case strings.HasPrefix(s, "gpu/") && validName(s[4:]):
		return nil
	case strings.HasPrefix(s, "device/") && validName(s[7:]):
		return nil
	}
	return fmt.Errorf("resource key %q is not allowed: use cpu, memory, gpu, gpu/<type> or device/<type>", s)
}

// ResourceList maps resource keys to amounts in their units.
type ResourceList map[ResourceKey]int64

// Clone returns a copy of l.
func (l ResourceList) Clone() ResourceList {
	c := make(ResourceList, len(l))
	for k, v := range l {
		c[k] = v
	}
	return c
}

// Quota is a scope's limits in the public pool. A key not listed has limit 0:
// normal jobs of the scope may not ask for it in the public pool.
type Quota struct {
	Scope  Scope        `json:"scope"`
	Limits ResourceList `json:"limits"`
	// Weight is the scope's fair-share weight: its share of the cluster
	// against other scopes' (0: the default, 1).
	Weight float64 `json:"weight,omitempty"`
}

// WeightOrDefault returns w, or 1 for 0.
func WeightOrDefault(w float64) float64 {
	if w <= 0 {
		return 1
	}
	return w
}
