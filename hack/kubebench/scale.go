package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/rest"
)

// The scale mode (SCALE=1) also serves the controller's REST API, dashboard
// and metrics, follows Voda's requests to the API server while the jobs
// start, every 10 minutes and at the end times the REST job list and each
// dashboard page, and at the end reads the scheduling rounds' length from
// the metrics.

// benchToken is the static bearer token of the scale mode's REST API: an
// administrator, who sees every job.
const benchToken = "kubebench-admin-token"

// freeAddr returns a loopback address with a port free now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// scaleArgs returns the controller flags of the scale mode: the REST API
// (static token) and metrics on free loopback ports.
func scaleArgs(dir, ns string) (args []string, api, metricsAddr, pprofAddr string, err error) {
	if api, err = freeAddr(); err != nil {
		return nil, "", "", "", err
	}
	if metricsAddr, err = freeAddr(); err != nil {
		return nil, "", "", "", err
	}
	if pprofAddr, err = freeAddr(); err != nil {
		return nil, "", "", "", err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(benchToken+`,kubebench,1,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, "", "", "", err
	}
	return []string{"--api-addr", api, "--api-namespace", ns, "--api-auth", "static", "--api-token-file", tokens,
		"--metrics-addr", metricsAddr, "--pprof-addr", pprofAddr}, api, metricsAddr, pprofAddr, nil
}

// heap reports the controller's Go heap from its metrics and keeps its
// heap profile in dir (read it with go tool pprof -top -sample_index=inuse_space).
func heap(metricsAddr, pprofAddr, dir string) {
	if m, err := scrape(metricsAddr); err == nil {
		fmt.Printf("controller heap: %.1f MiB allocated and live-or-not-yet-collected, %.1f MiB in use, %.1f MiB from the OS\n",
			m["go_memstats_heap_alloc_bytes"]/(1<<20), m["go_memstats_heap_inuse_bytes"]/(1<<20), m["go_memstats_heap_sys_bytes"]/(1<<20))
	}
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/heap?gc=1")
	if err != nil {
		fmt.Printf("heap profile: %v\n", err)
		return
	}
	defer resp.Body.Close()
	out := filepath.Join(dir, "heap.pprof")
	f, err := os.Create(out)
	if err == nil {
		_, err = io.Copy(f, resp.Body)
		err = cmp.Or(err, f.Close())
	}
	if err != nil {
		fmt.Printf("heap profile: %v\n", err)
		return
	}
	fmt.Printf("heap profile (after a collection): %s\n", out)
}

// scrape returns the metrics endpoint's samples: name{labels} → value.
func scrape(addr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body)
}

// waitMetrics waits, at most a minute, until the controller serves its
// metrics.
func waitMetrics(addr string) {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if _, err := scrape(addr); err == nil {
			return
		}
	}
}

// parseMetrics reads the Prometheus text format: every sample by its name
// and labels.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// serverWrites is how many writes the API server has served so far, every
// client's (apiserver_request_total of every verb that changes
// something), by verb and resource ("PATCH pods", "PATCH trainingjobs/status").
func serverWrites(ctx context.Context, env *testenv.Env) (map[string]float64, error) {
	raw, err := env.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	m, err := parseMetrics(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for k, v := range m {
		if !strings.HasPrefix(k, "apiserver_request_total{") {
			continue
		}
		verb, resource, sub := label(k, "verb"), label(k, "resource"), label(k, "subresource")
		switch verb {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		if sub != "" {
			resource += "/" + sub
		}
		out[verb+" "+resource] += v
	}
	return out, nil
}

// label returns a label's value in a sample's name, "" if it has none.
func label(sample, name string) string {
	i := strings.Index(sample, name+`="`)
	if i < 0 {
		return ""
	}
	rest := sample[i+len(name)+2:]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// writeReport prints the API server's writes between two serverWrites,
// the most frequent kinds first, and Voda's share of them.
func writeReport(before, after map[string]float64, voda float64) {
	type kind struct {
		name string
		n    float64
	}
	var kinds []kind
	all := 0.0
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			kinds = append(kinds, kind{k, d})
			all += d
		}
	}
	slices.SortFunc(kinds, func(a, b kind) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.name, b.name)) })
	var parts []string
	for _, k := range kinds[:min(len(kinds), 10)] {
		parts = append(parts, fmt.Sprintf("%s %.0f", k.name, k.n))
	}
	fmt.Printf("writes the API server served, every client: %.0f, %.0f of them Voda's (%.0f%%); most: %s\n",
		all, voda, 100*voda/max(all, 1), strings.Join(parts, ", "))
}

// requests sums Voda's requests to the API server so far: all, and the
// writes (every method but GET).
func requests(samples map[string]float64) (all, writes float64) {
	for k, v := range samples {
		if !strings.HasPrefix(k, "rest_client_requests_total{") {
			continue
		}
		all += v
		if !strings.Contains(k, `method="GET"`) {
			writes += v
		}
	}
	return all, writes
}

// requestLog follows Voda's request counters over the run.
type requestLog struct {
	at            []time.Time
	all, writes   []float64
	scrapeFailure error
}

