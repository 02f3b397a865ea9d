// Command fitcatalog regenerates pkg/model/builtin_gen.go, the built-in
// model catalog, by fitting it to the Pollux profiles. Run it from the
// repository root:
//
//	go run ./hack/fitcatalog
//
// The profiles are read where they live (by default
// ../shared/traces/pollux-adaptdl/profiles); they are never copied into the
// repository, only the fitted parameters are. A test in pkg/model fails
// when the generated file no longer matches the profiles.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/vodascheduler/voda/pkg/model"
)

func main() {
	profiles := flag.String("profiles", "../shared/traces/pollux-adaptdl/profiles", "profiles directory, one subdirectory per model")
	out := flag.String("out", "pkg/model/builtin_gen.go", "file to write")
	flag.Parse()
	if err := run(*profiles, *out); err != nil {
		fmt.Fprintln(os.Stderr, "fitcatalog:", err)
		os.Exit(1)
	}
}

func run(profiles, out string) error {
	c, err := model.LoadProfiles(profiles)
	if err != nil {
		return err
	}
	src, err := model.GenerateBuiltin(c)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(out); err == nil && bytes.Equal(old, src) {
		fmt.Printf("%s is up to date\n", out)
		return nil
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s)\n", out, strings.Join(c.Names(), ", "))
	return nil
}
