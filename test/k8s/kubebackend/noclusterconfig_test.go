package kubebackend_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/k8stest"
)

// TestLeaderWithoutClusterConfig: servers that join without the
// --cluster-config naming the kubernetes cluster (as README's three-server
// example starts them) have no client for it. When one leads, a task it
// places on the cluster's nodes is never run as a local process in the
// Pod's stead (it was: the job Succeeded on the coordinator's machine): it
// waits, Scheduled, no Pod made, and the leader says why and what to do.
func TestLeaderWithoutClusterConfig(t *testing.T) {
	c := k8stest.Start(t, k8stest.Options{})
	prepare(t, c)
	c.AddNodes(t, k8stest.NodeSpec{Name: "cpu-1", CPU: "16", Memory: "64Gi"})
	tr := newTrio(t, c, 15*time.Second, time.Minute)
	s1 := tr.start("s1")
	require.Eventually(t, s1.d.Server.IsLeader, 10*time.Second, 20*time.Millisecond)
	tr.cc = nil // s2 and s3: no --cluster-config
	others := map[string]*coordinator{"s2": tr.start("s2"), "s3": tr.start("s3")}
	tr.stop("s1")
	var leader *coordinator
	var leaderID string
	require.Eventually(t, func() bool {
		for id, s := range others {
			if s.d.Server.IsLeader() {
				leader, leaderID = s, id
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "s2 or s3 leads")

	id := leader.submit(t, "kind: command\nname: hello\ncommand: [sh, -c, 'echo hello']\nresources: {cpu: \"1\", memory: 1Gi}\n")
	var task structs.TaskID
	leader.waitJob(t, id, "is placed", func(_ *structs.Job, ts []*structs.Task) bool {
		if len(ts) == 1 {
			task = ts[0].ID
		}
		return task != ""
	})
	require.Eventually(t, func() bool {
		return strings.Contains(tr.logs.String(), fmt.Sprintf("task %s: cluster k8s is a kubernetes cluster and server %s has no client for it: its --cluster-config does not name the cluster: start every server with the --cluster-config that names the cluster (kubeconfig, namespace)", task, leaderID))
	}, 30*time.Second, 50*time.Millisecond, "the leader says why it does not start the task")
	require.Contains(t, tr.logs.String(), `level=ERROR msg="leading without a client for a kubernetes cluster: its tasks are not started and its nodes not followed while this server leads; start every server with the --cluster-config that names it" server=`+leaderID+` cluster=k8s`)
	st, err := leader.Job(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, structs.JobScheduled, st.Job.State)
	require.Len(t, st.Tasks, 1)
	require.Equal(t, structs.TaskScheduled, st.Tasks[0].State, "never run as a local process")
	_, err = c.Admin.CoreV1().Pods(ns).Get(context.Background(), kube.PodName(task), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no Pod is made: %v", err)
}
