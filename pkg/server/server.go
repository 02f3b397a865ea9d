package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

// Defaults of the server.
const (
	DefaultMaxBodyBytes = 1 << 20
	// DefaultAdminGroup is the group whose members see every job and may
	// change schedulers, besides system:masters.
	DefaultAdminGroup = "voda:admins"
)

// Options configure a server.
type Options struct {
	// Namespace is where jobs submitted through the API are created and
	// which jobs the API lists; empty means "default".
	Namespace string
	// AdminGroups are the groups whose members see and delete every job and
	// change schedulers; empty means system:masters and voda:admins.
	AdminGroups []string
	// DefaultAlgorithm and DefaultRateLimit are the controller's settings
	// for GPU types without runtime settings.
	DefaultAlgorithm string
	DefaultRateLimit time.Duration
	// Algorithm holds the controller's policy parameters (--policy-param);
	// the queue view ranks jobs with them. The zero value means the
	// defaults.
	Algorithm algorithm.Config
	// Accelerators are the controller's: the node resource of each GPU type
	// that does not schedule nvidia.com/gpu.
	Accelerators v1alpha1.Accelerators
	// ConfigNamespace is where the controller reads its runtime settings
	// (the ConfigMap voda-schedulers); empty means Namespace.
	ConfigNamespace string
	// MaxBodyBytes limits request bodies; zero means 1 MiB.
	MaxBodyBytes int64
	// Version is reported by GET /api/v1/version.
	Version string
	// Now is the clock, for the names of converted MPIJobs; nil means
	// time.Now.
	Now func() time.Time
	// Registerer, if set, receives the server's request metrics; Gatherer,
	// if set, is served at /metrics.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// Log receives one line per failed request; the zero value discards.
	Log logr.Logger
	// UI serves the web dashboard under /ui/ (see docs/dashboard.md).
	UI bool
	// Cache, if set, serves the reads of nodes and jobs the dashboard,
	// GET /api/v1/schedulers and the paged job list are built from (the
	// controller's informer cache), the settings ConfigMap, and the job of
	// a job's dashboard page: while thousands of jobs start, a read from
	// the API server waits seconds behind their writes. A job created or
	// deleted through the API is waited for until the cache shows it
	// (listpage.go); a job the cache does not hold yet, and the settings
	// for a while after this server wrote them, are read from the API
	// server, so a change shows on the page it leads to. A job of the REST
	// API (GET, DELETE, progress) is still read from the API server.
	Cache client.Reader
	// OtherGPUs, if set, counts the GPUs that pods which are not Voda's
	// hold on each node (the controller's cache of those pods); nil lists
	// them from the API server.
	OtherGPUs func(ctx context.Context, resOf func(node string) corev1.ResourceName) (map[string]int, error)
	// Events, if set, serves the Events of jobs, indexed by
	// kube.JobEventsField (the controller's cache, kube.IndexJobEvents);
	// nil lists them from the API server, which filters every Event of
	// the namespace for each job.
	Events client.Reader
}

// Server is Voda's REST API over the Kubernetes API: jobs are TrainingJobs,
// scheduler settings live in the controller's ConfigMap. It keeps no state
// of its own, so any number of replicas can serve.
type Server struct {
	c        client.Client
	auth     Authenticator
	o        Options
	handler  http.Handler
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	pages    *prometheus.CounterVec

	keyMu sync.Mutex
	key   []byte // the progress tokens' key, once read

	// settingsWritten is when this server last wrote the settings
	// ConfigMap (Unix nanoseconds): until the cache has surely seen it,
	// settings are read from the API server.
	settingsWritten atomic.Int64

	watch watcher // the dashboard's change detection
}

// route is one operation of the API.
type route struct {
	method, pattern string
	// public routes need no token.
	public bool
	h      func(w http.ResponseWriter, r *http.Request, u User) error
}

