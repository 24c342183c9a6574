package main

import (
	"flag"
	"fmt"
	"net"
	"strconv"

	"lorrycontroller/flagconf"
)

// Keys of the original Python WEBAPP's configuration file that mean nothing
// here. A file written for it is accepted with a warning for each. Keys
// that are flags here too are read as flags.
var oldIgnored = map[string]string{
	"wsgi":                 "the WEBAPP serves HTTP itself",
	"debug-port-file":      "use addr-file, which holds host:port",
	"templates":            "the templates are built into the WEBAPP",
	"static-files":         "the static files are built into the WEBAPP",
	"log":                  "logs go to standard error, which systemd sends to the journal",
	"log-max":              "logs go to standard error, which systemd sends to the journal",
	"log-keep":             "logs go to standard error, which systemd sends to the journal",
	"log-mode":             "logs go to standard error, which systemd sends to the journal",
	"trace":                "an option of the original program's framework",
	"output":               "an option of the original program's framework",
	"dump-memory-profile":  "an option of the original program's framework",
	"memory-dump-interval": "an option of the original program's framework",
	"proxy-config":         "set http_proxy and https_proxy in the unit's environment instead",
	"downstream-http-url":  "give the GitLab or Gitea base URL as downstream-host",
	"downstream-ssh-url":   "minions push over ssh to downstream-host, or over https (downstream-push-protocol)",
	"publish-failures":     "failures are on the status page and in the metrics",
}

// oldListen collects the original debug-host and debug-port keys, which
// together are --listen.
type oldListen struct{ host, port string }

func (o *oldListen) options() flagconf.Options {
	return flagconf.Options{
		Renamed: map[string]string{
			"git-server-type":      "downstream-host-type",
			"gitlab-private-token": "downstream-token",
		},
		Ignored: oldIgnored,
		Custom: map[string]func(string) error{
			"debug-host": func(v string) error { o.host = v; return nil },
			"debug-port": func(v string) error {
				if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 65535 {
					return fmt.Errorf("%q is not a port number", v)
				}
				o.port = v
				return nil
			},
		},
	}
}

// apply sets *listen from debug-host and debug-port, unless --listen was
// given on the command line or as listen in the file. Either key alone
// keeps the other half of the default address.
func (o *oldListen) apply(fs *flag.FlagSet, listen *string) error {
	if o.host == "" && o.port == "" {
		return nil
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "listen" })
	if set {
		return nil
	}
	host, port, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", *listen, err)
	}
	if o.host != "" {
		host = o.host
	}
	if o.port != "" {
		port = o.port
	}
	*listen = net.JoinHostPort(host, port)
	return nil
}
