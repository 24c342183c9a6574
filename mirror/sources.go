package mirror

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"lorrycontroller.dev/lc/lorryspec"
	"lorrycontroller.dev/lc/redact"
)

// Specs come from CONFGIT and from the Upstream Hosts' listings, which
// whoever may push there controls, while lorry runs on the minion's
// machine with its files and credentials. A spec naming a path of that
// machine would mirror what lorry can read there to the downstream, for
// anyone to clone. So lorry refuses local sources unless the admin allows
// them, and tells git which transports it may use.

// upstreamProtocols are the git transports over which lorry fetches an
// upstream. GIT_ALLOW_PROTOCOL overrides protocol.allow and every
// protocol.<name>.allow of any configuration, so that remote helpers such
// as ext::, which runs a command, stay refused whatever git is told.
const upstreamProtocols = "http:https:ssh:git"

// workProtocols are those of the mirror's own work, which is local: it
// fetches from the converters' repositories and may push to a downstream
// on this machine. No spec chooses those URLs.
const workProtocols = "file:" + upstreamProtocols

// upstreamEnv is the environment of a git that fetches from the upstream
// into gitDir, with extra.
func (j *job) upstreamEnv(gitDir string, extra ...string) []string {
	protocols := upstreamProtocols
	if j.opts.AllowLocalSources {
		protocols = workProtocols
	}
	return j.gitEnv(gitDir, append([]string{"GIT_ALLOW_PROTOCOL=" + protocols}, extra...))
}

// converterSchemes are the URL schemes over which each converter reaches
// a repository on another machine. The converters open much else: paths,
// Mercurial's bundle: and union: repositories, Breezy's readonly+, log+
// and other decorators of file: URLs, Subversion's file:. So a URL is
// remote only if it has one of these schemes, spelt as the converter
// reads it; everything else is taken for local.
var converterSchemes = map[string][]string{
	"svn": {"http", "https", "svn", "svn+ssh"},
	"hg":  {"http", "https", "ssh", "static-http"},
	"bzr": {"http", "https", "bzr", "bzr+ssh", "bzr+http", "bzr+https", "sftp", "ftp"},
}

// checkSources refuses a spec whose upstream is on this machine, unless
// allowLocal, and a git URL whose transport lorry does not fetch over.
func checkSources(typ string, v any, allowLocal bool) error {
	var local []string
	switch s := v.(type) {
	case *lorryspec.Git:
		switch t := gitTransport(s.URL); t {
		case "http", "https", "ssh", "git":
		case "file":
			local = append(local, s.URL)
		default:
			return fmt.Errorf("git URL %q uses the transport %q, which lorry does not use: it fetches over http, https, ssh and git",
				redact.URLs(s.URL), t)
		}
	case *lorryspec.Archive:
		if _, isLocal, _ := localPath(s.URL); isLocal {
			local = append(local, s.URL)
		}
	case *lorryspec.RawFile:
		for _, u := range s.URLs {
			if _, isLocal, _ := localPath(u.URL); isLocal {
				local = append(local, u.URL)
			}
		}
	case *lorryspec.Svn:
		if err := optionHost(typ, s.URL); err != nil {
			return err
		}
		if !remoteURL(s.URL, converterSchemes["svn"]) {
			local = append(local, s.URL)
		}
	case *lorryspec.Hg:
		if err := optionHost(typ, s.URL); err != nil {
			return err
		}
		if !remoteURL(s.URL, converterSchemes["hg"]) {
			local = append(local, s.URL)
		}
	case *lorryspec.Bzr:
		for _, u := range append([]string{s.URL}, slices.Sorted(maps.Values(s.Branches))...) {
			if err := optionHost(typ, u); err != nil {
				return err
			}
			if u != "" && !remoteURL(u, converterSchemes["bzr"]) && !bzrDirectory(u) {
				local = append(local, u)
			}
		}
	case *lorryspec.Cvs:
		root, err := parseCvsRoot(s.URL)
		if err != nil {
			return err
		}
		if root.local {
			local = append(local, s.URL)
		}
	}
	if len(local) == 0 || allowLocal {
		return nil
	}
	var maybe string
	if schemes, ok := converterSchemes[typ]; ok {
		maybe = fmt.Sprintf(" or may be (a %s URL is remote only with the schemes %s)", typ, strings.Join(schemes, ", "))
	}
	return fmt.Errorf("%s URL %q is on this machine%s, and lorry refuses local sources so that a spec cannot read the files of the machine it runs on; "+
		"allow them with lorry --allow-local-sources (set by the WEBAPP's --allow-local-sources)", typ, redact.URLs(local[0]), maybe)
}

// schemeLen is the length of the URL scheme (or git remote helper name) at
// the start of u: a letter, then letters, digits, "+", "-" and ".", as git
// reads them. It is 0 when u starts otherwise.
func schemeLen(u string) int {
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return i
		}
	}
	return len(u)
}

// gitTransport names the transport git uses for url, decided as git
// decides it: "<helper>::<address>" runs the remote helper git-remote-<helper>;
// "<scheme>://" names its transport; a URL with no colon, or a slash before
// its first colon, is a local path ("file"); anything else is scp-like
// ssh ("host:path").
func gitTransport(url string) string {
	n := schemeLen(url)
	rest := url[n:]
	switch {
	case strings.HasPrefix(rest, "::"):
		return url[:n]
	case n > 0 && strings.HasPrefix(rest, "://"):
		switch s := url[:n]; s {
		case "git+ssh", "ssh+git":
			return "ssh"
		default:
			return s
		}
	}
	colon := strings.IndexByte(url, ':')
	slash := strings.IndexByte(url, '/')
	if colon < 0 || (slash >= 0 && slash < colon) {
		return "file"
	}
	return "ssh"
}

// remoteURL tells whether url is "<scheme>://..." with one of schemes,
// in lower case as the converters spell them.
func remoteURL(url string, schemes []string) bool {
	n := schemeLen(url)
	return n > 0 && strings.HasPrefix(url[n:], "://") && slices.Contains(schemes, url[:n])
}

// optionHost refuses a URL whose host starts with "-", which the ssh that
// a converter runs for it could take for an option such as
// -oProxyCommand=, which runs a command.
func optionHost(typ, url string) error {
	n := schemeLen(url)
	rest, ok := strings.CutPrefix(url[n:], "://")
	if n == 0 || !ok {
		return nil
	}
	authority, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	if strings.HasPrefix(authority, "-") {
		return fmt.Errorf("%s URL %q names a host starting with \"-\", which ssh would take for an option", typ, redact.URLs(url))
	}
	return nil
}

// bzrDirectory tells whether url is one of Bazaar's directory services,
// such as lp:project, which name branches hosted elsewhere.
func bzrDirectory(url string) bool {
	for _, d := range []string{"lp:", "ubuntu:", "debianlp:"} {
		if strings.HasPrefix(url, d) && !strings.HasPrefix(url[len(d):], "/") {
			return true
		}
	}
	return false
}
