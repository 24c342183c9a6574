package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The load balancer configurations of docs/operations.md ("A load balancer
// in front of several WEBAPPs") are taken from the document as written. The
// tests change only what names this machine: the addresses (the WEBAPPs' and
// the one the balancer listens on, free loopback ports) and the certificate
// files (a certificate the test makes). Everything else is the document's.

// lbDoc are the strings that introduce the load balancers' configurations
// in docs/operations.md.
const (
	haproxyDoc = "HAProxy (2.2 or later), in `haproxy.cfg`:"
	nginxDoc   = "block of `nginx.conf`:"
)

// docConfig is the code block of docs/operations.md that follows the first
// line containing after, without its indent, blank lines within it kept.
func docConfig(t *testing.T, after string) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), after)
	if !ok {
		t.Fatalf("docs/operations.md has no %q", after)
	}
	var block []string
	for _, line := range strings.Split(rest, "\n")[1:] {
		if line == "" || strings.HasPrefix(line, "    ") {
			block = append(block, strings.TrimPrefix(line, "    "))
			continue
		}
		break
	}
	conf := strings.TrimSpace(strings.Join(block, "\n"))
	if conf == "" {
		t.Fatalf("docs/operations.md has no code block after %q", after)
	}
	return conf + "\n"
}

// localize rewrites the document's configuration for this machine: each
// old string, which must be there, becomes its new one.
func localize(t *testing.T, conf string, oldnew ...string) string {
	t.Helper()
	for i := 0; i < len(oldnew); i += 2 {
		if !strings.Contains(conf, oldnew[i]) {
			t.Fatalf("the configuration of docs/operations.md has no %q:\n%s", oldnew[i], conf)
		}
	}
	return strings.NewReplacer(oldnew...).Replace(conf)
}

// lbTool is the path of a load balancer's program, which make test needs
// (scripts/deps installs it); Debian puts both in /usr/sbin.
func lbTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p := "/usr/sbin/" + name
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is needed to run this test (scripts/deps installs it): %v", name, err)
	}
	return p
}

// lbCert writes a certificate for lorry.example.org, the name of the
// document's certificate files, and its key, in the files each balancer
// reads: HAProxy's one file with both, nginx's two. pool trusts it.
type lbCert struct {
	both, cert, key string
	pool            *x509.CertPool
}

