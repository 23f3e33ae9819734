package api

import (
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTailBuffer: whatever the sizes of the writes, the buffer keeps the
// last max bytes.
func TestTailBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		max := 1 + rng.IntN(64)
		tb := &tailBuffer{max: max}
		var all []byte
		for range rng.IntN(20) {
			p := make([]byte, rng.IntN(3*max))
			for i := range p {
				p[i] = byte('a' + rng.IntN(26))
			}
			n, err := tb.Write(p)
			require.NoError(t, err)
			require.Equal(t, len(p), n)
			all = append(all, p...)
		}
		want := all[len(all)-min(len(all), max):]
		require.Equal(t, string(want), string(tb.bytes()), "max %d", max)
		require.Equal(t, int64(len(all)), tb.total)
	}
}

func TestReadTail(t *testing.T) {
	in := "first line\nsecond line\nthird line\n"
	for name, wrap := range map[string]func(string) io.Reader{
		"seeker": func(s string) io.Reader { return strings.NewReader(s) },
		"stream": func(s string) io.Reader { return struct{ io.Reader }{strings.NewReader(s)} },
	} {
		t.Run(name, func(t *testing.T) {
			tail, cut, err := readTail(wrap(in), 100)
			require.NoError(t, err)
			assert.Equal(t, in, string(tail))
			assert.Zero(t, cut)

			// The cut falls inside "second line": start at the next line.
			tail, cut, err = readTail(wrap(in), 15)
			require.NoError(t, err)
			assert.Equal(t, "third line\n", string(tail))
			assert.Equal(t, int64(len(in)-len("third line\n")), cut)

			// No newline to start from: the bytes as they are.
			tail, cut, err = readTail(wrap("abcdefghij"), 4)
			require.NoError(t, err)
			assert.Equal(t, "ghij", string(tail))
			assert.Equal(t, int64(6), cut)
		})
	}
	// A stream that breaks: the tail up to the break, and the error.
	boom := errors.New("connection reset")
	tail, cut, err := readTail(io.MultiReader(strings.NewReader("0123456789"), iotest.ErrReader(boom)), 4)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, "6789", string(tail))
	assert.Equal(t, int64(6), cut)
}

func TestSizeOf(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 3584: "3.5 KiB",
		8 << 20: "8 MiB", 22963814: "21.9 MiB", 3 << 30: "3 GiB",
	} {
		assert.Equal(t, want, sizeOf(n), "%d", n)
	}
}
