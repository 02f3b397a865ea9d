package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vodascheduler/voda/pkg/server"
)

// A session's cookie lasts 12 hours by the server's clock, in both its
// Expires and its Max-Age, whatever the machine's clock says.
func TestSessionCookieFollowsTheServersClock(t *testing.T) {
	tokens, err := server.ParseTokens(strings.NewReader("alice-token,alice,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2031, 3, 1, 8, 0, 0, 0, time.UTC) // years from the real clock
	s, err := server.New(fake.NewClientBuilder().Build(), tokens, server.Options{UI: true, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/ui/login", strings.NewReader(url.Values{"token": {"alice-token"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	ck := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || len(ck) != 1 {
		t.Fatalf("login: %d, cookies %+v\n%s", rec.Code, ck, rec.Body)
	}
	if ck[0].MaxAge != 12*3600 || !ck[0].Expires.Equal(now.Add(12*time.Hour)) {
		t.Errorf("session cookie Max-Age %d s, Expires %s; want 43200 s and %s", ck[0].MaxAge, ck[0].Expires, now.Add(12*time.Hour))
	}
}
