package structs

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ConfigKind is what a config object is: a config (configuration files,
// shown to whoever may read it) or a secret (passwords, tokens, keys:
// kept encrypted, its values never listed).
type ConfigKind string

const (
	ConfigKindConfig ConfigKind = "config"
	ConfigKindSecret ConfigKind = "secret"
)

// MaxConfigBytes bounds one config or secret, keys and values together,
// as Kubernetes bounds a ConfigMap or Secret: 1 MiB.
const MaxConfigBytes = 1 << 20

// ConfigID names a config object: its kind, its owner (user:NAME or
// project:NAME) and its name, unique per owner and kind.
type ConfigID struct {
	Kind  ConfigKind `json:"kind"`
	Owner Scope      `json:"owner"`
	Name  string     `json:"name"`
}

// String is "secret project:perception/wandb".
func (id ConfigID) String() string { return fmt.Sprintf("%s %s/%s", id.Kind, id.Owner, id.Name) }

// Key is the ID as one string, the state's map key.
func (id ConfigID) Key() string { return string(id.Kind) + "/" + string(id.Owner) + "/" + id.Name }

// ConfigObject is a config or a secret as the replicated state keeps it:
// its versions that live tasks may still use, the newest last (the
// current one). A secret's values are only ever in it sealed.
type ConfigObject struct {
	ConfigID
	CreatedBy UserID           `json:"createdBy"`
	Created   time.Time        `json:"created"`
	Versions  []*ConfigVersion `json:"versions"`
}

// Current is the newest version.
func (o *ConfigObject) Current() *ConfigVersion { return o.Versions[len(o.Versions)-1] }

// Version returns version v, or nil when it is no longer kept.
func (o *ConfigObject) Version(v int) *ConfigVersion {
	for _, x := range o.Versions {
		if x.Version == v {
			return x
		}
	}
	return nil
}

// ConfigVersion is one version of a config object's data. A config keeps
// its values in Data; a secret in Sealed (encrypted with the servers'
// keyring), never in Data.
type ConfigVersion struct {
	Version int          `json:"version"`
	Keys    []ConfigKey  `json:"keys"` // by key
	Digest  string       `json:"digest"`
	Updated time.Time    `json:"updated"`
	By      UserID       `json:"by"`
	Data    ConfigData   `json:"data,omitempty"`
	Sealed  *SealedValue `json:"sealed,omitempty"`
}

// ConfigKey is one key of a config object and the size of its value.
type ConfigKey struct {
	Key  string `json:"key"`
	Size int    `json:"size"` // bytes
}

// SealedValue is data encrypted with AES-256-GCM under keyring key Key.
type SealedValue struct {
	Key   string `json:"key"` // the keyring key's ID
	Nonce []byte `json:"nonce"`
	Data  []byte `json:"data"`
}

// ConfigData is a config object's keys and their values (any bytes).
type ConfigData map[string][]byte

// Keys lists d's keys with their sizes, by key.
func (d ConfigData) Keys() []ConfigKey {
	out := make([]ConfigKey, 0, len(d))
	for _, k := range slices.Sorted(maps.Keys(d)) {
		out = append(out, ConfigKey{Key: k, Size: len(d[k])})
	}
	return out
}

// Encode is d in one canonical byte string (keys in order, each key and
// value prefixed with its length): what a secret seals and a digest
// hashes. DecodeConfigData reverses it.
func (d ConfigData) Encode() []byte {
	n := 0
	for k, v := range d {
		n += 8 + len(k) + len(v)
	}
	b := make([]byte, 0, n)
	for _, k := range slices.Sorted(maps.Keys(d)) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(d[k])))
		b = append(b, d[k]...)
	}
	return b
}

// DecodeConfigData parses what ConfigData.Encode wrote.
func DecodeConfigData(b []byte) (ConfigData, error) {
	d := ConfigData{}
	next := func() ([]byte, bool) {
		if len(b) < 4 {
			return nil, false
		}
		n := binary.BigEndian.Uint32(b)
		if uint64(len(b)-4) < uint64(n) {
			return nil, false
		}
		v := b[4 : 4+n]
		b = b[4+n:]
		return v, true
	}
	for len(b) > 0 {
		k, ok := next()
		if !ok {
			return nil, fmt.Errorf("decode config data: truncated")
		}
		v, ok := next()
		if !ok {
			return nil, fmt.Errorf("decode config data: truncated")
		}
		d[string(k)] = slices.Clone(v)
	}
	return d, nil
}

// Digest is a config's digest: "sha256:" and the first 16 hex digits of
// the SHA-256 of its encoding. (A secret's digest is keyed instead, so
// that it reveals nothing of short values; see coordinator/keyring.)
func (d ConfigData) Digest() string {
	sum := sha256.Sum256(d.Encode())
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// ValidateConfigName checks a config's or secret's name: a DNS-1123
// label, as job names are.
func ValidateConfigName(kind ConfigKind, name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%s name %q is not allowed: use a DNS label (lowercase letters, digits and '-', at most 63): %s", kind, name, ValidationText(errs))
	}
	return nil
}

// Validate checks d as a config's or secret's data: at least one key,
// keys as Kubernetes allows in a ConfigMap or Secret (letters, digits,
// '-', '_' and '.', at most 253), at most MaxConfigBytes of keys and
// values together. Values may be any bytes. Messages name keys, never
// values.
func (d ConfigData) Validate(kind ConfigKind) error {
	if len(d) == 0 {
		return fmt.Errorf("%s has no keys: give at least one (--from-file KEY=PATH or --from-literal KEY=VALUE)", kind)
	}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(d)) {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			return fmt.Errorf("%s key %q is not allowed: use letters, digits, '-', '_' or '.' (at most 253, not . or ..), as Kubernetes allows: %s",
				kind, truncKey(k), ValidationText(errs))
		}
		total += len(k) + len(d[k])
	}
	if total > MaxConfigBytes {
		return fmt.Errorf("%s is %d bytes (keys and values): at most %d (1 MiB) is allowed, as in a Kubernetes %s", kind, total, MaxConfigBytes,
			map[ConfigKind]string{ConfigKindConfig: "ConfigMap", ConfigKindSecret: "Secret"}[kind])
	}
	return nil
}

// envKey is an environment variable name as a shell reads it.
var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnvKey checks key k of a config or secret a job takes as
// environment variables (env: true): a name of letters, digits and '_',
// not starting with a digit, and not ATOM_*, which atom sets.
func CheckEnvKey(kind ConfigKind, name, k string) error {
	if !envKey.MatchString(k) {
		return fmt.Errorf("%s %s has key %q, which is not an environment variable name (letters, digits and '_', not starting with a digit): mount it as files (mountPath) instead of env: true, or rename the key",
			kind, name, truncKey(k))
	}
	if strings.HasPrefix(k, "ATOM_") {
		return fmt.Errorf("%s %s has key %s: ATOM_* variables are set by atom: mount it as files (mountPath) instead of env: true, or rename the key", kind, name, k)
	}
	return nil
}

// truncKey shortens a refused key for a message, as valid UTF-8.
func truncKey(k string) string {
	if len(k) > 64 {
		k = k[:64] + "..."
	}
	return strings.ToValidUTF8(k, "?")
}

// TaskConfig is the version of an atom config or secret a task got.
type TaskConfig struct {
	ConfigID
	Version int `json:"version"`
}
