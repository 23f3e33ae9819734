package ui_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/coordinator/ui"
	"github.com/atom-sched/atom/pkg/structs"
)

// now is the dashboard's clock in these tests: an hour after the API's.
var now = apitest.T0.Add(time.Hour)

// env is the API and the dashboard over one apitest.Store, as a
// coordinator serves them, with task logs read from files in logs.
type env struct {
	store  *apitest.Store
	srv    *httptest.Server
	ui     http.Handler
	api    http.Handler
	tf     api.TokenFile
	tokens map[structs.UserID]string
	logs   string // a task's output is the file named by its ID
}

func newEnv(t *testing.T, config string) *env {
	t.Helper()
	if config == "" {
		config = apitest.Cluster
	}
	e := &env{store: apitest.NewStore(), tokens: map[structs.UserID]string{}, logs: t.TempDir()}
	e.store.Load(t, config)
	var tf api.TokenFile
	for _, u := range apitest.Users {
		u.Token = "token-" + string(u.Name) + "-" + apitest.NewToken()
		e.tokens[u.Name] = u.Token
		tf.Users = append(tf.Users, u)
	}
	apiH := api.New(e.store, api.Config{Tokens: tf, Clock: func() time.Time { return apitest.T0 },
		Logs: func(id structs.TaskID, _ bool) (io.ReadCloser, error) {
			f, err := os.Open(filepath.Join(e.logs, string(id)))
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fs.ErrNotExist
			}
			return f, err
		}})
	e.api, e.tf = apiH, tf
	e.ui = ui.New(ui.Config{Store: e.store, API: apiH, Tokens: tf, Clock: func() time.Time { return now }})
	mux := http.NewServeMux()
	mux.Handle("/", apiH)
	mux.Handle(ui.Prefix, e.ui)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// submit submits spec as owner straight through the store and returns
// the job's ID.
func (e *env) submit(t *testing.T, owner structs.UserID, id, spec string) structs.JobID {
	t.Helper()
	s, err := structs.ParseJobSpec([]byte(spec))
	require.NoError(t, err)
	j, err := s.ToJob(owner)
	require.NoError(t, err)
	j.ID = structs.JobID(id)
	e.store.Must(t, &state.JobSubmit{Job: j, Now: apitest.T0})
	return j.ID
}

// writeLog makes text task id's output.
func (e *env) writeLog(t *testing.T, id structs.TaskID, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(e.logs, string(id)), []byte(text), 0o600))
}

// req is one request to the dashboard.
type req struct {
	method, path string
	form         url.Values
	user         structs.UserID // signed in as; "" none
	cookie       string         // a raw session cookie instead of user's
	header       []string       // names and values
}

// do sends r without following redirects and returns the status, the
// body and the response.
func (e *env) do(t *testing.T, r req) (int, string, *http.Response) {
	t.Helper()
	var body io.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	}
	hr, err := http.NewRequestWithContext(context.Background(), cmpOr(r.method, "GET"), e.srv.URL+r.path, body)
	require.NoError(t, err)
	if r.form != nil {
		hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if tok := e.tokens[r.user]; tok != "" {
		hr.AddCookie(&http.Cookie{Name: "atom_session", Value: tok})
	}
	if r.cookie != "" {
		hr.AddCookie(&http.Cookie{Name: "atom_session", Value: r.cookie})
	}
	for i := 0; i+1 < len(r.header); i += 2 {
		hr.Header.Set(r.header[i], r.header[i+1])
	}
	c := *e.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(hr)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp
}

// page GETs path as user and requires 200.
func (e *env) page(t *testing.T, user structs.UserID, path string) string {
	t.Helper()
	status, body, _ := e.do(t, req{path: path, user: user})
	require.Equal(t, http.StatusOK, status, "GET %s as %s: %s", path, user, body)
	return body
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is user's CSRF token, as their pages carry it.
func (e *env) csrf(t *testing.T, user structs.UserID) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(e.page(t, user, "/ui/quotas"))
	require.NotNil(t, m, "pages carry the CSRF token")
	return m[1]
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

const (
	webSpec = `{kind: service, command: [true], name: web, project: perception, replicas: 2, minAvailable: 1, resources: {accelerators: {type: A100, count: 1}}}`
	lowSpec = `{kind: command, name: batch, priority: low, command: [sleep, "1"], resources: {cpu: "1", memory: 1Gi}}`
)

// placed is the access fixture: u1's service web-1 in project perception,
// placed (two tasks, each with some output).
func placed(t *testing.T) (*env, []*structs.Task) {
	t.Helper()
	e := newEnv(t, "")
	e.submit(t, "u1", "web-1", webSpec)
	cr := e.store.Schedule(t, apitest.T0)
	require.Equal(t, []structs.JobID{"web-1"}, cr.Placed)
	tasks := e.store.Tasks("web-1")
	require.Len(t, tasks, 2)
	for _, tk := range tasks {
		e.writeLog(t, tk.ID, "hello from "+string(tk.ID)+"\n")
	}
	return e, tasks
}
