package mirror

import (
	"fmt"
	"strings"

	"lorrycontroller.dev/lc/redact"
)

// cvsRoot is a CVSROOT, [:method:][user[:password]@]host[:[port]]/path,
// read as cvs reads it, so that what lorry decides is local is what cvs
// would open on this machine. git cvsimport and cvsps read roots with
// their own, rougher, parsers (git cvsimport takes any root but
// lower-case ":pserver:" that it cannot split into a host for ssh, ":ext:/path"
// among them, for a path of this machine): they are given the root that
// plain builds from the parts, never the spec's own.
type cvsRoot struct {
	// local says that cvs would open the repository on this machine:
	// the methods :local: and :fork:, a method cvs does not know, a
	// path, or a root of a remote method with no host.
	local bool
	// method is "pserver" or "ext" (for :ext:, :extssh:, :server:
	// and :ssh:, which all have ssh run cvs server on the host) when
	// the root is remote.
	method         string
	user, password string
	hasPassword    bool
	host, port     string
	path           string
	raw            string
}

// parseCvsRoot reads root. A method is read in any case, as cvs reads
// it. Method options (":ext;CVS_RSH=prog:") are refused: they choose the
// programs that cvs runs. So are a host starting with "-", which ssh
// would take for an option, :gserver: and :kserver:, which git cvsimport
// does not speak, a password with any method but :pserver:, and what
// the tools' parsers or .cvspass cannot hold: a user with "@" or white
// space, and a line break anywhere.
func parseCvsRoot(root string) (cvsRoot, error) {
	r := cvsRoot{raw: root}
	shown := redact.URLs(root)
	if strings.ContainsAny(root, "\x00\r\n") {
		return cvsRoot{}, fmt.Errorf("CVSROOT %q has a line break", shown)
	}
	rest := root
	if after, ok := strings.CutPrefix(root, ":"); ok {
		method, after, ok := strings.Cut(after, ":")
		if !ok {
			return cvsRoot{}, fmt.Errorf("CVSROOT %q has no \":\" after its method", shown)
		}
		if strings.Contains(method, ";") {
			return cvsRoot{}, fmt.Errorf("CVSROOT %q has method options, which lorry refuses: they choose the programs that cvs runs", shown)
		}
		rest = after
		switch m := strings.ToLower(method); m {
		case "pserver":
			r.method = m
		case "ext", "extssh", "server", "ssh":
			r.method = "ext"
		case "gserver", "kserver":
			return cvsRoot{}, fmt.Errorf("CVSROOT %q has the method :%s:, which git cvsimport does not speak (lorry converts CVS over :pserver: and :ext:)", shown, m)
		default:
			// :local:, :fork:, and methods cvs does not know.
			r.local, r.path = true, rest
			return r, nil
		}
	} else if strings.HasPrefix(rest, "/") || !strings.Contains(rest, "/") {
		// cvs reads a root without a method as a path unless it
		// holds a "/" but does not start with one.
		r.local, r.path = true, rest
		return r, nil
	} else {
		r.method = "ext"
	}
	// cvs ends the user information at the last "@", and the user at
	// its first ":".
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		r.user, r.password, r.hasPassword = strings.Cut(rest[:at], ":")
		rest = rest[at+1:]
	}
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		r.host, rest = rest[:i], rest[i+1:]
		n := 0
		for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
			n++
		}
		r.port, r.path = rest[:n], rest[n:]
	} else if i := strings.IndexByte(rest, '/'); i >= 0 {
		r.host, r.path = rest[:i], rest[i:]
	} else {
		r.host = rest
	}
	switch {
	case r.host == "":
		// No host: cvs refuses the root, but git cvsimport opens the
		// path on this machine, or a pserver on its loopback.
		r.local = true
		return r, nil
	case strings.HasPrefix(r.host, "-"):
		return cvsRoot{}, fmt.Errorf("CVSROOT %q names a host starting with \"-\", which ssh would take for an option", shown)
	case strings.ContainsAny(r.host, " \t\f\v"):
		return cvsRoot{}, fmt.Errorf("CVSROOT %q has white space in its host", shown)
	case !strings.HasPrefix(r.path, "/"):
		return cvsRoot{}, fmt.Errorf("CVSROOT %q names no absolute path on its host", shown)
	case strings.Contains(r.user, "@") || strings.ContainsAny(r.user, " \t\f\v"):
		return cvsRoot{}, fmt.Errorf("CVSROOT %q has a user with \"@\" or white space, which git cvsimport and .cvspass cannot hold", shown)
	case r.hasPassword && r.user == "":
		return cvsRoot{}, fmt.Errorf("CVSROOT %q has a password but no user", shown)
	case r.hasPassword && r.method != "pserver":
		return cvsRoot{}, fmt.Errorf("CVSROOT %q has a password, which lorry gives only to :pserver: (an :ext: root reaches its host with ssh, which takes no password from it)", shown)
	case r.method == "ext" && r.port != "":
		return cvsRoot{}, fmt.Errorf("CVSROOT %q has a port, which :ext: roots do not take", shown)
	case r.method == "pserver" && strings.ContainsAny(r.path, " \t\f\v"):
		return cvsRoot{}, fmt.Errorf("CVSROOT %q has white space in its path, which .cvspass cannot hold", shown)
	}
	return r, nil
}

// plain is the root without its password, as git cvsimport and cvsps
// read it: ":pserver:[user@]host:[port]/path", ":ext:[user@]host:/path",
// or a local root's path.
func (r cvsRoot) plain() string {
	if r.local {
		if strings.HasPrefix(r.path, "/") {
			return r.path
		}
		return r.raw
	}
	s := ":" + r.method + ":"
	if r.user != "" {
		s += r.user + "@"
	}
	return s + r.host + ":" + r.port + r.path
}

// passLines are the .cvspass lines that give the root's password, "" when
// it has none: the form with the port, which cvs login writes and git
// cvsimport and cvsps look for, and, when the root names none, the form
// without it, which git cvsimport also reads.
func (r cvsRoot) passLines() string {
	if !r.hasPassword {
		return ""
	}
	port := r.port
	if port == "" {
		port = "2401"
	}
	scrambled := cvsScramble(r.password)
	pass := "/1 :pserver:" + r.user + "@" + r.host + ":" + port + r.path + " " + scrambled + "\n"
	if r.port == "" {
		pass += ":pserver:" + r.user + "@" + r.host + ":" + r.path + " " + scrambled + "\n"
	}
	return pass
}
