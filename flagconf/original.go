package flagconf

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
)

// Original describes the configuration file of a program of the original
// Python Lorry Controller: its keys that are no flags here. Its keys that
// are flags here too are read as flags.
type Original struct {
	Renamed map[string]string
	Ignored map[string]string
	// HostKey and PortKey together make the flag AddressFlag: its
	// host:port or, with AddressIsURL, the host and port of its URL.
	// Either key alone keeps the other half of the flag's default.
	HostKey, PortKey, AddressFlag string
	AddressIsURL                  bool
	// PortZero accepts port 0, with which a listener picks a free port.
	PortZero bool
}

// logReason is why the original's logging keys mean nothing here.
const logReason = "logs go to standard error, which systemd sends to the journal"

// frameworkReason is why the original framework's keys mean nothing here.
const frameworkReason = "an option of the original program's framework"

// OriginalWebapp is the original WEBAPP's webapp.conf.
var OriginalWebapp = Original{
	Renamed: map[string]string{
		"git-server-type":      "downstream-host-type",
		"gitlab-private-token": "downstream-token",
	},
	Ignored: map[string]string{
		"wsgi":                 "the WEBAPP serves HTTP itself",
		"debug-port-file":      "use addr-file, which holds host:port",
		"templates":            "the templates are built into the WEBAPP",
		"static-files":         "the static files are built into the WEBAPP",
		"log":                  logReason,
		"log-max":              logReason,
		"log-keep":             logReason,
		"log-mode":             logReason,
		"trace":                frameworkReason,
		"output":               frameworkReason,
		"dump-memory-profile":  frameworkReason,
		"memory-dump-interval": frameworkReason,
		"proxy-config":         "set http_proxy and https_proxy in the unit's environment instead",
		"downstream-http-url":  "give the GitLab or Gitea base URL as downstream-host",
		"downstream-ssh-url":   "minions push over ssh to downstream-host, or over https (downstream-push-protocol)",
		"publish-failures":     "failures are on the status page and in the metrics",
	},
	HostKey: "debug-host", PortKey: "debug-port", AddressFlag: "listen",
	PortZero: true,
}

// OriginalMinion is the original MINION's minion.conf.
var OriginalMinion = Original{
	Ignored: map[string]string{
		// The minion's own timeout for each request.
		"webapp-timeout":       "each request to the WEBAPP times out after 30s",
		"proxy-config":         "set http_proxy and https_proxy in the unit's environment instead",
		"log":                  logReason,
		"log-max":              logReason,
		"log-keep":             logReason,
		"log-mode":             logReason,
		"trace":                frameworkReason,
		"output":               frameworkReason,
		"dump-memory-profile":  frameworkReason,
		"memory-dump-interval": frameworkReason,
	},
	HostKey: "webapp-host", PortKey: "webapp-port", AddressFlag: "webapp-url",
	AddressIsURL: true,
}

// ParseOriginal is ParseWith for a program that also reads a file written
// for the original program that o describes: it maps o's keys to flags,
// and returns a warning for each renamed or ignored key. The host and port
// keys set o.AddressFlag unless the command line or the file set it.
func ParseOriginal(fs *flag.FlagSet, args []string, configFlag string, o Original) ([]string, error) {
	var host, port string
	opts := Options{Renamed: o.Renamed, Ignored: o.Ignored, Custom: map[string]func(string) error{}}
	if o.AddressFlag != "" {
		opts.Custom[o.HostKey] = func(v string) error { host = v; return nil }
		opts.Custom[o.PortKey] = func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n == 0 && !o.PortZero || n > 65535 {
				return fmt.Errorf("%q is not a port number", v)
			}
			port = v
			return nil
		}
	}
	warnings, err := ParseWith(fs, args, configFlag, opts)
	if err != nil || host == "" && port == "" {
		return warnings, err
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == o.AddressFlag })
	if set {
		return warnings, nil
	}
	value := fs.Lookup(o.AddressFlag).Value.String()
	addr, err := withHostPort(value, host, port, o.AddressIsURL)
	if err != nil {
		return warnings, fmt.Errorf("--%s %q: %w", o.AddressFlag, value, err)
	}
	return warnings, fs.Set(o.AddressFlag, addr)
}

// withHostPort is addr, a host:port or a URL, with host and port put in
// where not empty.
func withHostPort(addr, host, port string, isURL bool) (string, error) {
	var u *url.URL
	var oldHost, oldPort string
	var err error
	if isURL {
		if u, err = url.Parse(addr); err != nil {
			return "", err
		}
		oldHost, oldPort = u.Hostname(), u.Port()
	} else if oldHost, oldPort, err = net.SplitHostPort(addr); err != nil {
		return "", err
	}
	if host == "" {
		host = oldHost
	}
	if port == "" {
		port = oldPort
	}
	if u == nil {
		return net.JoinHostPort(host, port), nil
	}
	u.Host = net.JoinHostPort(host, port)
	return u.String(), nil
}
