package webhook

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/heldport"
	"lorrycontroller.dev/lc/statedb"
)

// TestFailedDeliveryHidesTheURL has deliveries to a URL whose user, path
// and query are secret fail every way a POST can, and finds the secret in
// neither the recorded error nor the log: both show the scheme, host and
// port only.
func TestFailedDeliveryHidesTheURL(t *testing.T) {
	const secretPath, secretQuery = "/services/T0/B1/PathSecret42", "token=QuerySecret42"
	// A held port with no listener refuses connections, and nothing else
	// can listen there meanwhile.
	closed, err := heldport.New()
	if err != nil {
		t.Fatal(err)
	}
	defer closed.Close()
	refused := closed.Addr()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "no hook at %s", r.URL.RequestURI())
	}))
	defer echo.Close()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)

	tests := []struct {
		name, host string
		timeout    time.Duration
		want       string
	}{
		{name: "connection refused", host: refused, want: "refused"},
		{name: "answer echoes the path", host: strings.TrimPrefix(echo.URL, "http://"), want: "answered 404"},
		{name: "timed out", host: strings.TrimPrefix(hang.URL, "http://"), timeout: 50 * time.Millisecond, want: "deadline exceeded"},
		{name: "bad URL", host: "127.0.0.1:1", want: "make request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			u := "http://hook:UserSecret42@" + tc.host + secretPath + "?" + secretQuery
			if tc.name == "bad URL" {
				u = "http://hook:UserSecret42@" + tc.host + secretPath + "%zz?" + secretQuery
			}
			var log bytes.Buffer
			d := f.deliverer(u)
			d.Log = slog.New(slog.NewTextHandler(&log, nil))
			d.Timeout = tc.timeout
			f.notify(t, statedb.EventJobFailed, failed)
			runOnce(t, d)
			dl := f.only(t)
			if dl.Status != statedb.DeliveryPending || !strings.Contains(dl.LastError, tc.want) {
				t.Errorf("delivery %+v; want pending after an error with %q", dl, tc.want)
			}
			if tc.name != "bad URL" && !strings.HasPrefix(tc.want, "answered") && !strings.Contains(dl.LastError, "http://"+tc.host) {
				t.Errorf("last_error %q does not name %s", dl.LastError, "http://"+tc.host)
			}
			for _, secret := range []string{"PathSecret42", "QuerySecret42", "UserSecret42", "/services"} {
				if strings.Contains(dl.LastError, secret) {
					t.Errorf("last_error %q shows %q", dl.LastError, secret)
				}
				if strings.Contains(log.String(), secret) {
					t.Errorf("the log shows %q:\n%s", secret, log.String())
				}
			}
		})
	}
}
