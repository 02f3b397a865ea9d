package ui

import (
	"net/url"
	"strconv"
)

// A cluster of thousands of jobs and nodes is more than one page can show
// or a person can read: the queue view shows its entries a page at a time,
// the cluster view a page of each GPU type's nodes.

const (
	// QueuePageSize is the entries on one page of the queue view.
	QueuePageSize = 100
	// NodePageSize is the nodes of one GPU type on one page of the
	// cluster view.
	NodePageSize = 64
)

// Pager says which part of a long list a page shows: entries From to To
// (from 1) of Total, page Page of Pages, and the links ("?" and a query)
// to the pages before and after ("" at either end).
type Pager struct {
	Page, Pages     int
	From, To, Total int
	Prev, Next      string
}

// page cuts the page'th (from 1) of total entries in pages of size;
// query gives a page's query string. A page past the end is empty.
func page(total, size, n int, query func(page int) string) (Pager, int, int) {
	p := Pager{Page: n, Pages: max(1, (total+size-1)/size), Total: total}
	lo, hi := min((n-1)*size, total), min(n*size, total)
	if hi > lo {
		p.From, p.To = lo+1, hi
	}
	if n > 1 {
		p.Prev = query(min(n-1, p.Pages))
	}
	if n < p.Pages {
		p.Next = query(n + 1)
	}
	return p, lo, hi
}

// Paginate keeps the page'th (from 1) QueuePageSize entries of v; the
// pager's links keep the filters.
func (v *QueueView) Paginate(n int) {
	f := v.Filter
	query := func(p int) string {
		q := url.Values{}
		for k, val := range map[string]string{"namespace": f.Namespace, "user": f.User, "gpuType": f.GPUType, "phase": f.Phase} {
			if val != "" {
				q.Set(k, val)
			}
		}
		q.Set("page", strconv.Itoa(p))
		return "?" + q.Encode()
	}
	p, lo, hi := page(len(v.Entries), QueuePageSize, n, query)
	v.Pager, v.Entries = p, v.Entries[lo:hi]
}

// ClusterPage keeps of the cluster view the GPU type gpuType (every type
// when empty) and, of each, the page'th (from 1) NodePageSize nodes; the
// key of jobs holds the jobs on those nodes. The summaries count every
// node.
func ClusterPage(tvs []TypeView, gpuType string, n int) []TypeView {
	var out []TypeView
	for _, tv := range tvs {
		if gpuType != "" && tv.GPUType != gpuType {
			continue
		}
		query := func(p int) string {
			return "?" + url.Values{"gpuType": {tv.GPUType}, "page": {strconv.Itoa(p)}}.Encode()
		}
		p, lo, hi := page(len(tv.Nodes), NodePageSize, n, query)
		tv.Pager, tv.Nodes = p, tv.Nodes[lo:hi]
		tv.Holders = holders(tv.Nodes)
		out = append(out, tv)
	}
	return out
}
