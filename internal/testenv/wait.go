package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// poll calls check with a growing interval (50 ms up to 1 s) until it reports
// done, returns an error, ctx ends or timeout passes; the environment never
// sleeps a fixed time instead of waiting for the state it needs. A non-nil
// watch is checked first on every round so a component that died ends the
// wait at once with its own error.
func poll(ctx context.Context, timeout time.Duration, what string, watch *process, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	interval := 50 * time.Millisecond
	var last error
	for {
		if watch != nil {
			if dead, err := watch.exited(); dead {
				return fmt.Errorf("waiting for %s: %w\n%s", what, err, watch.tail(30))
			}
		}
		done, err := check(ctx)
		if done {
			return err
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(interval):
		}
		interval = min(2*interval, time.Second)
	}
}

// PollUntil is poll for tests and commands: it waits until check reports true,
// with backoff, or fails after timeout with the last error check returned.
func PollUntil(ctx context.Context, timeout time.Duration, what string, check func(context.Context) (bool, error)) error {
	return poll(ctx, timeout, what, nil, check)
}

// httpOK reports whether GET url answers 200. client may be nil.
func httpOK(ctx context.Context, client *http.Client, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return true, nil
}

// insecureClient probes the health endpoints of components that serve with a
// self-signed certificate of their own.
var insecureClient = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // local health probe only
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. They are held open
// together so the same port is not handed out twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
