package mirror

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"lorrycontroller.dev/lc/lorryspec"
)

// outsideAddr is the loopback address that the tests' guard takes for a
// host on the network, so that no test sends anything off loopback.
const outsideAddr = "127.0.0.2"

// standInOutside has the guards take outsideAddr for a host on the
// network until the test ends.
func standInOutside(t *testing.T) {
	t.Helper()
	outside := netip.MustParseAddr(outsideAddr)
	isLocal = func(ip netip.Addr) bool { return ip.Unmap() != outside && localAddr(ip) }
	t.Cleanup(func() { isLocal = localAddr })
}

// serveOn starts h on addr, port chosen by the system.
func serveOn(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// Downloads reach no loopback or link-local address unless local sources
// are allowed, whether the URL names one, a name resolves to one, or a
// redirect leads to one; a host on the network stays reachable.
func TestDownloadRefusesLocalAddresses(t *testing.T) {
	standInOutside(t)
	body := gzipped(t, makeTar(t, archEntry{name: "rel-1.0/README", body: "hello\n"}), time.Time{})
	var localHits atomic.Int64
	local := serveOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		localHits.Add(1)
		w.Write(body)
	}))
	_, port, _ := net.SplitHostPort(local.Listener.Addr().String())
	outside := serveOn(t, outsideAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect/rel-1.0.tar.gz" {
			http.Redirect(w, r, local.URL+"/rel-1.0.tar.gz", http.StatusFound)
			return
		}
		w.Write(body)
	}))
	rawFile := func(url string) lorryspec.Spec {
		return lorryspec.Spec{Name: "up/raw", Type: "raw-file", Raw: map[string]any{
			"type": "raw-file", "urls": []any{map[string]any{"url": url}},
		}}
	}
	tests := []struct {
		name    string
		spec    lorryspec.Spec
		refused bool
	}{
		{"host on the network", archiveSpec("tarball", outside.URL+"/rel-1.0.tar.gz", nil), false},
		{"raw-file from a host on the network", rawFile(outside.URL + "/rel-1.0.tar.gz"), false},
		{"loopback address", archiveSpec("tarball", local.URL+"/rel-1.0.tar.gz", nil), true},
		{"name of loopback", archiveSpec("tarball", "http://localhost:"+port+"/rel-1.0.tar.gz", nil), true},
		{"redirect to loopback", archiveSpec("tarball", outside.URL+"/redirect/rel-1.0.tar.gz", nil), true},
		{"raw-file redirect to loopback", rawFile(outside.URL + "/redirect/rel-1.0.tar.gz"), true},
		{"IPv6 loopback", archiveSpec("tarball", "http://[::1]:"+port+"/rel-1.0.tar.gz", nil), true},
		{"IPv4-mapped loopback", archiveSpec("tarball", "http://[::ffff:127.0.0.1]:"+port+"/rel-1.0.tar.gz", nil), true},
		{"unspecified address", archiveSpec("tarball", "http://0.0.0.0:"+port+"/rel-1.0.tar.gz", nil), true},
		{"cloud metadata", archiveSpec("tarball", "http://169.254.169.254/latest/meta-data/rel-1.0.tar.gz", nil), true},
		{"IPv6 link-local", archiveSpec("tarball", "http://[fe80::1%25lo]:"+port+"/rel-1.0.tar.gz", nil), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			localHits.Store(0)
			res, out := runLocal(t, tc.spec, false)
			if !tc.refused {
				if res.Err != nil {
					t.Fatalf("got %v, want the download to succeed\n%s", res.Err, out)
				}
				return
			}
			var refusal *localAddrError
			if !errors.As(res.Err, &refusal) || !strings.Contains(res.String(), "--allow-local-sources") {
				t.Fatalf("got %v, want the local address refused\n%s", res.Err, out)
			}
			if n := localHits.Load(); n != 0 {
				t.Errorf("the loopback server was asked %d times; want none", n)
			}
		})
	}
	// Allowed, loopback is reached, after a redirect as directly.
	for _, url := range []string{local.URL + "/rel-1.0.tar.gz", "http://localhost:" + port + "/rel-1.0.tar.gz", outside.URL + "/redirect/rel-1.0.tar.gz"} {
		if res, out := runLocal(t, archiveSpec("tarball", url, nil), true); res.Err != nil {
			t.Errorf("%s with local sources allowed: %v\n%s", url, res.Err, out)
		}
	}
}

func TestLocalAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "127.255.0.9": true, "::1": true, "::ffff:127.0.0.1": true,
		"169.254.169.254": true, "fe80::1": true, "0.0.0.0": true, "::": true,
		"10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "fd00::2": false,
		"192.0.2.2": false, "8.8.8.8": false, "2001:db8::1": false,
	} {
		if got := localAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("localAddr(%s) = %v; want %v", addr, got, want)
		}
	}
}
