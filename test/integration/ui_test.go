package integration

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// The dashboard on a follower: its pages show the cluster's jobs, and a
// cancel made there reaches the leader, as the API's writes do.
func TestDashboardOnFollower(t *testing.T) {
	servers := startCluster(t)
	lead := leader(t, servers)
	var follower *srv
	for _, s := range servers {
		if s != lead {
			follower = s
			break
		}
	}
	ctx := context.Background()
	c := client.New(lead.url, token)
	sub, err := c.SubmitJob(ctx, []byte("kind: command\nname: long\ncommand: [sleep, \"600\"]\nresources: {cpu: 1, memory: 1Gi}\n"), "ui-long")
	require.NoError(t, err)
	id := string(sub.JobID)

	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, form url.Values) (int, string) {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequestWithContext(ctx, method, follower.url+path, body)
		require.NoError(t, err)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.AddCookie(&http.Cookie{Name: "atom_session", Value: token})
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool {
		status, body := do("GET", "/ui/jobs?state=Running", nil)
		return status == http.StatusOK && strings.Contains(body, `<a href="/ui/jobs/`+id+`">`)
	}, 30*time.Second, 100*time.Millisecond, "the follower's Jobs page shows the running job")
	status, body := do("GET", "/ui/jobs/"+id, nil)
	require.Equal(t, http.StatusOK, status, body)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, m)

	status, body = do("POST", "/ui/jobs/"+id+"/cancel", url.Values{"csrf": {m[1]}})
	require.Equal(t, http.StatusSeeOther, status, body)
	st, err := c.Job(ctx, sub.JobID)
	require.NoError(t, err)
	assert.Equal(t, structs.JobCancelled, st.Job.State, "the follower passed the cancel to the leader")
}
