package state

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/atom-sched/atom/pkg/sched"
	"github.com/atom-sched/atom/pkg/structs"
)

// Configs and secrets: objects users create (coordinator config create,
// secret create) and jobs name in their configs. The state keeps each
// object's current version and the older ones that tasks holding
// resources still use (a task is started with the version it was placed
// with: Task.Configs). A secret's values are only ever here sealed: the
// API seals them before a command carries them (coordinator/keyring).
const (
	MsgConfigPut      MsgType = 18
	MsgConfigDelete   MsgType = 19
	MsgServiceRestart MsgType = 20
	MsgSecretRekey    MsgType = 21
)

func init() {
	register(MsgConfigPut, func() Command { return &ConfigPut{} })
	register(MsgConfigDelete, func() Command { return &ConfigDelete{} })
	register(MsgServiceRestart, func() Command { return &ServiceRestart{} })
	register(MsgSecretRekey, func() Command { return &SecretRekey{} })
}

// Config returns the object id names, or nil.
func (s *State) Config(id structs.ConfigID) *structs.ConfigObject { return s.Configs[id.Key()] }

// ConfigPut creates (Create) or updates a config or secret with one
// version of data: a config's Data, or a secret's Sealed (bound to ID and
// Version). Version is the version it makes: 1 for a create, the current
// one plus one for an update (the API read it, and sealed for it); another
// means a concurrent update, refused (retry). Data equal to the current
// version's (same Digest) makes no version: a create is then a retry
// (Existing), an update Unchanged.
type ConfigPut struct {
	ID      structs.ConfigID     `json:"id"`
	Create  bool                 `json:"create,omitempty"`
	Version int                  `json:"version"`
	Keys    []structs.ConfigKey  `json:"keys"`
	Digest  string               `json:"digest"`
	Data    structs.ConfigData   `json:"data,omitempty"`
	Sealed  *structs.SealedValue `json:"sealed,omitempty"`
	By      structs.UserID       `json:"by"`
	Now     time.Time            `json:"now"`
}

// ConfigPutResult is what ConfigPut returns.
type ConfigPutResult struct {
	Version   int  `json:"version"`
	Existing  bool `json:"existing,omitempty"`  // a create found it made, with this data
	Unchanged bool `json:"unchanged,omitempty"` // an update with the current data
}

func (*ConfigPut) Type() MsgType { return MsgConfigPut }

func (c *ConfigPut) apply(s *State) (any, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	o := s.Config(c.ID)
	switch {
	case o == nil && !c.Create:
		return nil, fmt.Errorf("%s %s of %s %w: create it (coordinator %s create %s)", c.ID.Kind, c.ID.Name, c.ID.Owner, ErrNotFound, c.ID.Kind, c.ID.Name)
	case o != nil && o.Current().Digest == c.Digest:
		return ConfigPutResult{Version: o.Current().Version, Existing: c.Create, Unchanged: !c.Create}, nil
	case o != nil && c.Create:
		return nil, existsf("%s %s of %s already exists: update it (coordinator %s update %s) or delete it first", c.ID.Kind, c.ID.Name, c.ID.Owner, c.ID.Kind, c.ID.Name)
	}
	want := 1
	if o != nil {
		want = o.Current().Version + 1
	}
	if c.Version != want {
		return nil, existsf("%s %s of %s changed meanwhile (now version %d): send the update again", c.ID.Kind, c.ID.Name, c.ID.Owner, want-1)
	}
	v := &structs.ConfigVersion{Version: c.Version, Keys: slices.Clone(c.Keys), Digest: c.Digest, Updated: c.Now, By: c.By,
		Data: c.Data, Sealed: c.Sealed}
	if s.Configs == nil {
		s.Configs = map[string]*structs.ConfigObject{}
	}
	if o == nil {
		s.Configs[c.ID.Key()] = &structs.ConfigObject{ConfigID: c.ID, CreatedBy: c.By, Created: c.Now, Versions: []*structs.ConfigVersion{v}}
		return ConfigPutResult{Version: v.Version}, nil
	}
	used := s.versionsInUse(c.ID)
	n := *o
	n.Versions = nil
	for _, old := range o.Versions {
		if used[old.Version] {
			n.Versions = append(n.Versions, old)
		}
	}
	n.Versions = append(n.Versions, v)
	s.Configs[c.ID.Key()] = &n
	return ConfigPutResult{Version: v.Version}, nil
}

