package structs

import (
	"math"
	"strings"
	"time"
)

// FairShare is how a cluster counts fair-share usage (the cluster
// config's fairShare section). Zero fields take the defaults below.
//
// Usage is counted in GPU-seconds: one accelerator of weight 1 held for
// one second is 1. Weights says what one unit of each quota key held for
// a second is worth: gpu/<type> per accelerator of that type (gpu: any
// type not listed, and requests that name none), cpu per core, memory per
// GiB, device/<type> per edge device. A replica is counted as quota
// charges it: an accelerator replica by its accelerators only (the CPU
// and memory bound to them are not counted again), a CPU replica by its
// cores and memory, an edge replica by its devices.
type FairShare struct {
	// HalfLife is how long usage takes to count half as much.
	HalfLife Duration `json:"halfLife,omitempty"`
	// Weights per quota key, as above.
	Weights map[ResourceKey]float64 `json:"weights,omitempty"`
	// Aging is how long a pending job waits to move ahead of jobs whose
	// scope is one whole fair share better placed than its own.
	Aging Duration `json:"aging,omitempty"`
}

// Fair-share defaults: a week's half-life (as Slurm's
// PriorityDecayHalfLife); a GPU is worth 8 cores or 128 GiB of memory
// (an A100 node binds 7 cores and 118 GB to each GPU); an hour of
// waiting is worth one whole fair share.
const (
	DefaultHalfLife     = 7 * 24 * time.Hour
	DefaultGPUWeight    = 1.0
	DefaultCPUWeight    = 1.0 / 8
	DefaultMemoryWeight = 1.0 / 128
	DefaultDeviceWeight = 1.0
	DefaultAging        = time.Hour
)

// Bounds on the fair-share settings and on a scope's weight.
const (
	MinHalfLife = time.Minute
	MaxHalfLife = 10 * 365 * 24 * time.Hour
	MaxWeight   = 1e6
)

// HalfLifeOrDefault returns the half-life in force.
func (f *FairShare) HalfLifeOrDefault() time.Duration {
	if f == nil || f.HalfLife <= 0 {
		return DefaultHalfLife
	}
	return f.HalfLife.D()
}

// AgingOrDefault returns the aging period in force.
func (f *FairShare) AgingOrDefault() time.Duration {
	if f == nil || f.Aging <= 0 {
		return DefaultAging
	}
	return f.Aging.D()
}

// Weight returns what one unit of key k held for a second counts.
func (f *FairShare) Weight(k ResourceKey) float64 {
	if f != nil {
		if w, ok := f.Weights[k]; ok {
			return w
		}
	}
	switch {
	case k == KeyCPU:
		return DefaultCPUWeight
	case k == KeyMemory:
		return DefaultMemoryWeight
	case k == KeyGPUAny:
		return DefaultGPUWeight
	case strings.HasPrefix(string(k), "gpu/"):
		return f.Weight(KeyGPUAny)
	}
	return DefaultDeviceWeight
}

// Rate returns the usage per second of holding r (one replica's
// allocation): its accelerators, else its devices, else its cores and
// memory, each by its weight.
func (f *FairShare) Rate(r Resources) float64 {
	switch {
	case r.Accels > 0:
		return f.Weight(GPUKey(r.AccelType)) * float64(r.Accels)
	case len(r.Devices) > 0:
		v := 0.0
		for t, c := range r.Devices {
			v += f.Weight(DeviceKey(t)) * float64(c)
		}
		return v
	}
	return f.Weight(KeyCPU)*float64(r.MilliCPU)/1000 + f.Weight(KeyMemory)*float64(r.Memory)/(1<<30)
}

// FairShareSpec is the cluster config's fairShare section:
//
//	fairShare:
//	  halfLife: 168h       # usage counts half after this long (default 7 days)
//	  aging: 1h            # waiting this long makes up one whole fair share (default 1h)
//	  weights: {gpu/A100: 2, gpu/T4: 0.5, gpu: 1, cpu: 0.125, memory: 0.0078125}
type FairShareSpec struct {
	HalfLife string             `json:"halfLife,omitempty"`
	Aging    string             `json:"aging,omitempty"`
	Weights  map[string]float64 `json:"weights,omitempty"`
}

func (s *FairShareSpec) convert(p string) (*FairShare, error) {
	f := &FairShare{}
	for _, d := range []struct {
		name, text string
		to         *Duration
		min, max   time.Duration
	}{
		{"halfLife", s.HalfLife, &f.HalfLife, MinHalfLife, MaxHalfLife},
		{"aging", s.Aging, &f.Aging, time.Minute, MaxHalfLife},
	} {
		if d.text == "" {
			continue
		}
		v, err := time.ParseDuration(d.text)
		if err != nil || v < d.min || v > d.max {
			return nil, bad(at(p, d.name), d.text, "use a duration from %s to %s, such as 168h or 30m", Duration(d.min), Duration(d.max))
		}
		*d.to = Duration(v)
	}
	for _, k := range sortedKeys(s.Weights) {
		field, w := key(at(p, "weights"), k), s.Weights[k]
		if err := ValidResourceKey(ResourceKey(k)); err != nil {
			return nil, bad(at(p, "weights"), k, "use cpu, memory, gpu, gpu/<type> or device/<type>")
		}
		if math.IsNaN(w) || w < 0 || w > MaxWeight {
			return nil, bad(field, w, "use a number from 0 to %g", MaxWeight)
		}
		if f.Weights == nil {
			f.Weights = map[ResourceKey]float64{}
		}
		f.Weights[ResourceKey(k)] = w
	}
	return f, nil
}

// ValidWeight checks a scope's fair-share weight as a spec gives it.
func ValidWeight(field string, w float64) error {
	if math.IsNaN(w) || w <= 0 || w > MaxWeight {
		return bad(field, w, "use a number above 0 and at most %g (default 1)", MaxWeight)
	}
	return nil
}
