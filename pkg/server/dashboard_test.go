package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

// dashJob is a job of the dashboard tests: the inputs tests' valid job
// with its worker range and a Tiresias priority (1 starts it in queue 1).
func dashJob(name string, minW, maxW, priority int) string {
	return tj(name, "  minWorkers: 1\n  maxWorkers: 4\n  requestedWorkers: 2\n  epochs: 3\n",
		fmt.Sprintf("  minWorkers: %d\n  maxWorkers: %d\n  requestedWorkers: %d\n  priority: %d\n", minW, maxW, minW, priority))
}

// browserSession is an HTTP client with a cookie jar that does not follow
// redirects, so the tests see them.
func browserSession(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// page fetches a dashboard page and returns its status and body.
func page(t *testing.T, c *http.Client, method, u string, form url.Values, header ...string) (int, string, http.Header) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), resp.Header
}

// login opens a dashboard session as user and returns its CSRF token.
func login(t *testing.T, c *http.Client, base, user string) string {
	t.Helper()
	code, _, h := page(t, c, "POST", base+"/ui/login", url.Values{"token": {tokens[user]}, "next": {"queue"}})
	if code != http.StatusSeeOther || h.Get("Location") != "queue" {
		t.Fatalf("login as %s: %d, Location %q", user, code, h.Get("Location"))
	}
	code, body, _ := page(t, c, "GET", base+"/ui/cluster", nil)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if code != 200 || m == nil {
		t.Fatalf("cluster page after login: %d, no CSRF token in\n%s", code, body)
	}
	return m[1]
}

