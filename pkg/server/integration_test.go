package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vodascheduler/voda/internal/cli"
	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/client"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
	"github.com/vodascheduler/voda/pkg/metrics"
	"github.com/vodascheduler/voda/pkg/progress"
	"github.com/vodascheduler/voda/pkg/server"
)

const (
	apiNS        = "voda-api"
	examplesType = "nvidia-tesla-v100" // the GPU type of examples/
)

// The users of the static token file.
var tokens = map[string]string{"alice": "alice-token", "bob": "bob-token", "root": "root-token"}

const tokenFile = `alice-token,alice,1
bob-token,bob,2
root-token,root,3,"voda:admins"
`

// apiEnv is a control plane with the controller and two API servers: one
// with static tokens over HTTP, one with TokenReview over HTTPS.
type apiEnv struct {
	env        *testenv.Env
	k8s        ctrlclient.Client
	ctrl       *kube.Controller
	url        string // static tokens
	tlsURL     string // TokenReview, HTTPS
	caFile     string
	registry   *prometheus.Registry
	tlsRegistr *prometheus.Registry
	metricsDir string // the controller's --metrics-dir
	// tlsDirect counts the TLS server's reads of one object from the API
	// server, by kind.
	tlsDirect *directReads
}

// directReads counts a client's Gets by the kind of object read.
type directReads struct {
	mu     sync.Mutex
	byKind map[string]int
}

func (d *directReads) of(kind string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.byKind[kind]
}

// counting wraps c so that d counts its Gets.
func (d *directReads) counting(c ctrlclient.WithWatch) ctrlclient.Client {
	return interceptor.NewClient(c, interceptor.Funcs{Get: func(ctx context.Context, c ctrlclient.WithWatch, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
		d.mu.Lock()
		d.byKind[fmt.Sprintf("%T", obj)]++
		d.mu.Unlock()
		return c.Get(ctx, key, obj, opts...)
	}})
}

// tlsClock is the clock of the TokenReview server: stopped at the time the
// tests start, not at a fixed date, since sessions end at the earlier of
// its 12 hours and the token's real expiry (a date in the past made every
// session end at once).
var tlsClock = time.Now().UTC().Truncate(time.Second)

// TestIntegrationAPI runs the REST API and the CLI against a real control
// plane with the controller running.
func TestIntegrationAPI(t *testing.T) {
	e := startAPIEnv(t)
	t.Run("Public", func(t *testing.T) { testPublic(t, e) })
	t.Run("Unauthenticated", func(t *testing.T) { testUnauthenticated(t, e) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, e) })
	t.Run("Progress", func(t *testing.T) { testProgress(t, e) })
	t.Run("MetricsDir", func(t *testing.T) { testMetricsDir(t, e) })
	t.Run("CategoryHistory", func(t *testing.T) { testCategoryHistory(t, e) })
	t.Run("Lifecycle", func(t *testing.T) { testLifecycle(t, e) })
	t.Run("SchedulerMetrics", func(t *testing.T) { testSchedulerMetrics(t, e) })
	t.Run("Examples", func(t *testing.T) { testExamples(t, e) })
	t.Run("Schedulers", func(t *testing.T) { testSchedulers(t, e) })
	t.Run("TokenReview", func(t *testing.T) { testTokenReview(t, e) })
	t.Run("Dashboard", func(t *testing.T) { testDashboard(t, e) })
	t.Run("DashboardTLS", func(t *testing.T) { testDashboardTLS(t, e) })
	t.Run("DashboardBrowser", func(t *testing.T) { testDashboardBrowser(t, e) })
	t.Run("GPUTypes", func(t *testing.T) { testGPUTypes(t, e) })
	t.Run("Queues", func(t *testing.T) { testQueues(t, e) })
	t.Run("ListPages", func(t *testing.T) { testListPages(t, e) })
	t.Run("ListFromCache", func(t *testing.T) { testListFromCache(t, e) })
	t.Run("PagesFromCache", func(t *testing.T) { testPagesFromCache(t, e) })
	t.Run("Outage", func(t *testing.T) { testOutage(t, e) })
	// Last: every status code answered above must be documented.
	t.Run("StatusCodesDocumented", func(t *testing.T) {
		testCodesDocumented(t, e.registry)
		testCodesDocumented(t, e.tlsRegistr)
	})
}

