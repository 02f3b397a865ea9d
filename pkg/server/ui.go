package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
	"github.com/vodascheduler/voda/pkg/ui"
)

// The dashboard's session.
const (
	// sessionCookie holds the user's token: HttpOnly, SameSite=Strict,
	// Secure under TLS; every request checks the token again.
	sessionCookie = "voda_session"
	// maxSession bounds a session whose token does not say when it
	// expires (static tokens).
	maxSession = 12 * time.Hour
	// streamLife ends an event stream, which the browser then reopens
	// (authenticating again).
	streamLife = 5 * time.Minute
	// heartbeat keeps idle streams open through proxies.
	heartbeat = 15 * time.Second
	// watchEvery is how often the dashboard looks for changes while any
	// stream is open: the streams' debounce.
	watchEvery = time.Second
)

// uiHandler serves the dashboard under /ui/.
func (s *Server) uiHandler() http.Handler {
	mux := http.NewServeMux()
	static := http.StripPrefix("/ui/static/", http.FileServerFS(ui.Static()))
	mux.Handle("GET /ui/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		static.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) { seeOther(w, "cluster") })
	mux.HandleFunc("GET /ui/login", s.uiLoginPage)
	mux.HandleFunc("POST /ui/login", s.uiLogin)
	mux.HandleFunc("POST /ui/logout", s.uiAuthed(s.uiLogout))
	mux.HandleFunc("GET /ui/cluster", s.uiAuthed(s.uiCluster))
	mux.HandleFunc("GET /ui/queue", s.uiAuthed(s.uiQueue))
	mux.HandleFunc("GET /ui/teams", s.uiAuthed(s.uiTeams))
	mux.HandleFunc("GET /ui/jobs/{name}", s.uiAuthed(s.uiJob))
	mux.HandleFunc("POST /ui/schedulers/{gpuType}", s.uiAuthed(s.uiScheduler))
	mux.HandleFunc("GET /ui/events", s.uiAuthed(s.uiEvents))
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		s.uiError(w, r, User{}, errorf(http.StatusNotFound, "no such page %s", r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "same-origin")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
		r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes)
		sw := &statusWriter{ResponseWriter: w}
		if err := parseForm(r); err != nil {
			s.uiError(sw, r, User{}, err)
		} else {
			mux.ServeHTTP(sw, r)
		}
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		s.pages.WithLabelValues(uiPage(r.URL.Path), strconv.Itoa(code)).Inc()
	})
}

// parseForm reads a posted form at once, so that a body over the limit is
// answered as such (413) rather than read as a form without fields.
func parseForm(r *http.Request) error {
	if r.Method != http.MethodPost {
		return nil
	}
	err := r.ParseForm()
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return errorf(http.StatusRequestEntityTooLarge, "the form is larger than %d bytes", mbe.Limit)
	case err != nil:
		return errorf(http.StatusBadRequest, "the form cannot be read: %v", err)
	}
	return nil
}

// uiPage names a dashboard path for the request metrics, from a fixed set.
func uiPage(path string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/ui/"), "/")
	switch first {
	case "cluster", "queue", "jobs", "events", "login", "logout", "schedulers", "static":
		return first
	}
	return "other"
}

// seeOther redirects to a relative URL as it is (http.Redirect would make
// it absolute, which breaks behind a proxy that adds a path prefix).
func seeOther(w http.ResponseWriter, rel string) {
	w.Header().Set("Location", rel)
	w.WriteHeader(http.StatusSeeOther)
}

// uiRoot is the relative path from r's page to /ui/.
func uiRoot(r *http.Request) string {
	rest := strings.TrimPrefix(r.URL.Path, "/ui/")
	if n := strings.Count(rest, "/"); n > 0 {
		return strings.Repeat("../", n)
	}
	return "./"
}

// session is an authenticated dashboard request.
type session struct {
	u     User
	token string
	csrf  string
}

