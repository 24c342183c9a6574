package mirror

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
)

// A spec's download URL, and every URL it redirects to, is chosen by
// whoever may push to CONFGIT. Fetched from the minion's machine, a URL of
// loopback or link-local reaches what only that machine may reach: its own
// services, and the cloud's metadata service with the machine's
// credentials. So unless local sources are allowed, lorry refuses to
// connect to such addresses. The check is made on the address actually
// connected to, after the name was resolved and after each redirect, so
// that neither a name nor a redirect leads around it. Private ranges stay
// allowed: mirroring from hosts behind the firewall is what lorry is for.

// localAddr tells whether a connection to ip would stay on this machine
// or its link: loopback, link-local (169.254.0.0/16, where cloud metadata
// services answer, and fe80::/10), or the unspecified address, which
// Linux takes for loopback.
func localAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified()
}

// isLocal is the check the guards make: localAddr, but for the tests,
// which stand a loopback address in for a host on the network rather than
// send anything to an address off loopback.
var isLocal = localAddr

// localAddrError is the refusal of a connection to a local address.
type localAddrError struct{ addr string }

func (e *localAddrError) Error() string {
	return fmt.Sprintf("refused to connect to %s, an address of this machine or its link: "+
		"lorry refuses local sources unless allowed with lorry --allow-local-sources (set by the WEBAPP's --allow-local-sources)", e.addr)
}

// refuseLocalControl is a net.Dialer Control function: it runs on the
// address about to be connected to, once names are resolved.
func refuseLocalControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", address, err)
	}
	if isLocal(ap.Addr()) {
		return &localAddrError{address}
	}
	return nil
}

// guardedDial returns the DialContext of a transport that refuses local
// addresses, except for the proxies that the environment names, which
// the admin chose. A proxied request's host is checked by guardedProxy.
func guardedDial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	guarded := *d
	guarded.Control = refuseLocalControl
	proxies := map[string]bool{}
	for _, target := range []string{"http://lorry.invalid/", "https://lorry.invalid/"} {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		if u, err := http.ProxyFromEnvironment(req); err == nil && u != nil {
			port := u.Port()
			if port == "" {
				port = map[string]string{"https": "443", "socks5": "1080"}[u.Scheme]
			}
			if port == "" {
				port = "80"
			}
			proxies[net.JoinHostPort(u.Hostname(), port)] = true
		}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if proxies[addr] {
			return d.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
}

// guardedProxy is http.ProxyFromEnvironment, refusing a request to be
// sent through a proxy when its host resolves to a local address. The
// proxy resolves the name again, so this is as good as the resolver the
// two share.
func guardedProxy(req *http.Request) (*url.URL, error) {
	proxy, err := http.ProxyFromEnvironment(req)
	if proxy == nil || err != nil {
		return proxy, err
	}
	host := req.URL.Hostname()
	addrs, err := net.DefaultResolver.LookupNetIP(req.Context(), "ip", host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if isLocal(a) {
			return nil, &localAddrError{net.JoinHostPort(a.String(), req.URL.Port())}
		}
	}
	return proxy, nil
}

// checkRemoteHost refuses an http or https URL whose host is, or
// resolves to, a local address. It is for URLs that a child process
// fetches, git-lfs say, whose connections lorry cannot see: it checks the
// name as this machine resolves it now, and not where the child is sent
// afterwards (a redirect, or an href of the LFS batch API).
func checkRemoteHost(ctx context.Context, rawURL string) error {
	// The user information is split off first: a password that net/url
	// cannot parse must not let the URL past the check.
	if p, err := splitURL(rawURL); err == nil {
		rawURL = p.plain(false)
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil // not fetched over HTTP; git's transports are checked by checkSources
	}
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, a := range addrs {
		if isLocal(a) {
			return &localAddrError{net.JoinHostPort(a.String(), port)}
		}
	}
	return nil
}
