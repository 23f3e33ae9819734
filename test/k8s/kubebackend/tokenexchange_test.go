package kubebackend_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestTokenExchange: a task Pod's projected service-account token (kwok
// runs no atom, so the test asks the TokenRequest API for the token the
// kubelet would project: audience atom, bound to the Pod) is exchanged at
// POST /v1/tasks/{id}/token for that task's allocation token, and for
// nothing else: a token bound to another task's Pod, one of another
// audience, an unbound service-account token, garbage, one of an ended
// task and one of a replaced Pod are refused (401/403, a message saying
// why) and change nothing. The real atom binary, given only
// ATOM_TOKEN_FILE, exchanges it for the token and the rest of its
// environment, which the job sees, heartbeats and reports its task's end;
// given a token that is refused, it stops with the coordinator's reason.
func TestTokenExchange(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t, k8stest.NodeSpec{Name: "cpu-1", CPU: "16"}, k8stest.NodeSpec{Name: "cpu-2", CPU: "16"})
	co := startCoordinator(t, time.Minute, time.Minute, map[string]*k8stest.Cluster{"k8s": c})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	anon := client.New(co.d.URL, "")
	anon.Retries = 0
	allocToken := func(id structs.TaskID) (tok string) {
		co.d.Server.Read(func(s *state.State) { tok = s.Tokens[id] })
		return tok
	}
	// boundToken is what the kubelet projects into the Pod.
	boundToken := func(t *testing.T, p *corev1.Pod, audience string) string {
		t.Helper()
		exp := int64(kube.TokenExpiry)
		tr, err := c.Admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			Audiences: []string{audience}, ExpirationSeconds: &exp,
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	// unboundToken is a token of the same service account bound to no Pod.
	unboundToken := func(t *testing.T) string {
		t.Helper()
		exp := int64(kube.TokenExpiry)
		tr, err := c.Admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			Audiences: []string{kube.TokenAudience}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	const nonceA, nonceB = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	refused := func(t *testing.T, id structs.TaskID, jwt string, status int, msg string) {
		t.Helper()
		tok, err := anon.TaskToken(ctx, id, jwt, "")
		assert.Empty(t, tok)
		var ce *client.Error
		require.True(t, errors.As(err, &ce), "refused with a status: %v", err)
		assert.Equal(t, status, ce.Status, ce.Message)
		assert.Contains(t, ce.Message, msg)
	}

	id := co.submit(t, "kind: service\nname: web\nreplicas: 2\ncommand: [sleep, inf]\nresources: {cpu: \"1\", memory: 1Gi}\n")
	_, tasks := co.waitJob(t, id, "runs", func(j *structs.Job, ts []*structs.Task) bool { return len(running(ts)) == 2 })
	a, b := tasks[0], tasks[1]
	podA := c.WaitPodPhase(t, ns, kube.PodName(a.ID), corev1.PodRunning)
	podB := c.WaitPodPhase(t, ns, kube.PodName(b.ID), corev1.PodRunning)
	assertTokenVolume(t, podA)
	assertNoSecrets(ctx, t, c, ns)

	t.Run("own-pod", func(t *testing.T) {
		tok, err := anon.TaskToken(ctx, a.ID, boundToken(t, podA, kube.TokenAudience), nonceA)
		require.NoError(t, err)
		assert.Equal(t, allocToken(a.ID), tok.Token)
		// With it, the environment the Pod does not carry.
		assert.Equal(t, string(id), tok.Env["ATOM_JOB_ID"])
		assert.Equal(t, "2", tok.Env["ATOM_REPLICAS"])
		assert.Equal(t, podA.Name, tok.Env["ATOM_POD_NAME"])
		assert.Contains(t, tok.Env["ATOM_JOB_SPEC"], `"name":"web"`)
		assert.NotContains(t, tok.Env, "ATOM_TOKEN")
		tok, err = anon.TaskToken(ctx, b.ID, boundToken(t, podB, kube.TokenAudience), nonceB)
		require.NoError(t, err)
		assert.Equal(t, allocToken(b.ID), tok.Token)
		// atom's retry (its answer lost) is answered again.
		tok, err = anon.TaskToken(ctx, a.ID, boundToken(t, podA, kube.TokenAudience), nonceA)
		require.NoError(t, err)
		assert.Equal(t, allocToken(a.ID), tok.Token)
		// Anyone else, once atom has it: its job can read the same token
		// file, but not atom's nonce.
		refused(t, a.ID, boundToken(t, podA, kube.TokenAudience), http.StatusConflict,
			"its allocation token was handed out already, to its atom")
		_, err = anon.TaskToken(ctx, a.ID, boundToken(t, podA, kube.TokenAudience), nonceB)
		assert.ErrorIs(t, err, client.ErrConflict)
		_, err = anon.TaskToken(ctx, a.ID, boundToken(t, podA, kube.TokenAudience), "not-hex")
		assert.ErrorIs(t, err, client.ErrBadRequest)
	})

	t.Run("refused", func(t *testing.T) {
		before := allocToken(a.ID)
		refused(t, a.ID, boundToken(t, podB, kube.TokenAudience), http.StatusForbidden,
			"the token is bound to Pod "+ns+"/"+podB.Name+", not to task "+string(a.ID)+"'s Pod")
		refused(t, a.ID, boundToken(t, podA, "vault"), http.StatusUnauthorized, "does not accept the service-account token for audience atom")
		refused(t, a.ID, unboundToken(t), http.StatusForbidden, "is bound to no Pod")
		refused(t, a.ID, "eyJhbGciOiJub25lIn0.e30.garbage", http.StatusUnauthorized, "does not accept the service-account token")
		refused(t, a.ID, "", http.StatusUnauthorized, "no serviceAccountToken in the body")
		refused(t, "web-nosuch-0-a0", boundToken(t, podA, kube.TokenAudience), http.StatusForbidden, "task web-nosuch-0-a0 is not known")
		_, err := anon.TaskToken(ctx, a.ID, strings.Repeat("x", 20<<10), "")
		assert.ErrorIs(t, err, client.ErrBadRequest)
		// Nothing changed: same tokens, both replicas Running.
		assert.Equal(t, before, allocToken(a.ID))
		st, err := co.Job(ctx, id)
		require.NoError(t, err)
		assert.Len(t, running(st.Tasks), 2)
		assert.Equal(t, structs.JobRunning, st.Job.State)
	})

	t.Run("replaced-pod", func(t *testing.T) {
		old := boundToken(t, podA, kube.TokenAudience)
		zero := int64(0)
		require.NoError(t, c.Admin.CoreV1().Pods(ns).Delete(ctx, podA.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
		_, ts := co.waitJob(t, id, "replica 0 placed again", func(j *structs.Job, ts []*structs.Task) bool {
			r := running(ts)
			return len(r) == 2 && r[0].ID != a.ID && r[1].ID != a.ID
		})
		var again *structs.Task
		for _, x := range running(ts) {
			if x.Index == a.Index {
				again = x
			}
		}
		require.NotNil(t, again)
		newPod := c.WaitPodPhase(t, ns, kube.PodName(again.ID), corev1.PodRunning)
		// The old Pod's token, for its own (ended) task or the new one.
		refused(t, a.ID, old, http.StatusForbidden, "task "+string(a.ID)+" has ended")
		refused(t, again.ID, old, http.StatusUnauthorized, "does not accept the service-account token")
		tok, err := anon.TaskToken(ctx, again.ID, boundToken(t, newPod, kube.TokenAudience), nonceB)
		require.NoError(t, err)
		assert.Equal(t, allocToken(again.ID), tok.Token)
	})

	t.Run("ended-task", func(t *testing.T) {
		tok := boundToken(t, podB, kube.TokenAudience)
		co.cli(t, "job", "cancel", string(id))
		co.waitJob(t, id, "cancelled, its tasks ended", func(j *structs.Job, ts []*structs.Task) bool {
			for _, x := range ts {
				if x.State.HoldsResources() {
					return false
				}
			}
			return j.State.Ended()
		})
		refused(t, b.ID, tok, http.StatusForbidden, "task "+string(b.ID)+" has ended")
	})

	t.Run("atom", func(t *testing.T) {
		atomBin := filepath.Join(t.TempDir(), "atom")
		out, err := exec.Command("go", "build", "-o", atomBin, "github.com/atom-sched/atom/atom").CombinedOutput()
		require.NoError(t, err, string(out))
		jid := co.submit(t, "kind: command\nname: hello\ncommand: [\"true\"]\nresources: {cpu: \"1\", memory: 1Gi}\n")
		envFile := filepath.Join(t.TempDir(), "env")
		_, ts := co.waitJob(t, jid, "runs", func(_ *structs.Job, ts []*structs.Task) bool { return len(running(ts)) == 1 })
		task := ts[0]
		pod := c.WaitPodPhase(t, ns, kube.PodName(task.ID), corev1.PodRunning)
		dir := t.TempDir()
		atom := func(jwt string) (int, string) {
			file := filepath.Join(dir, "token")
			require.NoError(t, os.WriteFile(file, []byte(jwt+"\n"), 0o600))
			// Only what the Pod carries; the rest comes with the token.
			cmd := exec.CommandContext(ctx, atomBin, "run", "--reap=false", "--", "sh", "-c",
				`echo "$ATOM_JOB_ID $ATOM_REPLICAS $ATOM_JOB_KIND $ATOM_POD_NAME" >`+envFile+`; sleep 0.3`)
			cmd.Env = append(os.Environ(), "ATOM_COORDINATOR="+co.d.URL, "ATOM_TASK_ID="+string(task.ID), "ATOM_TOKEN=",
				"ATOM_TOKEN_FILE="+file)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			return code, stderr.String()
		}
		// A token bound to no Pod: atom stops at once, saying why.
		code, stderr := atom(unboundToken(t))
		assert.NotZero(t, code)
		assert.Contains(t, stderr, "ATOM_TOKEN_FILE: no allocation token for task "+string(task.ID)+": the coordinator refused this Pod's service-account token (403)")
		// Its own Pod's: exchanged, heartbeats accepted, its end reported.
		code, stderr = atom(boundToken(t, pod, kube.TokenAudience))
		assert.Equal(t, 0, code, stderr)
		b, err := os.ReadFile(envFile)
		require.NoError(t, err)
		assert.Equal(t, string(jid)+" 1 command "+pod.Name+"\n", string(b), "the job sees the environment atom fetched")
		j, _ := co.waitJob(t, jid, "succeeds", func(j *structs.Job, _ []*structs.Task) bool { return j.State.Ended() })
		assert.Equal(t, structs.JobSucceeded, j.State, j.Reason)
	})
}

// assertTokenVolume checks that Pod p gets its service account's token
// bound to it, audience atom, read-only at kube.TokenPath, and no other
// service-account token.
func assertTokenVolume(t *testing.T, p *corev1.Pod) {
	t.Helper()
	require.NotNil(t, p.Spec.AutomountServiceAccountToken)
	assert.False(t, *p.Spec.AutomountServiceAccountToken)
	var vol *corev1.Volume
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == "atom-token" {
			vol = &p.Spec.Volumes[i]
		}
	}
	require.NotNil(t, vol, "the atom-token volume")
	require.NotNil(t, vol.Projected)
	require.Len(t, vol.Projected.Sources, 1)
	sat := vol.Projected.Sources[0].ServiceAccountToken
	require.NotNil(t, sat)
	assert.Equal(t, kube.TokenAudience, sat.Audience)
	require.NotNil(t, sat.ExpirationSeconds)
	assert.EqualValues(t, 600, *sat.ExpirationSeconds)
	assert.Equal(t, filepath.Base(kube.TokenPath), sat.Path)
	var mount *corev1.VolumeMount
	for i, m := range p.Spec.Containers[0].VolumeMounts {
		if m.Name == "atom-token" {
			mount = &p.Spec.Containers[0].VolumeMounts[i]
		}
	}
	require.NotNil(t, mount)
	assert.Equal(t, filepath.Dir(kube.TokenPath), mount.MountPath)
	assert.True(t, mount.ReadOnly)
}

// assertNoSecrets checks that atom made no Secret in namespace ns.
func assertNoSecrets(ctx context.Context, t *testing.T, c *k8stest.Cluster, ns string) {
	t.Helper()
	list, err := c.Admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManaged + "=atom"})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "no Secret is made for a task")
}