// uiAuthed authenticates a dashboard request by its session cookie or an
// Authorization header (from a proxy), with the API's authenticator.
// Without either, the answer is 401 with the login form.
func (s *Server) uiAuthed(h func(http.ResponseWriter, *http.Request, session) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var err error
		var sess session
		if r.URL.Path != "/ui/events" {
			ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		tok, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			if c, cerr := r.Cookie(sessionCookie); cerr == nil && c.Value != "" {
				tok, ok = c.Value, true
			}
		}
		if !ok {
			s.uiLoginForm(w, r, http.StatusUnauthorized, "")
			return
		}
		actx, acancel := context.WithTimeout(r.Context(), requestTimeout)
		u, valid, aerr := s.auth.Authenticate(actx, tok)
		acancel()
		switch {
		case aerr != nil:
			err = errorf(http.StatusServiceUnavailable, "cannot check the token now: %v", aerr)
		case !valid || u.Name == "":
			clearSession(w, r)
			s.uiLoginForm(w, r, http.StatusUnauthorized, "The session's token is no longer valid: log in again.")
			return
		default:
			sess = session{u: u, token: tok}
			if sess.csrf, err = s.csrfToken(r, tok); err == nil {
				err = h(w, r, sess)
			}
		}
		if err != nil {
			s.uiError(w, r, sess.u, err)
		}
	}
}

// csrfToken is the token forms of a session carry: a MAC of the session's
// token under the controller's shared key, so every replica checks it and
// no page needs state.
func (s *Server) csrfToken(r *http.Request, token string) (string, error) {
	key, err := s.progressKey(r)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("voda dashboard csrf\x00"))
	m.Write([]byte(token))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// checkCSRF refuses a form that does not carry the session's CSRF token.
func checkCSRF(r *http.Request, sess session) error {
	got := r.PostFormValue("csrf")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
		return errorf(http.StatusForbidden, "the form's CSRF token is missing or wrong: reload the page and try again")
	}
	return nil
}