// testDashboard checks the dashboard's pages, sessions and actions
// without a browser: 401 and the login form for every view and action
// without a session, sessions, CSRF, what non-admins may see and do, and
// the event stream.
func testDashboard(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	if err := e.k8s.DeleteAllOf(ctx, &v1alpha1.TrainingJob{}, ctrlclient.InNamespace(apiNS)); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "no jobs left", func() (bool, error) { return len(e.jobs(t)) == 0, nil })
	if code, msg := e.call(t, "PUT", "/api/v1/schedulers/"+testGPUType, "root", "application/json", `{"algorithm":"ElasticFIFO","rateLimit":"300ms"}`); code != 200 {
		t.Fatalf("reset the scheduler: %d %s", code, msg)
	}
	anon := browserSession(t)
	views := []struct{ method, path string }{
		{"GET", "/ui/cluster"}, {"GET", "/ui/queue"}, {"GET", "/ui/jobs/anything"}, {"GET", "/ui/events"},
		{"POST", "/ui/schedulers/" + testGPUType}, {"POST", "/ui/logout"},
	}
	for _, v := range views {
		for _, hdr := range [][]string{nil, {"Authorization", "Bearer guess"}, {"Cookie", "voda_session=guess"}} {
			code, body, h := page(t, anon, v.method, e.url+v.path, url.Values{"algorithm": {"FIFO"}}, hdr...)
			if code != http.StatusUnauthorized || !strings.Contains(body, `id="login"`) || h.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s with %v: %d, want 401 with the login form", v.method, v.path, hdr, code)
			}
		}
	}
	// The root and /ui lead to the dashboard; the login page itself is 200.
	for path, want := range map[string]string{"/": "ui/", "/ui": "ui/", "/ui/": "cluster"} {
		if code, _, h := page(t, anon, "GET", e.url+path, nil); code != http.StatusSeeOther || h.Get("Location") != want {
			t.Errorf("GET %s: %d to %q, want 303 to %q", path, code, h.Get("Location"), want)
		}
	}
	if code, body, _ := page(t, anon, "GET", e.url+"/ui/login", nil); code != 200 || !strings.Contains(body, `id="login"`) {
		t.Errorf("login page: %d", code)
	}
	if code, body, _ := page(t, anon, "POST", e.url+"/ui/login", url.Values{"token": {"guess"}}); code != 401 || !strings.Contains(body, "not valid") {
		t.Errorf("login with a bad token: %d\n%s", code, body)
	}
	// A login never sends the browser off the dashboard.
	for _, next := range []string{"https://evil.example/", "//evil.example/x", "/api/v1/jobs", "../../x", `\\evil`,
		" //evil.example/x", "\t//evil.example/x", "javascript:alert(1)", "cluster\r\nSet-Cookie: x=y", "jobs//evil"} {
		c := browserSession(t)
		if code, _, h := page(t, c, "POST", e.url+"/ui/login", url.Values{"token": {tokens["bob"]}, "next": {next}}); code != 303 || h.Get("Location") != "cluster" {
			t.Errorf("login with next=%q: %d to %q, want cluster", next, code, h.Get("Location"))
		}
	}

	// A page of the dashboard to return to is kept, query and all.
	for _, next := range []string{"jobs/life", "queue?type=api-gpu"} {
		c := browserSession(t)
		if code, _, h := page(t, c, "POST", e.url+"/ui/login", url.Values{"token": {tokens["bob"]}, "next": {next}}); code != 303 || h.Get("Location") != next {
			t.Errorf("login with next=%q: %d to %q, want it kept", next, code, h.Get("Location"))
		}
	}
	// Another site's page cannot log the browser in; this one's can.
	c := browserSession(t)
	if code, body, h := page(t, c, "POST", e.url+"/ui/login", url.Values{"token": {tokens["bob"]}}, "Origin", "https://evil.example"); code != 403 || h.Get("Set-Cookie") != "" || !strings.Contains(body, "from another site") {
		t.Errorf("login from another origin: %d, cookie %q", code, h.Get("Set-Cookie"))
	}
	if code, _, _ := page(t, c, "POST", e.url+"/ui/login", url.Values{"token": {tokens["bob"]}}, "Origin", e.url); code != 303 {
		t.Errorf("login from the dashboard's origin: %d, want 303", code)
	}
	// A form over the body limit is answered as such.
	if code, _, _ := page(t, c, "POST", e.url+"/ui/login", url.Values{"token": {strings.Repeat("x", 2<<20)}}); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized login form: %d, want 413", code)
	}

	// The session cookie.
	alice := browserSession(t)
	code, _, h := page(t, alice, "POST", e.url+"/ui/login", url.Values{"token": {tokens["alice"]}})
	ck := (&http.Response{Header: h}).Cookies()
	if code != 303 || len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Secure ||
		ck[0].MaxAge <= 0 || ck[0].MaxAge > 12*3600 || ck[0].Path != "" {
		t.Fatalf("login: %d, cookies %+v", code, ck)
	}
	aliceCSRF := login(t, alice, e.url, "alice")
	rootC := browserSession(t)
	rootCSRF := login(t, rootC, e.url, "root")
	if aliceCSRF == rootCSRF {
		t.Error("two sessions share a CSRF token")
	}

	// Bob's job fills the type; two of alice's jobs and one of bob's wait.
	for _, j := range []struct{ user, yaml string }{
		{"bob", dashJob("dash-hog", 8, 8, 0)},
		{"alice", dashJob("dash-w1", 4, 4, 0)},
		{"bob", dashJob("dash-w2", 2, 2, 0)},
		{"alice", dashJob("dash-w3", 2, 2, 0)},
	} {
		if code, msg := e.call(t, "POST", "/api/v1/jobs", j.user, "application/yaml", j.yaml); code != 201 {
			t.Fatalf("create: %d %s", code, msg)
		}
		if strings.Contains(j.yaml, "dash-hog") {
			eventually(t, time.Minute, "dash-hog runs", func() (bool, error) {
				tj := &v1alpha1.TrainingJob{}
				err := e.k8s.Get(ctx, types.NamespacedName{Namespace: apiNS, Name: "dash-hog"}, tj)
				return err == nil && tj.Status.Phase == v1alpha1.PhaseRunning, err
			})
		}
	}
	eventually(t, time.Minute, "alice sees her jobs wait in order, with reasons", func() (bool, error) {
		_, body, _ := page(t, alice, "GET", e.url+"/ui/queue", nil)
		w1 := regexp.MustCompile(`data-job="dash-w1" data-namespace="` + apiNS + `" data-phase="Waiting" data-position="1" data-ahead="0" data-reason-code="no-room"`).MatchString(body)
		w3 := regexp.MustCompile(`data-job="dash-w3"[^>]*data-position="3" data-ahead="2" data-reason-code="no-room"`).MatchString(body)
		return w1 && w3 && strings.Contains(body, "4 GPUs needed, 0 free; first in line") && !strings.Contains(body, "dash-w2") &&
			!strings.Contains(body, "dash-hog") && strings.Contains(body, "1 waiting job of other users"), fmt.Errorf("%s", body)
	})
	// Filters.
	if _, body, _ := page(t, alice, "GET", e.url+"/ui/queue?phase=Running", nil); strings.Contains(body, "dash-w1") || !strings.Contains(body, "data-empty") {
		t.Errorf("phase filter Running still lists dash-w1")
	}
	if code, body, _ := page(t, alice, "GET", e.url+"/ui/queue?color=red", nil); code != 400 || !strings.Contains(body, `unknown filter &#34;color&#34;`) {
		t.Errorf("unknown filter: %d", code)
	}
	// Pages: a long queue or cluster comes a page at a time (pkg/ui's
	// tests); a page past the end is empty, a page that is no number a 400.
	if _, body, _ := page(t, alice, "GET", e.url+"/ui/queue?page=2", nil); strings.Contains(body, "dash-w1") || !strings.Contains(body, "data-empty") {
		t.Errorf("queue page 2 of 1 lists dash-w1")
	}
	for _, p := range []string{"/ui/queue?page=0", "/ui/queue?page=x", "/ui/cluster?page=-1"} {
		if code, body, _ := page(t, alice, "GET", e.url+p, nil); code != 400 || !strings.Contains(body, "want a page number from 1") {
			t.Errorf("%s: %d", p, code)
		}
	}
	if code, body, _ := page(t, alice, "GET", e.url+"/ui/cluster?color=red", nil); code != 400 || !strings.Contains(body, "the cluster page takes gpuType and page") {
		t.Errorf("cluster page, unknown parameter: %d", code)
	}
	if code, body, _ := page(t, alice, "GET", e.url+"/ui/cluster?gpuType="+testGPUType, nil); code != 200 || !strings.Contains(body, `data-gpu-type="`+testGPUType+`"`) || strings.Contains(body, `data-gpu-type="`+examplesType+`"`) {
		t.Errorf("cluster page of one GPU type: %d", code)
	}
	if _, body, _ := page(t, rootC, "GET", e.url+"/ui/queue?user=bob", nil); !strings.Contains(body, `data-job="dash-w2"`) || strings.Contains(body, `data-job="dash-w1"`) {
		t.Errorf("admin's user filter:\n%s", body)
	}
	// The cluster grid: bob's job holds every GPU; alice sees whose it is
	// not, root does.
	_, body, _ := page(t, alice, "GET", e.url+"/ui/cluster", nil)
	if n := strings.Count(body, `data-kind="hidden"`); n != 8 || strings.Contains(body, "dash-hog") || strings.Contains(body, "data-settings-form") {
		t.Errorf("alice's grid: %d hidden GPUs, want 8, and no job names or settings form", n)
	}
	_, body, _ = page(t, rootC, "GET", e.url+"/ui/cluster", nil)
	if n := strings.Count(body, `data-job="dash-hog"`); n != 8 || !strings.Contains(body, `data-settings-form="`+testGPUType+`"`) {
		t.Errorf("root's grid: %d GPUs of dash-hog, want 8, and the settings form", n)
	}
	// Job pages: one's own, not another's.
	if code, body, _ := page(t, alice, "GET", e.url+"/ui/jobs/dash-w1", nil); code != 200 || !strings.Contains(body, `data-position="1"`) || !strings.Contains(body, "<svg") {
		t.Errorf("alice's job page: %d", code)
	}
	for _, p := range []string{"/ui/jobs/dash-hog", "/ui/events?job=dash-hog"} {
		if code, body, _ := page(t, alice, "GET", e.url+p, nil); code != 403 || !strings.Contains(body, "belongs to another user") {
			t.Errorf("alice GET %s: %d", p, code)
		}
	}
	if code, _, _ := page(t, alice, "GET", e.url+"/ui/jobs/nosuch", nil); code != 404 {
		t.Errorf("missing job page: %d", code)
	}
	// A proxy's bearer header works without a session.
	if code, body, _ := page(t, anon, "GET", e.url+"/ui/queue", nil, "Authorization", "Bearer "+tokens["alice"]); code != 200 || !strings.Contains(body, "dash-w1") {
		t.Errorf("bearer header: %d", code)
	}

	// Changing a scheduler: admins only, with the session's CSRF token.
	settings := func() string {
		cm := &corev1.ConfigMap{}
		if err := e.k8s.Get(ctx, types.NamespacedName{Namespace: apiNS, Name: kube.ConfigMapName}, cm); err != nil {
			return ""
		}
		return cm.Data[testGPUType]
	}
	before := settings()
	for _, c := range []struct {
		who  *http.Client
		csrf string
		want int
	}{{alice, aliceCSRF, 403}, {rootC, "", 403}, {rootC, aliceCSRF, 403}} {
		if code, _, _ := page(t, c.who, "POST", e.url+"/ui/schedulers/"+testGPUType, url.Values{"algorithm": {"SRJF"}, "csrf": {c.csrf}}); code != c.want {
			t.Errorf("scheduler change: %d, want %d", code, c.want)
		}
	}
	if code, body, _ := page(t, rootC, "POST", e.url+"/ui/schedulers/"+testGPUType, url.Values{"algorithm": {"NoSuchPolicy"}, "csrf": {rootCSRF}}); code != 400 || !strings.Contains(body, "NoSuchPolicy") {
		t.Errorf("unknown policy: %d", code)
	}
	if code, _, _ := page(t, rootC, "POST", e.url+"/ui/schedulers/no-such-type", url.Values{"algorithm": {"SRJF"}, "csrf": {rootCSRF}}); code != 404 {
		t.Errorf("unknown GPU type: %d", code)
	}
	if code, body, _ := page(t, rootC, "POST", e.url+"/ui/schedulers/"+testGPUType, url.Values{"algorithm": {"SRJF"}, "policyParams": {"hesrpt.exponent=0.5 hesrpt.speed=2"}, "csrf": {rootCSRF}}); code != 400 || !strings.Contains(body, "hesrpt.speed") {
		t.Errorf("unknown parameter: %d", code)
	}
	if got := settings(); got != before {
		t.Fatalf("refused changes changed the settings: %q → %q", before, got)
	}
	if code, _, h := page(t, rootC, "POST", e.url+"/ui/schedulers/"+testGPUType, url.Values{"algorithm": {"srjf"}, "rateLimit": {"400ms"},
		"policyParams": {" hesrpt.exponent=0.5   hesrpt.aging=12h "}, "csrf": {rootCSRF}}); code != 303 || h.Get("Location") != "../cluster" {
		t.Errorf("admin's change: %d to %q", code, h.Get("Location"))
	}
	if got := settings(); !strings.Contains(got, "srjf") || !strings.Contains(got, "400ms") || !strings.Contains(got, "- hesrpt.exponent=0.5\n- hesrpt.aging=12h") {
		t.Errorf("settings after the change: %q", got)
	}
	_, body, _ = page(t, rootC, "GET", e.url+"/ui/cluster", nil)
	if !regexp.MustCompile(`data-gpu-type="` + testGPUType + `"[\s\S]*?<span data-algorithm>SRJF</span>`).MatchString(body) {
		t.Errorf("the cluster page does not show SRJF")
	}
	if !strings.Contains(body, `name="policyParams" value="hesrpt.exponent=0.5 hesrpt.aging=12h"`) {
		t.Errorf("the settings form does not hold the type's parameters")
	}
	// Left out of the form, the parameters stay; an empty field removes them.
	if code, _, _ := page(t, rootC, "POST", e.url+"/ui/schedulers/"+testGPUType, url.Values{"rateLimit": {"300ms"}, "csrf": {rootCSRF}}); code != 303 || !strings.Contains(settings(), "hesrpt.aging=12h") {
		t.Errorf("a change without the parameters field: %d, settings %q", code, settings())
	}
	if code, _, _ := page(t, rootC, "POST", e.url+"/ui/schedulers/"+testGPUType, url.Values{"policyParams": {""}, "csrf": {rootCSRF}}); code != 303 || strings.Contains(settings(), "policyParams") {
		t.Errorf("an empty parameters field: %d, settings %q", code, settings())
	}

	// The event stream: it opens, and says when a job changes.
	req, _ := http.NewRequest("GET", e.url+"/ui/events", nil)
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req = req.WithContext(sctx)
	resp, err := alice.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if l := <-lines; l != "retry: 2000" {
		t.Errorf("first line %q", l)
	}
	time.Sleep(2 * time.Second) // the watcher's first look
	if code, msg := e.call(t, "DELETE", "/api/v1/jobs/dash-hog", "bob", "", ""); code != 200 {
		t.Fatalf("delete dash-hog: %d %s", code, msg)
	}
	got := false
	for !got {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			got = l == "event: change"
		case <-time.After(20 * time.Second):
			t.Fatal("no change event within 20 s of a deletion")
		}
	}
	cancel()

	// Logging out needs the CSRF token, and ends the session.
	if code, _, _ := page(t, alice, "POST", e.url+"/ui/logout", url.Values{}); code != 403 {
		t.Errorf("logout without CSRF: %d", code)
	}
	if code, _, _ := page(t, alice, "POST", e.url+"/ui/logout", url.Values{"csrf": {aliceCSRF}}); code != 303 {
		t.Errorf("logout: %d", code)
	}
	if code, _, _ := page(t, alice, "GET", e.url+"/ui/queue", nil); code != 401 {
		t.Errorf("after logout: %d", code)
	}
	if err := e.k8s.DeleteAllOf(ctx, &v1alpha1.TrainingJob{}, ctrlclient.InNamespace(apiNS)); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "no jobs left", func() (bool, error) { return len(e.jobs(t)) == 0, nil })
	// The requests are counted by page.
	// (The event stream counts once the server has seen it closed.)
	eventually(t, 30*time.Second, "the dashboard's requests counted by page", func() (bool, error) {
		_, metrics := e.call(t, "GET", "/metrics", "root", "", "")
		for _, series := range []string{`voda_ui_requests_total{code="401",page="cluster"}`, `voda_ui_requests_total{code="403",page="schedulers"}`,
			`voda_ui_requests_total{code="200",page="events"}`, `voda_ui_requests_total{code="303",page="login"}`} {
			if seriesValue(metrics, series) < 1 {
				return false, fmt.Errorf("%s not counted", series)
			}
		}
		return true, nil
	})
}