func startAPIEnv(t *testing.T) *apiEnv {
	env := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	if err := env.CreateNamespace(ctx, apiNS); err != nil {
		t.Fatal(err)
	}
	_, err := env.CreateGPUNodes(ctx,
		testenv.NodeSpec{GPUType: testGPUType, Count: 2, GPUs: 4},
		testenv.NodeSpec{GPUType: examplesType, Count: 1, GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := ctrlclient.New(env.Config, ctrlclient.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// The controller and the API servers act as the Helm chart's
	// ServiceAccount, released in apiNS: its rules must be enough.
	saCfg, err := env.ChartIdentity(ctx, apiNS)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := ctrlclient.New(saCfg, ctrlclient.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	registry := prometheus.NewRegistry()
	m, err := metrics.New(registry, "test")
	if err != nil {
		t.Fatal(err)
	}
	// The static-token server's address is chosen first: the controller
	// tells the jobs' pods where to report progress.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiAddr := ln.Addr().String()
	ln.Close()
	metricsDir := t.TempDir()
	// A policy parameter as --policy-param sets it; testSchedulers looks
	// for it where the policy reads it.
	params, err := algorithm.ParseParams(algorithm.DefaultConfig(), []string{"tiresias.thresholds=2h"})
	if err != nil {
		t.Fatal(err)
	}
	mgr, ctrl, err := kube.NewManager(saCfg, kube.ManagerOptions{
		Options: kube.Options{
			Metrics:  m,
			Policy:   kube.OriginalPolicy, // the tests below expect ElasticFIFO's sizes
			GPUTypes: []string{testGPUType, examplesType}, RateLimit: 300 * time.Millisecond,
			SyncPeriod: 2 * time.Second, ConfigNamespace: apiNS, Log: funcr.New(func(string, string) {}, funcr.Options{}),
			ProgressURL: "http://" + apiAddr,
			MetricsDir:  metricsDir, MetricsScan: 300 * time.Millisecond,
			Algorithm: params,
		},
		Namespace: apiNS, MetricsAddr: "0", HealthAddr: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &apiEnv{env: env, k8s: k8s, ctrl: ctrl, registry: registry, tlsRegistr: prometheus.NewRegistry(), metricsDir: metricsDir,
		tlsDirect: &directReads{byKind: map[string]int{}}}

	static, err := server.ParseTokens(strings.NewReader(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	opts := server.Options{
		Namespace: apiNS, DefaultAlgorithm: "elasticfifo", DefaultRateLimit: 300 * time.Millisecond, Algorithm: params,
		Registerer: e.registry, Gatherer: e.registry, Version: "test", UI: true,
	}
	s, err := server.New(sa, static, opts)
	if err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 2)
	ready := func(scheme string) func(net.Addr) {
		return func(a net.Addr) { addr <- scheme + "://" + a.String() }
	}
	if err := mgr.Add(&server.Listener{Addr: apiAddr, Handler: s.Handler(), Ready: ready("http")}); err != nil {
		t.Fatal(err)
	}
	// The second server trusts the API server's TokenReview and makes the
	// service accounts of the namespace admins.
	opts.Registerer, opts.Gatherer = e.tlsRegistr, e.tlsRegistr
	opts.AdminGroups = []string{"system:serviceaccounts:" + apiNS}
	// A stopped clock: every MPIJob file submitted here gets the same
	// generated name (testTokenReview checks the suffixes).
	opts.Now = func() time.Time { return tlsClock }
	// It reads the whole cluster from the controller's caches, as
	// voda controller's API does; the first server reads the API server.
	opts.Cache, opts.OtherGPUs, opts.Events = mgr.GetCache(), ctrl.OtherGPUsByNode, mgr.GetCache()
	if err := kube.IndexJobEvents(context.Background(), mgr); err != nil {
		t.Fatal(err)
	}
	saw, err := ctrlclient.NewWithWatch(saCfg, ctrlclient.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	trs, err := server.New(e.tlsDirect.counting(saw), server.TokenReview{Client: sa}, opts)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, ca := selfSignedCert(t)
	e.caFile = ca
	if err := mgr.Add(&server.Listener{Addr: "127.0.0.1:0", CertFile: cert, KeyFile: key, Handler: trs.Handler(), Ready: ready("https")}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	for range 2 {
		select {
		case u := <-addr:
			if strings.HasPrefix(u, "https:") {
				e.tlsURL = u
			} else {
				e.url = u
			}
		case err := <-done:
			t.Fatalf("manager: %v", err)
		case <-time.After(time.Minute):
			t.Fatal("the API servers did not start")
		}
	}
	if e.url == "" || e.tlsURL == "" {
		t.Fatalf("servers at %q and %q", e.url, e.tlsURL)
	}
	return e
}

// selfSignedCert writes a certificate for 127.0.0.1 and returns the
// certificate, key and CA (the certificate itself) files.
func selfSignedCert(t *testing.T) (cert, key, ca string) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "voda-api"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key, cert
}

// testOutage stops the Kubernetes API server for a while: the API answers
// 503 with a JSON error, promptly, and creates nothing; once the API
// server is back, it answers again.
func testOutage(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	const down = 15 * time.Second
	outage := make(chan error, 1)
	stopped := time.Now()
	go func() { outage <- e.env.Outage(ctx, "kube-apiserver", down) }()
	time.Sleep(3 * time.Second) // stopping takes up to a moment
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/jobs", ""},
		{"GET", "/api/v1/jobs/life", ""},
		{"POST", "/api/v1/jobs", tj("during-outage")},
		{"GET", "/api/v1/schedulers", ""},
	} {
		start := time.Now()
		code, msg := e.call(t, c.method, c.path, "root", "application/yaml", c.body)
		took := time.Since(start)
		if code != http.StatusServiceUnavailable || !strings.Contains(msg, "cannot be reached") {
			t.Errorf("%s %s during the outage: %d %q, want 503 saying the API server cannot be reached", c.method, c.path, code, msg)
		}
		if took > 21*time.Second {
			t.Errorf("%s %s took %s during the outage", c.method, c.path, took)
		}
		t.Logf("%s %s during the outage: %d in %s", c.method, c.path, code, took.Round(time.Millisecond))
	}
	if err := <-outage; err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	err := testenv.PollUntil(ctx, 60*time.Second, "the API answering again", func(ctx context.Context) (bool, error) {
		code, _ := e.call(t, "GET", "/api/v1/jobs", "root", "", "")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("API server down %s (stopped at +0, ready at +%s); the REST API answered 200 %s after it was ready",
		down, back.Sub(stopped).Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	if slices.Contains(e.jobs(t), "during-outage") {
		t.Error("a job submitted during the outage exists")
	}
}

// call sends a raw request as user ("" for none) and returns the status and
// the error message, if any.
func (e *apiEnv) call(t *testing.T, method, path, user, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+tokens[user])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		var re rest.Error
		if err := json.Unmarshal(data, &re); err != nil {
			t.Errorf("%s %s: status %d with a body that is not a JSON error: %q", method, path, resp.StatusCode, data)
		}
		return resp.StatusCode, re.Error
	}
	return resp.StatusCode, string(data)
}

// client returns an API client acting as user.
func (e *apiEnv) client(t *testing.T, user string) *client.Client {
	c, err := client.New(client.Config{Server: e.url, Token: tokens[user]})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// jobs lists the TrainingJobs in the API's namespace, straight from the API
// server.
func (e *apiEnv) jobs(t *testing.T) []string {
	t.Helper()
	var l v1alpha1.TrainingJobList
	if err := e.k8s.List(context.Background(), &l, ctrlclient.InNamespace(apiNS)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tj := range l.Items {
		names = append(names, tj.Name)
	}
	return names
}

// voda runs the CLI as user and returns its exit code and output.
func (e *apiEnv) voda(t *testing.T, user string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	args = append(args, "--server", e.url, "--token", tokens[user])
	// No config file of the machine's user may interfere.
	t.Setenv("VODA_CONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	code := cli.Main(args, &out, &out)
	return code, out.String()
}

// eventually polls cond until it holds or the time is up.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last error: %v)", what, within, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func testPublic(t *testing.T, e *apiEnv) {
	for _, p := range []string{"/healthz", "/readyz", "/api/v1/version", "/api/v1/openapi.json"} {
		if code, body := e.call(t, "GET", p, "", "", ""); code != 200 {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
	// The metrics name every user's jobs: admins only.
	for user, want := range map[string]int{"": 401, "alice": 403, "root": 200} {
		if code, body := e.call(t, "GET", "/metrics", user, "", ""); code != want {
			t.Errorf("GET /metrics as %q: %d %.200s, want %d", user, code, body, want)
		}
	}
	_, body := e.call(t, "GET", "/api/v1/openapi.json", "", "", "")
	if !bytes.Equal([]byte(body), server.OpenAPI) {
		t.Error("/api/v1/openapi.json is not the embedded document")
	}
	if code, msg := e.call(t, "GET", "/api/v2/jobs", "alice", "", ""); code != 404 || !strings.Contains(msg, "no such API path") {
		t.Errorf("unknown path: %d %q", code, msg)
	}
	if code, msg := e.call(t, "PATCH", "/api/v1/jobs", "alice", "", ""); code != 405 || !strings.Contains(msg, "use POST or GET") {
		t.Errorf("wrong method: %d %q", code, msg)
	}
}

func testUnauthenticated(t *testing.T, e *apiEnv) {
	cases := []struct{ name, header string }{
		{"no header", ""},
		{"not bearer", "Basic YWxpY2U6eA=="},
		{"empty bearer", "Bearer "},
		{"unknown token", "Bearer guess"},
	}
	for _, c := range cases {
		for _, op := range []struct{ method, path, body string }{
			{"GET", "/api/v1/jobs", ""}, {"POST", "/api/v1/jobs", tj("sneaky")},
			{"DELETE", "/api/v1/jobs/x", ""}, {"PUT", "/api/v1/schedulers/" + testGPUType, `{"algorithm":"FIFO"}`},
		} {
			req, _ := http.NewRequest(op.method, e.url+op.path, strings.NewReader(op.body))
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: %s %s: status %d, want 401 with WWW-Authenticate", c.name, op.method, op.path, resp.StatusCode)
			}
		}
	}
	if names := e.jobs(t); len(names) != 0 {
		t.Errorf("jobs created without a token: %v", names)
	}
}

func testBadInput(t *testing.T, e *apiEnv) {
	for _, c := range badInputs() {
		code, msg := e.call(t, "POST", "/api/v1/jobs", "alice", c.contentType, c.body)
		if code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, code, msg, c.code, c.want)
		}
	}
	if names := e.jobs(t); len(names) != 0 {
		t.Fatalf("bad input created jobs: %v", names)
	}
	// A name taken is a conflict, and the first job stays as it was.
	if code, msg := e.call(t, "POST", "/api/v1/jobs", "alice", "application/yaml", tj("taken")); code != 201 {
		t.Fatalf("create: %d %s", code, msg)
	}
	code, msg := e.call(t, "POST", "/api/v1/jobs", "bob", "application/yaml", tj("taken", "maxWorkers: 4", "maxWorkers: 3"))
	if code != 409 || !strings.Contains(msg, "already exists") {
		t.Errorf("duplicate name: %d %q", code, msg)
	}
	var got v1alpha1.TrainingJob
	if err := e.k8s.Get(context.Background(), types.NamespacedName{Namespace: apiNS, Name: "taken"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Submitter != "alice" || got.Spec.MaxWorkers != 4 {
		t.Errorf("the first job changed: submitter %q, max %d", got.Spec.Submitter, got.Spec.MaxWorkers)
	}
	// Bad names and filters in the path and query.
	for _, c := range []struct {
		method, path string
		code         int
		want         string
	}{
		{"GET", "/api/v1/jobs/Not_A_Name", 400, "is not a job name"},
		{"DELETE", "/api/v1/jobs/" + strings.Repeat("x", 70), 400, "is not a job name"},
		{"GET", "/api/v1/jobs/missing", 404, "job missing not found"},
		{"GET", "/api/v1/jobs?status=Sleeping", 400, "want one of Submitted, Waiting"},
		{"GET", "/api/v1/jobs?owner=bob", 400, `unknown query parameter "owner"`},
	} {
		if code, msg := e.call(t, c.method, c.path, "alice", "", ""); code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: %d %q, want %d saying %q", c.method, c.path, code, msg, c.code, c.want)
		}
	}
	if code, msg := e.voda(t, "alice", "delete", "taken"); code != 0 {
		t.Fatalf("delete: %d %s", code, msg)
	}
	// An admin may give a job rights in the namespace; a user may name the
	// default service account, which every pod there has anyway.
	body := tj("trusted", workerSpec, workerSpec+"          serviceAccountName: voda\n")
	if code, msg := e.call(t, "POST", "/api/v1/jobs", "root", "application/yaml", body); code != 201 {
		t.Errorf("admin's job with a service account: %d %s", code, msg)
	}
	body = tj("plain", workerSpec, workerSpec+"          serviceAccountName: default\n")
	if code, msg := e.call(t, "POST", "/api/v1/jobs", "alice", "application/yaml", body); code != 201 {
		t.Errorf("job naming the default service account: %d %s", code, msg)
	}
	for _, name := range []string{"trusted", "plain"} {
		if code, msg := e.voda(t, "root", "delete", name); code != 0 {
			t.Fatalf("delete %s: %d %s", name, code, msg)
		}
	}
}

// testLifecycle follows a job from the CLI: create, get, describe, the
// other users' view, delete.
func testLifecycle(t *testing.T, e *apiEnv) {
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte(tj("life")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := e.voda(t, "alice", "create", "-f", file)
	if code != 0 || !strings.Contains(out, "Training job created: life") {
		t.Fatalf("create: %d %s", code, out)
	}
	ctx := context.Background()
	alice := e.client(t, "alice")
	eventually(t, time.Minute, "life runs on 4 workers", func() (bool, error) {
		j, err := alice.GetJob(ctx, "life")
		return err == nil && j.Status.Phase == v1alpha1.PhaseRunning && j.Status.Workers == 4 && len(j.Status.Placement) == 4, err
	})

	code, out = e.voda(t, "alice", "get", "jobs")
	if code != 0 || !regexpMatch(`(?m)^NAME +STATUS +WORKERS +SCHEDULER +WAITING +RUNNING +TOTAL\nlife +Running +4 +api-gpu +\d+s +\d+s +\d+s$`, out) {
		t.Errorf("get jobs: %d\n%s", code, out)
	}
	code, out = e.voda(t, "root", "get", "jobs", "-o", "wide", "--status", "running")
	if code != 0 || !strings.Contains(out, "SUBMITTER") || !regexpMatch(`life +Running .* 1-4 +MPIJob +0 +alice +- +api-gpu-\d`, out) {
		t.Errorf("admin get jobs -o wide: %d\n%s", code, out)
	}
	code, out = e.voda(t, "alice", "get", "job", "life", "-o", "json")
	var got v1alpha1.TrainingJob
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Name != "life" {
		t.Errorf("get job -o json: %d\n%s", code, out)
	}
	code, out = e.voda(t, "alice", "describe", "job", "life")
	for _, want := range []string{"Name: +life", "Submitter: +alice", "Worker range: +min 1, max 4, requested 2", "Status: +Running", "Placement: +0→api-gpu-", "Events:", "Normal +Started"} {
		if !regexpMatch(want, out) {
			t.Errorf("describe does not match %q:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Errorf("describe: exit %d", code)
	}

	// Bob sees none of it, and may not delete it.
	if code, out = e.voda(t, "bob", "get", "jobs"); code != 0 || !strings.Contains(out, "No training jobs.") {
		t.Errorf("bob's get jobs: %d %s", code, out)
	}
	if code, out = e.voda(t, "bob", "get", "jobs", "--user", "alice"); code != 1 || !strings.Contains(out, "may list only your own jobs") {
		t.Errorf("bob lists alice's jobs: %d %s", code, out)
	}
	for _, args := range [][]string{{"describe", "job", "life"}, {"delete", "life"}, {"get", "job", "life"}} {
		if code, out = e.voda(t, "bob", args...); code != 1 || !strings.Contains(out, "belongs to another user") {
			t.Errorf("bob %v: %d %s", args, code, out)
		}
	}

	// Deleting several names deletes each, reports the missing one, and the
	// MPIJob goes with the job.
	if code, _ := e.call(t, "POST", "/api/v1/jobs", "alice", "application/yaml", tj("life2")); code != 201 {
		t.Fatalf("create life2: %d", code)
	}
	code, out = e.voda(t, "alice", "delete", "life", "nosuchjob", "life2")
	if code != 1 || !strings.Contains(out, "Training job deleted: life\n") || !strings.Contains(out, "Training job deleted: life2\n") ||
		!strings.Contains(out, "nosuchjob: job nosuchjob not found") {
		t.Errorf("delete: %d\n%s", code, out)
	}
	eventually(t, time.Minute, "the jobs and their MPIJobs are gone", func() (bool, error) {
		return len(e.jobs(t)) == 0 && e.mpiJobs(t) == 0, nil
	})
}

// mpiJobs counts the MPIJobs in the API's namespace.
func (e *apiEnv) mpiJobs(t *testing.T) int {
	l, err := e.env.Dynamic.Resource(schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}).
		Namespace(apiNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// testExamples submits every job file of examples/ and checks what became
// of it.
func testExamples(t *testing.T, e *apiEnv) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	orig, err := filepath.Glob("../../examples/original/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pytorch, err := filepath.Glob("../../examples/pytorch/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 || len(orig) < 3 || len(pytorch) < 2 {
		t.Fatalf("examples: %v %v %v", files, orig, pytorch)
	}
	files = append(files, pytorch...)
	ctx := context.Background()
	alice := e.client(t, "alice")
	var created []string
	for _, f := range append(files, orig...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tj, err := alice.CreateJob(ctx, data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		base := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if strings.Contains(f, "original") && !regexpMatch(`^`+base+`-\d{8}-\d{6}$`, tj.Name) {
			t.Errorf("%s: named %s", f, tj.Name)
		}
		if tj.Spec.Submitter != "alice" || tj.Spec.GPUType != examplesType || tj.Spec.MinWorkers < 1 {
			t.Errorf("%s: submitter %q, GPU type %q, min %d", f, tj.Spec.Submitter, tj.Spec.GPUType, tj.Spec.MinWorkers)
		}
		if k, err := tj.Spec.WorkerGPUs(); strings.Contains(f, "pytorch") && (tj.Spec.Template.Runtime() != "PyTorchJob" || k != 2 || err != nil) {
			t.Errorf("%s: runtime %q, %d GPUs per worker (%v); want PyTorchJob, 2", f, tj.Spec.Template.Runtime(), k, err)
		}
		created = append(created, tj.Name)
	}
	eventually(t, time.Minute, "every example is admitted", func() (bool, error) {
		jobs, err := alice.ListJobs(ctx, client.JobFilter{GPUType: examplesType})
		n := 0
		for _, j := range jobs {
			switch j.Status.Phase {
			case v1alpha1.PhaseRunning, v1alpha1.PhaseStarting, v1alpha1.PhaseWaiting:
				n++
			}
		}
		return n == len(created), err
	})
	for _, name := range created {
		if err := alice.DeleteJob(ctx, name); err != nil {
			t.Error(err)
		}
	}
	eventually(t, time.Minute, "the examples are gone", func() (bool, error) { return len(e.jobs(t)) == 0, nil })
}

func testSchedulers(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	alice, root := e.client(t, "alice"), e.client(t, "root")
	scheds, err := alice.Schedulers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(scheds, func(s rest.Scheduler) bool { return s.GPUType == testGPUType })
	if i < 0 || scheds[i].Algorithm != "ElasticFIFO" || scheds[i].GPUs != 8 || scheds[i].Nodes != 2 || scheds[i].RateLimit != "300ms" || len(scheds[i].Parameters) != 0 {
		t.Fatalf("schedulers: %+v", scheds)
	}
	code, out := e.voda(t, "alice", "get", "schedulers")
	if code != 0 || !regexpMatch(`(?m)^api-gpu +ElasticFIFO +300ms +2 +8 +0 +0 `, out) {
		t.Errorf("get schedulers: %d\n%s", code, out)
	}

	// A pod that is not Voda's, holding 3 GPUs of a node (bound by hand,
	// as another scheduler would), shows as other GPUs until it finishes.
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "notebook"},
		Spec: corev1.PodSpec{NodeName: testGPUType + "-0", Containers: []corev1.Container{{
			Name: "notebook", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("3")}},
		}}},
	}
	if err := e.k8s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	otherGPUs := func() int {
		t.Helper()
		scheds, err := alice.Schedulers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(scheds, func(s rest.Scheduler) bool { return s.GPUType == testGPUType })
		return scheds[i].OtherGPUs
	}
	if got := otherGPUs(); got != 3 {
		t.Errorf("other GPUs with a 3-GPU pod on a node: %d, want 3", got)
	}
	if code, out := e.voda(t, "alice", "get", "schedulers"); code != 0 || !regexpMatch(`(?m)^api-gpu +ElasticFIFO +300ms +2 +8 +0 +3 `, out) {
		t.Errorf("get schedulers with a 3-GPU pod on a node: %d\n%s", code, out)
	}
	if err := e.k8s.Delete(ctx, other, ctrlclient.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the other pod is gone from the count", func() (bool, error) { return otherGPUs() == 0, nil })

	// Refused changes change nothing: no ConfigMap appears.
	for _, c := range []struct {
		user, gpuType, body string
		code                int
		want                string
	}{
		{"alice", testGPUType, `{"algorithm":"FIFO"}`, 403, "may not change schedulers"},
		{"root", testGPUType, `{"algorithm":"Fastest"}`, 400, "valid policies are FIFO"},
		{"root", testGPUType, `{"rateLimit":"soon"}`, 400, `rateLimit "soon"`},
		{"root", testGPUType, `{"rateLimit":"-1s"}`, 400, `rateLimit "-1s"`},
		{"root", testGPUType, `{}`, 400, "nothing to change"},
		{"root", testGPUType, `{"algorithm":"FIFO","extra":1}`, 400, `unknown field "extra"`},
		{"root", testGPUType, `{"algorithm":"FIFO"}{}`, 400, "more than one JSON value"},
		{"root", testGPUType, `{"algorithm":"FIFO","algorithm":"Tiresias"}`, 400, `"algorithm" is given twice`},
		{"root", testGPUType, `[1]`, 400, "not a scheduler update"},
		{"root", "nvidia-h100", `{"algorithm":"FIFO"}`, 404, "no node or job has GPU type"},
		{"root", "bad%20type", `{"algorithm":"FIFO"}`, 400, "is not a GPU type"},
		{"root", testGPUType, `{"policyParams":["hesrpt.exponent=-1"]}`, 400, "policy parameter hesrpt.exponent=-1: want 0 or more"},
		{"root", testGPUType, `{"policyParams":["hesrpt.speed=2"]}`, 400, `unknown policy parameter "hesrpt.speed"`},
		{"root", testGPUType, `{"algorithm":"tiresias","policyParams":["tiresias.thresholds=10,5"]}`, 400, "tiresias thresholds must increase"},
		{"root", testGPUType, `{"policyParams":"hesrpt.exponent=1"}`, 400, "not a scheduler update"},
	} {
		code, msg := e.call(t, "PUT", "/api/v1/schedulers/"+c.gpuType, c.user, "application/json", c.body)
		if code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("PUT %s as %s: %d %q, want %d saying %q", c.body, c.user, code, msg, c.code, c.want)
		}
	}
	var cm corev1.ConfigMap
	if err := e.k8s.Get(ctx, types.NamespacedName{Namespace: apiNS, Name: kube.ConfigMapName}, &cm); err == nil {
		t.Errorf("refused changes wrote the ConfigMap: %v", cm.Data)
	}
	code, out = e.voda(t, "root", "set", "scheduler", testGPUType, "--algorithm", "Fastest")
	if code != 2 || !strings.Contains(out, "valid policies are") {
		t.Errorf("set scheduler with an unknown algorithm: %d %s", code, out)
	}
	code, out = e.voda(t, "root", "set", "scheduler", testGPUType, "--policy-param", "hesrpt.speed=2")
	if code != 2 || !strings.Contains(out, `unknown policy parameter "hesrpt.speed"`) {
		t.Errorf("set scheduler with an unknown parameter: %d %s", code, out)
	}

	// A change reaches the controller's engine, and keeps what it leaves out.
	code, out = e.voda(t, "root", "set", "scheduler", testGPUType, "--algorithm", "tiresias", "--rate-limit", "1s")
	if code != 0 || !strings.Contains(out, "Scheduler api-gpu: algorithm Tiresias, rate limit 1s") {
		t.Fatalf("set scheduler: %d %s", code, out)
	}
	// Tiresias reads the controller's threshold, and the schedulers say so.
	eventually(t, 30*time.Second, "the schedulers show Tiresias's parameter", func() (bool, error) {
		scheds, err := alice.Schedulers(ctx)
		i := slices.IndexFunc(scheds, func(s rest.Scheduler) bool { return s.GPUType == testGPUType })
		return i >= 0 && slices.Equal(scheds[i].Parameters, []string{"tiresias.thresholds=7200"}), err
	})
	if code, out := e.voda(t, "alice", "get", "schedulers"); code != 0 || !regexpMatch(`(?m)^api-gpu +Tiresias \(tiresias.thresholds=7200\) +1s `, out) {
		t.Errorf("get schedulers under Tiresias: %d\n%s", code, out)
	}
	s, err := root.SetScheduler(ctx, testGPUType, rest.SchedulerUpdate{Algorithm: "AFS-L"})
	if err != nil || s.Algorithm != "AFS-L" || s.RateLimit != "1s" {
		t.Fatalf("set algorithm only: %+v %v", s, err)
	}
	eventually(t, 30*time.Second, "the controller runs AFS-L every 1s", func() (bool, error) {
		infos, err := e.ctrl.Schedulers(ctx)
		for _, in := range infos {
			if in.GPUType == testGPUType {
				return in.Policy == "AFS-L" && in.RateLimit == time.Second, err
			}
		}
		return false, err
	})

	// The type's own parameters replace the controller's for it, reach its
	// engine, and go when cleared.
	engineParams := func(want ...string) func() (bool, error) {
		return func() (bool, error) {
			infos, err := e.ctrl.Schedulers(ctx)
			for _, in := range infos {
				if in.GPUType == testGPUType {
					return in.Policy == "Tiresias" && slices.Equal(in.Params, want), err
				}
			}
			return false, err
		}
	}
	code, out = e.voda(t, "root", "set", "scheduler", testGPUType, "--algorithm", "tiresias",
		"--policy-param", "tiresias.thresholds=1h,4h", "--policy-param", "tiresias.promote-knob=0")
	if code != 0 || !strings.Contains(out, "algorithm Tiresias, rate limit 1s, parameters tiresias.thresholds=3600,14400 tiresias.promote-knob=0") {
		t.Fatalf("set scheduler with parameters: %d %s", code, out)
	}
	eventually(t, 30*time.Second, "the engine runs Tiresias with the type's thresholds", engineParams("tiresias.thresholds=3600,14400", "tiresias.promote-knob=0"))
	scheds, err = alice.Schedulers(ctx)
	if i := slices.IndexFunc(scheds, func(s rest.Scheduler) bool { return s.GPUType == testGPUType }); err != nil || i < 0 ||
		!slices.Equal(scheds[i].PolicyParams, []string{"tiresias.thresholds=1h,4h", "tiresias.promote-knob=0"}) {
		t.Errorf("the type's own parameters as listed: %+v %v", scheds, err)
	}
	if code, out := e.voda(t, "alice", "get", "schedulers"); code != 0 || !strings.Contains(out, "Tiresias (tiresias.thresholds=3600,14400 tiresias.promote-knob=0)") {
		t.Errorf("get schedulers with the type's parameters: %d\n%s", code, out)
	}
	// Changing the rate limit alone keeps them.
	if s, err := root.SetScheduler(ctx, testGPUType, rest.SchedulerUpdate{RateLimit: "2s"}); err != nil || !slices.Equal(s.PolicyParams, []string{"tiresias.thresholds=1h,4h", "tiresias.promote-knob=0"}) {
		t.Errorf("set rate limit only: %+v %v", s, err)
	}
	code, out = e.voda(t, "root", "set", "scheduler", testGPUType, "--clear-policy-params")
	if code != 0 || !strings.Contains(out, "parameters tiresias.thresholds=7200\n") {
		t.Fatalf("clear the type's parameters: %d %s", code, out)
	}
	eventually(t, 30*time.Second, "the engine runs with the controller's threshold again", engineParams("tiresias.thresholds=7200"))
	if err := e.k8s.Get(ctx, types.NamespacedName{Namespace: apiNS, Name: kube.ConfigMapName}, &cm); err != nil || strings.Contains(cm.Data[testGPUType], "policyParams") {
		t.Errorf("the ConfigMap entry after clearing: %q %v", cm.Data[testGPUType], err)
	}
}

// testTokenReview authenticates service-account tokens through the API
// server, over HTTPS.
func testTokenReview(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	botToken, bot := e.serviceAccount(t, "ci-bot")
	job, err := bot.CreateJob(ctx, []byte(tj("bot-job")))
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + apiNS + ":ci-bot"; job.Spec.Submitter != want {
		t.Errorf("submitter %q, want %q", job.Spec.Submitter, want)
	}
	// This server reads the whole cluster from the controller's caches,
	// the static-token one from the API server: they agree once the caches
	// have caught up, bot-job included.
	root := e.client(t, "root")
	eventually(t, time.Minute, "the cached and the direct schedulers agree", func() (bool, error) {
		cached, err := bot.Schedulers(ctx)
		if err != nil {
			return false, err
		}
		direct, err := root.Schedulers(ctx)
		if err != nil {
			return false, err
		}
		return reflect.DeepEqual(cached, direct), fmt.Errorf("cached %+v, direct %+v", cached, direct)
	})
	// Its Events too (the dashboard's job page reads the same).
	eventually(t, time.Minute, "the cached and the direct Events of bot-job agree", func() (bool, error) {
		cached, err := bot.JobEvents(ctx, "bot-job")
		if err != nil {
			return false, err
		}
		direct, err := root.JobEvents(ctx, "bot-job")
		if err != nil {
			return false, err
		}
		return len(direct) > 0 && reflect.DeepEqual(cached, direct), fmt.Errorf("cached %+v, direct %+v", cached, direct)
	})
	// The namespace's service accounts are admins of this server.
	if _, err := bot.SetScheduler(ctx, testGPUType, rest.SchedulerUpdate{RateLimit: "2s"}); err != nil {
		t.Errorf("set scheduler as an admin group member: %v", err)
	}
	if err := bot.DeleteJob(ctx, "bot-job"); err != nil {
		t.Error(err)
	}
	// With audiences (--api-token-audiences), only a token made for one of
	// them is accepted: not the service account's ordinary token.
	aud, err := e.env.Client.CoreV1().ServiceAccounts(apiNS).CreateToken(ctx, "ci-bot", &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600)), Audiences: []string{"voda"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	review := server.TokenReview{Client: e.k8s, Audiences: []string{"voda"}}
	for tok, want := range map[string]bool{aud.Status.Token: true, botToken: false} {
		if u, ok, err := review.Authenticate(ctx, tok); err != nil || ok != want || ok && u.Name != "system:serviceaccount:"+apiNS+":ci-bot" {
			t.Errorf("token review with audience voda: %v %v %v, want accepted %v", u, ok, err, want)
		}
	}
	// The same original-format file twice in the same second: the second
	// job gets a suffix (JOB_NAME too), not a conflict over a name the
	// user never chose.
	base := "twice-" + tlsClock.UTC().Format("20060102-150405")
	for i, want := range []string{base, base + "-2"} {
		job, err := bot.CreateJob(ctx, []byte(mpijob("twice")))
		if err != nil {
			t.Fatalf("submission %d: %v", i+1, err)
		}
		env := map[string]string{}
		for _, v := range job.Spec.Template.MPIJob.Launcher.Spec.Containers[0].Env {
			env[v.Name] = v.Value
		}
		if job.Name != want || env["JOB_NAME"] != want {
			t.Errorf("submission %d: name %q, JOB_NAME %q, want %q", i+1, job.Name, env["JOB_NAME"], want)
		}
		defer func() {
			if err := bot.DeleteJob(ctx, job.Name); err != nil {
				t.Error(err)
			}
		}()
	}
	for _, c := range []client.Config{
		{Server: e.tlsURL, Token: "not-a-jwt", CAFile: e.caFile},
		{Server: e.tlsURL, Token: tokens["alice"], CAFile: e.caFile}, // static tokens mean nothing here
	} {
		c2, err := client.New(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c2.ListJobs(ctx, client.JobFilter{}); client.StatusOf(err) != 401 {
			t.Errorf("token %q: %v, want 401", c.Token, err)
		}
	}
	// Without the CA the server's certificate is not trusted.
	plain, err := client.New(client.Config{Server: e.tlsURL, Token: botToken})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.ListJobs(ctx, client.JobFilter{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted certificate: %v", err)
	}
}

// testCodesDocumented checks the status codes the server answered with,
// from its request metrics, against the OpenAPI document.
func testCodesDocumented(t *testing.T, reg *prometheus.Registry) {
	doc, err := server.DocumentedCodes()
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, mf := range mfs {
		if mf.GetName() != "voda_api_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			seen++
			var code int
			fmt.Sscan(l["code"], &code)
			if l["route"] == "other" || code == http.StatusMethodNotAllowed {
				continue // unknown paths and methods
			}
			op := l["method"] + " " + l["route"]
			if !slices.Contains(doc[op], code) {
				t.Errorf("%s answered %d, which openapi.json does not list (it lists %v)", op, code, doc[op])
			}
		}
	}
	if seen == 0 {
		t.Error("no requests were counted")
	}
}

func ptr[T any](v T) *T { return &v }

// serviceAccount creates a service account of the API's namespace (whose
// members are admins on the HTTPS server) and returns a token of it and a
// client of the HTTPS server that reads the controller's caches.
func (e *apiEnv) serviceAccount(t *testing.T, name string) (string, *client.Client) {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: apiNS, Name: name}}
	if err := e.k8s.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr, err := e.env.Client.CoreV1().ServiceAccounts(apiNS).CreateToken(ctx, name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Server: e.tlsURL, Token: tr.Status.Token, CAFile: e.caFile})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token, c
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// testSchedulerMetrics reads what the controller's schedulers recorded of
// the jobs so far from the API's /metrics.
func testSchedulerMetrics(t *testing.T, e *apiEnv) {
	code, body := e.call(t, "GET", "/metrics", "root", "", "")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	value := func(series string) float64 {
		v := seriesValue(body, series)
		if v < 0 {
			t.Errorf("no series %s in /metrics", series)
		}
		return v
	}
	// Lifecycle submitted life and life2, started them, and deleted both.
	for series, atLeast := range map[string]float64{
		`voda_scheduler_jobs_submitted_total{gpu_type="api-gpu"}`:                      2,
		`voda_scheduler_actions_total{gpu_type="api-gpu",kind="Start"}`:                2,
		`voda_scheduler_jobs_deleted_total{gpu_type="api-gpu"}`:                        2,
		`voda_scheduler_queueing_delay_seconds_count{gpu_type="api-gpu"}`:              2,
		`voda_scheduler_reschedules_total{algorithm="ElasticFIFO",gpu_type="api-gpu"}`: 2,
	} {
		if v := value(series); v < atLeast {
			t.Errorf("%s = %v, want at least %v", series, v, atLeast)
		}
	}
	if v := value(`voda_scheduler_gpus{gpu_type="api-gpu"}`); v != 8 {
		t.Errorf("GPUs %v, want 8", v)
	}
	if v := value(`voda_scheduler_restart_gpu_seconds_total{gpu_type="api-gpu"}`); !(v > 0) {
		t.Errorf("no GPU time lost to restarts counted: %v", v)
	}
	// Deleted jobs leave no per-job series behind.
	if strings.Contains(body, `job="reporter"`) {
		t.Error("the deleted job reporter still has a throughput series")
	}
}

// seriesValue reads one series of a Prometheus text exposition; -1 if
// absent.
func seriesValue(body, series string) float64 {
	for line := range strings.Lines(body) {
		if name, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == series {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return -1
}

// testProgress has a running job report epochs with the token the
// controller put in its pods, and sees the estimate reach its status.
func testProgress(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	alice := e.client(t, "alice")
	if _, err := alice.CreateJob(ctx, []byte(tj("reporter", "epochs: 3", "epochs: 10"))); err != nil {
		t.Fatal(err)
	}
	defer alice.DeleteJob(ctx, "reporter")
	// The MPIJob's launcher carries the URL and the token.
	url, token := e.progressEnv(t, "reporter")
	if want := e.url + "/api/v1/jobs/reporter/progress?namespace=" + apiNS; url != want {
		t.Fatalf("VODA_PROGRESS_URL %q, want %q", url, want)
	}
	postTo := func(url, tok, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var re rest.Error
		if resp.StatusCode >= 400 && json.Unmarshal(data, &re) == nil {
			return resp.StatusCode, re.Error
		}
		return resp.StatusCode, string(data)
	}
	post := func(tok, body string) (int, string) { t.Helper(); return postTo(url, tok, body) }
	// The namespace in the URL: the job's, else the API's; another
	// namespace does not open the job, and a bad one is refused.
	base, _, _ := strings.Cut(url, "?")
	for _, c := range []struct {
		query string
		code  int
		want  string
	}{
		{"?namespace=team-a", 401, "the token is not job reporter's"},
		{"?namespace=Not_A_NS", 400, `namespace "Not_A_NS" is not a namespace name`},
		{"?namespace=" + apiNS + "&namespace=team-a", 400, "is not a namespace name"},
		{"?user=x", 400, `unknown query parameter "user"`},
	} {
		if code, msg := postTo(base+c.query, token, `{"epoch":1,"epochSeconds":40,"workers":4}`); code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("POST %s: %d %s, want %d saying %q", c.query, code, msg, c.code, c.want)
		}
	}
	for _, c := range []struct {
		tok, body string
		code      int
		want      string
	}{
		{"", `{"epoch":1,"epochSeconds":40,"workers":4}`, 401, "no bearer token"},
		{"forged", `{"epoch":1,"epochSeconds":40,"workers":4}`, 401, "the token is not job reporter's"},
		{tokens["alice"], `{"epoch":1,"epochSeconds":40,"workers":4}`, 401, "the token is not job reporter's"},
		{token, `{"epoch":0,"epochSeconds":40,"workers":4}`, 400, "epoch is 0"},
		{token, `{"epoch":1,"workers":4}`, 400, "no epoch time"},
		{token, `{"epoch":1,"epochSeconds":40,"workers":0}`, 400, "workers is 0"},
		{token, `{"epoch":1,"epochSeconds":-4,"workers":4}`, 400, "epochSeconds is -4"},
		{token, `{"epoch":1,"epochSeconds":40,"workers":4,"gpus":4}`, 400, `unknown field "gpus"`},
		{token, `not json`, 400, "not a progress report"},
		{token, `{"epoch":1,"epochSeconds":40,"workers":4,"epoch":2}`, 400, `"epoch" is given twice`},
		// Gradient statistics that cannot be: refused, and nothing of
		// the report is kept (the reports counted below are the two good
		// ones).
		{token, `{"epoch":1,"epochSeconds":40,"workers":4,"gradSqr":1e-3,"gradVar":-2}`, 400, "gradVar is -2"},
		{token, `{"epoch":1,"epochSeconds":40,"workers":4,"gradSqr":NaN,"gradVar":2}`, 400, "not a progress report"},
		{token, `{"epoch":1,"epochSeconds":40,"workers":4,"gradSqr":1e-3}`, 400, "give both or neither"},
		{token, `{"epoch":1,"epochSeconds":40,"workers":4,"gradSqr":0,"gradVar":2}`, 400, "gradSqr is 0"},
	} {
		if code, msg := post(c.tok, c.body); code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("POST %s: %d %s, want %d saying %q", c.body, code, msg, c.code, c.want)
		}
	}
	// A token is good for its own job only.
	if code, _ := e.call(t, "POST", "/api/v1/jobs/life/progress", "", "application/json", `{"epoch":1,"epochSeconds":1,"workers":1}`); code != 401 {
		t.Errorf("reporting for another job without its token: %d", code)
	}
	// The second report uses the URL without the namespace, as pods
	// started before it was added do.
	for _, r := range [][2]string{
		{`{"epoch":1,"epochSeconds":40,"workers":4}`, url},
		{`{"epoch":2,"stepSeconds":0.2,"steps":200,"workers":4}`, base},
	} {
		if code, msg := postTo(r[1], token, r[0]); code != 200 {
			t.Fatalf("report %s to %s: %d %s", r[0], r[1], code, msg)
		}
	}
	// A job created with kubectl in another namespace reports there.
	if err := e.env.CreateNamespace(ctx, "team-a"); err != nil {
		t.Fatal(err)
	}
	other := &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "reporter"},
		Spec: v1alpha1.TrainingJobSpec{GPUType: testGPUType, MinWorkers: 1, MaxWorkers: 1,
			Template: v1alpha1.TrainingJobTemplate{MPIJob: &v1alpha1.MPIJobTemplate{
				Launcher: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "l", Image: "busybox"}}}},
				Worker:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Image: "busybox"}}}},
			}}}}
	if err := e.k8s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	var keySecret corev1.Secret
	if err := e.k8s.Get(ctx, types.NamespacedName{Namespace: apiNS, Name: progress.KeySecret}, &keySecret); err != nil {
		t.Fatal(err)
	}
	otherToken := progress.Token(keySecret.Data[progress.KeyField], "team-a", "reporter", other.UID)
	if code, msg := postTo(base+"?namespace=team-a", otherToken, `{"epoch":1,"epochSeconds":30,"workers":1}`); code != 200 {
		t.Errorf("report of a job in another namespace: %d %s", code, msg)
	}
	if code, _ := postTo(base, otherToken, `{"epoch":1,"epochSeconds":30,"workers":1}`); code != 401 {
		t.Errorf("its token in the API's namespace: %d, want 401", code)
	}
	if err := e.k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(other), other); err != nil || other.Status.Progress == nil || other.Status.Progress.Reports != 1 {
		t.Errorf("the other namespace's job: %v %+v", err, other.Status.Progress)
	}
	// Epoch times 40 s at 4 workers; with the default shape T1 ≈ 40/f(4);
	// 8 epochs remain of 10.
	eventually(t, 30*time.Second, "the estimate reaches the status", func() (bool, error) {
		j, err := alice.GetJob(ctx, "reporter")
		if err != nil {
			return false, err
		}
		if j.Status.Progress == nil || j.Status.RemainingSeconds == nil {
			return false, fmt.Errorf("progress %+v, remaining %v", j.Status.Progress, j.Status.RemainingSeconds)
		}
		p := j.Status.Progress
		want := 8 * 40 / (0.05 + 0.95/4 + 0.005*3)
		got := float64(*j.Status.RemainingSeconds)
		return p.Epoch == 2 && p.Reports == 2 && len(p.EpochTimes) == 1 && p.EpochTimes[0].Millis == 40000 &&
			got > 0.99*want && got < 1.01*want, fmt.Errorf("progress %+v, remaining %v s, want ≈%.0f", p, got, want)
	})
	// The Python reporter of examples/, as a training script would call it.
	if py, err := exec.LookPath("python3"); err != nil {
		t.Log("python3 not installed: the example reporter is not exercised")
	} else {
		cmd := exec.Command(py, "../../examples/progress/voda_progress.py", "3", "55.5", "2")
		cmd.Env = append(os.Environ(), "VODA_PROGRESS_URL="+url, "VODA_PROGRESS_TOKEN="+token)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"epoch": 3`) {
			t.Errorf("voda_progress.py: %v\n%s", err, out)
		}
		j, err := alice.GetJob(ctx, "reporter")
		if err != nil || j.Status.Progress.Epoch != 3 || len(j.Status.Progress.EpochTimes) != 2 || j.Status.Progress.EpochTimes[0].Millis != 55500 {
			t.Errorf("after the Python report: %v %+v", err, j.Status.Progress)
		}
	}
	// The job's estimated throughput is exported while it runs.
	_, metricsText := e.call(t, "GET", "/metrics", "root", "", "")
	if v := seriesValue(metricsText, `voda_scheduler_job_estimated_throughput{gpu_type="api-gpu",job="reporter",namespace="voda-api"}`); v < 80 || v > 100 {
		t.Errorf("estimated throughput %v epochs/h, want ≈90 (40 s epochs at 4 workers)", v)
	}
	code, out := e.voda(t, "alice", "describe", "job", "reporter")
	if code != 0 || !regexpMatch(`Remaining: +\d+m\d+s at one GPU \(estimate\)`, out) || !regexpMatch(`Progress: +epoch [23] of 10, [23] reports; epoch time .*40s at 4 workers`, out) {
		t.Errorf("describe: %d\n%s", code, out)
	}
	// A job of several GPU types may report one worker count on two of
	// them: the API server keeps both entries (a list keyed by the count
	// alone refused the second with 422).
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var j v1alpha1.TrainingJob
		if err := e.k8s.Get(ctx, types.NamespacedName{Namespace: apiNS, Name: "reporter"}, &j); err != nil {
			return err
		}
		other := j.Status.Progress.EpochTimes[0]
		other.GPUType = "other-gpu"
		j.Status.Progress.EpochTimes = append(j.Status.Progress.EpochTimes, other)
		return e.k8s.Status().Update(ctx, &j)
	})
	if err != nil {
		t.Errorf("epoch times of one worker count on two GPU types: %v", err)
	}
}

// testMetricsDir has the controller read a job's original-format metrics
// CSV into its progress.
func testMetricsDir(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	alice := e.client(t, "alice")
	if _, err := alice.CreateJob(ctx, []byte(tj("csvjob", "epochs: 3", "epochs: 150"))); err != nil {
		t.Fatal(err)
	}
	defer alice.DeleteJob(ctx, "csvjob")
	file := filepath.Join(e.metricsDir, "csvjob.csv")
	csv := `epoch,accuracy,epoch_time_sec,epochs,global_batch_size,local_batch_size,loss,start_time,step_time_sec,steps,total_epochs,verbose,workers
0,0.91,60.2,150,128,128,0.31,2022-10-20 10:00:00.000000,0.129,469,150,1,1
1,0.95,31.0,150,256,128,0.17,2022-10-20 10:01:00.000000,0.066,469,150,1,2
`
	if err := os.WriteFile(file, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the file reaches the status and the estimate", func() (bool, error) {
		j, err := alice.GetJob(ctx, "csvjob")
		if err != nil {
			return false, err
		}
		p := j.Status.Progress
		return p != nil && p.Epoch == 2 && len(p.EpochTimes) == 2 && j.Status.RemainingSeconds != nil,
			fmt.Errorf("progress %+v, remaining %v", p, j.Status.RemainingSeconds)
	})
	// A broken file is reported on the job, and changes nothing.
	if err := os.WriteFile(file, []byte(csv+"2,x,y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a BadMetricsFile event", func() (bool, error) {
		events, err := alice.JobEvents(ctx, "csvjob")
		for _, ev := range events {
			if ev.Reason == "BadMetricsFile" && ev.Type == "Warning" && strings.Contains(ev.Message, "line 4") {
				return true, nil
			}
		}
		return false, err
	})
	if j, err := alice.GetJob(ctx, "csvjob"); err != nil || j.Status.Progress.Epoch != 2 {
		t.Errorf("after the broken file: %v %+v", err, j.Status.Progress)
	}
}

// testCategoryHistory: a completed job's curve is saved for its category,
// a new job of the category is estimated before it reports, and so is one
// that was already there, not yet reporting, when the first completed.
func testCategoryHistory(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	alice := e.client(t, "alice")
	if _, err := alice.CreateJob(ctx, []byte(tj("bert-early", "epochs: 3", "epochs: 10\n  category: bert"))); err != nil {
		t.Fatal(err)
	}
	defer alice.DeleteJob(ctx, "bert-early")
	eventually(t, 30*time.Second, "bert-early is admitted, its length unknown", func() (bool, error) {
		j, err := alice.GetJob(ctx, "bert-early")
		if err != nil {
			return false, err
		}
		return j.Status.Phase != "" && j.Status.RemainingSeconds == nil, fmt.Errorf("phase %q, remaining %v", j.Status.Phase, j.Status.RemainingSeconds)
	})
	first := tj("bert-a", "epochs: 3", "epochs: 10\n  category: bert",
		"          - name: launcher\n", "          - name: launcher\n")
	// The launcher ends 4 s after it starts: the job completes.
	first = strings.Replace(first, "      launcher:\n        spec:", "      launcher:\n        metadata:\n          annotations: {"+testenv.CompleteAfterAnnotation+": 4s}\n        spec:", 1)
	if _, err := alice.CreateJob(ctx, []byte(first)); err != nil {
		t.Fatal(err)
	}
	defer alice.DeleteJob(ctx, "bert-a")
	_, token := e.progressEnv(t, "bert-a")
	req, _ := http.NewRequest("POST", e.url+"/api/v1/jobs/bert-a/progress", strings.NewReader(`{"epoch":1,"epochSeconds":40,"workers":4}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("report: %v %v", err, resp)
	}
	resp.Body.Close()
	eventually(t, time.Minute, "bert-a completes and its category is saved", func() (bool, error) {
		var cm corev1.ConfigMap
		err := e.k8s.Get(ctx, types.NamespacedName{Namespace: apiNS, Name: kube.HistoryConfigMap}, &cm)
		return err == nil && strings.Contains(cm.Data["categories.json"], `"voda-api/bert"`), err
	})
	if _, err := alice.CreateJob(ctx, []byte(tj("bert-b", "epochs: 3", "epochs: 10\n  category: bert"))); err != nil {
		t.Fatal(err)
	}
	defer alice.DeleteJob(ctx, "bert-b")
	want := 10 * 40 / (0.05 + 0.95/4 + 0.005*3)
	for _, name := range []string{"bert-b", "bert-early"} {
		eventually(t, 30*time.Second, name+" is estimated from bert-a", func() (bool, error) {
			j, err := alice.GetJob(ctx, name)
			if err != nil || j.Status.RemainingSeconds == nil {
				return false, err
			}
			got := float64(*j.Status.RemainingSeconds)
			return got > 0.99*want && got < 1.01*want && j.Status.Progress == nil, fmt.Errorf("remaining %v s, want ≈%.0f", got, want)
		})
	}
}

// progressEnv waits for a job's MPIJob and returns the progress URL and
// token its launcher got.
func (e *apiEnv) progressEnv(t *testing.T, job string) (url, token string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, time.Minute, job+"'s MPIJob with the progress environment", func() (bool, error) {
		u, err := e.env.Dynamic.Resource(testenv.MPIJobGVR).Namespace(apiNS).Get(ctx, job, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers")
		for _, c := range cs {
			vars, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
			for _, v := range vars {
				m := v.(map[string]any)
				switch m["name"] {
				case "VODA_PROGRESS_URL":
					url = m["value"].(string)
				case "VODA_PROGRESS_TOKEN":
					token = m["value"].(string)
				}
			}
		}
		return url != "" && token != "", nil
	})
	return url, token
}
