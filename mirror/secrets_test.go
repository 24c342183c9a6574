package mirror

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/githttp"
	"lorrycontroller.dev/lc/gittest"
	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/workarea"
)

// The credentials of the property test: every printable ASCII character,
// and a few others, spread over six groups so that no group holds both
// quotes. Each of three runs per source type takes two groups for its
// user and two others for its password, so that every character is in a
// user once and in a password once. Each is framed by letters, as a
// value of a configuration file may not start or end with white space.
func secretGroups() [6]string {
	var g [6][]rune
	for c := rune(0x20); c <= 0x7e; c++ {
		g[c%6] = append(g[c%6], c)
	}
	var s [6]string
	for i := range g {
		s[i] = string(g[i])
	}
	return s
}

type secretPair struct{ user, pass string }

func secretPairs() []secretPair {
	g := secretGroups()
	var pairs []secretPair
	for r := 0; r < 3; r++ {
		pairs = append(pairs, secretPair{
			// A user cannot hold ":": HTTP's Basic authentication,
			// and Subversion's and CVS's password files, end the user
			// at its first one (TestSplitURL has it refused).
			user: strings.ReplaceAll("u"+g[2*r]+g[2*r+1]+"é"+"z", ":", ""),
			pass: "p" + g[(2*r+2)%6] + g[(2*r+3)%6] + "ß€" + "z",
		})
	}
	return pairs
}

// urlUserinfo writes user and password into a URL: percent-encoding only
// what a URL cannot hold as it is ("%", "/", "?", "#", and in the user
// ":"), every other character as it is.
func urlUserinfo(user, pass string) string {
	return pctEscape(user, "%/?#:") + ":" + pctEscape(pass, "%/?#")
}

func pctEscape(s, chars string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if strings.IndexByte(chars, c) >= 0 {
			b.WriteString("%" + strings.ToUpper(hexByte(c)))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func hexByte(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// secretWatch looks through the command line of every process of the
// machine for any of its secrets, all the time it runs and whenever a
// server is asked (when the client that asks is alive).
type secretWatch struct {
	mu      sync.Mutex
	needles map[string]string // needle -> what it is
	leaks   map[string]bool
	// tmp is the temporary directory where lorry makes the private
	// directories that hand credentials to a converter, "" for none to
	// watch; held are the kinds of those directories seen holding a
	// file.
	tmp  string
	held map[string]bool
}

// newSecretWatch watches the command lines, and with tmp, lorry's private
// directories in tmp, the test's own temporary directory.
func newSecretWatch(t *testing.T, tmp string) *secretWatch {
	w := &secretWatch{needles: map[string]string{}, leaks: map[string]bool{}, tmp: tmp, held: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w.scan()
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		w.scan()
		w.mu.Lock()
		defer w.mu.Unlock()
		for l := range w.leaks {
			t.Errorf("a secret is exposed: %s", l)
		}
	})
	return w
}

// add watches for pass as it is, percent-encoded, and in base64 with user.
func (w *secretWatch) add(user, pass string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range secretForms(user, pass) {
		w.needles[n] = "the password of " + user
	}
}

func secretForms(user, pass string) []string {
	return []string{
		pass,
		pctEscape(pass, "%/?#"),
		url.PathEscape(pass),
		base64.StdEncoding.EncodeToString([]byte(user + ":" + pass)),
	}
}

// fileSecretForms are secretForms, and each of them as a string of JSON,
// such as a download's state.json, writes it: with and without the
// escapes of HTML's characters.
func fileSecretForms(user, pass string) []string {
	forms := secretForms(user, pass)
	for _, f := range secretForms(user, pass) {
		for _, html := range []bool{true, false} {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(f); err != nil {
				panic(err)
			}
			forms = append(forms, strings.TrimSuffix(strings.TrimSpace(b.String()), `"`)[1:])
		}
	}
	return forms
}

func (w *secretWatch) scan() {
	w.mu.Lock()
	needles := make(map[string]string, len(w.needles))
	for k, v := range w.needles {
		needles[k] = v
	}
	w.mu.Unlock()
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for n, what := range needles {
			if bytes.Contains(data, []byte(n)) {
				w.mu.Lock()
				w.leaks[what+" in "+f+": "+string(bytes.ReplaceAll(data, []byte{0}, []byte{' '}))] = true
				w.mu.Unlock()
			}
		}
	}
	w.scanPrivate()
}

// scanPrivate looks through lorry's private directories: each is mode
// 0700, and each file in them (a password file: CVS's holds the password
// scrambled) is mode 0600.
func (w *secretWatch) scanPrivate() {
	if w.tmp == "" {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(w.tmp, "lorry-*"))
	for _, d := range dirs {
		kind, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), "lorry-"), "-")
		filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil // removed as the run ended
			}
			info, err := e.Info()
			if err != nil {
				return nil
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			switch perm := info.Mode().Perm(); {
			case e.IsDir() && perm != 0o700:
				w.leaks[fmt.Sprintf("private directory %s has mode %o", path, perm)] = true
			case e.Type().IsRegular():
				w.held[kind] = true
				if perm != 0o600 {
					w.leaks[fmt.Sprintf("private file %s has mode %o", path, perm)] = true
				}
			}
			return nil
		})
	}
}

