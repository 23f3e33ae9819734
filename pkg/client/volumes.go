package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// CreateVolume creates a persistent volume (a PersistentVolumeClaim of
// class ceph-rbd) in a kubernetes cluster; an empty cluster is the only
// one there is.
func (c *Client) CreateVolume(ctx context.Context, spec wire.VolumeSpec) (*wire.Volume, error) {
	var out wire.Volume
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/volumes", body: jsonBody(spec), header: jsonHeader(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Volumes lists the persistent volumes and the jobs that use them.
func (c *Client) Volumes(ctx context.Context) ([]wire.Volume, error) {
	var out wire.VolumeList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/volumes", out: &out}); err != nil {
		return nil, err
	}
	return out.Volumes, nil
}

// DeleteVolume deletes a persistent volume no job uses (its owner or an
// admin); cluster may be empty when the name is in one cluster only.
func (c *Client) DeleteVolume(ctx context.Context, name string, cluster structs.ClusterID) error {
	q := url.Values{}
	if cluster != "" {
		q.Set("cluster", string(cluster))
	}
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/volumes/" + seg(name), query: q})
}
