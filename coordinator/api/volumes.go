package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// VolumeStore creates, lists and deletes persistent volumes in the
// kubernetes clusters (the daemon's, over each cluster's backend). Its
// errors may be *StatusError to answer with that status.
type VolumeStore interface {
	CreateVolume(ctx context.Context, cluster structs.ClusterID, name string, size int64, owner structs.UserID) (*wire.Volume, error)
	Volumes(ctx context.Context) ([]wire.Volume, error)
	DeleteVolume(ctx context.Context, cluster structs.ClusterID, name string) error
}

func (s *server) volumeRoutes() {
	s.handle("POST /v1/volumes", authUser, s.createVolume)
	s.handle("GET /v1/volumes", authUser, s.listVolumes)
	s.handle("DELETE /v1/volumes/{name}", authUser, s.deleteVolume)
}

func (s *server) volumeStore() (VolumeStore, error) {
	if s.volumes == nil {
		return nil, errorf(http.StatusUnprocessableEntity, "this coordinator has no kubernetes cluster: persistent volumes live in one")
	}
	return s.volumes, nil
}

// minVolumeSize is the smallest volume volume create makes: 1Mi.
const minVolumeSize = 1 << 20

// createVolume: POST /v1/volumes (any user; the volume is theirs).
func (s *server) createVolume(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	vs, err := s.volumeStore()
	if err != nil {
		return 0, nil, err
	}
	var spec wire.VolumeSpec
	if err := decodeJSON(r, &spec, "a volume: {name, size, cluster}"); err != nil {
		return 0, nil, err
	}
	if errs := validation.IsDNS1123Subdomain(spec.Name); len(errs) > 0 {
		return 0, nil, errorf(http.StatusBadRequest, "volume name %q is not allowed: use a PersistentVolumeClaim name: %s", spec.Name, structs.ValidationText(errs))
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(string(spec.Size)))
	if err != nil || q.Sign() <= 0 || q.Value() <= 0 {
		return 0, nil, errorf(http.StatusBadRequest, "volume size %q is not allowed: use a quantity above 0 such as 100Gi", spec.Size)
	}
	// "1.5" or "100" is bytes: Kubernetes would round 1.5 up to a
	// volume of 2 bytes. No one means that.
	if q.CmpInt64(q.Value()) != 0 || q.Value() < minVolumeSize {
		return 0, nil, errorf(http.StatusBadRequest, "volume size %q is not allowed: a size without a unit is in bytes; use at least 1Mi in whole bytes, such as 100Gi", spec.Size)
	}
	v, err := vs.CreateVolume(r.Context(), spec.Cluster, spec.Name, q.Value(), c.user)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, v, nil
}

// listVolumes: GET /v1/volumes (any user), with the jobs using each.
func (s *server) listVolumes(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	vs, err := s.volumeStore()
	if err != nil {
		return 0, nil, err
	}
	vols, err := vs.Volumes(r.Context())
	if err != nil {
		return 0, nil, err
	}
	s.store.Read(func(st *state.State) {
		for i := range vols {
			vols[i].UsedBy = usedBy(st, vols[i].Name)
		}
	})
	if vols == nil {
		vols = []wire.Volume{}
	}
	return http.StatusOK, wire.VolumeList{Volumes: vols}, nil
}

// usedBy lists the jobs, not ended, whose volumes claim name.
func usedBy(st *state.State, name string) []structs.JobID {
	var out []structs.JobID
	for id, j := range st.Jobs {
		if j.State.Ended() {
			continue
		}
		for _, v := range j.Volumes {
			if v.Claim == name {
				out = append(out, id)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// deleteVolume: DELETE /v1/volumes/{name}[?cluster=C] (its owner or an
// admin); refused while a job not ended names it.
func (s *server) deleteVolume(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	vs, err := s.volumeStore()
	if err != nil {
		return 0, nil, err
	}
	name, cluster := r.PathValue("name"), structs.ClusterID(r.URL.Query().Get("cluster"))
	vols, err := vs.Volumes(r.Context())
	if err != nil {
		return 0, nil, err
	}
	var found []wire.Volume
	for _, v := range vols {
		if v.Name == name && (cluster == "" || v.Cluster == cluster) {
			found = append(found, v)
		}
	}
	switch {
	case len(found) == 0:
		return 0, nil, errorf(http.StatusNotFound, "volume %q not found%s", name, inCluster(cluster))
	case len(found) > 1:
		return 0, nil, errorf(http.StatusBadRequest, "volume %q exists in clusters %s and %s: say which with cluster", name, found[0].Cluster, found[1].Cluster)
	case !c.admin && found[0].Owner != c.user:
		return 0, nil, errorf(http.StatusForbidden, "volume %q belongs to %s: only its owner or an admin may delete it", name, found[0].Owner)
	}
	var jobs []structs.JobID
	s.store.Read(func(st *state.State) { jobs = usedBy(st, name) })
	if len(jobs) > 0 {
		return 0, nil, errorf(http.StatusConflict, "volume %q is in use by job %s: cancel it or wait for it to end", name, joinIDs(jobs))
	}
	if err := vs.DeleteVolume(r.Context(), found[0].Cluster, name); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

func inCluster(c structs.ClusterID) string {
	if c == "" {
		return ""
	}
	return fmt.Sprintf(" in cluster %s", c)
}

func joinIDs(ids []structs.JobID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}
