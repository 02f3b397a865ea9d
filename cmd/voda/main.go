// Command voda is Voda's single binary: the Kubernetes controller, the
// trace-driven simulator and the command-line client, as subcommands.
package main

import (
	"os"

	"github.com/vodascheduler/voda/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