// check refuses a malformed command (the API checks the same first, with
// the data in plain).
func (c *ConfigPut) check() error {
	if err := checkConfigID(c.ID); err != nil {
		return err
	}
	switch {
	case c.Digest == "":
		return invalidf("%s %s: no digest", c.ID.Kind, c.ID.Name)
	case c.ID.Kind == structs.ConfigKindConfig && (c.Sealed != nil || !slices.Equal(c.Keys, c.Data.Keys())):
		return invalidf("config %s: its keys are its data's, in plain", c.ID.Name)
	case c.ID.Kind == structs.ConfigKindConfig:
		if err := c.Data.Validate(c.ID.Kind); err != nil {
			return invalidf("%w", err)
		}
		return nil
	case c.Sealed == nil || len(c.Data) > 0:
		return invalidf("secret %s: its values travel sealed only", c.ID.Name)
	}
	// A secret: check its keys and sizes as data of that shape.
	shape := structs.ConfigData{}
	total := 0
	for _, k := range c.Keys {
		shape[k.Key] = nil
		total += len(k.Key) + k.Size
		if k.Size < 0 {
			return invalidf("secret %s: key %s has a negative size", c.ID.Name, k.Key)
		}
	}
	if err := shape.Validate(c.ID.Kind); err != nil {
		return invalidf("%w", err)
	}
	if len(shape) != len(c.Keys) || total > structs.MaxConfigBytes {
		return invalidf("secret %s is %d bytes (keys and values), or names a key twice: at most %d (1 MiB) of distinct keys is allowed", c.ID.Name, total, structs.MaxConfigBytes)
	}
	return nil
}

func checkConfigID(id structs.ConfigID) error {
	if id.Kind != structs.ConfigKindConfig && id.Kind != structs.ConfigKindSecret {
		return invalidf("kind %q is not allowed: use config or secret", id.Kind)
	}
	if err := structs.ValidateConfigName(id.Kind, id.Name); err != nil {
		return invalidf("%w", err)
	}
	if !strings.HasPrefix(string(id.Owner), "user:") && !strings.HasPrefix(string(id.Owner), "project:") {
		return invalidf("%s %s: owner %q is not allowed: use user:NAME or project:NAME", id.Kind, id.Name, id.Owner)
	}
	return nil
}

// versionsInUse returns the versions of id that tasks holding resources
// were placed with.
func (s *State) versionsInUse(id structs.ConfigID) map[int]bool {
	used := map[int]bool{}
	for _, t := range s.Tasks {
		if !t.State.HoldsResources() {
			continue
		}
		for _, tc := range t.Configs {
			if tc.ConfigID == id {
				used[tc.Version] = true
			}
		}
	}
	return used
}

// ConfigDelete deletes a config or secret that no job which has not
// ended names.
type ConfigDelete struct {
	ID  structs.ConfigID `json:"id"`
	Now time.Time        `json:"now"`
}

func (*ConfigDelete) Type() MsgType { return MsgConfigDelete }

func (c *ConfigDelete) apply(s *State) (any, error) {
	if s.Config(c.ID) == nil {
		return nil, fmt.Errorf("%s %s of %s %w", c.ID.Kind, c.ID.Name, c.ID.Owner, ErrNotFound)
	}
	if jobs := s.ConfigUsers(c.ID); len(jobs) > 0 {
		ids := make([]string, len(jobs))
		for i, id := range jobs {
			ids[i] = string(id)
		}
		return nil, invalidf("%s %s is in use by job %s: cancel them or wait until they end (update it to change it)", c.ID.Kind, c.ID.Name, strings.Join(ids, ", "))
	}
	delete(s.Configs, c.ID.Key())
	return nil, nil
}

