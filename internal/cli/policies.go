package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/pkg/algorithm"
)

var policySummaries = map[string]string{
	algorithm.NameFIFO:            "submission order at the requested size, with backfilling",
	algorithm.NameElasticFIFO:     "submission order; minimum first, then spare GPUs round-robin up to the maximum (default)",
	algorithm.NameSRJF:            "shortest estimated remaining work first, at the requested size",
	algorithm.NameElasticSRJF:     "SRJF order; minimum first, then spare GPUs round-robin up to the maximum",
	algorithm.NameTiresias:        "discretised least attained GPU service (Tiresias-L), at the requested size",
	algorithm.NameElasticTiresias: "Tiresias order; shrink low-priority jobs when many wait; spare GPUs by marginal speedup",
	algorithm.NameFfDLOptimizer:   "maximise total speedup (dynamic program) over jobs admitted first-come-first-served",
	algorithm.NameAFSL:            "AFS-L: GPU by GPU, short jobs first unless a long job gains relatively more",
}

func newPoliciesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "policies",
		Short: "List the scheduling policies",
		Long: `List the scheduling policies a scheduler can run. Names are matched
case-insensitively; the original Voda spellings (e.g. ElasticFIFO, AFS-L,
FfDLOptimizer) and forms with dashes or underscores are accepted.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "POLICY\tRULE")
			for _, n := range algorithm.Names() {
				fmt.Fprintf(w, "%s\t%s\n", n, policySummaries[n])
			}
			return w.Flush()
		},
	}
}
