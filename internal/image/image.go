// Package image assembles Voda's container image without a container
// engine and without a base image from a registry: one layer holding the
// static voda binary, the build machine's CA certificates, a non-root user
// and a writable /tmp, and an OCI config that runs `voda controller` as
// that user. `make image` (hack/image) writes it as a tarball that
// `docker load`, `podman load`, `crane push` and `skopeo copy` accept, and
// can push it to a registry itself.
//
// The image is reproducible: every file has the same time (Options.Created)
// and owner, so the same binary and certificates give the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where things are in the image, and who runs it.
const (
	BinaryPath = "/usr/local/bin/voda"
	CAPath     = "/etc/ssl/certs/ca-certificates.crt"
	// UID and GID of the user "nonroot", as in distroless images and the
	// Helm chart's securityContext.
	UID = 65532
	GID = 65532
)

// DefaultCACerts is the CA bundle of Debian and Ubuntu build machines.
const DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"

// Options says what goes into the image.
type Options struct {
	// Binary is a voda binary built for Linux with CGO_ENABLED=0.
	Binary string
	// Arch is the binary's GOARCH (amd64, arm64, …).
	Arch string
	// CACerts is the CA bundle to include (DefaultCACerts when empty).
	CACerts string
	// Version, Revision and Source label the image
	// (org.opencontainers.image.*); Revision and Source may be empty.
	Version, Revision, Source string
	// Created is the time of the image and of its files.
	Created time.Time
}

// Build assembles the image.
func Build(o Options) (v1.Image, error) {
	if o.Binary == "" || o.Arch == "" || o.Version == "" {
		return nil, fmt.Errorf("image: the binary, its architecture and the version are required")
	}
	if o.CACerts == "" {
		o.CACerts = DefaultCACerts
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: read the binary: %w", err)
	}
	if len(bin) < 4 || string(bin[:4]) != "\x7fELF" {
		return nil, fmt.Errorf("image: %s is not a Linux executable: build it with GOOS=linux CGO_ENABLED=0", o.Binary)
	}
	ca, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("image: read the CA certificates (install ca-certificates, or name a bundle with --ca-certs): %w", err)
	}
	layerTar, err := rootFS(bin, ca, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = o.Arch, "linux"
	cf.Created = v1.Time{Time: o.Created.UTC()}
	labels := map[string]string{
		"org.opencontainers.image.title":       "voda",
		"org.opencontainers.image.description": "Voda: elastic GPU scheduler for deep-learning training on Kubernetes",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
	if o.Revision != "" {
		labels["org.opencontainers.image.revision"] = o.Revision
	}
	if o.Source != "" {
		labels["org.opencontainers.image.source"] = o.Source
	}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"controller"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + CAPath, "HOME=/home/nonroot"},
		WorkingDir: "/home/nonroot",
		Labels:     labels,
	}
	cf.History = []v1.History{{Created: cf.Created, CreatedBy: "make image (hack/image)", Comment: "voda " + o.Version}}
	return mutate.ConfigFile(img, cf)
}

// Push pushes the image to ref's registry with the credentials of
// ~/.docker/config.json (as `docker login`, `podman login` or `crane auth
// login` leave them; anonymous when there are none).
func Push(ref name.Reference, img v1.Image, opts ...remote.Option) error {
	opts = append([]remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.Write(ref, img, opts...); err != nil {
		return fmt.Errorf("push %s (log in to the registry first, e.g. crane auth login or podman login): %w", ref, err)
	}
	return nil
}

// rootFS is the image's only layer, as an uncompressed tar.
func rootFS(bin, ca []byte, at time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	at = at.UTC()
	dir := func(name string, mode int64, uid, gid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: gid, ModTime: at, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: at, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	steps := []func() error{
		func() error { return dir("etc/", 0o755, 0, 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("etc/ssl/", 0o755, 0, 0) },
		func() error { return dir("etc/ssl/certs/", 0o755, 0, 0) },
		func() error { return file(CAPath[1:], 0o644, ca) },
		func() error { return dir("home/", 0o755, 0, 0) },
		func() error { return dir("home/nonroot/", 0o700, UID, GID) },
		func() error { return dir("tmp/", 0o1777, 0, 0) },
		func() error { return dir("usr/", 0o755, 0, 0) },
		func() error { return dir("usr/local/", 0o755, 0, 0) },
		func() error { return dir("usr/local/bin/", 0o755, 0, 0) },
		func() error { return file(BinaryPath[1:], 0o755, bin) },
		tw.Close,
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, fmt.Errorf("image: write the layer: %w", err)
		}
	}
	return buf.Bytes(), nil
}