// New returns a server that reads and writes through c (best an uncached
// client, so that a job is visible as soon as it is created) and
// authenticates callers with auth.
func New(c client.Client, auth Authenticator, o Options) (*Server, error) {
	if c == nil || auth == nil {
		return nil, errors.New("server: a client and an authenticator are required")
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.ConfigNamespace == "" {
		o.ConfigNamespace = o.Namespace
	}
	if len(o.AdminGroups) == 0 {
		o.AdminGroups = []string{"system:masters", DefaultAdminGroup}
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DefaultAlgorithm == "" {
		o.DefaultAlgorithm = kube.DefaultPolicy
	}
	p, err := algorithm.New(o.DefaultAlgorithm, o.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("server: default algorithm: %w", err)
	}
	o.DefaultAlgorithm = p.Name()
	s := &Server{c: c, auth: auth, o: o}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voda_api_requests_total",
		Help: "Requests to the REST API by route, method and status code.",
	}, []string{"route", "method", "code"})
	s.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "voda_api_request_duration_seconds",
		Help:    "Time to answer a request to the REST API, by route.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
	}, []string{"route"})
	s.pages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "voda_ui_requests_total",
		Help: "Requests to the web dashboard by page (cluster, queue, jobs, events, login, logout, schedulers, static, other) and status code.",
	}, []string{"page", "code"})
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{s.requests, s.duration, s.pages} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("server metrics: %w", err)
			}
		}
	}
	s.handler = s.mux()
	return s, nil
}

// routes lists every operation; the OpenAPI document must describe exactly
// these (a test checks).
func (s *Server) routes() []route {
	return []route{
		{method: http.MethodPost, pattern: "/api/v1/jobs", h: s.createJob},
		{method: http.MethodGet, pattern: "/api/v1/jobs", h: s.listJobs},
		{method: http.MethodGet, pattern: "/api/v1/jobs/{name}", h: s.getJob},
		{method: http.MethodDelete, pattern: "/api/v1/jobs/{name}", h: s.deleteJob},
		{method: http.MethodGet, pattern: "/api/v1/jobs/{name}/events", h: s.jobEvents},
		// Authenticated by the job's own token, not a user's.
		{method: http.MethodPost, pattern: "/api/v1/jobs/{name}/progress", public: true, h: s.postProgress},
		{method: http.MethodGet, pattern: "/api/v1/schedulers", h: s.listSchedulers},
		{method: http.MethodPut, pattern: "/api/v1/schedulers/{gpuType}", h: s.putScheduler},
		{method: http.MethodGet, pattern: "/api/v1/queues", h: s.listQueues},
		{method: http.MethodGet, pattern: "/api/v1/version", public: true, h: s.version},
		{method: http.MethodGet, pattern: "/api/v1/openapi.json", public: true, h: serveOpenAPI},
		{method: http.MethodGet, pattern: "/healthz", public: true, h: healthz},
		{method: http.MethodGet, pattern: "/readyz", public: true, h: s.readyz},
		{method: http.MethodGet, pattern: "/metrics", h: s.metrics},
	}
}

// Handler is the API's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// mux registers each path once and dispatches on the method itself, so
// that a wrong method gets a JSON 405 like every other error.
func (s *Server) mux() http.Handler {
	mux := http.NewServeMux()
	byPath := map[string][]route{}
	var paths []string
	for _, rt := range s.routes() {
		if byPath[rt.pattern] == nil {
			paths = append(paths, rt.pattern)
		}
		byPath[rt.pattern] = append(byPath[rt.pattern], rt)
	}
	for _, p := range paths {
		rts := byPath[p]
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			for _, rt := range rts {
				if rt.method == r.Method || (rt.method == http.MethodGet && r.Method == http.MethodHead) {
					s.serve(w, r, rt)
					return
				}
			}
			allowed := make([]string, len(rts))
			for i, rt := range rts {
				allowed[i] = rt.method
			}
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			s.serve(w, r, route{pattern: p, public: true, h: func(http.ResponseWriter, *http.Request, User) error {
				return errorf(http.StatusMethodNotAllowed, "method %s is not allowed on %s: use %s", r.Method, r.URL.Path, strings.Join(allowed, " or "))
			}})
		})
	}
	if s.o.UI {
		ui := s.uiHandler()
		mux.Handle("/ui/", ui)
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { seeOther(w, "ui/") })
		mux.HandleFunc("GET /ui", func(w http.ResponseWriter, _ *http.Request) { seeOther(w, "ui/") })
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, route{pattern: "other", public: true, h: func(http.ResponseWriter, *http.Request, User) error {
			return errorf(http.StatusNotFound, "no such API path %s: see /api/v1/openapi.json", r.URL.Path)
		}})
	})
	return mux
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (the
// dashboard's event stream flushes through it).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// requestTimeout bounds every request, the calls to the Kubernetes API
// server it makes included.
const requestTimeout = 20 * time.Second

// unreachable reports whether err says the Kubernetes API server could
// not be reached or did not answer in time (rather than answering no):
// such a request is answered 503, to be tried again. An error this package
// already gave a status keeps it.
func unreachable(err error) bool {
	var he *httpError
	if errors.As(err, &he) {
		return false
	}
	var ne net.Error
	var ue *url.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.As(err, &ne) || errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)
}

