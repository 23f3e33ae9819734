package k8stest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Images of the real node, built by the harness from the programs in
// internal/ (no registry is reachable): static Go binaries, each alone in
// an OCI image, imported into the node's containerd at start-up.
const (
	// PauseImage is the node's sandbox image (containerd's sandbox_image).
	PauseImage = "atom.test/pause:1"
	// ToolboxImage runs /toolbox, a program whose arguments are steps
	// (print:TEXT, count:N:DELAY, wait, exit:CODE, ...; see
	// internal/toolbox): for tests that need a container doing something.
	// Pods give it imagePullPolicy Never (or IfNotPresent).
	ToolboxImage = "atom.test/toolbox:1"
)

var (
	//go:embed internal/pause/main.go
	pauseSource []byte
	//go:embed internal/toolbox/main.go
	toolboxSource []byte
)

// imageFormat changes when the archives below change shape, so cached ones
// are rebuilt.
const imageFormat = "1"

// CacheDir is ${XDG_CACHE_HOME:-$HOME/.cache}/atom, where the harness keeps
// what it builds (the Kubernetes tools unless $ATOM_K8S_TOOLS says
// otherwise, the real node's images under realnode/).
func CacheDir() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "atom")
}

// programImage returns the path of an OCI archive holding one static Go
// program, /NAME, as the image's entrypoint, tagged ref. It is built once
// (go build, a few seconds) and kept under CacheDir()/realnode, keyed by the
// program's source, the Go version and the architecture.
func programImage(ctx context.Context, name, ref string, source []byte) (string, error) {
	h := sha256.New()
	for _, s := range []string{imageFormat, name, ref, runtime.Version(), runtime.GOARCH} {
		fmt.Fprintf(h, "%s\x00", s)
	}
	h.Write(source)
	dir := filepath.Join(CacheDir(), "realnode")
	path := filepath.Join(dir, fmt.Sprintf("%s-%x.oci.tar", name, h.Sum(nil)[:8]))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin, err := buildProgram(ctx, name, source)
	if err != nil {
		return "", err
	}
	archive, err := ociArchive(ref, name, bin, runtime.GOARCH)
	if err != nil {
		return "", err
	}
	// Written aside and renamed: another test binary may build it at the
	// same time.
	tmp, err := os.CreateTemp(dir, name+"-*.tmp")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(archive)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// buildProgram compiles a one-file Go program without dependencies into a
// static binary, in a module of its own (so it builds the same from any
// directory), and returns the binary.
func buildProgram(ctx context.Context, name string, source []byte) ([]byte, error) {
	dir, err := os.MkdirTemp("", "atom-realnode-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+name+"\n\ngo 1.22\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), source, 0o644); err != nil {
		return nil, err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH,
		"GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the real node's %s program (%s build): %v: %s", name, goBin, err, b)
	}
	return os.ReadFile(out)
}

// ociArchive returns an OCI image layout, as a tar stream, of one image
// tagged ref: a single uncompressed layer holding /name (mode 0755), which
// is also the entrypoint.
func ociArchive(ref, name string, bin []byte, arch string) ([]byte, error) {
	epoch := time.Unix(0, 0)
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(bin)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerDesc := descriptor("application/vnd.oci.image.layer.v1.tar", layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": arch,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{"/" + name}, "Env": []string{"PATH=/"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
	})
	if err != nil {
		return nil, err
	}
	configDesc := descriptor("application/vnd.oci.image.config.v1+json", config)
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        configDesc,
		"layers":        []ociDescriptor{layerDesc},
	})
	if err != nil {
		return nil, err
	}
	manifestDesc := descriptor("application/vnd.oci.image.manifest.v1+json", manifest)
	tag := ref[strings.LastIndex(ref, ":")+1:]
	manifestDesc.Annotations = map[string]string{
		"io.containerd.image.name":          ref,
		"org.opencontainers.image.ref.name": tag,
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests":     []ociDescriptor{manifestDesc},
	})
	if err != nil {
		return nil, err
	}

	var out bytes.Buffer
	aw := tar.NewWriter(&out)
	files := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{blobPath(manifestDesc), manifest},
		{blobPath(configDesc), config},
		{blobPath(layerDesc), layer.Bytes()},
	}
	for _, f := range files {
		if err := aw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := aw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := aw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func descriptor(mediaType string, data []byte) ociDescriptor {
	sum := sha256.Sum256(data)
	return ociDescriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: len(data)}
}

func blobPath(d ociDescriptor) string {
	return "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:")
}