// basicGate serves h to requests with one of the pairs by Basic
// authentication, and answers 401 to any other.
func basicGate(t *testing.T, w *secretWatch, h http.Handler, pairs []secretPair) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.scan()
		u, p, ok := r.BasicAuth()
		for _, pair := range pairs {
			if ok && u == pair.user && p == pair.pass {
				h.ServeHTTP(rw, r)
				return
			}
		}
		rw.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		http.Error(rw, "who are you?", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// inetd starts cmd for each connection to a loopback port, with the
// connection as its standard input and output, as inetd does.
func inetd(t *testing.T, w *secretWatch, cmd func() *exec.Cmd) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	AcceptEach(t, ln, func(conn *net.TCPConn) {
		defer conn.Close()
		w.scan()
		f, err := conn.File()
		if err != nil {
			return
		}
		defer f.Close()
		c := cmd()
		var stderr bytes.Buffer
		c.Stdin, c.Stdout, c.Stderr = f, f, &stderr
		if err := c.Run(); err != nil {
			t.Logf("%s: %v\n%s", c.Path, err, stderr.String())
		}
	})
	return ln.Addr().String()
}

// AcceptEach (for the external tests too) serves each connection ln accepts with serve, in a goroutine
// of its own, until the test ends, when it closes ln and waits for them.
func AcceptEach(t *testing.T, ln net.Listener, serve func(*net.TCPConn)) {
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				serve(conn.(*net.TCPConn))
			}()
		}
	}()
}

// withUserinfo puts user and password into the URL base (scheme://host...).
func withUserinfo(base string, p secretPair) string {
	scheme, rest, _ := strings.Cut(base, "://")
	return scheme + "://" + urlUserinfo(p.user, p.pass) + "@" + rest
}

type secretCase struct {
	typ    string
	name   string
	fields func(p secretPair) map[string]any
	pairs  []secretPair // those the server takes, if not secretPairs()
}