// testDashboardTLS checks a session over HTTPS with a service account's
// token: the cookie is Secure and ends no later than the token.
func testDashboardTLS(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	tr, err := e.env.Client.CoreV1().ServiceAccounts(apiNS).CreateToken(ctx, "ci-bot", &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(900))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := tlsClient(t, e)
	code, _, h := page(t, c, "POST", e.tlsURL+"/ui/login", url.Values{"token": {tr.Status.Token}})
	ck := (&http.Response{Header: h}).Cookies()
	if code != 303 || len(ck) != 1 || !ck[0].Secure || !ck[0].HttpOnly {
		t.Fatalf("login over TLS: %d %+v", code, ck)
	}
	if left := time.Until(tr.Status.ExpirationTimestamp.Time); ck[0].MaxAge > int(left/time.Second)+2 || ck[0].MaxAge < 600 {
		t.Errorf("session of %d s for a token valid %s more", ck[0].MaxAge, left)
	}
	if code, body, _ := page(t, c, "GET", e.tlsURL+"/ui/cluster", nil); code != 200 || !strings.Contains(body, `data-user="system:serviceaccount:`+apiNS+`:ci-bot"`) {
		t.Errorf("cluster over TLS: %d", code)
	}
}

// tlsClient is a session client that trusts the TLS server's certificate.
func tlsClient(t *testing.T, e *apiEnv) *http.Client {
	pem, err := os.ReadFile(e.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := browserSession(t)
	c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return c
}

// testGPUTypes submits a job of two GPU types through the REST API: it runs
// on one of them, and the CLI and the dashboard show which and the other.
func testGPUTypes(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	body := strings.Replace(tj("twotypes"), "gpuType: api-gpu", "gpuTypes: [api-gpu, "+examplesType+"]\n  gpuTypeSpeeds: {"+examplesType+": \"2\"}", 1)
	if code, msg := e.call(t, "POST", "/api/v1/jobs", "alice", "application/yaml", body); code != 201 {
		t.Fatalf("create: %d %s", code, msg)
	}
	alice := e.client(t, "alice")
	var on string
	eventually(t, time.Minute, "twotypes runs on one of its types", func() (bool, error) {
		j, err := alice.GetJob(ctx, "twotypes")
		if err != nil {
			return false, err
		}
		on = j.Status.GPUType
		return j.Status.Phase == v1alpha1.PhaseRunning && (on == testGPUType || on == examplesType), fmt.Errorf("%s on %q", j.Status.Phase, on)
	})
	other := testGPUType
	if on == testGPUType {
		other = examplesType
	}
	if code, out := e.voda(t, "alice", "get", "jobs"); code != 0 || !strings.Contains(out, on+" (or "+other+")") {
		t.Errorf("get jobs does not show %s (or %s):\n%s", on, other, out)
	}
	if code, out := e.voda(t, "alice", "describe", "job", "twotypes"); code != 0 || !regexpMatch(`Accepted types: +`+testGPUType+`, `+examplesType+` \(in order of preference\)`, out) ||
		!regexpMatch(`Speeds: +`+examplesType+`=2`, out) {
		t.Errorf("describe:\n%s", out)
	}
	c := browserSession(t)
	login(t, c, e.url, "alice")
	if _, page, _ := page(t, c, "GET", e.url+"/ui/queue", nil); !strings.Contains(page, `data-alternatives>or `+other) {
		t.Errorf("the queue page does not show the alternative %s", other)
	}
	if code, msg := e.call(t, "DELETE", "/api/v1/jobs/twotypes", "alice", "", ""); code != 200 {
		t.Fatalf("delete: %d %s", code, msg)
	}
}

// testPagesFromCache: the server with the controller's caches (the TLS
// one) draws the cluster page and a job's page without reading the job or
// the settings ConfigMap from the API server; a job it does not yet hold
// in its cache is read from the API server, and so are the settings for
// a while after a change, so the page a change leads to shows it.
func testPagesFromCache(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	token, _ := e.serviceAccount(t, "pager")
	c := tlsClient(t, e)
	if code, _, _ := page(t, c, "POST", e.tlsURL+"/ui/login", url.Values{"token": {token}}); code != 303 {
		t.Fatalf("login over TLS: %d", code)
	}
	const jobs, configMaps = "*v1alpha1.TrainingJob", "*v1.ConfigMap"
	// Created and opened at once: read from the API server.
	if code, msg := e.call(t, "POST", "/api/v1/jobs", "root", "application/yaml", tj("paged")); code != 201 {
		t.Fatalf("create: %d %s", code, msg)
	}
	t.Cleanup(func() { e.call(t, "DELETE", "/api/v1/jobs/paged", "root", "", "") })
	if code, body, _ := page(t, c, "GET", e.tlsURL+"/ui/jobs/paged", nil); code != 200 || !strings.Contains(body, "paged") {
		t.Fatalf("the page of a job just created: %d", code)
	}
	// Once the cache has it, the page reads only the cache.
	eventually(t, time.Minute, "the page of paged is drawn from the cache", func() (bool, error) {
		before := e.tlsDirect.of(jobs)
		code, _, _ := page(t, c, "GET", e.tlsURL+"/ui/jobs/paged", nil)
		return code == 200 && e.tlsDirect.of(jobs) == before, fmt.Errorf("%d, %d reads of the job from the API server", code, e.tlsDirect.of(jobs)-before)
	})
	// Once 30 s have passed since this server last wrote the settings
	// (earlier tests did), the cluster page reads them from the cache.
	var body string
	eventually(t, time.Minute, "the cluster page is drawn from the cache", func() (bool, error) {
		before := e.tlsDirect.of(configMaps)
		var code int
		code, body, _ = page(t, c, "GET", e.tlsURL+"/ui/cluster", nil)
		return code == 200 && e.tlsDirect.of(configMaps) == before, fmt.Errorf("%d, %d reads of the settings from the API server", code, e.tlsDirect.of(configMaps)-before)
	})
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token on the cluster page")
	}
	// A change shows on the page it leads to: read from the API server.
	key := types.NamespacedName{Namespace: apiNS, Name: kube.ConfigMapName}
	var was corev1.ConfigMap
	err := e.k8s.Get(ctx, key, &was)
	existed := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cm corev1.ConfigMap
			if err := e.k8s.Get(ctx, key, &cm); err != nil {
				return err
			}
			if !existed {
				return e.k8s.Delete(ctx, &cm)
			}
			cm.Data = was.Data
			return e.k8s.Update(ctx, &cm)
		})
		if err != nil {
			t.Errorf("restore the settings: %v", err)
		}
	})
	for _, algo := range []string{"SRJF", "ElasticFIFO"} {
		if code, _, _ := page(t, c, "POST", e.tlsURL+"/ui/schedulers/"+testGPUType, url.Values{"algorithm": {algo}, "csrf": {m[1]}}); code != 303 {
			t.Fatalf("set %s: %d", algo, code)
		}
		before := e.tlsDirect.of(configMaps)
		_, body, _ = page(t, c, "GET", e.tlsURL+"/ui/cluster", nil)
		if !regexp.MustCompile(`data-gpu-type="` + testGPUType + `"[\s\S]*?<span data-algorithm>` + algo + `</span>`).MatchString(body) {
			t.Errorf("the cluster page right after setting %s does not show it", algo)
		}
		if e.tlsDirect.of(configMaps) == before {
			t.Errorf("the cluster page right after setting %s read the settings from the cache", algo)
		}
	}
}
