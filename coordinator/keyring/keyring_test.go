package keyring_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/keyring"
	"github.com/atom-sched/atom/pkg/structs"
)

func key(b byte) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(b)), 32)))
}

func ring(t *testing.T, text string) *keyring.Keyring {
	t.Helper()
	k, err := keyring.Parse([]byte(text))
	require.NoError(t, err)
	return k
}

// The first key seals; any key opens; a value opens only bound to the
// object and version it was sealed for; rotating a key in first keeps
// what the old one sealed readable.
func TestSealOpenRotate(t *testing.T) {
	old := ring(t, fmt.Sprintf("keys: [{id: k1, key: %s}]", key('a')))
	id := structs.ConfigID{Kind: structs.ConfigKindSecret, Owner: "user:u1", Name: "wandb"}
	s := old.Seal([]byte("v"), keyring.AAD(id, 1))
	assert.Equal(t, "k1", s.Key)
	p, err := old.Open(s, keyring.AAD(id, 1))
	require.NoError(t, err)
	assert.Equal(t, "v", string(p))
	_, err = old.Open(s, keyring.AAD(id, 2))
	assert.ErrorContains(t, err, "does not authenticate", "moved to another version")

	rotated := ring(t, fmt.Sprintf("keys: [{id: k2, key: %s}, {id: k1, key: %s}]", key('b'), key('a')))
	assert.Equal(t, "k2", rotated.Active())
	p, err = rotated.Open(s, keyring.AAD(id, 1))
	require.NoError(t, err)
	assert.Equal(t, "v", string(p))
	assert.Equal(t, "k2", rotated.Seal([]byte("v"), nil).Key)

	retired := ring(t, fmt.Sprintf("keys: [{id: k2, key: %s}]", key('b')))
	_, err = retired.Open(s, keyring.AAD(id, 1))
	assert.ErrorIs(t, err, keyring.ErrUnknownKey)
	wrong := ring(t, fmt.Sprintf("keys: [{id: k1, key: %s}]", key('c')))
	_, err = wrong.Open(s, keyring.AAD(id, 1))
	assert.ErrorContains(t, err, "does not authenticate")

	d := structs.ConfigData{"k": []byte("1234")}
	assert.Equal(t, old.Digest(d), old.Digest(d))
	assert.NotEqual(t, old.Digest(d), rotated.Digest(d), "keyed")
	assert.True(t, strings.HasPrefix(old.Digest(d), "hmac-sha256:"))
}

// A bad keyring file is refused saying what is allowed, never quoting a
// key.
func TestParseRefuses(t *testing.T) {
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key"))
	for _, tc := range []struct{ text, want string }{
		{"keys: []", "keyring lists no keys"},
		{"", "parse keyring"},
		{fmt.Sprintf("keys: [{id: k1, key: %s}]", short), "keyring key k1 is not allowed: use 32 random bytes in base64"},
		{"keys: [{id: k1, key: not-base64!}]", "keyring key k1 is not allowed"},
		{fmt.Sprintf("keys: [{id: k1, key: %s}, {id: k1, key: %s}]", key('a'), key('b')), `keys[1].id "k1" is not allowed: each key has its own id`},
		{fmt.Sprintf("keys: [{id: 'a b', key: %s}]", key('a')), `keys[0].id "a b" is not allowed`},
		{fmt.Sprintf("keys: [{id: k1, key: %s, secret: %s}]", key('a'), short), "parse keyring"},
	} {
		_, err := keyring.Parse([]byte(tc.text))
		require.Error(t, err, tc.text)
		assert.Contains(t, err.Error(), tc.want, tc.text)
		for _, k := range []string{key('a'), key('b'), short, "not-base64!"} {
			assert.NotContains(t, err.Error(), k)
		}
	}
	f, err := keyring.Generate("2026-12")
	require.NoError(t, err)
	k, err := keyring.Parse(f)
	require.NoError(t, err)
	assert.Equal(t, []string{"2026-12"}, k.IDs())
}
