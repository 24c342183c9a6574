package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
	"lorrycontroller.dev/lc/hosts/hoststest"
)

// upstreamHost parses a host section the way the configuration reader
// does, so tests see the Host that NewLister will be given.
func upstreamHost(t testing.TB, sec map[string]any) confgit.Host {
	t.Helper()
	data, err := json.Marshal(sec)
	if err != nil {
		t.Fatal(err)
	}
	h, err := confgit.ParseHostSection(string(data))
	if err != nil {
		t.Fatalf("ParseHostSection(%s): %v", data, err)
	}
	return h
}

// sectionWith returns a copy of base with the keys of extra set.
func sectionWith(base map[string]any, extra map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// checkCredentialHeader checks that every request carried the credential
// in header exactly as want, and none carried it in its URL.
func checkCredentialHeader(t *testing.T, reqs []hoststest.Request, header, want, secret string) {
	t.Helper()
	if len(reqs) == 0 {
		t.Fatal("the host got no request")
	}
	for _, r := range reqs {
		if got := r.Header.Get(header); got != want {
			t.Errorf("request %s: header %s = %q; want %q", r.URL, header, got, want)
		}
		if secret != "" && strings.Contains(r.URL, secret) {
			t.Errorf("request URL %s carries the secret", r.URL)
		}
	}
}

// answerJSON writes the answer of a server that is not one of the fakes.
func answerJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// syncBuffer is a log destination that tests read while listers write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func debugLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func listPaths(repos []Repo) []string {
	out := make([]string, len(repos))
	for i, r := range repos {
		out[i] = r.Path
	}
	return out
}

