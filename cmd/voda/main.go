// Command voda is Voda's single binary: the Kubernetes controller, the
// trace-driven simulator and the command-line client, as subcommands.
// Installed as kubectl-voda it is also a kubectl plugin: kubectl voda get jobs.
package main

import (
	"os"

	"github.com/vodascheduler/voda/internal/cli"
)

func main() {
	os.Exit(cli.MainAs(os.Args[0], os.Args[1:], os.Stdout, os.Stderr))
}
