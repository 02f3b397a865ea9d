// Package client is a typed Go client of Voda's REST API (pkg/server), as
// used by the voda CLI.
//
// Import rule: pkg/apis only, and the standard library.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// Config says where the server is and how to authenticate.
type Config struct {
	// Server is the API's base URL, such as https://voda.example:8443.
	Server string
	// Token is the bearer token.
	Token string
	// CAFile, if set, is a PEM file of certificate authorities for an HTTPS
	// server; InsecureSkipVerify turns certificate checks off.
	CAFile             string
	InsecureSkipVerify bool
	// Timeout bounds every request; zero means 30 s.
	Timeout time.Duration
}

// Client calls the API.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// Error is an answer of the server with a status code of 400 or more.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// StatusOf returns the HTTP status of an API error, or 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Server == "" {
		return nil, errors.New("no server given")
	}
	u, err := url.Parse(cfg.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q is not an http:// or https:// URL", cfg.Server)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" || cfg.InsecureSkipVerify {
		tc := &tls.Config{InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // the user asked for it
		if cfg.CAFile != "" {
			pem, err := os.ReadFile(cfg.CAFile)
			if err != nil {
				return nil, fmt.Errorf("certificate authority: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("certificate authority %s holds no PEM certificate", cfg.CAFile)
			}
			tc.RootCAs = pool
		}
		tr.TLSClientConfig = tc
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	return &Client{base: u, token: cfg.Token, http: &http.Client{Transport: tr, Timeout: timeout}}, nil
}

// do sends a request and decodes a JSON answer into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body []byte, contentType string, out any) error {
	u := c.base.JoinPath(path)
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		var e rest.Error
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
			if e.Error == "" {
				e.Error = resp.Status
			}
		}
		return &Error{Status: resp.StatusCode, Message: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not what a Voda server sends (%w); is %s a Voda server?", method, path, err, c.base)
	}
	return nil
}

// CreateJob submits a job file's content: a TrainingJob or an original
// MPIJob, YAML or JSON.
func (c *Client) CreateJob(ctx context.Context, data []byte) (*v1alpha1.TrainingJob, error) {
	var tj v1alpha1.TrainingJob
	ct := "application/yaml"
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		ct = "application/json"
	}
	return &tj, c.do(ctx, http.MethodPost, "/api/v1/jobs", nil, data, ct, &tj)
}

// JobFilter narrows ListJobs; empty fields match everything.
type JobFilter struct {
	Status, GPUType, User string
}

// ListJobs lists the jobs the caller may see, reading every page.
func (c *Client) ListJobs(ctx context.Context, f JobFilter) ([]v1alpha1.TrainingJob, error) {
	var all []v1alpha1.TrainingJob
	cont := ""
	for {
		l, err := c.ListJobsPage(ctx, f, 0, cont)
		if err != nil {
			return nil, err
		}
		all = append(all, l.Items...)
		if cont = l.Continue; cont == "" {
			return all, nil
		}
	}
}

// ListJobsPage reads one page of the list: up to limit jobs (0: the
// server's default) from where the continue token of the page before
// says (empty: the first page).
func (c *Client) ListJobsPage(ctx context.Context, f JobFilter, limit int, cont string) (rest.JobList, error) {
	q := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "gpuType": f.GPUType, "user": f.User, "continue": cont} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var l rest.JobList
	err := c.do(ctx, http.MethodGet, "/api/v1/jobs", q, nil, "", &l)
	return l, err
}

// GetJob reads one job.
func (c *Client) GetJob(ctx context.Context, name string) (*v1alpha1.TrainingJob, error) {
	var tj v1alpha1.TrainingJob
	return &tj, c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(name), nil, nil, "", &tj)
}

// DeleteJob deletes one job, its MPIJob and its pods.
func (c *Client) DeleteJob(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/jobs/"+url.PathEscape(name), nil, nil, "", nil)
}

// JobEvents returns a job's events, oldest first.
func (c *Client) JobEvents(ctx context.Context, name string) ([]rest.Event, error) {
	var l rest.EventList
	err := c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(name)+"/events", nil, nil, "", &l)
	return l.Items, err
}

// Schedulers describes the scheduler of every GPU type.
func (c *Client) Schedulers(ctx context.Context) ([]rest.Scheduler, error) {
	var l rest.SchedulerList
	err := c.do(ctx, http.MethodGet, "/api/v1/schedulers", nil, nil, "", &l)
	return l.Items, err
}

// Queues lists the queues jobs submitted through the API may name, each
// with its ClusterQueue's quota and use.
func (c *Client) Queues(ctx context.Context) ([]rest.Queue, error) {
	var l rest.QueueList
	err := c.do(ctx, http.MethodGet, "/api/v1/queues", nil, nil, "", &l)
	return l.Items, err
}

// SetScheduler changes a GPU type's algorithm or rate limit.
func (c *Client) SetScheduler(ctx context.Context, gpuType string, up rest.SchedulerUpdate) (*rest.Scheduler, error) {
	body, err := json.Marshal(up)
	if err != nil {
		return nil, err
	}
	var s rest.Scheduler
	return &s, c.do(ctx, http.MethodPut, "/api/v1/schedulers/"+url.PathEscape(gpuType), nil, body, "application/json", &s)
}

// Version asks the server for its version.
func (c *Client) Version(ctx context.Context) (*rest.Version, error) {
	var v rest.Version
	return &v, c.do(ctx, http.MethodGet, "/api/v1/version", nil, nil, "", &v)
}
