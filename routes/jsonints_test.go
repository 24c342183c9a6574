package routes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"testing"
)

// checkJSONIntegers fails a JSON answer that holds an integer beyond
// ±(2^53-1), which a JavaScript client reads as another number.
func checkJSONIntegers(a *teeWriter) error {
	if !strings.HasPrefix(a.Header().Get("Content-Type"), "application/json") {
		return nil
	}
	return jsonIntegersSafe(a.body.Bytes())
}

// jsonIntegersSafe walks the JSON document b, every value of every
// object and list, and fails on the first integer beyond ±(2^53-1).
func jsonIntegersSafe(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil // not JSON: the validators say so
	}
	limit := big.NewInt(maxJSONInt)
	var walk func(at string, v any) error
	walk = func(at string, v any) error {
		switch v := v.(type) {
		case json.Number:
			n, ok := new(big.Int).SetString(v.String(), 10)
			if ok && n.CmpAbs(limit) > 0 {
				return fmt.Errorf("%s is %s, beyond ±(2^53-1)", at, v)
			}
		case map[string]any:
			for k, e := range v {
				if err := walk(at+"."+k, e); err != nil {
					return err
				}
			}
		case []any:
			for i, e := range v {
				if err := walk(fmt.Sprintf("%s[%d]", at, i), e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("$", v)
}

func TestJSONIntegersSafe(t *testing.T) {
	tests := []struct {
		name, doc string
		ok        bool
	}{
		{name: "small", doc: `{"a":[1,-2,{"b":9007199254740991}]}`, ok: true},
		{name: "smallest", doc: `[-9007199254740991]`, ok: true},
		{name: "float", doc: `[1e300, 0.5]`, ok: true},
		{name: "2^53", doc: `{"a":9007199254740992}`},
		{name: "-2^53", doc: `[-9007199254740992]`},
		{name: "2^62 deep", doc: `{"a":[{"next_due":4611686018427387904}]}`},
		{name: "beyond int64", doc: `[99999999999999999999999]`},
	}
	for _, tc := range tests {
		if err := jsonIntegersSafe([]byte(tc.doc)); (err == nil) != tc.ok {
			t.Errorf("%s: jsonIntegersSafe(%s) = %v; want ok %v", tc.name, tc.doc, err, tc.ok)
		}
	}
}

// TestNeverDueIsNull hard-fails a lorry and reads it through every JSON
// route that shows a lorry: its next_due is null, never 2^62, and no
// answer (each walked by checkAnswers) holds an integer beyond 2^53-1.
func TestNeverDueIsNull(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/b", "c/d")
	hardFail(t, ts, "a/b")
	answers := map[string]func(map[string]any) []any{
		"/1.0/lorry/a%2Fb": func(m map[string]any) []any { return []any{m} },
		"/1.0/lorries":     func(m map[string]any) []any { return m["lorries"].([]any) },
		"/1.0/status":      func(m map[string]any) []any { return m["run_queue"].([]any) },
	}
	for path, lorries := range answers {
		code, m := ts.call(t, "GET", path, nil)
		if code != 200 {
			t.Fatalf("GET %s = %d %v", path, code, m)
		}
		seen := 0
		for _, l := range lorries(m) {
			l := l.(map[string]any)
			due, present := l["next_due"]
			switch l["path"] {
			case "a/b":
				seen++
				if !present || due != nil {
					t.Errorf("GET %s: hard-failed a/b has next_due %v (present %v); want null", path, due, present)
				}
			case "c/d":
				seen++
				if _, isNumber := due.(float64); !isNumber {
					t.Errorf("GET %s: c/d has next_due %v; want a time", path, due)
				}
			}
		}
		if want := map[bool]int{true: 1, false: 2}[strings.HasPrefix(path, "/1.0/lorry/")]; seen != want {
			t.Errorf("GET %s showed %d of the lorries; want %d", path, seen, want)
		}
	}
}

// hardFail has a minion fail path's jobs with class auth until it is
// hard-failed.
func hardFail(t *testing.T, ts *testServer, path string) {
	t.Helper()
	m := url.Values{"minion": {"m1"}, "host": {"h"}, "pid": {"1"}}
	for range 20 {
		_, l := ts.call(t, "GET", "/1.0/lorry/"+url.PathEscape(path), nil)
		if l["state"] == "hard-failed" {
			return
		}
		if due := int64(l["next_due"].(float64)); due > ts.FakeClock.Now().Unix() {
			ts.FakeClock.Set(due)
		}
		if code, m := ts.call(t, "POST", "/1.0/move-to-top", url.Values{"path": {path}}); code != 200 {
			t.Fatalf("move-to-top = %d %v", code, m)
		}
		code, j := ts.call(t, "POST", "/1.0/give-me-job", m)
		if code != 200 || j["path"] != path {
			t.Fatalf("give-me-job = %d %v; want a job of %s", code, j, path)
		}
		u := url.Values{"minion": {"m1"}, "host": {"h"}, "pid": {"1"}, "job_id": {fmt.Sprint(j["job_id"])}, "exit": {"1"}, "error_class": {"auth"}}
		if code, m := ts.call(t, "POST", "/1.0/job-update", u); code != 200 {
			t.Fatalf("job-update = %d %v", code, m)
		}
	}
	t.Fatalf("%s is not hard-failed after 20 auth failures", path)
}
