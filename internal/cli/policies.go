package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/pkg/algorithm"
)

var policySummaries = map[string]string{
	algorithm.NameFIFO:            "submission order at the requested size, with backfilling",
	algorithm.NameElasticFIFO:     "submission order; minimum first, then spare GPUs round-robin up to the maximum (the original's default)",
	algorithm.NameSRJF:            "shortest estimated remaining work first, at the requested size",
	algorithm.NameElasticSRJF:     "SRJF order; minimum first, then spare GPUs round-robin up to the maximum",
	algorithm.NameTiresias:        "discretised least attained GPU service (Tiresias-L), at the requested size",
	algorithm.NameElasticTiresias: "Tiresias order; shrink low-priority jobs when many wait; spare GPUs by marginal speedup",
	algorithm.NameFfDLOptimizer:   "maximise total speedup (dynamic program) over jobs admitted first-come-first-served",
	algorithm.NameAFSL:            "AFS-L: GPU by GPU, short jobs first unless a long job gains relatively more",
	algorithm.NameHeSRPT:          "Voda's own: GPUs by weighted gain on each curve's concave hull, shorter jobs weigh more; resizes only where they pay for the restart (default)",
}

// policyReferences says where each policy comes from (docs/policies.md has
// the details).
var policyReferences = map[string]string{
	algorithm.NameFIFO:            "original Voda",
	algorithm.NameElasticFIFO:     "original Voda",
	algorithm.NameSRJF:            "original Voda (SRTF)",
	algorithm.NameElasticSRJF:     "original Voda",
	algorithm.NameTiresias:        "Gu et al., NSDI'19",
	algorithm.NameElasticTiresias: "Wu et al. (EDL); original Voda",
	algorithm.NameFfDLOptimizer:   "Saxena et al., MASCOTS'20",
	algorithm.NameAFSL:            "Hwang et al., NSDI'21",
	algorithm.NameHeSRPT:          "Berg et al., PEVA'20 and SPAA'20 (heSRPT)",
}

func newPoliciesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "policies",
		Short: "List the scheduling policies",
		Long: `List the scheduling policies a scheduler can run. Names are matched
case-insensitively; the original Voda spellings (e.g. ElasticFIFO, AFS-L,
FfDLOptimizer) and forms with dashes or underscores are accepted. HeSRPT,
Voda's own policy, is also accepted as "voda". docs/policies.md describes
each rule in full.

The parameters listed below the policies are set with --policy-param
NAME=VALUE on 'voda controller' (for every GPU type it schedules; the Helm
chart's scheduler.policyParams), on 'voda set scheduler TYPE' (for one GPU
type, at runtime, over the controller's) and on 'voda simulate'.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "POLICY\tRULE\tFROM")
			for _, n := range algorithm.Names() {
				fmt.Fprintf(w, "%s\t%s\t%s\n", n, policySummaries[n], policyReferences[n])
			}
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout())
			w = tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "PARAMETER\tDEFAULT\tPOLICIES\tMEANING")
			for _, p := range algorithm.Params() {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Name, p.Default, strings.Join(p.Policies, ","), p.Help)
			}
			return w.Flush()
		},
	}
}
