package image_test

import (
	"archive/tar"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/vodascheduler/voda/internal/image"
)

// TestImage builds the real binary, assembles the image, writes it as
// `make image` does, reads the tarball back and checks its config, its
// files, and that the binary inside runs.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the voda binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image holds a Linux binary that this test runs")
	}
	if _, err := os.Stat(image.DefaultCACerts); err != nil {
		t.Fatalf("no CA bundle at %s (install ca-certificates): %v", image.DefaultCACerts, err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "voda")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/vodascheduler/voda/internal/cli.Version=9.8.7-test", "-o", bin, "../../cmd/voda")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	at := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	o := image.Options{Binary: bin, Arch: runtime.GOARCH, Version: "9.8.7-test", Revision: "abc123", Source: "https://example.com/voda", Created: at}
	img, err := image.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference("registry.example.com/voda:9.8.7-test")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "voda-image.tar")
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		t.Fatal(err)
	}
	tag := ref.(name.Tag)
	back, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}

	cf, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Time.Equal(at) {
		t.Errorf("platform %s/%s created %v", cf.OS, cf.Architecture, cf.Created)
	}
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/voda"}) || !slices.Equal(c.Cmd, []string{"controller"}) {
		t.Errorf("user %q, entrypoint %v, cmd %v", c.User, c.Entrypoint, c.Cmd)
	}
	if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("env %v", c.Env)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  "9.8.7-test",
		"org.opencontainers.image.revision": "abc123",
		"org.opencontainers.image.source":   "https://example.com/voda",
		"org.opencontainers.image.title":    "voda",
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	layers, err := back.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v; want 1", len(layers), err)
	}
	if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %v, %v", mt, err)
	}

	// The files: every one owned and moded as a read-only root filesystem
	// run as 65532 needs.
	files := map[string]*tar.Header{}
	content := map[string][]byte{}
	tr := tar.NewReader(mutate.Extract(back))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(h.Name, "/")] = h
		if h.Typeflag == tar.TypeReg {
			if content["/"+h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]int64{
		"/usr/local/bin/voda":                0o755,
		"/etc/ssl/certs/ca-certificates.crt": 0o644,
		"/etc/passwd":                        0o644,
		"/etc/group":                         0o644,
		"/tmp":                               0o1777,
		"/home/nonroot":                      0o700,
	}
	for p, mode := range want {
		h, ok := files[p]
		if !ok {
			t.Errorf("%s missing from the image", p)
			continue
		}
		if h.Mode != mode {
			t.Errorf("%s mode %o, want %o", p, h.Mode, mode)
		}
	}
	if h := files["/home/nonroot"]; h != nil && (h.Uid != 65532 || h.Gid != 65532) {
		t.Errorf("/home/nonroot owned by %d:%d", h.Uid, h.Gid)
	}
	if !strings.Contains(string(content["/etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd:\n%s", content["/etc/passwd"])
	}
	ca, _ := os.ReadFile(image.DefaultCACerts)
	if string(content["/etc/ssl/certs/ca-certificates.crt"]) != string(ca) {
		t.Error("the CA bundle in the image differs from the build machine's")
	}

	// The binary inside runs.
	inside := filepath.Join(dir, "inside-voda")
	if err := os.WriteFile(inside, content["/usr/local/bin/voda"], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(inside, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "9.8.7-test") {
		t.Errorf("voda version in the image: %v\n%s", err, out)
	}

	// Reproducible: the same inputs give the same digest.
	again, err := image.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same inputs: %s and %s", d1, d2)
	}
}

// Push puts the image in a registry (here go-containerregistry's
// in-memory one) from which it comes back the same.
func TestPush(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs a Linux executable to pack")
	}
	exe, err := os.Executable() // any Linux executable will do
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.Build(image.Options{Binary: exe, Arch: runtime.GOARCH, Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/ml/voda:1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err := image.Push(ref, img); err != nil {
		t.Fatal(err)
	}
	got, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if d, err := got.Digest(); err != nil || d != want {
		t.Errorf("pulled %v (%v), pushed %v", d, err, want)
	}
	// A registry that is not there: an error that says what to do.
	bad, _ := name.ParseReference("127.0.0.1:1/voda:x")
	if err := image.Push(bad, img); err == nil || !strings.Contains(err.Error(), "log in to the registry first") {
		t.Errorf("push to nowhere: %v", err)
	}
}

func TestImageRefusesWhatIsNotALinuxBinary(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "voda")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := image.Build(image.Options{Binary: script, Arch: "amd64", Version: "1"})
	if err == nil || !strings.Contains(err.Error(), "not a Linux executable") {
		t.Errorf("error %v", err)
	}
	_, err = image.Build(image.Options{Binary: filepath.Join(dir, "missing"), Arch: "amd64", Version: "1"})
	if err == nil || !strings.Contains(err.Error(), "read the binary") {
		t.Errorf("error %v", err)
	}
}
