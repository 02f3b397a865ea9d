package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"
)

// askCount is an Authenticator of fixed answers that counts its calls.
type askCount struct {
	calls map[string]int
	users map[string]User
	err   error
}

func (a *askCount) Authenticate(_ context.Context, token string) (User, bool, error) {
	a.calls[token]++
	if a.err != nil {
		return User{}, false, a.err
	}
	u, ok := a.users[token]
	return u, ok, nil
}

// jwtExpiring is a token of the JWT layout whose exp claim is at.
func jwtExpiring(at time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(fmt.Appendf(nil, `{"exp":%d}`, at.Unix())) + ".sig"
}

// TestRememberAccepted: an accepted token is asked about once per TTL,
// never past its own expiry; refusals and failures are asked about every
// time.
func TestRememberAccepted(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	short := jwtExpiring(now.Add(3 * time.Second))
	next := &askCount{calls: map[string]int{}, users: map[string]User{"good": {Name: "alice"}, short: {Name: "bot"}}}
	a := RememberAccepted(next, 10*time.Second).(*remembered)
	a.now = func() time.Time { return now }
	ctx := context.Background()
	ask := func(token string, want bool) {
		t.Helper()
		u, ok, err := a.Authenticate(ctx, token)
		if err != nil || ok != want || ok && u.Name == "" {
			t.Fatalf("%q: %+v %v %v, want accepted %v", token, u, ok, err, want)
		}
	}
	for range 3 {
		ask("good", true)
		ask("bad", false)
		ask(short, true)
	}
	if next.calls["good"] != 1 || next.calls["bad"] != 3 || next.calls[short] != 1 {
		t.Errorf("within the TTL: asked %v", next.calls)
	}
	now = now.Add(5 * time.Second) // past the short token's expiry
	ask("good", true)
	ask(short, true)
	if next.calls["good"] != 1 || next.calls[short] != 2 {
		t.Errorf("after 5 s: asked %v", next.calls)
	}
	now = now.Add(6 * time.Second) // past the TTL
	ask("good", true)
	if next.calls["good"] != 2 {
		t.Errorf("after the TTL: asked %v", next.calls)
	}
	// Revoked: accepted until the TTL ends, then refused and forgotten.
	delete(next.users, "good")
	ask("good", true)
	now = now.Add(11 * time.Second)
	ask("good", false)
	ask("good", false)
	if next.calls["good"] != 4 {
		t.Errorf("revoked: asked %v", next.calls)
	}
	// Failures to decide are not remembered either.
	next.err = errors.New("API server down")
	if _, _, err := a.Authenticate(ctx, "good"); err == nil {
		t.Error("a failure was not passed on")
	}
	// Bounded: past maxRemembered tokens the expired ones go.
	next.err = nil
	for i := range maxRemembered + 10 {
		tok := fmt.Sprint("t", i)
		next.users[tok] = User{Name: tok}
		ask(tok, true)
		if i == maxRemembered/2 {
			now = now.Add(time.Minute)
		}
	}
	if n := len(a.users); n > maxRemembered {
		t.Errorf("%d tokens remembered, at most %d", n, maxRemembered)
	}
	if RememberAccepted(next, 0) != Authenticator(next) {
		t.Error("a TTL of 0 should not wrap")
	}
}
