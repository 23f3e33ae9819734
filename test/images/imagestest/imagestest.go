// Package imagestest gives tests the images of images/ as `make images`
// builds them: Ensure runs images/build.sh (which builds atom and the
// coordinator with the host's Go first) once per image per test binary and
// returns the image's OCI archive and name, ready for
// `ctr -n k8s.io images import ARCHIVE` (the image is then named Ref(name)).
// Unpack and Chroot run an image's files without a container runtime.
//
// Building needs root, buildah and debootstrap (make deps-images). The
// first build of an image takes minutes (the Debian base about two, spark
// five or more); an image whose inputs have not changed is not built again,
// across test binaries and make images alike.
package imagestest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tag is the tag images/build.sh gives its images unless ATOM_IMAGES_TAG
// says otherwise.
const Tag = "dev"

// Names are the images images/build.sh builds (not cuda, whose base only
// NVIDIA's registry has).
var Names = []string{"cpu", "openmpi", "spark", "coordinator"}

// BuildTimeout bounds one run of images/build.sh: a cold spark image
// (Debian base, Java, pyspark from PyPI) on a busy 2-core machine.
const BuildTimeout = 30 * time.Minute

// Image is one built image.
type Image struct {
	Name    string  // cpu, openmpi, spark, coordinator
	Ref     string  // localhost/atom/NAME:dev
	Archive string  // its OCI archive
	Built   bool    // built by this call (false: its archive was up to date)
	Seconds float64 // what the call took
	Bytes   int64   // the archive's size
}

// Ref is the name image name has in its archive, and so in containerd
// once imported: localhost/atom/NAME:dev.
func Ref(name string) string {
	tag := os.Getenv("ATOM_IMAGES_TAG")
	if tag == "" {
		tag = Tag
	}
	return "localhost/atom/" + name + ":" + tag
}

// CacheDir is where images/build.sh keeps its archives and storage:
// $ATOM_IMAGES_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/atom/images.
func CacheDir() string {
	if d := os.Getenv("ATOM_IMAGES_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "atom", "images")
}

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

var (
	mu   sync.Mutex
	done = map[string]result{}
)

type result struct {
	img Image
	err error
}

// Ensure builds image name if its archive is missing or out of date and
// returns the archive's path and the image's name (Ref(name)). It fails
// the test, saying why, when the image cannot be built. Each image is
// built (or found up to date) once per test binary.
func Ensure(t testing.TB, name string) (archive, ref string) {
	t.Helper()
	img, err := EnsureImage(name)
	if err != nil {
		t.Fatalf("image %s: %v", name, err)
	}
	t.Logf("image %s: %s in %s (built=%t, %.1fs)", name, img.Ref, img.Archive, img.Built, img.Seconds)
	return img.Archive, img.Ref
}

// EnsureImage is Ensure for callers without a testing.TB (TestMain).
func EnsureImage(name string) (Image, error) {
	mu.Lock()
	defer mu.Unlock()
	if r, ok := done[name]; ok {
		return r.img, r.err
	}
	img, err := build(name)
	done[name] = result{img, err}
	return img, err
}

// build runs images/build.sh NAME and reads its key=value line.
func build(name string) (Image, error) {
	known := false
	for _, n := range Names {
		known = known || n == name
	}
	if !known {
		return Image{}, fmt.Errorf("no such image: images/build.sh builds %s", strings.Join(Names, ", "))
	}
	if os.Geteuid() != 0 {
		return Image{}, fmt.Errorf("building images needs root (debootstrap, buildah's chroot isolation): run the tests as root")
	}
	for _, tool := range []string{"buildah", "debootstrap"} {
		if _, err := exec.LookPath(tool); err != nil {
			return Image{}, fmt.Errorf("%s not found on PATH: run make deps-images (apt-get install -y buildah debootstrap; make test does it)", tool)
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), BuildTimeout)
	defer cancel()
	root := RepoRoot()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "images", "build.sh"), name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GO="+goBin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Image{}, fmt.Errorf("images/build.sh %s: %v:\n%s", name, err, lastLines(stderr.String(), 40))
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		kv := map[string]string{}
		for _, f := range strings.Fields(sc.Text()) {
			if k, v, ok := strings.Cut(f, "="); ok {
				kv[k] = v
			}
		}
		if kv["image"] != Ref(name) {
			continue
		}
		img := Image{Name: name, Ref: kv["image"], Archive: kv["archive"], Built: kv["built"] == "true"}
		img.Seconds, _ = strconv.ParseFloat(kv["seconds"], 64)
		img.Bytes, _ = strconv.ParseInt(kv["bytes"], 10, 64)
		if _, err := os.Stat(img.Archive); err != nil {
			return Image{}, fmt.Errorf("images/build.sh %s named archive %s: %v", name, img.Archive, err)
		}
		return img, nil
	}
	return Image{}, fmt.Errorf("images/build.sh %s printed no image=%s line:\n%s\n%s", name, Ref(name), stdout.String(), lastLines(stderr.String(), 20))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
