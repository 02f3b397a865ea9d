package server_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// browserPath finds a Chromium: $VODA_BROWSER, else Debian's
// chromium-headless-shell or chromium. Without one the browser test
// skips, unless VODA_REQUIRE_BROWSER is set (CI sets it), when it fails.
func browserPath(t *testing.T) string {
	if p := os.Getenv("VODA_BROWSER"); p != "" {
		return p
	}
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	for _, p := range []string{"/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/chromium"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("VODA_REQUIRE_BROWSER") != "" {
		t.Fatal("no Chromium found and VODA_REQUIRE_BROWSER is set: install chromium-headless-shell (apt-get install chromium-headless-shell) or set VODA_BROWSER")
	}
	t.Skip("no Chromium found (apt-get install chromium-headless-shell, or set VODA_BROWSER)")
	return ""
}

// artifactDir is where the browser test saves its screenshots: $VODA_ARTIFACTS,
// else bin/test-artifacts/dashboard in the repository (ignored by git).
func artifactDir(t *testing.T) string {
	dir := os.Getenv("VODA_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "test-artifacts", "dashboard")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is one headless Chromium with a fresh profile, and the errors
// its pages log.
type browser struct {
	ctx    context.Context
	pgid   int // the process group the browser and its helpers run in
	mu     sync.Mutex
	errors []string
}

func newBrowser(t *testing.T, path string) *browser {
	// The browser runs in a process group of its own, ended as a whole:
	// cancelling chromedp's contexts kills only the process it started,
	// which for Debian's chromium-headless-shell is a shell script whose
	// child, the real browser, and its helpers would go on writing into
	// the profile while the test removes it.
	var cmd *exec.Cmd
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.ModifyCmdFunc(func(c *exec.Cmd) {
			c.SysProcAttr = testenv.GroupSysProcAttr()
			cmd = c
		}),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, 4*time.Minute)
	// Registered after the profile's TempDir, so it runs before the
	// profile is removed.
	t.Cleanup(func() {
		cancelC()
		cancelB()
		cancelA()
		if cmd == nil || cmd.Process == nil {
			return
		}
		if err := testenv.EndGroup(cmd.Process.Pid, 30*time.Second); err != nil {
			t.Errorf("the browser outlived its test: %v", err)
		}
	})
	b := &browser{ctx: ctx}
	chromedp.ListenTarget(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				msg = "console: " + strings.Join(args, " ")
			}
		case *runtime.EventExceptionThrown:
			msg = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.LevelError {
				msg = "log: " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	})
	if err := chromedp.Run(ctx, log.Enable(), runtime.Enable()); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	b.pgid = cmd.Process.Pid
	return b
}

func (b *browser) run(t *testing.T, what string, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		var loc string
		_ = chromedp.Run(b.ctx, chromedp.Location(&loc))
		t.Fatalf("%s (at %s): %v", what, loc, err)
	}
}

// login logs in through the login form as user and waits for the cluster
// page.
func (b *browser) login(t *testing.T, base, user string) {
	t.Helper()
	b.run(t, "log in as "+user,
		chromedp.Navigate(base+"/ui/login"),
		chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", tokens[user], chromedp.ByID),
		chromedp.Submit("#login", chromedp.ByID),
		chromedp.WaitVisible(`body[data-page="cluster"]`, chromedp.ByQuery),
	)
}

