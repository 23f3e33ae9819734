package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// Configs and secrets (/v1/configs, /v1/secrets): objects owned by a user,
// or by a project whose members share them. Their owner, its project's
// members and admins read and change them; a secret's values are shown
// to its owner (a project's: its members) only, one key at a time, and
// are sealed with the keyring here, before any command carries them.
// Messages name keys, never values.

// maxConfigBody bounds a config's or secret's body: 1 MiB of data is
// about 1.4 MiB in base64, with room for many keys.
const maxConfigBody = 2 << 20

func (s *server) configRoutes() {
	for _, kind := range []structs.ConfigKind{structs.ConfigKindConfig, structs.ConfigKindSecret} {
		base := "/v1/" + string(kind) + "s"
		s.handle("POST "+base, authUser, s.createConfig(kind))
		s.handle("GET "+base, authUser, s.listConfigs(kind))
		s.handle("GET "+base+"/{name}", authUser, s.getConfig(kind))
		s.handle("PUT "+base+"/{name}", authUser, s.updateConfig(kind))
		s.handle("DELETE "+base+"/{name}", authUser, s.deleteConfig(kind))
	}
	s.handle("GET /v1/secrets/{name}/data/{key}", authUser, s.showSecret)
	s.handle("POST /v1/secrets/rekey", authAdmin, s.rekeySecrets)
	s.handle("POST /v1/jobs/{id}/restart", authUser, s.restartJob)
}

// configOwner is the owner a request names: ?project=P (or the body's
// project) for a project's, ?user=U for a user's (admins; others only
// themselves), else the caller. write: to create or change one, which a
// project's members and admins may.
func (s *server) configOwner(r *http.Request, c caller, project structs.ProjectID) (structs.Scope, error) {
	q := r.URL.Query()
	for k := range q {
		if k != "project" && k != "user" {
			return "", errorf(http.StatusBadRequest, "query parameter %q is not known: use project or user", trunc(k))
		}
	}
	if p := structs.ProjectID(q.Get("project")); p != "" {
		if project != "" && project != p {
			return "", errorf(http.StatusBadRequest, "project %q in the body and %q in the query differ: give one", trunc(string(project)), trunc(string(p)))
		}
		project = p
	}
	user := structs.UserID(q.Get("user"))
	switch {
	case project != "" && user != "":
		return "", errorf(http.StatusBadRequest, "give project or user, not both")
	case project != "":
		if err := objectName("project", string(project)); err != nil {
			return "", err
		}
		return structs.ProjectScope(project), nil
	case user != "" && user != c.user && !c.admin:
		return "", errorf(http.StatusForbidden, "only admins name another user's configs and secrets: leave user out for yours")
	case user != "":
		return structs.UserScope(user), nil
	}
	return structs.UserScope(c.user), nil
}

// canRead reports whether c may read and change scope's objects: admins
// all, users their own and their projects'.
func (c caller) canRead(st *state.State, scope structs.Scope) bool {
	return c.admin || c.canShow(st, scope)
}

// canShow reports whether c may see scope's secrets' values: the user it
// is, or a member of the project it is (admins are not owners).
func (c caller) canShow(st *state.State, scope structs.Scope) bool {
	if scope == structs.UserScope(c.user) {
		return true
	}
	p, ok := strings.CutPrefix(string(scope), "project:")
	return ok && projects(st, c.user)[structs.ProjectID(p)]
}

// noKeyring answers a secret request on a server without a keyring.
func noKeyring() error {
	return errorf(http.StatusUnprocessableEntity, "this coordinator has no keyring, so it keeps no secrets: start every server with --keyring FILE (coordinator/README.md, \"Configs and secrets\")")
}

// decodeConfig reads and checks a config's or secret's body.
func decodeConfig(r *http.Request, kind structs.ConfigKind) (wire.ConfigSpec, error) {
	var spec wire.ConfigSpec
	if err := decodeJSONLimit(r, &spec, fmt.Sprintf("a %s: {name, project, data: {KEY: base64 of the value}}", kind), maxConfigBody); err != nil {
		return spec, err
	}
	if err := spec.Data.Validate(kind); err != nil {
		return spec, errorf(http.StatusBadRequest, "%v", err)
	}
	return spec, nil
}

