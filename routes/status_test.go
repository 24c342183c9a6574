package routes

import (
	"reflect"
	"testing"
)

func TestStatusWithoutRunQueue(t *testing.T) {
	ts := newTestServer(t)
	ts.configure(t, "a/one", "a/two")
	_, full := ts.call(t, "GET", "/1.0/status?run_queue=true", nil)
	if q, _ := full["run_queue"].([]any); len(q) != 2 {
		t.Errorf("status?run_queue=true: run_queue %v; want the 2 lorries", full["run_queue"])
	}
	code, st := ts.call(t, "GET", "/1.0/status?run_queue=false", nil)
	if code != 200 {
		t.Fatalf("status?run_queue=false = %d %v", code, st)
	}
	if q, ok := st["run_queue"]; ok {
		t.Errorf("status?run_queue=false has run_queue %v; want none", q)
	}
	delete(full, "run_queue")
	for key, v := range full {
		// The free space may change between the two answers.
		if got, ok := st[key]; !ok || (key != "disk_free" && key != "warning_msg" && !reflect.DeepEqual(got, v)) {
			t.Errorf("status?run_queue=false: %s = %v; want %v as in the full status", key, got, v)
		}
	}
	for _, query := range []string{"run_queue=", "run_queue=no", "run_queue=False", "run_queue=0"} {
		if code, m := ts.call(t, "GET", "/1.0/status?"+query, nil); code != 400 {
			t.Errorf("status?%s = %d %v; want 400", query, code, m)
		}
	}
}
