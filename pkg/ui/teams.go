package ui

import (
	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// TeamView is one queue on the teams page: its GPUs of each type against
// its quota.
type TeamView struct {
	rest.Queue
	Types []TeamType
}

// TeamType is a queue's use of one GPU type, with the widths of the bar
// that draws it, in percent of the larger of its quota and its use.
type TeamType struct {
	v1alpha1.QueueUsage
	// InQuota is the part of the quota in use, Borrowed what is used above
	// it, Idle the unused part of the quota (lent or free).
	InQuota, Borrowed, Idle int
	// AtQuota says its jobs hold all the queue may hold now while some
	// wait: they wait for quota, not for free GPUs.
	AtQuota bool
}

// Teams builds the teams page from the queues the API lists.
func Teams(queues []rest.Queue) []TeamView {
	out := make([]TeamView, 0, len(queues))
	for _, q := range queues {
		v := TeamView{Queue: q}
		for _, u := range q.GPUTypes {
			scale := max(u.Nominal, u.Used, 1)
			t := TeamType{QueueUsage: u}
			t.InQuota = int(min(u.Used, u.Nominal)) * 100 / int(scale)
			t.Borrowed = int(u.Borrowed) * 100 / int(scale)
			t.Idle = int(max(u.Nominal-u.Used, 0)) * 100 / int(scale)
			t.AtQuota = u.Pending > 0 && u.Used >= u.Budget
			v.Types = append(v.Types, t)
		}
		out = append(out, v)
	}
	return out
}
