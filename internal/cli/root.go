// Package cli builds the voda command tree (cobra). Each subcommand lives in
// its own file and only wires flags to the packages that do the work.
//
// Import rule: anything in the module; nothing imports this package except
// cmd/voda.
package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// Version is the build's version, set with -ldflags at release time.
var Version = "0.1.0-dev"

// usageError marks errors caused by bad command-line input (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usageArgs wraps a positional-argument validator so its errors exit with
// code 2.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return usageError{fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())}
		}
		return nil
	}
}

// NewRoot returns the root command.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "voda",
		Short: "Voda schedules elastic deep-learning training jobs on GPU clusters",
		Long: `Voda decides how many GPUs every elastic training job gets and where they
sit, and acts on it: starting, growing, shrinking, preempting and migrating
jobs. It runs one scheduler per GPU type with a choice of nine policies
(voda policies lists them).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	// With Args set, an unknown subcommand reaches this validator and
	// becomes a usage error like any other bad argument.
	root.Args = usageArgs(cobra.NoArgs)
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	root.AddCommand(newPoliciesCmd(), newSimulateCmd(), newControllerCmd(),
		newCreateCmd(), newGetCmd(), newDescribeCmd(), newDeleteCmd(), newSetCmd(), newVersionCmd())
	return root
}

// Main runs the command line and returns the process exit code: 0 on
// success, 2 for bad input, 1 for other failures.
func Main(args []string, stdout, stderr io.Writer) int {
	return MainAs("voda", args, stdout, stderr)
}

// MainAs is Main for a binary invoked as program (os.Args[0]). Installed as
// kubectl-voda, the binary is a kubectl plugin and its help says
// "kubectl voda".
func MainAs(program string, args []string, stdout, stderr io.Writer) int {
	root := NewRoot(stdout, stderr)
	if base := filepath.Base(program); strings.HasPrefix(base, "kubectl-") {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl " + strings.TrimPrefix(base, "kubectl-")}
	}
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "Error:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}
