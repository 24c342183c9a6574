package confgit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// hostSection parses sec as a host section on its own.
func hostSection(t *testing.T, sec map[string]any) (Host, error) {
	t.Helper()
	data, err := json.Marshal(sec)
	if err != nil {
		t.Fatal(err)
	}
	return ParseHostSection(string(data))
}

// with returns a copy of base with the keys of extra set.
func with(base, extra map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func TestParseHostTypeKeysRejects(t *testing.T) {
	const secret = "glpat-s3cr3t-VALUE"
	gitlab := map[string]any{"type": "gitlab", "host": "gitlab.example.com"}
	gitea := map[string]any{"type": "gitea", "host": "gitea.example.com"}
	github := map[string]any{"type": "github", "host": "github.com", "org": "o"}
	trove := map[string]any{"type": "trove", "host": "trove.example.com", "protocol": "https"}
	tests := []struct {
		name    string
		sec     map[string]any
		wantKey string
		want    string
	}{
		{name: "gitlab group not a string", sec: with(gitlab, map[string]any{"group": 7}), wantKey: "group", want: "must be a string, not a number"},
		{name: "gitlab group empty", sec: with(gitlab, map[string]any{"group": ""}), wantKey: "group", want: "is empty"},
		{name: "gitlab group with space", sec: with(gitlab, map[string]any{"group": "a b"}), wantKey: "group", want: "space"},
		{name: "gitlab group with a slash at the end", sec: with(gitlab, map[string]any{"group": "a/"}), wantKey: "group", want: "must not start or end with a slash"},
		{name: "gitlab token not a string", sec: with(gitlab, map[string]any{"private-token": 12345}), wantKey: "private-token", want: "must be a string"},
		{name: "gitlab token with newline", sec: with(gitlab, map[string]any{"private-token": secret + "\nX-Evil: 1"}), wantKey: "private-token", want: "space or control character"},
		{name: "gitlab api-url not http", sec: with(gitlab, map[string]any{"api-url": "ftp://gitlab.example.com/api/v4"}), wantKey: "api-url", want: "http or https"},
		{name: "gitlab api-url with credentials", sec: with(gitlab, map[string]any{"api-url": "https://u:" + secret + "@gitlab.example.com/api/v4"}), wantKey: "api-url", want: "must not carry credentials"},
		{name: "gitlab api-url with query", sec: with(gitlab, map[string]any{"api-url": "https://gitlab.example.com/api/v4?private_token=" + secret}), wantKey: "api-url", want: "query"},
		{name: "gitlab check-certificates not a boolean", sec: with(gitlab, map[string]any{"check-certificates": "no"}), wantKey: "check-certificates", want: "must be true or false"},
		{name: "gitlab clone-with-token not a boolean", sec: with(gitlab, map[string]any{"clone-with-token": "yes"}), wantKey: "clone-with-token", want: "must be true or false, not a string"},
		{name: "gitlab clone-with-token without token", sec: with(gitlab, map[string]any{"clone-with-token": true}), wantKey: "clone-with-token", want: `needs "private-token"`},
		{name: "gitlab clone-with-token over ssh", sec: with(gitlab, map[string]any{"clone-with-token": true, "private-token": secret, "protocol": "ssh"}), wantKey: "clone-with-token", want: "for http and https"},
		{name: "gitea org and user", sec: with(gitea, map[string]any{"org": "o", "user": "u"}), wantKey: "user", want: `cannot be given with "org"`},
		{name: "gitea two different tokens", sec: with(gitea, map[string]any{"private-token": secret, "token": secret + "2"}), wantKey: "token", want: `differs from "private-token"`},
		{name: "gitea user not a string", sec: with(gitea, map[string]any{"user": []any{"u"}}), wantKey: "user", want: "must be a string, not a list"},
		{name: "github neither org nor user", sec: map[string]any{"type": "github", "host": "github.com"}, wantKey: "org", want: `needs "org" or "user"`},
		{name: "github org and user", sec: with(github, map[string]any{"user": "u"}), wantKey: "user", want: `cannot be given with "org"`},
		{name: "github.com over http", sec: with(github, map[string]any{"protocol": "http"}), wantKey: "protocol", want: `"http" is not a protocol for github.com`},
		{name: "github token not a string", sec: with(github, map[string]any{"token": true}), wantKey: "token", want: "must be a string, not a boolean"},
		{name: "trove auth not an object", sec: with(trove, map[string]any{"auth": "u:" + secret}), wantKey: "auth", want: "must be an object"},
		{name: "trove auth without password", sec: with(trove, map[string]any{"auth": map[string]any{"username": "u"}}), wantKey: "auth", want: `"password" is missing`},
		{name: "trove auth password not a string", sec: with(trove, map[string]any{"auth": map[string]any{"username": "u", "password": 1}}), wantKey: "auth", want: `"password" must be a string`},
		{name: "trove auth username with a colon", sec: with(trove, map[string]any{"auth": map[string]any{"username": "u:v", "password": secret}}), wantKey: "auth", want: `"username" must be non-empty and without ':'`},
		{name: "trove ssh-user like an option", sec: with(trove, map[string]any{"protocol": "ssh", "ssh-user": "-oProxyCommand=x"}), wantKey: "ssh-user", want: "is not a user name"},
		{name: "trove host like an option", sec: map[string]any{"type": "trove", "host": "-oProxyCommand=x"}, wantKey: "host", want: "must not start with '-'"},
		{name: "trove over https, check-certificates not a boolean", sec: with(trove, map[string]any{"check-certificates": 0}), wantKey: "check-certificates", want: "must be true or false, not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := hostSection(t, tc.sec)
			if err == nil {
				t.Fatalf("got host %+v and no error; want an error about %q", h, tc.wantKey)
			}
			var ce *ConfError
			if !errors.As(err, &ce) || !errors.Is(err, ErrBadConf) {
				t.Fatalf("got error %v (%T); want a *ConfError", err, err)
			}
			if ce.Key != tc.wantKey || ce.Type != tc.sec["type"] || ce.Section != -1 {
				t.Errorf("got section %d (%s) key %q; want section -1 (%s) key %q (error %v)", ce.Section, ce.Type, ce.Key, tc.sec["type"], tc.wantKey, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %q; want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}
}

// A type's keys are decoded into the Host; the keys of other types are
// ignored, as unknown keys are.
func TestParseHostTypeKeys(t *testing.T) {
	type keys struct {
		Group, Org, User, Token, TokenKey, APIURL, SSHUser string
		CloneWithToken, SkipCertificateCheck               bool
		Auth                                               *HostAuth
	}
	tests := []struct {
		name string
		sec  map[string]any
		want keys
	}{
		{name: "gitlab, none", sec: map[string]any{"type": "gitlab", "host": "gitlab.example.com", "org": 7},
			want: keys{TokenKey: "private-token"}},
		{name: "gitlab, all the keys", sec: map[string]any{"type": "gitlab", "host": "gitlab.example.com", "group": "g/sub", "private-token": "t",
			"api-url": "https://gitlab.example.com/gitlab/api/v4/", "check-certificates": false, "clone-with-token": true, "protocol": "http"},
			want: keys{Group: "g/sub", Token: "t", TokenKey: "private-token", APIURL: "https://gitlab.example.com/gitlab/api/v4", CloneWithToken: true, SkipCertificateCheck: true}},
		{name: "gitea, token", sec: map[string]any{"type": "gitea", "host": "gitea.example.com", "token": "t", "user": "u", "group": []any{}},
			want: keys{User: "u", Token: "t", TokenKey: "token"}},
		{name: "gitea, the same token twice", sec: map[string]any{"type": "gitea", "host": "gitea.example.com", "token": "t", "private-token": "t", "org": "o"},
			want: keys{Org: "o", Token: "t", TokenKey: "private-token"}},
		{name: "github, check-certificates true", sec: map[string]any{"type": "github", "host": "github.com", "org": "o", "check-certificates": true},
			want: keys{Org: "o", TokenKey: "private-token"}},
		{name: "trove over ssh", sec: map[string]any{"type": "trove", "trovehost": "git.baserock.org", "private-token": 1},
			want: keys{SSHUser: "git"}},
		{name: "trove over ssh reads no check-certificates, but false still holds", sec: map[string]any{"type": "trove", "host": "t.example", "ssh-user": "lorry", "check-certificates": false},
			want: keys{SSHUser: "lorry", SkipCertificateCheck: true}},
		{name: "trove over ssh ignores a check-certificates it does not read", sec: map[string]any{"type": "trove", "host": "t.example", "check-certificates": "no"},
			want: keys{SSHUser: "git"}},
		{name: "trove over https with auth", sec: map[string]any{"type": "trove", "host": "t.example", "protocol": "https",
			"auth": map[string]any{"username": "u", "password": "p"}},
			want: keys{SSHUser: "git", Auth: &HostAuth{Username: "u", Password: "p"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := hostSection(t, tc.sec)
			if err != nil {
				t.Fatalf("got error %v; want none", err)
			}
			got := keys{Group: h.Group, Org: h.Org, User: h.User, Token: h.Token, TokenKey: h.TokenKey, SSHUser: h.SSHUser,
				CloneWithToken: h.CloneWithToken, SkipCertificateCheck: h.SkipCertificateCheck, Auth: h.Auth}
			if h.APIURL != nil {
				got.APIURL = h.APIURL.String()
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
