// Package keyring seals secrets' values for the replicated state: AES-256-GCM
// under keys from a keyring file that every coordinator server is given
// (coordinator server --keyring FILE), as Nomad's keyring or Kubernetes'
// EncryptionConfiguration do. The first key seals; every key opens, so a
// key can be rotated in (first) while values sealed under the one before
// are still read, and retired once no secret uses it
// (coordinator/README.md, "Configs and secrets").
//
//	keys:
//	- {id: k2, key: <base64 of 32 random bytes>}   # seals
//	- {id: k1, key: <base64 of 32 random bytes>}   # opens what k1 sealed
//
// A value is sealed where a server receives it, before any Raft command
// carries it, so neither the log nor a snapshot ever holds it in plain.
// Nothing here logs or quotes a key or a value.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/atom-sched/atom/pkg/structs"
)

// KeySize is the size of each key: AES-256.
const KeySize = 32

// File is the keyring file.
type File struct {
	Keys []FileKey `json:"keys"`
}

// FileKey is one key of the file: an ID (a label value, such as the month
// it was made) and the key, base64 (standard encoding) of KeySize bytes.
type FileKey struct {
	ID  string `json:"id"`
	Key string `json:"key"`
}

// Keyring seals with its first key and opens with any.
type Keyring struct {
	ids  []string
	aead map[string]cipher.AEAD
	// digest keys a secret's digest, so that it reveals nothing of
	// short values: derived from the first key.
	digest []byte
}

// ErrUnknownKey is a sealed value whose key is not in the keyring.
var ErrUnknownKey = errors.New("the key it was sealed with is not in this server's keyring")

// Load reads and parses a keyring file.
func Load(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load keyring: %w", err)
	}
	k, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("load keyring %s: %w", path, err)
	}
	return k, nil
}

// Parse decodes a keyring file strictly (unknown fields are errors) and
// checks it. Messages name key IDs, never keys.
func Parse(data []byte) (*Keyring, error) {
	var f File
	if err := structs.DecodeStrict(data, &f, "keyring file"); err != nil {
		return nil, fmt.Errorf("parse keyring: the file is keys: [{id, key}] (%s)", redacted(err))
	}
	if len(f.Keys) == 0 {
		return nil, errors.New("keyring lists no keys: give keys: [{id, key}], key being 32 random bytes in base64 (openssl rand -base64 32)")
	}
	k := &Keyring{aead: map[string]cipher.AEAD{}}
	for i, fk := range f.Keys {
		if errs := validation.IsValidLabelValue(fk.ID); fk.ID == "" || len(errs) > 0 {
			return nil, fmt.Errorf("keyring keys[%d].id %q is not allowed: use 1-63 letters, digits, '-', '_' or '.'", i, fk.ID)
		}
		if k.aead[fk.ID] != nil {
			return nil, fmt.Errorf("keyring keys[%d].id %q is not allowed: each key has its own id", i, fk.ID)
		}
		raw, err := base64.StdEncoding.DecodeString(fk.Key)
		if err != nil || len(raw) != KeySize {
			return nil, fmt.Errorf("keyring key %s is not allowed: use %d random bytes in base64 (openssl rand -base64 32)", fk.ID, KeySize)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("keyring key %s: %w", fk.ID, err)
		}
		if k.aead[fk.ID], err = cipher.NewGCM(block); err != nil {
			return nil, fmt.Errorf("keyring key %s: %w", fk.ID, err)
		}
		k.ids = append(k.ids, fk.ID)
		if i == 0 {
			if k.digest, err = hkdf.Key(sha256.New, raw, nil, "atom secret digest", 32); err != nil {
				return nil, fmt.Errorf("keyring key %s: %w", fk.ID, err)
			}
		}
	}
	return k, nil
}

// redacted is a decoder's error without the values it may quote.
func redacted(err error) string {
	var fe *structs.FieldError
	if errors.As(err, &fe) {
		return "field " + fe.Field
	}
	return "not YAML or JSON of that shape"
}

// Generate returns a new keyring file with one random key of id.
func Generate(id string) ([]byte, error) {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	return yaml.Marshal(File{Keys: []FileKey{{ID: id, Key: base64.StdEncoding.EncodeToString(raw)}}})
}

// Active is the ID of the key that seals.
func (k *Keyring) Active() string { return k.ids[0] }

// IDs lists the keys' IDs, the active one first.
func (k *Keyring) IDs() []string { return slices.Clone(k.ids) }

// Seal encrypts plain under the active key, bound to aad (the object and
// version it belongs to, so that a sealed value cannot be moved to
// another).
func (k *Keyring) Seal(plain, aad []byte) *structs.SealedValue {
	a := k.aead[k.ids[0]]
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("keyring: no randomness: " + err.Error()) // crypto/rand never fails on supported platforms
	}
	return &structs.SealedValue{Key: k.ids[0], Nonce: nonce, Data: a.Seal(nil, nonce, plain, aad)}
}

// Open decrypts s, which must have been sealed with the same aad.
func (k *Keyring) Open(s *structs.SealedValue, aad []byte) ([]byte, error) {
	if s == nil {
		return nil, errors.New("open sealed value: none")
	}
	a := k.aead[s.Key]
	if a == nil {
		return nil, fmt.Errorf("open value sealed with key %q: %w (give every server a keyring that still lists it)", s.Key, ErrUnknownKey)
	}
	if len(s.Nonce) != a.NonceSize() {
		return nil, fmt.Errorf("open value sealed with key %q: bad nonce", s.Key)
	}
	p, err := a.Open(nil, s.Nonce, s.Data, aad)
	if err != nil {
		return nil, fmt.Errorf("open value sealed with key %q: it does not authenticate (a key with that id but other bytes, or damaged data)", s.Key)
	}
	return p, nil
}

// Digest is a secret's digest: "hmac-sha256:" and 16 hex digits of an
// HMAC of its encoding under a key derived from the active key. It tells
// whether two versions hold the same values without revealing them.
func (k *Keyring) Digest(d structs.ConfigData) string {
	m := hmac.New(sha256.New, k.digest)
	m.Write(d.Encode())
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil)[:8])
}

// AAD is what a secret's version is sealed bound to: its ID and version.
func AAD(id structs.ConfigID, version int) []byte {
	return fmt.Appendf(nil, "atom/%s/v%d", id.Key(), version)
}
