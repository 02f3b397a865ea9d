package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// User is an authenticated caller.
type User struct {
	Name   string
	Groups []string
}

// Authenticator maps a bearer token to a user. ok is false for a token it
// does not accept; err is for failures to decide (the answer is then 503,
// not 401).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (u User, ok bool, err error)
}

// TokenReview authenticates bearer tokens with the Kubernetes API server's
// TokenReview API: service-account tokens, and user tokens of whatever
// authenticators the cluster runs. The caller's client needs permission to
// create tokenreviews.authentication.k8s.io.
type TokenReview struct {
	Client client.Client
	// Audiences, if set, are the audiences a token must be meant for; empty
	// means the API server's own.
	Audiences []string
}

// Authenticate asks the API server about the token.
func (a TokenReview) Authenticate(ctx context.Context, token string) (User, bool, error) {
	tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: a.Audiences}}
	if err := a.Client.Create(ctx, tr); err != nil {
		return User{}, false, fmt.Errorf("token review: %w", err)
	}
	if !tr.Status.Authenticated {
		return User{}, false, nil
	}
	return User{Name: tr.Status.User.Username, Groups: tr.Status.User.Groups}, true, nil
}

// StaticTokens authenticates bearer tokens from a file, for clusters where
// the API server's TokenReview is not available. The file has the layout of
// kube-apiserver's --token-auth-file: one CSV line per token,
//
//	token,user,uid,"group1,group2"
//
// with the groups optional. Blank lines and lines starting with # are
// skipped.
type StaticTokens struct {
	// Tokens are kept hashed, compared in constant time.
	entries []staticToken
}

type staticToken struct {
	hash [sha256.Size]byte
	user User
}

// LoadTokenFile reads a static token file.
func LoadTokenFile(path string) (*StaticTokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseTokens reads the static token layout from r.
func ParseTokens(r io.Reader) (*StaticTokens, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	s := &StaticTokens{}
	seen := map[[sha256.Size]byte]bool{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(rec) < 3 || len(rec) > 4 {
			return nil, fmt.Errorf("line %d: want token,user,uid[,\"group1,group2\"], got %d fields", line, len(rec))
		}
		tok, name := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if tok == "" || name == "" {
			return nil, fmt.Errorf("line %d: the token and the user name must not be empty", line)
		}
		h := sha256.Sum256([]byte(tok))
		if seen[h] {
			return nil, fmt.Errorf("line %d: the token appears twice", line)
		}
		seen[h] = true
		u := User{Name: name}
		if len(rec) == 4 {
			for g := range strings.SplitSeq(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		s.entries = append(s.entries, staticToken{hash: h, user: u})
	}
	if len(s.entries) == 0 {
		return nil, errors.New("no tokens")
	}
	return s, nil
}

// Authenticate looks the token up. Every entry is compared, so the time
// taken does not tell which one matched.
func (s *StaticTokens) Authenticate(_ context.Context, token string) (User, bool, error) {
	h := sha256.Sum256([]byte(token))
	var found *User
	for i := range s.entries {
		if subtle.ConstantTimeCompare(h[:], s.entries[i].hash[:]) == 1 {
			found = &s.entries[i].user
		}
	}
	if found == nil {
		return User{}, false, nil
	}
	return User{Name: found.Name, Groups: slices.Clone(found.Groups)}, true, nil
}

// bearerToken extracts the token of an Authorization header.
func bearerToken(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// RememberAccepted returns an Authenticator that remembers, for ttl, the
// users a wraps accepted: a dashboard authenticates every page and every
// partial update, and with TokenReview each would be a request to the API
// server, which waits behind the writes when thousands of jobs start.
// (kube-apiserver caches its webhook token reviews the same way, for two
// minutes by default.) Tokens it refused and failures to decide are not
// remembered, so a token that becomes valid works at once; a token
// revoked stays accepted for up to ttl. A service-account token is not
// remembered past its own expiry. ttl ≤ 0 returns a unchanged.
func RememberAccepted(a Authenticator, ttl time.Duration) Authenticator {
	if ttl <= 0 {
		return a
	}
	return &remembered{next: a, ttl: ttl, now: time.Now, users: map[[sha256.Size]byte]rememberedUser{}}
}

// maxRemembered bounds the tokens RememberAccepted keeps: past it, the
// expired ones are dropped, and if none has expired, all of them.
const maxRemembered = 4096

type remembered struct {
	next  Authenticator
	ttl   time.Duration
	now   func() time.Time
	mu    sync.Mutex
	users map[[sha256.Size]byte]rememberedUser // by the token's hash
}

type rememberedUser struct {
	u     User
	until time.Time
}

func (r *remembered) Authenticate(ctx context.Context, token string) (User, bool, error) {
	key := sha256.Sum256([]byte(token))
	now := r.now()
	r.mu.Lock()
	ru, ok := r.users[key]
	r.mu.Unlock()
	if ok && now.Before(ru.until) {
		return ru.u, true, nil
	}
	u, ok, err := r.next.Authenticate(ctx, token)
	if err != nil || !ok {
		r.mu.Lock()
		delete(r.users, key)
		r.mu.Unlock()
		return u, ok, err
	}
	until := now.Add(r.ttl)
	if exp, has := tokenExpiry(token); has && exp.Before(until) {
		until = exp
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.users) >= maxRemembered {
		for k, v := range r.users {
			if !now.Before(v.until) {
				delete(r.users, k)
			}
		}
		if len(r.users) >= maxRemembered {
			clear(r.users)
		}
	}
	r.users[key] = rememberedUser{u: u, until: until}
	return u, true, nil
}
