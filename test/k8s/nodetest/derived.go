package nodetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atom-sched/atom/test/images/imagestest"
)

// Derived is an image made from an image of images/ with files added, as
// a user's own image FROM atom's adds a program: a test's programs in the
// openmpi image, say.
type Derived struct {
	// Name names it localhost/atom/NAME:TAG (imagestest.Ref).
	Name string
	// Base is the images/ name it is made from (imagestest.Ensure builds it).
	Base string
	// Files maps a path in the image to a file here, copied with its mode.
	Files map[string]string
	// Key is what else the image depends on (tool versions, say): a
	// change builds it again.
	Key []string
	// Check, if set, runs before the image is written, with a function that
	// runs a command in it (buildah run: the image's files and environment)
	// and returns its output; an error fails the build.
	Check func(run func(args ...string) (string, error)) error
}

// Ensure builds d unless an archive of the same inputs (Base's image,
// Files' paths, contents and modes, Key) is in the images cache
// (imagestest.CacheDir()/derived), and returns the archive and ref for
// RealNode.ImportImage. It builds with buildah on storage of its own in a
// temporary directory (vfs: no mounts to undo), so it needs nothing of
// images/build.sh's storage or lock.
func (d Derived) Ensure(t *testing.T) (archive, ref string) {
	t.Helper()
	base, _ := imagestest.Ensure(t, d.Base)
	ref = imagestest.Ref(d.Name)
	dir := filepath.Join(imagestest.CacheDir(), "derived")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	archive = filepath.Join(dir, d.Name+".oci.tar")
	key, err := d.key(base, ref)
	if err != nil {
		t.Fatalf("image %s: %v", ref, err)
	}
	// One build at a time per image, across test binaries.
	lock, err := os.OpenFile(archive+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if old, err := os.ReadFile(archive + ".key"); err == nil && string(old) == key {
		if _, err := os.Stat(archive); err == nil {
			t.Logf("image %s: %s is up to date", ref, archive)
			return archive, ref
		}
	}
	start := time.Now()
	if err := d.build(t, base, ref, archive); err != nil {
		t.Fatalf("image %s: %v", ref, err)
	}
	if err := os.WriteFile(archive+".key", []byte(key), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s: built %s in %.1fs", ref, archive, time.Since(start).Seconds())
	return archive, ref
}

// key hashes d's inputs: the base image's configuration and layers (as
// its archive's manifest names them), the files and Key.
func (d Derived) key(base, ref string) (string, error) {
	a, err := imagestest.ReadArchive(base)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "ref=%s\nconfig=%s\n", ref, a.Manifest.Config.Digest)
	for _, l := range a.Manifest.Layers {
		fmt.Fprintf(h, "layer=%s\n", l.Digest)
	}
	for _, dst := range slices.Sorted(maps.Keys(d.Files)) {
		src := d.Files[dst]
		f, err := os.Open(src)
		if err != nil {
			return "", err
		}
		st, err := f.Stat()
		if err == nil {
			fh := sha256.New()
			_, err = io.Copy(fh, f)
			fmt.Fprintf(h, "file=%s mode=%o sha256=%x\n", dst, st.Mode().Perm(), fh.Sum(nil))
		}
		f.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", src, err)
		}
	}
	for _, k := range d.Key {
		fmt.Fprintf(h, "key=%s\n", k)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// build: buildah from the base's archive, copy the files, Check, commit,
// push to archive (through a temporary file, renamed when complete).
func (d Derived) build(t *testing.T, base, ref, archive string) error {
	if _, err := exec.LookPath("buildah"); err != nil {
		return fmt.Errorf("buildah not found on PATH: run make deps-images (apt-get install -y buildah debootstrap; make test does it)")
	}
	store, err := os.MkdirTemp("", "atom-derived-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(store)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bh := func(args ...string) (string, error) {
		all := append([]string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs"}, args...)
		out, err := exec.CommandContext(ctx, "buildah", all...).CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("buildah %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	out, err := bh("from", "--quiet", "oci-archive:"+base)
	if err != nil {
		return err
	}
	ctr := strings.TrimSpace(out)
	for _, dst := range slices.Sorted(maps.Keys(d.Files)) {
		if _, err := bh("copy", ctr, d.Files[dst], dst); err != nil {
			return err
		}
	}
	if d.Check != nil {
		err := d.Check(func(args ...string) (string, error) {
			return bh(append([]string{"run", "--isolation", "chroot", ctr, "--"}, args...)...)
		})
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	if _, err := bh("commit", "--quiet", "--rm", ctr, ref); err != nil {
		return err
	}
	tmp := archive + ".tmp"
	_ = os.Remove(tmp)
	if _, err := bh("push", "--quiet", ref, "oci-archive:"+tmp+":"+ref); err != nil {
		return err
	}
	return os.Rename(tmp, archive)
}

// ImportDerived builds d if out of date (Derived.Ensure) and imports it
// into the node; it returns its ref, for a job's `image:`.
func (e *Env) ImportDerived(t *testing.T, d Derived) string {
	t.Helper()
	archive, ref := d.Ensure(t)
	start := time.Now()
	e.Node.ImportImage(t, archive, ref)
	t.Logf("image %s imported into the node in %.1fs", ref, time.Since(start).Seconds())
	e.Images[d.Name] = ref
	return ref
}