// createConfig: POST /v1/configs, /v1/secrets.
func (s *server) createConfig(kind structs.ConfigKind) handler {
	return func(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
		if kind == structs.ConfigKindSecret && s.keyring == nil {
			return 0, nil, noKeyring()
		}
		spec, err := decodeConfig(r, kind)
		if err != nil {
			return 0, nil, err
		}
		if err := structs.ValidateConfigName(kind, spec.Name); err != nil {
			return 0, nil, errorf(http.StatusBadRequest, "%v", err)
		}
		owner, err := s.configOwner(r, c, spec.Project)
		if err != nil {
			return 0, nil, err
		}
		if err := s.mayWrite(c, owner); err != nil {
			return 0, nil, err
		}
		id := structs.ConfigID{Kind: kind, Owner: owner, Name: spec.Name}
		res, err := s.apply(r.Context(), s.configPut(id, 1, true, spec.Data, c.user))
		if err != nil {
			return 0, nil, err
		}
		out, err := s.configView(id, c, false)
		if err != nil {
			return 0, nil, err
		}
		if pr, ok := putResult(res); ok && pr.Existing {
			out.Existing = true
			return http.StatusOK, out, nil
		}
		return http.StatusCreated, out, nil
	}
}

// mayWrite refuses a user who is neither owner nor admin: a project's
// objects are its members'.
func (s *server) mayWrite(c caller, owner structs.Scope) error {
	ok := false
	s.store.Read(func(st *state.State) { ok = c.canRead(st, owner) })
	if !ok {
		return errorf(http.StatusForbidden, "user %s may not create or change configs and secrets of %s: only its members and admins may", c.user, owner)
	}
	return nil
}

// configPut builds the command for version of id with data, sealing a
// secret's values.
func (s *server) configPut(id structs.ConfigID, version int, create bool, data structs.ConfigData, by structs.UserID) *state.ConfigPut {
	put := &state.ConfigPut{ID: id, Create: create, Version: version, Keys: data.Keys(), By: by, Now: s.clock()}
	if id.Kind == structs.ConfigKindSecret {
		put.Digest = s.keyring.Digest(data)
		put.Sealed = s.keyring.Seal(data.Encode(), keyring.AAD(id, version))
	} else {
		put.Digest, put.Data = data.Digest(), data
	}
	return put
}

func putResult(res any) (state.ConfigPutResult, bool) {
	switch r := res.(type) {
	case state.ConfigPutResult:
		return r, true
	case *state.ConfigPutResult:
		return *r, r != nil
	}
	return state.ConfigPutResult{}, false
}

// configView describes id as c may see it (not found when c may not
// read it), with a config's data when data is set.
func (s *server) configView(id structs.ConfigID, c caller, data bool) (*wire.Config, error) {
	var out *wire.Config
	s.store.Read(func(st *state.State) {
		o := st.Config(id)
		if o == nil || !c.canRead(st, id.Owner) {
			return
		}
		v := view(o)
		v.UsedBy = st.ConfigUsers(id)
		if data && id.Kind == structs.ConfigKindConfig {
			v.Data = o.Current().Data
		}
		out = &v
	})
	if out == nil {
		return nil, errorf(http.StatusNotFound, "%s %s of %s not found", id.Kind, trunc(id.Name), id.Owner)
	}
	return out, nil
}

func view(o *structs.ConfigObject) wire.Config {
	cur := o.Current()
	v := wire.Config{Kind: o.Kind, Name: o.Name, Owner: o.Owner, Version: cur.Version, Keys: cur.Keys, Digest: cur.Digest,
		CreatedBy: o.CreatedBy, Created: o.Created, UpdatedBy: cur.By, Updated: cur.Updated}
	if cur.Sealed != nil {
		v.SealedWith = cur.Sealed.Key
	}
	return v
}

// listConfigs: GET /v1/configs, /v1/secrets [?project=P|?user=U].
func (s *server) listConfigs(kind structs.ConfigKind) handler {
	return func(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
		var only structs.Scope
		if r.URL.Query().Has("project") || r.URL.Query().Has("user") {
			var err error
			if only, err = s.configOwner(r, c, ""); err != nil {
				return 0, nil, err
			}
		} else if err := noQuery(r); err != nil {
			return 0, nil, err
		}
		out := wire.ConfigList{Configs: []wire.Config{}}
		s.store.Read(func(st *state.State) {
			for _, o := range st.Configs {
				if o.Kind == kind && (only == "" || o.Owner == only) && c.canRead(st, o.Owner) {
					v := view(o)
					v.UsedBy = st.ConfigUsers(o.ConfigID)
					out.Configs = append(out.Configs, v)
				}
			}
		})
		slices.SortFunc(out.Configs, func(a, b wire.Config) int {
			return cmp.Or(cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.Name, b.Name))
		})
		return http.StatusOK, out, nil
	}
}

func noQuery(r *http.Request) error {
	for k := range r.URL.Query() {
		return errorf(http.StatusBadRequest, "query parameter %q is not known: use project or user", trunc(k))
	}
	return nil
}