func newLBCert(t *testing.T, dir string) lbCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "lorry.example.org"},
		DNSNames:     []string{"lorry.example.org"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	c := lbCert{
		both: filepath.Join(dir, "lorry.example.org.pem"),
		cert: filepath.Join(dir, "lorry.example.org.crt"),
		key:  filepath.Join(dir, "lorry.example.org.key"),
		pool: x509.NewCertPool(),
	}
	for file, b := range map[string][]byte{c.both: append(append([]byte{}, certPEM...), keyPEM...), c.cert: certPEM, c.key: keyPEM} {
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c.pool.AppendCertsFromPEM(certPEM)
	return c
}

// freeAddr is a loopback address with a port that nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// haproxyConfig is the document's haproxy.cfg with the balancer listening
// on listen and the WEBAPPs at webapp1 and webapp2. It needs no global or
// defaults section.
func haproxyConfig(t *testing.T, cert lbCert, listen, webapp1, webapp2 string) string {
	return localize(t, docConfig(t, haproxyDoc),
		"bind :443 ", "bind "+listen+" ",
		"/etc/haproxy/certs/lorry.example.org.pem", cert.both,
		"webapp1.example.org:12765", webapp1,
		"webapp2.example.org:12765", webapp2)
}

// nginxConfig is the document's block wrapped in the least nginx.conf it
// needs: the http block it goes in, an events block, and files of the
// test's for the pid and the logs. The balancer listens on listen, the
// WEBAPPs are webapp1 and webapp2. With run, nginx stays in the foreground
// in one process, so that the test's end stops all of it.
func nginxConfig(t *testing.T, dir string, cert lbCert, listen, webapp1, webapp2 string, run bool) string {
	block := localize(t, docConfig(t, nginxDoc),
		"listen 443 ", "listen "+listen+" ",
		"/etc/nginx/certs/lorry.example.org.pem", cert.cert,
		"/etc/nginx/certs/lorry.example.org.key", cert.key,
		"webapp1.example.org:12765", webapp1,
		"webapp2.example.org:12765", webapp2)
	var top strings.Builder
	fmt.Fprintf(&top, "pid %s;\nerror_log stderr;\n", filepath.Join(dir, "nginx.pid"))
	if run {
		top.WriteString("daemon off;\nmaster_process off;\n")
	}
	return top.String() + "events {}\nhttp {\n" +
		fmt.Sprintf("access_log off;\nclient_body_temp_path %[1]s/body;\nproxy_temp_path %[1]s/proxy;\n", dir) +
		block + "}\n"
}

// Each configuration of the document is one its program accepts, without
// a warning.
func TestLoadBalancerConfigs(t *testing.T) {
	dir := t.TempDir()
	cert := newLBCert(t, dir)
	t.Run("haproxy", func(t *testing.T) {
		file := filepath.Join(dir, "haproxy.cfg")
		conf := haproxyConfig(t, cert, "127.0.0.1:8443", "127.0.0.1:12765", "127.0.0.1:12766")
		if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(lbTool(t, "haproxy"), "-c", "-f", file).CombinedOutput()
		if err != nil || strings.Contains(string(out), "WARNING") || strings.Contains(string(out), "ALERT") {
			t.Errorf("haproxy -c: %v; want it valid without a warning\n%s\nof:\n%s", err, out, conf)
		}
	})
	t.Run("nginx", func(t *testing.T) {
		file := filepath.Join(dir, "nginx.conf")
		conf := nginxConfig(t, dir, cert, "127.0.0.1:8443", "127.0.0.1:12765", "127.0.0.1:12766", false)
		if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(lbTool(t, "nginx"), "-t", "-p", dir, "-e", "stderr", "-c", file).CombinedOutput()
		if err != nil || strings.Contains(string(out), "[warn]") || strings.Contains(string(out), "[emerg]") {
			t.Errorf("nginx -t: %v; want it valid without a warning\n%s\nof:\n%s", err, out, conf)
		}
	})
}

// Through each balancer as the document configures it, two WEBAPPs on one
// state database answer; when one of them stops, every request still
// answers, and HAProxy's health check takes the stopped one out.
func TestLoadBalancerFailover(t *testing.T) {
	for _, lb := range []string{"haproxy", "nginx"} {
		t.Run(lb, func(t *testing.T) {
			dir := t.TempDir()
			cert := newLBCert(t, dir)
			db := statedbOf(t, dir)
			var apps [2]*webapp
			for i := range apps {
				d := filepath.Join(dir, fmt.Sprintf("w%d", i+1))
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
				apps[i] = startWebapp(t, d, startOpts{args: []string{"--statedb", db, "--insecure-no-auth"}})
			}
			webapp1 := strings.TrimPrefix(apps[0].url, "http://")
			webapp2 := strings.TrimPrefix(apps[1].url, "http://")
			listen := freeAddr(t)
			var cmd *exec.Cmd
			if lb == "haproxy" {
				file := filepath.Join(dir, "haproxy.cfg")
				if err := os.WriteFile(file, []byte(haproxyConfig(t, cert, listen, webapp1, webapp2)), 0o600); err != nil {
					t.Fatal(err)
				}
				cmd = exec.Command(lbTool(t, "haproxy"), "-db", "-f", file)
			} else {
				file := filepath.Join(dir, "nginx.conf")
				if err := os.WriteFile(file, []byte(nginxConfig(t, dir, cert, listen, webapp1, webapp2, true)), 0o600); err != nil {
					t.Fatal(err)
				}
				cmd = exec.Command(lbTool(t, "nginx"), "-p", dir, "-e", "stderr", "-c", file)
			}
			logFile := filepath.Join(dir, lb+".log")
			logf, err := os.Create(logFile)
			if err != nil {
				t.Fatal(err)
			}
			defer logf.Close()
			cmd.Stdout, cmd.Stderr = logf, logf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			lbLog := func() string {
				b, _ := os.ReadFile(logFile)
				return string(b)
			}

			c := &http.Client{Timeout: waitLimit, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: cert.pool, ServerName: "lorry.example.org"},
			}}
			front := "https://" + listen
			// ask is the status of a request through the balancer, or
			// an error when it did not answer.
			ask := func(route string) (int, error) {
				resp, err := c.Get(front + route)
				if err != nil {
					return 0, err
				}
				resp.Body.Close()
				return resp.StatusCode, nil
			}
			deadline := time.Now().Add(waitLimit)
			for {
				if code, err := ask("/1.0/health-check"); err == nil && code == 200 {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("%s did not answer 200 in %v: %d %v\n%s", lb, waitLimit, code, err, lbLog())
				}
				select {
				case err := <-exited:
					exited <- err
					t.Fatalf("%s exited: %v\n%s", lb, err, lbLog())
				case <-time.After(50 * time.Millisecond):
				}
			}
			check := func(when string) {
				t.Helper()
				for _, route := range []string{"/1.0/health-check", "/1.0/status", "/1.0/list-queue", "/1.0/status-html"} {
					if code, err := ask(route); err != nil || code != 200 {
						t.Fatalf("GET %s through %s %s: %d %v; want 200\n%s", route, lb, when, code, err, lbLog())
					}
				}
			}
			for range 4 {
				check("with both WEBAPPs")
			}

			apps[0].stop(t)
			for range 4 {
				check("with webapp1 stopped")
			}
			if lb != "haproxy" {
				return
			}
			// inter 5s fall 2: two failed checks, ten seconds or so. Every
			// request meanwhile answers, from webapp2.
			down := "lorry_webapps/webapp1 is DOWN"
			deadline = time.Now().Add(2 * waitLimit)
			for !strings.Contains(lbLog(), down) {
				if time.Now().After(deadline) {
					t.Fatalf("haproxy did not log %q in %v\n%s", down, 2*waitLimit, lbLog())
				}
				check("while its checks fail")
				time.Sleep(200 * time.Millisecond)
			}
			if strings.Contains(lbLog(), "webapp2 is DOWN") {
				t.Fatalf("haproxy took webapp2 out too\n%s", lbLog())
			}
			check("with webapp1 out")
		})
	}
}
