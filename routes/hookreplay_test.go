package routes

import (
	"bytes"
	"slices"
	"testing"
)

// TestPushHookReplay sends each forge's signed push again: as it was, under
// a new delivery id, and a new body under the old delivery id. Each repeat
// is answered 200 and acted on no more; a day later, or with a new body
// and a new id, a push acts again.
func TestPushHookReplay(t *testing.T) {
	for _, tc := range []struct {
		name, route, file, lorry string
		headers                  func(body []byte, delivery string) map[string]string
	}{
		{"gitlab", "/1.0/hooks/gitlab", "gitlab-push.json", "m/widget", func(_ []byte, d string) map[string]string {
			return map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": testHookSecret, "Idempotency-Key": d}
		}},
		{"gitlab event uuid", "/1.0/hooks/gitlab", "gitlab-push.json", "m/widget", func(_ []byte, d string) map[string]string {
			return map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": testHookSecret, "X-Gitlab-Event-UUID": d}
		}},
		{"gitea", "/1.0/hooks/gitea", "gitea-push.json", "m/gadget", func(b []byte, d string) map[string]string {
			return map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": signed(b), "X-Gitea-Delivery": d}
		}},
		{"github", "/1.0/hooks/github", "github-push.json", "m/gizmo", func(b []byte, d string) map[string]string {
			return map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + signed(b), "X-GitHub-Delivery": d}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, func(s *Server) { s.HookSecret = []byte(testHookSecret) })
			ts.configureUpstreams(t, map[string]string{
				"m/widget": "https://gitlab.example.com/tools/widget.git",
				"m/gadget": "ssh://git@gitea.example.com:2222/tools/gadget.git",
				"m/gizmo":  "https://github.com/tools/gizmo",
			})
			settle := func() {
				t.Helper()
				ts.runAll(t)
				ts.FakeClock.Set(ts.FakeClock.Now().Unix() + 10)
				if due := ts.dueNow(t); len(due) != 0 {
					t.Fatalf("due after all ran = %v; want none", due)
				}
			}
			push := func(what string, body []byte, delivery string, wantRun bool) {
				t.Helper()
				code, ans := ts.post(t, tc.route, body, tc.headers(body, delivery))
				if code != 200 {
					t.Fatalf("%s: hook = %d %v; want 200", what, code, ans)
				}
				ls, _ := ans["lorries"].([]any)
				due := ts.dueNow(t)
				if wantRun {
					if ans["repeat"] != nil || len(ls) != 1 || !slices.Contains(due, tc.lorry) {
						t.Errorf("%s: hook answered %v, due %v; want %s run", what, ans, due, tc.lorry)
					}
				} else if ans["repeat"] != true || len(ls) != 0 || len(due) != 0 {
					t.Errorf("%s: hook answered %v, due %v; want a repeat, not acted on", what, ans, due)
				}
				settle()
			}
			settle()
			body := hookPayload(t, tc.file)
			push("first", body, "d-1", true)
			push("sent again", body, "d-1", false)
			push("under a new delivery id", body, "d-2", false)
			other := append(bytes.Clone(body), ' ')
			push("a new body under the old delivery id", other, "d-1", false)
			push("a new body and a new delivery id", append(bytes.Clone(body), ' ', ' '), "d-3", true)
			ts.FakeClock.Set(ts.FakeClock.Now().Unix() + 24*60*60)
			push("a day later", body, "d-1", true)
		})
	}
}

// TestPushHookReplayOtherRoute sends each forge's signed push, acted on
// at its own route, again to every other forge's route, signed as that
// forge signs (GitHub's and Gitea's signatures are the same HMAC of the
// body): a delivery is one delivery whichever route it arrives on, so
// each is a repeat, answered 200 and acted on no more, under its own
// delivery id or another; or, where the route cannot read the other
// forge's body, refused.
func TestPushHookReplayOtherRoute(t *testing.T) {
	type route struct {
		name, route, file, lorry string
		headers                  func(body []byte, delivery string) map[string]string
	}
	routes := []route{
		{"gitlab", "/1.0/hooks/gitlab", "gitlab-push.json", "m/widget", func(_ []byte, d string) map[string]string {
			return map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": testHookSecret, "Idempotency-Key": d}
		}},
		{"gitea", "/1.0/hooks/gitea", "gitea-push.json", "m/gadget", func(b []byte, d string) map[string]string {
			return map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": signed(b), "X-Gitea-Delivery": d}
		}},
		{"github", "/1.0/hooks/github", "github-push.json", "m/gizmo", func(b []byte, d string) map[string]string {
			return map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + signed(b), "X-GitHub-Delivery": d}
		}},
	}
	for _, first := range routes {
		for _, again := range routes {
			if again.name == first.name {
				continue
			}
			for _, delivery := range []string{"d-1", "d-2"} {
				t.Run(first.name+" then "+again.name+" "+delivery, func(t *testing.T) {
					ts := newTestServer(t, func(s *Server) { s.HookSecret = []byte(testHookSecret) })
					ts.configureUpstreams(t, map[string]string{
						"m/widget": "https://gitlab.example.com/tools/widget.git",
						"m/gadget": "ssh://git@gitea.example.com:2222/tools/gadget.git",
						"m/gizmo":  "https://github.com/tools/gizmo",
					})
					settle := func() {
						t.Helper()
						ts.runAll(t)
						ts.FakeClock.Set(ts.FakeClock.Now().Unix() + 10)
						if due := ts.dueNow(t); len(due) != 0 {
							t.Fatalf("due after all ran = %v; want none", due)
						}
					}
					settle()
					body := hookPayload(t, first.file)
					code, ans := ts.post(t, first.route, body, first.headers(body, "d-1"))
					if due := ts.dueNow(t); code != 200 || ans["repeat"] != nil || !slices.Contains(due, first.lorry) {
						t.Fatalf("%s: hook = %d %v, due %v; want 200 and %s run", first.route, code, ans, due, first.lorry)
					}
					settle()
					code, ans = ts.post(t, again.route, body, again.headers(body, delivery))
					ls, _ := ans["lorries"].([]any)
					due := ts.dueNow(t)
					// A GitLab push names no repository in the shape of the
					// others', nor theirs in GitLab's: refused unread.
					unread := (first.name == "gitlab") != (again.name == "gitlab")
					if unread && (code != 400 || len(due) != 0) {
						t.Errorf("%s's hook again on %s: %d %v, due %v; want 400, not acted on", first.name, again.route, code, ans, due)
					}
					if !unread && (code != 200 || ans["repeat"] != true || len(ls) != 0 || len(due) != 0) {
						t.Errorf("%s's hook again on %s: %d %v, due %v; want 200, a repeat, not acted on", first.name, again.route, code, ans, due)
					}
				})
			}
		}
	}
}
