package forgehook

import (
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestNormalizeURL(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"https", "https://gitlab.example.com/tools/widget.git", "https://gitlab.example.com/tools/widget"},
		{"web URL", "https://GitLab.Example.com/tools/widget", "https://gitlab.example.com/tools/widget"},
		{"http is https", "HTTP://gitlab.example.com:80/tools/widget/", "https://gitlab.example.com/tools/widget"},
		{"user info", "https://user:secret@gitlab.example.com/tools/widget.git/", "https://gitlab.example.com/tools/widget"},
		{"scp-like", "git@gitlab.example.com:tools/widget.git", "ssh://gitlab.example.com/tools/widget"},
		{"ssh", "ssh://git@gitlab.example.com/tools/widget.git", "ssh://gitlab.example.com/tools/widget"},
		{"ssh port", "ssh://git@gitea.example.com:2222/tools/gadget.git", "ssh://gitea.example.com:2222/tools/gadget"},
		{"path case kept", "https://h.example/Tools/Widget", "https://h.example/Tools/Widget"},
		{"local path", "/srv/git/widget.git", ""},
		{"file URL", "file:///srv/git/widget.git", ""},
		{"empty", "", ""},
		{"no path", "https://h.example/", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NormalizeURL(tc.in); got != tc.want {
				t.Errorf("NormalizeURL(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSpecURL(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"git", `{"a/b":{"type":"git","url":"https://h.example/a/b.git"}}`, "https://h.example/a/b"},
		{"tarball", `{"a/b":{"type":"tarball","url":"https://h.example/a/b.tar.gz"}}`, ""},
		{"broken", `{`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SpecURL(tc.text); got != tc.want {
				t.Errorf("SpecURL(%s) = %q; want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	secret := []byte("s3cret")
	body := []byte(`{"ref":"refs/heads/main"}`)
	good := hex.EncodeToString(Sign(secret, body))
	other := hex.EncodeToString(Sign(secret, []byte(`{"ref":"refs/heads/evil"}`)))
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, tc := range []struct {
		name   string
		forge  string
		h      http.Header
		forged bool
	}{
		{"gitlab token", GitLab, hdr("X-Gitlab-Token", "s3cret"), false},
		{"gitlab wrong token", GitLab, hdr("X-Gitlab-Token", "s3cret2"), true},
		{"gitlab no token", GitLab, hdr(), true},
		{"gitea signature", Gitea, hdr("X-Gitea-Signature", good), false},
		{"gitea hub signature", Gitea, hdr("X-Hub-Signature-256", "sha256="+good), false},
		{"gitea other body", Gitea, hdr("X-Gitea-Signature", other), true},
		{"gitea not hex", Gitea, hdr("X-Gitea-Signature", "zz"), true},
		{"gitea none", Gitea, hdr(), true},
		{"github signature", GitHub, hdr("X-Hub-Signature-256", "sha256="+good), false},
		{"github other body", GitHub, hdr("X-Hub-Signature-256", "sha256="+other), true},
		{"github no prefix", GitHub, hdr("X-Hub-Signature-256", good), true},
		{"github gitea header only", GitHub, hdr("X-Gitea-Signature", good), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.forge, secret, tc.h, body)
			if got := errors.Is(err, ErrForged); got != tc.forged || (!tc.forged && err != nil) {
				t.Errorf("Verify = %v; want forged %v", err, tc.forged)
			}
		})
	}
	if err := Verify(GitLab, nil, hdr("X-Gitlab-Token", ""), body); err == nil {
		t.Error("Verify with no secret = nil; want an error")
	}
}

func TestDeliveryKeys(t *testing.T) {
	body := []byte(`{"ref": "refs/heads/main"}`)
	bodyKey := DeliveryKeys(GitHub, http.Header{}, body)
	if len(bodyKey) != 1 || !strings.HasPrefix(bodyKey[0], "body:") {
		t.Fatalf("keys without a delivery id: %v; want the body's alone", bodyKey)
	}
	for _, tc := range []struct {
		name, forge string
		h           http.Header
		want        string
	}{
		{"gitea", Gitea, http.Header{"X-Gitea-Delivery": {"d-1"}, "X-Github-Delivery": {"d-2"}}, "id:d-1"},
		{"gitea as github", Gitea, http.Header{"X-Github-Delivery": {"d-2"}}, "id:d-2"},
		{"github", GitHub, http.Header{"X-Github-Delivery": {"72d3162e"}}, "id:72d3162e"},
		{"gitlab idempotency key", GitLab, http.Header{"Idempotency-Key": {"k"}, "X-Gitlab-Event-Uuid": {"u"}}, "id:k"},
		{"gitlab event uuid", GitLab, http.Header{"X-Gitlab-Event-Uuid": {"u"}}, "id:u"},
		{"long id", GitHub, http.Header{"X-Github-Delivery": {strings.Repeat("x", 200)}}, "id:sha256:"},
		{"id with a newline", GitHub, http.Header{"X-Github-Delivery": {"a\nb"}}, "id:sha256:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := DeliveryKeys(tc.forge, tc.h, body)
			if len(keys) != 2 || !strings.HasPrefix(keys[0], tc.want) || keys[1] != bodyKey[0] {
				t.Errorf("got %v; want %s… and %s", keys, tc.want, bodyKey[0])
			}
		})
	}
}
