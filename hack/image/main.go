// Command image builds Voda's container image without a container engine
// (see internal/image): `make image` runs it after building a static
// binary. It writes a tarball that `docker load`, `podman load`,
// `crane push` and `skopeo copy docker-archive:…` accept and, with --push,
// pushes the image to its registry using the credentials of
// ~/.docker/config.json (as `docker login`, `podman login` or
// `crane auth login` leave them).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/vodascheduler/voda/internal/image"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	var o image.Options
	var tag, out string
	var push bool
	flag.StringVar(&o.Binary, "binary", "bin/voda-linux", "the voda binary, built with GOOS=linux CGO_ENABLED=0")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "the binary's architecture (GOARCH)")
	flag.StringVar(&o.CACerts, "ca-certs", image.DefaultCACerts, "the CA certificate bundle to include")
	flag.StringVar(&o.Version, "version", "", "the version to label the image with (required)")
	flag.StringVar(&o.Revision, "revision", gitOutput("rev-parse", "HEAD"), "the source revision label (default: the checkout's commit)")
	flag.StringVar(&o.Source, "source", "https://github.com/vodascheduler/voda", "the source repository label")
	flag.StringVar(&tag, "tag", "", "the image reference, e.g. ghcr.io/you/voda:0.1.0 (required)")
	flag.StringVar(&out, "out", "bin/voda-image.tar", "the tarball to write")
	flag.BoolVar(&push, "push", false, "also push the image to the tag's registry")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/image --version V --tag REGISTRY/voda:TAG [flags]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if o.Version == "" || tag == "" {
		flag.Usage()
		return fmt.Errorf("--version and --tag are required")
	}
	ref, err := name.ParseReference(tag)
	if err != nil {
		return fmt.Errorf("--tag %q: %w", tag, err)
	}
	o.Created = created()
	img, err := image.Build(o)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image %s (%s) written to %s\n", ref, digest, out)
	if !push {
		return nil
	}
	if err := image.Push(ref, img); err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", ref.Context(), digest)
	return nil
}

// created is the image's time: SOURCE_DATE_EPOCH when set, else the
// commit's time, so that rebuilding the same commit gives the same image.
func created() time.Time {
	for _, s := range []string{os.Getenv("SOURCE_DATE_EPOCH"), gitOutput("log", "-1", "--format=%ct")} {
		if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(sec, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}

func gitOutput(args ...string) string {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
