package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// SubmitJob submits a job spec (YAML or JSON) with request ID requestID; an
// empty requestID gets a fresh random one, so retries of this call are
// safe. A retry of an earlier submission (same request ID) answers with the
// job it created and Existing set.
func (c *Client) SubmitJob(ctx context.Context, spec []byte, requestID string) (*wire.SubmitResponse, error) {
	if requestID == "" {
		requestID = NewRequestID()
	}
	var out wire.SubmitResponse
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs", body: spec,
		header: http.Header{wire.HeaderIdempotencyKey: {requestID}, "Content-Type": {"application/yaml"}}, out: &out})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// JobFilter narrows ListJobs; empty fields match everything.
type JobFilter struct {
	State   structs.JobState
	Owner   structs.UserID
	Project structs.ProjectID
	Kind    structs.JobKind
}

// ListJobs lists the jobs the caller may see, oldest first.
func (c *Client) ListJobs(ctx context.Context, f JobFilter) ([]*structs.Job, error) {
	q := url.Values{}
	for k, v := range map[string]string{"state": string(f.State), "owner": string(f.Owner), "project": string(f.Project), "kind": string(f.Kind)} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out wire.JobList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs", query: q, out: &out}); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// Job returns a job and its tasks.
func (c *Client) Job(ctx context.Context, id structs.JobID) (*wire.JobStatus, error) {
	var out wire.JobStatus
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs/" + seg(string(id)), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Why says why a job is pending, or that it is not.
func (c *Client) Why(ctx context.Context, id structs.JobID) (*wire.WhyResponse, error) {
	var out wire.WhyResponse
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs/" + seg(string(id)) + "/why", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelJob cancels a job and returns it.
func (c *Client) CancelJob(ctx context.Context, id structs.JobID) (*wire.JobStatus, error) {
	var out wire.JobStatus
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + seg(string(id)) + "/cancel", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ScaleService sets a service's replica count.
func (c *Client) ScaleService(ctx context.Context, id structs.JobID, replicas int) (*wire.JobStatus, error) {
	var out wire.JobStatus
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + seg(string(id)) + "/scale",
		body: jsonBody(wire.ScaleRequest{Replicas: &replicas}), header: jsonHeader(), out: &out})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Quotas lists the quotas the caller may read.
func (c *Client) Quotas(ctx context.Context) ([]wire.QuotaStatus, error) {
	var out wire.QuotaList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/quotas", out: &out}); err != nil {
		return nil, err
	}
	return out.Quotas, nil
}

// Quota returns a scope's limits and usage.
func (c *Client) Quota(ctx context.Context, scope structs.Scope) (*wire.QuotaStatus, error) {
	var out wire.QuotaStatus
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/quotas/" + seg(string(scope)), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetQuota sets the quota a quota spec describes (admins).
func (c *Client) SetQuota(ctx context.Context, spec []byte) (*wire.QuotaStatus, error) {
	scope, err := specField(spec, "scope", "quota spec")
	if err != nil {
		return nil, err
	}
	var out wire.QuotaStatus
	if err := c.do(ctx, putSpec("/v1/quotas/"+seg(scope), spec, &out)); err != nil {
		return nil, err
	}
	return &out, nil
}

// Pools lists the project pools.
func (c *Client) Pools(ctx context.Context) ([]*structs.Pool, error) {
	var out wire.PoolList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/pools", out: &out}); err != nil {
		return nil, err
	}
	return out.Pools, nil
}

// Pool returns one pool.
func (c *Client) Pool(ctx context.Context, name structs.PoolID) (*structs.Pool, error) {
	var out structs.Pool
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/pools/" + seg(string(name)), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetPool creates or replaces the pool a pool spec describes (admins).
func (c *Client) SetPool(ctx context.Context, spec []byte) (*structs.Pool, error) {
	name, err := specField(spec, "name", "pool spec")
	if err != nil {
		return nil, err
	}
	var out structs.Pool
	if err := c.do(ctx, putSpec("/v1/pools/"+seg(name), spec, &out)); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeletePool deletes a pool no node belongs to (admins).
func (c *Client) DeletePool(ctx context.Context, name structs.PoolID) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/pools/" + seg(string(name))})
}

// Nodes lists the nodes with what their tasks hold.
func (c *Client) Nodes(ctx context.Context) ([]wire.NodeStatus, error) {
	var out wire.NodeList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/nodes", out: &out}); err != nil {
		return nil, err
	}
	return out.Nodes, nil
}

// Node returns one node.
func (c *Client) Node(ctx context.Context, name structs.NodeID) (*wire.NodeStatus, error) {
	var out wire.NodeStatus
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/nodes/" + seg(string(name)), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetNode creates or replaces the node a node spec describes (admins).
func (c *Client) SetNode(ctx context.Context, spec []byte) (*wire.NodeStatus, error) {
	name, err := specField(spec, "name", "node spec")
	if err != nil {
		return nil, err
	}
	var out wire.NodeStatus
	if err := c.do(ctx, putSpec("/v1/nodes/"+seg(name), spec, &out)); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteNode removes a node that runs nothing (admins).
func (c *Client) DeleteNode(ctx context.Context, name structs.NodeID) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/nodes/" + seg(string(name))})
}

// ReleaseNode returns quarantined accelerators of node name to service
// (admins); no accels returns every quarantined one.
func (c *Client) ReleaseNode(ctx context.Context, name structs.NodeID, accels []int) (*wire.ReleaseResponse, error) {
	var out wire.ReleaseResponse
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/nodes/" + seg(string(name)) + "/release",
		body: jsonBody(wire.ReleaseRequest{Accelerators: accels}), header: jsonHeader(), out: &out})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Clusters lists the clusters.
func (c *Client) Clusters(ctx context.Context) ([]*structs.Cluster, error) {
	var out wire.ClusterList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/clusters", out: &out}); err != nil {
		return nil, err
	}
	return out.Clusters, nil
}

// Cluster returns one cluster.
func (c *Client) Cluster(ctx context.Context, name structs.ClusterID) (*structs.Cluster, error) {
	var out structs.Cluster
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/clusters/" + seg(string(name)), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteCluster deletes a cluster no node is in and no unended job is
// pinned to (admins).
func (c *Client) DeleteCluster(ctx context.Context, name structs.ClusterID) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/clusters/" + seg(string(name))})
}

// SetCluster creates or replaces the cluster a cluster spec describes
// (admins).
func (c *Client) SetCluster(ctx context.Context, spec []byte) (*structs.Cluster, error) {
	name, err := specField(spec, "name", "cluster spec")
	if err != nil {
		return nil, err
	}
	var out structs.Cluster
	if err := c.do(ctx, putSpec("/v1/clusters/"+seg(name), spec, &out)); err != nil {
		return nil, err
	}
	return &out, nil
}

// Heartbeat reports on task id with its allocation token and returns what
// the coordinator wants of the task (Stopping: stop it).
func (c *Client) Heartbeat(ctx context.Context, id structs.TaskID, allocToken string, ev wire.Heartbeat) (*wire.HeartbeatResponse, error) {
	var out wire.HeartbeatResponse
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/tasks/" + seg(string(id)) + "/heartbeat",
		token: allocToken, body: jsonBody(ev), header: jsonHeader(), out: &out})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Peers lists the tasks of task id's job, with the allocation token of any
// task of that job.
func (c *Client) Peers(ctx context.Context, id structs.TaskID, allocToken string) (*wire.PeerList, error) {
	var out wire.PeerList
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/tasks/" + seg(string(id)) + "/peers", token: allocToken, out: &out})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

func putSpec(path string, spec []byte, out any) request {
	return request{method: http.MethodPut, path: path, body: spec,
		header: http.Header{"Content-Type": {"application/yaml"}}, out: out}
}

// specField reads the top-level scalar field of a YAML or JSON spec, as
// written, to name the object in the URL. A spec that holds no mapping
// (none at all, null, a list, two documents) is refused as the coordinator
// would refuse it; the coordinator validates the rest (and refuses a name
// that differs from the URL's).
func specField(spec []byte, field, what string) (string, error) {
	v, err := structs.SpecField(spec, what, field)
	if err != nil || v != "" {
		return v, err
	}
	return "", fmt.Errorf("%s: %s is required, such as %s: %s", what, field, field, map[string]string{"scope": "user:alice", "name": "example"}[field])
}