// The keys of a host section are checked by confgit when it decodes them;
// NewLister refuses only a Host that no lister could list.
func TestNewListerRejects(t *testing.T) {
	tests := []struct {
		name    string
		host    confgit.Host
		wantKey string
		want    string
	}{
		{name: "protocol unknown for the type", host: confgit.Host{Type: "gitlab", Name: "gitlab.example.com", Protocol: "git"}, wantKey: "protocol", want: `"git" is not a protocol for a gitlab host`},
		{name: "unknown type", host: confgit.Host{Type: "gerrit", Name: "gerrit.example.com", Protocol: "ssh"}, wantKey: "type", want: `no lister for host type "gerrit"`},
		{name: "github with no owner", host: confgit.Host{Type: "github", Name: "github.com", Protocol: "https"}, wantKey: "org", want: `needs "org" or "user"`},
		{name: "default api-url with credentials", host: confgit.Host{Type: "gitea", Name: "u@gitea.example.com", Protocol: "https"}, wantKey: "api-url", want: "must not carry credentials"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLister(tc.host, ListerOptions{})
			if err == nil {
				t.Fatalf("got lister %T and no error; want an error about %q", l, tc.wantKey)
			}
			var ce *confgit.ConfError
			if !errors.As(err, &ce) || !errors.Is(err, confgit.ErrBadConf) {
				t.Fatalf("got error %v (%T); want a *confgit.ConfError", err, err)
			}
			if ce.Key != tc.wantKey {
				t.Errorf("got key %q; want %q (error %v)", ce.Key, tc.wantKey, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %q; want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNewListerAccepts(t *testing.T) {
	tests := []struct {
		name string
		sec  map[string]any
	}{
		{name: "gitlab, everything visible", sec: map[string]any{"type": "gitlab", "host": "gitlab.example.com", "private-token": "t"}},
		{name: "gitlab, anonymous group over ssh", sec: map[string]any{"type": "gitlab", "host": "gitlab.example.com", "group": "a/b", "protocol": "ssh"}},
		{name: "gitlab, all the keys", sec: map[string]any{"type": "gitlab", "host": "gitlab.example.com", "group": "g", "private-token": "t",
			"api-url": "https://gitlab.example.com/gitlab/api/v4/", "check-certificates": false, "clone-with-token": true, "protocol": "http"}},
		{name: "gitea, with old and unknown keys", sec: map[string]any{"type": "gitea", "host": "gitea.example.com", "token": "t", "uuid": "x", "frobnicate": 1}},
		{name: "gitea, same token twice", sec: map[string]any{"type": "gitea", "host": "gitea.example.com", "token": "t", "private-token": "t", "org": "o"}},
		{name: "github user", sec: map[string]any{"type": "github", "host": "github.com", "user": "u"}},
		{name: "github enterprise over http", sec: map[string]any{"type": "github", "host": "ghe.example.com", "org": "o", "protocol": "http"}},
		{name: "trove over ssh", sec: map[string]any{"type": "trove", "trovehost": "git.baserock.org"}},
		{name: "trove over https with auth", sec: map[string]any{"type": "trove", "host": "trove.example.com", "protocol": "https",
			"auth": map[string]any{"username": "u", "password": "p"}, "check-certificates": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewLister(upstreamHost(t, tc.sec), ListerOptions{}); err != nil {
				t.Errorf("got error %v; want none", err)
			}
		})
	}
}

func TestCheckCertificates(t *testing.T) {
	cases := []struct {
		name  string
		start func(t *testing.T) (host string)
		sec   map[string]any
	}{
		{name: "gitlab", start: func(t *testing.T) string {
			f := hoststest.NewGitLab(t, hoststest.GitLabOptions{TLS: true})
			f.AddProjects(hoststest.GitLabProjects(3, "g"))
			return f.Host()
		}, sec: map[string]any{"type": "gitlab"}},
		{name: "gitea", start: func(t *testing.T) string {
			f := hoststest.NewGitea(t, hoststest.GiteaOptions{TLS: true})
			f.AddUser("user1")
			f.AddRepos(hoststest.GiteaRepos(3, "o"))
			return f.Host()
		}, sec: map[string]any{"type": "gitea"}},
		{name: "github enterprise", start: func(t *testing.T) string {
			f := hoststest.NewGitHub(t, hoststest.GitHubOptions{Prefix: "/api/v3", TLS: true})
			f.AddOrg("o", hoststest.GitHubRepos(3, "o"))
			return f.Host()
		}, sec: map[string]any{"type": "github", "org": "o"}},
		{name: "trove", start: func(t *testing.T) string {
			return hoststest.NewGitano(t, "RW a/b\nR c/d\n", hoststest.GitanoOptions{TLS: true}).Host()
		}, sec: map[string]any{"type": "trove"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sec := sectionWith(tc.sec, map[string]any{"host": tc.start(t), "protocol": "https"})

			// The default checks the certificate, which no CA vouches for.
			l, err := NewLister(upstreamHost(t, sec), ListerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if repos, err := l.List(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Errorf("with certificates checked: got %d repos, error %v; want a certificate error", len(repos), err)
			}

			// Off for this host only: the transport it was given stays as it was.
			base := http.DefaultTransport.(*http.Transport).Clone()
			l, err = NewLister(upstreamHost(t, sectionWith(sec, map[string]any{"check-certificates": false})), ListerOptions{Transport: base})
			if err != nil {
				t.Fatal(err)
			}
			repos, err := l.List(context.Background())
			if err != nil {
				t.Fatalf("with check-certificates false: got error %v; want none", err)
			}
			if len(repos) == 0 {
				t.Errorf("with check-certificates false: got no repos; want some")
			}
			if base.TLSClientConfig != nil && base.TLSClientConfig.InsecureSkipVerify {
				t.Error("check-certificates false turned verification off in the shared transport")
			}
		})
	}
}

func TestCheckCertificatesNeedsTransport(t *testing.T) {
	h := upstreamHost(t, map[string]any{"type": "gitlab", "host": "gitlab.example.com", "check-certificates": false})
	rt := listerRoundTrip(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })
	_, err := NewLister(h, ListerOptions{Transport: rt})
	if err == nil || !strings.Contains(err.Error(), "*http.Transport") {
		t.Errorf("got error %v; want one saying an *http.Transport is needed", err)
	}
}

type listerRoundTrip func(*http.Request) (*http.Response, error)

func (f listerRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A host that echoes the credential back must not get it into an error.
func TestErrorsHideEchoedSecrets(t *testing.T) {
	const tok = "ghp_EchoedBackToken1234"
	tests := []struct {
		name   string
		sec    map[string]any
		status int
	}{
		{name: "gitlab 403", sec: map[string]any{"type": "gitlab", "private-token": tok}, status: http.StatusForbidden},
		{name: "gitea 500", sec: map[string]any{"type": "gitea", "token": tok}, status: http.StatusInternalServerError},
		{name: "github 401", sec: map[string]any{"type": "github", "org": "o", "token": tok}, status: http.StatusUnauthorized},
		{name: "trove 401", sec: map[string]any{"type": "trove", "auth": map[string]any{"username": "u", "password": tok}}, status: http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var hdrs []string
				for k, v := range r.Header {
					hdrs = append(hdrs, k+": "+strings.Join(v, ","))
				}
				answerJSON(w, tc.status, map[string]string{"message": "refused " + strings.Join(hdrs, "; ") + " at https://x:" + tok + "@h/"})
			}))
			defer srv.Close()
			var logs syncBuffer
			l, err := NewLister(upstreamHost(t, sectionWith(tc.sec, map[string]any{"host": srv.Listener.Addr().String(), "protocol": "http"})),
				ListerOptions{Logger: debugLogger(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.List(context.Background())
			if err == nil {
				t.Fatal("got no error; want one")
			}
			if !strings.Contains(err.Error(), fmt.Sprint(tc.status)) || !strings.Contains(err.Error(), "refused") {
				t.Errorf("got error %q; want the status and the host's message", err)
			}
			for _, leak := range []string{tok, "dTp" /* base64 of "u:" */} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error %q shows the credential %q", err, leak)
				}
				if strings.Contains(logs.String(), leak) {
					t.Errorf("log shows the credential %q:\n%s", leak, logs.String())
				}
			}
		})
	}
}

func TestLinkHeaderRel(t *testing.T) {
	tests := []struct {
		name, link, rel, want string
	}{
		{name: "github", link: `<https://api.github.com/organizations/1/repos?page=2>; rel="next", <https://api.github.com/organizations/1/repos?page=5>; rel="last"`, rel: "next", want: "https://api.github.com/organizations/1/repos?page=2"},
		{name: "gitea without spaces", link: `<https://g/api/v1/repos/search?limit=1&page=2>; rel="next",<https://g/api/v1/repos/search?limit=1&page=9>; rel="last"`, rel: "last", want: "https://g/api/v1/repos/search?limit=1&page=9"},
		{name: "prev before next", link: `<https://h/x?page=1>; rel="prev", <https://h/x?page=3>; rel="next"`, rel: "next", want: "https://h/x?page=3"},
		{name: "several relations, unquoted", link: `<https://h/x?a=1,2>; title="a, b"; rel=next`, rel: "next", want: "https://h/x?a=1,2"},
		{name: "no next", link: `<https://h/x?page=1>; rel="first"`, rel: "next", want: ""},
		{name: "garbage", link: `next, <`, rel: "next", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Link": {tc.link}}
			if got := linkHeaderRel(h, tc.rel); got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
}

func TestRateLimitWait(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		want    time.Duration
		limited bool
	}{
		{name: "github primary", status: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000042"}, want: 42 * time.Second, limited: true},
		{name: "github primary 429", status: 429, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000010"}, want: 10 * time.Second, limited: true},
		{name: "retry-after seconds", status: 429, header: map[string]string{"Retry-After": "7"}, want: 7 * time.Second, limited: true},
		{name: "retry-after date", status: 403, header: map[string]string{"Retry-After": now.Add(90 * time.Second).UTC().Format(http.TimeFormat)}, want: 90 * time.Second, limited: true},
		{name: "gitlab ratelimit headers", status: 429, header: map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": "1700000005"}, want: 5 * time.Second, limited: true},
		{name: "reset already past", status: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1699999990"}, want: time.Second, limited: true},
		{name: "secondary without headers", status: 403, body: `{"message":"You have exceeded a secondary rate limit."}`, want: time.Minute, limited: true},
		{name: "plain 403", status: 403, header: map[string]string{"X-RateLimit-Remaining": "4999"}, body: `{"message":"Resource not accessible"}`},
		{name: "401", status: 401, header: map[string]string{"X-RateLimit-Remaining": "0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{}}
			for k, v := range tc.header {
				resp.Header.Set(k, v)
			}
			got, reset, limited := rateLimitWait(resp, []byte(tc.body), now)
			if got != tc.want || limited != tc.limited {
				t.Errorf("got %v, %v; want %v, %v", got, limited, tc.want, tc.limited)
			}
			if limited && !reset.Equal(now.Add(got)) {
				t.Errorf("got reset %v; want %v", reset, now.Add(got))
			}
		})
	}
}

func TestSleepContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleepContext(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v; want context.Canceled", err)
	}
}
