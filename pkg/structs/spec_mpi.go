package structs

import (
	"strings"
)

// Bounds on the mpi section.
const (
	MaxSlotsPerReplica = 1024
	MaxMpirunArgs      = 64
)

// MPISpec is the mpi section of an mpi job's spec:
//
//	mpi: {slotsPerReplica: 8, mpirunArgs: [-x, NCCL_DEBUG], startTimeout: 5m}
//
// Replica 0 runs mpirun over all replicas (see plugins/mpi).
type MPISpec struct {
	// SlotsPerReplica is the number of ranks on each replica; default its
	// accelerators, or 1 without.
	SlotsPerReplica *int64 `json:"slotsPerReplica,omitempty"`
	// MpirunArgs are passed to mpirun before the program; atom sets the
	// hostfile, the rank count and the launch agent itself.
	MpirunArgs []string `json:"mpirunArgs,omitempty"`
	// StartTimeout is how long the launcher waits for every worker of the
	// attempt to be ready before the job fails; default 10m.
	StartTimeout string `json:"startTimeout,omitempty"`
}

// MPIOptions is the mpi section of an accepted job.
type MPIOptions struct {
	SlotsPerReplica int64    `json:"slotsPerReplica,omitempty"` // 0: accelerators, or 1
	MpirunArgs      []string `json:"mpirunArgs,omitempty"`
	StartTimeout    Duration `json:"startTimeout,omitempty"` // 0: 10m
}

// mpirunOwned are the mpirun options atom sets from the placement.
var mpirunOwned = []string{"-np", "-n", "--np", "-c", "--hostfile", "-hostfile", "--machinefile", "-machinefile", "-H", "--host", "-host", "plm_rsh_agent", "orte_rsh_agent"}

// mpi checks and converts the mpi section.
func (s *JobSpec) mpi(j *Job) error {
	if s.MPI == nil {
		return nil
	}
	if s.Kind != KindMPI {
		return &FieldError{Field: "mpi", Msg: "is only for kind mpi; this job is kind " + string(s.Kind)}
	}
	o := &MPIOptions{MpirunArgs: append([]string(nil), s.MPI.MpirunArgs...)}
	if p := s.MPI.SlotsPerReplica; p != nil {
		if err := checkRange("mpi.slotsPerReplica", *p, 1, MaxSlotsPerReplica, " ranks"); err != nil {
			return err
		}
		o.SlotsPerReplica = *p
	}
	if len(o.MpirunArgs) > MaxMpirunArgs {
		return bad("mpi.mpirunArgs", len(o.MpirunArgs), "give at most %d arguments", MaxMpirunArgs)
	}
	for _, a := range o.MpirunArgs {
		for _, owned := range mpirunOwned {
			if a == owned || strings.HasPrefix(a, owned+"=") {
				return bad("mpi.mpirunArgs", a, "atom sets the hostfile, the rank count (replicas × slotsPerReplica) and the launch agent itself")
			}
		}
	}
	if s.MPI.StartTimeout != "" {
		d, err := parseDuration("mpi.startTimeout", s.MPI.StartTimeout)
		if err != nil {
			return err
		}
		o.StartTimeout = Duration(d)
	}
	j.MPI = o
	return nil
}