// pathConfig is the object the path and query name.
func (s *server) pathConfig(r *http.Request, c caller, kind structs.ConfigKind) (structs.ConfigID, error) {
	name := r.PathValue("name")
	if err := structs.ValidateConfigName(kind, name); err != nil {
		return structs.ConfigID{}, errorf(http.StatusBadRequest, "%v", err)
	}
	owner, err := s.configOwner(r, c, "")
	if err != nil {
		return structs.ConfigID{}, err
	}
	return structs.ConfigID{Kind: kind, Owner: owner, Name: name}, nil
}

// getConfig: GET /v1/configs/{name}, /v1/secrets/{name} [?project=P].
func (s *server) getConfig(kind structs.ConfigKind) handler {
	return func(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
		id, err := s.pathConfig(r, c, kind)
		if err != nil {
			return 0, nil, err
		}
		v, err := s.configView(id, c, true)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, v, nil
	}
}

// updateConfig: PUT /v1/configs/{name}, /v1/secrets/{name}
// [?project=P]: a new version with the body's data (the same data makes
// none). A concurrent update is retried, sealed for the next version.
func (s *server) updateConfig(kind structs.ConfigKind) handler {
	return func(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
		if kind == structs.ConfigKindSecret && s.keyring == nil {
			return 0, nil, noKeyring()
		}
		id, err := s.pathConfig(r, c, kind)
		if err != nil {
			return 0, nil, err
		}
		spec, err := decodeConfig(r, kind)
		if err != nil {
			return 0, nil, err
		}
		if spec.Name != "" {
			if err := nameMatches(string(kind)+" name", spec.Name, id.Name); err != nil {
				return 0, nil, err
			}
		}
		if spec.Project != "" && structs.ProjectScope(spec.Project) != id.Owner {
			return 0, nil, errorf(http.StatusBadRequest, "project %q in the body is not the owner the query names (%s): an update names its object with ?project=P", trunc(string(spec.Project)), id.Owner)
		}
		var res any
		for range 3 {
			cur, err := s.configView(id, c, false)
			if err != nil {
				return 0, nil, err
			}
			res, err = s.apply(r.Context(), s.configPut(id, cur.Version+1, false, spec.Data, c.user))
			if errors.Is(err, state.ErrExists) {
				continue // another update came first: seal for the next version
			}
			if err != nil {
				return 0, nil, err
			}
			break
		}
		if res == nil {
			return 0, nil, errorf(http.StatusConflict, "%s %s is being updated by others: send the update again", kind, id.Name)
		}
		out, err := s.configView(id, c, false)
		if err != nil {
			return 0, nil, err
		}
		if pr, ok := putResult(res); ok {
			out.Unchanged = pr.Unchanged
		}
		return http.StatusOK, out, nil
	}
}

// deleteConfig: DELETE /v1/configs/{name}, /v1/secrets/{name}
// [?project=P]: refused while a job not ended names it.
func (s *server) deleteConfig(kind structs.ConfigKind) handler {
	return func(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
		id, err := s.pathConfig(r, c, kind)
		if err != nil {
			return 0, nil, err
		}
		if _, err := s.configView(id, c, false); err != nil {
			return 0, nil, err
		}
		if _, err := s.apply(r.Context(), &state.ConfigDelete{ID: id, Now: s.clock()}); err != nil {
			return 0, nil, conflictIfInvalid(err)
		}
		return http.StatusNoContent, nil, nil
	}
}

// showSecret: GET /v1/secrets/{name}/data/{key} [?project=P]: one value
// of the current version, to the secret's owner (a project's members).
func (s *server) showSecret(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	id, err := s.pathConfig(r, c, structs.ConfigKindSecret)
	if err != nil {
		return 0, nil, err
	}
	key := r.PathValue("key")
	var v *structs.ConfigVersion
	mayShow, mayRead := false, false
	s.store.Read(func(st *state.State) {
		if o := st.Config(id); o != nil {
			v = o.Current()
			mayShow, mayRead = c.canShow(st, id.Owner), c.canRead(st, id.Owner)
		}
	})
	switch {
	case v == nil || !mayRead:
		return 0, nil, errorf(http.StatusNotFound, "secret %s of %s not found", trunc(id.Name), id.Owner)
	case !mayShow:
		return 0, nil, errorf(http.StatusForbidden, "secret %s belongs to %s: only its owner (a project's members) sees its values", id.Name, id.Owner)
	case s.keyring == nil:
		return 0, nil, noKeyring()
	}
	plain, err := s.keyring.Open(v.Sealed, keyring.AAD(id, v.Version))
	if err != nil {
		return 0, nil, errorf(http.StatusInternalServerError, "secret %s version %d: %v", id.Name, v.Version, err)
	}
	data, err := structs.DecodeConfigData(plain)
	if err != nil {
		return 0, nil, errorf(http.StatusInternalServerError, "secret %s version %d: %v", id.Name, v.Version, err)
	}
	val, ok := data[key]
	if !ok {
		keys := make([]string, len(v.Keys))
		for i, k := range v.Keys {
			keys[i] = k.Key
		}
		return 0, nil, errorf(http.StatusNotFound, "secret %s has no key %q: its keys are %s", id.Name, trunc(key), strings.Join(keys, ", "))
	}
	return http.StatusOK, wire.SecretValue{Name: id.Name, Key: key, Version: v.Version, Value: val}, nil
}

