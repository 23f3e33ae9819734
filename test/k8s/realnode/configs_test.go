package realnode_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// TestConfigs: a service's containers read a config made with the CLI as
// files and a secret as environment variables; after an update and a
// service restart, the replicas placed again read the new version.
func TestConfigs(t *testing.T) {
	e := nodetest.Start(t, nodetest.Options{})
	e.KubeletLogOnFailure(t)
	msg := filepath.Join(t.TempDir(), "msg")
	require.NoError(t, os.WriteFile(msg, []byte("hello-v1"), 0o600))
	e.CLI(t, "config", "create", "app", "--from-file", msg)
	e.CLI(t, "secret", "create", "creds", "--from-literal", "TOKEN=s3cret-token-for-the-container")
	id := e.Submit(t, `kind: service
name: app
replicas: 2
minAvailable: 1
resources: {cpu: 200m, memory: 64Mi}
command: [sh, -c, 'echo "msg=$(cat /etc/app/msg) token=$TOKEN"; exec sleep 600']
configs: [{config: app, mountPath: /etc/app}, {secret: creds, env: true}]
`)
	// read waits until both replicas run with version v of the config and
	// have printed want.
	read := func(v int, want string) {
		t.Helper()
		_, tasks := e.WaitJob(t, id, "two replicas running the config's version", func(_ *structs.Job, tasks []*structs.Task) bool {
			n := 0
			for _, tk := range tasks {
				if tk.State == structs.TaskRunning && tk.Configs[0].Version == v {
					n++
				}
			}
			return n == 2
		})
		for _, tk := range tasks {
			if tk.State != structs.TaskRunning {
				continue
			}
			require.Eventually(t, func() bool {
				out, err := e.Run("job", "logs", "--task", string(tk.ID), string(id))
				return err == nil && strings.Contains(out, want)
			}, time.Minute, 200*time.Millisecond, "task %s prints %q", tk.ID, want)
		}
	}
	read(1, "msg=hello-v1 token=s3cret-token-for-the-container\n")

	require.NoError(t, os.WriteFile(msg, []byte("hello-v2"), 0o600))
	out := e.CLI(t, "config", "update", "app", "--from-file", msg)
	assert.Contains(t, out, "config app updated: version 2")
	e.CLI(t, "service", "restart", string(id))
	read(2, "msg=hello-v2 token=s3cret-token-for-the-container\n")
	assert.NotContains(t, e.Log.String(), "s3cret-token-for-the-container", "the coordinator's log")
}
