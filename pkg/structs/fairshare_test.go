package structs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFairShareConfig(t *testing.T) {
	t.Parallel()
	cfg, err := ParseClusterConfig([]byte(`
quotas: [{scope: "user:u1", weight: 2.5}]
fairShare: {halfLife: 72h, aging: 30m, weights: {gpu/A100: 2, gpu: 0.5, cpu: 0.25}}
`))
	require.NoError(t, err)
	assert.Equal(t, []Quota{{Scope: "user:u1", Limits: ResourceList{}, Weight: 2.5}}, cfg.Quotas)
	f := cfg.FairShare
	assert.Equal(t, &FairShare{HalfLife: Duration(72 * time.Hour), Aging: Duration(30 * time.Minute),
		Weights: map[ResourceKey]float64{"gpu/A100": 2, KeyGPUAny: 0.5, KeyCPU: 0.25}}, f)
	assert.Equal(t, 4.0, f.Rate(Resources{AccelType: "A100", Accels: 2, MilliCPU: 14000, Memory: 236 * gi}), "bound CPU and memory are not counted again")
	assert.Equal(t, 1.0, f.Rate(Resources{AccelType: "T4", Accels: 2}), "a type not listed weighs as gpu")
	assert.Equal(t, 2+16.0/128, f.Rate(Resources{MilliCPU: 8000, Memory: 16 * gi}), "memory by its default weight")

	var none *FairShare
	assert.Equal(t, DefaultHalfLife, none.HalfLifeOrDefault())
	assert.Equal(t, DefaultAging, none.AgingOrDefault())
	assert.Equal(t, 1+0.25, none.Rate(Resources{MilliCPU: 8000, Memory: 32 * gi}), "a GPU is worth 8 cores or 128 GiB")
	assert.Equal(t, 3.0, none.Rate(Resources{Devices: map[string]int64{"jetson": 3}}))
}

func TestFairShareConfigRejects(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, spec, want string }{
		{"short half-life", "fairShare: {halfLife: 1s}", `fairShare.halfLife "1s" is not allowed: use a duration from 1m to 87600h`},
		{"bad aging", "fairShare: {aging: soon}", `fairShare.aging "soon" is not allowed`},
		{"bad key", "fairShare: {weights: {gpus: 1}}", `fairShare.weights "gpus" is not allowed: use cpu, memory, gpu, gpu/<type> or device/<type>`},
		{"negative weight", "fairShare: {weights: {cpu: -1}}", `fairShare.weights["cpu"] -1 is not allowed: use a number from 0 to 1e+06`},
		{"NaN weight", "fairShare: {weights: {cpu: .nan}}", `fairShare.weights["cpu"] NaN is not allowed`},
		{"zero scope weight", "quotas: [{scope: 'user:a', weight: 0}]", `quotas[0].weight 0 is not allowed: use a number above 0 and at most 1e+06 (default 1)`},
		{"unknown field", "fairShare: {halflife: 1h}", "fairShare.halflife is not a known field (did you mean halfLife?): use halfLife, aging, weights"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseClusterConfig([]byte(tc.spec))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
