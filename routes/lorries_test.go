package routes

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb"
)

// listed is the paths of a lorries answer.
func listed(m map[string]any) string {
	var out []string
	ls, _ := m["lorries"].([]any)
	for _, l := range ls {
		out = append(out, l.(map[string]any)["path"].(string))
	}
	return strings.Join(out, " ")
}

func TestListLorriesOverHTTP(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/one", "a/two", "b/x_y", "b/xay", "c/d")
	// In queue order: a/one succeeds, a/two fails, b/x_y succeeds, b/xay
	// fails.
	for i, exit := range []string{"0", "1", "0", "1"} {
		runJob(t, ts, "m", "out "+string(rune('0'+i))+"\n", exit)
	}
	tests := []struct {
		name  string
		query string
		want  string
		next  any
	}{
		{name: "all", query: "", want: "a/one a/two b/x_y b/xay c/d", next: nil},
		{name: "first page", query: "limit=2", want: "a/one a/two", next: "a/two"},
		{name: "next page", query: "limit=2&after=a/two", want: "b/x_y b/xay", next: "b/xay"},
		{name: "last page", query: "limit=2&after=b/xay", want: "c/d", next: nil},
		{name: "failing", query: "state=failing", want: "a/two b/xay", next: nil},
		{name: "ok", query: "state=ok&limit=2", want: "a/one b/x_y", next: "b/x_y"},
		{name: "hard-failed", query: "state=hard-failed", want: "", next: nil},
		{name: "prefix", query: "prefix=b/", want: "b/x_y b/xay", next: nil},
		{name: "prefix with an underscore", query: "prefix=b/x_", want: "b/x_y", next: nil},
		{name: "queue", query: "queue=default&state=failing&prefix=b", want: "b/xay", next: nil},
		{name: "no such queue", query: "queue=nothing", want: "", next: nil},
		{name: "most", query: "limit=1000", want: "a/one a/two b/x_y b/xay c/d", next: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, m := ts.call(t, "GET", "/1.0/lorries?"+tc.query, nil)
			if code != 200 {
				t.Fatalf("GET /1.0/lorries?%s = %d %v", tc.query, code, m)
			}
			if got := listed(m); got != tc.want || m["next"] != tc.next {
				t.Errorf("GET /1.0/lorries?%s = %q, next %v; want %q, next %v", tc.query, got, m["next"], tc.want, tc.next)
			}
			if ls, ok := m["lorries"].([]any); !ok || ls == nil {
				t.Errorf("GET /1.0/lorries?%s: lorries is %v; want a list", tc.query, m["lorries"])
			}
		})
	}

	// Each lorry is shown as status shows it in the run queue.
	_, st := ts.call(t, "GET", "/1.0/status", nil)
	_, m := ts.call(t, "GET", "/1.0/lorries", nil)
	byPath := map[string]any{}
	for _, l := range st["run_queue"].([]any) {
		byPath[l.(map[string]any)["path"].(string)] = l
	}
	for _, l := range m["lorries"].([]any) {
		p := l.(map[string]any)["path"].(string)
		if !reflect.DeepEqual(l, byPath[p]) {
			t.Errorf("lorries shows %s as\n%v\nwhere status shows\n%v", p, l, byPath[p])
		}
	}
	if l := m["lorries"].([]any)[1].(map[string]any); l["state"] != statedb.StateFailing {
		t.Errorf("a/two is %v; want failing", l["state"])
	}
}

func TestListLorriesRefusesBadParameters(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/one")
	for _, query := range []string{"state=due", "state=FAILING", "state=failed", "limit=0", "limit=-1", "limit=1001",
		"limit=ten", "limit=1.5", "limit=99999999999999999999"} {
		code, m := ts.call(t, "GET", "/1.0/lorries?"+query, nil)
		if msg, _ := m["error"].(string); code != 400 || msg == "" {
			t.Errorf("GET /1.0/lorries?%s = %d %v; want 400 with the reason", query, code, m)
		}
	}
}

func TestListLorriesHidesSecrets(t *testing.T) {
	ts := newTestServer(t)
	configureHostile(t, ts)
	resp, err := http.Get(ts.url + "/1.0/lorries")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /1.0/lorries = %d, %v", resp.StatusCode, err)
	}
	body := string(b)
	if !strings.Contains(body, `"h/plain"`) || !strings.Contains(body, "alert(1)") {
		t.Fatalf("GET /1.0/lorries = %.300s; want the lorries", body)
	}
	if strings.Contains(body, "hunter2") {
		t.Errorf("GET /1.0/lorries shows a spec's credentials: %.300s", body)
	}
}