// rekeySecrets: POST /v1/secrets/rekey (admins): every secret version
// sealed with a key other than the keyring's active one is sealed again
// with it, one secret per command.
func (s *server) rekeySecrets(_ http.ResponseWriter, r *http.Request, _ caller) (int, any, error) {
	if s.keyring == nil {
		return 0, nil, noKeyring()
	}
	if err := noQuery(r); err != nil {
		return 0, nil, err
	}
	active := s.keyring.Active()
	var todo []*structs.ConfigObject
	s.store.Read(func(st *state.State) {
		for _, o := range st.Configs {
			for _, v := range o.Versions {
				if v.Sealed != nil && v.Sealed.Key != active {
					todo = append(todo, o)
					break
				}
			}
		}
	})
	slices.SortFunc(todo, func(a, b *structs.ConfigObject) int { return cmp.Compare(a.Key(), b.Key()) })
	out := wire.RekeyResponse{Key: active}
	for _, o := range todo {
		n, err := s.rekey(r.Context(), o, active)
		out.Rekeyed += n
		if err != nil {
			return 0, nil, fmt.Errorf("rekey %s (%d versions sealed again before it): %w", o.ConfigID, out.Rekeyed, err)
		}
	}
	s.store.Read(func(st *state.State) {
		for _, o := range st.Configs {
			for _, v := range o.Versions {
				if v.Sealed != nil && v.Sealed.Key != active {
					if out.Remaining == nil {
						out.Remaining = map[string]int{}
					}
					out.Remaining[v.Sealed.Key]++
				}
			}
		}
	})
	return http.StatusOK, out, nil
}

// rekey seals o's versions sealed with another key again with active.
func (s *server) rekey(ctx context.Context, o *structs.ConfigObject, active string) (int, error) {
	cmd := &state.SecretRekey{}
	for _, v := range o.Versions {
		if v.Sealed == nil || v.Sealed.Key == active {
			continue
		}
		aad := keyring.AAD(o.ConfigID, v.Version)
		plain, err := s.keyring.Open(v.Sealed, aad)
		if err != nil {
			return 0, errorf(http.StatusUnprocessableEntity, "version %d: %v", v.Version, err)
		}
		cmd.Items = append(cmd.Items, state.RekeyItem{ID: o.ConfigID, Version: v.Version, Sealed: s.keyring.Seal(plain, aad)})
	}
	res, err := s.apply(ctx, cmd)
	if err != nil {
		return 0, err
	}
	switch rr := res.(type) {
	case state.RekeyResult:
		return rr.Rekeyed, nil
	case *state.RekeyResult:
		return rr.Rekeyed, nil
	}
	return len(cmd.Items), nil
}

// restartJob: POST /v1/jobs/{id}/restart: a service's replicas restart
// one at a time (minAvailable kept), getting its configs' newest versions.
func (s *server) restartJob(_ http.ResponseWriter, r *http.Request, c caller) (int, any, error) {
	id := structs.JobID(r.PathValue("id"))
	return s.serviceCommand(r, c, func(j *structs.Job) (state.Command, error) {
		switch {
		case j.Kind != structs.KindService:
			return nil, errorf(http.StatusBadRequest, "job %s is a %s job: only services restart replica by replica (cancel it and submit it again)", id, j.Kind)
		case j.State.Ended():
			return nil, errorf(http.StatusConflict, "job %s already ended (%s): submit it again instead", id, j.State)
		}
		return &state.ServiceRestart{ID: id, Now: s.clock(), By: c.user}, nil
	})
}

// serviceCommand applies the command cmd makes of job {id} (none: the
// job is answered as it is), which c may
// see (else not found), and answers with the job's status after it.
func (s *server) serviceCommand(r *http.Request, c caller, cmd func(j *structs.Job) (state.Command, error)) (int, any, error) {
	id := structs.JobID(r.PathValue("id"))
	js, err := s.jobStatus(r.Context(), id, c)
	if err != nil {
		return 0, nil, err
	}
	command, err := cmd(js.Job)
	if err != nil {
		return 0, nil, err
	}
	if command == nil { // nothing to change
		return http.StatusOK, js, nil
	}
	if _, err := s.apply(r.Context(), command); err != nil {
		return 0, nil, err
	}
	if js, err = s.jobStatus(r.Context(), id, c); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, js, nil
}
