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
