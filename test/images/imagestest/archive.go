package imagestest

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Archive is what an OCI archive says of its one image.
type Archive struct {
	RefName  string   // the index's org.opencontainers.image.ref.name: what ctr import names the image
	Manifest Manifest // the image's manifest
	Config   Config   // the image's configuration
}

// Manifest is the part of an OCI image manifest tests look at.
type Manifest struct {
	MediaType string       `json:"mediaType"`
	Config    Descriptor   `json:"config"`
	Layers    []Descriptor `json:"layers"`
}

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Config is the part of an OCI image configuration tests look at.
type Config struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User       string            `json:"User"`
		Env        []string          `json:"Env"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		WorkingDir string            `json:"WorkingDir"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// Env returns the value of variable key in the configuration's Env.
func (c Config) Env(key string) string {
	for _, kv := range c.Config.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// ReadArchive reads the index, manifest and configuration of the single
// image in the OCI archive at path (an OCI image layout as a tar file).
func ReadArchive(path string) (Archive, error) {
	blobs := map[string][]byte{}
	var index []byte
	f, err := os.Open(path)
	if err != nil {
		return Archive{}, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Archive{}, fmt.Errorf("%s: %w", path, err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch {
		case name == "index.json":
			index, err = io.ReadAll(tr)
		case strings.HasPrefix(name, "blobs/sha256/") && h.Size < 1<<20: // manifests and configs, not layers
			var b []byte
			b, err = io.ReadAll(tr)
			blobs["sha256:"+strings.TrimPrefix(name, "blobs/sha256/")] = b
		}
		if err != nil {
			return Archive{}, fmt.Errorf("%s: %s: %w", path, name, err)
		}
	}
	var idx struct {
		Manifests []Descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		return Archive{}, fmt.Errorf("%s: index.json: %w", path, err)
	}
	if len(idx.Manifests) != 1 {
		return Archive{}, fmt.Errorf("%s: index.json lists %d manifests, not 1", path, len(idx.Manifests))
	}
	var a Archive
	a.RefName = idx.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
	if err := unmarshalBlob(blobs, idx.Manifests[0].Digest, &a.Manifest); err != nil {
		return Archive{}, fmt.Errorf("%s: manifest: %w", path, err)
	}
	if err := unmarshalBlob(blobs, a.Manifest.Config.Digest, &a.Config); err != nil {
		return Archive{}, fmt.Errorf("%s: config: %w", path, err)
	}
	return a, nil
}

func unmarshalBlob(blobs map[string][]byte, digest string, v any) error {
	b, ok := blobs[digest]
	if !ok {
		return fmt.Errorf("no blob %s", digest)
	}
	return json.Unmarshal(b, v)
}

// Run runs args in a container of the built image name (images/build.sh
// --run: buildah run --isolation chroot, the image's files, environment
// and working directory, the host's network) with the extra environment
// env (K=V) and returns its output, stdout and stderr together. The image
// must have been built (Ensure). Not the image's ENTRYPOINT: args is the
// whole command.
func Run(ctx context.Context, name string, env []string, args ...string) ([]byte, error) {
	cmdArgs := []string{"--run", name}
	for _, kv := range env {
		cmdArgs = append(cmdArgs, "--env", kv)
	}
	cmdArgs = append(cmdArgs, "--")
	cmdArgs = append(cmdArgs, args...)
	root := RepoRoot()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "images", "build.sh"), cmdArgs...)
	cmd.Dir = root
	return cmd.CombinedOutput()
}

// MustRun is Run failing the test when the command fails.
func MustRun(t testing.TB, ctx context.Context, name string, env []string, args ...string) string {
	t.Helper()
	out, err := Run(ctx, name, env, args...)
	if err != nil {
		t.Fatalf("in %s: %q: %v\n%s", Ref(name), args, err, out)
	}
	return string(out)
}