func (l *requestLog) sample(addr string) {
	s, err := scrape(addr)
	if err != nil {
		l.scrapeFailure = err
		return
	}
	all, writes := requests(s)
	l.at, l.all, l.writes = append(l.at, time.Now()), append(l.all, all), append(l.writes, writes)
}

// peak returns the most of a counter's increase over any window of at
// least w, per second.
func peak(at []time.Time, v []float64, w time.Duration) float64 {
	best := 0.0
	for i := range at {
		for j := i + 1; j < len(at); j++ {
			if d := at[j].Sub(at[i]); d >= w {
				best = max(best, (v[j]-v[i])/d.Seconds())
				break
			}
		}
	}
	return best
}

func (l *requestLog) report() {
	if l.scrapeFailure != nil {
		fmt.Printf("metrics: a scrape failed: %v\n", l.scrapeFailure)
	}
	n := len(l.at)
	if n < 2 {
		fmt.Println("Voda's requests to the API server: too few samples")
		return
	}
	secs := l.at[n-1].Sub(l.at[0]).Seconds()
	fmt.Printf("Voda's requests to the API server: %.0f (%.0f writes) over %.0f s; %.1f/s and %.1f writes/s on average, at most %.1f writes/s over any 10 s\n",
		l.all[n-1]-l.all[0], l.writes[n-1]-l.writes[0], secs, (l.all[n-1]-l.all[0])/secs, (l.writes[n-1]-l.writes[0])/secs,
		peak(l.at, l.writes, 10*time.Second))
}

// rounds reports the scheduling rounds' length per GPU type from the
// reschedule-duration histogram: count, mean, and the bucket bound under
// which 99% fell.
func rounds(addr string) {
	s, err := scrape(addr)
	if err != nil {
		fmt.Println("rounds: metrics:", err)
		return
	}
	const name = "voda_scheduler_reschedule_duration_seconds"
	type hist struct {
		sum, count float64
		buckets    [][2]float64 // (le, cumulative count)
	}
	byType := map[string]*hist{}
	get := func(labels string) *hist {
		t := labelValue(labels, "gpu_type")
		if byType[t] == nil {
			byType[t] = &hist{}
		}
		return byType[t]
	}
	for k, v := range s {
		switch {
		case strings.HasPrefix(k, name+"_sum{"):
			get(k).sum = v
		case strings.HasPrefix(k, name+"_count{"):
			get(k).count = v
		case strings.HasPrefix(k, name+"_bucket{"):
			le, err := strconv.ParseFloat(labelValue(k, "le"), 64)
			if err == nil {
				h := get(k)
				h.buckets = append(h.buckets, [2]float64{le, v})
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(byType)) {
		h := byType[t]
		slices.SortFunc(h.buckets, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
		p99 := "—"
		for _, b := range h.buckets {
			if h.count > 0 && b[1] >= 0.99*h.count {
				p99 = fmt.Sprintf("≤ %g s", b[0])
				break
			}
		}
		mean := 0.0
		if h.count > 0 {
			mean = h.sum / h.count
		}
		fmt.Printf("rounds on %s: %.0f, mean %.1f ms, p99 %s\n", t, h.count, 1000*mean, p99)
	}
}

func labelValue(sample, label string) string {
	_, rest, ok := strings.Cut(sample, label+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// timePages times the REST job list (its first page, a page of 1 000, and
// every page in turn) and each dashboard page (the first and a later one of
// the paged ones), five times each, and prints the median and the size.
func timePages(ctx context.Context, api, gpuType string, jobs []string) {
	paths := []string{"/api/v1/jobs", "/api/v1/jobs?limit=1000", "/ui/cluster", "/ui/cluster?gpuType=" + gpuType + "&page=3",
		"/ui/queue", "/ui/queue?page=20", "/ui/teams"}
	for _, j := range jobs {
		paths = append(paths, "/ui/jobs/"+j)
	}
	for range 3 {
		begin, pages, n, cont := time.Now(), 0, 0, ""
		for {
			var l rest.JobList
			if err := getJSON(ctx, "http://"+api+"/api/v1/jobs?limit=1000&continue="+url.QueryEscape(cont), &l); err != nil {
				fmt.Println("the whole job list:", err)
				break
			}
			pages, n = pages+1, n+len(l.Items)
			if cont = l.Continue; cont == "" {
				break
			}
		}
		fmt.Printf("GET /api/v1/jobs, all %d pages of 1000 (%d jobs): %.3f s\n", pages, n, time.Since(begin).Seconds())
	}
	for _, p := range paths {
		var took []float64
		size, code := 0, 0
		for range 5 {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+api+p, nil)
			if err != nil {
				fmt.Println(p, err)
				break
			}
			req.Header.Set("Authorization", "Bearer "+benchToken)
			begin := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				fmt.Println(p, err)
				break
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took = append(took, time.Since(begin).Seconds())
			size, code = int(n), resp.StatusCode
		}
		slices.Sort(took)
		fmt.Printf("GET %-34s %d, %7.1f KiB, median %.3f s, max %.3f s (5 requests)\n", p, code, float64(size)/1024, pct(took, 50), pct(took, 100))
	}
}

// getJSON reads a REST answer with the bench's token.
func getJSON(ctx context.Context, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}