// ConfigUsers lists, by ID, the jobs not ended that name config id.
func (s *State) ConfigUsers(id structs.ConfigID) []structs.JobID {
	var out []structs.JobID
	for jid, j := range s.Jobs {
		if j.State.Ended() {
			continue
		}
		for _, c := range j.Configs {
			if c.Object() && c.ID() == id {
				out = append(out, jid)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// SecretRekey replaces the sealed data of secrets' versions with the
// same values sealed again (under the keyring's active key, after a key
// rotation). An item whose version is no longer kept is skipped.
type SecretRekey struct {
	Items []RekeyItem `json:"items"`
}

// RekeyItem is one secret version sealed again.
type RekeyItem struct {
	ID      structs.ConfigID     `json:"id"`
	Version int                  `json:"version"`
	Sealed  *structs.SealedValue `json:"sealed"`
}

func (*SecretRekey) Type() MsgType { return MsgSecretRekey }

// RekeyResult counts the versions sealed again.
type RekeyResult struct {
	Rekeyed int `json:"rekeyed"`
}

func (c *SecretRekey) apply(s *State) (any, error) {
	for _, it := range c.Items {
		if it.ID.Kind != structs.ConfigKindSecret || it.Sealed == nil {
			return nil, invalidf("rekey %s: only secrets' sealed versions", it.ID)
		}
	}
	n := 0
	for _, it := range c.Items {
		o := s.Config(it.ID)
		if o == nil || o.Version(it.Version) == nil {
			continue
		}
		c := *o
		c.Versions = slices.Clone(o.Versions)
		for i, v := range c.Versions {
			if v.Version == it.Version {
				nv := *v
				nv.Sealed = it.Sealed
				c.Versions[i] = &nv
			}
		}
		s.Configs[it.ID.Key()] = &c
		n++
	}
	return RekeyResult{Rekeyed: n}, nil
}

// resolveConfigs returns j's configs with each atom config and secret
// found: Owner set, the name without its project. config and secret name
// the job's project's object (when it names a project) or else the
// owner's; PROJECT/NAME a project's, whose member the owner must be. A
// secret found nowhere is a Kubernetes Secret by name, as before atom had
// secrets, where the coordinator has a kubernetes cluster; a configMap
// is one always, and needs such a cluster.
func (s *State) resolveConfigs(j *structs.Job) ([]structs.ConfigRef, error) {
	if len(j.Configs) == 0 {
		return nil, nil
	}
	kube := false
	for _, c := range s.Clusters {
		kube = kube || c.Backend == "kubernetes"
	}
	out := slices.Clone(j.Configs)
	for i := range out {
		c := &out[i]
		field := fmt.Sprintf("configs[%d]", i)
		kind, name := c.Kind(), c.Name()
		switch {
		case c.Owner != "":
			return nil, invalidf("%s.owner is set by the coordinator: leave it out", field)
		case c.ConfigMap != "" && !kube:
			return nil, invalidf("%s: configMap %s names a Kubernetes ConfigMap, and this coordinator has no kubernetes cluster: create a config (coordinator config create %s --from-file ...) and name it with config: %s",
				field, name, name, name)
		case c.ConfigMap != "":
			continue
		}
		var owners []structs.Scope
		project, bare, qualified := strings.Cut(name, "/")
		if qualified {
			if !s.projectExists(structs.ProjectID(project)) {
				return nil, invalidf("%s: %s %s: %s is not a project: PROJECT/NAME names a project's %s; a user's own are named without a prefix (%s), and no user may use another's",
					field, kind, name, project, kind, bare)
			}
			if !s.member(j.Owner, structs.ProjectID(project)) {
				return nil, fmt.Errorf("%s: %s %s belongs to project %s, and user %s is not a member of it: only its members may use it: %w",
					field, kind, bare, project, j.Owner, sched.ErrNotAllowed)
			}
			owners = []structs.Scope{structs.ProjectScope(structs.ProjectID(project))}
			name = bare
		} else {
			if j.Project != "" {
				owners = append(owners, structs.ProjectScope(j.Project))
			}
			owners = append(owners, structs.UserScope(j.Owner))
		}
		for _, o := range owners {
			if s.Config(structs.ConfigID{Kind: kind, Owner: o, Name: name}) != nil {
				c.Owner = o
				break
			}
		}
		if c.Owner != "" && c.Env {
			for _, k := range s.Config(structs.ConfigID{Kind: kind, Owner: c.Owner, Name: name}).Current().Keys {
				if err := structs.CheckEnvKey(kind, name, k.Key); err != nil {
					return nil, invalidf("%s: %w", field, err)
				}
			}
		}
		switch {
		case c.Owner != "":
			if kind == structs.ConfigKindSecret {
				c.Secret = name
			} else {
				c.Config = name
			}
		case kind == structs.ConfigKindSecret && !qualified && kube:
			// A Kubernetes Secret of the namespace, by name.
		default:
			where := make([]string, len(owners))
			for i, o := range owners {
				where[i] = string(o)
			}
			return nil, invalidf("%s: no %s %s (looked in %s): create it first (coordinator %s create %s%s ...)",
				field, kind, name, strings.Join(where, " and "), kind, name, projectFlag(owners[0]))
		}
	}
	return out, nil
}

func projectFlag(o structs.Scope) string {
	if p, ok := strings.CutPrefix(string(o), "project:"); ok {
		return " --project " + p
	}
	return ""
}

// member reports whether user u is a member of project p (its pool lists
// u).
// projectExists reports whether a pool names project p.
func (s *State) projectExists(p structs.ProjectID) bool {
	for _, pl := range s.Pools {
		if pl.Project == p {
			return true
		}
	}
	return false
}

func (s *State) member(u structs.UserID, p structs.ProjectID) bool {
	for _, pl := range s.Pools {
		if pl.Project == p && pl.HasMember(u) {
			return true
		}
	}
	return false
}

// taskConfigs are the current versions of j's atom configs and secrets,
// which a task placed now gets.
func (s *State) taskConfigs(j *structs.Job) []structs.TaskConfig {
	var out []structs.TaskConfig
	for _, c := range j.Configs {
		if !c.Object() {
			continue
		}
		if o := s.Config(c.ID()); o != nil {
			out = append(out, structs.TaskConfig{ConfigID: c.ID(), Version: o.Current().Version})
		}
	}
	return out
}

// ServiceRestart restarts a service's replicas one at a time, so that
// they get the newest versions of its configs and secrets: it raises the
// job's Restart, and rollout stops the replicas placed before, each
// placed again as a scale-down's would be, only while more than
// minAvailable replicas run.
type ServiceRestart struct {
	ID  structs.JobID  `json:"id"`
	Now time.Time      `json:"now"`
	By  structs.UserID `json:"by,omitempty"` // who asked, for its event
}

func (*ServiceRestart) Type() MsgType { return MsgServiceRestart }

// RestartResult says which restart ServiceRestart began.
type RestartResult struct {
	Restart int `json:"restart"`
}

func (c *ServiceRestart) apply(s *State) (any, error) {
	j := s.Jobs[c.ID]
	switch {
	case j == nil:
		return nil, fmt.Errorf("job %s: %w", c.ID, ErrNotFound)
	case j.Kind != structs.KindService:
		return nil, invalidf("job %s is a %s job: only services restart replica by replica", c.ID, j.Kind)
	case j.State.Ended():
		return nil, invalidf("job %s already ended", c.ID)
	}
	replicas := j.ShapeAt(j.Shape).Replicas
	switch {
	case replicas == 0:
		return nil, invalidf("service %s is parked (0 replicas): nothing runs to restart; scale it up, and its replicas start with the newest configs", c.ID)
	case replicas <= max(j.MinAvailable, 1):
		return nil, invalidf("service %s has %d replica(s) and minAvailable %d: restarting one at a time would leave fewer than minAvailable running: scale it to %d first (coordinator service scale %s %d)",
			c.ID, replicas, max(j.MinAvailable, 1), replicas+1, c.ID, replicas+1)
	}
	j = s.putJob(c.ID, func(j *structs.Job) { j.Restart++ })
	by := ""
	if c.By != "" {
		by = " by " + string(c.By)
	}
	s.jobEvent(c.Now, c.ID, structs.EventRestarting, "restart%s: its %d replicas restart one at a time, at least %d running", by, replicas, max(j.MinAvailable, 1))
	s.rollout(c.ID, c.Now)
	return RestartResult{Restart: j.Restart}, nil
}

// rollout takes job id's restart one step. While the replica it last
// stopped (RestartReplica) has no running task placed since the restart,
// it waits; then it stops one replica placed before the restart (one not
// running first; a running one only while more than minAvailable run)
// and waits for that one. Each stopped replica is placed again
// (Pending), with the newest versions of the job's configs; a replica
// that is down meanwhile (crash-looping) is placed again with them anyway.
func (s *State) rollout(id structs.JobID, now time.Time) {
	j := s.Jobs[id]
	if j == nil || j.Kind != structs.KindService || j.State.Ended() || j.Restart == 0 {
		return
	}
	replicas := j.ShapeAt(j.Shape).Replicas
	running := 0
	var old []*structs.Task
	waiting := j.RestartReplica != nil && *j.RestartReplica < replicas
	for _, t := range s.TasksOf(id) {
		if t.Attempt != j.Attempt || t.Executor != "" || !t.State.HoldsResources() || t.State == structs.TaskStopping {
			continue
		}
		if t.State == structs.TaskRunning {
			running++
		}
		switch {
		case t.Restart < j.Restart:
			old = append(old, t)
		case waiting && t.Index == *j.RestartReplica && t.State == structs.TaskRunning:
			waiting = false // its replacement runs
		}
	}
	if waiting {
		return
	}
	if j.RestartReplica != nil {
		s.putJob(id, func(j *structs.Job) { j.RestartReplica = nil })
	}
	if len(old) == 0 {
		return // done
	}
	pick := old[0]
	for _, t := range old {
		if t.State != structs.TaskRunning {
			pick = t
			break
		}
	}
	if pick.State == structs.TaskRunning && running-1 < max(j.MinAvailable, 1) {
		return
	}
	t := s.putTask(pick.ID, func(t *structs.Task) { t.State, t.StopReason = structs.TaskStopping, structs.StopRestarted })
	index := t.Index
	s.putJob(id, func(j *structs.Job) { j.RestartReplica = &index })
	s.record(taskEventOf(now, t, structs.EventRestarting, "%s stopping for the service's restart: placed again, it gets the newest configs", replicaName(t)))
}

// rolloutAfter takes a step of the restarts of the services whose tasks
// events touched.
func (s *State) rolloutAfter(events []structs.TaskEvent) {
	jobs := map[structs.JobID]time.Time{}
	for _, e := range events {
		if t := s.Tasks[e.Task]; t != nil {
			jobs[t.Job] = e.Time
		}
	}
	for _, id := range slices.Sorted(maps.Keys(jobs)) {
		s.rollout(id, jobs[id])
	}
}
