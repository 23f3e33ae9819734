package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

func configPath(kind structs.ConfigKind) string { return "/v1/" + string(kind) + "s" }

// ownerQuery names a config's owner: "" the caller, "project:P" a
// project's, "user:U" a user's (admins: another user's).
func ownerQuery(owner structs.Scope) url.Values {
	kind, name, ok := strings.Cut(string(owner), ":")
	if !ok || name == "" {
		return nil
	}
	return url.Values{kind: {name}}
}

// CreateConfig creates a config or secret for owner ("": the caller;
// "project:P" or spec.Project: the project's; "user:U": an admin's for
// another user). A retry after a lost answer finds it made with the same
// data (Existing).
func (c *Client) CreateConfig(ctx context.Context, kind structs.ConfigKind, owner structs.Scope, spec wire.ConfigSpec) (*wire.Config, error) {
	var out wire.Config
	if err := c.do(ctx, request{method: http.MethodPost, path: configPath(kind), query: ownerQuery(owner), body: jsonBody(spec), header: jsonHeader(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateConfig replaces the data of owner's config or secret name with
// spec.Data (a new version; the same data makes none: Unchanged).
func (c *Client) UpdateConfig(ctx context.Context, kind structs.ConfigKind, owner structs.Scope, name string, spec wire.ConfigSpec) (*wire.Config, error) {
	var out wire.Config
	if err := c.do(ctx, request{method: http.MethodPut, path: configPath(kind) + "/" + seg(name), query: ownerQuery(owner), body: jsonBody(spec),
		header: jsonHeader(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Config returns owner's config (with its data) or secret (without).
func (c *Client) Config(ctx context.Context, kind structs.ConfigKind, owner structs.Scope, name string) (*wire.Config, error) {
	var out wire.Config
	if err := c.do(ctx, request{method: http.MethodGet, path: configPath(kind) + "/" + seg(name), query: ownerQuery(owner), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Configs lists the configs or secrets the caller may read (of owner
// only, when set).
func (c *Client) Configs(ctx context.Context, kind structs.ConfigKind, owner structs.Scope) ([]wire.Config, error) {
	var out wire.ConfigList
	if err := c.do(ctx, request{method: http.MethodGet, path: configPath(kind), query: ownerQuery(owner), out: &out}); err != nil {
		return nil, err
	}
	return out.Configs, nil
}

// DeleteConfig deletes owner's config or secret name, which no job not
// ended names.
func (c *Client) DeleteConfig(ctx context.Context, kind structs.ConfigKind, owner structs.Scope, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: configPath(kind) + "/" + seg(name), query: ownerQuery(owner)})
}

// SecretValue returns one value of a secret (its owner only).
func (c *Client) SecretValue(ctx context.Context, owner structs.Scope, name, key string) (*wire.SecretValue, error) {
	var out wire.SecretValue
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/secrets/" + seg(name) + "/data/" + seg(key), query: ownerQuery(owner), out: &out}); err != nil {
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