// Every source type over every scheme or method of this machine's
// servers that demand credentials, with users and passwords that hold
// every printable character: while each job runs, no process's command
// line holds the password (as it is, percent-encoded, or in base64 with
// the user), and the files that hand it to Mercurial, Breezy and CVS are
// of mode 0600 in a directory of mode 0700 outside the working area;
// after it, no file of the working area holds it, nor any commit message
// of the mirror, and those directories are gone.
func TestSecretsNowhere(t *testing.T) {
	// A temporary directory of the test's own, open to all as the
	// machine's is: the servers may run as another user.
	tmpDir := t.TempDir()
	if err := os.Chmod(tmpDir, 0o1777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmpDir)
	w := newSecretWatch(t, tmpDir)
	// After every run: the cleanups run last registered first.
	privateKinds := map[string]bool{}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for kind := range privateKinds {
			if !w.held[kind] {
				t.Errorf("no private file of %s was seen while a job ran", kind)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(w.tmp, "lorry-*")); len(left) > 0 {
			t.Errorf("private directories left after the runs: %v", left)
		}
	})
	pairs := secretPairs()
	for _, p := range pairs {
		w.add(p.user, p.pass)
	}
	// A home of the test's own, where Subversion would keep what it
	// caches: after every run, no file of it holds a password, and
	// Subversion's auth directory holds no file at all.
	home := t.TempDir()
	t.Setenv("HOME", home)
	var homePairs []secretPair
	t.Cleanup(func() {
		for _, p := range homePairs {
			noSecretIn(t, home, p)
		}
		filepath.WalkDir(filepath.Join(home, ".subversion", "auth"), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				t.Errorf("Subversion cached %s", path)
			}
			return nil
		})
	})
	tmp := t.TempDir()
	var cases []secretCase

	// git over smart HTTP.
	up := newUpstream(t, false)
	gitH, err := githttp.Handler(up.root)
	if err != nil {
		t.Fatal(err)
	}
	gitSrv := basicGate(t, w, gitH, pairs)
	cases = append(cases, secretCase{typ: "git", name: "http", fields: func(p secretPair) map[string]any {
		return map[string]any{"url": withUserinfo(gitSrv.URL+"/project", p)}
	}})

	// The downloads over HTTP: tarball, zip, gzip and raw-file.
	downloads := map[string][]byte{
		"/rel.tar.gz":   gzipped(t, makeTar(t, archEntry{name: "rel/README", body: "hello\n"}), time.Time{}),
		"/rel.zip":      makeZip(t, archEntry{name: "rel/README", body: "hello\n"}),
		"/notes.txt.gz": gzipped(t, []byte("hello\n"), time.Time{}),
		"/tool.sh":      []byte("echo hello\n"),
	}
	dlSrv := basicGate(t, w, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		data, ok := downloads[r.URL.Path]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		rw.Write(data)
	}), pairs)
	for typ, file := range map[string]string{"tarball": "/rel.tar.gz", "zip": "/rel.zip", "gzip": "/notes.txt.gz"} {
		cases = append(cases, secretCase{typ: typ, name: "http", fields: func(p secretPair) map[string]any {
			return map[string]any{"url": withUserinfo(dlSrv.URL+file, p)}
		}})
	}
	cases = append(cases, secretCase{typ: "raw-file", name: "http", fields: func(p secretPair) map[string]any {
		return map[string]any{"urls": []any{map[string]any{"url": withUserinfo(dlSrv.URL+"/tool.sh", p), "destination": "bin"}}}
	}})

	if _, err := exec.LookPath("hg"); err == nil {
		if _, err := exec.LookPath("git-remote-hg"); err == nil {
			// Mercurial does not send a user or password outside ASCII
			// as it is (TestHgCredentials has one refused).
			hgPairs := make([]secretPair, len(pairs))
			ascii := strings.NewReplacer("é", "", "ß", "", "€", "")
			for i, p := range pairs {
				hgPairs[i] = secretPair{user: ascii.Replace(p.user), pass: ascii.Replace(p.pass)}
				w.add(hgPairs[i].user, hgPairs[i].pass)
			}
			privateKinds["hg"] = true
			repo := secretHgRepo(t, tmp)
			backend := secretHgServe(t, repo)
			hgSrv := basicGate(t, w, httputil.NewSingleHostReverseProxy(backend), hgPairs)
			staticSrv := basicGate(t, w, http.FileServer(http.Dir(repo)), hgPairs)
			cases = append(cases,
				secretCase{typ: "hg", name: "http", pairs: hgPairs, fields: func(p secretPair) map[string]any {
					return map[string]any{"url": withUserinfo(hgSrv.URL+"/", p)}
				}},
				secretCase{typ: "hg", name: "static-http", pairs: hgPairs, fields: func(p secretPair) map[string]any {
					return map[string]any{"url": withUserinfo(strings.Replace(staticSrv.URL, "http://", "static-http://", 1)+"/", p)}
				}},
			)
		}
	}

	if _, err := exec.LookPath("brz"); err == nil {
		privateKinds["brz"] = true
		branches := secretBzrBranch(t, tmp)
		bzrSrv := basicGate(t, w, http.FileServer(http.Dir(branches)), pairs)
		cases = append(cases, secretCase{typ: "bzr", name: "http", fields: func(p secretPair) map[string]any {
			return map[string]any{"url": withUserinfo(bzrSrv.URL+"/trunk", p)}
		}})
	}

	if _, err := exec.LookPath("svnserve"); err == nil {
		// svnserve's password file cannot hold a user with ":" or "=";
		// those are in the passwords of the svn runs all the same.
		svnPairs := make([]secretPair, len(pairs))
		for i, p := range pairs {
			svnPairs[i] = secretPair{user: strings.NewReplacer(":", "", "=", "").Replace(p.user), pass: p.pass}
			w.add(svnPairs[i].user, p.pass)
		}
		root := secretSvnRepo(t, tmp, svnPairs)
		addr := inetd(t, w, func() *exec.Cmd { return exec.Command("svnserve", "-i", "-r", root) })
		cases = append(cases, secretCase{typ: "svn", name: "svn", pairs: svnPairs, fields: func(p secretPair) map[string]any {
			return map[string]any{"url": withUserinfo("svn://"+addr+"/", p), "layout": "standard"}
		}})
	}

	if _, err := exec.LookPath("cvsps"); err == nil {
		// A CVSROOT cannot hold a user with ":", "@" or white space
		// (TestCvsRootCredentials has them refused); those are in the
		// passwords of the cvs runs all the same.
		cvsPairs := make([]secretPair, len(pairs))
		for i, p := range pairs {
			cvsPairs[i] = secretPair{user: strings.NewReplacer(":", "", "@", "", " ", "").Replace(p.user), pass: p.pass}
			w.add(cvsPairs[i].user, p.pass)
		}
		privateKinds["cvs"] = true
		root := secretCvsRepo(t, tmp, cvsPairs)
		addr := inetd(t, w, func() *exec.Cmd { return exec.Command("cvs", "-f", "--allow-root="+root, "pserver") })
		for _, method := range []string{"pserver", "PSERVER"} {
			cases = append(cases, secretCase{typ: "cvs", name: method, pairs: cvsPairs, fields: func(p secretPair) map[string]any {
				return map[string]any{"url": ":" + method + ":" + p.user + ":" + p.pass + "@" + addr + root, "module": "mod"}
			}})
		}
	}

	for _, tc := range cases {
		runPairs := pairs
		if tc.pairs != nil {
			runPairs = tc.pairs
		}
		homePairs = append(homePairs, runPairs...)
		for i, p := range runPairs {
			t.Run(tc.typ+"/"+tc.name+"/"+string(rune('a'+i)), func(t *testing.T) {
				t.Parallel()
				area := t.TempDir()
				fields := tc.fields(p)
				raw := map[string]any{"type": tc.typ}
				for k, v := range fields {
					raw[k] = v
				}
				spec := lorryspec.Spec{Name: "up/" + tc.typ, Type: tc.typ, Raw: raw}
				var out strings.Builder
				res := Run(context.Background(), spec, Options{
					WorkingArea: area, PullOnly: true, LockWait: time.Minute, Out: &out, AllowLocalSources: true,
				})
				if res.Err != nil {
					t.Fatalf("run: %v\n%s", res.Err, out.String())
				}
				dir := workarea.Dir(area, spec.Name)
				noSecretIn(t, dir, p)
				log := gittest.Git(t, "", nil, "--git-dir", filepath.Join(dir, "git"), "log", "--all", "--format=%B")
				for _, n := range secretForms(p.user, p.pass) {
					if strings.Contains(log, n) {
						t.Errorf("a commit message of the mirror holds the password:\n%s", log)
					}
				}
			})
		}
	}
}

