package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func configPath(kind structs.ConfigKind) string { return "/v1/" + string(kind) + "s" }

func ownerQuery(project structs.ProjectID) url.Values {
	if project == "" {
		return nil
	}
	return url.Values{"project": {string(project)}}
}

// CreateConfig creates a config or secret (spec.Project: the project's;
// else the caller's). A retry after a lost answer finds it made with the
// same data (Existing).
func (c *Client) CreateConfig(ctx context.Context, kind structs.ConfigKind, spec wire.ConfigSpec) (*wire.Config, error) {
	var out wire.Config
	if err := c.do(ctx, request{method: http.MethodPost, path: configPath(kind), body: jsonBody(spec), header: jsonHeader(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateConfig replaces a config's or secret's data with spec.Data (a new
// version; the same data makes none: Unchanged).
func (c *Client) UpdateConfig(ctx context.Context, kind structs.ConfigKind, name string, spec wire.ConfigSpec) (*wire.Config, error) {
	var out wire.Config
	q := ownerQuery(spec.Project)
	spec.Project = ""
	if err := c.do(ctx, request{method: http.MethodPut, path: configPath(kind) + "/" + seg(name), query: q, body: jsonBody(spec),
		header: jsonHeader(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Config returns a config (with its data) or a secret (without).
func (c *Client) Config(ctx context.Context, kind structs.ConfigKind, name string, project structs.ProjectID) (*wire.Config, error) {
	var out wire.Config
	if err := c.do(ctx, request{method: http.MethodGet, path: configPath(kind) + "/" + seg(name), query: ownerQuery(project), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Configs lists the configs or secrets the caller may read (of project
// only, when set).
func (c *Client) Configs(ctx context.Context, kind structs.ConfigKind, project structs.ProjectID) ([]wire.Config, error) {
	var out wire.ConfigList
	if err := c.do(ctx, request{method: http.MethodGet, path: configPath(kind), query: ownerQuery(project), out: &out}); err != nil {
		return nil, err
	}
	return out.Configs, nil
}

// DeleteConfig deletes a config or secret that no job not ended names.
func (c *Client) DeleteConfig(ctx context.Context, kind structs.ConfigKind, name string, project structs.ProjectID) error {
	return c.do(ctx, request{method: http.MethodDelete, path: configPath(kind) + "/" + seg(name), query: ownerQuery(project)})
}

// SecretValue returns one value of a secret (its owner only).
func (c *Client) SecretValue(ctx context.Context, name, key string, project structs.ProjectID) (*wire.SecretValue, error) {
	var out wire.SecretValue
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/secrets/" + seg(name) + "/data/" + seg(key), query: ownerQuery(project), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// RekeySecrets seals every secret again with the keyring's active key
// (admins).
func (c *Client) RekeySecrets(ctx context.Context) (*wire.RekeyResponse, error) {
	var out wire.RekeyResponse
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/secrets/rekey", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// RestartService restarts a service's replicas one at a time.
func (c *Client) RestartService(ctx context.Context, id structs.JobID) (*wire.JobStatus, error) {
	var out wire.JobStatus
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + seg(string(id)) + "/restart", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