// uiLoginForm answers with the login page.
func (s *Server) uiLoginForm(w http.ResponseWriter, r *http.Request, code int, msg string) {
	next := strings.TrimPrefix(r.URL.Path, "/ui/")
	if r.Method != http.MethodGet || next == "login" || next == "events" {
		next = ""
	}
	if next != "" && r.URL.RawQuery != "" {
		next += "?" + r.URL.RawQuery
	}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="voda"`)
	}
	s.uiRender(w, r, code, ui.Page{Page: "login", Title: "Log in", Data: ui.LoginData{Next: next, Error: msg}})
}

func (s *Server) uiLoginPage(w http.ResponseWriter, r *http.Request) {
	s.uiLoginForm(w, r, http.StatusOK, "")
}

// uiLogin checks the token posted and opens a session with it.
func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	if !sameOrigin(r) {
		// A page of another site must not log the browser in (to an
		// account of its choosing).
		s.uiLoginForm(w, r, http.StatusForbidden, "A login from another site is refused: log in from this page.")
		return
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	if tok == "" {
		s.uiLoginForm(w, r, http.StatusUnauthorized, "Enter a token.")
		return
	}
	u, ok, err := s.auth.Authenticate(ctx, tok)
	if err != nil {
		s.uiLoginForm(w, r, http.StatusServiceUnavailable, fmt.Sprintf("Cannot check the token now: %v", err))
		return
	}
	if !ok || u.Name == "" {
		s.uiLoginForm(w, r, http.StatusUnauthorized, "That token is not valid.")
		return
	}
	expires := s.o.Now().Add(maxSession)
	if exp, ok := tokenExpiry(tok); ok && exp.Before(expires) {
		expires = exp
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: tok, Expires: expires,
		MaxAge: max(int(time.Until(expires)/time.Second), 1), HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure(r),
	})
	seeOther(w, next)
}

// safeNext keeps a page to return to after login only if it is one of the
// dashboard's own relative paths: letters, digits and the few marks of
// paths and queries, no scheme, no "//", no "..", nothing a browser or
// the HTTP stack would trim or rewrite (spaces, control characters,
// backslashes).
func safeNext(next string) string {
	if next == "" || strings.HasPrefix(next, "/") || strings.Contains(next, "//") || strings.Contains(next, "..") {
		return "cluster"
	}
	for _, c := range next {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-._~/?=&%+", c)) {
			return "cluster"
		}
	}
	return next
}

// sameOrigin reports whether a posted form comes from a page of this
// server, by its Origin header (every current browser sends one with a
// POST; a client that sends none is not a browser another site drives).
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host) || strings.EqualFold(u.Host, r.Header.Get("X-Forwarded-Host"))
}

func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// clearSession ends the session. The cookie has no Path attribute, so the
// browser scopes it to the directory of the login form, the dashboard's
// root however a proxy prefixes it; the clearing cookie must be sent from
// the same directory (the logout form's), else it names another cookie.
func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)})
}

// tokenExpiry reads the exp claim of a JSON Web Token (a service account
// token), which the authenticator has already accepted.
func tokenExpiry(tok string) (time.Time, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	return time.Unix(int64(*claims.Exp), 0), true
}

func (s *Server) uiLogout(w http.ResponseWriter, r *http.Request, sess session) error {
	if err := checkCSRF(r, sess); err != nil {
		return err
	}
	clearSession(w, r)
	seeOther(w, uiRoot(r)+"login")
	return nil
}

// uiRender writes a page, or only its main part for the page's script.
func (s *Server) uiRender(w http.ResponseWriter, r *http.Request, code int, p ui.Page) {
	p.Root, p.Version = uiRoot(r), s.o.Version
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	var b strings.Builder
	if err := ui.Render(&b, p, r.Header.Get("X-Voda-Partial") != ""); err != nil {
		s.o.Log.Error(err, "render", "page", p.Page)
		http.Error(w, "the page could not be drawn: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}

// uiError answers an error with a page that says it.
func (s *Server) uiError(w http.ResponseWriter, r *http.Request, u User, err error) {
	if err != nil && unreachable(err) {
		err = errorf(http.StatusServiceUnavailable, "the Kubernetes API server cannot be reached now; try again shortly (%v)", err)
	}
	code := StatusOf(err)
	if code >= http.StatusInternalServerError {
		s.o.Log.Error(err, "dashboard request failed", "method", r.Method, "path", r.URL.Path)
	}
	s.uiRender(w, r, code, ui.Page{Page: "message", Title: http.StatusText(code), Viewer: viewer(s, u),
		Data: ui.MessageData{Status: code, Message: err.Error(), Back: "queue"}})
}

func viewer(s *Server, u User) ui.Viewer { return ui.Viewer{Name: u.Name, Admin: s.admin(u)} }

// uiState reads what the views are built from.
func (s *Server) uiState(ctx context.Context, u User) (ui.State, error) {
	cr, err := s.readCluster(ctx)
	if err != nil {
		return ui.State{}, err
	}
	st := ui.State{Now: s.o.Now(), Jobs: cr.jobs, Schedulers: s.schedulersOf(cr), Viewer: viewer(s, u)}
	for i := range cr.nodes {
		n := &cr.nodes[i]
		if t, gpus := kube.NodeGPUs(n, s.o.Accelerators); t != "" {
			st.Nodes = append(st.Nodes, ui.Node{Name: n.Name, GPUType: string(t), GPUs: gpus, Other: min(cr.other[n.Name], gpus)})
		}
	}
	return st, nil
}

func (s *Server) page(sess session, name, title, stream string, data any) ui.Page {
	return ui.Page{Page: name, Title: title, Viewer: viewer(s, sess.u), CSRF: sess.csrf, Stream: stream, Data: data}
}

func (s *Server) uiCluster(w http.ResponseWriter, r *http.Request, sess session) error {
	q := r.URL.Query()
	for k := range q {
		if k != "gpuType" && k != "page" {
			return errorf(http.StatusBadRequest, "unknown parameter %q: the cluster page takes gpuType and page", k)
		}
	}
	n, err := pageNumber(q.Get("page"))
	if err != nil {
		return err
	}
	st, err := s.uiState(r.Context(), sess.u)
	if err != nil {
		return err
	}
	s.uiRender(w, r, http.StatusOK, s.page(sess, "cluster", "Cluster", "events", ui.ClusterPage(ui.Cluster(st), q.Get("gpuType"), n)))
	return nil
}

// pageNumber reads a page parameter: a number from 1, 1 when absent.
func pageNumber(v string) (int, error) {
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, errorf(http.StatusBadRequest, "page %q: want a page number from 1", v)
	}
	return n, nil
}

func (s *Server) uiQueue(w http.ResponseWriter, r *http.Request, sess session) error {
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains([]string{"namespace", "user", "gpuType", "phase", "page"}, k) {
			return errorf(http.StatusBadRequest, "unknown filter %q: the filters are namespace, user, gpuType and phase (and page)", k)
		}
	}
	n, err := pageNumber(q.Get("page"))
	if err != nil {
		return err
	}
	st, err := s.uiState(r.Context(), sess.u)
	if err != nil {
		return err
	}
	f := ui.QueueFilter{Namespace: q.Get("namespace"), User: q.Get("user"), GPUType: q.Get("gpuType"), Phase: q.Get("phase")}
	v := ui.Queue(st, f)
	v.Paginate(n)
	s.uiRender(w, r, http.StatusOK, s.page(sess, "queue", "Queue", "events", v))
	return nil
}

// uiTeams shows the queues jobs submitted here may name, each with its
// use of every GPU type against its quota.
func (s *Server) uiTeams(w http.ResponseWriter, r *http.Request, sess session) error {
	qr, err := s.readQueues(r.Context())
	if err != nil {
		return err
	}
	s.uiRender(w, r, http.StatusOK, s.page(sess, "teams", "Teams", "events", ui.Teams(qr.list().Items)))
	return nil
}

func (s *Server) uiJob(w http.ResponseWriter, r *http.Request, sess session) error {
	tj, err := s.jobFrom(r, sess.u, true)
	if err != nil {
		return err
	}
	// The whole cluster only for a waiting job's place in its queue.
	st := ui.State{Now: s.o.Now(), Viewer: viewer(s, sess.u)}
	if p := phaseOf(tj); p == v1alpha1.PhaseWaiting || p == v1alpha1.PhaseSubmitted {
		if st, err = s.uiState(r.Context(), sess.u); err != nil {
			return err
		}
	}
	list, err := s.eventsOf(r.Context(), tj)
	if err != nil {
		return err
	}
	events := make([]ui.JobEvent, 0, len(list))
	for _, e := range list {
		ev := restEvent(&e)
		n, sized := kube.EventWorkers(e.Reason, e.Message)
		events = append(events, ui.JobEvent{Event: ev, Workers: n, Sized: sized})
	}
	slices.SortStableFunc(events, func(a, b ui.JobEvent) int { return a.LastTime.Compare(b.LastTime) })
	spec, err := yaml.Marshal(tj.Spec)
	if err != nil {
		return err
	}
	s.uiRender(w, r, http.StatusOK, s.page(sess, "job", tj.Name, "../events?job="+url.QueryEscape(tj.Name), ui.Job(st, tj, events, string(spec))))
	return nil
}

// uiScheduler is an admin's change of a GPU type's settings, from the
// cluster page's form.
func (s *Server) uiScheduler(w http.ResponseWriter, r *http.Request, sess session) error {
	if err := checkCSRF(r, sess); err != nil {
		return err
	}
	t := r.PathValue("gpuType")
	if msgs := validation.IsConfigMapKey(t); len(msgs) > 0 || len(validation.IsValidLabelValue(t)) > 0 {
		return errorf(http.StatusBadRequest, "%q is not a GPU type", t)
	}
	up := rest.SchedulerUpdate{Algorithm: strings.TrimSpace(r.PostFormValue("algorithm")), RateLimit: strings.TrimSpace(r.PostFormValue("rateLimit"))}
	if _, ok := r.PostForm["policyParams"]; ok {
		// NAME=VALUE separated by spaces (a value may hold commas); an
		// empty field removes the type's own parameters.
		params := strings.Fields(r.PostFormValue("policyParams"))
		up.PolicyParams = &params
	}
	if _, err := s.updateScheduler(r.Context(), sess.u, t, up); err != nil {
		return err
	}
	seeOther(w, uiRoot(r)+"cluster")
	return nil
}

// uiEvents is the page's Server-Sent Events stream: an event "change"
// whenever what the dashboard shows may have changed (at most one a
// second), a comment every 15 s, and an end after five minutes, when the
// browser reconnects and authenticates again.
func (s *Server) uiEvents(w http.ResponseWriter, r *http.Request, sess session) error {
	if job := r.URL.Query().Get("job"); job != "" {
		r.SetPathValue("name", job)
		if _, err := s.job(r, sess.u); err != nil {
			return err
		}
	}
	rc := http.NewResponseController(w)
	// The server's write timeout would cut the stream.
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	ch, stop := s.watch.subscribe(s)
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 2000\n: stream open\n\n"); err != nil {
		return nil
	}
	_ = rc.Flush()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	end := time.NewTimer(streamLife)
	defer end.Stop()
	n := 0
	for {
		var msg string
		select {
		case <-r.Context().Done():
			return nil
		case <-shuttingDown(r.Context()):
			return nil
		case <-end.C:
			return nil
		case <-beat.C:
			msg = ": heartbeat\n\n"
		case <-ch:
			n++
			msg = fmt.Sprintf("event: change\nid: %d\ndata: %d\n\n", n, n)
		}
		if _, err := fmt.Fprint(w, msg); err != nil {
			return nil
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
}

// watcher looks for changes once a second while any stream is open and
// tells every stream; one read of the cluster serves all of them.
type watcher struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
	stop context.CancelFunc
}

// subscribe adds a stream; stop removes it.
func (wt *watcher) subscribe(s *Server) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.subs == nil {
		wt.subs = map[chan struct{}]struct{}{}
	}
	wt.subs[ch] = struct{}{}
	if wt.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		wt.stop = cancel
		go wt.run(ctx, s)
	}
	return ch, func() {
		wt.mu.Lock()
		defer wt.mu.Unlock()
		delete(wt.subs, ch)
		if len(wt.subs) == 0 && wt.stop != nil {
			wt.stop()
			wt.stop = nil
		}
	}
}

func (wt *watcher) run(ctx context.Context, s *Server) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		cr, err := s.readCluster(rctx)
		cancel()
		if err != nil {
			continue // the streams stay; the next read may work
		}
		fp := fingerprint(cr)
		if fp == last {
			continue
		}
		first := last == 0
		last = fp
		if first {
			continue // the pages were drawn from this state
		}
		wt.mu.Lock()
		for ch := range wt.subs {
			select {
			case ch <- struct{}{}:
			default: // one pending change is enough
			}
		}
		wt.mu.Unlock()
	}
}

// fingerprint changes when anything the dashboard shows changes: a job
// (its resource version), a node's GPUs or readiness, other pods' GPUs or
// the settings. Node heartbeats do not count.
func fingerprint(cr *clusterRead) uint64 {
	h := fnv.New64a()
	for i := range cr.jobs {
		fmt.Fprintf(h, "j%s/%s\x00", cr.jobs[i].Name, cr.jobs[i].ResourceVersion)
	}
	for i := range cr.nodes {
		n := &cr.nodes[i]
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		fmt.Fprintf(h, "n%s %v %v %s %v\x00", n.Name, ready, n.Spec.Unschedulable, n.Labels[v1alpha1.AcceleratorLabel], n.Status.Allocatable)
	}
	for _, k := range slices.Sorted(maps.Keys(cr.other)) {
		fmt.Fprintf(h, "o%s %d\x00", k, cr.other[k])
	}
	for _, k := range slices.Sorted(maps.Keys(cr.settings)) {
		fmt.Fprintf(h, "s%s %s\x00", k, cr.settings[k])
	}
	return h.Sum64() | 1
}
