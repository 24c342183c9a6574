package webhook

import (
	"encoding/json"
	"reflect"
	"testing"

	"lorrycontroller.dev/lc/statedb"
)

// TestLinksToPublicURL has each notification link to the pages of what it
// is about under the public URL, and none without one.
func TestLinksToPublicURL(t *testing.T) {
	const pub = "https://lorry.example.org"
	tests := []struct {
		name, payload string
		want          map[string]any
	}{
		{name: "job", payload: `{"lorry":"delta/a b","job_id":7,"status":"failed"}`, want: map[string]any{
			"lorry": pub + "/1.0/lorry-html/delta/a%20b", "job": pub + "/1.0/job-html/7",
			"notifications": pub + "/1.0/notifications-html"}},
		{name: "host", payload: `{"host":"gl.example","error":"x"}`, want: map[string]any{
			"host": pub + "/1.0/hosts-html", "notifications": pub + "/1.0/notifications-html"}},
	}
	for _, tc := range tests {
		dl := statedb.Delivery{ID: 3, Event: statedb.EventJobFailed, Created: 100, Payload: tc.payload}
		var got map[string]any
		if err := json.Unmarshal(Body(dl, pub), &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got["links"], tc.want) {
			t.Errorf("%s: links %v; want %v", tc.name, got["links"], tc.want)
		}
		got = nil
		if err := json.Unmarshal(Body(dl, ""), &got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got["links"]; ok {
			t.Errorf("%s: links %v without a public URL; want none", tc.name, got["links"])
		}
	}
}

// TestDeliveryLinks has a delivery of the Deliverer carry the links.
func TestDeliveryLinks(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t)
	d := f.deliverer(rc.srv.URL)
	d.PublicURL = "https://lorry.example.org"
	f.notify(t, statedb.EventJobFailed, failed)
	runOnce(t, d)
	reqs := rc.requests()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests; want 1", len(reqs))
	}
	var body struct {
		Links map[string]string `json:"links"`
	}
	if err := json.Unmarshal(reqs[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Links["job"] != "https://lorry.example.org/1.0/job-html/"+jsonNumber(t, reqs[0].body, "job_id") {
		t.Errorf("links %v; want the job's page under the public URL", body.Links)
	}
}

func jsonNumber(t *testing.T, b []byte, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return string(m[key])
}
