package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vodascheduler/voda/pkg/apis/rest"
)

func newGetQueuesCmd(cf *clientFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "queues",
		Aliases: []string{"queue", "lq", "localqueues"},
		Short:   "List the queues your jobs may name",
		Long: `List the queues jobs submitted here may name in spec.queueName (the
LocalQueues of the API's namespace; "default" is used by jobs that name
none): NAME CLUSTERQUEUE COHORT NOMINAL USED BORROWED LENT PENDING RUNNING
WAITING, in GPUs of every type (docs/queues.md). 'voda describe queue NAME'
shows one per GPU type.
` + clientHelp,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(&output, "json", "yaml"); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			items, err := c.Queues(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			return printQueues(cmd.OutOrStdout(), items, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: table, json or yaml (default table)")
	return cmd
}

func printQueues(w io.Writer, items []rest.Queue, format string) error {
	if format != "" {
		if items == nil {
			items = []rest.Queue{}
		}
		return printStructured(w, rest.QueueList{Items: items}, format)
	}
	if len(items) == 0 {
		_, err := fmt.Fprintln(w, "No queues: every job shares every GPU (an admin creates ClusterQueues and LocalQueues to share them between teams; docs/queues.md).")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCLUSTERQUEUE\tCOHORT\tNOMINAL\tUSED\tBORROWED\tLENT\tPENDING\tRUNNING\tWAITING")
	for _, q := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", q.Name, q.ClusterQueue, dash(q.Cohort), q.Nominal, q.Used, q.Borrowed, q.Lent, q.Pending,
			q.RunningJobs, q.WaitingJobs)
	}
	return tw.Flush()
}

func newDescribeQueueCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "queue NAME",
		Aliases: []string{"queues", "lq"},
		Short:   "Show a queue: its ClusterQueue's quota and use of every GPU type",
		Long:    "Show a queue jobs may name: its ClusterQueue and cohort, and per GPU type the nominal quota, GPUs used, borrowed, lent and needed by waiting jobs.\n" + clientHelp,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			items, err := c.Queues(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			var names []string
			for _, q := range items {
				if q.Name == args[0] {
					return describeQueue(cmd.OutOrStdout(), q)
				}
				names = append(names, q.Name)
			}
			if len(names) == 0 {
				return fmt.Errorf("no queue %q: there are no queues here", args[0])
			}
			return fmt.Errorf("no queue %q: the queues are %s", args[0], strings.Join(names, ", "))
		},
	}
}

func describeQueue(w io.Writer, q rest.Queue) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", q.Name)
	if q.Default {
		fmt.Fprintf(tw, "Default:\tyes: jobs that name no queue use it\n")
	}
	fmt.Fprintf(tw, "ClusterQueue:\t%s\n", q.ClusterQueue)
	fmt.Fprintf(tw, "Cohort:\t%s\n", dash(q.Cohort))
	fmt.Fprintf(tw, "Jobs:\t%d running, %d waiting\n", q.RunningJobs, q.WaitingJobs)
	if q.Message != "" {
		fmt.Fprintf(tw, "Message:\t%s\n", q.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(q.GPUTypes) == 0 {
		_, err := fmt.Fprintln(w, "GPUs: no quota and no use yet.")
		return err
	}
	fmt.Fprintln(w, "GPUs:")
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  GPU-TYPE\tNOMINAL\tUSED\tBORROWED\tLENT\tPENDING\tMAY HOLD NOW\tWEIGHTED SHARE")
	for _, t := range q.GPUTypes {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", t.GPUType, t.Nominal, t.Used, t.Borrowed, t.Lent, t.Pending, t.Budget, dash(t.WeightedShare))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
