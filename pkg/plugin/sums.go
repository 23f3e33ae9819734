package plugin

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Plugin checksums. An operator who wants atom to run only the external
// plugins it was shipped with writes their SHA-256 sums, in the format of
// `sha256sum atom-plugin-*`, to SumsFile in the plugin directory (or to a
// file named by the Loader's Sums, atom --plugin-sums or
// ATOM_PLUGIN_SHA256SUMS). Once such a file exists, an external plugin is
// started only if it is listed there with the sum of its bytes: go-plugin's
// SecureConfig hashes the binary right before it executes it. A plugin that
// is not listed, or whose sum differs, is refused and the task fails.
// Built-in job types are part of atom's own binary and are not checked.

// SumsFile is the checksum file looked for in the plugin directory.
const SumsFile = "SHA256SUMS"

// ErrChecksum: an external plugin is not listed in the checksum file or
// does not match its sum.
var ErrChecksum = errors.New("plugin checksum")

// Sums maps a plugin's file name (atom-plugin-KIND) to its SHA-256 sum.
type Sums map[string][]byte

// ParseSums reads checksum lines as sha256sum writes them: 64 hex digits,
// a space, a space or '*' (binary mode), and the file name. Blank lines
// and lines starting with # are skipped. A name with a directory part is
// matched by its last element.
func ParseSums(r io.Reader) (Sums, error) {
	out := Sums{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimPrefix(name, " "), "*")
		b, err := hex.DecodeString(sum)
		if !ok || err != nil || len(b) != sha256.Size || name == "" {
			return nil, fmt.Errorf("line %d is not a checksum line: write `sha256sum atom-plugin-*` output: 64 hex digits, two spaces, the file name", n)
		}
		base := filepath.Base(name)
		if prev, dup := out[base]; dup && !bytes.Equal(prev, b) {
			return nil, fmt.Errorf("line %d gives %s a second, different sum: list each plugin once", n, base)
		}
		out[base] = b
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// sums returns the checksums external plugins must match and the file
// they come from; nil when no checksum file is configured or present.
func (l *Loader) sums() (Sums, string, error) {
	path := l.Sums
	if path == "" {
		if l.Dir == "" {
			return nil, "", nil
		}
		path = filepath.Join(l.Dir, SumsFile)
	}
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && l.Sums == "":
		return nil, "", nil // no checksum file: plugins are not checked
	case err != nil:
		return nil, path, fmt.Errorf("%w: read checksum file: %v: external plugins run only when it can be read", ErrChecksum, err)
	}
	defer f.Close()
	s, err := ParseSums(f)
	if err != nil {
		return nil, path, fmt.Errorf("%w: checksum file %s: %v", ErrChecksum, path, err)
	}
	return s, path, nil
}

// fileSum returns the hex SHA-256 of the file at path.
func fileSum(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return hex.EncodeToString(h.Sum(nil))
}
