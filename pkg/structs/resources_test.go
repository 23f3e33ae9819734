package structs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 1000: "1000", 1 << 10: "1Ki", 3 << 30: "3Gi", 1536 << 20: "1536Mi",
		2 << 40: "2Ti", 5 << 50: "5Pi", 7 << 60: "7Ei", // 7Ei once read 7340032Ti
	} {
		assert.Equal(t, want, FormatBytes(n), "%d", n)
	}
}

// Millicores read as cores, whole or not, so a usage shown next to a
// limit is in the limit's unit ("41.5" beside "64", not "41500m").
func TestFormatMilliCPU(t *testing.T) {
	for m, want := range map[int64]string{0: "0", 64_000: "64", 41_500: "41.5", 500: "0.5", 250: "0.25", 1: "0.001", -1500: "-1.5"} {
		assert.Equal(t, want, FormatMilliCPU(m), "%d", m)
	}
}

// Nearest suggests the name a value misspells: the same but for case,
// '-' and '_', else the one nearest within two edits, when only one is
// and the value is long enough to be recognisable.
func TestNearest(t *testing.T) {
	policies := []string{"Never", "OnFailure", "Always"}
	for in, want := range map[string]string{
		"onfailure": "OnFailure", "on-failure": "OnFailure", "ON_FAILURE": "OnFailure", "OnFailur": "OnFailure",
		"allways": "Always", "never": "Never", "Never": "", "sometimes": "", "x": "",
	} {
		assert.Equal(t, want, Nearest(policies, in), in)
	}
	projects := []string{"perception", "planning", "vision"}
	assert.Equal(t, "perception", Nearest(projects, "perceptoin"))
	assert.Equal(t, "vision", Nearest(projects, "visoin"))
	assert.Equal(t, "", Nearest(projects, "mapping"))
}
