package mirror_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lorrycontroller.dev/lc/mirror"
)

// cvPserver is cvs pserver on a loopback port, started for each
// connection as inetd would, with one user whose password it requires.
// When a client connects, it looks through the command lines of every
// process of the machine for the password: the client is alive then, and
// so is whatever started it.
type cvPserver struct {
	t          *testing.T
	user, pass string
	addr       string

	mu       sync.Mutex
	sessions int
	leaks    []string
	logs     []string
}

func newCvPserver(t *testing.T, root string) *cvPserver {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	s := &cvPserver{t: t, user: "cvsuser", pass: "pw" + hex.EncodeToString(b)}
	crypted := strings.TrimSpace(cvRun(t, "", nil, "openssl", "passwd", "-1", s.pass))
	// The password file maps the CVS user to a system account, which the
	// server becomes; it refuses to become root.
	account := "nobody"
	if os.Geteuid() != 0 {
		me, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		account = me.Username
	} else {
		// nobody reads the repository and writes its locks there.
		mirror.OpenToAll(t, root)
	}
	passwd := s.user + ":" + crypted + ":" + account + "\n"
	if err := os.WriteFile(filepath.Join(root, "CVSROOT", "passwd"), []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	// Only the users of the password file, not the system's.
	if err := os.WriteFile(filepath.Join(root, "CVSROOT", "config"), []byte("SystemAuth=no\n"), 0o666); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	mirror.AcceptEach(t, ln, func(conn *net.TCPConn) { s.serve(conn, root) })
	return s
}

func (s *cvPserver) serve(conn *net.TCPConn, root string) {
	defer conn.Close()
	s.scan()
	f, err := conn.File()
	if err != nil {
		s.log("file of connection: " + err.Error())
		return
	}
	defer f.Close()
	cmd := exec.Command("cvs", "-f", "--allow-root="+root, "pserver")
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, f, &stderr
	err = cmd.Run()
	s.log("cvs pserver: " + stderr.String())
	if err == nil {
		s.mu.Lock()
		s.sessions++
		s.mu.Unlock()
	}
}

func (s *cvPserver) log(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, msg)
}

// scan records each process whose command line holds the password.
func (s *cvPserver) scan() {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		data, err := os.ReadFile(f)
		if err == nil && bytes.Contains(data, []byte(s.pass)) {
			s.mu.Lock()
			s.leaks = append(s.leaks, f+": "+string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})))
			s.mu.Unlock()
		}
	}
}

// root is the server's CVS root for path, with the user and password.
func (s *cvPserver) root(path string) string {
	return ":pserver:" + s.user + ":" + s.pass + "@" + s.addr + path
}

// A module of a CVS pserver that requires a user and password is
// converted, and the password reaches no command line, of git
// cvsimport or of the cvsps it runs, nor stays in a file of the working
// area.
func TestCvsCredentialsNotOnCommandLine(t *testing.T) {
	cvNeed(t, cvTool{"openssl", "openssl"})
	u := newCvCvsUpstream(t)
	u.commitFile("README", "one\ntwo\n", "two")
	srv := newCvPserver(t, u.root)

	// The server refuses a wrong password.
	wrong := newCvMirror(t, "cvs", map[string]any{"url": strings.Replace(srv.root(u.root), srv.pass, "wrong", 1), "module": u.module})
	if res, out := wrong.run(); res.Err == nil {
		t.Fatalf("a wrong password was let in\noutput:\n%s", out)
	}

	m := newCvMirror(t, "cvs", map[string]any{"url": srv.root(u.root), "module": u.module})
	res, out := m.run()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if res.Err != nil {
		t.Fatalf("run: %v\noutput:\n%s\nserver:\n%s", res.Err, out, strings.Join(srv.logs, "\n"))
	}
	if got := m.show("master", "README"); got != "one\ntwo" {
		t.Errorf("downstream master:README = %q; want %q", got, "one\ntwo")
	}
	if srv.sessions == 0 {
		t.Errorf("no session with the server ended well")
	}
	for _, l := range srv.leaks {
		t.Errorf("the password is on a command line: %s", l)
	}
	err := filepath.WalkDir(m.area, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(srv.pass)) {
			t.Errorf("%s holds the password after the run", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
