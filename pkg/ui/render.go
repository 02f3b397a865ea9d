package ui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Static is the dashboard's style sheet and script, served under static/.
func Static() fs.FS {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}

// Page is what every page template gets.
type Page struct {
	// Page names the view: login, cluster, queue, job or message.
	Page  string
	Title string
	// Root is the relative path from the page to the dashboard's root, so
	// that every link works behind a proxy that adds a path prefix.
	Root    string
	Viewer  Viewer
	CSRF    string
	Version string
	// Stream is the relative URL of the page's event stream; empty turns
	// live updates off.
	Stream string
	// Policies are the names an admin may choose from.
	Policies []string
	Data     any
}

// LoginData is the login page's.
type LoginData struct {
	Next, Error string
}

// MessageData is an error page's.
type MessageData struct {
	Status  int
	Message string
	Back    string
}

var funcs = template.FuncMap{
	"duration":     Duration,
	"alternatives": Alternatives,
	"join":         strings.Join,
	"seconds":      func(d time.Duration) int64 { return int64(d / time.Second) },
	"clock":        func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"gpusPerWorker": func(tj *v1alpha1.TrainingJob) int32 {
		if tj.Status.GPUsPerWorker > 0 {
			return tj.Status.GPUsPerWorker
		}
		return max(tj.Spec.GPUsPerWorker, 1)
	},
}

// pages are parsed once: each is the layout with its own main part.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range []string{"login", "message", "cluster", "queue", "job", "teams"} {
		t := template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
		out[name] = t
	}
	return out
}()

// Render writes page p; partial writes only its main part, which the
// page's script swaps in on live updates.
func Render(w io.Writer, p Page, partial bool) error {
	t, ok := pages[p.Page]
	if !ok {
		return fmt.Errorf("no page %q", p.Page)
	}
	if p.Policies == nil {
		p.Policies = algorithm.Names()
	}
	name := "layout"
	if partial {
		name = "main"
	}
	// Rendered to a buffer first, so that a failure leaves no half page.
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name, p); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
