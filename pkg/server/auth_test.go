package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/server"
)

func TestStaticTokens(t *testing.T) {
	s, err := server.ParseTokens(strings.NewReader(`# users of the test cluster
alice-token,alice,1
admin-token,root,2,"voda:admins,dev"

bob-token, bob ,3,""
`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		token string
		ok    bool
		want  server.User
	}{
		{"alice-token", true, server.User{Name: "alice"}},
		{"admin-token", true, server.User{Name: "root", Groups: []string{"voda:admins", "dev"}}},
		{"bob-token", true, server.User{Name: "bob"}},
		{"alice-token ", false, server.User{}},
		{"", false, server.User{}},
		{"ALICE-TOKEN", false, server.User{}},
	}
	for _, c := range cases {
		u, ok, err := s.Authenticate(context.Background(), c.token)
		if err != nil {
			t.Fatal(err)
		}
		if ok != c.ok {
			t.Errorf("%q: ok %v, want %v", c.token, ok, c.ok)
		}
		if diff := cmp.Diff(c.want, u); diff != "" {
			t.Errorf("%q: user (-want +got):\n%s", c.token, diff)
		}
	}
}

func TestStaticTokensRefuseBadFiles(t *testing.T) {
	cases := map[string]struct{ file, want string }{
		"empty":           {"", "no tokens"},
		"comments only":   {"# nothing\n", "no tokens"},
		"too few fields":  {"tok,alice\n", "line 1: want token,user,uid"},
		"too many fields": {"tok,alice,1,g,extra\n", "line 1: want token,user,uid"},
		"empty token":     {",alice,1\n", "line 1: the token and the user name must not be empty"},
		"empty user":      {"tok,,1\n", "must not be empty"},
		"duplicate token": {"tok,alice,1\ntok,bob,2\n", "line 2: the token appears twice"},
		"bad quoting":     {"tok,\"alice,1\n", "extraneous or missing"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := server.ParseTokens(strings.NewReader(c.file))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}
