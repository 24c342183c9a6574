package mirror

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io/fs"
	"math/big"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/githttp"
	"lorrycontroller.dev/lc/gittest"
)

// writeGitConfig writes git configuration to a file of its own and
// returns its path.
func writeGitConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runWith runs spec as a job does, with local sources refused unless
// allow, pushing to a new downstream, and returns the result and the
// downstream.
func runWith(t *testing.T, spec string, gitConfig string, allow bool) (Result, string) {
	t.Helper()
	down := downstream(t)
	var out strings.Builder
	res := Run(context.Background(), gitSpec("up/project", map[string]any{"url": spec}), Options{
		WorkingArea: t.TempDir(), PushURL: down, LockWait: time.Second, Out: &out,
		GitConfig: gitConfig, AllowLocalSources: allow,
	})
	t.Logf("%s\n%s", res, out.String())
	return res, down
}

// A URL rewrite of the admin's git configuration is what git fetches:
// the spec names the upstream by a URL that leads nowhere, and the
// configuration sends git to where the repository is.
func TestGitConfigInsteadOf(t *testing.T) {
	up := newUpstream(t, false)
	// Nothing listens on port 1.
	const named = "https://127.0.0.1:1/"
	config := writeGitConfig(t, "[url \""+up.srv.URL+"/\"]\n\tinsteadOf = "+named+"\n")

	if res, _ := runWith(t, named+"project", "", false); res.Err == nil {
		t.Fatal("without the configuration, the URL that leads nowhere mirrored")
	}
	res, down := runWith(t, named+"project", config, false)
	if res.Err != nil {
		t.Fatalf("with the configuration: %v", res.Err)
	}
	if got, want := refsOf(t, down), refsOf(t, up.dir); !equalRefs(got, want) {
		t.Errorf("downstream refs = %v; want the rewritten upstream's %v", got, want)
	}
}

// An upstream over HTTPS whose certificate is signed by a CA of the
// admin's, named by http.sslCAInfo in the configuration, is fetched with
// its certificate checked.
func TestGitConfigSSLCAInfo(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "project")
	gittest.Git(t, "", nil, "init", "-q", "-b", "main", dir)
	gittest.Git(t, dir, nil, "commit", "-q", "--allow-empty", "-m", "first")
	h, err := githttp.Handler(root)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, leaf := newCA(t)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := srv.URL + "/project"
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}

	// The variable wins over the configuration; a minion under systemd
	// has none.
	t.Setenv("GIT_SSL_CAINFO", "")
	os.Unsetenv("GIT_SSL_CAINFO")

	res, _ := runWith(t, url, "", false)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "certificate") {
		t.Fatalf("without the CA: got %v, want the certificate refused", res.Err)
	}
	res, down := runWith(t, url, writeGitConfig(t, "[http]\n\tsslCAInfo = "+caFile+"\n"), false)
	if res.Err != nil {
		t.Fatalf("with the CA: %v", res.Err)
	}
	if got, want := refsOf(t, down), refsOf(t, dir); !equalRefs(got, want) {
		t.Errorf("downstream refs = %v; want %v", got, want)
	}
}

// newCA makes a CA and a certificate for 127.0.0.1 that it signs: the
// CA's certificate in PEM, and the server's certificate and key.
func newCA(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// git reads the configuration lorry names and no other, whatever the
// inherited environment names.
func TestGitReadsOnlyItsConfig(t *testing.T) {
	other := writeGitConfig(t, "[other]\n\tread = yes\n")
	t.Setenv("GIT_CONFIG_GLOBAL", other)
	t.Setenv("GIT_CONFIG_SYSTEM", other)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	t.Setenv("HOME", filepath.Dir(other))
	mine := writeGitConfig(t, "[mine]\n\tread = yes\n")
	for _, tc := range []struct {
		name, config, want string
	}{
		{name: "none", config: "", want: ""},
		{name: "the file named", config: mine, want: "file:" + mine + "\tmine.read=yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &job{opts: Options{GitConfig: tc.config}}
			cmd := exec.Command("git", "config", "--list", "--show-origin")
			cmd.Dir = t.TempDir() // in no repository
			cmd.Env = j.gitEnv("", nil)
			out, err := cmd.Output()
			if err != nil && tc.want != "" {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("git read:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// chownTree gives dir and everything in it to uid.
func chownTree(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// nobody is a user id that the tests' files are given to, so that git
// sees a repository of another user.
const nobody = 65534

// A local upstream that another user owns is refused by git, and the job
// says how to allow it: safe.directory in lorry's git configuration,
// which then lets it through.
func TestLocalUpstreamOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a repository to another user takes root")
	}
	up := filepath.Join(t.TempDir(), "up.git")
	work := filepath.Join(t.TempDir(), "work")
	gittest.Git(t, "", nil, "init", "-q", "-b", "main", work)
	gittest.Git(t, work, nil, "commit", "-q", "--allow-empty", "-m", "first")
	gittest.Git(t, "", nil, "clone", "-q", "--bare", work, up)
	want := refsOf(t, up)
	chownTree(t, up, nobody)

	res, _ := runWith(t, up, "", true)
	if res.Err == nil {
		t.Fatal("the repository of another user mirrored without safe.directory")
	}
	for _, want := range []string{"dubious ownership", "safe.directory", "--git-config"} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("error %q does not say %q", res.Err, want)
		}
	}

	config := writeGitConfig(t, "[safe]\n\tdirectory = "+up+"\n")
	res, down := runWith(t, up, config, true)
	if res.Err != nil {
		t.Fatalf("with safe.directory: %v", res.Err)
	}
	if got := refsOf(t, down); !equalRefs(got, want) {
		t.Errorf("downstream refs = %v; want %v", got, want)
	}
}
