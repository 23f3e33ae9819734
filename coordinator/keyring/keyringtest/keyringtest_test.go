package keyringtest

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLeaks(t *testing.T) {
	const v = "hunter2-and-some-more"
	for pad := range 5 {
		b, err := json.Marshal(append(make([]byte, pad), append([]byte(v), 7, 8)...))
		assert.NoError(t, err)
		assert.True(t, Leaks(b, v), "base64 at offset %d", pad)
	}
	assert.True(t, Leaks([]byte("x "+v+" y"), v))
	assert.False(t, Leaks([]byte(base64.StdEncoding.EncodeToString([]byte("hunter3-and-some-more"))), v))
}
