package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/pkg/algorithm"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestPoliciesListsEveryPolicy(t *testing.T) {
	code, out, _ := run("policies")
	if code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	for _, n := range algorithm.Names() {
		if !strings.Contains(out, n+" ") {
			t.Errorf("output does not list %s:\n%s", n, out)
		}
		if policySummaries[n] == "" {
			t.Errorf("%s has no summary", n)
		}
	}
	for _, p := range algorithm.Params() {
		if !strings.Contains(out, p.Name+" ") || !strings.Contains(out, p.Help) {
			t.Errorf("output does not list parameter %s with its meaning:\n%s", p.Name, out)
		}
	}
}

func TestBadInputExitsWithCode2(t *testing.T) {
	cases := map[string][]string{
		"unknown flag":        {"policies", "--nope"},
		"unexpected argument": {"policies", "extra"},
		"unknown subcommand":  {"frobnicate"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := run(args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.HasPrefix(stderr, "Error: ") {
				t.Errorf("stderr %q does not start with an error", stderr)
			}
		})
	}
}

func TestKubectlPluginName(t *testing.T) {
	var out, errb bytes.Buffer
	if code := MainAs("/usr/local/bin/kubectl-voda", []string{"get", "jobs", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "kubectl voda get jobs [NAME...] [flags]") {
		t.Errorf("help as a kubectl plugin does not say kubectl voda:\n%s", out.String())
	}
	out.Reset()
	MainAs("voda", []string{"get", "jobs", "--help"}, &out, &errb)
	if !strings.Contains(out.String(), "\n  voda get jobs [NAME...] [flags]") {
		t.Errorf("help as voda:\n%s", out.String())
	}
}
