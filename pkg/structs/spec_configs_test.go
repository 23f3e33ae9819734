package structs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const storageJob = "kind: command\nname: train\nresources: {cpu: 1}\nvolumes: [{name: data, claim: imagenet, mountPath: /data}]\n"

func TestScratchAndConfigs(t *testing.T) {
	t.Parallel()
	s, err := ParseJobSpec([]byte(storageJob + "scratch: {size: 200Gi}\nconfigs:\n" +
		"  - {configMap: train-config, mountPath: /etc/train}\n  - {secret: wandb-key, env: true}\n  - {secret: s3, mountPath: /etc/s3}\n"))
	require.NoError(t, err)
	j, err := s.ToJob("alice")
	require.NoError(t, err)
	assert.Equal(t, &Scratch{Size: 200 << 30, MountPath: "/scratch"}, j.Scratch)
	assert.Equal(t, []ConfigRef{{ConfigMap: "train-config", MountPath: "/etc/train"}, {Secret: "wandb-key", Env: true},
		{Secret: "s3", MountPath: "/etc/s3"}}, j.Configs)

	s, err = ParseJobSpec([]byte(storageJob + "configs:\n  - {config: train, mountPath: /etc/train}\n  - {secret: perception/wandb, env: true}\n"))
	require.NoError(t, err)
	j, err = s.ToJob("alice")
	require.NoError(t, err, "a secret as PROJECT/NAME")
	assert.Equal(t, []ConfigRef{{Config: "train", MountPath: "/etc/train"}, {Secret: "perception/wandb", Env: true}}, j.Configs)

	for _, tc := range []struct{ spec, err string }{
		{"scratch: {size: 0}", `scratch.size "0" is not allowed: use more than 0`},
		{"scratch: {size: -1Gi}", `scratch.size "-1Gi" is not allowed: use more than 0`}, // it said "use 0 or more", then 0 was refused
		{"scratch: {size: 1Gi, mountPath: /data}", `scratch.mountPath "/data" is not allowed: volumes[0].mountPath already mounts there`},
		{"scratch: {size: 1Gi, mountPath: tmp}", `scratch.mountPath "tmp" is not allowed: use a clean absolute path`},
		{"configs: [{mountPath: /etc/x}]", `configs[0] "" is not allowed: give one of config (an atom config), secret`},
		{"configs: [{configMap: a, secret: b, env: true}]", `configs[0] "b" is not allowed: give one of config`},
		{"configs: [{config: a, secret: b, env: true}]", `configs[0] "a" is not allowed: give one of config`},
		{"configs: [{config: a, env: true, owner: 'user:bob'}]", `configs[0].owner "user:bob" is not allowed: the coordinator sets it`},
		{"configs: [{config: a.b, env: true}]", `configs[0].config "a.b" is not allowed: use a config's name, NAME or PROJECT/NAME`},
		{"configs: [{config: p/a/b, env: true}]", `configs[0].config "p/a/b" is not allowed: use NAME or PROJECT/NAME`},
		{"configs: [{secret: /a, env: true}]", `configs[0].secret "/a" is not allowed: use NAME or PROJECT/NAME`},
		{"configs: [{config: a, env: true}, {config: a, mountPath: /a}]", `configs[1].config "a" is not allowed: each config may be named once`},
		{"configs: [{configMap: a}]", `configs[0] "a" is not allowed: give either mountPath`},
		{"configs: [{secret: a, env: true, mountPath: /etc/a}]", `configs[0] "a" is not allowed: give either mountPath`},
		{"configs: [{secret: A_B, env: true}]", `configs[0].secret "A_B" is not allowed: use a secret's name (or a Kubernetes Secret's)`},
		{"configs: [{secret: a, env: true}, {secret: a, mountPath: /a}]", `configs[1].secret "a" is not allowed: each secret may be named once`},
		{"configs: [{configMap: a, mountPath: /data}]", `configs[0].mountPath "/data" is not allowed: volumes[0].mountPath already mounts there`},
	} {
		s, err := ParseJobSpec([]byte(storageJob + tc.spec + "\n"))
		if err == nil {
			_, err = s.ToJob("alice")
		}
		require.Error(t, err, tc.spec)
		assert.Contains(t, err.Error(), tc.err, tc.spec)
	}
}
