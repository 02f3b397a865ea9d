package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Listener serves a handler until its context ends. It runs on every
// replica of the controller, leader or not (a controller-runtime Runnable
// that needs no leader election).
type Listener struct {
	// Addr is the address to listen on, such as ":8443".
	Addr string
	// CertFile and KeyFile, if both set, serve HTTPS.
	CertFile, KeyFile string
	Handler           http.Handler
	// Ready, if set, receives the bound address once listening.
	Ready func(net.Addr)
}

// shutdownKey is the context key of the channel closed when the serving
// Listener shuts down.
type shutdownKey struct{}

// shuttingDown is closed when the Listener serving r shuts down; nil when
// r was not served by a Listener.
func shuttingDown(ctx context.Context) <-chan struct{} {
	c, _ := ctx.Value(shutdownKey{}).(<-chan struct{})
	return c
}

// NeedLeaderElection is false: every replica serves the API.
func (l *Listener) NeedLeaderElection() bool { return false }

// Start listens and serves until ctx ends, then shuts down gracefully.
func (l *Listener) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", l.Addr)
	if err != nil {
		return err
	}
	if l.Ready != nil {
		l.Ready(ln.Addr())
	}
	// Long-lived responses (the dashboard's event streams) end when the
	// server shuts down, rather than holding up the shutdown.
	base := context.WithValue(context.Background(), shutdownKey{}, ctx.Done())
	srv := &http.Server{
		Handler:           l.Handler,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	done := make(chan error, 1)
	go func() {
		if l.CertFile != "" && l.KeyFile != "" {
			done <- srv.ServeTLS(ln, l.CertFile, l.KeyFile)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
