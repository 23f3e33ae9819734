package daemon

import (
	"context"
	"errors"
	"net/http"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// podTokens is the API's PodTokens over the kubernetes clusters'
// backends: a task's Pod token is reviewed by its node's cluster, which
// makes its atom's environment too.
type podTokens struct{ r *router }

// podTokensOf returns the PodTokens of backend be, nil when it drives no
// kubernetes cluster.
func podTokensOf(be any) api.PodTokens {
	r, ok := be.(*router)
	if !ok || len(r.kube) == 0 {
		return nil
	}
	return podTokens{r: r}
}

func (p podTokens) ReviewPodToken(ctx context.Context, t *structs.Task, allocToken, jwt string) (map[string]string, error) {
	var c structs.ClusterID
	var j *structs.Job
	p.r.srv.Read(func(s *state.State) {
		if n := s.Nodes[t.Node]; n != nil {
			c = n.Cluster
		}
		j = s.Jobs[t.Job]
	})
	b := p.r.kube[c]
	if b == nil || t.Executor != "" {
		return nil, &api.StatusError{Status: http.StatusForbidden, Msg: "task " + string(t.ID) + " runs in no atom task Pod of a kubernetes cluster: it gets its token as ATOM_TOKEN"}
	}
	if j == nil {
		return nil, &api.StatusError{Status: http.StatusForbidden, Msg: "task " + string(t.ID) + "'s job " + string(t.Job) + " is not known: a Pod gets the token of its own live task only"}
	}
	err := b.ReviewPodToken(ctx, t.ID, allocToken, jwt)
	var refused *kube.TokenRefused
	if errors.As(err, &refused) {
		status := http.StatusForbidden
		if refused.Invalid {
			status = http.StatusUnauthorized
		}
		return nil, &api.StatusError{Status: status, Msg: refused.Msg}
	}
	if err != nil {
		return nil, err
	}
	return b.LaunchEnv(t, j), nil
}
