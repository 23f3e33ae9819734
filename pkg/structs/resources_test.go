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