// noSecretIn fails the test if a file under dir holds the password in
// any of its forms.
func noSecretIn(t *testing.T, dir string, p secretPair) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range fileSecretForms(p.user, p.pass) {
			if bytes.Contains(data, []byte(n)) {
				t.Errorf("%s holds the password after the run", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func secretHgRepo(t *testing.T, tmp string) string {
	repo := filepath.Join(tmp, "hg")
	env := []string{"HGRCPATH=", "HGPLAIN=1", "HGUSER=Test <test@example.com>"}
	convRun(t, tmp, env, "hg", "init", repo)
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	convRun(t, repo, env, "hg", "commit", "--addremove", "--quiet", "-m", "one")
	return repo
}

// secretHgServe starts hg serve on repo, and answers its address.
func secretHgServe(t *testing.T, repo string) *url.URL {
	return hgServe(t, repo, append(os.Environ(), "HGRCPATH=", "HGPLAIN=1"))
}

// hgServe starts hg serve on repo, in environment env, and answers its
// address.
func hgServe(t *testing.T, repo string, env []string) *url.URL {
	t.Helper()
	serve := exec.Command("hg", "serve", "-R", repo, "-a", "127.0.0.1", "-p", "0")
	serve.Env = env
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("hg serve: %v", err)
	}
	m := regexp.MustCompile(`bound to (127\.0\.0\.1:[0-9]+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("hg serve said %q; want the address it is bound to", line)
	}
	u, _ := url.Parse("http://" + m[1])
	return u
}

// secretBzrBranch makes a bzr branch "trunk" in a directory that it
// answers, to be served as files.
func secretBzrBranch(t *testing.T, tmp string) string {
	env := []string{"BRZ_EMAIL=Test <test@example.com>", "BRZ_HOME=" + filepath.Join(tmp, "brz-home")}
	trunk := filepath.Join(tmp, "bzr", "trunk")
	convRun(t, tmp, env, "brz", "init", "--quiet", "--create-prefix", trunk)
	if err := os.WriteFile(filepath.Join(trunk, "README"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	convRun(t, trunk, env, "brz", "add", "--quiet", "README")
	convRun(t, trunk, env, "brz", "commit", "--quiet", "-m", "one")
	return filepath.Dir(trunk)
}

// secretSvnRepo makes a repository of the standard layout that svnserve
// serves to the pairs alone.
func secretSvnRepo(t *testing.T, tmp string, pairs []secretPair) string {
	root := filepath.Join(tmp, "svn")
	convRun(t, tmp, nil, "svnadmin", "create", root)
	src := filepath.Join(tmp, "svn-import")
	if err := os.MkdirAll(filepath.Join(src, "trunk"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"branches", "tags"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "trunk", "README"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	convRun(t, tmp, []string{"HOME=" + filepath.Join(tmp, "svn-home")}, "svn", "import", "--quiet", "--non-interactive", "-m", "one", src, "file://"+root)
	conf := "[general]\nanon-access = none\nauth-access = write\npassword-db = passwd\nrealm = test\n"
	users := "[users]\n"
	for _, p := range pairs {
		users += p.user + " = " + p.pass + "\n"
	}
	for name, data := range map[string]string{"svnserve.conf": conf, "passwd": users} {
		if err := os.WriteFile(filepath.Join(root, "conf", name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// secretCvsRepo makes a CVS repository with a module "mod" that cvs
// pserver serves to the pairs alone.
func secretCvsRepo(t *testing.T, tmp string, pairs []secretPair) string {
	root := filepath.Join(tmp, "cvsroot")
	env := []string{"CVSROOT=" + root, "HOME=" + filepath.Join(tmp, "cvs-home")}
	convRun(t, tmp, env, "cvs", "-Q", "init")
	imp := filepath.Join(tmp, "cvs-import")
	if err := os.MkdirAll(imp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(imp, "README"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	convRun(t, imp, env, "cvs", "-Q", "import", "-m", "one", "mod", "vendor", "start")
	// The password file maps each user to a system account, which the
	// server becomes; it refuses to become root.
	account := "nobody"
	if os.Geteuid() != 0 {
		account = os.Getenv("USER")
	} else {
		OpenToAll(t, root)
	}
	var passwd strings.Builder
	for _, p := range pairs {
		cmd := exec.Command("openssl", "passwd", "-1", "-stdin")
		cmd.Stdin = strings.NewReader(p.pass + "\n")
		crypted, err := cmd.Output()
		if err != nil {
			t.Fatalf("openssl passwd: %v", err)
		}
		passwd.WriteString(p.user + ":" + strings.TrimSpace(string(crypted)) + ":" + account + "\n")
	}
	if err := os.WriteFile(filepath.Join(root, "CVSROOT", "passwd"), []byte(passwd.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "CVSROOT", "config"), []byte("SystemAuth=no\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	return root
}

// git-svn over HTTP, to a server that asks for Basic authentication and
// has no repository to serve: the users and passwords of every printable
// character reach the server, through GIT_ASKPASS, and no process's
// command line nor any file of the working area, though the run fails.
func TestSvnHTTPSecretsNowhere(t *testing.T) {
	if err := exec.Command("git", "svn", "--version").Run(); err != nil {
		t.Skip("git-svn is not installed")
	}
	w := newSecretWatch(t, "")
	pairs := secretPairs()
	for _, p := range pairs {
		w.add(p.user, p.pass)
	}
	var mu sync.Mutex
	seen := map[secretPair]bool{}
	srv := basicGate(t, w, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		mu.Lock()
		seen[secretPair{u, p}] = true
		mu.Unlock()
		http.Error(rw, "no repository here", http.StatusNotFound)
	}), pairs)
	for i, p := range pairs {
		t.Run(string(rune('a'+i)), func(t *testing.T) {
			area := t.TempDir()
			spec := lorryspec.Spec{Name: "up/svn", Type: "svn", Raw: map[string]any{"type": "svn",
				"url": withUserinfo(srv.URL+"/repo", p), "layout": "standard"}}
			var out strings.Builder
			res := Run(context.Background(), spec, Options{
				WorkingArea: area, PullOnly: true, LockWait: time.Minute, Out: &out, AllowLocalSources: true,
			})
			if res.Err == nil {
				t.Fatalf("run succeeded; want it to fail, there being no repository\n%s", out.String())
			}
			mu.Lock()
			ok := seen[p]
			mu.Unlock()
			if !ok {
				t.Errorf("the server never got the user and password\n%v\n%s", res.Err, out.String())
			}
			noSecretIn(t, workarea.Dir(area, spec.Name), p)
		})
	}
}

// An svn conversion made when lorry gave git-svn the URL with its user
// and password (in svn/source and the conversion's configuration) is not
// continued: the next run converts afresh, and leaves no file of the
// working area holding the password.
func TestSvnConversionWithCredentialsStartsAfresh(t *testing.T) {
	if _, err := exec.LookPath("svnserve"); err != nil {
		t.Skip("svnserve is not installed")
	}
	if err := exec.Command("git", "svn", "--version").Run(); err != nil {
		t.Skip("git-svn is not installed")
	}
	t.Setenv("HOME", t.TempDir())
	tmp := t.TempDir()
	w := newSecretWatch(t, "")
	for i, p := range secretPairs() {
		p.user = strings.NewReplacer(":", "", "=", "").Replace(p.user)
		name := string(rune('a' + i))
		t.Run(name, func(t *testing.T) {
			w.add(p.user, p.pass)
			root := secretSvnRepo(t, t.TempDir(), []secretPair{p})
			addr := inetd(t, w, func() *exec.Cmd { return exec.Command("svnserve", "-i", "-r", root) })
			// git-svn keeps the URL without a trailing "/".
			rawURL := withUserinfo("svn://"+addr, p)
			spec := lorryspec.Spec{Name: "up/svn", Type: "svn", Raw: map[string]any{"type": "svn", "url": rawURL, "layout": "standard"}}
			area := filepath.Join(tmp, name)
			run := func() string {
				t.Helper()
				var out strings.Builder
				res := Run(context.Background(), spec, Options{
					WorkingArea: area, PullOnly: true, LockWait: time.Minute, Out: &out, AllowLocalSources: true,
				})
				if res.Err != nil {
					t.Fatalf("run: %v\n%s", res.Err, out.String())
				}
				return out.String()
			}
			run()

			// What an older lorry left: the URL with its credentials
			// in the source file and in git-svn's configuration.
			dir := filepath.Join(workarea.Dir(area, spec.Name), "svn")
			sourceFile := filepath.Join(dir, "source")
			source, err := os.ReadFile(sourceFile)
			if err != nil {
				t.Fatal(err)
			}
			plain, rest, _ := strings.Cut(string(source), "\n")
			if err := os.WriteFile(sourceFile, []byte(rawURL+"\n"+rest), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := gittest.Git(t, "", nil, "--git-dir", filepath.Join(dir, "git"), "config", "svn-remote.svn.url"); strings.TrimSpace(got) != plain {
				t.Fatalf("svn-remote.svn.url is %q; want %q", got, plain)
			}
			gittest.Git(t, "", nil, "--git-dir", filepath.Join(dir, "git"), "config", "svn-remote.svn.url", rawURL)

			if out := run(); !strings.Contains(out, "converting afresh") {
				t.Errorf("the second run did not convert afresh:\n%s", out)
			}
			noSecretIn(t, workarea.Dir(area, spec.Name), p)
		})
	}
}

// OpenToAll (for the external tests too) lets every user into root, the
// directories above it up to the temporary directory, and everything
// under it: a server run as nobody reads a repository there and writes
// its locks.
func OpenToAll(t *testing.T, root string) {
	t.Helper()
	for dir := root; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chmod(path, 0o777)
	})
	if err != nil {
		t.Fatal(err)
	}
}