// serve runs one route: limits the body, authenticates, records metrics
// and turns an error into its JSON answer.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt route) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	r.Body = http.MaxBytesReader(sw, r.Body, s.o.MaxBodyBytes)
	// No request waits longer than this on the Kubernetes API server: an
	// outage is answered, not hung on.
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	err := s.authenticated(sw, r, rt)
	if err != nil && unreachable(err) {
		err = errorf(http.StatusServiceUnavailable, "the Kubernetes API server cannot be reached now; try again shortly (%v)", err)
	}
	if err != nil {
		code := StatusOf(err)
		if code >= http.StatusInternalServerError {
			s.o.Log.Error(err, "request failed", "method", r.Method, "path", r.URL.Path)
		}
		if code == http.StatusUnauthorized {
			sw.Header().Set("WWW-Authenticate", `Bearer realm="voda"`)
		}
		writeJSON(sw, code, rest.Error{Error: err.Error()})
	}
	code := sw.code
	if code == 0 {
		code = http.StatusOK
	}
	s.requests.WithLabelValues(rt.pattern, r.Method, strconv.Itoa(code)).Inc()
	s.duration.WithLabelValues(rt.pattern).Observe(time.Since(start).Seconds())
}

func (s *Server) authenticated(w http.ResponseWriter, r *http.Request, rt route) error {
	if rt.public {
		return rt.h(w, r, User{})
	}
	tok, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return errorf(http.StatusUnauthorized, "no bearer token: send the header 'Authorization: Bearer TOKEN' (the CLI reads --token, VODA_TOKEN or its config file)")
	}
	u, ok, err := s.auth.Authenticate(r.Context(), tok)
	if err != nil {
		return errorf(http.StatusServiceUnavailable, "cannot check the token now: %v", err)
	}
	if !ok || u.Name == "" {
		return errorf(http.StatusUnauthorized, "the bearer token is not valid")
	}
	return rt.h(w, r, u)
}

// admin reports whether u belongs to an admin group.
func (s *Server) admin(u User) bool {
	for _, g := range u.Groups {
		if slices.Contains(s.o.AdminGroups, g) {
			return true
		}
	}
	return false
}

// writeJSON writes v as the response body.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func healthz(w http.ResponseWriter, _ *http.Request, _ User) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err := w.Write([]byte("ok\n"))
	return err
}

// readyz answers once the Kubernetes API server answers.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ User) error {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	var l v1alpha1.TrainingJobList
	if err := s.c.List(ctx, &l, client.InNamespace(s.o.Namespace), client.Limit(1)); err != nil {
		return errorf(http.StatusServiceUnavailable, "the Kubernetes API server does not answer: %v", err)
	}
	return healthz(w, r, User{})
}

// metrics serves the controller's metrics to admins: they name every job.
// Prometheus scrapes the controller's metrics port, which serves the same
// without a token inside the cluster.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request, u User) error {
	if s.o.Gatherer == nil {
		return errorf(http.StatusNotFound, "metrics are not served here")
	}
	if !s.admin(u) {
		return errorf(http.StatusForbidden, "you (%s) may not read the metrics here: they name every user's jobs; that takes membership of %s (Prometheus scrapes the controller's metrics port)", u.Name, strings.Join(s.o.AdminGroups, " or "))
	}
	promhttp.HandlerFor(s.o.Gatherer, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil
}

func (s *Server) version(w http.ResponseWriter, _ *http.Request, _ User) error {
	writeJSON(w, http.StatusOK, rest.Version{Version: s.o.Version, Namespace: s.o.Namespace})
	return nil
}