// waitFor waits until the JavaScript expression is true. It evaluates
// the expression afresh every 200 ms, so a page that navigates meanwhile
// (a form posted, a redirect) is read again rather than failing.
func (b *browser) waitFor(t *testing.T, what, expr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		var ok bool
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		err = chromedp.Run(ctx, chromedp.Evaluate(expr, &ok))
		cancel()
		if err == nil && ok {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	var html string
	_ = chromedp.Run(b.ctx, chromedp.OuterHTML("main", &html, chromedp.ByQuery))
	t.Fatalf("%s: not within %s (last error: %v); the page's main part:\n%s", what, within, err, html)
}

func (b *browser) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	var png []byte
	// A page that is still being laid out (just navigated) has no size
	// yet: try again for a moment.
	var err error
	for try := 0; try < 10; try++ {
		if err = chromedp.Run(b.ctx, chromedp.FullScreenshot(&png, 100)); err == nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// noReload marks the page so that a reload (which would drop the mark)
// is seen.
const setMark = `window.__vodaMark = 1; true`
const marked = `window.__vodaMark === 1`

// testDashboardBrowser drives the dashboard in a real browser against the
// controller on the control plane: an admin logs in and changes the
// policy; a job appears in the queue with its reason, takes GPUs in the
// cluster grid without a reload, is scaled and preempted, and its
// timeline shows it; a non-admin gets no settings form; no page logs an
// error.
func testDashboardBrowser(t *testing.T, e *apiEnv) {
	path := browserPath(t)
	dir := artifactDir(t)
	ctx := context.Background()
	if err := e.k8s.DeleteAllOf(ctx, &v1alpha1.TrainingJob{}, ctrlclient.InNamespace(apiNS)); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "no jobs left", func() (bool, error) { return len(e.jobs(t)) == 0, nil })
	create := func(user, yaml string) {
		t.Helper()
		if code, msg := e.call(t, "POST", "/api/v1/jobs", user, "application/yaml", yaml); code != 201 {
			t.Fatalf("create: %d %s", code, msg)
		}
	}

	b := newBrowser(t, path)
	b.login(t, e.url, "root")
	// The admin changes the policy; the page shows it.
	sel := fmt.Sprintf(`form[data-settings-form=%q]`, testGPUType)
	b.run(t, "change the policy",
		chromedp.Evaluate(setMark, nil),
		chromedp.SetValue(sel+` select[name="algorithm"]`, "ElasticTiresias", chromedp.ByQuery),
		chromedp.SetValue(sel+` input[name="rateLimit"]`, "300ms", chromedp.ByQuery),
		chromedp.Submit(sel, chromedp.ByQuery),
	)
	b.waitFor(t, "the cluster page shows Elastic-Tiresias", fmt.Sprintf(
		`window.__vodaMark === undefined && (document.querySelector('section[data-gpu-type=%q] [data-algorithm]')||{}).textContent === 'ElasticTiresias'`, testGPUType), 20*time.Second)
	b.screenshot(t, dir, "cluster-settings")

	// A job fills the type; alice's job waits: it appears in the open
	// queue page with its reason, without a reload.
	create("bob", dashJob("hog", 8, 8, 0))
	eventually(t, time.Minute, "hog runs", func() (bool, error) {
		j, err := e.client(t, "bob").GetJob(ctx, "hog")
		return err == nil && j.Status.Phase == v1alpha1.PhaseRunning, err
	})
	b.run(t, "open the queue", chromedp.Navigate(e.url+"/ui/queue"), chromedp.WaitVisible("table.queue", chromedp.ByQuery),
		chromedp.Evaluate(setMark, nil))
	b.waitFor(t, "the stream is open", `document.body.dataset.live === 'sse'`, 20*time.Second)
	create("alice", dashJob("train", 2, 8, 1))
	b.waitFor(t, "train appears waiting, with its reason", `(function(){
		var r = document.querySelector('tr[data-job="train"]');
		return !!r && r.dataset.phase === 'Waiting' && r.dataset.position === '1' && r.dataset.reasonCode === 'no-room' &&
			/2 GPUs needed, 0 free/.test(r.querySelector('[data-reason]').textContent) && window.__vodaMark === 1; })()`, 30*time.Second)
	b.screenshot(t, dir, "queue")

	// On the cluster page, train takes every GPU once hog is gone.
	b.run(t, "open the cluster", chromedp.Navigate(e.url+"/ui/cluster"), chromedp.WaitVisible(".grid", chromedp.ByQuery),
		chromedp.Evaluate(setMark, nil))
	b.waitFor(t, "the stream is open", `document.body.dataset.live === 'sse'`, 20*time.Second)
	if code, msg := e.call(t, "DELETE", "/api/v1/jobs/hog", "bob", "", ""); code != 200 {
		t.Fatalf("delete hog: %d %s", code, msg)
	}
	b.waitFor(t, "train holds 8 GPUs in the grid", `document.querySelectorAll('[data-kind="job"][data-job="train"]').length === 8 && `+marked, 45*time.Second)
	b.screenshot(t, dir, "cluster")

	// A queue-0 job shrinks train (scale), another preempts it.
	create("bob", dashJob("urgent", 6, 6, 0))
	eventually(t, time.Minute, "train scaled to 2", func() (bool, error) {
		j, err := e.client(t, "alice").GetJob(ctx, "train")
		return err == nil && j.Status.Phase == v1alpha1.PhaseRunning && j.Status.Workers == 2 && j.Status.Rescales > 0, err
	})
	create("bob", dashJob("urgent2", 2, 2, 0))
	eventually(t, time.Minute, "train preempted", func() (bool, error) {
		j, err := e.client(t, "alice").GetJob(ctx, "train")
		return err == nil && j.Status.Phase == v1alpha1.PhaseWaiting && j.Status.Preemptions > 0, err
	})
	b.run(t, "open train's page", chromedp.Navigate(e.url+"/ui/jobs/train"), chromedp.WaitVisible("svg.timeline", chromedp.ByQuery))
	b.waitFor(t, "the timeline shows the start, the scale and the preemption",
		`['start','scale','preempt'].every(function(k){ return document.querySelector('svg.timeline g.mark[data-kind="'+k+'"]') }) &&
		 document.querySelector('[data-phase]').dataset.phase === 'Waiting'`, 20*time.Second)
	b.screenshot(t, dir, "job")

	// Alice, not an admin, sees her job but no settings form and no
	// other user's job names.
	b2 := newBrowser(t, path)
	b2.login(t, e.url, "alice")
	var forms, hidden int
	b2.run(t, "read alice's cluster page",
		chromedp.Evaluate(`document.querySelectorAll('form[data-settings-form]').length`, &forms),
		chromedp.Evaluate(`document.querySelectorAll('[data-kind="hidden"]').length`, &hidden),
	)
	if forms != 0 || hidden != 8 {
		t.Errorf("alice's cluster page: %d settings forms (want 0), %d GPUs of other users' jobs (want 8)", forms, hidden)
	}
	b2.screenshot(t, dir, "cluster-non-admin")
	for _, br := range []*browser{b, b2} {
		br.mu.Lock()
		if len(br.errors) > 0 {
			t.Errorf("the pages logged errors:\n%s", strings.Join(br.errors, "\n"))
		}
		br.mu.Unlock()
	}
	t.Logf("screenshots in %s", dir)
	if err := e.k8s.DeleteAllOf(ctx, &v1alpha1.TrainingJob{}, ctrlclient.InNamespace(apiNS)); err != nil {
		t.Fatal(err)
	}
}

// A browser the tests start is gone, with every helper process it forked,
// once its test has ended: left running, it writes into its profile while
// the test removes it, and outlives the test run.
func TestBrowserEndsWithItsTest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	path := browserPath(t)
	var pgid int
	t.Run("browse", func(t *testing.T) {
		b := newBrowser(t, path)
		pgid = b.pgid
		var title string
		b.run(t, "open a page", chromedp.Navigate("data:text/html,<title>voda</title><p>hello"), chromedp.Title(&title))
		if title != "voda" {
			t.Fatalf("title: got %q, want %q", title, "voda")
		}
		if n := len(testenv.GroupMembers(pgid)); n < 2 {
			t.Fatalf("the browser's process group %d holds %d processes while it runs, want the browser and its helpers", pgid, n)
		}
	})
	if left := testenv.GroupMembers(pgid); len(left) > 0 {
		t.Errorf("after the test, the browser's process group %d still holds: %s", pgid, strings.Join(left, "; "))
	}
}
