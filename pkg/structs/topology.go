package structs

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Topology names a cluster's topology levels: node label keys, widest
// first, as an admin writes them in a cluster spec or a cluster config:
//
//	topology: {levels: [topology.kubernetes.io/zone, block, rack]}
//
// A node's domain at a level is its value of that label (within its
// values of the wider levels: rack r3 of block b1 is not rack r3 of
// block b2); a node without the label is in no domain of that level. The
// node itself is the last level.
type Topology struct {
	Levels []string `json:"levels"`
}

// MaxTopologyLevels bounds a cluster's topology levels (Kueue's limit too).
const MaxTopologyLevels = 8

// LevelName is how a level is called in messages: the part of its label
// key after the last '/' (topology.kubernetes.io/zone is "zone").
func LevelName(level string) string {
	if i := strings.LastIndexByte(level, '/'); i >= 0 {
		return level[i+1:]
	}
	return level
}

func (t *Topology) check(field string) error {
	if t == nil {
		return nil
	}
	if len(t.Levels) == 0 || len(t.Levels) > MaxTopologyLevels {
		return bad(field+".levels", len(t.Levels), "name 1 to %d node labels, widest first, such as [zone, block, rack]", MaxTopologyLevels)
	}
	seen := map[string]bool{}
	for i, l := range t.Levels {
		f := idx(field+".levels", i)
		if errs := validation.IsQualifiedName(l); len(errs) > 0 {
			return bad(f, l, "use a node label key such as rack or topology.kubernetes.io/zone: %s", ValidationText(errs))
		}
		if seen[LevelName(l)] {
			return bad(f, l, "levels must be unique, also after the last '/' (jobs name them so)")
		}
		seen[LevelName(l)] = true
	}
	return nil
}

func (t *Topology) clone() *Topology {
	if t == nil {
		return nil
	}
	return &Topology{Levels: append([]string(nil), t.Levels...)}
}

// JobTopology keeps a job's replicas (a spark job's driver and executors)
// together in one domain of a topology level of its cluster:
//
//	topology: {required: rack}    # all in one rack, or wait
//	topology: {preferred: rack}   # one rack if one has room, else one block, ... else anywhere
//
// One of the two is set; the level is one of the cluster's topology
// levels (Topology), named by its label key or the part after its last
// '/' (zone for topology.kubernetes.io/zone).
type JobTopology struct {
	Required  string `json:"required,omitempty"`
	Preferred string `json:"preferred,omitempty"`
}

// Level is the level the job names, required or preferred.
func (t *JobTopology) Level() string {
	if t.Required != "" {
		return t.Required
	}
	return t.Preferred
}

// LevelIndex finds level, a job's level (a label key or its short name),
// among levels: its index, or -1.
func LevelIndex(levels []string, level string) int {
	for i, l := range levels {
		if l == level {
			return i
		}
	}
	for i, l := range levels {
		if LevelName(l) == level {
			return i
		}
	}
	return -1
}

// topology checks the job's topology: one level, on a job whose
// replicas start together.
func (s *JobSpec) topology(j *Job) error {
	t := s.Topology
	if t == nil {
		return nil
	}
	switch {
	case t.Required != "" && t.Preferred != "":
		return bad("topology.preferred", t.Preferred, "give required or preferred, not both")
	case t.Required == "" && t.Preferred == "":
		return &FieldError{Field: "topology", Msg: "names no level: give required: LEVEL or preferred: LEVEL, such as required: rack"}
	}
	f := "topology.required"
	if t.Required == "" {
		f = "topology.preferred"
	}
	if errs := validation.IsQualifiedName(t.Level()); len(errs) > 0 {
		return bad(f, t.Level(), "name one of the cluster's topology levels, such as rack or zone")
	}
	if !j.IsGang() {
		return bad(f, t.Level(), "topology keeps replicas that start together in one domain: it applies to mpi and spark jobs and to command jobs of more than one replica, not to a %s of %d replica(s)", j.Kind, j.Replicas)
	}
	j.Topology = &JobTopology{Required: t.Required, Preferred: t.Preferred}
	return nil
}
